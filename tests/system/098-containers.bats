#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: jobs in OCI images (issue 15). The test builds a tiny image from
# Debian's static busybox into an oci-archive, then checks what a user of
# --image would notice:
#   ctr-001 the job runs in the image (its /etc/os-release), as the
#           submitting user, with only its GPUs' device nodes, its env,
#           container mounts and workdir, and the GPU library bound in
#   ctr-002 the second start of the same image reuses the unpacked bundle
#   ctr-003 a broken or missing image fails the job with a clear reason
#   ctr-004 a bad image reference is refused at submission
#   ctr-005 cancel kills the container's processes
#   ctr-006 a 2-node job in the image gets the rendezvous env; the ranks
#           of a node share its rootfs and /dev/shm
#   ctr-007 #SBATCH --container-image (pyxis's name) and #SHOAL --image
#   ctr-008 while the node resolves or pulls the image, the job says so
#   ctr-009 a full cache evicts the least recently used image no run uses
#   ctr-010 a container mount reaches only what its user can reach
#   ctr-011 a device node inside an image cannot be opened by the job
#   ctr-012 a local image is opened as the job's user: another user's
#           private archive, a FIFO or a device is refused at once
#   ctr-013 an image whose index names a digest its manifest does not hash
#           to is refused, even when the cache holds that digest
#   ctr-014 a local image is copied as the job's user: a link in it to a
#           file only root reads fails the job and nothing of the file
#           reaches the job or the cache
#   ctr-015 a job runs from an image in a registry (Debian's docker-registry
#           on loopback, plain HTTP), pulled by the digest its tag names
#   ctr-016 a registry that asks for credentials: the job's project's
#           secret gives them; none, another project's or a wrong one
#           fails the job with the reason; root's own are never used
#   ctr-017 a 2-node job from a registry tag runs one digest on both nodes:
#           the tag is pushed anew to another image right after the first
#           node resolved it; the other node pulls the first one's digest,
#           the job shows it (shoal show), nothing else resolves the tag
#   ctr-018 a node that cannot get the digest the first node resolved (the
#           registry deleted it) fails the job with that reason
#   ctr-019 a registry password left by a killed pull is removed at start
#   ctr-020 the container runs in a user namespace that maps only its
#           user: root is unmapped inside, a root-owned file bound in stays
#           root's
#   ctr-021 a user's copy left in the cache's incoming/ by a killed pull is
#           removed at agent start and when a pull ends, unless a pull
#           holds it: taken from the user first, removed by root without
#           following planted links, not stalled by a stopped user process;
#           a folder without a lock (an older shim's) is given time
#   ctr-022 a run adopted by a restarted agent without its notes (run.json)
#           still reports the digest its image resolved to
#   ctr-023 in an image, the job opens its GPU's device node read-write
#           (the host's mode, 0666), `whoami` names its user (a passwd and
#           group entry), HOME is writable and /sys is read-only, its
#           submounts too (issue 27, item 9)
#   ctr-024 an image that unpacks to more than --image-max-size or
#           --image-max-files fails the job with that reason, and nothing
#           of it stays in the cache (issue 27, item 4)
#   ctr-025 an image larger than the whole cache (--image-cache-size)
#           fails the job with that reason and leaves nothing behind
#   ctr-026 a volume whose mount path the node lacks (made in the job's
#           view only) reaches a job in an image
#   ctr-027 an image whose manifest declares layers larger than the cache
#           (2^62 bytes) or a negative size fails the job and evicts
#           nothing from the cache

load lib/cluster

CUSER=shoalctr

setup_file() {
    [ "$(id -u)" = 0 ] || return 0
    command -v crun >/dev/null && command -v umoci >/dev/null &&
        command -v skopeo >/dev/null && [ -x /bin/busybox ] || return 0
    # Readable by the job's user: the node opens a local image as the user.
    local d
    d=$(mktemp -d /tmp/shoal-ctr-img.XXXXXX) && chmod 0755 "$d" || return 0
    export CTR_IMG_DIR="$d"
    (
        cd "$d"
        umoci init --layout L
        umoci new --image L:t
        umoci unpack --image L:t B >/dev/null
        mkdir -p B/rootfs/bin B/rootfs/etc B/rootfs/tmp B/rootfs/work
        cp /bin/busybox B/rootfs/bin/busybox
        for c in sh id ls cat env pwd sleep echo test grep wc whoami awk; do
            ln -s busybox "B/rootfs/bin/$c"
        done
        printf 'ID=shoaltest\nNAME="Shoal test image"\n' >B/rootfs/etc/os-release
        chmod 1777 B/rootfs/tmp
        umoci repack --image L:t B
        skopeo --insecure-policy copy --quiet oci:L:t "oci-archive:$d/busybox.tar"
        # A second image, for the cache's eviction.
        printf 'ID=shoaltest2\n' >B/rootfs/etc/os-release
        umoci repack --image L:t2 B
        skopeo --insecure-policy copy --quiet oci:L:t2 "oci-archive:$d/busybox2.tar"
        # A third, holding a device node (the harmless null device).
        mkdir -p B/rootfs/opt
        mknod -m 0666 B/rootfs/opt/null c 1 3
        umoci repack --image L:t3 B
        skopeo --insecure-policy copy --quiet oci:L:t3 "oci-archive:$d/busybox-dev.tar"
        # Over the caps: 64 MiB of zeros (a small archive), then 300 files.
        umoci unpack --image L:t C >/dev/null
        head -c 64M /dev/zero >C/rootfs/zeros
        umoci repack --image L:big C
        skopeo --insecure-policy copy --quiet oci:L:big "oci-archive:$d/busybox-big.tar"
        rm C/rootfs/zeros
        mkdir C/rootfs/many
        for i in $(seq 300); do : >"C/rootfs/many/f$i"; done
        umoci repack --image L:many C
        skopeo --insecure-policy copy --quiet oci:L:many "oci-archive:$d/busybox-many.tar"
    ) >"$BATS_FILE_TMPDIR/img.log" 2>&1
    chmod -R a+rX "$d"
}

teardown_file() {
    case "${CTR_IMG_DIR:-}" in /tmp/shoal-ctr-img.*) rm -rf "$CTR_IMG_DIR" ;; esac
}

setup() {
    [ "$(id -u)" = 0 ] || skip "needs root: the agent must switch users"
    for t in crun umoci skopeo; do
        command -v $t >/dev/null || skip "needs $t (scripts/install-deps.sh)"
    done
    [ -f "${CTR_IMG_DIR:-/nonexistent}/busybox.tar" ] ||
        skip "the test image could not be built: $(tail -3 "$BATS_FILE_TMPDIR/img.log")"
    IMG="oci-archive:$CTR_IMG_DIR/busybox.tar"
    test_user "$CUSER" 23457
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

# The user runs jobs: a Shoal user who reaches the run folders.
open_test_dir() {
    chmod 0711 "$SHOAL_TEST_DIR"
    API_TOKEN=$SHOAL_TOKEN api POST /v1/users "{\"name\":\"$CUSER\"}"
    [ "$status_code" = 201 ] || [ "$status_code" = 409 ]
}

run_dir() { echo "$SHOAL_TEST_DIR/${2:-node1}/runs/$1.0"; }

logs_have() { shoal logs "$1" | grep -qx "$2"; }

job_done() {
    case "$(job_state "$1")" in completed | failed | cancelled) return 0 ;; esac
    return 1
}

