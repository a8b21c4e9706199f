#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite (make test): build with -Wall -Wextra -Werror, run the
# Criterion unit tests and the bats system tests; the system tests that
# touch the store once more with the controller's store on PostgreSQL (a
# throw-away server from scripts/pg-test.sh, which also runs the PostgreSQL
# store's unit tests); then the unit and every system test again in a build
# with AddressSanitizer and UndefinedBehaviorSanitizer. Ends with one
# summary line: "=== all tests passed (...) ===" or "=== tests FAILED: ... ===".
#   scripts/test.sh                  all three passes
#   scripts/test.sh --normal-only    only the plain build (SQLite and PostgreSQL)
#   scripts/test.sh --sanitize-only  only the sanitizer build
#   --full (or SHOAL_TEST_FULL=1)    every system test file on PostgreSQL too,
#                                    not only PG_FILES below (CI: .ci/run)
#   --jobs N (or SHOAL_TEST_JOBS=N)  system test files run N at a time
#                                    (default 4; 1 runs them one by one)
#
# How the system tests run (read this before adding a tests/system file):
# - Files run in parallel with each other (bats --jobs N, through GNU
#   parallel), the tests within a file in order. A new file is parallel
#   by default, and that is safe when it keeps to lib/cluster.bash's ways:
#   ports from the kernel (--port 0 or a free one), state in its own
#   temporary folder (SHOAL_TEST_DIR, BATS_*_TMPDIR), its own PostgreSQL
#   database, network namespaces named after its process (netns_setup),
#   local accounts made through test_user, and only processes it started
#   killed, by PID. The tests mostly wait on daemons, so N above the core
#   count pays: 4 on the 2-core reference machine (the SQLite pass took
#   447 s there against 978 s one file at a time, run back to back under
#   the same outside load; 6 against 4 in a quieter hour: 150 and 196 s
#   against 172 s, and one more race: not worth it).
# - A test that fails only when files run side by side is a race in the
#   test (or the code): SHOAL_TEST_JOBS=1 to compare, then make the test
#   wait on the condition it needs (see 066's att-003, 070's gate files).
# - A file that needs the machine to itself (it measures time or load, or
#   changes something host-wide) goes in SERIAL below, with the reason; those
#   files run one after another once the parallel batch is done.
# - SLOW_FIRST: the longest files start first, so that the batch does not
#   end waiting on one long file started last. Only an ordering hint: a file
#   not named there still runs.
# - On PostgreSQL make test runs PG_FILES, the files that exercise the
#   store's own code (its transactions, queries, id allocation, listing and
#   restarts from it); the other files drive the controller the same way
#   on either store. CI runs all of them on PostgreSQL (--full).
# - Wait on conditions (wait_for, wait_job_state, ...), never sleep for a
#   guessed time: a sleep long enough under parallel load is slow when
#   alone, and one short enough alone flakes under load.
# - bats --timing prints each test's time; to find the slow ones:
#   SHOAL_BUILD=build bats --timing tests/system | sort -t' ' -k2 ... (the
#   "in NNNms" at the end of each line).
set -euo pipefail
cd "$(dirname "$0")/.."

# Files that run alone, after the parallel batch: the name, then why.
SERIAL="
"

# The longest files first (per-file totals of bats --timing with files run
# 4 at a time on the reference machine, so what costs CPU counts too), then
# every other file in name order.
SLOW_FIRST="
051-access.bats
098-containers.bats
050-tenancy.bats
081-security-api.bats
012-openapi.bats
091-volumes-s3.bats
040-agents.bats
080-security-agent.bats
065-placement.bats
097-pg-outage.bats
093-volumes-csi.bats
020-durability.bats
"

# Files run on PostgreSQL by make test, and why each (the rest: --full).
# 096-ha and 097-pg-outage run on a PostgreSQL server of theirs in every
# pass already.
PG_FILES="
010-api.bats            every kind of object made, listed and paged through the store
020-durability.bats     kill -9 while clients submit: the store's commits
045-resilience.bats     a controller restarted from the store re-adopts running jobs
050-tenancy.bats        users, projects and tokens stored, reloaded after a restart
055-accounting.bats     usage records and reports queried from the store
056-quotas.bats         quotas stored and counted against stored jobs
058-history.bats        finished jobs read back and filtered from the store
061-deps-hold.bats      dependencies and holds kept across a restart
063-update.bats         job updates written through to the store
064-arrays.bats         array jobs: many records and ids in one submission
066-attempts.bats       requeues and their attempts kept in the store
074-ops.bats            schema migrations, backups and retention of the store
076-partitions-qos.bats partitions and QOS stored as objects
082-security-ctl.bats   join tokens, node keys and per-user caps in the store
081-security-api.bats   secrets never in clear in the store (store_contents)
091-volumes-s3.bats     volume credentials never in clear in the store
"

