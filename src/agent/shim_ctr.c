/* SPDX-License-Identifier: Apache-2.0 */
/* A run in an image, the shim's side (see shim_ctr.h). */
#include "agent/shim_ctr.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/image.h"
#include "agent/tools.h"
#include "agent/user_open.h"
#include "lib/util/clock.h"
#include "lib/util/file.h"

struct shim_ctr {
    json_t *launch; /* borrowed */
    const char *run_dir;
    int dirfd;
    char id[128];
    char dir[4200];        /* RUN/ctr: what crun gets (a tmpfs, root-only) */
    char state[4300];      /* crun's --root */
    char bundle_dir[4300]; /* RUN/ctr/bundle: crun's bundle, 0711 */
    char rootfs[4400];     /* in it */
    char shm[4300];        /* the tasks' shared /dev/shm */
    struct image_bundle bundle;
    json_t *image_config;
    char passwd[4300];   /* RUN/ctr/passwd: the image's and the user's */
    char group[4300];    /* RUN/ctr/group */
    char home_src[4300]; /* RUN/ctr/home, when the user's home is wanted */
    char home_dst[4200];
    bool identity; /* passwd and group were written */
    char task_id[160];
    int ntasks; /* containers started: shoal-KEY-0 .. */
    char *argv[16];
    char arg_buf[4][4400];
};

static void progress(void *arg, const char *note)
{
    struct shim_ctr *c = arg;
    file_write_atomic_at(c->dirfd, "progress", note, strlen(note), 0644, false,
                         NULL);
}

/* RUN/digest: what the reference resolved to, as soon as it is known (the
 * agent reports it; the job's other nodes pull that). */
static void resolved(void *arg, const char *digest)
{
    struct shim_ctr *c = arg;
    char line[96];
    int n = snprintf(line, sizeof(line), "%s\n", digest);
    if (n > 0 && (size_t)n < sizeof(line))
        file_write_atomic_at(c->dirfd, "digest", line, (size_t)n, 0644, false,
                             NULL);
}

