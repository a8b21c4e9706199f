#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Dev-only browser test of the dashboard (not part of `make test`): installs
# Debian's chromium and playwright-core (npm) when missing, starts a local
# cluster, submits two jobs and checks the page in headless Chromium.
#   scripts/test-browser.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:-build}" && pwd)
command -v chromium >/dev/null || sudo_apt=1
if [ -n "${sudo_apt:-}" ]; then
    ${SUDO:-$( [ "$(id -u)" -eq 0 ] || echo sudo)} apt-get install -y -q chromium
fi
(cd tests/browser && [ -d node_modules/playwright-core ] || npm install --no-audit --no-fund)
DIR=$(mktemp -d /tmp/shoal-browser.XXXXXX)
export XDG_CONFIG_HOME=$DIR/xdg
"$BUILD/src/cmd/shoal" up --nodes 2 --gpus-per-node 2 --port 0 --state "$DIR/up" \
    --simulate >"$DIR/up.out" 2>"$DIR/up.err" &
UP=$!
trap 'kill -INT $UP; wait $UP 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 300); do grep -q '^http' "$DIR/up.out" && break; sleep 0.1; done
for _ in $(seq 300); do
    [ "$("$BUILD/src/cmd/shoal" nodes --json 2>/dev/null | jq 'map(select(.state=="up"))|length')" = 2 ] && break
    sleep 0.1
done
"$BUILD/src/cmd/shoal" submit --gpus 1 -- sleep 60 >/dev/null
"$BUILD/src/cmd/shoal" submit --nodes 2 --gpus 2 -- true >/dev/null
sleep 1.5
SHOAL_URL=$(head -n1 "$DIR/up.out") \
SHOAL_TOKEN=$(sed -n 's/^token = //p' "$XDG_CONFIG_HOME/shoal/config") \
SHOT=${SHOT:-} node tests/browser/dashboard.js
