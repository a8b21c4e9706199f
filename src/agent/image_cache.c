/* SPDX-License-Identifier: Apache-2.0 */
/* The node's image cache on disk: sizes, removal, locks, eviction, the
 * cache's OCI layout and its index (see image.h, image_int.h). */
#include "agent/image_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ctype.h>
#include <ftw.h>
#include <grp.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/model/job_container.h"
#include "lib/util/file.h"
#include "lib/util/log.h"

/* ---- sizes and removal ---- */

static uint64_t du_total;

static int du_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)path;
    (void)flag;
    (void)ftw;
    du_total += (uint64_t)st->st_blocks * 512;
    return 0;
}

uint64_t image_du(const char *path)
{
    du_total = 0;
    nftw(path, du_one, 32, FTW_PHYS);
    return du_total;
}

static uint64_t usage_bytes, usage_entries;

static int usage_one(const char *path, const struct stat *st, int flag,
                     struct FTW *ftw)
{
    (void)path;
    (void)flag;
    if (ftw->level > 0) {
        usage_bytes += (uint64_t)st->st_blocks * 512;
        usage_entries++;
    }
    return 0;
}

void image_usage(const char *path, uint64_t *bytes, uint64_t *entries)
{
    usage_bytes = usage_entries = 0;
    nftw(path, usage_one, 32, FTW_PHYS);
    *bytes = usage_bytes;
    *entries = usage_entries;
}

/* ---- the cache ---- */

