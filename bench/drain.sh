#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench/drain: 2,000 jobs that exit at once on a local cluster of 4 nodes x
# 8 simulated GPUs. Prints jobs per second from the first submission to the
# last job finished, and the median (and p90) time from a GPU being freed
# (the controller records the previous job's end) to the next job's process
# running on it (the job itself records when it started).
#   bench/drain.sh [BUILD_DIR] [JOBS]
set -euo pipefail
BUILD=${1:-build}
JOBS=${2:-2000}
BIN=$(cd "$BUILD" && pwd)
DIR=$(mktemp -d /tmp/shoal-bench-drain.XXXXXX)
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
PIDS+=($!)
wait_for 15 test -s "$DIR/c/url"
URL=$(cat "$DIR/c/url")
TOKEN=$(cat "$DIR/c/admin.token")
# The jobs run as whoever runs the bench (root in CI): allowed explicitly,
# as `shoal up` does (agents refuse accounts below uid 1000 otherwise).
for i in 1 2 3 4; do
    mkdir -p "$DIR/n$i"
    echo "{\"count\": 8, \"model\": \"H100-80GB\", \"uuid_prefix\": \"n$i\"}" >"$DIR/n$i/simgpu.json"
    SIMGPU_CONFIG="$DIR/n$i/simgpu.json" "$BIN/src/agent/shoal-agent" \
        --controller "$URL" --join-token-file "$DIR/c/join.token" \
        --name "n$i" --state "$DIR/n$i" --nvml-lib "$BIN/src/simgpu/libsimgpu.so" \
        --stop-jobs-on-exit --allow-job-user "$(id -un)" 2>"$DIR/n$i.log" &
    PIDS+=($!)
done
up() {
    [ "$(curl -sf "$URL/v1/health" | jq .nodes_up)" = 4 ]
}
wait_for 20 up

# Each job writes when its process started, and on which GPU.
BODY="{\"command\":[\"sh\",\"-c\",\"echo \$(date +%s%N) \$CUDA_VISIBLE_DEVICES >>$DIR/starts\"],\"gpus\":1}"
t0=$(date +%s%N)
"$BIN/bench/bench-submit-load" "$URL" "$TOKEN" "$JOBS" 8 "$BODY" >/dev/null
done_all() {
    h=$(curl -sf "$URL/v1/health")
    [ "$(echo "$h" | jq '.pending + .running')" = 0 ]
}
wait_for 600 done_all
t1=$(date +%s%N)
curl -sf -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs?state=completed" |
    jq -r '.jobs[] | "\(.end_ms) \(.placement[0].gpus[0])"' >"$DIR/ends"
completed=$(wc -l <"$DIR/ends")

python3 - "$DIR/starts" "$DIR/ends" "$JOBS" "$t0" "$t1" "$completed" <<'PY'
import sys
starts_f, ends_f, jobs, t0, t1, completed = sys.argv[1:]
t0, t1 = int(t0) / 1e6, int(t1) / 1e6
starts = {}
for line in open(starts_f):
    ns, gpu = line.split()
    starts.setdefault(gpu, []).append(int(ns) / 1e6)
ends = {}
for line in open(ends_f):
    ms, gpu = line.split()
    ends.setdefault(gpu, []).append(int(ms))
# For each GPU: the next process start after each job end.
gaps = []
for gpu, es in ends.items():
    ss = sorted(starts.get(gpu, []))
    for e in sorted(es):
        nxt = [s for s in ss if s >= e]
        if nxt:
            gaps.append(nxt[0] - e)
gaps.sort()
dt = (t1 - t0) / 1000
print(f"drain_jobs: {completed} of {jobs} completed in {dt:.2f} s")
print(f"drain_jobs_per_s: {int(completed) / dt:.0f}")
if gaps:
    print(f"gpu_freed_to_next_process_ms_median: {gaps[len(gaps)//2]:.1f}")
    print(f"gpu_freed_to_next_process_ms_p90: {gaps[int(len(gaps)*0.9)]:.1f}")
PY
