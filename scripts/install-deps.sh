#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian package Shoal needs to build, run and test.
# Run as root (or through sudo). Idempotent: when everything is present it
# only checks and returns in well under a second.
set -eu

# clang and libclang-rt-dev build the fuzz targets (scripts/fuzz.sh): the
# latter holds libFuzzer's runtime, which clang only recommends. s3fs
# mounts S3 volumes; libnfs-dev and libfuse3-dev build shoal-nfs-fuse, the
# userspace NFS client for nodes without a kernel one; nfs-ganesha serves
# NFS to the NFS volume tests. protobuf-c and nghttp2 make the agent's CSI
# client (gRPC over a unix socket); python3-grpcio runs the test CSI plugin.
# libpq-dev builds the PostgreSQL store; postgresql is the server that
# scripts/pg-test.sh starts for the tests against that store. The S3
# volume tests also need a local S3 server,
# s3rver from the npm registry (tests/system/s3/package.json), installed
# below with the machine's node and npm. Jobs in OCI images: skopeo copies
# images into the node's cache, umoci unpacks them, crun runs them;
# busybox-static builds the test image; docker-registry (on loopback) and
# apache2-utils (htpasswd) serve it to the registry tests. prometheus holds promtool, which checks /metrics
# (tests/system/099-metrics.bats); its server is not used. chromium,
# chromium-driver and python3-selenium run the dashboard's browser test
# (tests/system/069-dashboard.bats) through WebDriver: Debian packages of
# one version together, nothing from npm. parallel (GNU parallel) lets bats
# run the system test files side by side (scripts/test.sh, bats --jobs).
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
parallel
jq
bc
curl
openssl
iproute2
sqlite3
python3
s3fs
libnfs-dev
libfuse3-dev
nfs-ganesha
nfs-ganesha-vfs
libprotobuf-c-dev
protobuf-c-compiler
libnghttp2-dev
python3-grpcio
libpq-dev
postgresql
crun
umoci
skopeo
busybox-static
docker-registry
apache2-utils
prometheus
chromium
chromium-driver
python3-selenium
libsystemd-dev
libinih-dev
scdoc
debhelper
dpkg-dev
fakeroot
lintian
"
# Node.js and npm from Debian, unless the machine already has them.
command -v node >/dev/null 2>&1 || PACKAGES="$PACKAGES nodejs"
command -v npm >/dev/null 2>&1 || PACKAGES="$PACKAGES npm"

# The S3 server the tests start; npm's lock file pins what it installs.
install_s3_server() {
    dir="$(dirname "$0")/../tests/system/s3"
    if [ ! -x "$dir/node_modules/.bin/s3rver" ]; then
        echo "install-deps: installing the test S3 server (npm, $dir)"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    fi
}

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    install_s3_server
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
install_s3_server
