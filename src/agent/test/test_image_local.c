/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: local images are opened as the job's user and checked before the
 * cache is used (image.c, user_open.c): an archive must be a regular file
 * (a FIFO or a device fails at once, never blocks), a layout a folder; a
 * file the user may not read is refused even to root; a layout whose index
 * names a digest its manifest does not hash to is refused; the cache's
 * index is read by tag. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/image.h"
#include "agent/user_open.h"

static char tmp[256];

static void make_tmp(void)
{
    snprintf(tmp, sizeof(tmp), "/tmp/shoal-imgtest-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
}

static void cleanup(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    cr_assert_eq(system(cmd), 0);
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

TestSuite(image_local, .init = make_tmp, .fini = cleanup);

Test(image_local, index_gives_the_tagged_digest)
{
    const char *idx =
        "{\"schemaVersion\":2,\"manifests\":["
        "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
        "\"digest\":\"sha256:aa\",\"size\":1,\"annotations\":"
        "{\"org.opencontainers.image.ref.name\":\"one\"}},"
        "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
        "\"digest\":\"sha256:bb\",\"size\":1,\"annotations\":"
        "{\"org.opencontainers.image.ref.name\":\"two\"}}]}";
    char *d = image_index_tag_digest(idx, "two");
    cr_assert_str_eq(d, "sha256:bb");
    free(d);
    cr_assert_null(image_index_tag_digest(idx, "three"));
    /* Two manifests and no tag: no single answer. */
    cr_assert_null(image_index_tag_digest(idx, NULL));
    cr_assert_null(image_index_tag_digest("not json", "one"));
    cr_assert_null(image_index_tag_digest(NULL, "one"));
}

Test(image_local, sha256_compares_the_bytes)
{
    const char *e3 =
        "sha256:"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    cr_assert(image_sha256_is("", 0, e3));
    cr_assert_not(image_sha256_is("x", 1, e3));
    cr_assert_not(image_sha256_is("", 0, e3 + 7)); /* no algorithm */
}

Test(image_local, only_the_right_type_is_opened)
{
    char fifo[300], file[300];
    snprintf(fifo, sizeof(fifo), "%s/fifo", tmp);
    snprintf(file, sizeof(file), "%s/file", tmp);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    put(file, "x");
    int err = 0;
    /* A FIFO nobody writes to: refused at once, not a blocked open. */
    cr_assert_eq(user_open_read(fifo, NULL, S_IFREG, &err), -1);
    cr_assert_eq(err, EMEDIUMTYPE);
    cr_assert_eq(user_open_read("/dev/null", NULL, S_IFREG, &err), -1);
    cr_assert_eq(err, EMEDIUMTYPE);
    cr_assert_eq(user_open_read(tmp, NULL, S_IFREG, &err), -1);
    cr_assert_eq(err, EMEDIUMTYPE);
    cr_assert_eq(user_open_read(file, NULL, S_IFDIR, &err), -1);
    cr_assert_eq(err, EMEDIUMTYPE);
    int fd = user_open_read(file, NULL, S_IFREG, &err);
    cr_assert_geq(fd, 0);
    char c;
    cr_assert_eq(read(fd, &c, 1), 1);
    cr_assert_eq(c, 'x');
    close(fd);
    fd = user_open_read(tmp, NULL, S_IFDIR, &err);
    cr_assert_geq(fd, 0);
    close(fd);
}

Test(image_local, a_file_its_user_may_not_read_is_refused_to_root)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to become another user");
    char file[300];
    snprintf(file, sizeof(file), "%s/secret", tmp);
    put(file, "secret");
    cr_assert_eq(chmod(file, 0600), 0);
    cr_assert_eq(chmod(tmp, 0755), 0);
    gid_t g = 65534;
    struct user_creds nobody = {65534, 65534, &g, 1};
    int err = 0;
    cr_assert_eq(user_open_read(file, &nobody, S_IFREG, &err), -1);
    cr_assert_eq(err, EACCES);
    cr_assert_eq(chmod(file, 0644), 0);
    int fd = user_open_read(file, &nobody, S_IFREG, &err);
    cr_assert_geq(fd, 0, "errno %d", err);
    close(fd);
}

Test(image_local, a_fifo_archive_fails_the_prepare_at_once)
{
    char fifo[300], cache[300], ref[400], why[512];
    snprintf(fifo, sizeof(fifo), "%s/img.tar", tmp);
    snprintf(cache, sizeof(cache), "%s/cache", tmp);
    snprintf(ref, sizeof(ref), "oci-archive:%s", fifo);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    struct image_cache_cfg cfg = {.dir = cache};
    struct image_bundle b;
    cr_assert_eq(
        image_prepare(&cfg, ref, NULL, NULL, NULL, NULL, &b, why, sizeof(why)),
        -1);
    cr_assert(strstr(why, "not a regular file"), "%s", why);
    snprintf(ref, sizeof(ref), "oci:%s:t", fifo);
    cr_assert_eq(
        image_prepare(&cfg, ref, NULL, NULL, NULL, NULL, &b, why, sizeof(why)),
        -1);
    cr_assert(strstr(why, "not a folder"), "%s", why);
}

Test(image_local, a_layout_naming_a_digest_it_does_not_hold_is_refused)
{
    /* The index names the digest of "{}" but the blob so named holds
     * something else: the cache (holding that digest or not) is not used. */
    const char *d =
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
    char path[400], cache[300], ref[400], why[512];
    snprintf(path, sizeof(path), "%s/L", tmp);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/L/blobs", tmp);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/L/blobs/sha256", tmp);
    cr_assert_eq(mkdir(path, 0755), 0);
    char idx[1024];
    snprintf(idx, sizeof(idx),
             "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
             "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":"
             "\"sha256:%s\",\"size\":2,\"annotations\":{"
             "\"org.opencontainers.image.ref.name\":\"t\"}}]}",
             d);
    snprintf(path, sizeof(path), "%s/L/index.json", tmp);
    put(path, idx);
    snprintf(path, sizeof(path), "%s/L/blobs/sha256/%s", tmp, d);
    put(path, "{\"other\":1}");
    snprintf(cache, sizeof(cache), "%s/cache", tmp);
    /* As if the cache held that digest already. */
    char bundle[500];
    snprintf(bundle, sizeof(bundle), "%s/bundles/%s/rootfs", cache, d);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "mkdir -p %s", bundle);
    cr_assert_eq(system(cmd), 0);
    snprintf(ref, sizeof(ref), "oci:%s/L:t", tmp);
    struct image_cache_cfg cfg = {.dir = cache};
    struct image_bundle b;
    cr_assert_eq(
        image_prepare(&cfg, ref, NULL, NULL, NULL, NULL, &b, why, sizeof(why)),
        -1);
    cr_assert(strstr(why, "does not match the digest its index names"), "%s",
              why);
    /* With the right bytes it is the cached bundle. */
    put(path, "{}");
    cr_assert_eq(
        image_prepare(&cfg, ref, NULL, NULL, NULL, NULL, &b, why, sizeof(why)),
        0, "%s", why);
    cr_assert_not(b.unpacked);
    image_bundle_release(&b);
}

