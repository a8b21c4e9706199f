#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: accounting and idle GPUs. Usage figures are computed from jobs whose
# run times the test knows; simulated GPUs whose utilization the test sets
# make jobs idle, and each project policy (warn, cancel, preempt, none)
# does what it says.

load lib/cluster

teardown() { shoal_cluster_stop; }

# set_util NODE PCT: the node's simulated GPUs report PCT from now on.
set_util() {
    local cfg="$SHOAL_TEST_DIR/$1/simgpu.json"
    jq ".util = $2" "$cfg" >"$cfg.new"
    mv "$cfg.new" "$cfg"
}

start_idle_cluster() {
    shoal_tmp_init
    shoald_start --idle-after 2s --idle-threshold 10 "$@"
    agent_start node1 2 H100-80GB
    wait_for 20 nodes_up_is 1
}

@test "acct-001 usage per project and user from known run times" {
    shoal_cluster_start 1 4
    api POST /v1/projects '{"name":"p1","team":"default"}'
    api POST /v1/projects '{"name":"p2","team":"default"}'
    a=$(submit --project p1 --gpus 2 -- sleep 1.5)
    b=$(submit --project p2 --gpus 1 -- sleep 1)
    c=$(submit --project p2 --gpus 1 -- sleep 0.5)
    for j in $a $b $c; do wait_job_state "$j" completed; done
    expect() { # gpus * (end - start) for the job, in seconds
        echo "$(job_field "$1" '.end_ms - .start_ms') * $2 / 1000" | bc -l
    }
    exp_p1=$(expect "$a" 2)
    exp_p2=$(echo "$(expect "$b" 1) + $(expect "$c" 1)" | bc -l)
    run shoal usage --by project --json
    echo "$output"
    got_p1=$(echo "$output" | jq '.[] | select(.key == "p1") | .gpu_seconds')
    got_p2=$(echo "$output" | jq '.[] | select(.key == "p2") | .gpu_seconds')
    [ "$(echo "$output" | jq '.[] | select(.key == "p2") | .jobs')" -eq 2 ]
    [ "$(echo "($got_p1 - $exp_p1)^2 < 0.0001" | bc -l)" -eq 1 ]
    [ "$(echo "($got_p2 - $exp_p2)^2 < 0.0001" | bc -l)" -eq 1 ]
    run shoal usage --by user --csv
    [[ "${lines[0]}" == user,gpu_hours,jobs,* ]]
    [ "$(echo "$output" | grep -c "^$(id -un),")" -eq 1 ]
    run shoal usage --by gpu-model
    [[ "$output" == *H100-80GB* ]]
    # A window that ends before the jobs ran counts nothing.
    run shoal usage --since 2020-01-01 --until 2020-01-02 --json
    [ "$output" = "[]" ]
    run shoal usage --by color
    [ "$status" -ne 0 ]
    run shoal usage --since yesterday
    [ "$status" -ne 0 ]
}

@test "acct-002 an idle job is flagged (warn) and unflagged when its GPUs work" {
    start_idle_cluster
    set_util node1 0
    id=$(submit --gpus 1 -- sleep 1000)
    wait_job_state "$id" running
    wait_for 20 sh -c "[ \"\$(curl -sf -H 'Authorization: Bearer $SHOAL_TOKEN' $SHOAL_URL/v1/jobs/$id | jq .idle)\" = true ]"
    job_field "$id" .reason | grep -q "idle: its GPUs stayed under 10%"
    [ "$(job_state "$id")" = running ]
    run shoal queue
    [[ "$output" == *idle* ]]
    set_util node1 80
    wait_for 20 sh -c "[ \"\$(curl -sf -H 'Authorization: Bearer $SHOAL_TOKEN' $SHOAL_URL/v1/jobs/$id | jq .idle)\" = false ]"
    [ "$(job_field "$id" .gpu_utilization)" != null ]
}

@test "acct-003 project policies: cancel, preempt when others wait, none" {
    start_idle_cluster
    set_util node1 0
    for p in pc pp pn; do
        api POST /v1/projects "{\"name\":\"$p\",\"team\":\"default\"}"
    done
    shoal project set pc --idle-policy cancel
    shoal project set pp --idle-policy preempt
    shoal project set pn --idle-policy none
    c=$(submit --project pc --gpus 1 -- sleep 1000)
    wait_job_state "$c" cancelled 30
    job_field "$c" .reason | grep -q "policy: cancel"
    # preempt: only when another job waits for GPUs.
    p=$(submit --project pp --gpus 2 --requeue -- sleep 1000)
    wait_job_state "$p" running
    wait_job_reason "$p" "idle: its GPUs stayed under 10%"
    [ "$(job_state "$p")" = running ]
    w=$(submit --gpus 1 -- true)
    wait_job_state "$w" completed 30
    [ "$(job_field "$p" .requeues)" -ge 1 ]
    shoal cancel "$p"
    n=$(submit --project pn --gpus 1 -- sleep 1000)
    wait_job_state "$n" running
    # A job of the default project (policy warn) on the same idle GPUs,
    # started after it: once that one is flagged, n was idle as long.
    q=$(submit --gpus 1 -- sleep 1000)
    wait_job_state "$q" running
    wait_job_reason "$q" "idle: its GPUs stayed under 10%"
    [ "$(job_field "$n" .idle)" = false ]
    run shoal project set pn --idle-policy sometimes
    [ "$status" -ne 0 ]
}
