/* SPDX-License-Identifier: Apache-2.0 */
/* The node's image cache (see image.h). */
#include "agent/image.h"

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

#define TOOL_OUT_MAX (1 << 20)
#define TICK_MS 500

/* ---- running a tool ---- */

struct tool_run {
    char *out; /* stdout, NUL-terminated */
    size_t nout;
    char err[4096]; /* the end of stderr */
    size_t nerr;
    int status;
};

typedef void (*tool_tick_f)(void *arg);

/* A tool run as a job's user (in a fresh private folder, see user_dir). */
struct tool_as {
    const struct user_creds *user;
    const char *home; /* its HOME and TMPDIR */
};

/* In a child about to act for user: no descriptor of ours beyond stdio,
 * none of root's groups or ids. 0, or -1 with errno. */
static int become_user(const struct user_creds *u)
{
    if (close_range(3, UINT_MAX, 0) < 0) {
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
    }
    if (!u)
        return 0; /* tests: as this process */
    if (setgroups((size_t)u->ngroups, u->groups) < 0 ||
        setresgid(u->gid, u->gid, u->gid) < 0 ||
        setresuid(u->uid, u->uid, u->uid) < 0)
        return -1;
    if (getuid() != u->uid || geteuid() != u->uid)
        return errno = EPERM, -1;
    return 0;
}

static void keep_tail(char *buf, size_t *n, size_t cap, const char *add,
                      size_t len)
{
    if (len >= cap - 1) {
        add += len - (cap - 1);
        len = cap - 1;
    }
    if (*n + len >= cap) {
        size_t drop = *n + len - (cap - 1);
        memmove(buf, buf + drop, *n - drop);
        *n -= drop;
    }
    memcpy(buf + *n, add, len);
    *n += len;
    buf[*n] = '\0';
}

/* Run argv (found in PATH), collecting stdout and the tail of stderr;
 * tick (may be NULL) every TICK_MS while it runs; as (may be NULL): as
 * that user, with only stdio open. 0 when it ran (its exit
 * status in r->status), -1 when it could not be started. */
