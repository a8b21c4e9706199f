#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: GPU slices from presets on simulated MIG GPUs: presets per model,
# invalid ones refused, as many slice jobs at once as the layout has slices
# (each with its own slice UUID), the next one waiting with a reason,
# re-slicing only after running jobs end, a failed MIG call rolled back,
# time-slices and unfenced GPUs, re-slicing on demand.

load lib/cluster

teardown() { shoal_cluster_stop; }

plan_state() {
    shoal slice show --json |
        jq -r ".[] | select(.node == \"$1\" and .gpu == $2) | .plan.state"
}
plan_state_is() { [ "$(plan_state "$1" "$2")" = "$3" ]; }

# The job's pending reason matches an extended regex (what the scheduler
# decided about it, e.g. "^resources:"): what a test waits for instead of
# sleeping through a scheduling pass.
reason_matches() { job_field "$1" .reason | grep -qE -- "$2"; }

@test "sl-001 presets per model; invalid presets are refused with the reason" {
    shoal_cluster_start 1 2 H100-80GB
    run shoal slice presets --gpu-model H100-80GB --json
    [ "$(echo "$output" | jq -r '.[] | select(.name == "all-1g.10gb") | .slices | length')" -eq 7 ]
    echo "$output" | jq -e '.[] | select(.name == "all-balanced")'
    echo "$output" | jq -e '.[] | select(.name == "shared-4" and .mig == false)'
    run shoal slice presets --gpu-model A100-40GB --json
    echo "$output" | jq -e '.[] | select(.name == "all-1g.5gb")'
    run shoal slice presets --gpu-model H200-141GB --json
    echo "$output" | jq -e '.[] | select(.name == "all-1g.18gb")'
    run shoal slice apply node1 all-1g.5gb
    [ "$status" -ne 0 ]
    [[ "$output" == *H100-80GB* ]]
    run shoal slice apply node1 all-9g.90gb
    [ "$status" -ne 0 ]
    run shoal slice apply node1:7 all-1g.10gb
    [ "$status" -ne 0 ]
    [[ "$output" == *"no GPU 7"* ]]
    run shoal slice apply nosuch all-1g.10gb
    [ "$status" -ne 0 ]
    # Nothing changed.
    [ "$(shoal slice show --json | jq '[.[] | select(.plan != null)] | length')" -eq 0 ]
    # A model without MIG takes time-slices only.
    agent_start node2 1 L4-24GB
    wait_for 20 nodes_up_is 2
    run shoal slice apply node2 all-1g.10gb
    [ "$status" -ne 0 ]
}

@test "sl-002 a MIG layout runs as many slice jobs as it has slices" {
    shoal_cluster_start 1 2 H100-80GB
    shoal slice apply node1:0 all-1g.10gb
    wait_for 20 plan_state_is node1 0 applied
    run shoal nodes --json
    [ "$(echo "$output" | jq '.[0].gpus[0].slices | length')" -eq 7 ]
    echo "$output" | jq -r '.[0].gpus[0].slices[].uuid' | sort -u >"$SHOAL_TEST_DIR/sl"
    [ "$(wc -l <"$SHOAL_TEST_DIR/sl")" -eq 7 ]
    grep -q '^MIG-' "$SHOAL_TEST_DIR/sl"
    [ "$(echo "$output" | jq -r '.[0].gpus[0].slices[0].profile')" = 1g.10gb ]
    # The seven hold their slices until the gate file appears.
    gate="$SHOAL_TEST_DIR/gate"
    ids=""
    for i in $(seq 7); do
        ids="$ids $(submit --slice 1g.10gb -- sh -c "echo \$CUDA_VISIBLE_DEVICES; until [ -e $gate ]; do sleep 0.1; done")"
    done
    eighth=$(submit --slice 1g.10gb -- true)
    for id in $ids; do wait_job_state "$id" running; done
    wait_job_reason "$eighth" 1g.10gb
    [ "$(job_state "$eighth")" = pending ]
    # A whole-GPU job takes the whole GPU, never the sliced one.
    whole=$(submit --gpus 1 -- sh -c 'echo $CUDA_VISIBLE_DEVICES')
    wait_job_state "$whole" completed
    [ "$(job_field "$whole" '.placement[0].gpus[0]')" = "$(shoal nodes --json | jq -r '.[0].gpus[1].uuid')" ]
    touch "$gate"
    for id in $ids; do wait_job_state "$id" completed 30; done
    for id in $ids; do shoal logs "$id"; done | sort -u >"$SHOAL_TEST_DIR/used"
    cmp "$SHOAL_TEST_DIR/sl" "$SHOAL_TEST_DIR/used"
    wait_job_state "$eighth" completed 30
    # A slice counts as its share in the accounting.
    share=$(job_field "$eighth" '.placement[0].share')
    [ "$(echo "$share < 0.15 && $share > 0.14" | bc -l)" -eq 1 ]
}