static int failf(char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int failf(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return -1;
}

/* RUN/ctr: a tmpfs (the writable layer, charged to the job's memory)
 * holding upper/, work/, state/ and bundle/rootfs/ = overlay(image rootfs). */
static int mount_rootfs(struct shim_ctr *c, char *why, size_t size)
{
    char upper[4300], work[4300], opts[13000], lower[4300];
    if (unshare(CLONE_NEWNS) < 0 ||
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return failf(why, size, "cannot make the container's namespace: %s",
                     strerror(errno));
    if ((mkdir(c->dir, 0700) < 0 && errno != EEXIST) ||
        mount("tmpfs", c->dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0)
        return failf(why, size, "cannot mount the container's folder %s: %s",
                     c->dir, strerror(errno));
    snprintf(upper, sizeof(upper), "%s/upper", c->dir);
    snprintf(work, sizeof(work), "%s/work", c->dir);
    snprintf(lower, sizeof(lower), "%s/rootfs", c->bundle.dir);
    const char *shm = c->shm;
    if (mkdir(upper, 0755) < 0 || mkdir(work, 0700) < 0 ||
        mkdir(c->bundle_dir, 0711) < 0 || mkdir(c->rootfs, 0755) < 0 ||
        mkdir(c->state, 0700) < 0 || mkdir(shm, 01777) < 0 ||
        chmod(shm, 01777) < 0)
        return failf(why, size, "cannot lay out %s: %s", c->dir,
                     strerror(errno));
    snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s", lower,
             upper, work);
    /* nodev as a second wall: the bundle holds no device nodes (image.c
     * drops them when it unpacks), though crun's own bind of the rootfs
     * does not keep this flag. */
    if (mount("overlay", c->rootfs, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
        return failf(why, size, "cannot mount the image's rootfs (overlay): %s",
                     strerror(errno));
    return 0;
}

static void write_image_note(struct shim_ctr *c, const char *image, int64_t ms)
{
    json_t *o = json_pack("{s:s, s:s, s:b, s:I}", "image", image, "digest",
                          c->bundle.digest, "unpacked", c->bundle.unpacked,
                          "prepare_ms", (json_int_t)ms);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (text)
        file_write_atomic_at(c->dirfd, "image.json", text, strlen(text), 0644,
                             false, NULL);
    free(text);
    json_decref(o);
}

/* Bind what fd names onto RUN/ctr/mnt-K (in the shim's own mount namespace,
 * a root-only tmpfs) and give crun that path: nothing of it is the user's
 * to change. 0, or -1 with errno. */
static int stage_mount(struct shim_ctr *c, size_t k, int fd, char *out,
                       size_t size)
{
    struct stat st;
    char proc[64];
    if (fstat(fd, &st) < 0)
        return -1;
    snprintf(out, size, "%s/mnt-%zu", c->dir, k);
    if (S_ISDIR(st.st_mode)) {
        if (mkdir(out, 0700) < 0)
            return -1;
    } else {
        int t = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (t < 0)
            return -1;
        close(t);
    }
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    return mount(proc, out, NULL, MS_BIND | MS_REC, NULL);
}

int shim_ctr_check_mounts(struct shim_ctr *c, uid_t uid, gid_t gid,
                          const gid_t *groups, int ngroups, char *why,
                          size_t size)
{
    size_t i;
    json_t *m;
    json_array_foreach (
        json_object_get(json_object_get(c->launch, "container"), "mounts"), i,
        m) {
        const char *src = json_string_value(json_object_get(m, "src"));
        char staged[4400];
        int err = 0;
        /* As the job's user: a container mount reaches only what the user
         * could reach (crun binds as root), and the descriptor pins what
         * the user's lookup found. */
        struct user_creds u = {uid, gid, groups, ngroups};
        int fd = src ? user_open_path(src, &u, &err) : -1;
        if (fd < 0)
            return failf(why, size, "container mount %s: %s", src ? src : "?",
                         strerror(err ? err : EINVAL));
        int rc = stage_mount(c, i, fd, staged, sizeof(staged));
        err = errno;
        close(fd);
        if (rc < 0)
            return failf(why, size, "container mount %s: cannot bind it: %s",
                         src, strerror(err));
        json_object_set_new(m, "src", json_string(staged));
    }
    return 0;
}

static int prepare_identity(struct shim_ctr *c, const struct passwd *pw,
                            const gid_t *groups, int ngroups, char *why,
                            size_t size);

struct shim_ctr *shim_ctr_prepare(const json_t *launch, const char *run_dir,
                                  int dirfd, const char *id, char *why,
                                  size_t size)
{
    const json_t *cj = json_object_get(launch, "container");
    struct shim_ctr *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(why, size, "out of memory");
        return NULL;
    }
    c->launch = (json_t *)launch;
    c->run_dir = run_dir;
    c->dirfd = dirfd;
    c->bundle.lock_fd = -1;
    snprintf(c->id, sizeof(c->id), "shoal-%s", id);
    snprintf(c->dir, sizeof(c->dir), "%s/ctr", run_dir);
    snprintf(c->state, sizeof(c->state), "%s/state", c->dir);
    snprintf(c->bundle_dir, sizeof(c->bundle_dir), "%s/bundle", c->dir);
    snprintf(c->rootfs, sizeof(c->rootfs), "%s/rootfs", c->bundle_dir);
    snprintf(c->shm, sizeof(c->shm), "%s/shm", c->dir);
    const char *image = json_string_value(json_object_get(cj, "image"));
    struct image_cache_cfg cfg = {
        .dir = json_string_value(json_object_get(cj, "cache_dir")),
        .max_bytes =
            (uint64_t)json_integer_value(json_object_get(cj, "cache_size")),
        .max_unpacked =
            (uint64_t)json_integer_value(json_object_get(cj, "max_size")),
        .max_files =
            (uint64_t)json_integer_value(json_object_get(cj, "max_files")),
        .tls_verify = !json_is_false(json_object_get(cj, "tls_verify")),
    };
    const json_t *auth = json_object_get(launch, "registry_auth");
    cfg.auth_registry = json_string_value(json_object_get(auth, "registry"));
    cfg.auth_user = json_string_value(json_object_get(auth, "username"));
    cfg.auth_pass = json_string_value(json_object_get(auth, "password"));
    cfg.auth_secret = json_string_value(json_object_get(auth, "secret"));
    cfg.digest = json_string_value(json_object_get(cj, "digest"));
    const char *transport = json_string_value(json_object_get(cj, "transport"));
    if (!cfg.dir || !transport || !image) {
        snprintf(why, size, "the run's container description is incomplete");
        goto fail;
    }
    if (geteuid() != 0) {
        /* crun as the job's user needs user namespaces and a rootless
         * unpack; not done yet: say so rather than run bare. */
        snprintf(why, size,
                 "image %s: jobs in images need the agent to run as root",
                 image);
        goto fail;
    }
    /* A local image is opened as the job's user (see image.h). */
    const char *uname = json_string_value(json_object_get(launch, "user"));
    struct passwd pwd, *pw = NULL;
    char pwbuf[4096];
    if (uname)
        getpwnam_r(uname, &pwd, pwbuf, sizeof(pwbuf), &pw);
    else
        getpwuid_r(getuid(), &pwd, pwbuf, sizeof(pwbuf), &pw);
    if (!pw) {
        snprintf(why, size, "user %s does not exist on this node",
                 uname ? uname : "of the agent");
        goto fail;
    }
    gid_t groups[256];
    int ngroups = (int)(sizeof(groups) / sizeof(groups[0]));
    if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &ngroups) < 0)
        ngroups = 0;
    struct user_creds user = {pw->pw_uid, pw->pw_gid, groups, ngroups};
    int64_t t0 = clock_mono_ms();
    if (image_prepare(&cfg, transport, &user, progress, resolved, c, &c->bundle,
                      why, size) < 0)
        goto fail;
    /* Pulled: the credentials are no longer needed. */
    json_object_del(c->launch, "registry_auth");
    write_image_note(c, image, clock_mono_ms() - t0);
    char path[4300];
    snprintf(path, sizeof(path), "%s/config.json", c->bundle.dir);
    json_error_t jerr;
    c->image_config = json_load_file(path, 0, &jerr);
    if (!c->image_config) {
        snprintf(why, size, "image %s: its unpacked config is unreadable: %s",
                 image, jerr.text);
        goto fail;
    }
    if (mount_rootfs(c, why, size) < 0 ||
        prepare_identity(c, pw, groups, ngroups, why, size) < 0)
        goto fail;
    unlinkat(dirfd, "progress", 0);
    return c;
fail:
    unlinkat(dirfd, "progress", 0);
    shim_ctr_destroy(c);
    return NULL;
}

static char *node_name(char *buf, size_t size)
{
    if (gethostname(buf, size) < 0)
        snprintf(buf, size, "shoal");
    return buf;
}

/* crun (1.8) refuses a "hybrid" host (cgroup v1 controllers and a v2
 * hierarchy at /sys/fs/cgroup/unified that holds a controller, such as
 * hugetlb), even with --cgroup-manager=disabled. It manages no cgroup here,
 * so the shim's namespace drops the v2 mount (after the shim opened the
 * job's cgroups): crun then sees plain v1. */
static void hide_hybrid_unified(void)
{
    struct statfs root, uni;
    if (statfs("/sys/fs/cgroup", &root) == 0 && root.f_type == TMPFS_MAGIC &&
        statfs("/sys/fs/cgroup/unified", &uni) == 0 &&
        uni.f_type == CGROUP2_SUPER_MAGIC)
        umount2("/sys/fs/cgroup/unified", MNT_DETACH);
}

/* path (relative, no leading '/') inside the rootfs rootfd names, symlinks
 * resolved as if rootfd were / (as crun resolves them): the image is the
 * user's and cannot lead a lookup out of it. */
static int open_in_root(int rootfd, const char *path, int flags)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
    };
    return (int)syscall(SYS_openat2, rootfd, path[0] ? path : ".", &how,
                        sizeof(how));
}