@test "ctr-001 a job runs in its image as its user with its GPUs, env and mounts" {
    shoal_cluster_start 1 2
    open_test_dir
    share="$SHOAL_TEST_DIR/share"
    mkdir -p "$share" && echo hello-from-host >"$share/note"
    probe='. /etc/os-release; echo "os=$ID"; echo "uid=$(id -u) gid=$(id -g)";
ls /dev | grep nvidia | sed "s/^/dev=/";
echo "job=$SHOAL_JOB_ID cvd=$CUDA_VISIBLE_DEVICES mine=$MINE wd=$(pwd)";
cat /data/note; test -f /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 && echo nvml=yes;
echo x > /data/ro 2>/dev/null || echo data=ro; echo w > /tmp/w && echo tmp=rw'
    id=$(submit --user "$CUSER" --gpus 1 --image "$IMG" \
        --container-mounts "$share:/data:ro" --container-workdir /work \
        --container-env MINE=42 -- sh -c "$probe")
    wait_for 60 job_done "$id"
    run shoal logs "$id"
    echo "$output"
    [ "$(job_state "$id")" = completed ]
    echo "$output" | grep -qx "os=shoaltest"
    echo "$output" | grep -qx "uid=$(id -u "$CUSER") gid=$(id -g "$CUSER")"
    # One GPU of two: one device node, the one of its GPU.
    [ "$(echo "$output" | grep -c '^dev=nvidia[0-9]')" = 1 ]
    echo "$output" | grep -q "^job=$id cvd=GPU-[0-9a-f-]* mine=42 wd=/work$"
    echo "$output" | grep -qx hello-from-host
    echo "$output" | grep -qx nvml=yes
    echo "$output" | grep -qx data=ro
    echo "$output" | grep -qx tmp=rw
    [ ! -e "$share/ro" ]
    # The image's files are not the host's.
    ! grep -q shoaltest /etc/os-release
}

@test "ctr-002 the second start of an image does not unpack it again" {
    shoal_cluster_start 1 1
    open_test_dir
    a=$(submit --user "$CUSER" --image "$IMG" -- echo first)
    wait_for 60 job_done "$a"
    b=$(submit --user "$CUSER" --image "$IMG" -- echo second)
    wait_for 60 job_done "$b"
    [ "$(job_state "$a")" = completed ]
    [ "$(job_state "$b")" = completed ]
    [ "$(jq -r .unpacked "$(run_dir "$a")/image.json")" = true ]
    [ "$(jq -r .unpacked "$(run_dir "$b")/image.json")" = false ]
    [ "$(jq -r .digest "$(run_dir "$a")/image.json")" = \
        "$(jq -r .digest "$(run_dir "$b")/image.json")" ]
    # One bundle in the cache, unpacked once.
    [ "$(ls -d "$SHOAL_TEST_DIR"/node1/images/bundles/*/ | wc -l)" = 1 ]
}

@test "ctr-003 a broken or missing image fails the job with a clear reason" {
    shoal_cluster_start 1 1
    open_test_dir
    head -c 4096 /dev/urandom >"$SHOAL_TEST_DIR/broken.tar"
    a=$(submit --user "$CUSER" --image "oci-archive:$SHOAL_TEST_DIR/broken.tar" -- echo never)
    b=$(submit --user "$CUSER" --image "oci-archive:$SHOAL_TEST_DIR/missing.tar" -- echo never)
    wait_for 60 job_done "$a"
    wait_for 60 job_done "$b"
    [ "$(job_state "$a")" = failed ]
    [ "$(job_state "$b")" = failed ]
    job_field "$a" .reason | grep -q "^image oci-archive:$SHOAL_TEST_DIR/broken.tar: cannot resolve: .* on node1$"
    job_field "$b" .reason | grep -q "^image oci-archive:$SHOAL_TEST_DIR/missing.tar: cannot resolve: .*no such file or directory.* on node1$"
    run shoal show "$b"
    echo "$output" | grep -q "missing.tar: cannot resolve"
    run shoal logs "$a"
    if echo "$output" | grep -q never; then false; fi
}

@test "ctr-004 a bad image reference is refused at submission" {
    shoal_cluster_start 1 1
    open_test_dir
    run shoal submit --image "Registry.Example.com/Team/Train:1.4" -- true
    [ "$status" -ne 0 ]
    echo "$output" | grep -q "lowercase"
    run shoal submit --image "oci-archive:relative.tar" -- true
    [ "$status" -ne 0 ]
    echo "$output" | grep -q "absolute"
    run shoal submit --container-workdir /w -- true
    [ "$status" -ne 0 ]
    echo "$output" | grep -q "need an image"
    [ "$(shoal queue --json | jq length)" = 0 ]
    # A registry reference is accepted as written.
    id=$(shoal submit --hold --image registry.example.com/team/train:1.4 -- echo ok)
    job_field "$id" . | grep -q "\"image\": \"registry.example.com/team/train:1.4\""
}

@test "ctr-005 cancel kills the container" {
    shoal_cluster_start 1 1
    open_test_dir
    out="$SHOAL_TEST_DIR/out"
    mkdir -p "$out" && chmod 0777 "$out"
    id=$(submit --user "$CUSER" --image "$IMG" --container-mounts "$out:/out" \
        -- sh -c 'echo $$ > /out/pid; exec sleep 1000')
    wait_for 60 test -s "$out/pid"
    pid=$(cat "$out/pid")
    kill -0 "$pid"
    [ "$(stat -c %u /proc/$pid)" = "$(id -u "$CUSER")" ]
    pgrep -f "crun.*--root=$SHOAL_TEST_DIR/.*shoal-$id\.0" >/dev/null
    shoal cancel "$id"
    wait_job_state "$id" cancelled 30
    wait_for 20 sh -c "! kill -0 $pid"
    # Nothing of the container is left on the node (crun's --root is in
    # the run's folder: another test's job of the same id is not this one).
    if pgrep -f "crun.*--root=$SHOAL_TEST_DIR/.*shoal-$id\.0" >/dev/null; then false; fi
}

@test "ctr-006 a 2-node job in the image gets the rendezvous env, ranks share the image" {
    shoal_cluster_start 2 1
    open_test_dir
    id=$(submit --user "$CUSER" --nodes 2 --gpus 1 --tasks-per-node 2 \
        --image "$IMG" -- sh -c '. /etc/os-release; echo "r=$RANK lr=$LOCAL_RANK ws=$WORLD_SIZE n=$SHOAL_NNODES m=$MASTER_ADDR:$MASTER_PORT os=$ID host=$(cat /proc/sys/kernel/hostname)"')
    wait_for 60 job_done "$id"
    run shoal logs "$id"
    echo "$output"
    [ "$(job_state "$id")" = completed ]
    for r in 0 1 2 3; do
        echo "$output" | grep -q "r=$r lr=$((r % 2)) ws=4 n=2 m=[^:]*:[0-9]* os=shoaltest"
    done
}

