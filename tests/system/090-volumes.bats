#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: volumes, as a user meets them. A volume is created once (shoal
# volume create), a job names it (-v NAME:/PATH[:ro]) and finds it there,
# in a mount namespace of its own; what cannot be mounted is refused at
# submission or fails the job with the reason, never silently ignored.
#   vol-001 a host volume is mounted where the job asks, for that job only,
#           and the volume survives a controller restart
#   vol-002 read-only: per job (:ro) and per volume (--read-only)
#   vol-003 refused at submission or creation: unknown volume, another
#           project's, a system mount path, kinds not yet mountable, rights
#   vol-004 a volume that cannot be mounted fails the job with the reason;
#           a link planted on the mount path is not followed
#   vol-005 a volume in use (or a project owning one) cannot be deleted

load lib/cluster

setup() {
    [ "$(id -u)" = 0 ] || skip "needs root: mounts need the agent to be root"
    shoal_cluster_start 1 1
    SHARE="$SHOAL_TEST_DIR/share"
    mkdir -p "$SHARE"
    echo "hello from the node" >"$SHARE/hello.txt"
    MNT="$SHOAL_TEST_DIR/mnt"
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
}

job_why() { job_field "$1" .reason; shoal logs "$1"; }

# The PID of job ID's task named NAME on node1.
task_pid() {
    local sid
    sid=$(jq -r .shim_pid "$SHOAL_TEST_DIR/node1/runs/$1.0/run.json")
    pgrep -s "$sid" -x "$2" | head -1
}

err_msg() { echo "$body" | jq -r .error.message; }

@test "vol-001 a host volume is mounted where the job asks, for that job only" {
    run shoal volume create data --host "$SHARE"
    [ "$status" = 0 ]
    [ "$output" = "volume data created" ]
    shoal volume list | grep -E "^data +host +\(cluster\) +$SHARE +rw +0"
    # The job reads the node's file and writes one back.
    id=$(submit -D /tmp -v "data:$MNT/d" -- \
        sh -c "cat $MNT/d/hello.txt; echo from-job >$MNT/d/out.txt")
    wait_job_state "$id" completed
    [ "$(shoal logs "$id")" = "hello from the node" ]
    [ "$(cat "$SHARE/out.txt")" = from-job ]
    # While a job runs, the volume is in its mount namespace only.
    id=$(submit -D /tmp -v "data:$MNT/d" -- sleep 1000)
    wait_job_state "$id" running
    wait_for 10 sh -c "[ -n \"\$(pgrep -s \$(jq -r .shim_pid $SHOAL_TEST_DIR/node1/runs/$id.0/run.json) -x sleep)\" ]"
    pid=$(task_pid "$id" sleep)
    grep -q " $MNT/d " "/proc/$pid/mountinfo"
    run grep -c " $MNT/d " /proc/self/mountinfo
    [ "$output" = 0 ]
    # Nothing beside the mount point appeared on the node.
    [ ! -e "$MNT/d/hello.txt" ]
    shoal show "$id" | grep -E "volumes: +data at $MNT/d \(mounted\)"
    shoal volume show data | grep -q "1 pending or running"
    shoal cancel "$id"
    wait_job_state "$id" cancelled
    # The volume is durable.
    shoald_stop
    shoald_start
    shoal volume show data --json | jq -e ".host.path == \"$SHARE\""
    health_ok
}

@test "vol-002 read-only volumes refuse writes" {
    shoal volume create data --host "$SHARE"
    shoal volume create frozen --host "$SHARE" --read-only
    probe="cat /v/hello.txt && if touch /v/new 2>/dev/null; then echo WROTE; else echo REFUSED; fi"
    a=$(submit -D /tmp -v "data:$MNT/a:ro" -- sh -c "${probe//\/v/$MNT/a}")
    b=$(submit -D /tmp -v "frozen:$MNT/b" -- sh -c "${probe//\/v/$MNT/b}")
    c=$(submit -D /tmp -v "data:$MNT/c" -- sh -c "${probe//\/v/$MNT/c}")
    for j in "$a" "$b" "$c"; do wait_job_state "$j" completed; done
    [ "$(shoal logs "$a" | tail -1)" = REFUSED ]
    [ "$(shoal logs "$b" | tail -1)" = REFUSED ]
    [ "$(shoal logs "$c" | tail -1)" = WROTE ]
    shoal show "$a" | grep -q "read-only"
}