static int tool_run(char *const argv[], struct tool_run *r, tool_tick_f tick,
                    void *arg, const struct tool_as *as)
{
    int po[2], pe[2];
    memset(r, 0, sizeof(*r));
    r->out = calloc(1, TOOL_OUT_MAX + 1);
    if (!r->out || pipe2(po, O_CLOEXEC) < 0)
        return -1;
    if (pipe2(pe, O_CLOEXEC) < 0) {
        close(po[0]);
        close(po[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        /* Nothing of root's own registry credentials, in any place skopeo
         * looks for them (REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR or
         * /run/containers/0/auth.json, $XDG_CONFIG_HOME, ~/.docker and
         * $DOCKER_CONFIG): --authfile does not stop it from falling back
         * to them. A registry's credentials come only from the job's
         * project (the --authfile the caller gives). */
        const char *none = "/nonexistent/shoal";
        unsetenv("REGISTRY_AUTH_FILE");
        if (!as) {
            setenv("HOME", none, 1);
            setenv("XDG_RUNTIME_DIR", none, 1);
            setenv("XDG_CONFIG_HOME", none, 1);
            setenv("DOCKER_CONFIG", none, 1);
        } else {
            /* Its own private folder, and nothing of root's. */
            setenv("HOME", as->home, 1);
            setenv("TMPDIR", as->home, 1);
            unsetenv("XDG_RUNTIME_DIR");
            unsetenv("XDG_CONFIG_HOME");
            unsetenv("DOCKER_CONFIG");
            if (become_user(as->user) < 0) {
                dprintf(2, "cannot become the job's user: %s\n",
                        strerror(errno));
                _exit(126);
            }
        }
        execvp(argv[0], argv);
        dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        return -1;
    }
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
        int n = poll(fds, 2, TICK_MS);
        if (n < 0 && errno != EINTR)
            break;
        if (n == 0 && tick)
            tick(arg);
        for (int i = 0; n > 0 && i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP)))
                continue;
            char buf[8192];
            ssize_t got = read(fds[i].fd, buf, sizeof(buf));
            if (got <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            } else if (i == 0) {
                size_t room = TOOL_OUT_MAX - r->nout;
                size_t take = (size_t)got < room ? (size_t)got : room;
                memcpy(r->out + r->nout, buf, take);
                r->nout += take;
            } else {
                keep_tail(r->err, &r->nerr, sizeof(r->err), buf, (size_t)got);
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
        ;
    return 0;
}

static bool tool_ok(const struct tool_run *r)
{
    return WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
}

void image_tool_error(const char *output, char *buf, size_t size)
{
    const char *msg = NULL;
    for (const char *p = output; (p = strstr(p, "msg=\"")); p += 5)
        msg = p + 5; /* the last one */
    if (msg) {
        size_t n = 0;
        for (const char *p = msg; *p && *p != '\n' && n + 1 < size; p++) {
            if (*p == '"' && p[-1] != '\\')
                break;
            if (*p == '\\' && p[1] == '"')
                continue;
            buf[n++] = *p;
        }
        buf[n] = '\0';
        return;
    }
    /* The last non-empty line. */
    const char *end = output + strlen(output);
    while (end > output && (end[-1] == '\n' || end[-1] == ' '))
        end--;
    const char *start = end;
    while (start > output && start[-1] != '\n')
        start--;
    snprintf(buf, size, "%.*s", (int)(end - start), start);
    if (!buf[0])
        snprintf(buf, size, "no message");
}

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

static void rm_tree(const char *path)
{
    file_remove_tree(path);
}

/* ---- the cache ---- */

struct pull {
    const struct image_cache_cfg *cfg;
    image_progress_f progress;
    image_resolved_f resolved;
    void *arg;
    char blobs[4200]; /* the layout's blobs folder */
    uint64_t before;  /* its size before the copy */
    uint64_t total;   /* bytes the image's layers hold; 0 unknown */
    const struct user_creds *user; /* who opens a local image */
    struct tool_as as;             /* skopeo as that user */
    char udir[4300];               /* its private folder (see user_dir) */
    int udir_fd;                   /* that folder, pinned; -1 */
    int udir_lock;                 /* its NAME.lock, locked; -1 */
    char uname[80];                /* its name under incoming/ */
    bool copied;                   /* the user's copy is in udir/layout */
    bool user_copying;             /* skopeo copies into udir as the user */
    bool archive;                  /* oci-archive: (else oci: layout) */
    char dir[4200];                /* the archive or layout, as given */
    char tag[256];                 /* the layout's tag, "" for none */
    int src_fd;                    /* the local image, opened as the user; -1 */
    char src[96 + 4200];           /* what skopeo reads (/proc/self/fd/N) */
    char authdir[4300];            /* a registry's auth file's folder */
    char authfile[4400];           /* that file ("" for none) */
    int auth_lock;                 /* authdir, locked while in use; -1 */
};

static void fail(char *why, size_t size, const char *transport,
                 const char *what, const struct tool_run *r)
{
    char msg[600];
    image_tool_error(r ? r->err : "", msg, sizeof(msg));
    snprintf(why, size, "image %s: %s: %s", transport, what, msg);
}

/* As fail, the cause (the message's last part, as "permission denied")
 * first: a job's reason is short, and a path in the message is long. */
static void fail_cause(char *why, size_t size, const char *transport,
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

static void note(struct pull *p, const char *text)
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

static void pull_tick(void *arg)
{
    struct pull *p = arg;
    if (!p->total)
        return;
    uint64_t now = p->user_copying ? user_blobs_bytes(p) : image_du(p->blobs);
    uint64_t done = now > p->before ? now - p->before : 0;
    if (done > p->total)
        done = p->total;
    char a[32], b[32], text[96];
    human(done, a, sizeof(a));
    human(p->total, b, sizeof(b));
    snprintf(text, sizeof(text), "pulling image (%s / %s)", a, b);
    note(p, text);
}

/* The bytes of the layers of a manifest (0 for an index or unknown). */
static uint64_t manifest_bytes(const char *raw)
{
    json_error_t jerr;
    json_t *m = json_loads(raw, 0, &jerr);
    uint64_t sum = 0;
    size_t i;
    json_t *l;
    json_array_foreach (json_object_get(m, "layers"), i, l)
        sum += (uint64_t)json_integer_value(json_object_get(l, "size"));
    json_decref(m);
    return sum;
}

/* ---- local images: opened as the user, digest from the index ---- */

#define INDEX_MAX (1 << 20)

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
static char *read_fd(int fd, size_t max, size_t *len)
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
static char *read_small(const char *path, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    size_t len;
    char *out = fd >= 0 ? read_fd(fd, max, &len) : NULL;
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

static bool is_local(const char *transport)
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
    char *out = read_fd(fd, INDEX_MAX, len);
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
static int open_local(struct pull *p, const char *transport, char *why,
                      size_t size)
{
    snprintf(p->src, sizeof(p->src), "%s", transport);
    if (!is_local(transport))
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
static int resolve_local(struct pull *p, char *digest, size_t dsize)
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
static int verify_local(struct pull *p, const char *transport,
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
        p->total = manifest_bytes(raw);
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

static int resolve(struct pull *p, const char *transport, char *digest,
                   size_t dsize, char *why, size_t size)
{
    if (resolve_local(p, digest, dsize) == 0)
        return verify_local(p, transport, digest, why, size);
    const char *tls =
        p->cfg->tls_verify ? "--tls-verify=true" : "--tls-verify=false";
    bool docker = strncmp(transport, "docker://", 9) == 0;
    /* A local image is read by skopeo run as the job's user, from the
     * path the user gave: root never looks it up. */
    const struct tool_as *as = is_local(transport) ? &p->as : NULL;
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
    if (tool_run(argv, &r, NULL, NULL, as) < 0) {
        snprintf(why, size, "image %s: cannot run skopeo: %s", transport,
                 strerror(errno));
        free(r.out);
        return -1;
    }
    if (!tool_ok(&r)) {
        char what[200] = "cannot resolve";
        if (docker && p->cfg->auth_secret)
            snprintf(what, sizeof(what),
                     "cannot resolve with the credentials of secret %s",
                     p->cfg->auth_secret);
        if (docker)
            fail_cause(why, size, transport, what, &r);
        else
            fail(why, size, transport, what, &r);
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
    if (is_local(transport))
        return verify_local(p, transport, digest, why, size);
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
    if (tool_run(raw, &r, NULL, NULL, NULL) == 0 && tool_ok(&r))
        p->total = manifest_bytes(r.out);
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
    if (is_local(transport))
        return verify_local(p, transport, digest, why, size);
    char src[4400];
    by_digest(transport, digest, src, sizeof(src));
    const char *tls =
        p->cfg->tls_verify ? "--tls-verify=true" : "--tls-verify=false";
    char *raw[10] = {"skopeo",    "--insecure-policy", "inspect",   "--raw",
                     (char *)tls, "--authfile",        p->authfile, src,
                     NULL};
    struct tool_run r;
    if (tool_run(raw, &r, NULL, NULL, NULL) < 0) {
        snprintf(why, size, "image %s: cannot run skopeo: %s", transport,
                 strerror(errno));
        free(r.out);
        return -1;
    }
    if (!tool_ok(&r)) {
        char what[200];
        snprintf(what, sizeof(what),
                 "cannot get %s (the digest the job's first node resolved it "
                 "to)",
                 digest);
        fail_cause(why, size, transport, what, &r);
        free(r.out);
        return -1;
    }
    p->total = manifest_bytes(r.out);
    free(r.out);
    return 0;
}

static int lock_file(const char *path, int op)
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

static bool is_dir(const char *path)
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
static void evict(const struct image_cache_cfg *cfg, const char *keep)
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
        if (total <= cfg->max_bytes || !oldest[0]) {
            if (oldest_fd >= 0)
                close(oldest_fd);
            return;
        }
        sh_log(LOG_INFO, "image",
               "evicting sha256:%s (cache %" PRIu64 " bytes, limit %" PRIu64
               ")",
               oldest, total, cfg->max_bytes);
        snprintf(path, sizeof(path), "%s/bundles/%s", cfg->dir, oldest);
        rm_tree(path);
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
        if (tool_run(rm, &r, NULL, NULL, NULL) == 0) {
            free(r.out);
            char *gc[] = {"umoci", "gc", "--layout", layout, NULL};
            tool_run(gc, &r, NULL, NULL, NULL);
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
static int drop_devices(const char *bundle)
{
    char rootfs[4300];
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", bundle);
    return nftw(rootfs, drop_device, 32, FTW_PHYS) == 0 ? 0 : -1;
}

/* What skopeo copied is what digest names: the cache's own index tags
 * hex(digest) with digest, or the copy is removed. 0, or -1 with why. */
static int check_copy(struct pull *p, const char *transport, const char *digest,
                      char *why, size_t size)
{
    char path[4300];
    snprintf(path, sizeof(path), "%s/oci/index.json", p->cfg->dir);
    char *text = read_small(path, INDEX_MAX);
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
        if (tool_run(rm, &r, NULL, NULL, NULL) == 0) {
            free(r.out);
            char *gc[] = {"umoci", "gc", "--layout", layout, NULL};
            tool_run(gc, &r, NULL, NULL, NULL);
        }
        free(r.out);
    }
    free(got);
    return ok ? 0 : -1;
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
static int user_dir(struct pull *p, const char *transport, char *why,
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
static void user_dir_remove(struct pull *p)
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
static int user_copy(struct pull *p, const char *transport, const char *digest,
                     char *why, size_t size)
{
    char dst[4400];
    snprintf(dst, sizeof(dst), "oci:%s/layout:%s", p->udir, digest + 7);
    p->before = 0;
    note(p, "pulling image");
    char *copy[] = {"skopeo",  "--insecure-policy", "copy",
                    "--quiet", (char *)transport,   dst,
                    NULL};
    struct tool_run r;
    p->user_copying = true;
    int rc = tool_run(copy, &r, pull_tick, p, &p->as);
    p->user_copying = false;
    if (rc < 0 || !tool_ok(&r)) {
        fail_cause(why, size, transport, "cannot copy it as the job's user",
                   &r);
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

/* The cache's layout (oci/, root's alone), made when missing. */
static int cache_layout(const struct image_cache_cfg *cfg, char *why,
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
static int cache_tag(const struct image_cache_cfg *cfg, const char *digest,
                     uint64_t len, const char *type, char *why, size_t size)
{
    char path[4300], tmp[4400];
    snprintf(path, sizeof(path), "%s/oci/index.json", cfg->dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    char *text = read_small(path, INDEX_MAX);
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

/* Take digest and its blobs from the user's copy into the cache (under
 * the cache lock). 0, or -1 with why. */
static int import_copy(struct pull *p, const char *transport,
                       const char *digest, char *why, size_t size)
{
    char e[700] = "", path[4300];
    int lfd = -1, bfd = -1, sfd = -1, cfd = -1, mfd = -1;
    char *raw = NULL;
    json_t *man = NULL, *blobs = NULL;
    int rc = -1;
    if (cache_layout(p->cfg, why, size) < 0)
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
    raw = mfd < 0 ? NULL : read_fd(mfd, INDEX_MAX, &len);
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
        cache_tag(p->cfg, digest, len, oci_manifest, e, sizeof(e)) < 0)
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
    p->before = image_du(p->blobs);
    note(p, "pulling image");
    /* Copy what the digest names, not what a tag names now. */
    char src[4400];
    if (strncmp(transport, "docker://", 9) == 0) {
        by_digest(transport, digest, src, sizeof(src));
    } else {
        snprintf(src, sizeof(src), "%s", p->src);
    }
    if (is_local(transport) && !p->copied) {
        snprintf(why, size, "image %s: not copied as the job's user",
                 transport);
        return -1;
    }
    if (p->copied) {
        /* A local image, copied by its user: checked and taken in. */
        if (import_copy(p, transport, digest, why, size) < 0)
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
    if (tool_run(copy, &r, pull_tick, p, NULL) < 0 || !tool_ok(&r)) {
        fail_cause(why, size, transport, "cannot pull", &r);
        free(r.out);
        return -1;
    }
    free(r.out);
copied:
    if (check_copy(p, transport, digest, why, size) < 0)
        return -1;
    note(p, "unpacking image");
    snprintf(tmp, sizeof(tmp), "%s/bundles/%s.tmp", cfg->dir, hex);
    snprintf(final, sizeof(final), "%s/bundles/%s", cfg->dir, hex);
    rm_tree(tmp);
    char img[4300];
    snprintf(img, sizeof(img), "%s:%s", layout, hex);
    char *unpack[] = {"umoci", "unpack", "--image", img, tmp, NULL, NULL};
    if (geteuid() != 0) {
        unpack[2] = "--rootless";
        unpack[3] = "--image";
        unpack[4] = img;
        unpack[5] = tmp;
    }
    if (tool_run(unpack, &r, NULL, NULL, NULL) < 0 || !tool_ok(&r)) {
        fail(why, size, transport, "cannot unpack", &r);
        free(r.out);
        rm_tree(tmp);
        return -1;
    }
    free(r.out);
    if (drop_devices(tmp) < 0) {
        snprintf(why, size, "image %s: cannot remove its device nodes: %s",
                 transport, strerror(errno));
        rm_tree(tmp);
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
        rm_tree(tmp);
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
    p->progress = progress;
    p->resolved = resolved;
    p->arg = arg;
    p->user = user;
    p->src_fd = -1;
    p->udir_fd = -1;
    p->udir_lock = -1;
    p->auth_lock = -1;
    int rc = open_local(p, transport, why, size);
    if (rc == 0)
        rc = prepare(p, transport, out, why, size);
    if (p->src_fd >= 0)
        close(p->src_fd);
    bool local = p->udir[0] != '\0';
    user_dir_remove(p);
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
    if (cache_layout(cfg, why, size) < 0)
        return -1;
    if (is_local(transport) && user_dir(p, transport, why, size) < 0)
        return -1;
    if (strncmp(transport, "docker://", 9) == 0 &&
        auth_file(p, transport, why, size) < 0)
        return -1;
    note(p, "resolving image");
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
    out->lock_fd = lock_file(path, LOCK_SH);
    if (out->lock_fd >= 0 && !is_dir(out->dir)) {
        /* Not there: pull under the cache lock (another run may be pulling
         * the same digest: then it is there once we hold the lock). */
        close(out->lock_fd);
        out->lock_fd = -1;
        if (is_local(transport) &&
            user_copy(p, transport, out->digest, why, size) < 0)
            return -1;
        char lpath[4200];
        snprintf(lpath, sizeof(lpath), "%s/lock", cfg->dir);
        note(p, "pulling image (waiting for the node's cache)");
        int cache_fd = lock_file(lpath, LOCK_EX);
        if (cache_fd < 0) {
            snprintf(why, size, "image cache %s: %s", cfg->dir,
                     strerror(errno));
            return -1;
        }
        int rc = 0;
        if (!is_dir(out->dir)) {
            rc = pull_and_unpack(p, transport, out->digest, why, size);
            out->unpacked = rc == 0;
        }
        if (rc == 0)
            out->lock_fd = lock_file(path, LOCK_SH);
        if (rc == 0 && cfg->max_bytes)
            evict(cfg, hex);
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
        int cache_fd = lock_file(lpath, LOCK_EX | LOCK_NB);
        if (cache_fd >= 0) {
            evict(cfg, hex);
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