normal=1
sanitize=1
full=${SHOAL_TEST_FULL:-0}
jobs=${SHOAL_TEST_JOBS:-4}
usage() {
    echo "usage: $0 [--normal-only|--sanitize-only] [--full] [--jobs N]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
    --normal-only) sanitize=0 ;;
    --sanitize-only) normal=0 ;;
    --full) full=1 ;;
    --jobs)
        [ $# -ge 2 ] || usage
        jobs=$2
        shift
        ;;
    *) usage ;;
    esac
    shift
done
case "$jobs" in
'' | *[!0-9]* | 0) echo "$0: --jobs takes a whole number of at least 1, not '$jobs'" >&2; exit 2 ;;
esac
if [ "$jobs" -gt 1 ] && ! command -v parallel >/dev/null; then
    echo "$0: running system tests $jobs at a time needs GNU parallel (scripts/install-deps.sh installs it); --jobs 1 runs them one by one" >&2
    exit 2
fi

# One PostgreSQL server for the whole run: the store's unit tests and the
# system tests make their own databases on it.
PG_DIR=
stop_pg() {
    if [ -n "$PG_DIR" ]; then
        ./scripts/pg-test.sh destroy "$PG_DIR" || true
    fi
}
trap stop_pg EXIT
if [ "$normal" = 1 ] && [ -z "${SHOAL_TEST_PG_URL:-}" ]; then
    out=$(./scripts/pg-test.sh start)
    PG_DIR=$(echo "$out" | sed -n 's/^DIR=//p')
    SHOAL_TEST_PG_URL=$(echo "$out" | sed -n 's/^URL=//p')
    export SHOAL_TEST_PG_URL
    echo "=== PostgreSQL test server: $SHOAL_TEST_PG_URL ==="
fi

# names LIST: the first word of each line of LIST.
names() { echo "$1" | awk 'NF { print $1 }'; }
listed() { names "$2" | grep -qxF -- "$1"; }

# system_files all|pg: the system test files of a pass, slow ones first.
system_files() {
    local f all
    all=$(cd tests/system && ls -1 -- *.bats)
    {
        for f in $(names "$SLOW_FIRST"); do echo "$all" | grep -xF -- "$f" || true; done
        for f in $all; do listed "$f" "$SLOW_FIRST" || echo "$f"; done
    } | while read -r f; do
        if [ "$1" = pg ] && [ "$full" != 1 ] && ! listed "$f" "$PG_FILES"; then
            continue
        fi
        echo "$f"
    done
}

failed=
fail() { failed="$failed${failed:+, }$1"; }

# run_system NAME all|pg: the pass's system test files, the parallel ones
# N at a time, then the serial ones one by one. Environment as the caller
# set it (SHOAL_BUILD, SHOAL_TEST_STORE).
run_system() {
    local name=$1 par=() ser=() f
    for f in $(system_files "$2"); do
        if listed "$f" "$SERIAL"; then ser+=("tests/system/$f"); else par+=("tests/system/$f"); fi
    done
    local t0=$SECONDS
    if [ ${#par[@]} -gt 0 ]; then
        if [ "$jobs" -gt 1 ]; then
            bats --timing --jobs "$jobs" --no-parallelize-within-files "${par[@]}" || fail "$name"
        else
            bats --timing "${par[@]}" || fail "$name"
        fi
    fi
    if [ ${#ser[@]} -gt 0 ]; then
        echo "--- $name: files that run alone: ${ser[*]##*/}"
        bats --timing "${ser[@]}" || fail "$name (serial files)"
    fi
    echo "--- $name: $((SECONDS - t0)) s for ${#par[@]} files $jobs at a time and ${#ser[@]} alone"
}

# run_build DIR [meson options]: build, then the unit tests.
run_build() {
    local dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@"
    fi
    ninja -C "$dir" || { fail "build $dir"; return 1; }
    meson test -C "$dir" --suite unit --print-errorlogs --num-processes 2 ||
        fail "unit tests ($dir)"
}

start=$SECONDS
if [ "$normal" = 1 ]; then
    echo "=== tests: normal build ==="
    if run_build build; then
        SHOAL_BUILD=build run_system "system tests" all
        pgwhat="the files in scripts/test.sh's PG_FILES"
        [ "$full" = 1 ] && pgwhat="every file"
        echo "=== tests: normal build, the controller's store on PostgreSQL ($pgwhat) ==="
        SHOAL_TEST_STORE=postgresql SHOAL_BUILD=build run_system "system tests on PostgreSQL" pg
    fi
fi
if [ "$sanitize" = 1 ]; then
    echo "=== tests: AddressSanitizer + UndefinedBehaviorSanitizer ==="
    # use_sigaltstack=0: GCC 12's ASan runtime overflows its own
    # alternate signal stack when a thread exits on kernels with large
    # signal frames (AVX-512); the report is about the runtime, not us.
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:use_sigaltstack=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    if run_build build-asan -Db_sanitize=address,undefined -Db_lundef=false; then
        SHOAL_BUILD=build-asan run_system "system tests under ASan+UBSan" all
    fi
fi
took="$(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
if [ -n "$failed" ]; then
    echo "=== tests FAILED: $failed ($took) ==="
    exit 1
fi
echo "=== all tests passed ($took) ==="
