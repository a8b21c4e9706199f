# SPDX-License-Identifier: Apache-2.0
# Helpers for the high-availability tests (096-ha.bats): a PostgreSQL
# database of the test's own, and a second controller on it.
#
# The server: SHOAL_TEST_PG_URL (postgresql://USER@HOST:PORT/DB of a server
# where the test may create databases), else a throw-away one started with
# scripts/pg-test.sh for the file (ha_pg_setup_file / ha_pg_teardown_file).
# Without either, or with a shoald built without PostgreSQL, tests skip and
# say why.

HA_REPO="$BATS_TEST_DIRNAME/../.."

ha_pg_setup_file() {
    [ -n "${SHOAL_TEST_PG_URL:-}" ] && return 0
    command -v psql >/dev/null 2>&1 || return 0
    local out
    out=$("$HA_REPO/scripts/pg-test.sh" start 2>/dev/null) || return 0
    HA_PG_DIR=$(echo "$out" | sed -n 's/^DIR=//p')
    SHOAL_TEST_PG_URL=$(echo "$out" | sed -n 's/^URL=//p')
    export HA_PG_DIR SHOAL_TEST_PG_URL
}

ha_pg_teardown_file() {
    if [ -n "${HA_PG_DIR:-}" ]; then
        "$HA_REPO/scripts/pg-test.sh" destroy "$HA_PG_DIR" || true
    fi
}

# A fresh database for this test in $HA_DB (its URL); skips without a
# server.
ha_db() {
    if [ -z "${SHOAL_TEST_PG_URL:-}" ]; then
        skip "no PostgreSQL test server: set SHOAL_TEST_PG_URL or install postgresql (scripts/install-deps.sh) for scripts/pg-test.sh"
    fi
    command -v psql >/dev/null 2>&1 || skip "psql is not installed"
    local name="shoal_ha_$$_${BATS_TEST_NUMBER}"
    psql -q "$SHOAL_TEST_PG_URL" -c "DROP DATABASE IF EXISTS $name" -c "CREATE DATABASE $name" >/dev/null
    HA_DB="${SHOAL_TEST_PG_URL%/*}/$name"
    export HA_DB
}

# health_of URL FIELD: one field of GET URL/v1/health.
health_of() { curl -sf -m 5 "$1/v1/health" | jq -r ".$2 // empty"; }
role_is() { [ "$(health_of "$1" role)" = "$2" ]; }

# Start another controller NAME (state $SHOAL_TEST_DIR/NAME) on the store
# $HA_DB; sets HA_URL_<NAME> and HA_PID_<NAME>. Extra args go to shoald.
# PORT (env) keeps a port across restarts.
ha_ctl_start() {
    local name=$1
    shift
    local dir="$SHOAL_TEST_DIR/$name"
    mkdir -p "$dir"
    rm -f "$dir/url"
    # The controllers of one cluster share the key that seals secrets.
    if [ "$name" != controller ] && [ -f "$SHOAL_TEST_DIR/controller/secrets.key" ]; then
        cp "$SHOAL_TEST_DIR/controller/secrets.key" "$dir/secrets.key"
    fi
    "$SHOALD" --state "$dir" --port "${PORT:-0}" --heartbeat-timeout 3s \
        --store "$HA_DB" "$@" >>"$SHOAL_TEST_DIR/$name.log" 2>&1 &
    local pid=$!
    record_pid "$pid"
    wait_for 15 test -s "$dir/url" || return 0 # the caller checks
    eval "HA_URL_$name=$(cat "$dir/url")"
    eval "HA_PID_$name=$pid"
}
