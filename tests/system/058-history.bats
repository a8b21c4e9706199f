#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: the controller's job history, and exporting it as a trace that
# `shoal sim` replays against another cluster shape.

load lib/cluster

teardown() { shoal_cluster_stop; }

@test "his-001 history lists ended jobs; --trace replays in shoal sim" {
    shoal_cluster_start 1 2
    a=$(submit --gpus 2 --time 1m -- sleep 0.5)
    b=$(submit --gpus 1 -- sh -c 'exit 3')
    c=$(submit --gpus 1 -- sleep 1000)
    wait_job_state "$a" completed
    wait_job_state "$b" failed
    wait_job_state "$c" running
    run shoal history --json
    [ "$(echo "$output" | jq length)" -eq 2 ]
    run shoal history
    [[ "$output" == *completed* ]] && [[ "$output" == *failed* ]]
    shoal history --trace >"$SHOAL_TEST_DIR/trace.csv"
    head -n1 "$SHOAL_TEST_DIR/trace.csv" | grep -qx "id,submit,duration,gpus,nodes,user,project,gpu_type,priority,time_limit,slice"
    [ "$(wc -l <"$SHOAL_TEST_DIR/trace.csv")" -eq 3 ]
    grep -q "^$a,.*,2,1,$(id -un),default,,normal,60," "$SHOAL_TEST_DIR/trace.csv"
    run shoal sim --cluster 2x4xH100-80GB --trace "$SHOAL_TEST_DIR/trace.csv" --json
    echo "$output"
    [ "$(echo "$output" | jq .jobs)" -eq 2 ]
    run shoal history --since tomorrow
    [ "$status" -ne 0 ]
}
