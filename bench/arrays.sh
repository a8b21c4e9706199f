#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench/arrays: a 10,000-task array against 10,000 single jobs on a local
# cluster of 4 nodes x 8 simulated GPUs (a fresh controller and agents for
# each side, so neither inherits the other's finished jobs). Each job or
# task takes 1 GPU and exits at once. For each side it prints the time to
# submit (one POST for the array; 10,000 POSTs over 8 connections for the
# singles), the time from the first submission to the last one finished,
# tasks (jobs) per second, and the controller's CPU seconds in all.
#   bench/arrays.sh [BUILD_DIR] [TASKS]
set -euo pipefail
BUILD=${1:-build}
TASKS=${2:-10000}
BIN=$(cd "$BUILD" && pwd)
DIR=$(mktemp -d /tmp/shoal-bench-arrays.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT

wait_for() {
    local t=$1
    shift
    local end=$((SECONDS + t))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $end ] || {
            echo "timed out: $*" >&2
            exit 1
        }
        sleep 0.2
    done
}

# start_cluster NAME: a controller and 4 agents under $DIR/NAME; sets URL,
# TOKEN and CTL (the controller's pid).
start_cluster() {
    local d="$DIR/$1"
    mkdir -p "$d"
    "$BIN/src/shoald/shoald" --state "$d/c" --port 0 2>"$d/shoald.log" &
    CTL=$!
    PIDS+=("$CTL")
    wait_for 15 test -s "$d/c/url"
    URL=$(cat "$d/c/url")
    TOKEN=$(cat "$d/c/admin.token")
    # The jobs run as whoever runs the bench: allowed explicitly, as
    # `shoal up` does (agents refuse accounts below uid 1000 otherwise).
    for i in 1 2 3 4; do
        mkdir -p "$d/n$i"
        echo "{\"count\": 8, \"model\": \"H100-80GB\", \"uuid_prefix\": \"$1n$i\"}" >"$d/n$i/simgpu.json"
        SIMGPU_CONFIG="$d/n$i/simgpu.json" "$BIN/src/agent/shoal-agent" \
            --controller "$URL" --join-token-file "$d/c/join.token" \
            --name "n$i" --state "$d/n$i" \
            --nvml-lib "$BIN/src/simgpu/libsimgpu.so" \
            --stop-jobs-on-exit --allow-job-user "$(id -un)" 2>"$d/n$i.log" &
        PIDS+=($!)
    done
    wait_for 20 nodes_up
}

stop_cluster() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    PIDS=()
}

nodes_up() { [ "$(curl -sf "$URL/v1/health" | jq .nodes_up)" = 4 ]; }
drained() {
    local h
    h=$(curl -sf "$URL/v1/health")
    [ "$(echo "$h" | jq '.pending + .running')" = 0 ]
}
now_ns() { date +%s%N; }
# The controller's user + system CPU so far, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
completed() {
    curl -sf -H "Authorization: Bearer $TOKEN" \
        "$URL/v1/jobs?state=completed&limit=10000" | jq '.jobs | length'
}

HZ=$(getconf CLK_TCK)
CMD='"command":["true"],"gpus":1'

# report SIDE T0 T_SUBMITTED T_DRAINED CPU0 CPU1 COMPLETED
report() {
    python3 - "$@" "$TASKS" "$HZ" <<'PY'
import sys
side, t0, ts, t1, c0, c1, done, n, hz = sys.argv[1:]
t0, ts, t1 = int(t0) / 1e9, int(ts) / 1e9, int(t1) / 1e9
cpu = (int(c1) - int(c0)) / int(hz)
print(f"{side}_submit_s: {ts - t0:.2f}")
print(f"{side}_drain_s: {t1 - t0:.2f} ({done} of {n} completed)")
print(f"{side}_per_s: {int(done) / (t1 - t0):.0f}")
print(f"{side}_controller_cpu_s: {cpu:.2f}")
PY
}

# One array of TASKS tasks: a single submission.
start_cluster array
c0=$(cpu_ticks "$CTL")
t0=$(now_ns)
curl -sf -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d "{$CMD,\"array\":\"0-$((TASKS - 1))\"}" "$URL/v1/jobs" >/dev/null
ts=$(now_ns)
wait_for 1800 drained
t1=$(now_ns)
c1=$(cpu_ticks "$CTL")
report array "$t0" "$ts" "$t1" "$c0" "$c1" "$(completed)"
stop_cluster

# The same number of single jobs, 8 connections at once.
start_cluster single
c0=$(cpu_ticks "$CTL")
t0=$(now_ns)
"$BIN/bench/bench-submit-load" "$URL" "$TOKEN" "$TASKS" 8 "{$CMD}" >/dev/null
ts=$(now_ns)
wait_for 1800 drained
t1=$(now_ns)
c1=$(cpu_ticks "$CTL")
report single "$t0" "$ts" "$t1" "$c0" "$c1" "$(completed)"
stop_cluster
echo "load_average: $(cut -d' ' -f1-3 /proc/loadavg)"
