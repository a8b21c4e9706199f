/* SPDX-License-Identifier: Apache-2.0 */
/* The node's image cache (see image.h): resolving a reference, pulling
 * and unpacking it, the registry's auth file. */
#include "agent/image.h"
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
#include "lib/util/clock.h"
#include "lib/util/file.h"
#include "lib/util/log.h"
#include "lib/util/parse.h"

/* ---- the pull ---- */

void image_fail(char *why, size_t size, const char *transport, const char *what,
                const struct tool_run *r)
{
    char msg[600];
    image_tool_error(r ? r->err : "", msg, sizeof(msg));
    snprintf(why, size, "image %s: %s: %s", transport, what, msg);
}

/* As fail, the cause (the message's last part, as "permission denied")
 * first: a job's reason is short, and a path in the message is long. */
void image_fail_cause(char *why, size_t size, const char *transport,
                      const char *what, const struct tool_run *r)
{
    char msg[600];
    image_tool_error(r ? r->err : "", msg, sizeof(msg));
    char *last = strstr(msg, ": ");
    for (char *c = last; c; c = strstr(c + 2, ": "))
        last = c;
    if (last) {
        *last = '\0';
        snprintf(why, size, "image %s: %s: %s (%s)", transport, what, last + 2,
                 msg);
    } else {
        snprintf(why, size, "image %s: %s: %s", transport, what, msg);
    }
}

void image_note(struct pull *p, const char *text)
{
    if (p->progress)
        p->progress(p->arg, text);
}

static void human(uint64_t b, char *buf, size_t size)
{
    if (b >= 1000ULL * 1000 * 1000)
        snprintf(buf, size, "%.1f GB", (double)b / 1e9);
    else if (b >= 1000ULL * 1000)
        snprintf(buf, size, "%.1f MB", (double)b / 1e6);
    else
        snprintf(buf, size, "%.1f kB", (double)b / 1e3);
}

/* The bytes of the regular files right in the user's copy's
 * layout/blobs/sha256, each folder opened from the pinned udir without
 * following links: root never walks the user's tree by path (a folder
 * swapped for a link mid-walk would lead it elsewhere). */
static uint64_t user_blobs_bytes(const struct pull *p)
{
    static const char *const names[] = {"layout", "blobs", "sha256"};
    int fd = p->udir_fd;
    for (size_t i = 0; fd >= 0 && i < sizeof(names) / sizeof(names[0]); i++) {
        int next = openat(fd, names[i],
                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd != p->udir_fd)
            close(fd);
        fd = next;
    }
    if (fd < 0)
        return 0;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return 0;
    }
    uint64_t sum = 0;
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d)) != NULL)
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode))
            sum += (uint64_t)st.st_blocks * 512;
    closedir(d);
    return sum;
}

int image_pull_tick(void *arg)
{
    struct pull *p = arg;
    if (!p->total && !p->cfg->max_bytes)
        return 0;
    uint64_t now = p->user_copying ? user_blobs_bytes(p) : image_du(p->blobs);
    uint64_t done = now > p->before ? now - p->before : 0;
    if (p->cfg->max_bytes && done > p->cfg->max_bytes) {
        /* The image alone outgrows the cache: nothing to evict helps. */
        char cap[32];
        format_size(p->cfg->max_bytes, cap, sizeof(cap));
        snprintf(p->over, sizeof(p->over),
                 "image %s does not fit the node's image cache of %s "
                 "(--image-cache-size)",
                 p->transport, cap);
        return -1;
    }
    if (!p->total)
        return 0;
    if (done > p->total)
        done = p->total;
    char a[32], b[32], text[96];
    human(done, a, sizeof(a));
    human(p->total, b, sizeof(b));
    snprintf(text, sizeof(text), "pulling image (%s / %s)", a, b);
    image_note(p, text);
    return 0;
}

/* Whether the bundle unpacked (or being unpacked) at dir is over one of
 * the caps: its bytes (--image-max-size, and the whole cache's size), its
 * entries (--image-max-files). p->over then says which. */
