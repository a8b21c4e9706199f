#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: S3 volumes against a real S3-compatible server (s3rver, started
# here on loopback) mounted with s3fs, and the secrets that hold their
# credentials.
#   s3-001 a bucket as a read-only dataset and as a read/write volume
#   s3-002 jobs of a node share one mount, unmounted after the last one
#   s3-003 an agent killed with -9 while a job holds the mount re-adopts it
#   s3-004 a wrong credential or bucket fails the job with the reason
#   s3-005 secrets are never shown back, logged or stored in clear

load lib/cluster

S3RVER="$BATS_TEST_DIRNAME/s3/node_modules/.bin/s3rver"

setup() {
    [ "$(id -u)" = 0 ] || skip "needs root: mounts need the agent to be root"
    [ -c /dev/fuse ] || skip "no /dev/fuse here"
    command -v s3fs >/dev/null || skip "s3fs is not installed (scripts/install-deps.sh)"
    [ -x "$S3RVER" ] || skip "s3rver is not installed (scripts/install-deps.sh)"
    shoal_cluster_start 1 2
    s3_start
    MNT="$SHOAL_TEST_DIR/mnt"
    STAGES="$SHOAL_TEST_DIR/node1/stages"
    shoal secret create s3cred access_key=S3RVER secret_key=S3RVER
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
    # Mounts left by a failed test, before their folders go.
    if [ -n "${SHOAL_TEST_DIR:-}" ]; then
        for m in $(awk '{print $5}' /proc/self/mountinfo | grep "^$SHOAL_TEST_DIR/" | sort -r); do
            umount -l "$m" 2>/dev/null || true
        done
    fi
}

# Start s3rver on a free port with buckets "data" and "other".
s3_start() {
    mkdir -p "$SHOAL_TEST_DIR/s3"
    "$S3RVER" -d "$SHOAL_TEST_DIR/s3" -a 127.0.0.1 -p 0 --no-vhost-buckets \
        --configure-bucket data --configure-bucket other \
        >"$SHOAL_TEST_DIR/s3rver.log" 2>&1 &
    record_pid $!
    wait_for 20 grep -q "listening on" "$SHOAL_TEST_DIR/s3rver.log"
    S3_URL="http://$(grep -o 'listening on [0-9.:]*' "$SHOAL_TEST_DIR/s3rver.log" | cut -d' ' -f3)"
    # An object to read (the server takes unsigned requests).
    printf 'hello from s3\n' |
        curl -sf -X PUT --data-binary @- "$S3_URL/data/hello.txt"
}

job_why() { job_field "$1" .reason; shoal logs "$1"; }

# Mounts of the node (the test's own namespace) under stage STAGE.
stage_mounts() { grep -c " $STAGES/$1[^ ]*/mnt " /proc/self/mountinfo || true; }
stage_mounts_is() { [ "$(stage_mounts "$1")" = "$2" ]; }

