#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: re-slicing on demand when a profile is busy (not only when no GPU
# has it): the next 1g job gets an idle whole GPU sliced for it, once, and
# a whole-GPU job gets an idle sliced GPU made whole while another whole
# GPU is busy; and the pending reason of a job kept off time-sliced GPUs
# that another project holds unfenced (no MPS).

load lib/cluster

teardown() { shoal_cluster_stop; }

plan_field() {
    shoal slice show --json |
        jq -r ".[] | select(.node == \"$1\" and .gpu == $2) | $3"
}
plan_state_is() { [ "$(plan_field "$1" "$2" .plan.state)" = "$3" ]; }

# The GPU index of node1 that holds slice or GPU UUID $1.
gpu_of() {
    shoal nodes --json | jq -r --arg u "$1" \
        '.[0].gpus | to_entries[] | select(.value.uuid == $u or ([.value.slices[]?.uuid] | index($u))) | .key'
}

reason_has() { job_field "$1" .reason | grep -qF -- "$2"; }

@test "rf-001 a busy 1g profile gets an idle whole GPU sliced, once" {
    shoald_start --reslice-on-demand --reslice-hold 1s
    agent_start node1 4 H100-80GB
    wait_for 20 nodes_up_is 1
    shoal slice apply node1:0 all-1g.10gb
    wait_for 20 plan_state_is node1 0 applied
    busy=""
    for i in $(seq 7); do
        busy="$busy $(submit --slice 1g.10gb -- sleep 60)"
    done
    for id in $busy; do wait_job_state "$id" running; done
    # Every 1g slice runs a job; GPUs 1-3 are whole and idle.
    id=$(submit --slice 1g.10gb -- sleep 2)
    wait_job_state "$id" running 30
    gpu=$(gpu_of "$(job_field "$id" '.placement[0].gpus[0]')")
    [ -n "$gpu" ] && [ "$gpu" -ne 0 ]
    plan_field node1 "$gpu" .plan.reason |
        grep -qF "re-sliced on demand: job $id waits for a 1g.10gb slice"
    [ "$(plan_field node1 "$gpu" .preset)" = all-1g.10gb ]
    # One GPU was enough: the others stay whole, also once it has ended
    # and the hold is over.
    wait_job_state "$id" completed 30
    wait_for 10 ended_over_ms_ago "$id" 1000
    [ "$(shoal slice show --json | jq '[.[] | select(.preset != "-")] | length')" -eq 2 ]
    # A 1g job that fits on the new GPU does not slice another one.
    next=$(submit --slice 1g.10gb -- true)
    wait_job_state "$next" completed 30
    [ "$(gpu_of "$(job_field "$next" '.placement[0].gpus[0]')")" = "$gpu" ]
    [ "$(shoal slice show --json | jq '[.[] | select(.preset != "-")] | length')" -eq 2 ]
}

@test "rf-002 a whole-GPU job gets an idle sliced GPU made whole while the whole one is busy" {
    shoald_start --reslice-on-demand --reslice-hold 1s
    agent_start node1 2 H100-80GB
    wait_for 20 nodes_up_is 1
    shoal slice apply node1:1 all-1g.10gb
    wait_for 20 plan_state_is node1 1 applied
    long=$(submit --gpus 1 -- sleep 60)
    wait_job_state "$long" running
    [ "$(gpu_of "$(job_field "$long" '.placement[0].gpus[0]')")" -eq 0 ]
    id=$(submit --gpus 1 -- true)
    wait_job_state "$id" completed 60
    [ "$(gpu_of "$(job_field "$id" '.placement[0].gpus[0]')")" -eq 1 ]
    plan_field node1 1 .plan.reason |
        grep -qF "made whole on demand: job $id waits for whole GPUs"
    # The busy GPU was left alone.
    [ "$(job_state "$long")" = running ]
}

@test "rf-003 a job kept off another project's unfenced GPU says so" {
    shoald_start
    agent_start node1 1 A100-80GB
    wait_for 20 nodes_up_is 1
    api POST /v1/projects '{"name":"pa","team":"default"}'
    api POST /v1/projects '{"name":"pb","team":"default"}'
    shoal slice apply node1 shared-4
    wait_for 20 plan_state_is node1 0 applied
    [ "$(plan_field node1 0 .unfenced)" = true ]
    a=$(submit --project pa --slice shared -- sleep 60)
    wait_job_state "$a" running
    b=$(submit --project pb --slice shared -- true)
    want="resources: needs a shared slice; the free ones are on unfenced GPUs (time-sliced, no MPS) held by project pa"
    wait_for 20 reason_has "$b" "$want"
    run shoal queue
    [ "$status" -eq 0 ]
    [[ "$output" == *"$want"* ]]
    run shoal show "$b"
    [ "$status" -eq 0 ]
    [[ "$output" == *"$want"* ]]
    # Another job of pa still shares the GPU; once pa is gone, pb runs.
    a2=$(submit --project pa --slice shared -- true)
    wait_job_state "$a2" completed 30
    [ "$(job_state "$b")" = pending ]
    shoal cancel "$a"
    wait_job_state "$b" completed 30
}

@test "rf-004 with every slice taken the reason does not blame the fence" {
    shoald_start
    agent_start node1 1 A100-80GB
    wait_for 20 nodes_up_is 1
    api POST /v1/projects '{"name":"pa","team":"default"}'
    api POST /v1/projects '{"name":"pb","team":"default"}'
    shoal slice apply node1 shared-2
    wait_for 20 plan_state_is node1 0 applied
    a1=$(submit --project pa --slice shared -- sleep 60)
    a2=$(submit --project pa --slice shared -- sleep 60)
    wait_job_state "$a1" running
    wait_job_state "$a2" running
    b=$(submit --project pb --slice shared -- true)
    wait_for 20 reason_has "$b" "resources: needs a shared slice"
    run job_field "$b" .reason
    [ "$output" = "resources: needs a shared slice" ]
}
