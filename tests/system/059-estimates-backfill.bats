#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: what `shoal queue` says about when a pending job starts (an
# estimated start from one plan down the queue, or "no estimate: why"),
# and backfill with quotas on: a blocked job beyond its guarantee holds the
# reservation, so a later job that would delay it waits.

load lib/cluster

teardown() { shoal_cluster_stop; }

reason_has() { job_field "$1" .reason | grep -q "$2"; }

@test "est-001 every pending job in shoal queue has an estimate or says why not" {
    shoal_cluster_start 1 4
    shoal team create research --guaranteed 0
    shoal project create capped --team research --limit 1
    a=$(submit --project capped --gpus 1 -- sleep 600)
    b=$(submit --gpus 3 --time 10m -- sleep 600)
    wait_job_state "$a" running
    wait_job_state "$b" running
    c=$(submit --project capped --gpus 1 -- true)
    d=$(submit --gpus 2 --time 5m -- true)
    e=$(submit --gpus 4 --time 5m -- true)
    wait_for 10 reason_has "$c" "quota: project capped"
    wait_for 10 reason_has "$d" "resources\|reservation"
    run shoal queue
    [ "$status" -eq 0 ]
    echo "$output"
    # Each pending job: a start time or an explicit "no estimate: ...".
    echo "$output" | grep "^ *$c " | grep -q "no estimate: it waits for a quota"
    echo "$output" | grep "^ *$d " | grep -q "(start in "
    echo "$output" | grep "^ *$e " | grep -q "(start in "
    # The same in the JSON view and in show.
    [ -n "$(job_field "$d" .estimated_start)" ]
    job_field "$c" .estimate | grep -q "^no estimate: "
    shoal show "$c" | grep -q "estimated start: *no estimate: "
    # The pending ones first: cancelling a or b first lets c or d start,
    # and end before their turn to be cancelled.
    shoal cancel "$c" "$d" "$e" "$a" "$b" >/dev/null
}

@test "est-002 backfill with quotas: a blocked borrower's reservation is not jumped" {
    shoal_cluster_start 2 4
    # Any guarantee turns quotas on; the default project has none, so its
    # jobs borrow.
    shoal team create research --guaranteed 1
    shoal project create vision --team research --guaranteed 1
    x=$(submit --gpus 4 --time 1m -- sleep 20)
    wait_job_state "$x" running
    # A 2-node gang (4 GPUs per node, as the jobs below: the same size
    # class, so no small-job credit reorders them) waits for x's node.
    big=$(submit --nodes 2 --gpus 4 --time 5m -- true)
    wait_for 10 reason_has "$big" "reservation: waiting for its reserved start"
    # The other node is free, but a 10-minute job there would delay the
    # gang.
    short=$(submit --gpus 4 --time 10m -- sleep 1)
    wait_for 10 reason_has "$short" "reservation: waiting for job $big"
    [ "$(job_state "$short")" = pending ]
    # One that ends before the reservation may use it (backfill).
    quick=$(submit --gpus 4 --time 5s -- true)
    wait_job_state "$quick" completed 20
    [ "$(job_state "$short")" = pending ]
    shoal cancel "$x" >/dev/null
    wait_job_state "$big" completed 30
}