@test "sl-003 a GPU with running jobs is re-sliced after they end" {
    shoal_cluster_start 1 1 A100-80GB
    gate="$SHOAL_TEST_DIR/gate" # the busy job runs until it appears
    busy=$(submit --gpus 1 -- sh -c "until [ -e $gate ]; do sleep 0.1; done")
    wait_job_state "$busy" running
    shoal slice apply node1 all-3g.40gb
    [ "$(plan_state node1 0)" = waiting ]
    run shoal slice show
    [[ "$output" == *"waits for 1 running job"* ]]
    other=$(submit --gpus 1 -- true)
    wait_for 10 reason_matches "$other" '^resources:'
    [ "$(job_state "$other")" = pending ]
    touch "$gate"
    wait_job_state "$busy" completed
    wait_for 20 plan_state_is node1 0 applied
    [ "$(shoal nodes --json | jq '.[0].gpus[0].slices | length')" -eq 2 ]
    # The whole-GPU job now has no whole GPU: it is told why.
    wait_for 10 reason_matches "$other" '^resources:'
    [ "$(job_state "$other")" = pending ]
    # Back to whole: it runs.
    shoal slice apply node1 all-disabled
    wait_job_state "$other" completed 30
}

@test "sl-004 a failed MIG call rolls back and says why" {
    shoal_cluster_start 1 1 H100-80GB
    cfg="$SHOAL_TEST_DIR/node1/simgpu.json"
    jq '.fail = {"nvmlDeviceCreateGpuInstanceWithPlacement": {"after": 2, "error": "NVML_ERROR_INSUFFICIENT_RESOURCES"}}' \
        "$cfg" >"$cfg.new" && mv "$cfg.new" "$cfg"
    shoal slice apply node1 all-1g.10gb
    wait_for 20 plan_state_is node1 0 failed
    shoal slice show --json | jq -r '.[0].plan.reason' | grep -qi "nvmlDeviceCreateGpuInstance"
    # Rolled back: whole, MIG off, and jobs run on it again.
    run shoal nodes --json
    [ "$(echo "$output" | jq '.[0].gpus[0].slices | length')" -eq 0 ]
    [ "$(echo "$output" | jq '.[0].gpus[0].mig_enabled')" = false ]
    id=$(submit --gpus 1 -- true)
    wait_job_state "$id" completed
}

@test "sl-005 time-slices share one GPU UUID; two projects never share an unfenced GPU" {
    shoal_cluster_start 1 1 H100-80GB
    api POST /v1/projects '{"name":"pa","team":"default"}'
    api POST /v1/projects '{"name":"pb","team":"default"}'
    shoal slice apply node1 shared-4
    wait_for 20 plan_state_is node1 0 applied
    run shoal slice show
    [[ "$output" == *unfenced* ]]
    uuid=$(shoal nodes --json | jq -r '.[0].gpus[0].uuid')
    gate="$SHOAL_TEST_DIR/gate" # pa's jobs run until it appears
    a=""
    for i in 1 2 3; do a="$a $(submit --project pa --slice shared -- sh -c "echo \$CUDA_VISIBLE_DEVICES; until [ -e $gate ]; do sleep 0.1; done")"; done
    b=$(submit --project pb --slice shared -- true)
    for id in $a; do wait_job_state "$id" running; done
    wait_for 10 reason_matches "$b" '^resources: needs a shared slice'
    [ "$(job_state "$b")" = pending ]
    touch "$gate"
    for id in $a; do wait_job_state "$id" completed 30; done
    for id in $a; do [ "$(shoal logs "$id")" = "$uuid" ]; done
    wait_job_state "$b" completed 30
}

