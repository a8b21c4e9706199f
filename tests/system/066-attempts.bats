#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: shoal logs -f ends with the job's status, as a script waiting on
# a job needs: 0 when it completed, non-zero with how it ended otherwise.

load lib/cluster

teardown() { shoal_cluster_stop; }

@test "att-001 logs -f exits 0 for a completed job, non-zero with a message otherwise" {
    shoal_cluster_start 1 2
    ok=$(submit --gpus 1 -- sh -c 'sleep 1; echo done')
    run shoal logs -f "$ok"
    [ "$status" -eq 0 ]
    [[ "$output" == *done* ]]
    bad=$(submit --gpus 1 -- sh -c 'sleep 1; echo failing; exit 3')
    run shoal logs -f "$bad"
    [ "$status" -ne 0 ]
    [[ "$output" == *failing* ]]
    [[ "$output" == *"shoal: job $bad failed (exit 3)"* ]]
    long=$(submit --gpus 1 -- sleep 300)
    wait_job_state "$long" running 20
    "$SHOAL_CLI" logs -f "$long" >"$SHOAL_TEST_DIR/f.out" 2>&1 &
    follower=$!
    record_pid "$follower"
    shoal cancel "$long" >/dev/null
    rc=0
    wait "$follower" || rc=$?
    [ "$rc" -ne 0 ]
    grep -q "shoal: job $long cancelled" "$SHOAL_TEST_DIR/f.out"
    # Without -f, logs of a failed job still exit 0 (it printed them).
    run shoal logs "$bad"
    [ "$status" -eq 0 ]
}
