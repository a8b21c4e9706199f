#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: quotas and limits enforced by the scheduling engine on a real
# cluster, with the pending reasons users read: per-user running limits,
# project limits, borrowing idle GPUs beyond the guarantee and getting them
# back by preemption when the owner needs them.

load lib/cluster

teardown() { shoal_cluster_stop; }

# The job's pending reason matches an extended regex (what the scheduler
# decided about it, e.g. "^resources:"): what a test waits for instead of
# sleeping through a scheduling pass.
reason_matches() { job_field "$1" .reason | grep -qE -- "$2"; }

@test "quo-001 a user's running-GPU and running-job limits hold jobs with a reason" {
    shoal_cluster_start 1 4
    me=$(id -un)
    shoal user set-limits "$me" --max-gpus 2
    # The running jobs end when the test says (a short sleep could end
    # before a loaded machine has looked at the waiting job).
    a=$(submit --gpus 2 -- sleep 1000)
    b=$(submit --gpus 1 -- true)
    wait_job_state "$a" running
    wait_for 10 reason_matches "$b" "^limit: user $me "
    [ "$(job_state "$b")" = pending ]
    shoal cancel "$a"
    wait_job_state "$b" completed 30
    shoal user set-limits "$me" --max-gpus none --max-jobs 1
    c=$(submit --gpus 1 -- sleep 1000)
    d=$(submit --gpus 1 -- true)
    wait_job_state "$c" running
    wait_for 10 reason_matches "$d" "^limit: user $me "
    [ "$(job_state "$d")" = pending ]
    shoal cancel "$c"
    wait_job_state "$d" completed 30
}

@test "quo-002 a project limit holds its jobs; the reason names the quota" {
    shoal_cluster_start 1 4
    shoal team create research --guaranteed 4
    shoal project create vision --team research --guaranteed 1 --limit 2
    a=$(submit --project vision --gpus 2 -- sleep 3)
    b=$(submit --project vision --gpus 1 -- true)
    wait_job_state "$a" running
    wait_for 10 reason_matches "$b" "^quota: project vision"
    [ "$(job_state "$b")" = pending ]
    # Asking for more than the limit at once can never run: refused.
    run shoal submit --project vision --gpus 3 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *vision* ]]
    wait_job_state "$b" completed 30
}

@test "quo-003 borrowed GPUs are taken back by preemption for the owner" {
    shoal_cluster_start 1 4
    shoal team create t --guaranteed 4
    shoal project create owner --team t --guaranteed 3 --limit 4
    shoal project create borrower --team t --guaranteed 1 --limit 4
    # The borrower takes all 4 GPUs (3 of them borrowed).
    big=$(submit --project borrower --gpus 1 --requeue -- sleep 1000)
    b2=$(submit --project borrower --gpus 3 --requeue -- sleep 1000)
    wait_job_state "$big" running
    wait_job_state "$b2" running
    # The owner wants its guarantee back.
    own=$(submit --project owner --gpus 3 -- sh -c 'echo owner ran')
    wait_job_state "$own" completed 60
    # The borrower lost the job that held borrowed GPUs; it was requeued.
    [ "$(job_field "$b2" .requeues)" -ge 1 ]
    [ "$(job_state "$big")" = running ]
}
