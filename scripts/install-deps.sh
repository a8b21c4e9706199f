#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian package Shoal needs to build, run and test.
# Run as root (or through sudo). Idempotent: when everything is present it
# only checks and returns in well under a second.
set -eu

# clang and libclang-rt-dev build the fuzz targets (scripts/fuzz.sh): the
# latter holds libFuzzer's runtime, which clang only recommends.
PACKAGES="
build-essential
clang
libclang-rt-dev
clang-format
meson
ninja-build
pkg-config
libmicrohttpd-dev
libjansson-dev
libsqlite3-dev
libcurl4-openssl-dev
libsodium-dev
uthash-dev
libcriterion-dev
bats
jq
bc
curl
openssl
iproute2
sqlite3
python3
"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-deps: need root to install:$missing" >&2
        exit 1
    fi
fi

echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
