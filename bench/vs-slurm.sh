#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench/vs-slurm: Shoal and Slurm side by side, one after the other, on this
# machine, with the same work (issue 16's table):
#   1,000 submits in one sequential CLI loop, and in 4 loops (jobs live);
#   drain 1,000 one-GPU `true` jobs on 32 GPUs (queued first, then let go);
#   one CLI submit on an idle cluster (median of 20);
#   the queue listing with 10,000 pending (Shoal: bench/queue.sh);
#   and the machine's floor (a bash loop of /bin/true, bench-proc-floor).
# Slurm's side is ../shared/peers/slurm's own scripts, run as they are (4
# slurmd x 8 fake GPUs); Shoal's is `shoal up --nodes 4 --gpus-per-node 8`.
# Where Slurm cannot run here (not installed, not root), it says so and
# prints Shoal's figures alone.
#   bench/vs-slurm.sh [BUILD_DIR] [PEER_DIR]
# Env: N (1000), PAR (4), PENDING (10000), SLURM=0 to skip Slurm's side.
set -uo pipefail
BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
PEER=${2:-$HERE/../../shared/peers/slurm}
[ -d "$PEER" ] || PEER=/work/shared/peers/slurm
N=${N:-1000}
PAR=${PAR:-4}
PENDING=${PENDING:-10000}
BIN=$(cd "$BUILD" && pwd)
SHOAL="$BIN/src/cmd/shoal"
declare -A S K # Slurm's and Shoal's figures

ms_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.2f", (b-a)*1000}'; }
med() { sort -g | awk '{a[NR]=$1} END{ if (!NR) {print "nan"; exit} print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2 }'; }
val() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" | tail -1; }

# ---- Slurm ----
slurm_why=""
if [ "${SLURM:-1}" = 0 ]; then
    slurm_why="SLURM=0 given"
elif [ "$(id -u)" != 0 ]; then
    slurm_why="the peer's scripts need root"
elif [ ! -x "$PEER/setup.sh" ]; then
    slurm_why="no peer scripts in $PEER"
elif ! "$PEER/setup.sh" >/tmp/vs-slurm-setup.log 2>&1; then
    slurm_why="$PEER/setup.sh failed (see /tmp/vs-slurm-setup.log)"
elif ! NODES=4 "$PEER/start.sh" default >/tmp/vs-slurm-start.log 2>&1; then
    slurm_why="$PEER/start.sh failed (see /tmp/vs-slurm-start.log)"
    "$PEER/stop.sh" >/dev/null 2>&1
fi
if [ -z "$slurm_why" ]; then
    echo "== Slurm ($(slurmctld -V)), 4 slurmd x 8 fake GPUs"
    # The peer's helpers (SLURM_CONF, median, wait_queue_empty).
    # shellcheck source=/dev/null
    . "$PEER/common.sh"
    S[submit1]=$("$PEER/bench-submit.sh" "$N" 1 | tee >(cat >&2) | val slurm_submit_jobs_per_s)
    S[submit4]=$("$PEER/bench-submit.sh" "$N" "$PAR" | tee >(cat >&2) | val slurm_submit_jobs_per_s)
    S[drain]=$("$PEER/bench-drain.sh" "$N" | tee >(cat >&2) | val slurm_drain_jobs_per_s)
    wait_queue_empty 600
    S[one]=$(for _ in $(seq 20); do
        a=$EPOCHREALTIME
        sbatch --parsable --hold --time=1 -o /dev/null --chdir=/tmp --job-name=bone --wrap true >/dev/null
        ms_since "$a"; echo
    done | med)
    scancel --quiet --user=root --name=bone
    wait_queue_empty 600
    out=$("$PEER/bench-queue.sh" "$PENDING" 1 10 | tee >(cat >&2) | tail -1)
    S[queue]=$(echo "$out" | val slurm_squeue_all_ms)
    S[queue_all]=$(echo "$out" | val slurm_scontrol_all_ms)
    "$PEER/stop.sh" >/dev/null 2>&1
else
    echo "== Slurm: NOT RUN: $slurm_why; Shoal's figures alone follow"
fi

# ---- Shoal ----
echo "== Shoal: shoal up --nodes 4 --gpus-per-node 8 ($BIN)"
DIR=$(mktemp -d /tmp/shoal-vs-slurm.XXXXXX)
UP=
cleanup() {
    [ -n "$UP" ] && kill "$UP" 2>/dev/null && wait "$UP" 2>/dev/null
    rm -rf "$DIR"
}
trap cleanup EXIT
export XDG_CONFIG_HOME=$DIR/xdg
unset SHOAL_URL SHOAL_TOKEN
"$SHOAL" up --nodes 4 --gpus-per-node 8 --port 0 --state "$DIR/state" \
    >"$DIR/up.log" 2>&1 &
UP=$!
for _ in $(seq 600); do
    [ "$("$SHOAL" nodes --json 2>/dev/null | jq length)" = 4 ] && break
    sleep 0.1
