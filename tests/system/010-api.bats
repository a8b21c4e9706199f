#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: the REST API of shoald: jobs are accepted with increasing ids,
# listed with filters, shown and cancelled; every bad request gets a clear
# error with a fitting status and changes nothing.

load lib/cluster

setup() { shoald_start; }
teardown() { shoal_cluster_stop; }

job_count() {
    api GET /v1/jobs
    echo "$body" | jq '.jobs | length'
}

@test "api-001 health answers without a token" {
    run curl -sf "$SHOAL_URL/v1/health"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | jq -r .status)" = ok ]
}

@test "api-002 a submission is accepted with increasing ids" {
    api POST /v1/jobs '{"command":["true"],"gpus":1}'
    [ "$status_code" = 201 ]
    first=$(echo "$body" | jq .id)
    [ "$(echo "$body" | jq -r .state)" = pending ]
    api POST /v1/jobs '{"command":["true"]}'
    [ "$status_code" = 201 ]
    [ "$(echo "$body" | jq .id)" -eq $((first + 1)) ]
}

@test "api-003 bad submissions are refused with the field named and nothing changes" {
    api POST /v1/jobs '{"command":["true"]}'
    before_id=$(echo "$body" | jq .id)
    before=$(job_count)
    while IFS='|' read -r json word; do
        api POST /v1/jobs "$json"
        echo "$json -> $status_code $body"
        [ "$status_code" = 400 ]
        [ "$(echo "$body" | jq -r .error.code)" = invalid ]
        echo "$body" | jq -r .error.message | grep -q -- "$word"
    done <<'CASES'
{"command":["true"],|malformed JSON
[1,2]|object
{}|command
{"command":[]}|command
{"command":"ls"}|command
{"command":[""]}|command
{"command":["ls"],"gpus":-1}|gpus
{"command":["ls"],"gpus":100000}|gpus
{"command":["ls"],"gpus":"two"}|gpus
{"command":["ls"],"nodes":0}|nodes
{"command":["ls"],"nodes":99999}|nodes
{"command":["ls"],"gpus":1,"colour":"red"}|unknown field 'colour'
{"command":["ls"],"priority":"urgent"}|priority
{"command":["ls"],"mem":"lots"}|mem
{"command":["ls"],"time_limit":"90"}|time_limit
{"command":["ls"],"time_limit":-3}|time_limit
{"command":["ls"],"cpus":-2}|cpus
{"command":["ls"],"env":{"9X":"1"}}|env
{"command":["ls"],"workdir":"relative/dir"}|workdir
{"command":["ls"],"requeue":"yes"}|requeue
{"command":["ls"],"command":["ls"]}|malformed JSON
CASES
    [ "$(job_count)" -eq "$before" ]
    api POST /v1/jobs '{"command":["true"]}'
    [ "$(echo "$body" | jq .id)" -eq $((before_id + 1)) ]
}

@test "api-004 too-long strings and oversize bodies are refused" {
    long=$(head -c 300 /dev/zero | tr '\0' x)
    api POST /v1/jobs "{\"command\":[\"ls\"],\"name\":\"$long\"}"
    [ "$status_code" = 413 ] || [ "$status_code" = 400 ]
    echo "$body" | jq -r .error.message | grep -q name
    big=$(head -c 2000000 /dev/zero | tr '\0' a)
    printf '{"command":["%s"]}' "$big" >"$SHOAL_TEST_DIR/big.json"
    code=$(curl -s -o "$SHOAL_TEST_DIR/big.out" -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $SHOAL_TOKEN" \
        --data-binary @"$SHOAL_TEST_DIR/big.json" "$SHOAL_URL/v1/jobs")
    [ "$code" = 413 ]
    [ "$(jq -r .error.code "$SHOAL_TEST_DIR/big.out")" = too_large ]
    [ "$(job_count)" -eq 0 ]
}

@test "api-005 unknown jobs, endpoints and methods" {
    api GET /v1/jobs/12345
    [ "$status_code" = 404 ]
    [ "$(echo "$body" | jq -r .error.code)" = not_found ]
    api GET /v1/jobs/abc
    [ "$status_code" = 400 ]
    api POST /v1/jobs/12345/cancel
    [ "$status_code" = 404 ]
    api GET /v1/nothing
    [ "$status_code" = 404 ]
    api PUT /v1/jobs
    [ "$status_code" = 405 ]
}

@test "api-006 no token or a wrong token is refused" {
    code=$(curl -s -o /dev/null -w '%{http_code}' "$SHOAL_URL/v1/jobs")
    [ "$code" = 401 ]
    API_TOKEN=shoal_notavalidtokennotavalidtokennotavalidtoken1 api GET /v1/jobs
    [ "$status_code" = 401 ]
    API_TOKEN="$(cat "$SHOAL_TEST_DIR/controller/join.token")" \
        api POST /v1/jobs '{"command":["true"]}'
    [ "$status_code" = 403 ]
    echo "$body" | jq -r .error.message | grep -q agent
    [ "$(job_count)" -eq 0 ]
}

@test "api-007 cancel: pending jobs at once, finished jobs refused" {
    api POST /v1/jobs '{"command":["true"],"gpus":1}'
    id=$(echo "$body" | jq .id)
    api POST "/v1/jobs/$id/cancel"
    [ "$status_code" = 200 ]
    [ "$(echo "$body" | jq -r .state)" = cancelled ]
    api POST "/v1/jobs/$id/cancel"
    [ "$status_code" = 409 ]
    echo "$body" | jq -r .error.message | grep -q "already cancelled"
    api DELETE "/v1/jobs/$id"
    [ "$status_code" = 409 ]
}

@test "api-008 list filters by state, user and project" {
    api POST /v1/projects '{"name":"vision","team":"default"}'
    api POST /v1/projects '{"name":"nlp","team":"default"}'
    api POST /v1/jobs '{"command":["true"],"project":"vision"}'
    api POST /v1/jobs '{"command":["true"],"project":"nlp"}'
    id=$(echo "$body" | jq .id)
    api POST "/v1/jobs/$id/cancel"
    api GET '/v1/jobs?project=vision'
    [ "$(echo "$body" | jq '.jobs | length')" -eq 1 ]
    api GET '/v1/jobs?state=cancelled'
    [ "$(echo "$body" | jq -r '.jobs[0].project')" = nlp ]
    api GET '/v1/jobs?state=pending,cancelled'
    [ "$(echo "$body" | jq '.jobs | length')" -eq 2 ]
    api GET "/v1/jobs?user=$(id -un)x"
    [ "$(echo "$body" | jq '.jobs | length')" -eq 0 ]
    api GET '/v1/jobs?state=sleeping'
    [ "$status_code" = 400 ]
    echo "$body" | jq -r .error.message | grep -q sleeping
    api GET '/v1/jobs?limit=0'
    [ "$status_code" = 400 ]
}

@test "api-009 /metrics exposes counts in the Prometheus text format" {
    api POST /v1/jobs '{"command":["true"]}'
    run curl -sf "$SHOAL_URL/metrics"
    [ "$status" -eq 0 ]
    echo "$output" | grep -qx 'shoal_jobs{state="pending"} 1'
    echo "$output" | grep -q '^# TYPE shoal_commits_total counter$'
    # Every sample line is "name{labels} value" or "name value" (a
    # histogram's "le" label holds a number or +Inf; promtool checks the
    # rest in 099-metrics).
    if echo "$output" | grep -v '^#' |
        grep -vE '^[a-z_]+(\{[a-z_]+="[a-z_]+"\}|\{le="([0-9.e+-]+|\+Inf)"\})? [0-9.e+-]+$'; then false; fi
}

@test "api-010 the dashboard page is served and its script parses" {
    run curl -sf "$SHOAL_URL/"
    [ "$status" -eq 0 ]
    [[ "$output" == *"<title>Shoal</title>"* ]]
    [[ "$output" == *'id="queue"'* ]]
    if command -v node >/dev/null; then
        echo "$output" | sed -n '/<script>/,/<\/script>/p' | sed '1d;$d' \
            >"$SHOAL_TEST_DIR/dash.js"
        node --check "$SHOAL_TEST_DIR/dash.js"
    fi
    run curl -s -o /dev/null -w '%{http_code}' "$SHOAL_URL/index.html"
    [ "$output" = 404 ]
}

@test "api-011 a long listing comes whole: pages join up, nothing twice" {
    # 400 tasks of one array, each job ~0.5 KiB: an answer of ~200 KiB.
    api POST /v1/jobs '{"command":["python","train.py","--a-long-argument-to-make-the-listing-longer"],"gpus":1,"array":"0-399","name":"streamed"}'
    [ "$status_code" = 201 ]
    hdr="$SHOAL_TEST_DIR/list.hdr"
    curl -sf -D "$hdr" -H "Authorization: Bearer $SHOAL_TOKEN" \
        "$SHOAL_URL/v1/jobs" >"$SHOAL_TEST_DIR/all.json"
    grep -qi '^content-type: application/json' "$hdr"
    all="$SHOAL_TEST_DIR/all.json"
    [ "$(jq '.jobs | length' "$all")" -eq 400 ]
    [ "$(jq '.more' "$all")" -eq 0 ]
    # In id order, each once, every pending one with its reason.
    [ "$(jq '[.jobs[].id] | . == (sort | unique)' "$all")" = true ]
    [ "$(jq '[.jobs[] | select(.reason == null)] | length' "$all")" -eq 0 ]
    # Pages of 150 after one another give the same jobs, the same text.
    after=0
    : >"$SHOAL_TEST_DIR/pages.json"
    for want_more in 250 100 0; do
        api GET "/v1/jobs?limit=150&after=$after"
        [ "$status_code" = 200 ]
        [ "$(echo "$body" | jq .more)" -eq "$want_more" ]
        echo "$body" | jq -c '.jobs[]' >>"$SHOAL_TEST_DIR/pages.json"
        after=$(echo "$body" | jq '.jobs[-1].id')
    done
    jq -c '.jobs[]' "$all" | diff - "$SHOAL_TEST_DIR/pages.json"
    # `shoal queue --json` prints the same jobs.
    shoal queue --json | jq -c '.[]' | diff - <(jq -c '.jobs[]' "$all")
}
