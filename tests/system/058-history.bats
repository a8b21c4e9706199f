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

@test "his-002 history filters by user, project and state, with chosen columns" {
    shoal_cluster_start 1 2
    shoal team create research --guaranteed 0 >/dev/null
    shoal project create vision --team research >/dev/null
    a=$(submit --gpus 1 --name ok -- true)
    b=$(submit --gpus 1 --name bad -- sh -c 'exit 3')
    v=$(submit --gpus 1 --project vision -- true)
    wait_job_state "$a" completed
    wait_job_state "$b" failed
    wait_job_state "$v" completed
    run shoal history --state failed --format id,name,state,exit
    [ "$status" -eq 0 ]
    echo "$output"
    [ "$(echo "$output" | head -n1 | tr -s ' ')" = "ID NAME STATE EXIT" ]
    [ "$(echo "$output" | tail -n +2 | tr -s ' ')" = "$b bad failed 3" ]
    run shoal history --project vision --format id
    [ "$(echo "$output" | tail -n +2 | tr -d ' ')" = "$v" ]
    run shoal history --user "$(id -un)" --state completed,failed --json
    [ "$(echo "$output" | jq length)" -eq 3 ]
    run shoal history --user nobody-here --json
    [ "$(echo "$output" | jq length)" -eq 0 ]
    run shoal history --state running
    [ "$status" -ne 0 ]
    [[ "$output" == *"state 'running' is not one a job ends in"* ]]
    run shoal history --format id,colour
    [ "$status" -ne 0 ]
    [[ "$output" == *"unknown column 'colour'"* ]]
}