@test "ctr-007 #SBATCH --container-image and #SHOAL --image" {
    shoal_cluster_start 1 1
    open_test_dir
    s="$SHOAL_TEST_DIR/job.sh"
    printf '#!/bin/sh\n#SHOAL --image %s\n#SHOAL --container-env WHO=shoal\n. /etc/os-release\necho "os=$ID who=$WHO"\n' "$IMG" >"$s"
    chmod 0644 "$s"
    a=$(submit --user "$CUSER" "$s")
    t="$SHOAL_TEST_DIR/job.sbatch"
    printf '#!/bin/sh\n#SBATCH --container-image=%s\n. /etc/os-release\necho "os=$ID"\n' "$IMG" >"$t"
    chmod 0644 "$t"
    b=$(submit --user "$CUSER" "$t")
    wait_for 60 job_done "$a"
    wait_for 60 job_done "$b"
    shoal logs "$a" | grep -qx "os=shoaltest who=shoal"
    shoal logs "$b" | grep -qx "os=shoaltest"
}

@test "ctr-008 shoal show tells what the node does before the job starts" {
    shoal_cluster_start 1 1
    open_test_dir
    # The node's image cache is busy (its lock held here) until the test
    # says: the node waits on it, and the job's reason says so meanwhile.
    # (A FIFO as the archive would be refused: only a regular file is.)
    cache="$SHOAL_TEST_DIR/node1/images"
    mkdir -p "$cache"
    exec 9>"$cache/lock"
    flock -x 9
    id=$(submit --user "$CUSER" --image "$IMG" -- echo arrived)
    wait_for 30 sh -c "$SHOAL_CLI show $id | grep -q 'pulling image (waiting for the node.s cache) on node1'"
    [ "$(job_state "$id")" = running ]
    exec 9>&-
    wait_for 60 job_done "$id"
    [ "$(job_state "$id")" = completed ]
    shoal logs "$id" | grep -qx arrived
    # The note is gone once the job ran.
    if job_field "$id" .reason | grep -q image; then false; fi
}

@test "ctr-009 a full cache evicts the least recently used image no run uses" {
    shoald_start
    # A cache of 3 MiB holds one image (a 2 MB bundle, 1 MB of blobs):
    # every image no run holds goes when another comes.
    agent_start node1 1 H100-80GB --image-cache-size 3M
    wait_for 20 nodes_up_is 1
    open_test_dir
    img2="oci-archive:$CTR_IMG_DIR/busybox2.tar"
    bundles="$SHOAL_TEST_DIR/node1/images/bundles"
    a=$(submit --user "$CUSER" --image "$IMG" -- echo one)
    wait_for 60 job_done "$a"
    d1=$(jq -r .digest "$(run_dir "$a")/image.json")
    [ -d "$bundles/${d1#sha256:}" ]
    # A running job holds its image: a new one does not evict it.
    b=$(submit --user "$CUSER" --image "$IMG" -- sleep 1000)
    wait_for 60 test -s "$(run_dir "$b")/image.json"
    c=$(submit --user "$CUSER" --image "$img2" -- sh -c '. /etc/os-release; echo $ID')
    wait_for 60 job_done "$c"
    shoal logs "$c" | grep -qx shoaltest2
    d2=$(jq -r .digest "$(run_dir "$c")/image.json")
    [ "$d1" != "$d2" ]
    [ -d "$bundles/${d1#sha256:}" ]
    shoal cancel "$b"
    wait_job_state "$b" cancelled 30
    # Now the first is unused and the least recently used: the next start
    # (of the second, cached) evicts it; the first then unpacks again.
    d=$(submit --user "$CUSER" --image "$img2" -- echo ok)
    wait_for 60 job_done "$d"
    [ "$(jq -r .unpacked "$(run_dir "$d")/image.json")" = false ]
    [ ! -d "$bundles/${d1#sha256:}" ]
    e=$(submit --user "$CUSER" --image "$IMG" -- echo ok)
    wait_for 60 job_done "$e"
    [ "$(job_state "$e")" = completed ]
    [ "$(jq -r .unpacked "$(run_dir "$e")/image.json")" = true ]
    [ ! -d "$bundles/${d2#sha256:}" ]
    [ "$(ls -d "$bundles"/*/ | wc -l)" = 1 ]
}

@test "ctr-010 a container mount reaches only what its user can reach" {
    shoal_cluster_start 1 1
    open_test_dir
    mkdir -p "$SHOAL_TEST_DIR/private/sub"
    echo secret >"$SHOAL_TEST_DIR/private/sub/file"
    chmod 0700 "$SHOAL_TEST_DIR/private"
    chmod 0755 "$SHOAL_TEST_DIR/private/sub"
    chmod 0644 "$SHOAL_TEST_DIR/private/sub/file"
    id=$(submit --user "$CUSER" --image "$IMG" \
        --container-mounts "$SHOAL_TEST_DIR/private/sub:/x" -- cat /x/file)
    wait_for 60 job_done "$id"
    [ "$(job_state "$id")" = failed ]
    job_field "$id" .reason | grep -q "container mount $SHOAL_TEST_DIR/private/sub: Permission denied"
    if shoal logs "$id" | grep -q secret; then false; fi
}

@test "ctr-011 a device node inside an image cannot be opened by the job" {
    [ -f "$CTR_IMG_DIR/busybox-dev.tar" ] ||
        skip "the image with a device node could not be built"
    shoal_cluster_start 1 1
    open_test_dir
    id=$(submit --user "$CUSER" --image "oci-archive:$CTR_IMG_DIR/busybox-dev.tar" \
        -- sh -c 'echo x >/opt/null && echo opened; ls /opt; echo listed')
    wait_for 60 job_done "$id"
    run shoal logs "$id"
    [[ "$output" == *listed* ]]
    # The image's /opt/null (char 1:3) is not there to open.
    [[ "$output" != *opened* ]]
}

@test "ctr-012 a local image is opened as the job's user, and only a file or folder" {
    shoal_cluster_start 1 1
    open_test_dir
    chmod 0755 "$SHOAL_TEST_DIR"
    cp "$CTR_IMG_DIR/busybox.tar" "$SHOAL_TEST_DIR/private.tar"
    chmod 0600 "$SHOAL_TEST_DIR/private.tar"
    mkdir -p "$SHOAL_TEST_DIR/layout"
    chmod 0700 "$SHOAL_TEST_DIR/layout"
    mkfifo "$SHOAL_TEST_DIR/fifo.tar"
    chmod 0666 "$SHOAL_TEST_DIR/fifo.tar"
    a=$(submit --user "$CUSER" --image "oci-archive:$SHOAL_TEST_DIR/private.tar" -- echo never)
    b=$(submit --user "$CUSER" --image "oci:$SHOAL_TEST_DIR/layout:t" -- echo never)
    c=$(submit --user "$CUSER" --image "oci-archive:$SHOAL_TEST_DIR/fifo.tar" -- echo never)
    d=$(submit --user "$CUSER" --image "oci-archive:/dev/zero" -- echo never)
    for j in $a $b $c $d; do wait_for 60 job_done "$j"; done
    for j in $a $b $c $d; do [ "$(job_state "$j")" = failed ]; done
    job_field "$a" .reason | grep -q "^image oci-archive:$SHOAL_TEST_DIR/private.tar: cannot resolve: .*: permission denied on node1$"
    job_field "$b" .reason | grep -q "^image oci:$SHOAL_TEST_DIR/layout:t: cannot resolve: .*: permission denied on node1$"
    job_field "$c" .reason | grep -q "fifo.tar: not a regular file on node1$"
    job_field "$d" .reason | grep -q "/dev/zero: not a regular file on node1$"
    for j in $a $b $c $d; do
        if shoal logs "$j" | grep -q never; then false; fi
    done
    # Nothing of the private archive reached the cache.
    [ -z "$(ls "$SHOAL_TEST_DIR"/node1/images/bundles/ 2>/dev/null)" ]
    # The same archive, readable by the user, runs.
    chmod 0644 "$SHOAL_TEST_DIR/private.tar"
    e=$(submit --user "$CUSER" --image "oci-archive:$SHOAL_TEST_DIR/private.tar" -- echo ran)
    wait_for 60 job_done "$e"
    [ "$(job_state "$e")" = completed ]
    shoal logs "$e" | grep -qx ran
}

