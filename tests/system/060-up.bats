#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: `shoal up`, the newcomer's local cluster: it prints the URL, writes
# the client config, runs jobs on simulated GPUs, stops everything on
# SIGINT, and resumes the same cluster on the same state folder.

load lib/cluster

setup() {
    shoal_tmp_init
    UP_STATE="$SHOAL_TEST_DIR/up"
}

teardown() {
    if [ -n "${UP_PID:-}" ]; then
        kill -INT "$UP_PID" 2>/dev/null || true
        wait "$UP_PID" 2>/dev/null || true
    fi
    shoal_cluster_stop
}

up_start() {
    "$SHOAL_CLI" up --nodes 2 --gpus-per-node 2 --gpu-model A100-80GB \
        --port 0 --state "$UP_STATE" --simulate \
        >"$SHOAL_TEST_DIR/up.out" 2>"$SHOAL_TEST_DIR/up.err" &
    UP_PID=$!
    wait_for 30 grep -q '^http://' "$SHOAL_TEST_DIR/up.out"
    unset SHOAL_URL SHOAL_TOKEN
    wait_for 30 sh -c "'$SHOAL_CLI' nodes --json | jq -e 'map(select(.state == \"up\")) | length == 2'"
}

up_stop() {
    kill -INT "$UP_PID"
    wait "$UP_PID"
    UP_PID=
}

@test "up-001 shoal up starts a cluster that runs jobs and stops on SIGINT" {
    up_start
    url=$(head -n1 "$SHOAL_TEST_DIR/up.out")
    grep -q "url = $url" "$XDG_CONFIG_HOME/shoal/config"
    grep -q "^token = shoal_" "$XDG_CONFIG_HOME/shoal/config"
    run shoal nodes --json
    [ "$(echo "$output" | jq -r '.[0].gpus[0].model')" = A100-80GB ]
    echo "$output" | jq -r '.[].gpus[].uuid' | sort >"$SHOAL_TEST_DIR/uuids1"
    [ "$(wc -l <"$SHOAL_TEST_DIR/uuids1")" -eq 4 ]
    id=$(shoal submit --gpus 2 -- sh -c 'echo $CUDA_VISIBLE_DEVICES')
    wait_for 30 sh -c "'$SHOAL_CLI' show $id --json | jq -e '.state == \"completed\"'"
    run shoal logs "$id"
    [[ "$output" == GPU-*,GPU-* ]]
    up_stop
    # Everything it started is gone.
    if pgrep -f "$UP_STATE" >/dev/null; then false; fi
    # The same state resumes the same cluster.
    up_start
    run shoal nodes --json
    echo "$output" | jq -r '.[].gpus[].uuid' | sort >"$SHOAL_TEST_DIR/uuids2"
    cmp "$SHOAL_TEST_DIR/uuids1" "$SHOAL_TEST_DIR/uuids2"
    run shoal show "$id" --json
    [ "$(echo "$output" | jq -r .state)" = completed ]
    up_stop
}

@test "up-002 shoal up refuses bad options" {
    run "$SHOAL_CLI" up --nodes 100
    [ "$status" -ne 0 ]
    [[ "$output" == *"--nodes"* ]]
    run "$SHOAL_CLI" up --gpu-model 'bad model'
    [ "$status" -ne 0 ]
    run "$SHOAL_CLI" up extra
    [ "$status" -ne 0 ]
}

@test "up-003 shoal up hands controller options to shoald, which checks them" {
    "$SHOAL_CLI" up --nodes 1 --gpus-per-node 1 --port 0 --state "$UP_STATE" \
        --simulate --kill-grace 3s --idle-policy cancel --reslice-on-demand \
        --policy las >"$SHOAL_TEST_DIR/up.out" 2>"$SHOAL_TEST_DIR/up.err" &
    UP_PID=$!
    wait_for 30 grep -q '^http://' "$SHOAL_TEST_DIR/up.out"
    ctl=$(pgrep -f "shoald --state $UP_STATE/controller")
    args=$(tr '\0' ' ' <"/proc/$ctl/cmdline")
    [[ "$args" == *"--kill-grace 3s --idle-policy cancel --reslice-on-demand --policy las"* ]]
    up_stop
    # A bad value is shoald's to refuse; shoal up stops with its message.
    run "$SHOAL_CLI" up --nodes 0 --port 0 --state "$UP_STATE" \
        --idle-policy sometimes
    [ "$status" -ne 0 ]
    [[ "$output" == *"--idle-policy must be"* ]]
}