/* ---- the job's user inside: passwd, group, HOME ----
 *
 * The image knows nothing of the node's users: without an entry `whoami`
 * fails and tools that look the user up (ssh, pip, Python's getpass)
 * break. The run gets its own /etc/passwd and /etc/group: the image's
 * lines, less any for the user's name or ids, and the user's (bound
 * read-only, as enroot does). */

#define IDENTITY_MAX (1 << 20)

/* The image's file path (relative) read in its root, at most
 * IDENTITY_MAX bytes: a NUL-terminated buffer (empty when the image has
 * none or it is not a regular file). NULL when out of memory. */
static char *read_in_root(int rootfd, const char *path)
{
    char *buf = calloc(1, IDENTITY_MAX + 1);
    if (!buf)
        return NULL;
    int fd = open_in_root(rootfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0)
        return buf;
    size_t n = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        ssize_t got;
        while (n < IDENTITY_MAX &&
               (got = read(fd, buf + n, IDENTITY_MAX - n)) > 0)
            n += (size_t)got;
    }
    buf[n] = '\0';
    close(fd);
    return buf;
}

/* Field k (0-based, ':'-separated) of line as a number, or -1. */
static long long field_id(const char *line, size_t len, int k)
{
    const char *p = line, *end = line + len;
    for (int i = 0; i < k; i++) {
        p = memchr(p, ':', (size_t)(end - p));
        if (!p)
            return -1;
        p++;
    }
    char *e;
    long long v = strtoll(p, &e, 10);
    return e > p && e <= end && (e == end || *e == ':') ? v : -1;
}

