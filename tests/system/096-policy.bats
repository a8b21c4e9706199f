#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: shoald --policy picks the scheduling policy (the engine's, the
# same setting `shoal sim --policy` takes) and says which in /v1/health.
#   pol-001 without --policy the controller runs the default policy
#   pol-002 --policy las is accepted, shows in health, and jobs still run
#   pol-003 a bad policy name is refused with the choices named, and no
#           controller starts

load lib/cluster

teardown() { shoal_cluster_stop; }

health_policy() { curl -sf "$SHOAL_URL/v1/health" | jq -r .policy; }

@test "pol-001 without --policy the controller runs the default policy" {
    shoald_start
    [ "$(health_policy)" = default ]
}

@test "pol-002 --policy las is accepted, shows in health, and jobs still run" {
    shoald_start --policy las
    [ "$(health_policy)" = las ]
    agent_start node1 2
    wait_for 20 nodes_up_is 1
    id=$(submit --gpus 1 -- true)
    wait_job_state "$id" completed 30
}

@test "pol-003 a bad policy name is refused with the choices named" {
    shoal_tmp_init
    mkdir -p "$SHOAL_TEST_DIR/bad"
    run "$SHOALD" --state "$SHOAL_TEST_DIR/bad" --port 0 --policy shortest
    echo "$output"
    [ "$status" -ne 0 ]
    echo "$output" | grep -q -- "--policy must be default, fifo or las, not 'shortest'"
    [ ! -e "$SHOAL_TEST_DIR/bad/url" ]
}