static bool unpack_over(struct pull *p, const char *dir)
{
    const struct image_cache_cfg *cfg = p->cfg;
    uint64_t bytes, entries;
    image_usage(dir, &bytes, &entries);
    char cap[32];
    if (cfg->max_unpacked && bytes > cfg->max_unpacked) {
        format_size(cfg->max_unpacked, cap, sizeof(cap));
        snprintf(p->over, sizeof(p->over),
                 "image %s unpacks to more than %s (--image-max-size)",
                 p->transport, cap);
        return true;
    }
    if (cfg->max_files && entries > cfg->max_files) {
        snprintf(p->over, sizeof(p->over),
                 "image %s unpacks to more than %" PRIu64
                 " files and folders (--image-max-files)",
                 p->transport, cfg->max_files);
        return true;
    }
    if (cfg->max_bytes && bytes > cfg->max_bytes) {
        format_size(cfg->max_bytes, cap, sizeof(cap));
        snprintf(p->over, sizeof(p->over),
                 "image %s does not fit the node's image cache of %s "
                 "(--image-cache-size)",
                 p->transport, cap);
        return true;
    }
    return false;
}

/* While umoci unpacks: the bundle so far, against the caps. A walk of a
 * large tree takes time, so walks keep to a sixth of the unpack's. */
static int unpack_tick(void *arg)
{
    struct pull *p = arg;
    int64_t t0 = clock_mono_ms();
    if (t0 < p->next_walk_ms)
        return 0;
    bool over = unpack_over(p, p->unpack_dir);
    p->next_walk_ms = t0 + 6 * (clock_mono_ms() - t0);
    return over ? -1 : 0;
}

/* A copy into the cache's layout stopped midway: its blobs, in no index,
 * are collected. */
static void collect_layout(const char *layout)
{
    struct tool_run r;
    char *gc[] = {"umoci", "gc", "--layout", (char *)layout, NULL};
    image_tool_run(gc, &r, NULL, NULL, NULL);
    free(r.out);
}

uint64_t image_manifest_bytes(const char *raw)
{
    json_error_t jerr;
    json_t *m = json_loads(raw, 0, &jerr);
    uint64_t sum = 0;
    size_t i;
    json_t *l;
    json_array_foreach (json_object_get(m, "layers"), i, l) {
        json_t *size = json_object_get(l, "size");
        if (!size)
            continue;
        json_int_t n = json_integer_value(size);
        if (!json_is_integer(size) || n < 0 ||
            (uint64_t)n >= IMAGE_BYTES_BAD - sum) {
            sum = IMAGE_BYTES_BAD;
            break;
        }
        sum += (uint64_t)n;
    }
    json_decref(m);
    return sum;
}

static int resolve(struct pull *p, const char *transport, char *digest,
                   size_t dsize, char *why, size_t size)
{
    if (image_resolve_local(p, digest, dsize) == 0)
        return image_verify_local(p, transport, digest, why, size);
    const char *tls =
        p->cfg->tls_verify ? "--tls-verify=true" : "--tls-verify=false";
    bool docker = strncmp(transport, "docker://", 9) == 0;
    /* A local image is read by skopeo run as the job's user, from the
     * path the user gave: root never looks it up. */
    const struct tool_as *as = image_is_local(transport) ? &p->as : NULL;
    char *argv[12] = {"skopeo",   "--insecure-policy", "inspect",
                      "--format", "{{.Digest}}",       "--no-tags"};
    int n = 6;
    if (docker) {
        argv[n++] = (char *)tls;
        argv[n++] = "--authfile";
        argv[n++] = p->authfile;
    }
    argv[n++] = as ? (char *)transport : p->src;
    argv[n] = NULL;
    struct tool_run r;
    if (image_tool_run(argv, &r, NULL, NULL, as) < 0) {
        snprintf(why, size, "image %s: cannot run skopeo: %s", transport,
                 strerror(errno));
        free(r.out);
        return -1;
    }
    if (!image_tool_ok(&r)) {
        char what[200] = "cannot resolve";
        if (docker && p->cfg->auth_secret)
            snprintf(what, sizeof(what),
                     "cannot resolve with the credentials of secret %s",
                     p->cfg->auth_secret);
        if (docker)
            image_fail_cause(why, size, transport, what, &r);
        else
            image_fail(why, size, transport, what, &r);
        free(r.out);
        return -1;
    }
    r.out[strcspn(r.out, "\r\n ")] = '\0';
    if (strncmp(r.out, "sha256:", 7) != 0 || strlen(r.out) != 71) {
        snprintf(why, size, "image %s: skopeo gave no digest", transport);
        free(r.out);
        return -1;
    }
    snprintf(digest, dsize, "%s", r.out);
    free(r.out);
    if (image_is_local(transport))
        return image_verify_local(p, transport, digest, why, size);
    /* The layers' size, for the progress (best effort). */
    char *raw[10] = {"skopeo", "--insecure-policy", "inspect", "--raw"};
    n = 4;
    if (docker) {
        raw[n++] = (char *)tls;
        raw[n++] = "--authfile";
        raw[n++] = p->authfile;
    }
    raw[n++] = p->src;
    raw[n] = NULL;
    if (image_tool_run(raw, &r, NULL, NULL, NULL) == 0 && image_tool_ok(&r))
        p->total = image_manifest_bytes(r.out);
    free(r.out);
    return 0;
}

