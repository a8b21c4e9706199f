#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench/submit: durable submissions per second through the API (50,000 jobs
# over kept-alive connections; every 201 is durable, the controller answers
# after the group commit), then the latency of 500 `shoal submit` processes
# run one after the other (process start, config, request, commit, answer).
#   bench/submit.sh [BUILD_DIR] [JOBS] [CONNECTIONS]
set -euo pipefail
BUILD=${1:-build}
JOBS=${2:-50000}
CONNS=${3:-32}
BIN=$(cd "$BUILD" && pwd)
DIR=$(mktemp -d /tmp/shoal-bench-submit.XXXXXX)
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$DIR"
}
trap cleanup EXIT

# All the load comes from 127.0.0.1: lift the per-address connection limit
# (64 by default) above the connections asked for.
"$BIN/src/shoald/shoald" --state "$DIR/c" --port 0 \
    --max-conns-per-address $((CONNS + 16)) 2>"$DIR/shoald.log" &
PID=$!
for _ in $(seq 200); do [ -s "$DIR/c/url" ] && break; sleep 0.05; done
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
