#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: NFS volumes against a real NFS server (nfs-ganesha, started here
# on a free loopback port). Where the kernel has no NFS client (as on the
# CI machines), the agent mounts with its userspace client
# (shoal-nfs-fuse: libnfs + FUSE); the kernel path is taken elsewhere.
#   nfs-001 an export read and written by a job; read-only refuses writes
#   nfs-002 jobs of a node share one mount, unmounted after the last one
#   nfs-003 an unreachable server or an option the client cannot honour
#           fails the job with the reason; bad definitions are refused

load lib/cluster

NFS_FUSE="$SHOAL_BUILD/src/agent/shoal-nfs-fuse"

setup() {
    [ "$(id -u)" = 0 ] || skip "needs root: mounts need the agent to be root"
    [ -c /dev/fuse ] || skip "no /dev/fuse here"
    command -v ganesha.nfsd >/dev/null || skip "nfs-ganesha is not installed (scripts/install-deps.sh)"
    [ -x "$NFS_FUSE" ] || grep -qw nfs4 /proc/filesystems ||
        skip "neither a kernel NFS client nor shoal-nfs-fuse (libnfs-dev, libfuse3-dev)"
    shoal_cluster_start 1 2
    nfs_start
    MNT="$SHOAL_TEST_DIR/mnt"
    STAGES="$SHOAL_TEST_DIR/node1/stages"
}