@test "s3-001 a bucket as a read-only dataset and as a read/write volume" {
    shoal volume create dataset --s3 "$S3_URL/data" --secret s3cred --read-only
    shoal volume create work --s3 "$S3_URL/data/out" --secret s3cred --cache
    shoal volume list | grep -E "^dataset +s3 +\(cluster\) +$S3_URL/data \(secret s3cred\) +ro"
    probe="cat $MNT/d/hello.txt; if touch $MNT/d/x 2>/dev/null; then echo WROTE; else echo REFUSED; fi"
    a=$(submit -D /tmp -v "dataset:$MNT/d" -- sh -c "$probe")
    wait_job_state "$a" completed 40
    [ "$(shoal logs "$a")" = "hello from s3
REFUSED" ]
    b=$(submit -D /tmp -v "work:$MNT/w" -- sh -c "echo from-job >$MNT/w/result.txt && ls $MNT/w")
    wait_job_state "$b" completed 40
    [ "$(shoal logs "$b")" = result.txt ]
    # The object is in the bucket, under the volume's prefix.
    [ "$(curl -sf "$S3_URL/data/out/result.txt")" = from-job ]
    # Both stages are gone once no job uses them.
    wait_for 20 stage_mounts_is dataset 0
    wait_for 20 stage_mounts_is work 0
    health_ok
}

@test "s3-002 jobs of a node share one mount, unmounted after the last one" {
    shoal volume create dataset --s3 "$S3_URL/data" --secret s3cred
    a=$(submit -D /tmp -v "dataset:$MNT/a" -- sh -c "cat $MNT/a/hello.txt; sleep 1000")
    b=$(submit -D /tmp -v "dataset:$MNT/b:ro" -- sh -c "cat $MNT/b/hello.txt; sleep 1000")
    wait_job_state "$a" running 40
    wait_job_state "$b" running 40
    wait_for 40 sh -c "$SHOAL_CLI logs $a | grep -q hello && $SHOAL_CLI logs $b | grep -q hello"
    # One mount of the bucket on the node, however many jobs use it.
    [ "$(stage_mounts dataset)" = 1 ]
    [ "$(pgrep -c -f "^s3fs data $STAGES/dataset")" = 1 ]
    shoal cancel "$a"
    wait_job_state "$a" cancelled
    wait_for 20 job_released "$a"
    [ "$(stage_mounts dataset)" = 1 ]
    # b still reads through it.
    [ "$(shoal show "$b" --json | jq -r .state)" = running ]
    shoal cancel "$b"
    wait_job_state "$b" cancelled
    wait_for 20 stage_mounts_is dataset 0
    wait_for 20 sh -c "! pgrep -f '^s3fs data $STAGES/dataset'"
}

@test "s3-003 a restarted agent re-adopts a job's mount and releases it after" {
    shoal volume create dataset --s3 "$S3_URL/data" --secret s3cred
    id=$(submit -D /tmp -v "dataset:$MNT/d" -- sh -c "sleep 1000")
    wait_job_state "$id" running 40
    wait_for 40 stage_mounts_is dataset 1
    old=$(agent_pid node1)
    kill -9 "$old"
    wait_for 10 sh -c "! kill -0 $old"
    AGENT_KEEP_JOBS=1 agent_start node1 2 H100-80GB
    wait_for 20 nodes_up_is 1
    wait_node_heartbeat node1
    # The job runs on and its mount stays.
    [ "$(job_state "$id")" = running ]
    [ "$(stage_mounts dataset)" = 1 ]
    shoal cancel "$id"
    wait_job_state "$id" cancelled 30
    wait_for 20 stage_mounts_is dataset 0
}

@test "s3-004 a wrong credential or bucket fails the job with the reason" {
    shoal secret create badcred access_key=NOPE secret_key=NOPE
    shoal volume create bad --s3 "$S3_URL/data" --secret badcred
    id=$(submit -D /tmp -v "bad:$MNT/b" -- echo RAN)
    wait_job_state "$id" failed 40
    job_why "$id" | grep -q "volume bad: bucket data at $S3_URL: s3fs: invalid credentials"
    [ -z "$(shoal logs "$id" | grep RAN)" ]
    shoal volume create nobucket --s3 "$S3_URL/nosuchbucket" --secret s3cred
    id=$(submit -D /tmp -v "nobucket:$MNT/n" -- echo RAN)
    wait_job_state "$id" failed 40
    job_why "$id" | grep -q "volume nobucket: bucket nosuchbucket at $S3_URL: s3fs: "
    [ "$(stage_mounts bad)" = 0 ]
    [ "$(stage_mounts nobucket)" = 0 ]
    # Refused at creation: a secret that does not exist or lacks the keys.
    run shoal volume create x --s3 "$S3_URL/data" --secret nosuch
    [ "$status" != 0 ]
    [[ "$output" == *"secret nosuch does not exist"* ]]
    shoal secret create partial access_key=A
    run shoal volume create x --s3 "$S3_URL/data" --secret partial
    [ "$status" != 0 ]
    [[ "$output" == *"must hold access_key and secret_key"* ]]
    run shoal volume create x --s3 "ftp://h/b" --secret s3cred
    [ "$status" != 0 ]
    # A secret in use is not deleted.
    run shoal secret delete badcred
    [ "$status" != 0 ]
    [[ "$output" == *"used by volume bad"* ]]
    health_ok
}

@test "s3-005 secrets are never shown back, logged or stored in clear" {
    value="sk-$$-$RANDOM-do-not-show"
    shoal secret create mine access_key=AKIA-visible-not "secret_key=$value"
    shoal volume create v --s3 "$S3_URL/data" --secret mine
    shoal secret list | grep -E "^mine +\(cluster\) +access_key,secret_key"
    out=$(shoal secret list --json; shoal secret show mine --json;
          shoal secret show mine; shoal volume show v --json; shoal volume list --json)
    [[ "$out" != *"$value"* ]]
    [[ "$out" == *secret_key* ]]
    # A job that uses it (and fails: the credentials are wrong).
    id=$(submit -D /tmp -v "v:$MNT/v" -- true)
    wait_job_state "$id" failed 40
    out=$(shoal show "$id" --json; shoal logs "$id")
    [[ "$out" != *"$value"* ]]
    run grep -c -- "$value" "$SHOAL_TEST_DIR/shoald.log" "$SHOAL_TEST_DIR/node1.log"
    [[ "$output" != *":1"* ]]
    # Not in the database, not even in its write-ahead log (the job's last
    # write is its release).
    wait_for 20 job_released "$id"
    [ "$(store_contents | grep -c -a -- "$value")" = 0 ]
    [ "$(stat -c %a "$SHOAL_TEST_DIR/controller/secrets.key")" = 600 ]
    # Still usable after a restart (the key is kept).
    shoald_stop
    shoald_start
    shoal secret show mine | grep -q "access_key,secret_key"
}
