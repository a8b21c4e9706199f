#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: the controller's HTTP front door under hostile input, without a
# token or with one. Each test replays an attack and checks what a client
# notices: the fitting 4xx with a JSON body that is valid UTF-8, other
# clients still served, and the controller healthy with its data unchanged.
#   sec-004  invalid UTF-8 in a path or a query (%FF) gets its 400/404
#            with the byte shown as U+FFFD, not 500 (item 4 of the
#            hardening issue)
#   sec-004b a name whose 64-byte quote in a message would cut a character
#            in two is quoted up to the character before
#   sec-005  one address flooding the API with half-sent requests holds at
#            most --max-conns-per-address connections, the rest are refused;
#            other addresses, agents and submissions go on (item 5)
#   sec-005b silent connections are closed after --request-timeout; a client
#            with a valid token keeps its connection between requests, and
#            a held long-poll outlives the timeout
#   sec-005c the new options refuse bad values and are in --help
# The flood comes from 127.0.0.3: everything else (curl, agents, the CLI)
# reaches the controller from 127.0.0.1, so the flood cannot count them.

load lib/cluster

CONNS_PY="$BATS_TEST_DIRNAME/lib/conns.py"
FLOOD_ADDR=127.0.0.3

setup() { shoald_start --request-timeout 3s; }
teardown() { shoal_cluster_stop; }

# raw METHOD PATH [JSON]: like api, but the body stays bytes in $body_file.
raw() {
    local method=$1 path=$2 data=${3:-}
    body_file="$SHOAL_TEST_DIR/body.$RANDOM"
    local args=(-s -o "$body_file" -w '%{http_code}' -X "$method"
        -H "Authorization: Bearer $SHOAL_TOKEN")
    [ -n "$data" ] && args+=(-H 'Content-Type: application/json'
        --data-binary "$data")
    status_code=$(curl "${args[@]}" "$SHOAL_URL$path")
}

# The error message of $body_file, after checking that the body is UTF-8
# (strictly: no byte left undecoded) and JSON with an error object.
error_message() {
    python3 -c '
import json, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")
print(json.loads(text)["error"]["message"])' "$body_file"
}

# A name of 63 ASCII bytes and one 2-byte character: quoted with "%.64s"
# it would end in half a character.
long_name() { python3 -c 'print("a" * 63 + "\u00e9")'; }

jobs_snapshot() {
    curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs" |
        jq -S '[.jobs[] | {id, state, user, project}]'
}

@test "sec-004 invalid UTF-8 in a path or a query gets its 400/404 with valid JSON" {
    api POST /v1/jobs '{"command":["true"]}'
    [ "$status_code" = 201 ]
    before=$(jobs_snapshot)
    # path, query string, and both in one request; with and without token
    while read -r method path want word; do
        raw "$method" "$path"
        echo "$method $path -> $status_code $(cat "$body_file")"
        [ "$status_code" = "$want" ]
        msg=$(error_message)
        echo "$msg" | grep -q -- "$word"
        # the bad byte shows as U+FFFD
        echo "$msg" | grep -q $'\xef\xbf\xbd'
    done <<'CASES'
GET /v1/nodes/%FF 404 node
GET /v1/%FF%FE 404 endpoint
GET /v1/users/ab%C3 404 user
GET /v1/teams/%FFteam 404 team
GET /v1/projects/%C0%AF 404 project
DELETE /v1/jobs/%FF 400 job
GET /v1/jobs?state=%FF 400 state
GET /v1/jobs?state=running,%E2%82 400 state
GET /v1/usage?since=%FF 400 since
GET /v1/history?until=x%FFy 400 until
GET /v1/slices/presets?gpu_model=%FF 400 gpu_model
CASES
    # Without a token the path is still quoted safely.
    run curl -s "$SHOAL_URL/v1/%FF"
    echo "$output" | jq -e '.error.code == "not_found"'
    run curl -sf "$SHOAL_URL/v1/health"
    [ "$status" -eq 0 ]
    [ "$(jobs_snapshot)" = "$before" ]
}