/* A registry image's transport naming digest instead of its tag
 * (docker://host/name@sha256:HEX) into buf. */
static void by_digest(const char *transport, const char *digest, char *buf,
                      size_t size)
{
    const char *at = strchr(transport, '@');
    const char *name = transport + 9;
    const char *slash = strrchr(name, '/');
    const char *colon = strrchr(slash ? slash : name, ':');
    size_t n = at      ? (size_t)(at - transport)
               : colon ? (size_t)(colon - transport)
                       : strlen(transport);
    snprintf(buf, size, "%.*s@%s", (int)n, transport, digest);
}

/* The digest is given (cfg->digest, resolved on the job's first node):
 * a local image must hold its manifest; a registry must still have it
 * (its manifest gives the progress's total). 0, or -1 with why. */
static int resolve_given(struct pull *p, const char *transport, char *why,
                         size_t size)
{
    const char *digest = p->cfg->digest;
    if (image_is_local(transport))
        return image_verify_local(p, transport, digest, why, size);
    char src[4400];
    by_digest(transport, digest, src, sizeof(src));
    const char *tls =
        p->cfg->tls_verify ? "--tls-verify=true" : "--tls-verify=false";
    char *raw[10] = {"skopeo",    "--insecure-policy", "inspect",   "--raw",
                     (char *)tls, "--authfile",        p->authfile, src,
                     NULL};
    struct tool_run r;
    if (image_tool_run(raw, &r, NULL, NULL, NULL) < 0) {
        snprintf(why, size, "image %s: cannot run skopeo: %s", transport,
                 strerror(errno));
        free(r.out);
        return -1;
    }
    if (!image_tool_ok(&r)) {
        char what[200];
        snprintf(what, sizeof(what),
                 "cannot get %s (the digest the job's first node resolved it "
                 "to)",
                 digest);
        image_fail_cause(why, size, transport, what, &r);
        free(r.out);
        return -1;
    }
    p->total = image_manifest_bytes(r.out);
    free(r.out);
    return 0;
}

