#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench/run-all: every benchmark in bench/, one after the other; `make bench`
# runs it. Each prints its own figures; none passes or fails on time (a
# benchmark that cannot run at all is reported, and the script exits 1).
#   bench/run-all.sh [BUILD_DIR]
#
# First the two that need no cluster:
#   bench-sched  the scheduling engine, 1,250 nodes x 8 GPUs, 100,000 pending
#   bench-sim    the simulator on the Philly trace and a synthetic one
# then the two that start their own throw-away cluster on 127.0.0.1 (random
# ports, a temporary folder; stopped and removed when they end):
#   submit.sh    a controller alone: durable submissions/s, `shoal submit` cost
#   drain.sh     a controller and 4 agents x 8 simulated GPUs: 2,000 jobs
#
# Environment:
#   SHOAL_BENCH_TRACE=FILE  the trace for bench-sim (default: the full Philly
#                           trace in /work/shared/traces; when that is absent
#                           the 20-job sample in tests/data/traces is used and
#                           the trace figures mean little: the synthetic
#                           100,000-job replay still does)
#   SHOAL_BENCH_NO_CLUSTER=1  skip submit.sh and drain.sh
set -uo pipefail
BUILD=${1:-build}
if [ ! -d "$BUILD" ]; then
    echo "bench/run-all: no build folder $BUILD: run make build first" >&2
    exit 1
fi
BUILD=$(cd "$BUILD" && pwd)
cd "$(dirname "$0")/.."
PHILLY=/work/shared/traces/philly/philly_jobs_pollux.csv
SAMPLE=tests/data/traces/philly_sample.csv

need=(bench/bench-sched bench/bench-sim)
[ -z "${SHOAL_BENCH_NO_CLUSTER:-}" ] &&
    need+=(bench/bench-submit-load src/shoald/shoald src/agent/shoal-agent
           src/cmd/shoal src/simgpu/libsimgpu.so)
for f in "${need[@]}"; do
    if [ ! -e "$BUILD/$f" ]; then
        echo "bench/run-all: $BUILD/$f is missing: build first (make build," \
            "or ninja -C $BUILD)" >&2
        exit 1
    fi
done

# Figures depend on the build type: the ones in bench/README.md are from
# buildtype=debugoptimized (the project's default).
buildtype=$(python3 -c 'import json, sys
for o in json.load(open(sys.argv[1])):
    if o["name"] == "buildtype":
        print(o["value"])' "$BUILD/meson-info/intro-buildoptions.json" \
    2>/dev/null || echo unknown)
echo "bench/run-all: build $BUILD (buildtype=$buildtype), $(nproc) CPUs," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"

failed=()
run() {
    local name=$1
    shift
    echo
    echo "=== $name"
    local t0=$SECONDS
    if "$@"; then
        echo "=== $name: done in $((SECONDS - t0)) s"
    else
        echo "=== $name: FAILED (exit $?)" >&2
        failed+=("$name")
    fi
}

run bench-sched "$BUILD/bench/bench-sched"

trace=${SHOAL_BENCH_TRACE:-$PHILLY}
if [ -z "${SHOAL_BENCH_TRACE:-}" ] && [ ! -r "$PHILLY" ]; then
    echo
    echo "note: $PHILLY is not here; bench-sim replays the 20-job sample" \
        "$SAMPLE instead (set SHOAL_BENCH_TRACE to a full trace)"
    trace=$SAMPLE
fi
run bench-sim "$BUILD/bench/bench-sim" "$trace"

if [ -n "${SHOAL_BENCH_NO_CLUSTER:-}" ]; then
    echo
    echo "note: SHOAL_BENCH_NO_CLUSTER is set: submit.sh and drain.sh skipped"
else
    echo
    echo "note: submit.sh and drain.sh each start their own local cluster" \
        "(loopback, random ports, a temporary folder) and remove it after;" \
        "they need curl, jq and python3. SHOAL_BENCH_NO_CLUSTER=1 skips them."
    run submit.sh bench/submit.sh "$BUILD"
    run drain.sh bench/drain.sh "$BUILD"
fi

echo
if [ ${#failed[@]} -gt 0 ]; then
    echo "bench/run-all: failed to run: ${failed[*]}" >&2
    exit 1
fi
echo "bench/run-all: all benchmarks ran (figures above; see bench/README.md" \
    "for the reference figures)"