static bool name_is(const char *line, size_t len, const char *name)
{
    size_t n = strlen(name);
    return n < len && strncmp(line, name, n) == 0 && line[n] == ':';
}

/* Write the image's lines of text to f, less those naming one of names
 * (field 0) or one of ids (field id_field). */
static void copy_lines(FILE *f, const char *text, const char *const *names,
                       int nnames, const long long *ids, int nids, int id_field)
{
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        bool drop = false;
        long long id = field_id(line, len, id_field);
        for (int i = 0; i < nnames && !drop; i++)
            drop = name_is(line, len, names[i]);
        for (int i = 0; i < nids && !drop; i++)
            drop = id == ids[i];
        if (!drop && len > 0)
            fprintf(f, "%.*s\n", (int)len, line);
        line = nl ? nl + 1 : line + len;
    }
}

static int write_passwd(struct shim_ctr *c, int rootfd, const struct passwd *pw,
                        const char *home)
{
    char *text = read_in_root(rootfd, "etc/passwd");
    FILE *f = text ? fopen(c->passwd, "we") : NULL;
    if (!f) {
        free(text);
        return -1;
    }
    const char *names[] = {pw->pw_name};
    long long ids[] = {pw->pw_uid};
    copy_lines(f, text, names, 1, ids, 1, 2);
    fprintf(f, "%s:x:%u:%u:%s:%s:/bin/sh\n", pw->pw_name, (unsigned)pw->pw_uid,
            (unsigned)pw->pw_gid, pw->pw_name, home);
    free(text);
    return fclose(f) == 0 ? 0 : -1;
}

static int write_group(struct shim_ctr *c, int rootfd, const struct passwd *pw,
                       const gid_t *groups, int ngroups)
{
    enum { MAX = 257 };
    gid_t gids[MAX];
    int n = 0;
    gids[n++] = pw->pw_gid;
    for (int i = 0; i < ngroups && n < MAX; i++) {
        bool seen = false;
        for (int k = 0; k < n && !seen; k++)
            seen = gids[k] == groups[i];
        if (!seen)
            gids[n++] = groups[i];
    }
    /* Each group's name (NULL: the node has none; the gid shows bare). */
    char *gname[MAX];
    const char *names[MAX];
    long long ids[MAX];
    int nn = 0;
    for (int i = 0; i < n; i++) {
        struct group *gr = getgrgid(gids[i]);
        ids[i] = gids[i];
        gname[i] =
            gr && gr->gr_name && *gr->gr_name ? strdup(gr->gr_name) : NULL;
        if (gname[i])
            names[nn++] = gname[i];
    }
    char *text = read_in_root(rootfd, "etc/group");
    FILE *f = text ? fopen(c->group, "we") : NULL;
    int rc = -1;
    if (f) {
        copy_lines(f, text, names, nn, ids, n, 2);
        for (int i = 0; i < n; i++)
            if (gname[i])
                fprintf(f, "%s:x:%u:%s\n", gname[i], (unsigned)gids[i],
                        pw->pw_name);
        rc = fclose(f) == 0 ? 0 : -1;
    }
    for (int i = 0; i < n; i++)
        free(gname[i]);
    free(text);
    return rc;
}