@test "ctr-013 an index naming a digest its manifest does not hash to is refused" {
    shoal_cluster_start 1 1
    open_test_dir
    chmod 0755 "$SHOAL_TEST_DIR"
    # The first image is in the node's cache.
    a=$(submit --user "$CUSER" --image "$IMG" -- echo first)
    wait_for 60 job_done "$a"
    [ "$(job_state "$a")" = completed ]
    d1=$(jq -r .digest "$(run_dir "$a")/image.json")
    # A layout (and its archive) whose index names that digest while the
    # blob so named is the second image's manifest.
    x="$SHOAL_TEST_DIR/forged"
    cp -r "$CTR_IMG_DIR/L" "$x"
    d2=$(jq -r '.manifests[] | select(.annotations."org.opencontainers.image.ref.name" == "t2") | .digest' "$x/index.json")
    [ "$d1" = "$(jq -r '.manifests[] | select(.annotations."org.opencontainers.image.ref.name" == "t") | .digest' "$x/index.json")" ]
    cp "$x/blobs/sha256/${d2#sha256:}" "$x/blobs/sha256/${d1#sha256:}"
    jq -c '.manifests |= map(select(.annotations."org.opencontainers.image.ref.name" == "t"))' \
        "$CTR_IMG_DIR/L/index.json" >"$x/index.json"
    tar -C "$x" -cf "$SHOAL_TEST_DIR/forged.tar" oci-layout index.json blobs
    chmod -R a+rX "$x" "$SHOAL_TEST_DIR/forged.tar"
    b=$(submit --user "$CUSER" --image "oci:$x:t" -- cat /etc/os-release)
    c=$(submit --user "$CUSER" --image "oci-archive:$SHOAL_TEST_DIR/forged.tar" -- cat /etc/os-release)
    wait_for 60 job_done "$b"
    wait_for 60 job_done "$c"
    [ "$(job_state "$b")" = failed ]
    [ "$(job_state "$c")" = failed ]
    job_field "$b" .reason | grep -q "^image oci:$x:t: its manifest does not match the digest its index names ($d1): refused"
    job_field "$c" .reason | grep -q "forged.tar: its manifest does not match the digest its index names ($d1): refused"
    if shoal logs "$b" | grep -q shoaltest; then false; fi
    if shoal logs "$c" | grep -q shoaltest; then false; fi
}

@test "ctr-014 a link in a user's image to a file only root reads fails the job" {
    shoal_cluster_start 1 1
    open_test_dir
    chmod 0755 "$SHOAL_TEST_DIR"
    x="$SHOAL_TEST_DIR/linked"
    cp -r "$CTR_IMG_DIR/L" "$x"
    m=$(jq -r '.manifests[] | select(.annotations."org.opencontainers.image.ref.name" == "t") | .digest' "$x/index.json")
    layer=$(jq -r '.layers[0].digest' "$x/blobs/sha256/${m#sha256:}")
    # The image's layer moved where only root reads it, a link in its place.
    secret="$SHOAL_TEST_DIR/rootonly"
    mkdir -m 0700 "$secret"
    mv "$x/blobs/sha256/${layer#sha256:}" "$secret/layer"
    chmod 0600 "$secret/layer"
    ln -s "$secret/layer" "$x/blobs/sha256/${layer#sha256:}"
    chmod -R a+rX "$x"
    jq -c '.manifests |= map(select(.annotations."org.opencontainers.image.ref.name" == "t"))' \
        "$CTR_IMG_DIR/L/index.json" >"$x/index.json"
    tar -C "$x" -cf "$SHOAL_TEST_DIR/linked.tar" oci-layout index.json blobs
    chmod 0644 "$SHOAL_TEST_DIR/linked.tar"
    a=$(submit --user "$CUSER" --image "oci:$x:t" -- cat /etc/os-release)
    b=$(submit --user "$CUSER" --image "oci-archive:$SHOAL_TEST_DIR/linked.tar" -- cat /etc/os-release)
    wait_for 60 job_done "$a"
    wait_for 60 job_done "$b"
    [ "$(job_state "$a")" = failed ]
    [ "$(job_state "$b")" = failed ]
    job_field "$a" .reason
    job_field "$b" .reason
    job_field "$a" .reason | grep -q "^image oci:$x:t: cannot copy it as the job's user: permission denied ("
    job_field "$b" .reason | grep -q "linked.tar: cannot copy it as the job's user: permission denied ("
    for j in $a $b; do
        if shoal logs "$j" | grep -q shoaltest; then false; fi
    done
    # Nothing of it in the node's cache; the user's copy is gone.
    c="$SHOAL_TEST_DIR/node1/images"
    [ ! -e "$c/bundles/${m#sha256:}" ]
    [ ! -e "$c/oci/blobs/sha256/${layer#sha256:}" ]
    [ -z "$(ls -A "$c/incoming")" ]
    [ "$(stat -c %a "$c/incoming")" = 711 ]
    # A link the user may follow is followed (as the user): the job runs.
    chmod 0755 "$secret"
    chmod 0644 "$secret/layer"
    d=$(submit --user "$CUSER" --image "oci:$x:t" -- cat /etc/os-release)
    wait_for 60 job_done "$d"
    [ "$(job_state "$d")" = completed ]
    shoal logs "$d" | grep -qx ID=shoaltest
    [ -z "$(ls -A "$c/incoming")" ]
}

# Start Debian's docker-registry on a free loopback port (REG_PORT), its
# data under the test's folder; extra YAML (an auth: block) from $1, extra
# storage: YAML (a delete: block) from REG_STORAGE.
reg_start() {
    command -v docker-registry >/dev/null ||
        skip "needs docker-registry (scripts/install-deps.sh)"
    local d="$SHOAL_TEST_DIR/registry"
    mkdir -p "$d"
    {
        printf 'version: 0.1\nlog:\n  level: info\nstorage:\n'
        printf '  filesystem:\n    rootdirectory: %s/data\n' "$d"
        printf '%s' "${REG_STORAGE:-}"
        printf 'http:\n  addr: 127.0.0.1:0\n'
        printf '%s' "${1:-}"
    } >"$d/config.yml"
    docker-registry serve "$d/config.yml" >"$d/registry.log" 2>&1 &
    REG_PID=$!
    record_pid "$REG_PID"
    wait_for 20 grep -q "listening on 127.0.0.1:" "$d/registry.log"
    REG_PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$d/registry.log" | head -1)
    [ -n "$REG_PORT" ]
}