/* Copy and unpack digest hex into bundles/HEX. Under the cache lock. */
static int pull_and_unpack(struct pull *p, const char *transport,
                           const char *digest, char *why, size_t size)
{
    const struct image_cache_cfg *cfg = p->cfg;
    const char *hex = digest + 7;
    char layout[4200], dst[4300], tmp[4300], final[4300];
    snprintf(layout, sizeof(layout), "%s/oci", cfg->dir);
    snprintf(dst, sizeof(dst), "oci:%s:%s", layout, hex);
    snprintf(p->blobs, sizeof(p->blobs), "%s/blobs/sha256", layout);
    /* The layers' size is what the manifest declares, unchecked so far:
     * one that is no size, or more than the whole cache, evicts nothing
     * and fails the job (as an image that unpacks past it would). */
    if (p->total == IMAGE_BYTES_BAD) {
        snprintf(why, size,
                 "image %s: its manifest declares a layer size that is not "
                 "a size: refused",
                 transport);
        return -1;
    }
    if (cfg->max_bytes && p->total > cfg->max_bytes) {
        char cap[32];
        format_size(cfg->max_bytes, cap, sizeof(cap));
        snprintf(why, size,
                 "image %s does not fit the node's image cache of %s "
                 "(--image-cache-size): its manifest declares %" PRIu64
                 " bytes of layers",
                 transport, cap, p->total);
        return -1;
    }
    /* Room first: the cache stays within its size while it pulls (as far
     * as the images no run holds allow). */
    if (cfg->max_bytes)
        image_evict(cfg, hex, p->total);
    p->before = image_du(p->blobs);
    image_note(p, "pulling image");
    /* Copy what the digest names, not what a tag names now. */
    char src[4400];
    if (strncmp(transport, "docker://", 9) == 0) {
        by_digest(transport, digest, src, sizeof(src));
    } else {
        snprintf(src, sizeof(src), "%s", p->src);
    }
    if (image_is_local(transport) && !p->copied) {
        snprintf(why, size, "image %s: not copied as the job's user",
                 transport);
        return -1;
    }
    if (p->copied) {
        /* A local image, copied by its user: checked and taken in. */
        if (image_import_copy(p, transport, digest, why, size) < 0)
            return -1;
        goto copied;
    }
    const char *tls =
        cfg->tls_verify ? "--src-tls-verify=true" : "--src-tls-verify=false";
    char *copy[10] = {"skopeo", "--insecure-policy", "copy", "--quiet"};
    int n = 4;
    if (strncmp(transport, "docker://", 9) == 0) {
        copy[n++] = (char *)tls;
        copy[n++] = "--src-authfile";
        copy[n++] = p->authfile;
    }
    copy[n++] = src;
    copy[n++] = dst;
    copy[n] = NULL;
    struct tool_run r;
    int rc = image_tool_run(copy, &r, image_pull_tick, p, NULL);
    if (rc == 0 && r.stopped) {
        snprintf(why, size, "%s", p->over);
        sh_log(LOG_WARNING, "image", "%s: pull stopped", why);
        free(r.out);
        collect_layout(layout);
        return -1;
    }
    if (rc < 0 || !image_tool_ok(&r)) {
        image_fail_cause(why, size, transport, "cannot pull", &r);
        free(r.out);
        return -1;
    }
    free(r.out);
copied:
    if (image_check_copy(p, transport, digest, why, size) < 0)
        return -1;
    image_note(p, "unpacking image");
    snprintf(tmp, sizeof(tmp), "%s/bundles/%s.tmp", cfg->dir, hex);
    snprintf(final, sizeof(final), "%s/bundles/%s", cfg->dir, hex);
    file_remove_tree(tmp);
    char img[4300];
    snprintf(img, sizeof(img), "%s:%s", layout, hex);
    char *unpack[] = {"umoci", "unpack", "--image", img, tmp, NULL, NULL};
    if (geteuid() != 0) {
        unpack[2] = "--rootless";
        unpack[3] = "--image";
        unpack[4] = img;
        unpack[5] = tmp;
    }
    /* The caps are checked while umoci writes and once more after. */
    snprintf(p->unpack_dir, sizeof(p->unpack_dir), "%s", tmp);
    p->next_walk_ms = 0;
    int urc = image_tool_run(unpack, &r, unpack_tick, p, NULL);
    if ((urc == 0 && r.stopped) ||
        (urc == 0 && image_tool_ok(&r) && unpack_over(p, tmp))) {
        snprintf(why, size, "%s", p->over);
        sh_log(LOG_WARNING, "image", "%s: unpack stopped, removed", why);
        free(r.out);
        file_remove_tree(tmp);
        return -1;
    }
    if (urc < 0 || !image_tool_ok(&r)) {
        image_fail(why, size, transport, "cannot unpack", &r);
        free(r.out);
        file_remove_tree(tmp);
        return -1;
    }
    free(r.out);
    if (image_drop_devices(tmp) < 0) {
        snprintf(why, size, "image %s: cannot remove its device nodes: %s",
                 transport, strerror(errno));
        file_remove_tree(tmp);
        return -1;
    }
    uint64_t bytes = image_du(tmp);
    char sizef[4300], text[32];
    snprintf(sizef, sizeof(sizef), "%s/bundles/%s.size", cfg->dir, hex);
    snprintf(text, sizeof(text), "%" PRIu64 "\n", bytes);
    FILE *f = fopen(sizef, "we");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, final) < 0) {
        snprintf(why, size, "image %s: cannot store the bundle in %s: %s",
                 transport, cfg->dir, strerror(errno));
        file_remove_tree(tmp);
        return -1;
    }
    sh_log(LOG_INFO, "image", "unpacked %s (%s) into %s, %" PRIu64 " bytes",
           transport, digest, final, bytes);
    return 0;
}