Test(image_local, a_copy_that_is_not_the_digest_is_removed_and_refused)
{
    /* A stand-in skopeo whose copy holds other bytes under the digest
     * (what a source changed between the check and the copy would give):
     * root takes only what hashes to the digest, so nothing. */
    const char *d =
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
    char path[600], cmd[1200], why[512], ref[400], cache[300];
    snprintf(cmd, sizeof(cmd),
             "mkdir -p %s/bin %s/L/blobs/sha256 && printf '{}' "
             ">%s/L/blobs/sha256/%s",
             tmp, tmp, tmp, d);
    cr_assert_eq(system(cmd), 0);
    snprintf(path, sizeof(path), "%s/L/index.json", tmp);
    char idx[1024];
    snprintf(idx, sizeof(idx),
             "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
             "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":"
             "\"sha256:%s\",\"size\":2,\"annotations\":{"
             "\"org.opencontainers.image.ref.name\":\"t\"}}]}",
             d);
    put(path, idx);
    snprintf(path, sizeof(path), "%s/bin/skopeo", tmp);
    put(path, "#!/bin/sh\n"
              "l=${5#oci:}; hex=${l##*:}; l=${l%:*}; mkdir -p \"$l\"\n"
              "printf '{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
              "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":"
              "\"sha256:%064d\",\"size\":2,\"annotations\":{"
              "\"org.opencontainers.image.ref.name\":\"%s\"}}]}' 0 \"$hex\" "
              ">\"$l/index.json\"\n"
              "mkdir -p \"$l/blobs/sha256\"; printf '{\"x\":1}' "
              ">\"$l/blobs/sha256/$hex\"\n");
    cr_assert_eq(chmod(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/bin/umoci", tmp);
    snprintf(cmd, sizeof(cmd), "#!/bin/sh\necho \"$@\" >>%s/umoci.log\n", tmp);
    put(path, cmd);
    cr_assert_eq(chmod(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/bin:%s", tmp, getenv("PATH"));
    setenv("PATH", path, 1);
    snprintf(cache, sizeof(cache), "%s/cache", tmp);
    snprintf(ref, sizeof(ref), "oci:%s/L:t", tmp);
    struct image_cache_cfg cfg = {.dir = cache};
    struct image_bundle b;
    cr_assert_eq(
        image_prepare(&cfg, ref, NULL, NULL, NULL, NULL, &b, why, sizeof(why)),
        -1);
    cr_assert(strstr(why, "the copy refused: its manifest does not hash to "
                          "sha256:"),
              "%s", why);
    /* Nothing of it in the cache, and the user's folder is gone. */
    snprintf(path, sizeof(path), "%s/oci/blobs/sha256/%s", cache, d);
    cr_assert_eq(access(path, F_OK), -1);
    snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s/incoming)\"", cache);
    cr_assert_eq(system(cmd), 0, "the user's copy was left");
    snprintf(path, sizeof(path), "%s/bundles/%s", cache, d);
    cr_assert_eq(access(path, F_OK), -1);
}

/* A stale copy nested deeper than the walk goes (folders moved up into the
 * trash) is removed whole by a few sweeps; a link planted in it is
 * removed, never followed: its target stays. A held lock keeps its copy. */
Test(image_local, a_deep_stale_copy_goes_and_links_are_not_followed)
{
    char path[8192], target[300];
    snprintf(target, sizeof(target), "%s/target", tmp);
    put(target, "keep");
    int n = snprintf(path, sizeof(path), "%s/incoming", tmp);
    cr_assert_eq(mkdir(path, 0711), 0);
    n += snprintf(path + n, sizeof(path) - n, "/stale");
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(mkdir(path, 0700), 0, "%s", path);
        char link[8300];
        snprintf(link, sizeof(link), "%s/link", path);
        cr_assert_eq(symlink(i % 2 ? target : tmp, link), 0);
        n += snprintf(path + n, sizeof(path) - n, "/d");
    }
    snprintf(path, sizeof(path), "%s/incoming/stale.lock", tmp);
    put(path, "");
    int sweeps = 0;
    while (image_sweep_incoming(tmp) && sweeps < 10)
        sweeps++;
    struct stat st;
    snprintf(path, sizeof(path), "%s/incoming/stale", tmp);
    cr_assert_eq(lstat(path, &st), -1);
    snprintf(path, sizeof(path), "%s/incoming/.trash", tmp);
    cr_assert_eq(lstat(path, &st), -1, "the trash goes once empty");
    cr_assert_eq(lstat(target, &st), 0);
    cr_assert_eq(st.st_size, 4);
}