@test "ctr-015 a job runs from an image in a registry, pulled by its digest" {
    shoald_start
    reg_start
    agent_start node1 1 H100-80GB --image-tls-insecure
    wait_for 20 nodes_up_is 1
    open_test_dir
    skopeo --insecure-policy copy --quiet --dest-tls-verify=false \
        "oci-archive:$CTR_IMG_DIR/busybox.tar" "docker://127.0.0.1:$REG_PORT/test/busybox:1"
    ref="127.0.0.1:$REG_PORT/test/busybox:1"
    a=$(submit --user "$CUSER" --image "$ref" -- sh -c '. /etc/os-release; echo "os=$ID uid=$(id -u)"')
    wait_for 90 job_done "$a"
    job_field "$a" .reason
    [ "$(job_state "$a")" = completed ]
    shoal logs "$a" | grep -qx "os=shoaltest uid=$(id -u "$CUSER")"
    # The digest the tag named is the one run and cached.
    want=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$ref")
    [ "$(jq -r .digest "$(run_dir "$a")/image.json")" = "$want" ]
    [ -d "$SHOAL_TEST_DIR/node1/images/bundles/${want#sha256:}" ]
    # A tag the registry does not hold fails the job with the reason.
    b=$(submit --user "$CUSER" --image "127.0.0.1:$REG_PORT/test/busybox:nope" -- echo never)
    wait_for 90 job_done "$b"
    [ "$(job_state "$b")" = failed ]
    job_field "$b" .reason
    job_field "$b" .reason | grep -qi "image docker://127.0.0.1:$REG_PORT/test/busybox:nope: cannot resolve: .*manifest unknown"
}

@test "ctr-016 registry credentials come from a secret of the job's project" {
    command -v htpasswd >/dev/null || skip "needs htpasswd (apache2-utils)"
    shoald_start
    htpasswd -Bbn tuser tpass >"$SHOAL_TEST_DIR/htpasswd"
    reg_start "$(printf 'auth:\n  htpasswd:\n    realm: shoal-test\n    path: %s\n' "$SHOAL_TEST_DIR/htpasswd")"
    # Root's own credentials on the node are not the job's: in every place
    # skopeo looks for them (REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR's
    # containers/auth.json, $HOME/.docker/config.json, $DOCKER_CONFIG).
    mkdir -p "$SHOAL_TEST_DIR/rootauth/containers" "$SHOAL_TEST_DIR/roothome/.docker" \
        "$SHOAL_TEST_DIR/rootdocker"
    printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$REG_PORT" "$(printf tuser:tpass | base64)" \
        >"$SHOAL_TEST_DIR/rootauth/auth.json"
    for f in rootauth/containers/auth.json roothome/.docker/config.json rootdocker/config.json; do
        cp "$SHOAL_TEST_DIR/rootauth/auth.json" "$SHOAL_TEST_DIR/$f"
    done
    AGENT_PREFIX="env REGISTRY_AUTH_FILE=$SHOAL_TEST_DIR/rootauth/auth.json XDG_RUNTIME_DIR=$SHOAL_TEST_DIR/rootauth HOME=$SHOAL_TEST_DIR/roothome DOCKER_CONFIG=$SHOAL_TEST_DIR/rootdocker" \
        agent_start node1 1 H100-80GB --image-tls-insecure
    wait_for 20 nodes_up_is 1
    open_test_dir
    api POST /v1/projects '{"name":"other","team":"default"}'
    skopeo --insecure-policy copy --quiet --dest-tls-verify=false --dest-creds tuser:tpass \
        "oci-archive:$CTR_IMG_DIR/busybox.tar" "docker://127.0.0.1:$REG_PORT/test/busybox:1"
    ref="127.0.0.1:$REG_PORT/test/busybox:1"
    # No secret (root's auth file in the agent's environment): refused.
    a=$(submit --user "$CUSER" --image "$ref" -- echo ran)
    wait_for 90 job_done "$a"
    [ "$(job_state "$a")" = failed ]
    job_field "$a" .reason
    job_field "$a" .reason | grep -q "^image docker://$ref: cannot resolve: .*\(unauthorized\|authentication required\)"
    # Another project's secret is not the job's.
    echo tpass | shoal secret create other-reg --project other registry="127.0.0.1:$REG_PORT" username=tuser password=-
    b=$(submit --user "$CUSER" --image "$ref" -- echo ran)
    wait_for 90 job_done "$b"
    [ "$(job_state "$b")" = failed ]
    # A wrong password: the reason names the secret.
    echo wrong | shoal secret create bad-reg --project default registry="127.0.0.1:$REG_PORT" username=tuser password=-
    c=$(submit --user "$CUSER" --image "$ref" -- echo ran)
    wait_for 90 job_done "$c"
    [ "$(job_state "$c")" = failed ]
    job_field "$c" .reason
    job_field "$c" .reason | grep -q "^image docker://$ref: cannot resolve with the credentials of secret bad-reg: .*\(unauthorized\|authentication required\)"
    # The right one: the job runs; no auth file is left on the node.
    shoal secret delete bad-reg
    echo tpass | shoal secret create good-reg --project default registry="127.0.0.1:$REG_PORT" username=tuser password=-
    d=$(submit --user "$CUSER" --image "$ref" -- sh -c '. /etc/os-release; echo "os=$ID"; env')
    wait_for 90 job_done "$d"
    job_field "$d" .reason
    [ "$(job_state "$d")" = completed ]
    run shoal logs "$d"
    echo "$output" | grep -qx os=shoaltest
    # Nothing of the credentials in the job's environment.
    if echo "$output" | grep -q tpass; then false; fi
    [ -z "$(ls -d "$SHOAL_TEST_DIR"/node1/images/auth-* 2>/dev/null)" ]
    # While a job from the registry runs, no file of the node's state holds
    # the password (work.json; no launch.json: the fork server passed the
    # launch description to the shim, whose pull had it in memory).
    e=$(submit --user "$CUSER" --image "$ref" -- sh -c 'echo started; exec sleep 1000')
    wait_for 90 logs_have "$e" started
    b64=$(printf tuser:tpass | base64)
    [ ! -e "$(run_dir "$e")/launch.json" ]
    [ -s "$(run_dir "$e")/work.json" ]
    if grep -rlF -e tpass -e "$b64" "$SHOAL_TEST_DIR/node1"; then false; fi
    shoal cancel "$e"
    wait_job_state "$e" cancelled 30
}