@test "sec-004b a name quoted up to 64 bytes is never cut inside a character" {
    api POST /v1/jobs '{"command":["true"]}'
    before=$(jobs_snapshot)
    name=$(long_name)
    enc=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$name")
    a63=$(printf 'a%.0s' $(seq 63))
    while read -r method path want data; do
        data=${data//NAME/$name}
        raw "$method" "${path//NAME/$enc}" "$data"
        echo "$method $path $data -> $status_code $(cat "$body_file")"
        [ "$status_code" = "$want" ]
        msg=$(error_message)
        # The quote stops before the character that did not fit whole.
        echo "$msg" | grep -q "$a63"
        if echo "$msg" | grep -q $'\xef\xbf\xbd'; then false; fi
        if echo "$msg" | grep -q $'\xc3'; then false; fi
    done <<'CASES'
GET /v1/users/NAME 404
GET /v1/teams/NAME 404
GET /v1/projects/NAME 404
GET /v1/nodes/NAME 404
GET /v1/projects/NAME/members 404
POST /v1/jobs 400 {"command":["true"],"NAME":1}
POST /v1/jobs 400 {"command":["true"],"env":{"NAME":"x"}}
POST /v1/jobs 400 {"command":["true"],"env":{"NAME":1}}
POST /v1/jobs 400 {"command":["true"],"volumes":["NAME"]}
POST /v1/jobs 400 {"command":["true"],"volumes":[{"NAME":1}]}
CASES
    [ "$(jobs_snapshot)" = "$before" ]
    api GET /v1/users
    if echo "$body" | grep -q "$a63"; then false; fi
}

@test "sec-005 one address cannot take every connection; others are served" {
    agent_start node1
    wait_for 20 nodes_up_is 1
    api POST /v1/jobs '{"command":["true"]}'
    first=$(echo "$body" | jq .id)
    wait_job_state "$first" completed
    before=$(jobs_snapshot)
    # 300 half-sent requests from one address, kept alive by a byte every
    # 0.3 s: 64 (the default limit) are held, the other 236 refused.
    out="$SHOAL_TEST_DIR/flood"
    mkdir -p "$out"
    python3 "$CONNS_PY" flood "$SHOALD_PORT" "$FLOOD_ADDR" 300 236 "$out" \
        >"$out/log" 2>&1 3>&- &
    record_pid $!
    wait_for 90 test -s "$out/held"
    echo "held $(cat "$out/held") refused $(cat "$out/refused")"
    [ "$(cat "$out/held")" = 64 ]
    [ "$(cat "$out/refused")" = 236 ]
    # That address gets no more...
    run curl -s --max-time 10 --interface "$FLOOD_ADDR" "$SHOAL_URL/v1/health"
    [ "$status" -ne 0 ]
    # ...while everyone else is served: health, a submission that an agent
    # runs, a user with a token.
    run curl -sf --max-time 10 "$SHOAL_URL/v1/health"
    [ "$status" -eq 0 ]
    api POST /v1/jobs '{"command":["true"]}'
    [ "$status_code" = 201 ]
    second=$(echo "$body" | jq .id)
    wait_job_state "$second" completed
    nodes_up_is 1
    # The flood goes silent: the server closes all 64 after its request
    # timeout and the address is served again.
    touch "$out/stop"
    wait_for 90 test -s "$out/closed"
    [ "$(cat "$out/closed")" = 64 ]
    run curl -sf --max-time 10 --interface "$FLOOD_ADDR" "$SHOAL_URL/v1/health"
    [ "$status" -eq 0 ]
    # Healthy, and nothing changed but the one job submitted meanwhile.
    kill -0 "$SHOALD_PID"
    after=$(jobs_snapshot)
    [ "$(echo "$after" | jq "map(select(.id != $second))")" = "$before" ]
    # A refused flood leaves one log line per kind of message, not 236.
    [ "$(grep -c 'connection limit' "$SHOAL_TEST_DIR/shoald.log")" -le 3 ]
}

@test "sec-005b silent connections are closed; clients with a token keep theirs" {
    api POST /v1/jobs '{"command":["true"]}'
    before=$(jobs_snapshot)
    # 20 connections that send nothing or half a request line: all closed
    # by the server (--request-timeout 3s), none left to pile up.
    run python3 "$CONNS_PY" idle "$SHOALD_PORT" "$FLOOD_ADDR" 20
    echo "$output"
    [ "$output" = "closed 20 of 20" ]
    # A client without a token that goes quiet after its answer is closed;
    # one with a token keeps its connection (--keepalive-timeout, 2m).
    run python3 "$CONNS_PY" keepalive "$SHOALD_PORT" 127.0.0.1 5
    echo "$output"
    [ "$output" = "200 closed" ]
    run python3 "$CONNS_PY" keepalive "$SHOALD_PORT" 127.0.0.1 5 "$SHOAL_TOKEN"
    echo "$output"
    [ "$output" = "200 200" ]
    # A held long-poll outlives the request timeout.
    id=$(echo "$(jobs_snapshot)" | jq '.[0].id')
    run curl -sf --max-time 30 -H "Authorization: Bearer $SHOAL_TOKEN" \
        "$SHOAL_URL/v1/jobs/$id/logs?wait=5"
    [ "$status" -eq 0 ]
    echo "$output" | jq -e '.offset == 0'
    run curl -sf "$SHOAL_URL/v1/health"
    [ "$status" -eq 0 ]
    [ "$(jobs_snapshot)" = "$before" ]
}

@test "sec-005c the limits are options with checked values" {
    run "$SHOALD" --state "$SHOAL_TEST_DIR/x" --max-conns-per-address -1
    [ "$status" -eq 2 ]
    echo "$output" | grep -q -- --max-conns-per-address
    run "$SHOALD" --state "$SHOAL_TEST_DIR/x" --request-timeout 0s
    [ "$status" -eq 2 ]
    run "$SHOALD" --state "$SHOAL_TEST_DIR/x" --keepalive-timeout 2d
    [ "$status" -eq 2 ]
    echo "$output" | grep -q "at most 1d"
    run "$SHOALD" --help
    echo "$output" | grep -q -- "--max-conns-per-address N"
    echo "$output" | grep -q -- "--request-timeout DUR"
    echo "$output" | grep -q -- "--keepalive-timeout DUR"
}
