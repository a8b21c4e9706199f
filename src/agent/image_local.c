/* SPDX-License-Identifier: Apache-2.0 */
/* Local images (oci-archive:, oci:): opened and copied as the job's user,
 * checked and imported into the cache by root; stale copies swept (see
 * image.h, image_int.h). */
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
#include "lib/util/log.h"

/* ---- local images: opened as the user, digest from the index ---- */

/* The file called name in the tar archive open at fd (ustar headers; what
 * skopeo writes), at most max - 1 bytes into a new string (its length in
 * *len); NULL when absent or unreadable. */
static char *tar_read(int fd, const char *name, size_t max, size_t *len)
{
    char hdr[512];
    char *out = NULL;
    off_t pos = 0;
    while (pread(fd, hdr, sizeof(hdr), pos) == (ssize_t)sizeof(hdr) && hdr[0]) {
        char field[13];
        memcpy(field, hdr + 124, 12);
        field[12] = '\0';
        unsigned long long n = strtoull(field, NULL, 8);
        char fname[101];
        memcpy(fname, hdr, 100);
        fname[100] = '\0';
        const char *f = strncmp(fname, "./", 2) == 0 ? fname + 2 : fname;
        if (strcmp(f, name) == 0 && (hdr[156] == '0' || hdr[156] == '\0')) {
            if (n < max && (out = calloc(1, n + 1)) &&
                pread(fd, out, n, pos + 512) != (ssize_t)n) {
                free(out);
                out = NULL;
            }
            if (out)
                *len = n;
            break;
        }
        pos += 512 + (off_t)((n + 511) / 512 * 512);
    }
    return out;
}

/* A small file open at fd, as a new string (its length in *len); NULL when
 * larger than max - 1 bytes or unreadable. */
char *image_read_fd(int fd, size_t max, size_t *len)
{
    struct stat st;
    char *out = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        (size_t)st.st_size < max && (out = calloc(1, (size_t)st.st_size + 1)) &&
        read(fd, out, (size_t)st.st_size) != st.st_size) {
        free(out);
        out = NULL;
    }
    if (out)
        *len = (size_t)st.st_size;
    return out;
}

/* A small regular file (not through a link) of the cache, as a new
 * string; NULL when absent, too large or unreadable. */
char *image_read_small(const char *path, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    size_t len;
    char *out = fd >= 0 ? image_read_fd(fd, max, &len) : NULL;
    if (fd >= 0)
        close(fd);
    return out;
}

/* The one manifest an OCI index names (with tag: the one so tagged). */
static const char *index_manifest(const json_t *index, const char *tag)
{
    const json_t *ms = json_object_get(index, "manifests");
    const char *found = NULL;
    size_t i;
    json_t *m;
    json_array_foreach (ms, i, m) {
        const char *ref = json_string_value(
            json_object_get(json_object_get(m, "annotations"),
                            "org.opencontainers.image.ref.name"));
        const char *type = json_string_value(json_object_get(m, "mediaType"));
        if (!type || strcmp(type, "application/vnd.oci.image.manifest.v1+json"))
            continue;
        if (tag ? ref && strcmp(ref, tag) == 0 : json_array_size(ms) == 1) {
            if (tag && found)
                return NULL; /* tagged twice: not one answer */
            found = json_string_value(json_object_get(m, "digest"));
        }
    }
    return found;
}

char *image_index_tag_digest(const char *index, const char *tag)
{
    json_error_t jerr;
    json_t *j = index ? json_loads(index, 0, &jerr) : NULL;
    const char *d = j ? index_manifest(j, tag) : NULL;
    char *out = d ? strdup(d) : NULL;
    json_decref(j);
    return out;
}

bool image_sha256_is(const void *data, size_t len, const char *digest)
{
    unsigned char h[crypto_hash_sha256_BYTES];
    char hex[2 * crypto_hash_sha256_BYTES + 1];
    if (strncmp(digest, "sha256:", 7) != 0 || sodium_init() < 0)
        return false;
    crypto_hash_sha256(h, data, len);
    sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
    return strcmp(hex, digest + 7) == 0;
}

