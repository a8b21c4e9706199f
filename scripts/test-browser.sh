#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The dashboard's browser test alone: tests/system/069-dashboard.bats, which
# starts a cluster and drives the page in headless Chromium through
# WebDriver (Debian's chromium, chromium-driver and python3-selenium, which
# scripts/install-deps.sh installs; `make test` runs it with the other
# system tests). SHOT=FILE.png saves a screenshot of a job's page.
#   scripts/test-browser.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:-build}" && pwd)
SHOT=${SHOT:+$(realpath -m "$SHOT")} SHOAL_BUILD=$BUILD exec bats tests/system/069-dashboard.bats