static int prepare(struct pull *p, const char *transport,
                   struct image_bundle *out, char *why, size_t size);

/* skopeo's auth file for a registry pull: the project's credentials for
 * the registry, or none (so root's own never serve a job), in a 0600 file
 * of a 0700 folder of root's, removed after the pull (image_prepare).
 * 0, or -1 with why. */
static int auth_file(struct pull *p, const char *transport, char *why,
                     size_t size)
{
    const struct image_cache_cfg *cfg = p->cfg;
    snprintf(p->authdir, sizeof(p->authdir), "%s/auth-XXXXXX", cfg->dir);
    if (!mkdtemp(p->authdir)) {
        snprintf(why, size, "image %s: cannot make an auth file: %s", transport,
                 strerror(errno));
        p->authdir[0] = '\0';
        return -1;
    }
    /* Locked while this pull uses it: image_sweep_auth leaves it alone. */
    p->auth_lock =
        open(p->authdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (p->auth_lock >= 0)
        flock(p->auth_lock, LOCK_EX);
    snprintf(p->authfile, sizeof(p->authfile), "%s/auth.json", p->authdir);
    json_t *auths = json_object();
    if (cfg->auth_registry && cfg->auth_user && cfg->auth_pass) {
        size_t n = strlen(cfg->auth_user) + 1 + strlen(cfg->auth_pass);
        char *plain = malloc(n + 1);
        size_t bn =
            sodium_base64_encoded_len(n, sodium_base64_VARIANT_ORIGINAL);
        char *b64 = malloc(bn);
        if (plain && b64) {
            snprintf(plain, n + 1, "%s:%s", cfg->auth_user, cfg->auth_pass);
            sodium_bin2base64(b64, bn, (const unsigned char *)plain, n,
                              sodium_base64_VARIANT_ORIGINAL);
            json_object_set_new(auths, cfg->auth_registry,
                                json_pack("{s:s}", "auth", b64));
            sodium_memzero(plain, n);
            sodium_memzero(b64, bn);
        }
        free(plain);
        free(b64);
    }
    json_t *o = json_pack("{s:o}", "auths", auths);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    int fd = open(p->authfile,
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    size_t len = text ? strlen(text) : 0;
    bool ok = text && fd >= 0 && write(fd, text, len) == (ssize_t)len;
    if (fd >= 0 && close(fd) < 0)
        ok = false;
    if (text) {
        sodium_memzero(text, len);
        free(text);
    }
    if (!ok) {
        snprintf(why, size, "image %s: cannot write an auth file: %s",
                 transport, strerror(errno));
        return -1;
    }
    return 0;
}

int image_prepare(const struct image_cache_cfg *cfg, const char *transport,
                  const struct user_creds *user, image_progress_f progress,
                  image_resolved_f resolved, void *arg,
                  struct image_bundle *out, char *why, size_t size)
{
    struct pull *p = calloc(1, sizeof(*p));
    memset(out, 0, sizeof(*out));
    out->lock_fd = -1;
    if (!p) {
        snprintf(why, size, "out of memory");
        return -1;
    }
    p->cfg = cfg;
    p->transport = transport;
    p->progress = progress;
    p->resolved = resolved;
    p->arg = arg;
    p->user = user;
    p->src_fd = -1;
    p->udir_fd = -1;
    p->udir_lock = -1;
    p->auth_lock = -1;
    int rc = image_open_local(p, transport, why, size);
    if (rc == 0)
        rc = prepare(p, transport, out, why, size);
    if (p->src_fd >= 0)
        close(p->src_fd);
    bool local = p->udir[0] != '\0';
    image_user_dir_remove(p);
    if (local)
        image_sweep_incoming(cfg->dir);
    if (p->authfile[0])
        unlink(p->authfile);
    if (p->authdir[0])
        rmdir(p->authdir);
    if (p->auth_lock >= 0)
        close(p->auth_lock);
    free(p);
    return rc;
}

void image_sweep_auth(const char *cache_dir)
{
    int dfd = open(cache_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (strncmp(e->d_name, "auth-", 5) != 0 ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
            now - st.st_mtime < IMAGE_AUTH_STALE_S)
            continue;
        int afd = openat(dirfd(d), e->d_name,
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (afd < 0)
            continue;
        if (flock(afd, LOCK_EX | LOCK_NB) == 0) {
            unlinkat(afd, "auth.json", 0);
            if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) == 0)
                sh_log(LOG_INFO, "image", "removed a stale auth folder %s/%s",
                       cache_dir, e->d_name);
        }
        close(afd);
    }
    closedir(d);
}

static int prepare(struct pull *p, const char *transport,
                   struct image_bundle *out, char *why, size_t size)
{
    const struct image_cache_cfg *cfg = p->cfg;
    char path[4200];
    memset(out, 0, sizeof(*out));
    out->lock_fd = -1;
    snprintf(path, sizeof(path), "%s/bundles", cfg->dir);
    if ((mkdir(cfg->dir, 0700) < 0 && errno != EEXIST) ||
        (mkdir(path, 0700) < 0 && errno != EEXIST)) {
        snprintf(why, size, "image cache %s: %s", cfg->dir, strerror(errno));
        return -1;
    }
    /* oci/ is root's alone (the cache folder is 0711 for incoming/). */
    if (image_cache_layout(cfg, why, size) < 0)
        return -1;
    if (image_is_local(transport) &&
        image_user_dir(p, transport, why, size) < 0)
        return -1;
    if (strncmp(transport, "docker://", 9) == 0 &&
        auth_file(p, transport, why, size) < 0)
        return -1;
    image_note(p, "resolving image");
    if (cfg->digest) {
        if (!job_image_digest_valid(cfg->digest)) {
            snprintf(why, size, "image %s: the digest to run is not sha256:HEX",
                     transport);
            return -1;
        }
        snprintf(out->digest, sizeof(out->digest), "%s", cfg->digest);
        if (resolve_given(p, transport, why, size) < 0)
            return -1;
    } else if (resolve(p, transport, out->digest, sizeof(out->digest), why,
                       size) < 0) {
        return -1;
    }
    if (p->resolved)
        p->resolved(p->arg, out->digest);
    const char *hex = out->digest + 7;
    snprintf(out->dir, sizeof(out->dir), "%s/bundles/%s", cfg->dir, hex);
    snprintf(path, sizeof(path), "%s/bundles/%s.lock", cfg->dir, hex);
    out->lock_fd = image_lock_file(path, LOCK_SH);
    if (out->lock_fd >= 0 && !image_is_dir(out->dir)) {
        /* Not there: pull under the cache lock (another run may be pulling
         * the same digest: then it is there once we hold the lock). */
        close(out->lock_fd);
        out->lock_fd = -1;
        if (image_is_local(transport) &&
            image_user_copy(p, transport, out->digest, why, size) < 0)
            return -1;
        char lpath[4200];
        snprintf(lpath, sizeof(lpath), "%s/lock", cfg->dir);
        image_note(p, "pulling image (waiting for the node's cache)");
        int cache_fd = image_lock_file(lpath, LOCK_EX);
        if (cache_fd < 0) {
            snprintf(why, size, "image cache %s: %s", cfg->dir,
                     strerror(errno));
            return -1;
        }
        int rc = 0;
        if (!image_is_dir(out->dir)) {
            rc = pull_and_unpack(p, transport, out->digest, why, size);
            out->unpacked = rc == 0;
        }
        if (rc == 0)
            out->lock_fd = image_lock_file(path, LOCK_SH);
        if (rc == 0 && cfg->max_bytes)
            image_evict(cfg, hex, 0);
        close(cache_fd);
        if (rc < 0)
            return -1;
    }
    if (out->lock_fd < 0) {
        snprintf(why, size, "image cache %s: cannot lock %s: %s", cfg->dir,
                 path, strerror(errno));
        return -1;
    }
    futimens(out->lock_fd, NULL); /* last use, for the LRU */
    if (!out->unpacked && cfg->max_bytes) {
        /* A start from the cache evicts too (a run that ended may have
         * freed an image); skipped while another run pulls: it will. */
        char lpath[4200];
        snprintf(lpath, sizeof(lpath), "%s/lock", cfg->dir);
        int cache_fd = image_lock_file(lpath, LOCK_EX | LOCK_NB);
        if (cache_fd >= 0) {
            image_evict(cfg, hex, 0);
            close(cache_fd);
        }
    }
    return 0;
}

void image_bundle_release(struct image_bundle *b)
{
    if (b->lock_fd >= 0)
        close(b->lock_fd);
    b->lock_fd = -1;
}
