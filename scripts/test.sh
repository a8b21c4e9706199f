#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The whole test suite: build with -Wall -Wextra -Werror, run the Criterion
# unit tests and the bats system tests; then the same again in a build with
# AddressSanitizer and UndefinedBehaviorSanitizer.
#   scripts/test.sh                  both passes
#   scripts/test.sh --normal-only    only the plain build
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