bool image_is_local(const char *transport)
{
    return strncmp(transport, "oci-archive:", 12) == 0 ||
           strncmp(transport, "oci:", 4) == 0;
}

/* A file of a local image: name inside the archive at p->src_fd, or under
 * the layout folder opened as the user. NULL when missing (errno-like
 * reason in *err: 0 when absent from the archive). */
static char *local_read(struct pull *p, const char *name, size_t *len, int *err)
{
    *err = 0;
    if (p->archive)
        return tar_read(p->src_fd, name, INDEX_MAX, len);
    char path[8600];
    snprintf(path, sizeof(path), "%s/%s", p->dir, name);
    int fd = user_open_read(path, p->user, S_IFREG, err);
    if (fd < 0)
        return NULL;
    char *out = image_read_fd(fd, INDEX_MAX, len);
    close(fd);
    return out;
}

static void say_errno(char *buf, size_t size, int err, bool archive)
{
    if (err == EMEDIUMTYPE)
        snprintf(buf, size, "%s",
                 archive ? "not a regular file" : "not a folder");
    else
        snprintf(buf, size, "%s", strerror(err));
    buf[0] = (char)tolower((unsigned char)buf[0]);
}

/* A local image's archive or folder, opened as the job's user: p->src
 * becomes skopeo's reference to it through /proc/self/fd/N (N inherited).
 * Other transports: p->src is transport. 0, or -1 with why. */
int image_open_local(struct pull *p, const char *transport, char *why,
                     size_t size)
{
    snprintf(p->src, sizeof(p->src), "%s", transport);
    if (!image_is_local(transport))
        return 0;
    p->archive = strncmp(transport, "oci-archive:", 12) == 0;
    if (p->archive) {
        snprintf(p->dir, sizeof(p->dir), "%s", transport + 12);
    } else {
        const char *colon = strrchr(transport + 4, ':');
        size_t n =
            colon ? (size_t)(colon - transport - 4) : strlen(transport + 4);
        snprintf(p->dir, sizeof(p->dir), "%.*s", (int)n, transport + 4);
        if (colon)
            snprintf(p->tag, sizeof(p->tag), "%s", colon + 1);
    }
    int err = 0;
    int fd =
        user_open_read(p->dir, p->user, p->archive ? S_IFREG : S_IFDIR, &err);
    if (fd < 0) {
        char e[128];
        say_errno(e, sizeof(e), err, p->archive);
        snprintf(why, size, "image %s: cannot resolve: %s: %s", transport,
                 p->dir, e);
        return -1;
    }
    /* Root reads only index.json and the manifest through it (an archive's
     * members, a folder by its path as the user); no tool inherits it. */
    p->src_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    if (p->src_fd < 0) {
        snprintf(why, size, "image %s: %s", transport, strerror(errno));
        return -1;
    }
    if (p->archive)
        snprintf(p->src, sizeof(p->src), "oci-archive:/proc/self/fd/%d",
                 p->src_fd);
    else
        snprintf(p->src, sizeof(p->src), "oci:/proc/self/fd/%d%s%s", p->src_fd,
                 p->tag[0] ? ":" : "", p->tag);
    return 0;
}

/* oci-archive:PATH and oci:DIR:TAG hold their index: read the digest
 * there. -1 when anything is unusual: skopeo decides. */
int image_resolve_local(struct pull *p, char *digest, size_t dsize)
{
    if (p->src_fd < 0 || (!p->archive && !p->tag[0]))
        return -1;
    size_t len;
    int err;
    char *text = local_read(p, "index.json", &len, &err);
    char *d = image_index_tag_digest(text, p->archive ? NULL : p->tag);
    free(text);
    int rc = -1;
    if (d && strncmp(d, "sha256:", 7) == 0 && strlen(d) == 71) {
        snprintf(digest, dsize, "%s", d);
        rc = 0;
    }
    free(d);
    return rc;
}

/* A local image's manifest (read as the user) must be what digest names:
 * an index naming a digest its blobs do not hold (another user's cached
 * image, say) gets nothing. 0, or -1 with why. */
