#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench/queue: `shoal queue` latency with a long queue. A local cluster of
# 4 nodes x 8 simulated GPUs is filled with 32 running one-hour jobs, then
# PENDING more one-GPU jobs (one-hour limit, so every one gets a reason and
# an estimate) go in through the API. Prints the median wall time of the
# whole CLI process (start, request, answer, printing to /dev/null) for:
#   the default view, `--json` of every job, the default view of all jobs
#   (`--limit 0`: no page), and one `shoal show`.
#   bench/queue.sh [BUILD_DIR] [PENDING] [REPS]
# The last line is machine-readable: shoal_queue_ms=.. shoal_queue_json_ms=..
set -euo pipefail
BUILD=${1:-build}
PENDING=${2:-10000}
REPS=${3:-10}
BIN=$(cd "$BUILD" && pwd)
DIR=$(mktemp -d /tmp/shoal-bench-queue.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT

wait_for() {
    local t=$1; shift
    local end=$((SECONDS + t))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $end ] || { echo "timed out: $*" >&2; exit 1; }
        sleep 0.05
    done
}

"$BIN/src/shoald/shoald" --state "$DIR/c" --port 0 2>"$DIR/shoald.log" &
CTRL=$!
PIDS+=($CTRL)
wait_for 15 test -s "$DIR/c/url"
URL=$(cat "$DIR/c/url")
TOKEN=$(cat "$DIR/c/admin.token")
for i in 1 2 3 4; do
    mkdir -p "$DIR/n$i"
    echo "{\"count\": 8, \"model\": \"H100-80GB\", \"uuid_prefix\": \"n$i\"}" >"$DIR/n$i/simgpu.json"
    SIMGPU_CONFIG="$DIR/n$i/simgpu.json" "$BIN/src/agent/shoal-agent" \
        --controller "$URL" --join-token-file "$DIR/c/join.token" \
        --name "n$i" --state "$DIR/n$i" --nvml-lib "$BIN/src/simgpu/libsimgpu.so" \
        --stop-jobs-on-exit --allow-job-user "$(id -un)" 2>"$DIR/n$i.log" &
    PIDS+=($!)
done
up() { [ "$(curl -sf "$URL/v1/health" | jq .nodes_up)" = 4 ]; }
wait_for 20 up

"$BIN/bench/bench-submit-load" "$URL" "$TOKEN" 32 4 \
    '{"command":["sleep","3600"],"gpus":1,"time_limit":"1h","name":"busy"}' >/dev/null
running() { [ "$(curl -sf "$URL/v1/health" | jq .running)" = 32 ]; }
wait_for 60 running
"$BIN/bench/bench-submit-load" "$URL" "$TOKEN" "$PENDING" 8 \
    '{"command":["python","train.py"],"gpus":1,"time_limit":"1h","name":"bqueue"}' >/dev/null
echo "# $(curl -sf "$URL/v1/health" | jq -c '{pending, running}')"

export SHOAL_URL=$URL SHOAL_TOKEN=$TOKEN XDG_CONFIG_HOME=$DIR/xdg
SHOAL="$BIN/src/cmd/shoal"
ONE=$(curl -sf -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs?state=pending&limit=1" | jq '.jobs[0].id')
# Is there a way to see every job in one table (pagination)?
ALL=(queue --limit 0)
"$SHOAL" "${ALL[@]}" >/dev/null 2>&1 || ALL=(queue)

median() { sort -g | awk '{a[NR]=$1} END{ print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2 }'; }
timeit() { # REPS x the command -> median ms
    local i a b
    for ((i = 0; i < REPS; i++)); do
        a=$EPOCHREALTIME
        "$@" >/dev/null
        b=$EPOCHREALTIME
        awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2f\n", (b-a)*1000}'
    done | median
}
# CPU, less at the mercy of a busy machine than wall time: the controller's
# (from /proc) and the CLI's own (user + system), ms per call, REPS calls.
HZ=$(getconf CLK_TCK)
ctrl_ms() { awk -v hz="$HZ" '{print ($14 + $15) * 1000 / hz}' "/proc/$CTRL/stat"; }
cputime() {
    local a b i cli=0
    a=$(ctrl_ms)
    for ((i = 0; i < REPS; i++)); do
        cli=$(/usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1 |
            awk -v s="$cli" '{print s + ($1 + $2) * 1000}')
    done
    b=$(ctrl_ms)
    awk -v a="$a" -v b="$b" -v c="$cli" -v n="$REPS" \
        'BEGIN{printf "controller %.1f ms, CLI %.1f ms", (b - a) / n, c / n}'
}
echo "cpu per call, shoal queue: $(cputime "$SHOAL" queue)"
echo "cpu per call, shoal queue --json: $(cputime "$SHOAL" queue --json)"
q=$(timeit "$SHOAL" queue)
qj=$(timeit "$SHOAL" queue --json)
qa=$(timeit "$SHOAL" "${ALL[@]}")
one=$(timeit "$SHOAL" show "$ONE")
lines=$("$SHOAL" queue | wc -l)
echo "shoal queue (default view, $lines lines): ${q} ms"
echo "shoal queue --json (all jobs, $("$SHOAL" queue --json | jq length) in the array): ${qj} ms"
echo "shoal ${ALL[*]} (every job in the table): ${qa} ms"
echo "shoal show ONE: ${one} ms"
echo "shoal_queue_ms=$q shoal_queue_json_ms=$qj shoal_queue_all_ms=$qa shoal_show_ms=$one pending=$PENDING"
