#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench/containers: start latency of a job in an OCI image, cold cache
# (resolve, copy with skopeo, unpack with umoci, then crun) against warm
# cache (resolve, then crun over the cached bundle), on a local cluster of
# one agent with one simulated GPU. The image is Debian's static busybox
# (about 1 MB) padded with a layer of SIZE MB of random data (default 200),
# so the copy and unpack cost shows. Prints, for each of RUNS starts (default
# 5): submit-to-running-process (the job leaves a file, polled every 20 ms)
# and the agent's own image preparation time (image.json). Needs root, crun, umoci,
# skopeo and busybox-static.
#   bench/containers.sh [BUILD_DIR] [SIZE_MB] [RUNS]
set -euo pipefail
BUILD=${1:-build}
SIZE=${2:-200}
RUNS=${3:-5}
BIN=$(cd "$BUILD" && pwd)
[ "$(id -u)" = 0 ] || { echo "bench/containers: needs root" >&2; exit 1; }
for t in crun umoci skopeo jq; do
    command -v $t >/dev/null || { echo "bench/containers: needs $t" >&2; exit 1; }
done
DIR=$(mktemp -d /tmp/shoal-bench-ctr.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT

wait_for() {
    local t=$1; shift
    local end=$((SECONDS + t))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $end ] || { echo "timed out: $*" >&2; exit 1; }
        sleep 0.02
    done
}

# The image.
(
    cd "$DIR"
    umoci init --layout L
    umoci new --image L:t
    umoci unpack --image L:t B
    mkdir -p B/rootfs/bin B/rootfs/etc B/rootfs/opt
    cp /bin/busybox B/rootfs/bin/busybox
    for c in sh date echo cat; do ln -s busybox "B/rootfs/bin/$c"; done
    echo ID=shoalbench >B/rootfs/etc/os-release
    head -c "${SIZE}M" /dev/urandom >B/rootfs/opt/weights.bin
    umoci repack --image L:t B
    skopeo --insecure-policy copy --quiet oci:L:t "oci-archive:$DIR/image.tar"
    rm -rf L B
) >"$DIR/image.log" 2>&1
IMG="oci-archive:$DIR/image.tar"

"$BIN/src/shoald/shoald" --state "$DIR/c" --port 0 2>"$DIR/shoald.log" &
PIDS+=($!)
wait_for 15 test -s "$DIR/c/url"
URL=$(cat "$DIR/c/url")
TOKEN=$(cat "$DIR/c/admin.token")
export SHOAL_URL=$URL SHOAL_TOKEN=$TOKEN XDG_CONFIG_HOME=$DIR/xdg
mkdir -p "$DIR/n1" "$DIR/out" && chmod 0777 "$DIR/out"
echo '{"count": 1, "model": "H100-80GB", "uuid_prefix": "n1"}' >"$DIR/n1/simgpu.json"
SIMGPU_CONFIG="$DIR/n1/simgpu.json" "$BIN/src/agent/shoal-agent" \
    --controller "$URL" --join-token-file "$DIR/c/join.token" --name n1 \
    --state "$DIR/n1" --nvml-lib "$BIN/src/simgpu/libsimgpu.so" \
    --stop-jobs-on-exit --allow-job-user "$(id -un)" --heartbeat 1s \
    2>"$DIR/n1.log" &
PIDS+=($!)
up() { [ "$(curl -sf "$URL/v1/health" | jq .nodes_up)" = 1 ]; }
wait_for 20 up

state() {
    curl -sf -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$1" | jq -r .state
}
ended() { case "$(state "$1")" in completed | failed | cancelled) return 0 ;; esac; return 1; }

# One start: ms from submission to the process running in the image (it
# leaves a file; polled every 20 ms, busybox's date has no nanoseconds).
start_once() {
    local t0 t1 id
    rm -f "$DIR/out/started"
    t0=$(date +%s%N)
    id=$("$BIN/src/cmd/shoal" submit --gpus 1 --image "$IMG" \
        --container-mounts "$DIR/out:/out" -- sh -c 'echo >/out/started')
    wait_for 600 test -e "$DIR/out/started"
    t1=$(date +%s%N)
    wait_for 60 ended "$id"
    [ "$(state "$id")" = completed ] || { echo "job $id: $(state "$id")" >&2; exit 1; }
    echo "$(((t1 - t0) / 1000000)) $(jq .prepare_ms "$DIR/n1/runs/$id.0/image.json") $(jq -r .unpacked "$DIR/n1/runs/$id.0/image.json")"
}

echo "containers_image_mb: $((($(stat -c %s "$DIR/image.tar") + 500000) / 1000000))"
cold=() warm=()
for r in $(seq 1 "$RUNS"); do
    rm -rf "$DIR/n1/images" # cold: nothing cached
    read -r ms prep unpacked < <(start_once)
    [ "$unpacked" = true ] || { echo "cold start did not unpack" >&2; exit 1; }
    cold+=("$ms")
    echo "cold run $r: start ${ms} ms (image ready in ${prep} ms)"
    read -r ms prep unpacked < <(start_once)
    [ "$unpacked" = false ] || { echo "warm start unpacked" >&2; exit 1; }
    warm+=("$ms")
    echo "warm run $r: start ${ms} ms (image ready in ${prep} ms)"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "containers_start_cold_median_ms: $(median "${cold[@]}")"
echo "containers_start_warm_median_ms: $(median "${warm[@]}")"