@test "ctr-017 a 2-node job from a registry tag runs one digest on every node" {
    shoald_start
    reg_start
    ref="127.0.0.1:$REG_PORT/test/busybox:2"
    skopeo --insecure-policy copy --quiet --dest-tls-verify=false \
        "oci-archive:$CTR_IMG_DIR/busybox.tar" "docker://$ref"
    want=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$ref")
    # The nodes' skopeo: whenever a node resolves the tag, it is logged and
    # (the first time) the tag is pushed anew to the second image at once,
    # as a push between the first node's resolution and the others' pulls.
    w="$SHOAL_TEST_DIR/wrap"
    mkdir -p "$w"
    {
        printf '#!/bin/sh\n/usr/bin/skopeo "$@"\nrc=$?\n'
        printf 'case " $* " in\n*" --format "*" docker://%s "*)\n' "$ref"
        printf '    echo "$*" >>"%s/resolved"\n' "$w"
        printf '    if mkdir "%s/pushed" 2>/dev/null; then\n' "$w"
        printf '        /usr/bin/skopeo --insecure-policy copy --quiet --dest-tls-verify=false "oci-archive:%s/busybox2.tar" "docker://%s" >&2\n' \
            "$CTR_IMG_DIR" "$ref"
        printf '    fi ;;\nesac\nexit $rc\n'
    } >"$w/skopeo"
    chmod 0755 "$w/skopeo"
    AGENT_PREFIX="env PATH=$w:$PATH" agent_start node1 1 H100-80GB --image-tls-insecure
    AGENT_PREFIX="env PATH=$w:$PATH" agent_start node2 1 H100-80GB --image-tls-insecure
    wait_for 20 nodes_up_is 2
    open_test_dir
    id=$(submit --user "$CUSER" --nodes 2 --gpus 1 --image "$ref" -- \
        sh -c '. /etc/os-release; echo "r=$RANK os=$ID"')
    wait_for 120 job_done "$id"
    job_field "$id" .reason
    run shoal logs "$id"
    echo "$output"
    [ "$(job_state "$id")" = completed ]
    # The tag names another image now; both ranks ran the first one.
    [ -d "$w/pushed" ]
    now=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$ref")
    [ "$now" != "$want" ]
    echo "$output" | grep -qx "r=0 os=shoaltest"
    echo "$output" | grep -qx "r=1 os=shoaltest"
    # Resolved once, on the first node; the job and both nodes name it.
    [ "$(wc -l <"$w/resolved")" = 1 ]
    [ "$(job_field "$id" .image_digest)" = "$want" ]
    shoal show "$id" | grep -q "^image digest: *$want\$"
    [ "$(jq -r .digest "$(run_dir "$id" node1)/image.json")" = "$want" ]
    [ "$(jq -r .digest "$(run_dir "$id" node2)/image.json")" = "$want" ]
    # A new job resolves the tag again, once: the second image.
    b=$(submit --user "$CUSER" --nodes 2 --gpus 1 --image "$ref" -- \
        sh -c '. /etc/os-release; echo "r=$RANK os=$ID"')
    wait_for 120 job_done "$b"
    [ "$(job_state "$b")" = completed ]
    shoal logs "$b" | grep -qx "r=0 os=shoaltest2"
    shoal logs "$b" | grep -qx "r=1 os=shoaltest2"
    [ "$(job_field "$b" .image_digest)" = "$now" ]
    [ "$(wc -l <"$w/resolved")" = 2 ]
}

@test "ctr-018 a node that cannot get the first node's digest fails the job with the reason" {
    shoald_start
    REG_STORAGE=$'  delete:\n    enabled: true\n' reg_start
    ref="127.0.0.1:$REG_PORT/test/busybox:3"
    skopeo --insecure-policy copy --quiet --dest-tls-verify=false \
        "oci-archive:$CTR_IMG_DIR/busybox.tar" "docker://$ref"
    want=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$ref")
    # The nodes' skopeo: the first copy by digest (the first node's pull)
    # deletes that manifest from the registry once done; the other node
    # asks for it only after that.
    w="$SHOAL_TEST_DIR/wrap"
    mkdir -p "$w"
    {
        printf '#!/bin/sh\ncase " $* " in\n'
        printf '*" inspect --raw "*"@sha256:"*)\n'
        printf '    i=0; while [ ! -e "%s/deleted" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done ;;\n' "$w"
        printf 'esac\n/usr/bin/skopeo "$@"\nrc=$?\ncase " $* " in\n'
        printf '*" copy "*"@sha256:"*)\n'
        printf '    if [ $rc = 0 ] && mkdir "%s/copied" 2>/dev/null; then\n' "$w"
        printf '        curl -sf -X DELETE "http://127.0.0.1:%s/v2/test/busybox/manifests/%s" >&2 && touch "%s/deleted"\n' \
            "$REG_PORT" "$want" "$w"
        printf '    fi ;;\nesac\nexit $rc\n'
    } >"$w/skopeo"
    chmod 0755 "$w/skopeo"
    AGENT_PREFIX="env PATH=$w:$PATH" agent_start node1 1 H100-80GB --image-tls-insecure
    AGENT_PREFIX="env PATH=$w:$PATH" agent_start node2 1 H100-80GB --image-tls-insecure
    wait_for 20 nodes_up_is 2
    open_test_dir
    id=$(submit --user "$CUSER" --nodes 2 --gpus 1 --image "$ref" -- sleep 1000)
    wait_for 120 job_done "$id"
    job_field "$id" .reason
    [ -e "$w/deleted" ]
    [ "$(job_state "$id")" = failed ]
    [ "$(job_field "$id" .image_digest)" = "$want" ]
    job_field "$id" .reason | grep -q "image docker://$ref: cannot get $want (the digest the job's first node resolved it to): .*manifest unknown"
}

@test "ctr-019 a registry password left by a killed pull is removed when the agent starts" {
    shoald_start
    # What a shim killed mid-pull leaves: its auth folder, with the file.
    imgs="$SHOAL_TEST_DIR/node1/images"
    mkdir -p "$imgs/auth-stale1" "$imgs/auth-inuse1" "$imgs/auth-fresh1"
    for d in stale1 inuse1 fresh1; do
        echo '{"auths":{"r.example":{"auth":"c2VjcmV0"}}}' >"$imgs/auth-$d/auth.json"
    done
    touch -d '1 hour ago' "$imgs/auth-stale1" "$imgs/auth-inuse1"
    # A pull still under way (a shim that outlived its agent) holds its lock.
    exec 9<"$imgs/auth-inuse1"
    flock 9
    agent_start node1 1 H100-80GB
    wait_for 20 nodes_up_is 1
    exec 9<&-
    [ ! -e "$imgs/auth-stale1" ]
    [ -e "$imgs/auth-inuse1/auth.json" ]
    [ -e "$imgs/auth-fresh1/auth.json" ]
}