# A controller that re-slices on demand, one agent with one H100, and a
# 3g.40gb job that had it re-sliced and completed.
one_gpu_resliced_on_demand() {
    shoal_tmp_init
    shoald_start --reslice-on-demand --reslice-hold 1s
    agent_start node1 1 H100-80GB
    wait_for 20 nodes_up_is 1
    local id
    id=$(submit --slice 3g.40gb -- true)
    wait_job_state "$id" completed 30
    shoal slice show --json | jq -r '.[0].plan.reason' | grep -q "re-sliced on demand: job $id"
}

@test "sl-006 re-slicing on demand serves the waiting jobs and says why" {
    one_gpu_resliced_on_demand
    # And back to whole for a whole-GPU job.
    whole=$(submit --gpus 1 -- true)
    wait_job_state "$whole" completed 120
    shoal slice show --json | jq -r '.[0].plan.reason' | grep -q "made whole on demand: job $whole"
}

@test "sl-007 --gpu-mem takes the smallest slice or GPU with that memory" {
    shoal_cluster_start 1 2 H100-80GB
    shoal slice apply node1:0 all-balanced
    wait_for 20 plan_state_is node1 0 applied
    id=$(submit --gpu-mem 15G -- true)
    wait_job_state "$id" completed
    uuid=$(job_field "$id" '.placement[0].gpus[0]')
    shoal nodes --json | jq -r ".[0].gpus[0].slices[] | select(.uuid == \"$uuid\") | .profile" | grep -qx 2g.20gb
}

@test "sl-008 re-slicing on demand makes a GPU whole for a waiting --gpus-total job" {
    one_gpu_resliced_on_demand
    # Only a sliced GPU: the --gpus-total job counts as a 1-GPU request.
    total=$(submit --gpus-total 1 -- true)
    wait_job_state "$total" completed 120
    shoal slice show --json | jq -r '.[0].plan.reason' | grep -q "made whole on demand: job $total"
}

@test "sl-009 re-slicing on demand makes a GPU whole on each node a --gpus-total job needs" {
    shoal_tmp_init
    shoald_start --reslice-on-demand --reslice-hold 1s
    agent_start node1 1 H100-80GB
    agent_start node2 1 H100-80GB
    wait_for 20 nodes_up_is 2
    shoal slice apply node1:0 all-balanced
    shoal slice apply node2:0 all-balanced
    wait_for 20 plan_state_is node1 0 applied
    wait_for 20 plan_state_is node2 0 applied
    # 2 GPUs in all, one per node: both sliced GPUs are made whole, in turn.
    total=$(submit --gpus-total 2 -- true)
    wait_job_state "$total" completed 120
    [ "$(job_field "$total" '.placement | length')" = 2 ]
    for n in node1 node2; do
        shoal slice show --json | jq -r ".[] | select(.node == \"$n\") | .plan.reason" |
            grep -q "made whole on demand: job $total"
    done
}

@test "sl-010 a whole-GPU job is refused when every GPU is sliced and nothing re-slices" {
    shoal_cluster_start 1 1 H100-80GB
    shoal slice apply node1 shared-4
    wait_for 20 plan_state_is node1 0 applied
    run shoal submit --gpus 1 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"every H100-80GB GPU is sliced"* ]]
    # The slices still serve slice jobs.
    id=$(submit --slice shared -- true)
    wait_job_state "$id" completed 30
    # Made whole again, the same job is taken.
    shoal slice apply node1 all-disabled
    wait_for 20 plan_state_is node1 0 applied
    id=$(submit --gpus 1 -- true)
    wait_job_state "$id" completed 30
}
