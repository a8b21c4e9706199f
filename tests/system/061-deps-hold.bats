#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: what a Slurm user reaches for on day one: job dependencies
# (--dependency afterok/afterany/afternotok/singleton) and holds
# (submit --hold, shoal hold, shoal release), with the reasons shoal queue
# shows, their errors, and a hold that survives a controller restart.

load lib/cluster

teardown() { shoal_cluster_stop; }

reason_has() { job_field "$1" .reason | grep -q "$2"; }

@test "dep-001 afterok waits for the job, then runs; the reason names it" {
    shoal_cluster_start 1 2
    a=$(submit --gpus 1 -- sleep 3)
    b=$(submit --gpus 1 --dependency "afterok:$a" -- true)
    wait_job_state "$a" running
    wait_for 10 reason_has "$b" "dependency: waiting for job $a (running)"
    # A GPU is free, but b waits for a.
    [ "$(job_state "$b")" = pending ]
    shoal queue | grep "^ *$b " | grep -q "no estimate: it waits for a dependency"
    wait_job_state "$a" completed 20
    wait_job_state "$b" completed 20
    [ "$(job_field "$b" .dependency)" = "afterok:$a" ]
}

@test "dep-002 a dependency that can never be met cancels the job with why" {
    shoal_cluster_start 1 4
    bad=$(submit --gpus 1 -- false)
    ok=$(submit --gpus 1 --dependency "afterok:$bad" -- true)
    notok=$(submit --gpus 1 --dependency "afternotok:$bad" -- true)
    any=$(submit --gpus 1 --dependency "afterany:$bad,afterany:$notok" -- true)
    wait_job_state "$bad" failed 20
    wait_job_state "$ok" cancelled 20
    job_field "$ok" .reason |
        grep -q "dependency: job $bad ended failed, so afterok:$bad can never be met"
    wait_job_state "$notok" completed 20
    wait_job_state "$any" completed 20
}

@test "dep-003 bad dependencies are refused at submission, naming the problem" {
    shoal_cluster_start 1 1
    run shoal submit --dependency afterok:999999 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"dependency: job 999999 not found"* ]]
    run shoal submit --dependency after:1 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"Slurm form Shoal does not have"* ]]
    run shoal submit --dependency "afterok:1?afterok:2" -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"any of"* ]]
    run shoal submit --dependency singleton -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"singleton needs a job name"* ]]
    # Nothing was created.
    [ "$(api_jobs_count)" = 0 ]
}

api_jobs_count() {
    curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs" |
        jq '.jobs | length'
}

@test "dep-004 singleton: one job of a name at a time, in submit order" {
    shoal_cluster_start 1 4
    a=$(submit --name nightly --gpus 1 -- sleep 2)
    b=$(submit --name nightly --gpus 1 --dependency singleton -- true)
    other=$(submit --name other --gpus 1 --dependency singleton -- true)
    wait_for 10 reason_has "$b" "singleton: waiting for job $a"
    wait_job_state "$other" completed 20
    wait_job_state "$a" completed 20
    wait_job_state "$b" completed 20
}

@test "hold-001 held jobs wait for release, also across a controller restart" {
    shoal_cluster_start 1 2
    h=$(submit --gpus 1 --hold -- true)
    wait_for 10 reason_has "$h" "held: waits for shoal release $h"
    [ "$(job_field "$h" .held)" = true ]
    # Free GPUs do not start it: a job submitted after it runs and ends.
    later=$(submit --gpus 1 -- true)
    wait_job_state "$later" completed 20
    [ "$(job_state "$h")" = pending ]
    shoal queue | grep "^ *$h " | grep -q "no estimate: it is held"
    shoald_stop
    shoald_start
    [ "$(job_field "$h" .held)" = true ]
    [ "$(job_state "$h")" = pending ]
    run shoal release "$h"
    [ "$status" -eq 0 ]
    [[ "$output" == "released job $h" ]]
    wait_job_state "$h" completed 30
}

@test "hold-002 shoal hold keeps a queued job back; wrong states are refused" {
    shoal_cluster_start 1 1
    r=$(submit --gpus 1 -- sleep 4)
    p=$(submit --gpus 1 -- true)
    wait_job_state "$r" running
    run shoal hold "$p"
    [ "$status" -eq 0 ]
    [[ "$output" == "held job $p" ]]
    run shoal hold "$p"
    [ "$status" -ne 0 ]
    [[ "$output" == *"job $p is already held"* ]]
    run shoal hold "$r"
    [ "$status" -ne 0 ]
    [[ "$output" == *"only pending jobs can be held"* ]]
    run shoal release "$r"
    [ "$status" -ne 0 ]
    [[ "$output" == *"is not held"* ]]
    # The running job ends; the held one still waits.
    wait_job_state "$r" completed 20
    later=$(submit --gpus 1 -- true)
    wait_job_state "$later" completed 20
    [ "$(job_state "$p")" = pending ]
    shoal release "$p"
    wait_job_state "$p" completed 20
}
