#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: shoald --policy picks the scheduling policy (the engine's, the
# same setting `shoal sim --policy` takes) and says which in /v1/health.
#   pol-001 without --policy the controller runs the default policy
#   pol-002 --policy las is accepted, shows in health, and jobs still run
#   pol-003 a bad policy name is refused with the choices named, and no
#           controller starts; LAS settings with --policy fifo too (the
#           default policy takes them for checkpointable jobs)
#   pol-003c shoal sim refuses the --las-* options with --policy fifo and
#           says which policies take them; the default policy takes them
#   pol-004 under las a checkpointable job that has had more GPU time is
#           preempted for a new job, requeued, and runs again after it
#   pol-005 --checkpointable without requeue is refused through the API
#   pol-006 the default policy preempts a checkpointable job that has had
#           more GPU time for a new checkpointable job, requeues it, and
#           runs it again after it

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

@test "pol-003b LAS settings need --policy las or default; bad levels, hold and guard are refused" {
    shoal_tmp_init
    mkdir -p "$SHOAL_TEST_DIR/bad"
    run "$SHOALD" --state "$SHOAL_TEST_DIR/bad" --port 0 --policy fifo --las-quantum 1m
    [ "$status" -ne 0 ]
    echo "$output" | grep -q -- "need --policy las"
    run "$SHOALD" --state "$SHOAL_TEST_DIR/bad" --port 0 --policy fifo --las-hold 7d
    [ "$status" -ne 0 ]
    echo "$output" | grep -q -- "need --policy las"
    run "$SHOALD" --state "$SHOAL_TEST_DIR/bad" --port 0 --policy las --las-starve-factor 1001
    [ "$status" -ne 0 ]
    echo "$output" | grep -q -- "--las-starve-factor"
    run "$SHOALD" --state "$SHOAL_TEST_DIR/bad" --port 0 --policy las --las-hold 400d
    [ "$status" -ne 0 ]
    echo "$output" | grep -q -- "--las-hold"
    run "$SHOALD" --state "$SHOAL_TEST_DIR/bad" --port 0 --policy las --las-hold-gpus 0
    [ "$status" -ne 0 ]
    echo "$output" | grep -q -- "--las-hold-gpus"
    run "$SHOALD" --state "$SHOAL_TEST_DIR/bad" --port 0 --policy las --las-levels 2h,1h
    [ "$status" -ne 0 ]
    echo "$output" | grep -q -- "--las-levels: LAS levels must be ascending"
    [ ! -e "$SHOAL_TEST_DIR/bad/url" ]
}

@test "pol-003c shoal sim: --las-* with --policy fifo is refused, the default takes them" {
    trace="$BATS_TEST_DIRNAME/../data/traces/example.csv"
    run shoal sim --cluster 1x8xH100-80GB --trace "$trace" --policy fifo --las-quantum 1m
    echo "$output"
    [ "$status" -ne 0 ]
    echo "$output" | grep -q -- "--las-quantum, --las-hold\* and --las-starve-\* need --policy las or default"
    run shoal sim --cluster 1x8xH100-80GB --trace "$trace" --las-quantum 1m --resume all:1m
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -q "policy default"
}

# Levels at 2 GPU-seconds, a 1 s quantum: a job running 2 s on 1 GPU is
# level 1 and a new job (level 0) preempts it.
@test "pol-004 las preempts a checkpointable job for a new one and requeues it" {
    shoald_start --policy las --las-levels 2s --las-quantum 1s --kill-grace 2s
    agent_start node1 1
    wait_for 20 nodes_up_is 1
    long=$(submit --gpus 1 --checkpointable -- sleep 600)
    wait_job_state "$long" running 30
    [ "$(job_field "$long" .checkpointable)" = true ]
    short=$(submit --gpus 1 -- true)
    wait_job_state "$short" completed 60
    # The long job went back to the queue and runs again after it.
    [ "$(job_field "$long" .requeues)" -ge 1 ]
    wait_job_state "$long" running 30
    shoal cancel "$long"
}

@test "pol-005 checkpointable without requeue is refused through the API" {
    shoald_start --policy las
    api POST /v1/jobs '{"command":["true"],"gpus":1,"checkpointable":true}'
    [ "$status_code" = 400 ]
    echo "$body" | jq -r .error.message | grep -q "checkpointable needs requeue"
    api POST /v1/jobs '{"command":["true"],"gpus":1,"checkpointable":true,"requeue":true}'
    [ "$status_code" = 201 ]
}

# The default policy with the same small levels: both jobs checkpoint; the
# long one reaches level 1 after 2 s on its GPU and, once it ran the 1 s
# quantum, the new one (level 0) preempts it.
@test "pol-006 default preempts a checkpointable job for a new checkpointable one" {
    shoald_start --las-levels 2s --las-quantum 1s --kill-grace 2s
    [ "$(health_policy)" = default ]
    agent_start node1 1
    wait_for 20 nodes_up_is 1
    long=$(submit --gpus 1 --checkpointable -- sleep 600)
    wait_job_state "$long" running 30
    short=$(submit --gpus 1 --checkpointable -- true)
    wait_job_state "$short" completed 60
    [ "$(job_field "$long" .requeues)" -ge 1 ]
    wait_job_state "$long" running 30
    shoal cancel "$long"
}