/* path is dir or under it. */
static bool path_under(const char *path, const char *dir)
{
    size_t n = dir ? strlen(dir) : 0;
    if (n == 0)
        return false;
    if (strcmp(dir, "/") == 0)
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The user's home inside: bound in by a volume or a container mount, or
 * the image's own folder, or else a per-run folder of the user's (in the
 * run's tmpfs, gone with it) bound there. */
static int plan_home(struct shim_ctr *c, int rootfd, const struct passwd *pw)
{
    const char *home = pw->pw_dir;
    if (!home || home[0] != '/' || strcmp(home, "/") == 0)
        return 0;
    size_t i;
    json_t *m;
    json_array_foreach (json_object_get(c->launch, "mounts"), i, m) {
        if (path_under(home, json_string_value(json_object_get(m, "path"))))
            return 0;
    }
    json_array_foreach (
        json_object_get(json_object_get(c->launch, "container"), "mounts"), i,
        m) {
        if (path_under(home, json_string_value(json_object_get(m, "dst"))))
            return 0;
    }
    int fd = open_in_root(rootfd, home + 1, O_PATH | O_DIRECTORY);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    snprintf(c->home_src, sizeof(c->home_src), "%s/home", c->dir);
    snprintf(c->home_dst, sizeof(c->home_dst), "%s", home);
    if (mkdir(c->home_src, 0700) < 0 ||
        chown(c->home_src, pw->pw_uid, pw->pw_gid) < 0)
        return -1;
    return 0;
}

static int prepare_identity(struct shim_ctr *c, const struct passwd *pw,
                            const gid_t *groups, int ngroups, char *why,
                            size_t size)
{
    snprintf(c->passwd, sizeof(c->passwd), "%s/passwd", c->dir);
    snprintf(c->group, sizeof(c->group), "%s/group", c->dir);
    int rootfd = open(c->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return failf(why, size, "cannot open %s: %s", c->rootfs,
                     strerror(errno));
    int rc = 0;
    if (plan_home(c, rootfd, pw) < 0)
        rc = failf(why, size, "cannot make the job's home folder %s: %s",
                   c->home_src, strerror(errno));
    else if (write_passwd(c, rootfd, pw, pw->pw_dir) < 0 ||
             write_group(c, rootfd, pw, groups, ngroups) < 0)
        rc = failf(why, size, "cannot write the container's passwd: %s",
                   strerror(errno));
    close(rootfd);
    c->identity = rc == 0;
    return rc;
}

/* Create a mount point dst (a folder, or an empty file) and its missing
 * parents in the overlay rootfs. Inside its user namespace crun cannot:
 * the image's folders belong to root, unmapped there. 0, or -1 with
 * errno. */
static int make_mountpoint(int rootfd, const char *dst, bool file)
{
    char path[4200];
    while (*dst == '/')
        dst++;
    if (strlen(dst) >= sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    snprintf(path, sizeof(path), "%s", dst);
    size_t len = strlen(path);
    for (size_t end = 0; end < len;) {
        size_t start = end;
        while (end < len && path[end] != '/')
            end++;
        bool last = end >= len;
        char keep = path[end];
        path[end] = '\0';
        const char *name = path + start;
        int fd = open_in_root(rootfd, path, O_PATH);
        int err = errno;
        if (fd >= 0) {
            close(fd);
        } else if (err != ENOENT || strcmp(name, ".") == 0 ||
                   strcmp(name, "..") == 0 || !name[0]) {
            errno = err;
            return -1;
        } else {
            /* The parent, resolved in the root; then one name in it
             * (mkdirat and O_NOFOLLOW follow no link of the image). */
            if (start > 0)
                path[start - 1] = '\0';
            int pfd = open_in_root(rootfd, start > 0 ? path : "",
                                   O_PATH | O_DIRECTORY);
            if (start > 0)
                path[start - 1] = '/';
            if (pfd < 0)
                return -1;
            int rc;
            if (last && file) {
                rc = openat(
                    pfd, name,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (rc >= 0)
                    close(rc);
            } else {
                rc = mkdirat(pfd, name, 0755);
            }
            err = errno;
            close(pfd);
            if (rc < 0 && err != EEXIST) {
                errno = err;
                return -1;
            }
        }
        path[end] = keep;
        while (end < len && path[end] == '/')
            end++;
    }
    return 0;
}

/* Every mount point of the config, made in the rootfs (those under /dev/
 * go on crun's own tmpfs there: crun makes them). */
static int make_mountpoints(struct shim_ctr *c, const json_t *doc, char *why,
                            size_t size)
{
    int rootfd = open(c->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return failf(why, size, "cannot open %s: %s", c->rootfs,
                     strerror(errno));
    size_t i;
    json_t *m;
    json_array_foreach (json_object_get(doc, "mounts"), i, m) {
        const char *dst = json_string_value(json_object_get(m, "destination"));
        const char *type = json_string_value(json_object_get(m, "type"));
        const char *src = json_string_value(json_object_get(m, "source"));
        if (!dst || strncmp(dst, "/dev/", 5) == 0)
            continue;
        struct stat st;
        bool file = type && strcmp(type, "bind") == 0 && src &&
                    stat(src, &st) == 0 && !S_ISDIR(st.st_mode);
        if (make_mountpoint(rootfd, dst, file) < 0) {
            int err = errno;
            close(rootfd);
            return failf(why, size,
                         "cannot make the mount point %s in the image: %s", dst,
                         strerror(err));
        }
    }
    close(rootfd);
    return 0;
}

char **shim_ctr_task_argv(struct shim_ctr *c, int t,
                          const struct container_proc *proc, char *why,
                          size_t size)
{
    char host[256];
    struct container_input in = {
        .image_config = c->image_config,
        .container = json_object_get(c->launch, "container"),
        .volumes = json_object_get(c->launch, "mounts"),
        /* Relative to the bundle: crun, once in the user namespace, cannot
         * look up a path through the root-only RUN/ctr (root is unmapped
         * there); it resolves this one from the bundle, its working folder
         * since before (0711: searchable by the unmapped). */
        .rootfs = "rootfs",
        .run_dir = c->run_dir,
        .shm_dir = c->shm,
        .hostname = node_name(host, sizeof(host)),
        .passwd_file = c->identity ? c->passwd : NULL,
        .group_file = c->identity ? c->group : NULL,
        .home_src = c->home_src[0] ? c->home_src : NULL,
        .home_dst = c->home_src[0] ? c->home_dst : NULL,
    };
    if (t == 0)
        hide_hybrid_unified();
    json_t *doc = container_config(&in, proc, why, size);
    if (doc && make_mountpoints(c, doc, why, size) < 0) {
        json_decref(doc);
        return NULL;
    }
    char name[64];
    snprintf(name, sizeof(name), "config-%d.json", t);
    snprintf(c->arg_buf[0], sizeof(c->arg_buf[0]), "%s/%s", c->dir, name);
    if (!doc || json_dump_file(doc, c->arg_buf[0], JSON_COMPACT) < 0) {
        if (doc)
            snprintf(why, size, "cannot write %s: %s", c->arg_buf[0],
                     strerror(errno));
        json_decref(doc);
        return NULL;
    }
    json_decref(doc);
    snprintf(c->arg_buf[1], sizeof(c->arg_buf[1]), "--root=%s", c->state);
    int n = 0;
    c->argv[n++] = "crun";
    c->argv[n++] = c->arg_buf[1];
    c->argv[n++] = "--cgroup-manager=disabled";
    snprintf(c->arg_buf[2], sizeof(c->arg_buf[2]), "--bundle=%s",
             c->bundle_dir);
    snprintf(c->arg_buf[3], sizeof(c->arg_buf[3]), "--config=%s",
             c->arg_buf[0]);
    snprintf(c->task_id, sizeof(c->task_id), "%s-%d", c->id, t);
    c->argv[n++] = "run";
    c->argv[n++] = "--no-new-keyring";
    c->argv[n++] = c->arg_buf[2];
    c->argv[n++] = c->arg_buf[3];
    c->argv[n++] = c->task_id;
    c->argv[n] = NULL;
    if (t + 1 > c->ntasks)
        c->ntasks = t + 1;
    return c->argv;
}

void shim_ctr_destroy(struct shim_ctr *c)
{
    if (!c)
        return;
    for (int t = 0; t < c->ntasks; t++) {
        pid_t pid = fork();
        if (pid == 0) {
            int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
            if (devnull >= 0) {
                dup2(devnull, 1);
                dup2(devnull, 2);
            }
            char root[4400];
            snprintf(root, sizeof(root), "--root=%s", c->state);
            char id[160];
            snprintf(id, sizeof(id), "%s-%d", c->id, t);
            char *argv[] = {"crun", root, "delete", "-f", id, NULL};
            tools_exec(argv, NULL);
            _exit(127);
        }
        while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    image_bundle_release(&c->bundle);
    json_decref(c->image_config);
    free(c);
}
