#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: a controller on PostgreSQL through an outage of the database. The
# server is stopped at once (pg_ctl -m immediate, as a crash) for about 20 s
# while clients submit: submissions are answered 503 (never 500, never left
# hanging), every acknowledged job is still there afterwards under its id,
# and the controller serves again by itself once the database is back.
# This file starts a PostgreSQL server of its own (scripts/pg-test.sh),
# since it stops it; skipped, saying why, when PostgreSQL is not installed
# or shoald was built without it.

load lib/cluster

PG_TEST="$BATS_TEST_DIRNAME/../../scripts/pg-test.sh"

setup_file() {
    command -v psql >/dev/null 2>&1 || return 0
    local out
    out=$("$PG_TEST" start 2>/dev/null) || return 0
    OUTAGE_PG_DIR=$(echo "$out" | sed -n 's/^DIR=//p')
    OUTAGE_PG_URL=$(echo "$out" | sed -n 's/^URL=//p')
    export OUTAGE_PG_DIR OUTAGE_PG_URL
}

teardown_file() {
    [ -n "${OUTAGE_PG_DIR:-}" ] && "$PG_TEST" destroy "$OUTAGE_PG_DIR"
    return 0
}

teardown() {
    shoal_cluster_stop
    # Whatever happened, the server is up again for the next test.
    [ -n "${OUTAGE_PG_DIR:-}" ] && "$PG_TEST" start "$OUTAGE_PG_DIR" >/dev/null
    return 0
}

# A database of the test's own on this file's server, in $DB_URL.
outage_db() {
    [ -n "${OUTAGE_PG_URL:-}" ] ||
        skip "no PostgreSQL server could be started (scripts/install-deps.sh installs postgresql)"
    if "$SHOALD" --state "$BATS_TEST_TMPDIR/probe" --port 0 \
        --store postgresql://x@127.0.0.1:1/x 2>&1 | grep -q "not built"; then
        skip "shoald was built without PostgreSQL"
    fi
    local name="shoal_outage_$$_${BATS_TEST_NUMBER}"
    psql -q "$OUTAGE_PG_URL" -c "CREATE DATABASE $name" >/dev/null
    DB_URL="${OUTAGE_PG_URL%/*}/$name"
}

# Submit until killed. Every answer's status goes to OUT.codes, the id of
# every 201 to OUT.acked. curl gives up after 15 s: a hung request shows
# as 000.
submit_loop() {
    local out=$1 r code
    while :; do
        r=$(curl -s -m 15 -w '\n%{http_code}' -X POST \
            -H "Authorization: Bearer $SHOAL_TOKEN" \
            --data '{"command":["true"],"gpus":1}' "$SHOAL_URL/v1/jobs")
        code=${r##*$'\n'}
        echo "$code" >>"$out.codes"
        if [ "$code" = 201 ]; then
            echo "${r%$'\n'*}" | jq -r .id >>"$out.acked"
        else
            sleep 0.1
        fi
    done
}

acked_count() { cat "$SHOAL_TEST_DIR"/c*.acked 2>/dev/null | wc -l; }
acked_at_least() { [ "$(acked_count)" -ge "$1" ]; }
codes_seen() { cat "$SHOAL_TEST_DIR"/c*.codes 2>/dev/null | grep -c "^$1\$"; }

# One submission now: its status code.
submit_once() {
    curl -s -m 15 -o /dev/null -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $SHOAL_TOKEN" \
        --data '{"command":["true"]}' "$SHOAL_URL/v1/jobs"
}
submit_answers() { [ "$(submit_once)" = "$1" ]; }

@test "pgo-001 the database stops for 20 s under load: 503 meanwhile, nothing acknowledged lost, recovery by itself" {
    outage_db
    shoald_start --store "$DB_URL"
    for i in 1 2 3 4; do
        submit_loop "$SHOAL_TEST_DIR/c$i" &
        record_pid $!
    done
    wait_for 60 acked_at_least 40

    "$PG_TEST" kill "$OUTAGE_PG_DIR"
    before=$(acked_count)
    # While the database is away, for about 20 s: every submission is
    # refused as unavailable, promptly.
    wait_for 20 submit_answers 503
    end=$((SECONDS + 20))
    while [ $SECONDS -lt $end ]; do
        code=$(submit_once)
        echo "during the outage: $code"
        [ "$code" = 503 ]
        sleep 1
    done

    "$PG_TEST" start "$OUTAGE_PG_DIR" >/dev/null
    # Back by itself: submissions are accepted again.
    wait_for 60 submit_answers 201
    after=$(acked_count)
    wait_for 30 acked_at_least $((after + 20))

    for pid in $(tail -n 4 "$SHOAL_TEST_DIR/pids"); do kill "$pid" 2>/dev/null || true; done
    for pid in $(tail -n 4 "$SHOAL_TEST_DIR/pids"); do
        wait_for 20 sh -c "! kill -0 $pid"
    done
    # Never a 500, never a request left hanging (000).
    echo "answers: $(cat "$SHOAL_TEST_DIR"/c*.codes | sort | uniq -c | tr '\n' ' ')"
    [ "$(codes_seen 500)" -eq 0 ]
    [ "$(codes_seen 000)" -eq 0 ]
    [ "$(codes_seen 503)" -gt 0 ]

    # Every acknowledged job is there under its id, also after a restart
    # that reads everything back from the database.
    cat "$SHOAL_TEST_DIR"/c*.acked | sort -n >"$SHOAL_TEST_DIR/acked"
    [ "$(sort -u "$SHOAL_TEST_DIR/acked" | wc -l)" -eq "$(wc -l <"$SHOAL_TEST_DIR/acked")" ]
    shoald_kill9
    shoald_start --store "$DB_URL"
    api GET '/v1/jobs?state=pending'
    [ "$status_code" = 200 ]
    echo "$body" | jq '.jobs[].id' | sort -n >"$SHOAL_TEST_DIR/present"
    missing=$(comm -23 "$SHOAL_TEST_DIR/acked" "$SHOAL_TEST_DIR/present")
    echo "acknowledged: $(wc -l <"$SHOAL_TEST_DIR/acked") (before the outage: $before), missing: ${missing:-none}"
    [ -z "$missing" ]
}

@test "pgo-002 a controller started while the database is down says so and exits" {
    outage_db
    "$PG_TEST" kill "$OUTAGE_PG_DIR"
    shoal_tmp_init
    run timeout 60 "$SHOALD" --state "$SHOAL_TEST_DIR/controller" --port 0 \
        --store "$DB_URL"
    [ "$status" -ne 0 ]
    [ "$status" -ne 124 ]
    echo "$output" | grep -q "cannot connect to the database"
    # The password-free URL is not the point; no URL is printed at all.
    ! echo "$output" | grep -q "$DB_URL"
}