@test "vol-003 what cannot be mounted is refused before anything changes" {
    shoal volume create data --host "$SHARE"
    before=$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs" | jq '.jobs | length')
    run shoal submit -v nosuch:/data -- true
    [ "$status" != 0 ]
    [[ "$output" == *"volume nosuch does not exist"* ]]
    run shoal submit -v data:/etc/shoal -- true
    [ "$status" != 0 ]
    [[ "$output" == *"mount path /etc/shoal is in the system's folder /etc"* ]]
    run shoal submit -v data:relative -- true
    [ "$status" != 0 ]
    run shoal submit -v data:/data:rx -- true
    [ "$status" != 0 ]
    # Another project's volume.
    api POST /v1/teams '{"name":"research"}'
    api POST /v1/projects '{"name":"vision","team":"research"}'
    api POST /v1/volumes "{\"name\":\"vdata\",\"kind\":\"host\",\"project\":\"vision\",\"host\":{\"path\":\"$SHARE\"}}"
    [ "$status_code" = 201 ]
    run shoal submit -v vdata:/data -- true
    [ "$status" != 0 ]
    [[ "$output" == *"volume vdata belongs to project vision; jobs of project default may not mount it"* ]]
    after=$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs" | jq '.jobs | length')
    [ "$before" = "$after" ]
    # Unknown kinds and incomplete definitions are refused, not stored.
    api POST /v1/volumes '{"name":"n","kind":"ftp"}'
    [ "$status_code" = 400 ]
    [[ "$(err_msg)" == *"volume kind 'ftp' is unknown; use host, nfs, s3 or csi"* ]]
    api POST /v1/volumes '{"name":"n","kind":"csi"}'
    [ "$status_code" = 400 ]
    [[ "$(err_msg)" == *"a csi volume needs"* ]]
    run shoal volume create n --csi /run/x.sock
    [ "$status" != 0 ]
    [[ "$output" == *"csi volume_id"* ]]
    api POST /v1/volumes '{"name":"x","kind":"host","host":{"path":"/srv"},"size":3}'
    [ "$status_code" = 400 ]
    [[ "$(err_msg)" == *"unknown field 'size'"* ]]
    api POST /v1/volumes "{\"name\":\"data\",\"kind\":\"host\",\"host\":{\"path\":\"$SHARE\"}}"
    [ "$status_code" = 409 ]
    # Host volumes need a cluster admin; a user sees cluster-wide volumes
    # and their own projects', not others'.
    api POST /v1/users '{"name":"alice"}'
    alice=$(echo "$body" | jq -r .token)
    API_TOKEN=$alice api POST /v1/volumes "{\"name\":\"mine\",\"kind\":\"host\",\"host\":{\"path\":\"/tmp\"}}"
    [ "$status_code" = 403 ]
    [[ "$(err_msg)" == *"only a cluster admin"* ]]
    API_TOKEN=$alice api GET /v1/volumes
    [ "$(echo "$body" | jq -c '[.volumes[].name]')" = '["data"]' ]
    API_TOKEN=$alice api GET /v1/volumes/vdata
    [ "$status_code" = 404 ]
    API_TOKEN=$alice api DELETE /v1/volumes/data
    [ "$status_code" = 403 ]
    [ "$(shoal volume list --json | jq length)" = 2 ]
    health_ok
}

@test "vol-004 a volume that cannot be mounted fails the job with the reason" {
    shoal volume create gone --host "$SHOAL_TEST_DIR/not-there"
    id=$(submit -D /tmp -v "gone:$MNT/g" -- echo RAN)
    wait_job_state "$id" failed
    job_why "$id" | grep -q "volume gone: host path $SHOAL_TEST_DIR/not-there is not usable on this node: No such file or directory"
    [ -z "$(shoal logs "$id" | grep RAN)" ]
    # A link on the mount path (planted by whoever can write there) is not
    # followed: the job fails instead of mounting over the link's target.
    shoal volume create data --host "$SHARE"
    mkdir -p "$SHOAL_TEST_DIR/victim"
    ln -s "$SHOAL_TEST_DIR/victim" "$SHOAL_TEST_DIR/link"
    id=$(submit -D /tmp -v "data:$SHOAL_TEST_DIR/link/x" -- echo RAN)
    wait_job_state "$id" failed
    job_why "$id" | grep -q "a link is never followed"
    [ ! -e "$SHOAL_TEST_DIR/victim/x" ]
    health_ok
}

@test "vol-005 a volume in use, or a project owning one, is not deleted" {
    shoal volume create data --host "$SHARE"
    id=$(submit -D /tmp -v "data:$MNT/d" -- sleep 1000)
    wait_job_state "$id" running
    run shoal volume delete data
    [ "$status" != 0 ]
    [[ "$output" == *"volume data is used by 1 pending or running job(s) (e.g. job $id)"* ]]
    shoal cancel "$id"
    wait_job_state "$id" cancelled
    run shoal volume delete data
    [ "$status" = 0 ]
    [ "$(shoal volume list --json | jq length)" = 0 ]
    run shoal submit -v data:/data -- true
    [ "$status" != 0 ]
    api POST /v1/teams '{"name":"research"}'
    api POST /v1/projects '{"name":"vision","team":"research"}'
    api POST /v1/volumes "{\"name\":\"vdata\",\"kind\":\"host\",\"project\":\"vision\",\"host\":{\"path\":\"$SHARE\"}}"
    api DELETE /v1/projects/vision
    [ "$status_code" = 409 ]
    [[ "$(err_msg)" == *"project vision owns 1 volume(s) (e.g. vdata)"* ]]
    api DELETE /v1/volumes/vdata
    [ "$status_code" = 200 ]
    api DELETE /v1/projects/vision
    [ "$status_code" = 200 ]
}
