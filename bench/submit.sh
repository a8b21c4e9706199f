#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench/submit: durable submissions per second through the API (50,000 jobs
# over kept-alive connections; every 201 is durable, the controller answers
# after the group commit), then the latency of 500 `shoal submit` processes
# run one after the other (process start, config, request, commit, answer).
#   bench/submit.sh [BUILD_DIR] [JOBS] [CONNECTIONS]
# Environment:
#   SHOAL_BENCH_STORE=postgresql  the controller's store is PostgreSQL: a
#       fresh database on the server SHOAL_TEST_PG_URL names, or on a
#       throw-away local server (scripts/pg-test.sh) when it is not set.
#       Default: sqlite (the controller's own file).
set -euo pipefail
BUILD=${1:-build}
JOBS=${2:-50000}
CONNS=${3:-32}
BIN=$(cd "$BUILD" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(mktemp -d /tmp/shoal-bench-submit.XXXXXX)
PID=
PGDIR=
DB=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    if [ -n "$DB" ]; then
        psql "$PG_ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" \
            >/dev/null 2>&1 || true
    fi
    [ -n "$PGDIR" ] && "$ROOT/scripts/pg-test.sh" destroy "$PGDIR"
    rm -rf "$DIR"
}
trap cleanup EXIT

STORE_ARGS=()
case "${SHOAL_BENCH_STORE:-sqlite}" in
sqlite) ;;
postgresql)
    PG_ADMIN=${SHOAL_TEST_PG_URL:-}
    if [ -z "$PG_ADMIN" ]; then
        out=$("$ROOT/scripts/pg-test.sh" start)
        PGDIR=$(echo "$out" | sed -n 's/^DIR=//p')
        PG_ADMIN=$(echo "$out" | sed -n 's/^URL=//p')
    fi
    DB=shoal_bench_$$
    psql "$PG_ADMIN" -qc "CREATE DATABASE $DB" >/dev/null
    STORE_ARGS=(--store "${PG_ADMIN%/*}/$DB")
    echo "store: postgresql (${PG_ADMIN%/*}/$DB)"
    ;;
*)
    echo "bench/submit: SHOAL_BENCH_STORE must be sqlite or postgresql" >&2
    exit 2
    ;;
esac

# All the load comes from 127.0.0.1: lift the per-address connection limit
# (64 by default) above the connections asked for.
"$BIN/src/shoald/shoald" --state "$DIR/c" --port 0 "${STORE_ARGS[@]}" \
    --max-conns-per-address $((CONNS + 16)) 2>"$DIR/shoald.log" &
PID=$!
# The url file comes when the port is bound, the token once the cluster is
# loaded or made.
for _ in $(seq 400); do
    [ -s "$DIR/c/url" ] && [ -s "$DIR/c/admin.token" ] && break
    sleep 0.05
done
URL=$(cat "$DIR/c/url")
TOKEN=$(cat "$DIR/c/admin.token")

"$BIN/bench/bench-submit-load" "$URL" "$TOKEN" "$JOBS" "$CONNS"

export SHOAL_URL=$URL SHOAL_TOKEN=$TOKEN XDG_CONFIG_HOME=$DIR/xdg
N=500
t0=$(date +%s%N)
for _ in $(seq $N); do
    "$BIN/src/cmd/shoal" submit --gpus 1 -- python train.py >/dev/null
done
t1=$(date +%s%N)
echo "cli_submit_ms_per_process: $(( (t1 - t0) / N / 1000 ))e-3" |
    awk -F': ' '{ printf "%s: %.2f\n", $1, $2 }'
rss=$(ps -o rss= -p "$PID")
jobs=$(curl -sf "$URL/v1/health" | jq .pending)
echo "controller_rss_kib: $rss with $jobs pending jobs ($(( rss * 1024 / jobs )) bytes per job)"