teardown() {
    # A server a test stopped must hear the end of the test.
    if [ -n "${SHOAL_TEST_DIR:-}" ] && [ -s "$SHOAL_TEST_DIR/ganesha.pid" ]; then
        kill -CONT "$(cat "$SHOAL_TEST_DIR/ganesha.pid")" 2>/dev/null || true
    fi
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

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Serve $SHOAL_TEST_DIR/export as /export (NFSv4, TCP) on a free port
# (NFS_PORT, kept when set: a restarted server).
nfs_start() {
    EXPORT="$SHOAL_TEST_DIR/export"
    mkdir -p "$EXPORT"
    echo "hello from nfs" >"$EXPORT/hello.txt"
    NFS_PORT=${NFS_PORT:-$(free_port)}
    : >"$SHOAL_TEST_DIR/ganesha.log"
    cat >"$SHOAL_TEST_DIR/ganesha.conf" <<CONF
NFS_CORE_PARAM {
    Protocols = 4; NFS_Port = $NFS_PORT; Bind_addr = 127.0.0.1;
    Enable_NLM = false; Enable_RQUOTA = false; Enable_UDP = false;
}
NFSV4 { Graceless = true; RecoveryRoot = $SHOAL_TEST_DIR/ganesha-recovery; }
NFS_KRB5 { Active_krb5 = false; }
EXPORT {
    Export_Id = 1; Path = $EXPORT; Pseudo = /export; Access_Type = RW;
    Squash = No_Root_Squash; SecType = sys; Protocols = 4; Transports = TCP;
    FSAL { Name = VFS; }
}
CONF
    ganesha.nfsd -F -f "$SHOAL_TEST_DIR/ganesha.conf" \
        -L "$SHOAL_TEST_DIR/ganesha.log" -p "$SHOAL_TEST_DIR/ganesha.pid" \
        -N NIV_EVENT &
    record_pid $!
    wait_for 20 grep -q "NFS SERVER INITIALIZED" "$SHOAL_TEST_DIR/ganesha.log"
}

job_why() { job_field "$1" .reason; shoal logs "$1"; }
stage_mounts() { grep -c " $STAGES/$1[^ ]*/mnt " /proc/self/mountinfo || true; }
stage_mounts_is() { [ "$(stage_mounts "$1")" = "$2" ]; }

@test "nfs-001 an export read and written by a job; read-only refuses writes" {
    shoal volume create home --nfs "127.0.0.1:/export" --options "vers=4,port=$NFS_PORT"
    shoal volume create homero --nfs "127.0.0.1:/export" --options "vers=4,port=$NFS_PORT" --read-only
    shoal volume list | grep -E "^home +nfs +\(cluster\) +127.0.0.1:/export +rw"
    a=$(submit -D /tmp -v "home:$MNT/h" -- sh -c "cat $MNT/h/hello.txt; mkdir $MNT/h/out && echo from-job >$MNT/h/out/r.txt && mv $MNT/h/out/r.txt $MNT/h/out/result.txt")
    wait_job_state "$a" completed 40
    [ "$(shoal logs "$a")" = "hello from nfs" ]
    [ "$(cat "$EXPORT/out/result.txt")" = from-job ]
    b=$(submit -D /tmp -v "homero:$MNT/r" -- sh -c "cat $MNT/r/out/result.txt; if touch $MNT/r/x 2>/dev/null; then echo WROTE; else echo REFUSED; fi")
    wait_job_state "$b" completed 40
    [ "$(shoal logs "$b")" = "from-job
REFUSED" ]
    [ ! -e "$EXPORT/x" ]
    wait_for 20 stage_mounts_is home 0
    wait_for 20 stage_mounts_is homero 0
    health_ok
}

@test "nfs-002 jobs of a node share one mount, unmounted after the last one" {
    shoal volume create home --nfs "127.0.0.1:/export" --options "vers=4,port=$NFS_PORT"
    a=$(submit -D /tmp -v "home:$MNT/a" -- sh -c "cat $MNT/a/hello.txt; sleep 1000")
    b=$(submit -D /tmp -v "home:$MNT/b:ro" -- sh -c "cat $MNT/b/hello.txt; sleep 1000")
    wait_job_state "$a" running 40
    wait_job_state "$b" running 40
    wait_for 40 sh -c "$SHOAL_CLI logs $a | grep -q hello && $SHOAL_CLI logs $b | grep -q hello"
    [ "$(stage_mounts home)" = 1 ]
    shoal cancel "$a"
    wait_job_state "$a" cancelled
    wait_for 20 job_released "$a"
    [ "$(stage_mounts home)" = 1 ]
    shoal cancel "$b"
    wait_job_state "$b" cancelled
    wait_for 20 stage_mounts_is home 0
}

@test "nfs-003 what cannot be mounted fails the job with the reason" {
    dead=$(free_port)
    shoal volume create gone --nfs "127.0.0.1:/export" --options "vers=4,port=$dead"
    id=$(submit -D /tmp -v "gone:$MNT/g" -- echo RAN)
    wait_job_state "$id" failed 40
    job_why "$id" | grep -q "volume gone: nfs 127.0.0.1:/export: "
    [ -z "$(shoal logs "$id" | grep RAN)" ]
    [ "$(stage_mounts gone)" = 0 ]
    if ! grep -qw nfs4 /proc/filesystems; then
        # Without a kernel client, an option only the kernel honours is
        # refused at mount time, not ignored.
        shoal volume create tuned --nfs "127.0.0.1:/export" --options "vers=4,port=$NFS_PORT,rsize=65536"
        id=$(submit -D /tmp -v "tuned:$MNT/t" -- echo RAN)
        wait_job_state "$id" failed 40
        job_why "$id" | grep -q "option rsize needs the kernel NFS client"
    fi
    # Refused at creation.
    run shoal volume create x --nfs "127.0.0.1:/export" --options "vers=4,exec"
    [ "$status" != 0 ]
    [[ "$output" == *"nfs options must be"* ]]
    run shoal volume create x --nfs "127.0.0.1:export"
    [ "$status" != 0 ]
    run shoal volume create x --nfs "-o:/export"
    [ "$status" != 0 ]
    health_ok
}

@test "nfs-004 writes of any size arrive whole; new files honour the umask" {
    shoal volume create home --nfs "127.0.0.1:/export" --options "vers=4,port=$NFS_PORT"
    head -c 50000000 /dev/urandom >"$SHOAL_TEST_DIR/big"
    chmod 644 "$SHOAL_TEST_DIR/big"
    # cp writes in 128 KiB pieces, dd in 4 KiB ones, python in one 1 MB
    # write: the userspace client once refused every write above ~3.9 KB.
    a=$(submit -D /tmp -v "home:$MNT/h" -- sh -c "umask 022; cp $SHOAL_TEST_DIR/big $MNT/h/big && dd if=$SHOAL_TEST_DIR/big of=$MNT/h/dd bs=4k count=100 status=none && python3 -c 'open(\"$MNT/h/py\", \"wb\").write(b\"x\" * 1000000)' && echo DONE")
    wait_job_state "$a" completed 120
    [ "$(shoal logs "$a")" = DONE ]
    [ "$(sha256sum <"$EXPORT/big")" = "$(sha256sum <"$SHOAL_TEST_DIR/big")" ]
    [ "$(stat -c %s "$EXPORT/dd")" = 409600 ]
    [ "$(stat -c %s "$EXPORT/py")" = 1000000 ]
    [ "$(stat -c %a "$EXPORT/big")" = 644 ]
    [ "$(stat -c %a "$EXPORT/py")" = 644 ]
}

node_state_is() { [ "$(shoal nodes --json | jq -r ".[] | select(.name == \"$1\") | .state")" = "$2" ]; }

@test "nfs-005 a hung NFS server at a job's end keeps the node up and other jobs running" {
    shoal volume create home --nfs "127.0.0.1:/export" --options "vers=4,port=$NFS_PORT"
    a=$(submit -D /tmp -v "home:$MNT/h" -- sh -c "cat $MNT/h/hello.txt; sleep 1000")
    wait_job_state "$a" running 40
    wait_for 20 sh -c "$SHOAL_CLI logs $a | grep -q hello"
    other=$(submit -D /tmp -- sleep 8)
    wait_job_state "$other" running 20
    kill -STOP "$(cat "$SHOAL_TEST_DIR/ganesha.pid")"
    # The job ends and its stage is released while the server hangs: the
    # agent must not wait for the server (heartbeats stop after 3 s here).
    shoal cancel "$a"
    wait_job_state "$a" cancelled 20
    wait_for 20 stage_mounts_is home 0
    wait_job_state "$other" completed 30
    node_state_is node1 up
    ! grep -q "node node1 is down" "$SHOAL_TEST_DIR/shoald.log"
    # The server comes back: the next job mounts the volume afresh.
    kill -CONT "$(cat "$SHOAL_TEST_DIR/ganesha.pid")"
    c=$(submit -D /tmp -v "home:$MNT/c" -- cat "$MNT/c/hello.txt")
    wait_job_state "$c" completed 40
    [ "$(shoal logs "$c")" = "hello from nfs" ]
}

@test "nfs-006 a restarted NFS server: the broken stage is mounted again for the next job" {
    shoal volume create home --nfs "127.0.0.1:/export" --options "vers=4,port=$NFS_PORT"
    a=$(submit -D /tmp -v "home:$MNT/h" -- sh -c "cat $MNT/h/hello.txt; sleep 1000")
    wait_job_state "$a" running 40
    wait_for 20 sh -c "$SHOAL_CLI logs $a | grep -q hello"
    # Restart the server on the same port while job a holds the stage.
    pid=$(cat "$SHOAL_TEST_DIR/ganesha.pid")
    kill "$pid"
    wait_for 20 sh -c "! kill -0 $pid 2>/dev/null"
    nfs_start
    b=$(submit -D /tmp -v "home:$MNT/b" -- cat "$MNT/b/hello.txt")
    wait_job_state "$b" completed 60
    [ "$(shoal logs "$b")" = "hello from nfs" ]
    shoal cancel "$a"
}
