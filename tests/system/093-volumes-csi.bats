#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: CSI volumes without Kubernetes. The test starts a CSI node plugin
# (tests/system/csi/plugin.py: python3-grpcio, bind mounts) on a unix
# socket; the agent stages the volume once per node, publishes it per job,
# and unpublishes and unstages after, over gRPC. The plugin logs every
# call, so the order and the arguments are checked.
#   csi-001 stage, publish, unpublish, unstage in order with the right paths
#   csi-002 two jobs: one stage, two publishes; read-only reaches the plugin
#   csi-003 a failing plugin fails the job with its status and message; a
#           transient UNAVAILABLE is retried
#   csi-004 a controller plugin creates the volume and deletes it with it

load lib/cluster

PLUGIN="$BATS_TEST_DIRNAME/csi/plugin.py"

setup() {
    [ "$(id -u)" = 0 ] || skip "needs root: mounts need the agent to be root"
    env -i /usr/bin/python3 -c 'import grpc' 2>/dev/null ||
        skip "python3-grpcio is not installed (scripts/install-deps.sh)"
    shoal_cluster_start 1 2
    SRC="$SHOAL_TEST_DIR/src"
    mkdir -p "$SRC"
    echo "hello from csi" >"$SRC/hello.txt"
    MNT="$SHOAL_TEST_DIR/mnt"
    STAGES="$SHOAL_TEST_DIR/node1/stages"
    SOCK="$SHOAL_TEST_DIR/csi.sock"
    CALLS="$SHOAL_TEST_DIR/csi-calls.log"
    env -i /usr/bin/python3 "$PLUGIN" "$SOCK" "$CALLS" \
        >"$SHOAL_TEST_DIR/csi-plugin.log" 2>&1 &
    record_pid $!
    wait_for 20 test -S "$SOCK"
    if ! "$SHOAL_CLI" volume create probe --csi "$SOCK" --volume-id probe 2>&1 |
        grep -q created; then
        skip "this build has no CSI support"
    fi
    "$SHOAL_CLI" volume delete probe >/dev/null
}

teardown() {
    if [ -n "${SHOAL_TEST_DIR:-}" ]; then
        for f in "$SHOAL_TEST_DIR"/*/runs/*/run.json; do
            [ -f "$f" ] || continue
            sid=$(jq -r .shim_pid "$f")
            [ "$sid" -gt 1 ] 2>/dev/null && pkill -KILL -s "$sid" 2>/dev/null || true
        done
    fi
    shoal_cluster_stop
    if [ -n "${SHOAL_TEST_DIR:-}" ]; then
        for m in $(awk '{print $5}' /proc/self/mountinfo | grep "^$SHOAL_TEST_DIR/" | sort -r); do
            umount -l "$m" 2>/dev/null || true
        done
    fi
}

job_why() { job_field "$1" .reason; shoal logs "$1"; }
calls() { jq -r .method "$CALLS" | grep -v '^NodeGetCapabilities$' | tr '\n' ' '; }
calls_are() { [ "$(calls)" = "$1" ]; }

@test "csi-001 stage, publish, unpublish, unstage in order with the right paths" {
    shoal volume create data --csi "$SOCK" --volume-id vol-1 \
        --attr "source=$SRC" --attr tier=fast --fs-type ext4 --mount-flag noatime
    shoal volume list | grep -E "^data +csi +\(cluster\) +vol-1 \($SOCK\) +rw"
    id=$(submit -D /tmp -v "data:$MNT/d" -- sh -c "cat $MNT/d/hello.txt; echo out >$MNT/d/w.txt")
    wait_job_state "$id" completed 40
    [ "$(shoal logs "$id")" = "hello from csi" ]
    [ "$(cat "$SRC/w.txt")" = out ]
    wait_for 20 calls_are "NodeStageVolume NodePublishVolume NodeUnpublishVolume NodeUnstageVolume "
    stage=$(jq -r 'select(.method=="NodeStageVolume")' "$CALLS")
    pub=$(jq -r 'select(.method=="NodePublishVolume")' "$CALLS")
    staging=$(echo "$stage" | jq -r .staging)
    [[ "$staging" == "$STAGES"/data.*/mnt ]]
    [ "$(echo "$stage" | jq -r .volume_id)" = vol-1 ]
    [ "$(echo "$stage" | jq -c .context)" = "{\"source\":\"$SRC\",\"tier\":\"fast\"}" ]
    [ "$(echo "$stage" | jq -c .capability)" = '{"fs_type":"ext4","mount_flags":["noatime"],"mode":5}' ]
    [ "$(echo "$pub" | jq -r .staging)" = "$staging" ]
    [ "$(echo "$pub" | jq -r .target)" = "${staging%/mnt}/publish/$id.0" ]
    [ "$(echo "$pub" | jq -r .readonly)" = false ]
    [ "$(jq -r 'select(.method=="NodeUnpublishVolume") | .target' "$CALLS")" = "${staging%/mnt}/publish/$id.0" ]
    [ "$(jq -r 'select(.method=="NodeUnstageVolume") | .staging' "$CALLS")" = "$staging" ]
    # Nothing left on the node.
    wait_for 10 sh -c "[ -z \"\$(ls -A $STAGES)\" ]"
    health_ok
}