int image_verify_local(struct pull *p, const char *transport,
                       const char *digest, char *why, size_t size)
{
    if (p->src_fd < 0)
        return 0;
    char blob[128];
    snprintf(blob, sizeof(blob), "blobs/sha256/%s", digest + 7);
    size_t len = 0;
    int err;
    char *raw = local_read(p, blob, &len, &err);
    if (!raw) {
        char e[128] = "not in the image";
        if (err)
            say_errno(e, sizeof(e), err, true);
        snprintf(why, size, "image %s: its manifest %s: %s", transport, digest,
                 e);
        return -1;
    }
    bool ok = image_sha256_is(raw, len, digest);
    if (ok)
        p->total = image_manifest_bytes(raw);
    free(raw);
    if (!ok) {
        snprintf(why, size,
                 "image %s: its manifest does not match the digest its index "
                 "names (%s): refused",
                 transport, digest);
        return -1;
    }
    return 0;
}

/* ---- local images: copied by the user, checked and imported by root ----
 *
 * skopeo reads a user's archive or layout as that user (links in it lead
 * only where the user may go) and writes an OCI layout into a folder of
 * the cache that only the user reaches: incoming/NAME (incoming is root's,
 * 0711, not listable; NAME is the user's, 0700). Root then takes from that
 * copy only what the digest names: the manifest, hashed, and each blob it
 * lists, read once through descriptors pinned from root's own open (no
 * link followed, regular files the user owns, of the listed size), hashed
 * while copied into the cache. What the user may change in the folder
 * meanwhile changes nothing that enters the cache. */

/* The user's private folder for the copy (skopeo's HOME and TMPDIR).
 * 0, or -1 with why. */