done
URL=$(sed -n 's/^url *= *//p' "$XDG_CONFIG_HOME/shoal/config")
TOKEN=$(sed -n 's/^token *= *//p' "$XDG_CONFIG_HOME/shoal/config")
active() { curl -sf "$URL/v1/health" | jq '.pending + .running'; }
wait_empty() { while [ "$(active)" != 0 ]; do sleep 0.1; done; }
submit_loop() { for ((k = 0; k < $1; k++)); do "$SHOAL" submit --gpus 1 --time 1m -- true >/dev/null; done; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN{printf "%.1f", n/(b-a)}'; }

t0=$EPOCHREALTIME; submit_loop "$N"; t1=$EPOCHREALTIME
K[submit1]=$(rate "$N" "$t0" "$t1"); echo "shoal_submit_jobs_per_s=${K[submit1]} (1 loop)"
wait_empty
t0=$EPOCHREALTIME
loops=()
for ((p = 0; p < PAR; p++)); do submit_loop $((N / PAR)) & loops+=($!); done
wait "${loops[@]}" # not `wait`: shoal up is a child too
t1=$EPOCHREALTIME
K[submit4]=$(rate $((N / PAR * PAR)) "$t0" "$t1"); echo "shoal_submit_jobs_per_s=${K[submit4]} ($PAR loops)"
wait_empty
# Drain: queued held (as Slurm's are behind a DOWN partition), then all
# released by one command; wall time until none is pending or running.
"$BIN/bench/bench-submit-load" "$URL" "$TOKEN" "$N" 4 \
    '{"command":["true"],"gpus":1,"time_limit":"1m","hold":true,"name":"bdrain"}' >/dev/null
ids=$(curl -sf -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs?state=pending" | jq -r '.jobs[].id')
t0=$EPOCHREALTIME
# shellcheck disable=SC2086
"$SHOAL" release $ids >/dev/null
wait_empty
t1=$EPOCHREALTIME
K[drain]=$(rate "$N" "$t0" "$t1"); echo "shoal_drain_jobs_per_s=${K[drain]}"
K[one]=$(for _ in $(seq 20); do
    a=$EPOCHREALTIME
    "$SHOAL" submit --hold --gpus 1 -- true >/dev/null
    ms_since "$a"; echo
done | med)
echo "shoal_submit_idle_ms=${K[one]}"
kill "$UP"; wait "$UP" 2>/dev/null; UP=
out=$("$HERE/queue.sh" "$BUILD" "$PENDING" 10 | tee >(cat >&2) | tail -1)
K[queue]=$(echo "$out" | val shoal_queue_ms)
K[queue_json]=$(echo "$out" | val shoal_queue_json_ms)

# ---- the machine's floor ----
# What starting a process costs here bounds both sides: a sequential
# submit loop cannot beat a bash loop of /bin/true, and every job is at
# least one process start (bench/proc_floor.c).
t0=$EPOCHREALTIME
for ((k = 0; k < 300; k++)); do /bin/true; done
t1=$EPOCHREALTIME
K[bash_true]=$(rate 300 "$t0" "$t1")
echo "floor: a bash loop of /bin/true runs ${K[bash_true]} per s"
"$BIN/bench/bench-proc-floor" 300

# ---- the table ----
ratio() { # higher-is-better shoal slurm
    [ -n "${2:-}" ] && [ -n "${1:-}" ] && awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1fx", a/b}' || echo "-"
}
echo
echo "| figure | Slurm | Shoal | ratio (Shoal better by) |"
echo "| --- | --- | --- | --- |"
echo "| $N submits, one sequential CLI loop | ${S[submit1]:--} jobs/s | ${K[submit1]} jobs/s | $(ratio "${K[submit1]}" "${S[submit1]:-}") |"
echo "| $N submits, $PAR CLI loops | ${S[submit4]:--} jobs/s | ${K[submit4]} jobs/s | $(ratio "${K[submit4]}" "${S[submit4]:-}") |"
echo "| drain $N one-GPU \`true\` jobs on 32 GPUs | ${S[drain]:--} jobs/s | ${K[drain]} jobs/s | $(ratio "${K[drain]}" "${S[drain]:-}") |"
echo "| one CLI submit, idle cluster (median of 20) | ${S[one]:--} ms | ${K[one]} ms | $(ratio "${S[one]:-}" "${K[one]}") |"
echo "| queue with $PENDING pending: squeue / shoal queue (default view) | ${S[queue]:--} ms | ${K[queue]} ms | $(ratio "${S[queue]:-}" "${K[queue]}") |"
echo "| every job with $PENDING pending: scontrol show job / shoal queue --json | ${S[queue_all]:--} ms | ${K[queue_json]} ms | $(ratio "${S[queue_all]:-}" "${K[queue_json]}") |"
echo "| (floor) a bash loop of /bin/true, nothing else | | ${K[bash_true]} /s | |"
[ -z "$slurm_why" ] || echo "(Slurm not run: $slurm_why)"
