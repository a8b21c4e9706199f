#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs every libFuzzer target of src/fuzz for N seconds (default 60), each
# on a copy of its seed corpus (tests/fuzz/corpus/<target>/, left
# untouched), and prints how many inputs each one ran. Exits non-zero when
# any target crashes, leaks, hangs or breaks a property; the input that did
# it is kept under $FUZZ_BUILD/artifacts/ and its path is printed.
#   ./scripts/fuzz.sh [N]        make fuzz runs it with N = 60
# Builds in $FUZZ_BUILD (default build-fuzz), configured on first use with
# clang, ASan and UBSan.
set -eu
cd "$(dirname "$0")/.."

secs=${1:-60}
case "$secs" in
'' | *[!0-9]*)
    echo "usage: $0 [SECONDS]" >&2
    exit 2
    ;;
esac
build=${FUZZ_BUILD:-build-fuzz}
targets="job_spec user_body project_body volume_body trace_csv cluster_spec parse_size
parse_duration script_directives config partition_body"

if [ ! -f "$build/build.ninja" ]; then
    if ! command -v clang >/dev/null 2>&1; then
        echo "fuzz: clang not found: run scripts/install-deps.sh" >&2
        exit 1
    fi
    CC=clang meson setup "$build" -Dfuzz=true \
        -Db_sanitize=address,undefined -Db_lundef=false -Dtests=disabled
fi
ninja -C "$build"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shoal-fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
artifacts="$build/artifacts"
mkdir -p "$artifacts"

# One target: fuzz a copy of its corpus; the exit status goes to $tmp/T.rc.
run_one() {
    t=$1
    mkdir -p "$tmp/$t"
    cp tests/fuzz/corpus/"$t"/* "$tmp/$t/"
    rc=0
    UBSAN_OPTIONS=print_stacktrace=1 "$build/src/fuzz/fuzz_$t" \
        -max_total_time="$secs" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$artifacts/$t-" "$tmp/$t" >"$tmp/$t.log" 2>&1 ||
        rc=$?
    echo "$rc" >"$tmp/$t.rc"
}

# As many at once as there are CPUs (FUZZ_JOBS overrides), so each target
# has a CPU of its own for its N seconds.
jobs=${FUZZ_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
echo "fuzz: running each target for $secs s, $jobs at a time"
pids=""
running=0
for t in $targets; do
    run_one "$t" &
    pids="$pids $!"
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        for p in $pids; do
            wait "$p" || true
        done
        pids=""
        running=0
    fi
done
for p in $pids; do
    wait "$p" || true
done

failed=0
for t in $targets; do
    rc=$(cat "$tmp/$t.rc" 2>/dev/null || echo 1)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/$t.log" |
        tail -n 1)
    if [ "$rc" = 0 ]; then
        printf 'fuzz: %-18s %12s executions, ok\n' "$t" "${execs:-?}"
        continue
    fi
    failed=1
    printf 'fuzz: %-18s %12s executions, FAILED (exit %s)\n' "$t" \
        "${execs:-?}" "$rc"
    tail -n 60 "$tmp/$t.log" | sed "s/^/  $t| /"
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$tmp/$t.log" |
        tail -n 1)
    if [ -n "$crash" ]; then
        echo "fuzz: $t: the input is in $crash; replay it with"
        echo "  $build/src/fuzz/fuzz_$t $crash"
    fi
done
if [ "$failed" = 1 ]; then
    echo "fuzz: FAILED" >&2
    exit 1
fi
echo "fuzz: all targets ok"
