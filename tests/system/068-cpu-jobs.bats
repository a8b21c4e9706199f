#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: jobs without GPUs go through the scheduling engine like GPU jobs
# (src/sched/sched_cpu.c): they count against their user's running-job
# limit, start in priority order, wait with a reason `shoal queue` shows,
# and an exclusive GPU job waits for the ones on its node.

load lib/cluster

teardown() { shoal_cluster_stop; }

reason_matches() { job_field "$1" .reason | grep -qE -- "$2"; }

# The user the admin token submits as, limited to N running jobs.
limit_jobs() {
    api PATCH "/v1/users/$1/limits" "{\"max_jobs\":$2}"
    [ "$status_code" = 200 ] || { echo "limits: $status_code $body" >&2; return 1; }
}

@test "cpu-001 a job without GPUs counts against the user's running-job limit" {
    shoal_cluster_start 1 2
    a=$(submit --gpus 1 -- sleep 60)
    wait_job_state "$a" running 20
    user=$(job_field "$a" .user)
    limit_jobs "$user" 1
    c=$(submit -- true)
    wait_for 20 reason_matches "$c" "^limit: user $user runs 1/1 jobs\$"
    run shoal queue
    echo "$output"
    echo "$output" | grep -q "limit: user $user runs 1/1 jobs"
    [ "$(job_state "$c")" = pending ]
    shoal cancel "$a" >/dev/null
    wait_job_state "$c" completed 30
}

@test "cpu-002 jobs without GPUs start in priority order" {
    shoal_cluster_start 1 2
    a=$(submit -- sleep 60)
    wait_job_state "$a" running 20
    limit_jobs "$(job_field "$a" .user)" 1
    low=$(submit --priority low -- sleep 2)
    high=$(submit --priority high -- sleep 2)
    wait_for 20 reason_matches "$low" '^limit: '
    wait_for 20 reason_matches "$high" '^limit: '
    shoal cancel "$a" >/dev/null
    wait_job_state "$high" running 30
    # One at a time: the low one waits for the high one.
    [ "$(job_state "$low")" = pending ]
    wait_job_state "$high" completed 30
    wait_job_state "$low" completed 30
    [ "$(job_field "$high" .end_ms)" -le "$(job_field "$low" .start_ms)" ]
}

@test "cpu-003 a pending job without GPUs says why; an exclusive GPU job waits for one" {
    shoal_cluster_start 1 2
    # A node the cluster does not have is refused at submission (as
    # Slurm); one that is drained leaves the job pending with the reason.
    run shoal submit --nodelist node9 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"no node named node9 (the nodes: node1)"* ]]
    agent_start node9 1 H100-80GB
    wait_for 20 nodes_up_is 2
    shoal node drain node9 >/dev/null
    j=$(submit --nodelist node9 -- true)
    wait_for 20 reason_matches "$j" 'node9'
    run shoal queue
    echo "$output"
    echo "$output" | grep -q "$(job_field "$j" .reason)"
    c=$(submit -- sleep 60)
    wait_job_state "$c" running 20
    x=$(submit --gpus 2 --exclusive -- true)
    wait_for 20 reason_matches "$x" 'exclusive: whole idle nodes'
    [ "$(job_state "$x")" = pending ]
    shoal cancel "$c" >/dev/null
    wait_job_state "$x" completed 30
    shoal node resume node9 >/dev/null
    wait_job_state "$j" completed 30
}

@test "cpu-004 a running job without GPUs is the engine's again after a controller restart" {
    shoal_cluster_start 2 2
    a=$(submit -- sleep 300)
    wait_job_state "$a" running 20
    user=$(job_field "$a" .user)
    limit_jobs "$user" 1
    node=$(job_field "$a" '.placement[0].node')
    shoald_stop
    shoald_start
    wait_for 20 nodes_up_is 2
    wait_job_state "$a" running 20
    [ "$(job_field "$a" '.placement[0].node')" = "$node" ]
    # Recovered, it still counts against the limit ...
    b=$(submit -- true)
    wait_for 20 reason_matches "$b" "^limit: user $user runs 1/1 jobs\$"
    # ... and holds its node: without the limit the next one goes to the
    # other node (the fewest running jobs).
    limit_jobs "$user" 0
    wait_job_state "$b" completed 30
    [ "$(job_field "$b" '.placement[0].node')" != "$node" ]
    shoal cancel "$a" >/dev/null
}
