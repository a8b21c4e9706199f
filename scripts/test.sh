#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The whole test suite: build with -Wall -Wextra -Werror, run the Criterion
# unit tests and the bats system tests; the system tests once more with the
# controller's store on PostgreSQL (a throw-away server from
# scripts/pg-test.sh, which also runs the PostgreSQL store's unit tests);
# then the unit and system tests again in a build with AddressSanitizer and
# UndefinedBehaviorSanitizer.
#   scripts/test.sh                  all three passes
#   scripts/test.sh --normal-only    only the plain build (SQLite and PostgreSQL)
#   scripts/test.sh --sanitize-only  only the sanitizer build
set -eu
cd "$(dirname "$0")/.."

normal=1
sanitize=1
case "${1:-}" in
--normal-only) sanitize=0 ;;
--sanitize-only) normal=0 ;;
"") ;;
*) echo "usage: $0 [--normal-only|--sanitize-only]" >&2; exit 2 ;;
esac

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

run_pass() {
    dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@"
    fi
    ninja -C "$dir"
    meson test -C "$dir" --suite unit --print-errorlogs --num-processes 2
    SHOAL_BUILD="$dir" bats --timing tests/system
}

if [ "$normal" = 1 ]; then
    echo "=== tests: normal build ==="
    run_pass build
    echo "=== tests: normal build, the controller's store on PostgreSQL ==="
    SHOAL_TEST_STORE=postgresql SHOAL_BUILD=build bats --timing tests/system
fi
if [ "$sanitize" = 1 ]; then
    echo "=== tests: AddressSanitizer + UndefinedBehaviorSanitizer ==="
    # use_sigaltstack=0: GCC 12's ASan runtime overflows its own
    # alternate signal stack when a thread exits on kernels with large
    # signal frames (AVX-512); the report is about the runtime, not us.
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:use_sigaltstack=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    run_pass build-asan -Db_sanitize=address,undefined -Db_lundef=false
fi
echo "=== all tests passed ==="
