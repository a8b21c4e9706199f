#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: durability of the controller. Every acknowledged change survives a
# kill -9; ids are never reused across restarts; a change whose commit fails
# is refused (503) and leaves nothing behind.

load lib/cluster

teardown() { shoal_cluster_stop; }

acked_at_least() {
    [ "$(cat "$SHOAL_TEST_DIR"/acked.* 2>/dev/null | wc -l)" -ge "$1" ]
}

submit_loop() {
    # Submit until killed; record each acknowledged id with its state.
    local out=$1
    while :; do
        r=$(curl -s -m 5 -X POST -H "Authorization: Bearer $SHOAL_TOKEN" \
            --data '{"command":["true"],"gpus":1}' "$SHOAL_URL/v1/jobs") || continue
        id=$(echo "$r" | jq -r '.id // empty' 2>/dev/null) || continue
        [ -n "$id" ] && echo "$id" >>"$out"
    done
}

@test "dur-001 kill -9 while clients submit loses no acknowledged job" {
    shoald_start
    for i in 1 2 3 4; do
        submit_loop "$SHOAL_TEST_DIR/acked.$i" &
        record_pid $!
    done
    wait_for 60 acked_at_least 200
    # Cancel a few acknowledged jobs; their new state must survive too.
    first=$(head -n1 "$SHOAL_TEST_DIR/acked.1")
    api POST "/v1/jobs/$first/cancel"
    [ "$status_code" = 200 ]
    shoald_kill9
    # Stop the submitters (recorded pids) before checking.
    for pid in $(tail -n 4 "$SHOAL_TEST_DIR/pids"); do kill "$pid" 2>/dev/null || true; done
    for pid in $(tail -n 4 "$SHOAL_TEST_DIR/pids"); do
        wait_for 10 sh -c "! kill -0 $pid"
    done
    cat "$SHOAL_TEST_DIR"/acked.* | sort -n >"$SHOAL_TEST_DIR/acked"
    shoald_start
    api GET '/v1/jobs?state=pending,cancelled'
    echo "$body" | jq '.jobs[].id' | sort -n >"$SHOAL_TEST_DIR/present"
    # Acknowledged ids not present (numeric order suits comm only below
    # a new digit, so a plain set difference).
    missing=$(grep -vxFf "$SHOAL_TEST_DIR/present" "$SHOAL_TEST_DIR/acked" || true)
    [ -z "$missing" ]
    [ "$(job_state "$first")" = cancelled ]
    # Ids are never reused after the restart.
    max=$(tail -n1 "$SHOAL_TEST_DIR/present")
    api POST /v1/jobs '{"command":["true"]}'
    [ "$(echo "$body" | jq .id)" -gt "$max" ]
}

@test "dur-002 a restarted controller keeps ids, states and tokens" {
    shoald_start
    api POST /v1/jobs '{"command":["true"],"name":"a"}'
    a=$(echo "$body" | jq .id)
    api POST /v1/jobs '{"command":["true"],"name":"b"}'
    b=$(echo "$body" | jq .id)
    api POST "/v1/jobs/$b/cancel"
    shoald_stop
    shoald_start
    [ "$(job_state "$a")" = pending ]
    [ "$(job_state "$b")" = cancelled ]
    api GET "/v1/jobs/$a"
    [ "$(echo "$body" | jq -r .name)" = a ]
    api POST /v1/jobs '{"command":["true"]}'
    [ "$(echo "$body" | jq .id)" -eq $((b + 1)) ]
}

@test "dur-003 a failed commit is answered 503 and changes nothing" {
    shoal_tmp_init
    mkdir -p "$SHOAL_TEST_DIR/controller"
    # Commit 1 initialises the cluster, 2 takes one job; from 3 on the store
    # fails like a full disk.
    shoald_start --store "fault:3:$(test_store_url)"
    api POST /v1/jobs '{"command":["true"]}'
    [ "$status_code" = 201 ]
    api POST /v1/jobs '{"command":["true"]}'
    [ "$status_code" = 503 ]
    echo "$body" | jq -r .error.message | grep -q "not made"
    api GET /v1/jobs
    [ "$(echo "$body" | jq '.jobs | length')" -eq 1 ]
    api POST /v1/jobs/1/cancel
    [ "$status_code" = 503 ]
    [ "$(job_state 1)" = pending ]
}

@test "dur-004 finished jobs leave memory but stay in the store" {
    shoald_start --keep-finished 1s
    api POST /v1/jobs '{"command":["true"],"name":"old"}'
    id=$(echo "$body" | jq .id)
    api POST "/v1/jobs/$id/cancel"
    wait_for 10 ended_over_ms_ago "$id" 1000
    shoald_stop
    shoald_start --keep-finished 1s
    # Not among the jobs in memory, but shown from the store.
    api GET '/v1/jobs'
    [ "$(echo "$body" | jq '.jobs | length')" -eq 0 ]
    api GET "/v1/jobs/$id"
    [ "$status_code" = 200 ]
    [ "$(echo "$body" | jq -r .name)" = old ]
    [ "$(echo "$body" | jq -r .state)" = cancelled ]
    api POST "/v1/jobs/$id/cancel"
    [ "$status_code" = 409 ]
    # Ids still go on from the highest.
    api POST /v1/jobs '{"command":["true"]}'
    [ "$(echo "$body" | jq .id)" -eq $((id + 1)) ]
}

@test "dur-005 a submission whose answer is lost is sent again and makes one job" {
    shoald_start
    wait_for 10 health_ok
    port=${SHOAL_URL##*:}
    python3 "$BATS_TEST_DIRNAME/lib/lossy_proxy.py" "$port" \
        "$SHOAL_TEST_DIR/proxy.port" "$SHOAL_TEST_DIR/proxy.log" &
    record_pid $!
    wait_for 10 test -s "$SHOAL_TEST_DIR/proxy.port"
    # The proxy passes the first POST on and closes the connection without
    # its answer: the CLI cannot know whether the job was made.
    id=$(SHOAL_URL="http://127.0.0.1:$(cat "$SHOAL_TEST_DIR/proxy.port")" shoal submit --hold -- true)
    [ -n "$id" ]
    # Sent twice with one key; one job, the one the CLI printed.
    [ "$(grep -c '^POST /v1/jobs ' "$SHOAL_TEST_DIR/proxy.log")" = 2 ]
    [ "$(grep '^POST /v1/jobs ' "$SHOAL_TEST_DIR/proxy.log" | awk '{print $3}' | sort -u | wc -l)" = 1 ]
    [ "$(grep '^POST /v1/jobs ' "$SHOAL_TEST_DIR/proxy.log" | awk '{print $3}' | head -1)" != - ]
    api GET '/v1/jobs?state=pending'
    [ "$(echo "$body" | jq '.jobs | length')" = 1 ]
    [ "$(echo "$body" | jq '.jobs[0].id')" = "$id" ]
    # After a restart (the key is stored with the job) the same key still
    # finds it.
    key=$(grep '^POST /v1/jobs ' "$SHOAL_TEST_DIR/proxy.log" | awk '{print $3}' | head -1)
    shoald_stop
    shoald_start
    wait_for 10 health_ok
    code=$(curl -s -o "$SHOAL_TEST_DIR/again" -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $SHOAL_TOKEN" -H "Idempotency-Key: $key" \
        -H 'Content-Type: application/json' -d '{"command":["true"],"hold":true}' \
        "$SHOAL_URL/v1/jobs")
    [ "$code" = 200 ]
    [ "$(jq .id "$SHOAL_TEST_DIR/again")" = "$id" ]
}