@test "ctr-020 the container's user namespace maps only its user: host root is out of reach" {
    shoal_cluster_start 1 1
    open_test_dir
    own="$SHOAL_TEST_DIR/rootowned"
    mkdir -p "$own" && echo root-data >"$own/f" && chmod 0644 "$own/f"
    # Group and others may write this one: only a mapped root could chown it.
    echo root-data >"$own/g" && chmod 0666 "$own/g"
    uid=$(id -u "$CUSER")
    probe='echo uidmap; cat /proc/self/uid_map; echo gidmap; cat /proc/self/gid_map;
echo "id=$(id -u)"; ls -ln /own/f;
echo x >> /own/f 2>/dev/null && echo wrote || echo f=refused;
busybox chown 0 /own/g 2>/dev/null && echo chowned || echo g=refused'
    id=$(submit --user "$CUSER" --image "$IMG" --container-mounts "$own:/own" -- sh -c "$probe")
    wait_for 60 job_done "$id"
    run shoal logs "$id"
    echo "$output"
    [ "$(job_state "$id")" = completed ]
    maps=$(echo "$output" | awk '/^uidmap$/ {m = "u"; next} /^gidmap$/ {m = "g"; next}
        /^id=/ {m = ""} m != "" {print m, $1, $2, $3}')
    # The host's map is the whole range; the container's holds the user alone.
    [ "$(awk '{print $1, $2, $3}' /proc/self/uid_map)" = "0 0 4294967295" ]
    [ "$(echo "$maps" | grep '^u ')" = "u $uid $uid 1" ]
    echo "$maps" | grep -q "^g $(id -g "$CUSER") $(id -g "$CUSER") 1$"
    if echo "$maps" | grep -q '^g 0 '; then false; fi
    echo "$output" | grep -qx "id=$uid"
    # Root is not mapped: its files are nobody's inside.
    [ "$(echo "$output" | awk '$NF == "/own/f" {print $3 ":" $4}')" = "65534:65534" ]
    echo "$output" | grep -qx f=refused
    echo "$output" | grep -qx g=refused
    [ "$(cat "$own/f")" = root-data ]
    [ "$(stat -c %u "$own/g")" = 0 ]
}

@test "ctr-021 a stale copy in the cache's incoming/ is removed at start and after a pull" {
    shoald_start
    inc="$SHOAL_TEST_DIR/node1/images/incoming"
    mkdir -p "$inc" && chmod 0711 "$SHOAL_TEST_DIR/node1/images" "$inc"
    # What a pull killed mid-copy leaves: the user's folder, with a copy.
    mkdir -p "$inc/stale1/layout/blobs" "$inc/stale2" "$inc/held1/layout" \
        "$inc/stale1/a/b/c" "$inc/old1"
    head -c 65536 /dev/urandom >"$inc/stale1/layout/blobs/x"
    : >"$inc/stale1.lock"
    : >"$inc/stale2.lock"
    # Planted by the user: a link to a root file, which must survive.
    echo keep >"$BATS_TEST_TMPDIR/rootfile"
    ln -s "$BATS_TEST_TMPDIR/rootfile" "$inc/stale1/a/b/c/link"
    ln -s "$BATS_TEST_TMPDIR" "$inc/stale1/a/dirlink"
    id -u "$CUSER" >/dev/null
    chown -R "$CUSER" "$inc/stale1" "$inc/stale2" "$inc/held1" "$inc/old1"
    chmod 0700 "$inc/stale1" "$inc/held1" "$inc/old1"
    chmod 0000 "$inc/stale2"
    # A stopped process of the user inside the stale copy stalls nothing:
    # no process of the user takes part in its removal.
    (cd "$inc/stale1/a/b" && exec setpriv --reuid="$CUSER" \
        --regid="$(id -g "$CUSER")" --clear-groups sleep 600) &
    inside=$!
    record_pid "$inside"
    wait_for 10 sh -c "readlink /proc/$inside/cwd | grep -q '/a/b\$'"
    kill -STOP "$inside"
    # A pull still under way (a shim that outlived its agent) holds its lock.
    # (Held by a process of its own: the agent must not inherit it.)
    : >"$inc/held1.lock"
    sh -c 'exec 9<"$1"; flock 9; exec sleep 600' _ "$inc/held1.lock" &
    holder=$!
    record_pid "$holder"
    wait_for 10 sh -c "! flock -n '$inc/held1.lock' true"
    agent_start node1 1 H100-80GB
    wait_for 20 nodes_up_is 1
    [ ! -e "$inc/stale1" ]
    [ ! -e "$inc/stale1.lock" ]
    [ ! -e "$inc/stale2" ]
    [ ! -e "$inc/stale2.lock" ]
    [ ! -e "$inc/.trash" ]
    [ "$(cat "$BATS_TEST_TMPDIR/rootfile")" = keep ]
    [ -d "$BATS_TEST_TMPDIR" ]
    kill -CONT "$inside"
    kill "$inside"
    [ -e "$inc/held1/layout" ]
    [ -e "$inc/held1.lock" ]
    # A folder without a lock (a shim older than the lock) is given time.
    [ -d "$inc/old1" ]
    # Its pull is gone; the next pull's end sweeps it.
    kill "$holder"
    wait_for 10 flock -n "$inc/held1.lock" true
    open_test_dir
    a=$(submit --user "$CUSER" --image "$IMG" -- echo ran)
    wait_for 60 job_done "$a"
    [ "$(job_state "$a")" = completed ]
    [ "$(ls -A "$inc")" = old1 ]
}

@test "ctr-022 a run adopted without its notes still reports its image's digest" {
    # Silence of the stopped agent below is not a lost node.
    shoald_start --heartbeat-timeout 120s
    reg_start
    AGENT_KEEP_JOBS=1 agent_start node1 1 H100-80GB --image-tls-insecure
    wait_for 20 nodes_up_is 1
    open_test_dir
    skopeo --insecure-policy copy --quiet --dest-tls-verify=false \
        "oci-archive:$CTR_IMG_DIR/busybox.tar" "docker://127.0.0.1:$REG_PORT/test/busybox:1"
    ref="127.0.0.1:$REG_PORT/test/busybox:1"
    want=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$ref")
    # The registry stopped, the shim's resolution waits on it; the agent
    # is stopped once it noted the run, so the digest and the job's end
    # come while it is away, unreported.
    kill -STOP "$REG_PID"
    id=$(submit --user "$CUSER" --image "$ref" -- true)
    d=$(run_dir "$id")
    wait_for 30 test -s "$d/run.json"
    kill -STOP "$(agent_pid node1)"
    kill -CONT "$REG_PID"
    wait_for 90 test -s "$d/status.json"
    [ "$(cat "$d/digest")" = "$want" ]
    [ -z "$(job_field "$id" ".image_digest // empty")" ]
    # As if the agent had ended between the spawn and the notes' first
    # save: the restarted one adopts the run from its work entry alone.
    kill -9 "$(agent_pid node1)"
    rm "$d/run.json"
    AGENT_KEEP_JOBS=1 agent_start node1 1 H100-80GB --image-tls-insecure
    wait_for 60 job_done "$id"
    [ "$(job_field "$id" .image_digest)" = "$want" ]
}

@test "ctr-023 a job in an image opens its GPU read-write, has a name and a HOME" {
    shoal_cluster_start 1 1
    open_test_dir
    # A user whose home is neither on the node nor in the image.
    huser=shoalctrh
    if ! id "$huser" >/dev/null 2>&1; then
        useradd -M -d /nonexistent/shoalctrh -s /bin/sh -u 23458 "$huser" 2>/dev/null ||
            useradd -M -d /nonexistent/shoalctrh -s /bin/sh "$huser"
    fi
    API_TOKEN=$SHOAL_TOKEN api POST /v1/users "{\"name\":\"$huser\"}"
    cat >"$SHOAL_TEST_DIR/probe.sh" <<'EOF'
ls -l /dev/nvidia0 | awk '{print "mode=" $1}'
if (exec 3<>/dev/nvidia0) 2>/tmp/err.$$; then echo open=ok; else echo "open=$(cat /tmp/err.$$)"; fi
echo "who=$(whoami)"
echo "group=$(id -gn)"
echo "home=$HOME"
echo "umask=$(umask)"
echo ok >~/x && echo "homefile=$(cat ~/x)"
awk '$5 == "/sys" {split($6, o, ","); print "sys=" o[1]}' /proc/self/mountinfo
awk '$5 ~ "^/sys/" {f = "," $6 ","; print "sub=" $5 (f ~ ",ro," ? " ro" : " rw")}' /proc/self/mountinfo
EOF
    chmod 0644 "$SHOAL_TEST_DIR/probe.sh"
    for u in "$CUSER" "$huser"; do
        id=$(submit --user "$u" -D /tmp --gpus 1 --image "$IMG" "$SHOAL_TEST_DIR/probe.sh")
        wait_for 60 job_done "$id"
        run shoal logs "$id"
        echo "$output"
        [ "$(job_state "$id")" = completed ]
        # The node's mode: anyone may open it (the devices cgroup fences it).
        echo "$output" | grep -qx "mode=crw-rw-rw-"
        # Past the permission check: a simulated GPU has no driver behind it.
        echo "$output" | grep -q "^open=.*No such device or address"
        echo "$output" | grep -qx "who=$u"
        echo "$output" | grep -qx "group=$(id -gn "$u")"
        echo "$output" | grep -qx "home=$(getent passwd "$u" | cut -d: -f6)"
        echo "$output" | grep -qx "homefile=ok"
        # crun runs with umask 0 (the device nodes); the job does not.
        echo "$output" | grep -qx "umask=0022"
        echo "$output" | grep -qx "sys=ro"
        # Every mount below it too (crun's masks; the node's cgroup mounts
        # where crun binds them).
        echo "$output" | grep -q "^sub=/sys/.* ro$"
        if echo "$output" | grep -q "^sub=.* rw$"; then false; fi
    done
    # The per-run home was the job's only.
    [ ! -e /nonexistent/shoalctrh ]
}

@test "ctr-024 an image over --image-max-size or --image-max-files fails the job" {
    [ -f "$CTR_IMG_DIR/busybox-many.tar" ] || skip "the images over the caps could not be built"
    shoald_start
    agent_start node1 1 H100-80GB --image-max-size 32M --image-max-files 100
    wait_for 20 nodes_up_is 1
    open_test_dir
    bundles="$SHOAL_TEST_DIR/node1/images/bundles"
    # 64 MiB of zeros in a small archive: stopped while it unpacks.
    a=$(submit --user "$CUSER" --image "oci-archive:$CTR_IMG_DIR/busybox-big.tar" -- echo never)
    wait_for 60 job_done "$a"
    [ "$(job_state "$a")" = failed ]
    job_field "$a" .reason | grep -q "busybox-big.tar unpacks to more than 32M (--image-max-size)"
    b=$(submit --user "$CUSER" --image "oci-archive:$CTR_IMG_DIR/busybox-many.tar" -- echo never)
    wait_for 60 job_done "$b"
    [ "$(job_state "$b")" = failed ]
    job_field "$b" .reason | grep -q "busybox-many.tar unpacks to more than 100 files and folders (--image-max-files)"
    # Nothing of them stays: no bundle, no partial one.
    [ -z "$(find "$bundles" -mindepth 1 -maxdepth 1 -type d)" ]
    # An image under the caps runs.
    c=$(submit --user "$CUSER" --image "$IMG" -- echo ran)
    wait_for 60 job_done "$c"
    [ "$(job_state "$c")" = completed ]
    [ "$(find "$bundles" -mindepth 1 -maxdepth 1 -type d | wc -l)" = 1 ]
}

@test "ctr-025 an image larger than the whole image cache fails the job" {
    [ -f "$CTR_IMG_DIR/busybox-big.tar" ] || skip "the images over the caps could not be built"
    shoald_start
    agent_start node1 1 H100-80GB --image-cache-size 16M
    wait_for 20 nodes_up_is 1
    open_test_dir
    bundles="$SHOAL_TEST_DIR/node1/images/bundles"
    a=$(submit --user "$CUSER" --image "oci-archive:$CTR_IMG_DIR/busybox-big.tar" -- echo never)
    wait_for 60 job_done "$a"
    [ "$(job_state "$a")" = failed ]
    job_field "$a" .reason | grep -q "busybox-big.tar does not fit the node's image cache of 16M (--image-cache-size)"
    [ -z "$(find "$bundles" -mindepth 1 -maxdepth 1 -type d)" ]
    [ "$(du -sm "$SHOAL_TEST_DIR/node1/images" | cut -f1)" -lt 16 ]
}

@test "ctr-026 a volume at a path the node lacks reaches a job in an image" {
    shoal_cluster_start 1 1
    open_test_dir
    share="$SHOAL_TEST_DIR/share"
    mkdir -p "$share" && echo hello-volume >"$share/note"
    shoal volume create data --host "$share"
    top="/shoal-ctr026-$$"
    id=$(submit --user "$CUSER" -D /tmp --image "$IMG" -v "data:$top/d" -- cat "$top/d/note")
    wait_for 60 job_done "$id"
    run shoal logs "$id"
    echo "$output"
    [ "$(job_state "$id")" = completed ]
    [ "$output" = hello-volume ]
    [ ! -e "$top" ]
}

# A copy of the test layout whose image t declares SIZE bytes for its first
# layer (the manifest rewritten, its digest and the index with it).
forge_layer_size() {
    local x=$1 size=$2 m new len
    cp -r "$CTR_IMG_DIR/L" "$x"
    m=$(jq -r '.manifests[] | select(.annotations."org.opencontainers.image.ref.name" == "t") | .digest' "$x/index.json")
    jq -c '.layers[0].size = "SIZE"' "$x/blobs/sha256/${m#sha256:}" |
        sed "s/\"SIZE\"/$size/" | tr -d '\n' >"$x/m.json"
    new=$(sha256sum "$x/m.json" | cut -d' ' -f1)
    len=$(stat -c %s "$x/m.json")
    mv "$x/m.json" "$x/blobs/sha256/$new"
    jq -c --arg d "sha256:$new" --argjson n "$len" \
        '.manifests |= map(select(.annotations."org.opencontainers.image.ref.name" == "t") | .digest = $d | .size = $n)' \
        "$CTR_IMG_DIR/L/index.json" >"$x/index.json"
    chmod -R a+rX "$x"
}

@test "ctr-027 an image declaring layers past the cache evicts nothing and fails" {
    shoald_start
    agent_start node1 1 H100-80GB --image-cache-size 64M
    wait_for 20 nodes_up_is 1
    open_test_dir
    chmod 0755 "$SHOAL_TEST_DIR"
    bundles="$SHOAL_TEST_DIR/node1/images/bundles"
    a=$(submit --user "$CUSER" --image "$IMG" -- echo first)
    wait_for 60 job_done "$a"
    [ "$(job_state "$a")" = completed ]
    d1=$(jq -r .digest "$(run_dir "$a")/image.json")
    [ -d "$bundles/${d1#sha256:}" ]
    forge_layer_size "$SHOAL_TEST_DIR/huge" 4611686018427387904
    forge_layer_size "$SHOAL_TEST_DIR/negative" -5
    b=$(submit --user "$CUSER" --image "oci:$SHOAL_TEST_DIR/huge:t" -- echo never)
    wait_for 60 job_done "$b"
    c=$(submit --user "$CUSER" --image "oci:$SHOAL_TEST_DIR/negative:t" -- echo never)
    wait_for 60 job_done "$c"
    job_field "$b" .reason
    job_field "$c" .reason
    [ "$(job_state "$b")" = failed ]
    [ "$(job_state "$c")" = failed ]
    job_field "$b" .reason | grep -q "does not fit the node's image cache of 64M (--image-cache-size): its manifest declares 4611686018427387904 bytes of layers"
    job_field "$c" .reason | grep -q "its manifest declares a layer size that is not a size: refused"
    # The cached image no run held is still there.
    [ -d "$bundles/${d1#sha256:}" ]
}
