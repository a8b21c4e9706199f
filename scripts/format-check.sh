#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks that every C file is formatted by .clang-format (clang-format from
# Debian). Prints the files that are not; `clang-format -i FILE` fixes one.
set -eu
cd "$(dirname "$0")/.."
bad=0
for f in $(git ls-files 'src/*.c' 'src/*.h' 'bench/*.c'); do
    if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
        echo "not formatted: $f" >&2
        bad=1
    fi
done
if [ "$bad" = 1 ]; then
    echo "format-check: run clang-format -i on the files above" >&2
    exit 1
fi
echo "format-check: all C files formatted"
# The module graph of the controller: HTTP a leaf writing no state, no
# include loop, no call circle.
python3 scripts/check-imports.py
# ...and that check catches what it must (each offence planted in a copy).
python3 scripts/test-check-imports.py