int image_user_dir(struct pull *p, const char *transport, char *why,
                   size_t size)
{
    char inc[4300];
    struct stat st;
    /* The cache is reached by the user only down to its incoming/. */
    chmod(p->cfg->dir, 0711);
    snprintf(inc, sizeof(inc), "%s/incoming", p->cfg->dir);
    if ((mkdir(inc, 0711) < 0 && errno != EEXIST) || lstat(inc, &st) < 0 ||
        !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        chmod(inc, 0711) < 0) {
        snprintf(why, size, "image cache %s: %s", inc, strerror(errno));
        return -1;
    }
    /* First NAME.lock, root's, locked while the pull runs (a user cannot
     * open it, so cannot hold it), then NAME: image_sweep_incoming removes
     * a folder whose lock no pull holds. */
    char lock[4400];
    snprintf(lock, sizeof(lock), "%s/XXXXXX.lock", inc);
    p->udir_lock = mkostemps(lock, 5, O_CLOEXEC);
    if (p->udir_lock < 0 || flock(p->udir_lock, LOCK_EX) < 0) {
        snprintf(why, size, "image cache %s: %s", inc, strerror(errno));
        return -1;
    }
    snprintf(p->udir, sizeof(p->udir), "%.*s", (int)(strlen(lock) - 5), lock);
    if (mkdir(p->udir, 0700) < 0) {
        snprintf(why, size, "image cache %s: %s", inc, strerror(errno));
        unlink(lock);
        p->udir[0] = '\0';
        return -1;
    }
    snprintf(p->uname, sizeof(p->uname), "%s", strrchr(p->udir, '/') + 1);
    p->udir_fd = open(p->udir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    uid_t uid = p->user ? p->user->uid : geteuid();
    gid_t gid = p->user ? p->user->gid : getegid();
    if (p->udir_fd < 0 || fchown(p->udir_fd, uid, gid) < 0 ||
        fchmod(p->udir_fd, 0700) < 0) {
        snprintf(why, size, "image %s: cannot make a folder for the copy: %s",
                 transport, strerror(errno));
        return -1;
    }
    p->as.user = p->user;
    p->as.home = p->udir;
    return 0;
}

/* Stale copies leave incoming/ in two steps. First the folder is taken
 * from its user: opened without following a link (a folder on incoming's
 * own file system), renamed into incoming/.trash (root's, 0700: no path
 * reaches it any more) and made root's, 0700 (a process of the user
 * still inside it can add nothing). Then root empties the trash with a
 * walk from pinned descriptors: no link followed, no other mount entered
 * (what is mounted there stays), each folder made root's before it is
 * read, and at most INCOMING_SWEEP_BUDGET entries a call (the rest waits
 * for the next sweep, which the agent runs soon then). No process
 * of the user takes part, so none can stall it. */
#define INCOMING_TRASH ".trash"
#define INCOMING_SWEEP_BUDGET 50000
#define INCOMING_SWEEP_DEPTH 32

/* incoming/.trash (ifd is incoming, ist its stat): the fd, or -1. */
static int trash_open(int ifd, const struct stat *ist)
{
    if (mkdirat(ifd, INCOMING_TRASH, 0700) < 0 && errno != EEXIST)
        return -1;
    int tfd = openat(ifd, INCOMING_TRASH,
                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (tfd >= 0 && (fstat(tfd, &st) < 0 || st.st_uid != geteuid() ||
                     st.st_dev != ist->st_dev || fchmod(tfd, 0700) < 0)) {
        close(tfd);
        return errno = EPERM, -1;
    }
    return tfd;
}

/* Make the folder dfd root's, 0700: its user can no longer add to it. */
static int take_dir(int dfd)
{
    return fchown(dfd, geteuid(), getegid()) < 0 || fchmod(dfd, 0700) < 0 ? -1
                                                                          : 0;
}

/* Move the folder NAME (in ifd, on dev) into the trash (tfd), made root's.
 * 0, or -1 with errno. */
static int trash_put(int ifd, dev_t dev, int tfd, const char *name)
{
    int dfd =
        openat(ifd, name,
               O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st, moved;
    if (dfd < 0)
        return -1;
    if (fstat(dfd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_dev != dev) {
        close(dfd);
        return errno = EXDEV, -1;
    }
    char tname[300];
    snprintf(tname, sizeof(tname), "%s", name);
    for (int i = 0; renameat2(ifd, name, tfd, tname, RENAME_NOREPLACE) < 0;
         i++) {
        if (errno != EEXIST || i >= 1000) {
            int saved = errno;
            close(dfd);
            return errno = saved, -1;
        }
        snprintf(tname, sizeof(tname), "%.200s.%d", name, i);
    }
    int rc = 0;
    if (fstatat(tfd, tname, &moved, AT_SYMLINK_NOFOLLOW) < 0 ||
        moved.st_ino != st.st_ino || moved.st_dev != st.st_dev)
        rc = -1, errno = ESTALE;
    else if (take_dir(dfd) < 0)
        rc = -1;
    close(dfd);
    return rc;
}

/* Empty the folder dfd (root's, on dev) as root; folders deeper than
 * INCOMING_SWEEP_DEPTH move up into the trash (tfd) instead. 0 when it
 * is empty, -1 when something stays (a mount, the budget spent). */
static int trash_wipe(int dfd, dev_t dev, int tfd, int depth, long *budget)
{
    int lfd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
    if (!d) {
        if (lfd >= 0)
            close(lfd);
        return -1;
    }
    int left = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (*budget <= 0) {
            left = -1;
            break;
        }
        (*budget)--;
        struct stat st, sst;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            left = -1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (unlinkat(dfd, e->d_name, 0) < 0)
                left = -1;
            continue;
        }
        if (st.st_dev != dev) { /* a mount: not entered */
            left = -1;
            continue;
        }
        int sfd = openat(dfd, e->d_name,
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
                             O_CLOEXEC);
        if (sfd < 0 || fstat(sfd, &sst) < 0 || sst.st_dev != dev ||
            sst.st_ino != st.st_ino || take_dir(sfd) < 0) {
            if (sfd >= 0)
                close(sfd);
            left = -1;
            continue;
        }
        if (depth >= INCOMING_SWEEP_DEPTH) {
            /* Up into the trash: the walk's depth stays bounded. */
            char up[64];
            snprintf(up, sizeof(up), "deep.%lu.%lu", (unsigned long)st.st_ino,
                     (unsigned long)time(NULL));
            if (renameat2(dfd, e->d_name, tfd, up, RENAME_NOREPLACE) < 0)
                left = -1;
        } else if (trash_wipe(sfd, dev, tfd, depth + 1, budget) < 0 ||
                   unlinkat(dfd, e->d_name, AT_REMOVEDIR) < 0) {
            left = -1;
        }
        close(sfd);
    }
    closedir(d);
    return left;
}

/* Empty the trash (within the budget) and remove it once empty. 1 when
 * something stays in it, else 0. */
static int trash_empty(int ifd, int tfd, dev_t dev)
{
    long budget = INCOMING_SWEEP_BUDGET;
    /* Twice: folders moved up from deep down are met on the second. */
    if (trash_wipe(tfd, dev, tfd, 0, &budget) < 0 && budget > 0)
        trash_wipe(tfd, dev, tfd, 0, &budget);
    if (unlinkat(ifd, INCOMING_TRASH, AT_REMOVEDIR) == 0)
        return 0;
    if (errno != ENOTEMPTY && errno != EEXIST)
        sh_log(LOG_WARNING, "image", "cannot empty the incoming trash: %s",
               strerror(errno));
    return 1;
}

/* Take incoming/NAME (in the folder ifd) from its user into the trash,
 * remove its NAME.lock, and empty the trash. 0, or -1 with errno. */
static int remove_incoming(int ifd, const char *name)
{
    struct stat ist;
    if (fstat(ifd, &ist) < 0)
        return -1;
    int tfd = trash_open(ifd, &ist);
    if (tfd < 0)
        return -1;
    int rc = trash_put(ifd, ist.st_dev, tfd, name);
    int saved = errno;
    if (rc == 0) {
        char lock[300];
        snprintf(lock, sizeof(lock), "%.200s.lock", name);
        unlinkat(ifd, lock, 0);
    }
    trash_empty(ifd, tfd, ist.st_dev);
    close(tfd);
    return errno = saved, rc;
}

/* Remove the user's folder and its lock (see remove_incoming). */
void image_user_dir_remove(struct pull *p)
{
    if (p->udir[0]) {
        char inc[4300];
        snprintf(inc, sizeof(inc), "%s/incoming", p->cfg->dir);
        int ifd = open(inc, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ifd < 0 || remove_incoming(ifd, p->uname) < 0)
            sh_log(LOG_WARNING, "image", "cannot remove %s: %s", p->udir,
                   strerror(errno));
        if (ifd >= 0)
            close(ifd);
    }
    if (p->udir_fd >= 0)
        close(p->udir_fd);
    p->udir_fd = -1;
    if (p->udir_lock >= 0)
        close(p->udir_lock);
    p->udir_lock = -1;
    p->udir[0] = '\0';
}

/* skopeo, as the user, copies the image into the user's folder (outside
 * the cache lock: a slow or stuck source holds up no other pull). */
int image_user_copy(struct pull *p, const char *transport, const char *digest,
                    char *why, size_t size)
{
    char dst[4400];
    snprintf(dst, sizeof(dst), "oci:%s/layout:%s", p->udir, digest + 7);
    p->before = 0;
    image_note(p, "pulling image");
    char *copy[] = {"skopeo",  "--insecure-policy", "copy",
                    "--quiet", (char *)transport,   dst,
                    NULL};
    struct tool_run r;
    p->user_copying = true;
    int rc = image_tool_run(copy, &r, image_pull_tick, p, &p->as);
    p->user_copying = false;
    if (rc == 0 && r.stopped) {
        snprintf(why, size, "%s", p->over);
        free(r.out);
        return -1;
    }
    if (rc < 0 || !image_tool_ok(&r)) {
        image_fail_cause(why, size, transport,
                         "cannot copy it as the job's user", &r);
        free(r.out);
        return -1;
    }
    free(r.out);
    p->copied = true;
    return 0;
}

static bool digest_ok(const char *d)
{
    if (!d || strncmp(d, "sha256:", 7) != 0 || strlen(d) != 71)
        return false;
    for (const char *c = d + 7; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

/* A blob of the user's copy (in the folder sfd), opened by root without
 * following a link: a regular file the user owns. The fd or -1 (errno). */
static int user_blob(struct pull *p, int sfd, const char *hex, struct stat *st)
{
    int fd = openat(sfd, hex, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) ||
        st->st_uid != (p->user ? p->user->uid : geteuid())) {
        close(fd);
        return errno = EPERM, -1;
    }
    return fd;
}

/* Write len bytes of data, or those read from in (len of them), into the
 * cache's blobs (cfd) as hex, when they hash to it. 0, or -1 with why. */
static int put_blob(int cfd, const char *digest, int in, const void *data,
                    uint64_t len, char *why, size_t size)
{
    const char *hex = digest + 7;
    char tmp[96];
    snprintf(tmp, sizeof(tmp), ".in-%s", hex);
    unlinkat(cfd, tmp, 0);
    int out = openat(
        cfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (out < 0) {
        snprintf(why, size, "cannot store %s: %s", digest, strerror(errno));
        return -1;
    }
    crypto_hash_sha256_state h;
    crypto_hash_sha256_init(&h);
    static char buf[1 << 16];
    uint64_t done = 0;
    int rc = 0;
    while (rc == 0 && done < len) {
        size_t want =
            len - done < sizeof(buf) ? (size_t)(len - done) : sizeof(buf);
        ssize_t got = data ? (ssize_t)want : read(in, buf, want);
        if (got <= 0) {
            snprintf(why, size, "%s: %s", digest,
                     got == 0 ? "shorter than its size" : strerror(errno));
            rc = -1;
            break;
        }
        const unsigned char *b =
            data ? (const unsigned char *)data + done : (unsigned char *)buf;
        crypto_hash_sha256_update(&h, b, (size_t)got);
        for (ssize_t w = 0; w < got;) {
            ssize_t n = write(out, b + w, (size_t)(got - w));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                snprintf(why, size, "cannot store %s: %s", digest,
                         strerror(errno));
                rc = -1;
                break;
            }
            w += n;
        }
        done += (uint64_t)got;
    }
    unsigned char sum[crypto_hash_sha256_BYTES];
    char got_hex[2 * crypto_hash_sha256_BYTES + 1];
    crypto_hash_sha256_final(&h, sum);
    sodium_bin2hex(got_hex, sizeof(got_hex), sum, sizeof(sum));
    if (rc == 0 && strcmp(got_hex, hex) != 0) {
        snprintf(why, size, "%s: its content does not hash to it", digest);
        rc = -1;
    }
    if (close(out) < 0 && rc == 0) {
        snprintf(why, size, "cannot store %s: %s", digest, strerror(errno));
        rc = -1;
    }
    if (rc == 0 && renameat(cfd, tmp, cfd, hex) < 0) {
        snprintf(why, size, "cannot store %s: %s", digest, strerror(errno));
        rc = -1;
    }
    if (rc < 0)
        unlinkat(cfd, tmp, 0);
    return rc;
}

/* Take digest and its blobs from the user's copy into the cache (under
 * the cache lock). 0, or -1 with why. */
int image_import_copy(struct pull *p, const char *transport, const char *digest,
                      char *why, size_t size)
{
    char e[700] = "", path[4300];
    int lfd = -1, bfd = -1, sfd = -1, cfd = -1, mfd = -1;
    char *raw = NULL;
    json_t *man = NULL, *blobs = NULL;
    int rc = -1;
    if (image_cache_layout(p->cfg, why, size) < 0)
        return -1;
    lfd = openat(p->udir_fd, "layout",
                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    bfd = lfd < 0 ? -1
                  : openat(lfd, "blobs",
                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    sfd = bfd < 0 ? -1
                  : openat(bfd, "sha256",
                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd < 0) {
        snprintf(e, sizeof(e), "its blobs: %s", strerror(errno));
        goto out;
    }
    snprintf(path, sizeof(path), "%s/oci/blobs/sha256", p->cfg->dir);
    cfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (cfd < 0) {
        snprintf(e, sizeof(e), "%s: %s", path, strerror(errno));
        goto out;
    }
    struct stat st;
    size_t len = 0;
    mfd = user_blob(p, sfd, digest + 7, &st);
    raw = mfd < 0 ? NULL : image_read_fd(mfd, INDEX_MAX, &len);
    if (!raw) {
        snprintf(e, sizeof(e), "its manifest %s: %s", digest,
                 mfd < 0 ? strerror(errno) : "unreadable");
        goto out;
    }
    if (!image_sha256_is(raw, len, digest)) {
        snprintf(e, sizeof(e), "its manifest does not hash to %s: refused",
                 digest);
        goto out;
    }
    /* Only an OCI image manifest (what skopeo writes into an oci: layout),
     * with its config and layers: an index or another type would let the
     * cache's tag name what this copy does not hold. */
    static const char oci_manifest[] =
        "application/vnd.oci.image.manifest.v1+json";
    json_error_t jerr;
    man = json_loads(raw, 0, &jerr);
    const char *type = json_string_value(json_object_get(man, "mediaType"));
    json_t *config = json_object_get(man, "config");
    json_t *layers = json_object_get(man, "layers");
    if (!json_is_object(man) || (type && strcmp(type, oci_manifest) != 0) ||
        !json_is_object(config) || !json_is_array(layers)) {
        snprintf(e, sizeof(e),
                 "its manifest is not an OCI image manifest with a config "
                 "and layers");
        goto out;
    }
    blobs = json_array();
    if (!blobs || json_array_append(blobs, config) < 0) {
        snprintf(e, sizeof(e), "out of memory");
        goto out;
    }
    size_t i;
    json_t *l;
    json_array_foreach (layers, i, l) {
        if (json_array_append(blobs, l) < 0) {
            snprintf(e, sizeof(e), "out of memory");
            goto out;
        }
    }
    json_array_foreach (blobs, i, l) {
        const char *d = json_string_value(json_object_get(l, "digest"));
        json_int_t n = json_integer_value(json_object_get(l, "size"));
        if (!digest_ok(d) || n < 0) {
            snprintf(e, sizeof(e), "its manifest lists a bad blob");
            goto out;
        }
        /* Every blob is read from the user's copy and hashed, also one the
         * cache holds already: knowing another user's digests must not be
         * enough to get their image. */
        int in = user_blob(p, sfd, d + 7, &st);
        if (in < 0) {
            snprintf(e, sizeof(e), "%s: %s", d,
                     errno == EPERM ? "not a file of the copy"
                                    : strerror(errno));
            goto out;
        }
        if ((uint64_t)st.st_size != (uint64_t)n) {
            close(in);
            snprintf(e, sizeof(e), "%s: not of its listed size", d);
            goto out;
        }
        int r = put_blob(cfd, d, in, NULL, (uint64_t)n, e, sizeof(e));
        close(in);
        if (r < 0)
            goto out;
    }
    if (put_blob(cfd, digest, -1, raw, len, e, sizeof(e)) < 0 ||
        image_cache_tag(p->cfg, digest, len, oci_manifest, e, sizeof(e)) < 0)
        goto out;
    rc = 0;
out:
    if (rc < 0) {
        snprintf(why, size, "image %s: the copy refused: %s", transport, e);
        sh_log(LOG_WARNING, "image", "%s", why);
    }
    json_decref(blobs);
    json_decref(man);
    free(raw);
    for (int *fd = (int[]){lfd, bfd, sfd, cfd, mfd}, k = 0; k < 5; k++)
        if (fd[k] >= 0)
            close(fd[k]);
    return rc;
}

/* A folder without NAME.lock was made by a shim older than the lock: it
 * counts as stale only INCOMING_LOCKLESS_GRACE_S after this process first
 * saw it (root's clock, kept here: the folder's times are the user's). */
#define INCOMING_LOCKLESS_GRACE_S (2 * 3600)
#define INCOMING_LOCKLESS_MAX 256
static struct {
    char name[201];
    time_t seen;
} lockless[INCOMING_LOCKLESS_MAX];

static time_t monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

static bool lockless_stale(const char *name)
{
    int free_slot = -1;
    for (int i = 0; i < INCOMING_LOCKLESS_MAX; i++) {
        if (lockless[i].name[0] && strcmp(lockless[i].name, name) == 0)
            return monotonic_s() - lockless[i].seen >=
                   INCOMING_LOCKLESS_GRACE_S;
        if (!lockless[i].name[0] && free_slot < 0)
            free_slot = i;
    }
    if (free_slot >= 0) {
        snprintf(lockless[free_slot].name, sizeof(lockless[0].name), "%s",
                 name);
        lockless[free_slot].seen = monotonic_s();
    }
    return false;
}

static void lockless_forget(const char *name)
{
    for (int i = 0; i < INCOMING_LOCKLESS_MAX; i++)
        if (strcmp(lockless[i].name, name) == 0)
            lockless[i].name[0] = '\0';
}

/* Forget the folders gone from incoming (ifd) since. */
static void lockless_prune(int ifd)
{
    struct stat st;
    for (int i = 0; i < INCOMING_LOCKLESS_MAX; i++)
        if (lockless[i].name[0] &&
            fstatat(ifd, lockless[i].name, &st, AT_SYMLINK_NOFOLLOW) < 0 &&
            errno == ENOENT)
            lockless[i].name[0] = '\0';
}

int image_sweep_incoming(const char *cache_dir)
{
    char inc[4300];
    snprintf(inc, sizeof(inc), "%s/incoming", cache_dir);
    int ifd = open(inc, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat ist;
    if (ifd < 0 || fstat(ifd, &ist) < 0 || ist.st_uid != geteuid()) {
        if (ifd >= 0)
            close(ifd);
        return 0;
    }
    int lfd = fcntl(ifd, F_DUPFD_CLOEXEC, 0);
    DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
    if (!d) {
        if (lfd >= 0)
            close(lfd);
        close(ifd);
        return 0;
    }
    time_t now = time(NULL);
    int tfd = -1;
    lockless_prune(ifd);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        char lock[300];
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.' || n > 200 ||
            fstatat(ifd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (n > 5 && strcmp(e->d_name + n - 5, ".lock") == 0) {
            /* A lock without its folder: a pull between its two steps,
             * or one that died there (root's file: its time is true). */
            snprintf(lock, sizeof(lock), "%.*s", (int)(n - 5), e->d_name);
            struct stat dst;
            if (S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
                now - st.st_mtime >= IMAGE_AUTH_STALE_S &&
                fstatat(ifd, lock, &dst, AT_SYMLINK_NOFOLLOW) < 0 &&
                errno == ENOENT) {
                int fd =
                    openat(ifd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
                    unlinkat(ifd, e->d_name, 0);
                if (fd >= 0)
                    close(fd);
            }
            continue;
        }
        if (!S_ISDIR(st.st_mode))
            continue;
        /* A folder: a pull made its lock first and holds it until the
         * folder is gone; no lock, or one nobody holds, means no pull. */
        snprintf(lock, sizeof(lock), "%s.lock", e->d_name);
        int fd = openat(ifd, lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && (errno != ENOENT || !lockless_stale(e->d_name)))
            continue;
        if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
            close(fd);
            continue;
        }
        if (tfd < 0)
            tfd = trash_open(ifd, &ist);
        if (tfd >= 0 && trash_put(ifd, ist.st_dev, tfd, e->d_name) == 0) {
            sh_log(LOG_INFO, "image", "removed a stale copy %s/%s", inc,
                   e->d_name);
            unlinkat(ifd, lock, 0);
            lockless_forget(e->d_name);
        }
        if (fd >= 0)
            close(fd);
    }
    closedir(d);
    /* What an earlier sweep left in the trash goes too. */
    struct stat tst;
    if (tfd < 0 && fstatat(ifd, INCOMING_TRASH, &tst, AT_SYMLINK_NOFOLLOW) == 0)
        tfd = trash_open(ifd, &ist);
    int more = 0;
    if (tfd >= 0) {
        more = trash_empty(ifd, tfd, ist.st_dev);
        close(tfd);
    }
    close(ifd);
    return more;
}