int image_lock_file(const char *path, int op)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    while (flock(fd, op) < 0) {
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

bool image_is_dir(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static uint64_t read_size(const char *path)
{
    FILE *f = fopen(path, "re");
    unsigned long long v = 0;
    if (f) {
        if (fscanf(f, "%llu", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v;
}

/* Remove least recently used bundles that no run holds until the cache
 * fits (keep: the bundle just made). Under the cache lock. */
void image_evict(const struct image_cache_cfg *cfg, const char *keep,
                 uint64_t reserve)
{
    char path[4200];
    for (;;) {
        snprintf(path, sizeof(path), "%s/bundles", cfg->dir);
        DIR *d = opendir(path);
        if (!d)
            return;
        uint64_t total = 0;
        char oldest[128] = "";
        time_t oldest_t = 0;
        int oldest_fd = -1;
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t n = strlen(e->d_name);
            if (n != 69 || strcmp(e->d_name + 64, ".size") != 0)
                continue;
            char hex[65];
            memcpy(hex, e->d_name, 64);
            hex[64] = '\0';
            snprintf(path, sizeof(path), "%s/bundles/%s", cfg->dir, e->d_name);
            total += read_size(path);
            snprintf(path, sizeof(path), "%s/bundles/%s.lock", cfg->dir, hex);
            struct stat st;
            if (strcmp(hex, keep) == 0 || stat(path, &st) < 0)
                continue;
            if (!oldest[0] || st.st_mtime < oldest_t) {
                /* In use when a run holds it shared; held here until it
                 * is gone, so no run starts on it meanwhile. */
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
                    snprintf(oldest, sizeof(oldest), "%s", hex);
                    oldest_t = st.st_mtime;
                    if (oldest_fd >= 0)
                        close(oldest_fd);
                    oldest_fd = fd;
                } else if (fd >= 0) {
                    close(fd);
                }
            }
        }
        closedir(d);
        snprintf(path, sizeof(path), "%s/oci", cfg->dir);
        total += image_du(path);
        if ((total <= cfg->max_bytes && reserve <= cfg->max_bytes - total) ||
            !oldest[0]) {
            if (oldest_fd >= 0)
                close(oldest_fd);
            return;
        }
        sh_log(LOG_INFO, "image",
               "evicting sha256:%s (cache %" PRIu64 " bytes, limit %" PRIu64
               ")",
               oldest, total, cfg->max_bytes);
        snprintf(path, sizeof(path), "%s/bundles/%s", cfg->dir, oldest);
        file_remove_tree(path);
        snprintf(path, sizeof(path), "%s/bundles/%s.size", cfg->dir, oldest);
        unlink(path);
        snprintf(path, sizeof(path), "%s/bundles/%s.lock", cfg->dir, oldest);
        unlink(path);
        close(oldest_fd);
        char ref[4300];
        snprintf(ref, sizeof(ref), "%s/oci:%s", cfg->dir, oldest);
        char layout[4200];
        snprintf(layout, sizeof(layout), "%s/oci", cfg->dir);
        struct tool_run r;
        char *rm[] = {"umoci", "rm", "--image", ref, NULL};
        if (image_tool_run(rm, &r, NULL, NULL, NULL) == 0) {
            free(r.out);
            char *gc[] = {"umoci", "gc", "--layout", layout, NULL};
            image_tool_run(gc, &r, NULL, NULL, NULL);
        }
        free(r.out);
    }
}

/* nftw callback: remove a device node (see drop_devices). */
static int drop_device(const char *path, const struct stat *st, int type,
                       struct FTW *ftw)
{
    (void)type;
    (void)ftw;
    if ((S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) && unlink(path) < 0)
        return -1;
    return 0;
}

/* An image's layers may hold device nodes (a disk, /dev/mem) that umoci,
 * unpacking as root, creates: a job that opened one would act as root on
 * the node. Mount flags cannot keep them shut (crun binds the rootfs onto
 * itself, which drops nodev), so the bundle keeps none: the job's GPUs
 * come through the container's own /dev. */
int image_drop_devices(const char *bundle)
{
    char rootfs[4300];
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", bundle);
    return nftw(rootfs, drop_device, 32, FTW_PHYS) == 0 ? 0 : -1;
}

/* What skopeo copied is what digest names: the cache's own index tags
 * hex(digest) with digest, or the copy is removed. 0, or -1 with why. */
int image_check_copy(struct pull *p, const char *transport, const char *digest,
                     char *why, size_t size)
{
    char path[4300];
    snprintf(path, sizeof(path), "%s/oci/index.json", p->cfg->dir);
    char *text = image_read_small(path, INDEX_MAX);
    char *got = image_index_tag_digest(text, digest + 7);
    free(text);
    bool ok = got && strcmp(got, digest) == 0;
    if (!ok) {
        snprintf(why, size,
                 "image %s: the copy is not %s (the node's cache got %s): "
                 "refused",
                 transport, digest, got ? got : "no such tag");
        sh_log(LOG_WARNING, "image", "%s", why);
        char ref[4400], layout[4200];
        snprintf(layout, sizeof(layout), "%s/oci", p->cfg->dir);
        snprintf(ref, sizeof(ref), "%s:%s", layout, digest + 7);
        struct tool_run r;
        char *rm[] = {"umoci", "rm", "--image", ref, NULL};
        if (image_tool_run(rm, &r, NULL, NULL, NULL) == 0) {
            free(r.out);
            char *gc[] = {"umoci", "gc", "--layout", layout, NULL};
            image_tool_run(gc, &r, NULL, NULL, NULL);
        }
        free(r.out);
    }
    free(got);
    return ok ? 0 : -1;
}

/* The cache's layout (oci/, root's alone), made when missing. */
int image_cache_layout(const struct image_cache_cfg *cfg, char *why,
                       size_t size)
{
    char path[4300];
    snprintf(path, sizeof(path), "%s/oci", cfg->dir);
    struct stat st;
    if ((mkdir(path, 0700) < 0 && errno != EEXIST) || lstat(path, &st) < 0 ||
        !S_ISDIR(st.st_mode) || chmod(path, 0700) < 0)
        goto fail;
    snprintf(path, sizeof(path), "%s/oci/blobs", cfg->dir);
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        goto fail;
    snprintf(path, sizeof(path), "%s/oci/blobs/sha256", cfg->dir);
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        goto fail;
    static const char *const files[][2] = {
        {"oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}\n"},
        {"index.json", "{\"schemaVersion\":2,\"manifests\":[]}\n"}};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/oci/%s", cfg->dir, files[i][0]);
        int fd = open(
            path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST)
            continue;
        size_t n = strlen(files[i][1]);
        if (fd < 0 || write(fd, files[i][1], n) != (ssize_t)n) {
            if (fd >= 0)
                close(fd);
            goto fail;
        }
        close(fd);
    }
    return 0;
fail:
    snprintf(why, size, "image cache %s: %s", path, strerror(errno));
    return -1;
}

/* Tag manifest digest (len bytes, of type) as its hex in the cache's
 * index. 0, or -1 with why. */
int image_cache_tag(const struct image_cache_cfg *cfg, const char *digest,
                    uint64_t len, const char *type, char *why, size_t size)
{
    char path[4300], tmp[4400];
    snprintf(path, sizeof(path), "%s/oci/index.json", cfg->dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    char *text = image_read_small(path, INDEX_MAX);
    json_error_t jerr;
    json_t *index = text ? json_loads(text, 0, &jerr) : NULL;
    free(text);
    if (!json_is_object(index)) {
        json_decref(index);
        index = json_pack("{si}", "schemaVersion", 2);
    }
    json_t *old = json_object_get(index, "manifests");
    json_t *ms = json_array();
    size_t i;
    json_t *m;
    json_array_foreach (old, i, m) {
        const char *ref = json_string_value(
            json_object_get(json_object_get(m, "annotations"),
                            "org.opencontainers.image.ref.name"));
        if (!ref || strcmp(ref, digest + 7) != 0)
            json_array_append(ms, m);
    }
    json_array_append_new(
        ms, json_pack("{ss ss sI s{ss}}", "mediaType", type, "digest", digest,
                      "size", (json_int_t)len, "annotations",
                      "org.opencontainers.image.ref.name", digest + 7));
    json_object_set_new(index, "manifests", ms);
    unlink(tmp);
    int rc = json_dump_file(index, tmp, JSON_COMPACT);
    json_decref(index);
    if (rc < 0 || rename(tmp, path) < 0) {
        snprintf(why, size, "image cache %s: cannot write", path);
        unlink(tmp);
        return -1;
    }
    return 0;
}