@test "csi-002 two jobs share one stage; read-only reaches the plugin" {
    shoal volume create data --csi "$SOCK" --volume-id vol-2 --attr "source=$SRC"
    a=$(submit -D /tmp -v "data:$MNT/a" -- sh -c "cat $MNT/a/hello.txt; sleep 1000")
    b=$(submit -D /tmp -v "data:$MNT/b:ro" -- sh -c "cat $MNT/b/hello.txt; if touch $MNT/b/x 2>/dev/null; then echo WROTE; else echo REFUSED; fi; sleep 1000")
    wait_job_state "$a" running 40
    wait_job_state "$b" running 40
    wait_for 30 sh -c "$SHOAL_CLI logs $b | grep -q REFUSED"
    [ "$(jq -r 'select(.method=="NodeStageVolume") | .volume_id' "$CALLS" | wc -l)" = 1 ]
    [ "$(jq -r 'select(.method=="NodePublishVolume") | .readonly' "$CALLS" | sort | tr '\n' ' ')" = "false true " ]
    [ "$(jq -r 'select(.method=="NodePublishVolume") | .capability.mode' "$CALLS" | sort | tr '\n' ' ')" = "3 5 " ]
    shoal cancel "$a"
    wait_job_state "$a" cancelled
    wait_for 20 job_released "$a"
    [ -z "$(jq -r 'select(.method=="NodeUnstageVolume")' "$CALLS")" ]
    shoal cancel "$b"
    wait_job_state "$b" cancelled
    wait_for 20 sh -c "jq -r .method $CALLS | grep -qx NodeUnstageVolume"
    [ "$(jq -r 'select(.method=="NodeUnpublishVolume")' "$CALLS" | jq -s length)" = 2 ]
}

@test "csi-003 a failing plugin fails the job with its status; UNAVAILABLE is retried" {
    shoal volume create broken --csi "$SOCK" --volume-id vol-3 --attr "source=$SRC" --attr fail=NodeStageVolume
    id=$(submit -D /tmp -v "broken:$MNT/b" -- echo RAN)
    wait_job_state "$id" failed 40
    job_why "$id" | grep -q "volume broken: CSI NodeStageVolume: INTERNAL: injected failure of NodeStageVolume"
    [ -z "$(shoal logs "$id" | grep RAN)" ]
    # Not retried: one call.
    [ "$(jq -r 'select(.method=="NodeStageVolume") | .volume_id' "$CALLS" | wc -l)" = 1 ]
    shoal volume create flaky --csi "$SOCK" --volume-id vol-4 --attr "source=$SRC" --attr unavailable_once=NodePublishVolume
    id=$(submit -D /tmp -v "flaky:$MNT/f" -- cat "$MNT/f/hello.txt")
    wait_job_state "$id" completed 40
    [ "$(shoal logs "$id")" = "hello from csi" ]
    [ "$(jq -r 'select(.method=="NodePublishVolume" and .volume_id=="vol-4") | .target' "$CALLS" | wc -l)" = 2 ]
    # A plugin that is not there.
    shoal volume create absent --csi "$SHOAL_TEST_DIR/nothing.sock" --volume-id v
    id=$(submit -D /tmp -v "absent:$MNT/x" -- true)
    wait_job_state "$id" failed 60
    job_why "$id" | grep -q "volume absent: CSI NodeGetCapabilities: UNAVAILABLE: cannot connect to $SHOAL_TEST_DIR/nothing.sock"
    # Only cluster admins make CSI volumes.
    api POST /v1/users '{"name":"alice"}'
    alice=$(echo "$body" | jq -r .token)
    API_TOKEN=$alice api POST /v1/volumes "{\"name\":\"m\",\"kind\":\"csi\",\"csi\":{\"socket\":\"$SOCK\",\"volume_id\":\"x\"}}"
    [ "$status_code" = 403 ]
    health_ok
}

@test "csi-004 a controller plugin creates the volume and deletes it with it" {
    base="$SHOAL_TEST_DIR/provisioned"
    mkdir -p "$base"
    shoal volume create made --csi "$SOCK" --csi-controller "$SOCK" \
        --capacity 2G --param "base=$base"
    create=$(jq -c 'select(.method=="CreateVolume")' "$CALLS")
    [ "$(echo "$create" | jq -r .name)" = shoal-made ]
    [ "$(echo "$create" | jq -r .capacity)" = $((2 << 30)) ]
    [ "$(echo "$create" | jq -r .capabilities[0].mode)" = 5 ]
    [ -d "$base/shoal-made" ]
    shoal volume show made --json | jq -e '.csi.volume_id == "shoal-made"'
    shoal volume show made --json | jq -e ".csi.attributes.source == \"$base/shoal-made\""
    id=$(submit -D /tmp -v "made:$MNT/m" -- sh -c "echo kept >$MNT/m/f.txt")
    wait_job_state "$id" completed 40
    [ "$(cat "$base/shoal-made/f.txt")" = kept ]
    wait_for 20 sh -c "jq -r .method $CALLS | grep -qx NodeUnstageVolume"
    shoal volume delete made
    [ "$(jq -r 'select(.method=="DeleteVolume") | .volume_id' "$CALLS")" = shoal-made ]
    [ ! -e "$base/shoal-made" ]
    # A controller plugin that is not there: nothing is stored.
    run shoal volume create nope --csi "$SOCK" --csi-controller "$SHOAL_TEST_DIR/none.sock"
    [ "$status" != 0 ]
    [[ "$output" == *"CSI CreateVolume: UNAVAILABLE"* ]]
    run shoal volume show nope
    [ "$status" != 0 ]
    run shoal volume create x --csi "$SOCK" --csi-controller "$SOCK" --volume-id given
    [ "$status" != 0 ]
    [[ "$output" == *"gets its volume_id from the plugin"* ]]
}
