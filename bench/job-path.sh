#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench/job-path: where a job's CPU goes from `shoal submit` to its exit
# being recorded. A local cluster (4 nodes x 8 simulated GPUs) runs JOBS
# one-GPU `true` jobs, queued held and let go at once, while one agent is
# traced with `strace -c -f`. Prints CPU per job from /proc (the controller,
# the agents themselves, and what the agents started: shims and the jobs),
# the CLI's own cost per `shoal submit`, and the agent's system calls per
# job, most frequent first.
#   bench/job-path.sh [BUILD_DIR] [JOBS]
# STRACE=0 leaves the agent untraced (true CPU figures, no system calls);
# SHIMS=1 traces n1's fork server too (its shims and their jobs: the
# system calls are then the agent's and everything it started);
# AGENT=PATH runs another shoal-agent binary (an older build, for a
# before/after in one sitting).
set -euo pipefail
BUILD=${1:-build}
JOBS=${2:-400}
BIN=$(cd "$BUILD" && pwd)
AGENT=${AGENT:-$BIN/src/agent/shoal-agent}
STRACE=${STRACE:-1}
DIR=$(mktemp -d /tmp/shoal-bench-path.XXXXXX)
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
AGENTS=()
for i in 1 2 3 4; do
    mkdir -p "$DIR/n$i"
    echo "{\"count\": 8, \"model\": \"H100-80GB\", \"uuid_prefix\": \"n$i\"}" >"$DIR/n$i/simgpu.json"
    SIMGPU_CONFIG="$DIR/n$i/simgpu.json" "$AGENT" \
        --controller "$URL" --join-token-file "$DIR/c/join.token" \
        --name "n$i" --state "$DIR/n$i" --nvml-lib "$BIN/src/simgpu/libsimgpu.so" \
        --stop-jobs-on-exit --allow-job-user "$(id -un)" 2>"$DIR/n$i.log" &
    AGENTS+=($!)
    PIDS+=($!)
done
up() { [ "$(curl -sf "$URL/v1/health" | jq .nodes_up)" = 4 ]; }
wait_for 20 up
export SHOAL_URL=$URL SHOAL_TOKEN=$TOKEN XDG_CONFIG_HOME=$DIR/xdg

# CPU (ms) of a process: own, and of its reaped children.
own() { awk '{print ($14 + $15) * 1000 / '"$(getconf CLK_TCK)"'}' "/proc/$1/stat"; }
# An agent's shims are the children of its fork server (shoal-agent
# --fork-server, forkserver.h), when it has one: its CPU and its reaped
# children's count as the agent's children's.
kids() {
    local t c
    t=$(awk '{print ($16 + $17) * 1000 / '"$(getconf CLK_TCK)"'}' "/proc/$1/stat")
    for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
        grep -qa -- --fork-server "/proc/$c/cmdline" 2>/dev/null || continue
        t=$(awk -v t="$t" '{print t + ($14 + $15 + $16 + $17) * 1000 / '"$(getconf CLK_TCK)"'}' "/proc/$c/stat")
    done
    echo "$t"
}
sum() { local s=0 p; for p in "${AGENTS[@]}"; do s=$(awk -v a="$s" -v b="$($1 "$p")" 'BEGIN{print a+b}'); done; echo "$s"; }

# The CLI alone: one `shoal submit`, CPU (task-clock), mean of 50.
if command -v perf >/dev/null; then
    perf stat -r 50 -x, -e task-clock "$BIN/src/cmd/shoal" submit --hold --gpus 1 -- true \
        2>&1 >/dev/null | awk -F, '/task-clock/ {printf "cli_submit_cpu_ms: %.2f\n", $1}'
fi
ids=$(curl -sf -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs?state=pending" | jq -r '.jobs[].id')
# shellcheck disable=SC2086
[ -z "$ids" ] || "$BIN/src/cmd/shoal" cancel $ids >/dev/null
empty() { [ "$(curl -sf "$URL/v1/health" | jq '.pending + .running')" = 0 ]; }
wait_for 60 empty

"$BIN/bench/bench-submit-load" "$URL" "$TOKEN" "$JOBS" 4 \
    '{"command":["true"],"gpus":1,"time_limit":"1m","hold":true}' >/dev/null
ids=$(curl -sf -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs?state=pending" | jq -r '.jobs[].id')
ST=
if [ "$STRACE" = 1 ]; then
    TRACE=(-p "${AGENTS[0]}")
    if [ "${SHIMS:-0}" = 1 ]; then
        for c in $(cat /proc/"${AGENTS[0]}"/task/*/children 2>/dev/null); do
            grep -qa -- --fork-server "/proc/$c/cmdline" 2>/dev/null && TRACE+=(-p "$c")
        done
    fi
    strace -c -f -o "$DIR/strace.txt" "${TRACE[@]}" 2>/dev/null &
    ST=$!
    sleep 0.5
fi
c0=$(own "$CTRL"); a0=$(sum own); k0=$(sum kids); t0=$EPOCHREALTIME
# shellcheck disable=SC2086
"$BIN/src/cmd/shoal" release $ids >/dev/null
wait_for 600 empty
t1=$EPOCHREALTIME; c1=$(own "$CTRL"); a1=$(sum own); k1=$(sum kids)
[ -z "$ST" ] || { kill -INT "$ST"; wait "$ST" 2>/dev/null || true; }
traced=$(curl -sf -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs?state=completed" |
    jq '[.jobs[] | select(.placement[0].node == "n1")] | length')
awk -v strace="$STRACE" -v n="$JOBS" -v t0="$t0" -v t1="$t1" -v c="$(echo "$c1 - $c0" | bc)" \
    -v a="$(echo "$a1 - $a0" | bc)" -v k="$(echo "$k1 - $k0" | bc)" 'BEGIN{
    printf "drain: %d jobs in %.2f s = %.1f jobs/s\n", n, t1 - t0, n / (t1 - t0)
    printf "cpu_ms_per_job controller: %.2f\n", c / n
    printf "cpu_ms_per_job agents (own): %.2f\n", a / n
    printf "cpu_ms_per_job agents children (shim + job): %.2f\n", k / n
    if (strace) printf "(run under strace on n1: its figures are inflated)\n" }'
[ "$STRACE" = 1 ] || exit 0
who="agent n1"
[ "${SHIMS:-0}" != 1 ] || who="agent n1, its fork server, shims and jobs"
echo "$who system calls per job ($traced jobs ran there; strace -c -f):"
awk -v n="$traced" '$1 ~ /^[0-9.]+$/ && NF >= 5 {
    name = $NF; calls = $4; if (n > 0) printf "  %-20s %8.1f\n", name, calls / n }' \
    "$DIR/strace.txt" | sort -k2 -g -r | head -25
