/* SPDX-License-Identifier: Apache-2.0 */
/* Job cgroups (see cgroup.h): version detection from mountinfo, the
 * parent and job directories, limit files, attach, kill, count, stats and
 * removal. Everything goes through open/read/write/mkdir/rmdir on paths
 * built from the context; the module keeps no state besides the context and
 * never looks at the agent's own cgroup. It does not log: callers decide.
 */
#include "agent/cgroup.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The controllers the module uses. On v1 each may sit in its own hierarchy
 * or share one with others (cpu,cpuacct); on v2 all are in the one. */
enum cg_ctrl {
    CG_MEMORY,
    CG_CPU,
    CG_CPUACCT,
    CG_PIDS,
    CG_FREEZER,
    CG_DEVICES,
    CG_NCTRL,
};

static const char *const cg_ctrl_names[CG_NCTRL] = {
    [CG_MEMORY] = "memory", [CG_CPU] = "cpu",         [CG_CPUACCT] = "cpuacct",
    [CG_PIDS] = "pids",     [CG_FREEZER] = "freezer", [CG_DEVICES] = "devices",
};

/* v1: all but the freezer and devices are required. v2: these must be in the
 * root's cgroup.controllers (cpuacct and freezer are built into v2). */
static const bool cg_v1_required[CG_NCTRL] = {
    [CG_MEMORY] = true,
    [CG_CPU] = true,
    [CG_CPUACCT] = true,
    [CG_PIDS] = true,
};
static const char *const cg_v2_required[] = {"cpu", "memory", "pids"};
#define CG_V2_ENABLE "+cpu +memory +pids"

/* CFS bandwidth: quota per 100 ms period; the kernel's smallest quota is
 * 1 ms, hence at least 10 millicpus. The upper bounds stop nonsense early. */
#define CG_CPU_PERIOD_US 100000
#define CG_CPU_MILLIS_MIN 10
#define CG_CPU_MILLIS_MAX INT64_C(10000000)
#define CG_PIDS_LIMIT 4194304 /* the kernel's PID_MAX_LIMIT */

/* How long kill waits for a freeze to settle (tasks in uninterruptible
 * sleep delay it) before signalling anyway, and the passes it makes over
 * cgroup.procs when it cannot freeze. */
#define CG_FREEZE_WAIT_MS 500
#define CG_UNFROZEN_PASSES 3
#define CG_KILL_SWEEPS 200 /* SIGKILL sweeps after the first, 2 ms apart */

/* mountinfo lines longer than this are skipped: such a mount point is too
 * long to build cgroup paths under anyway. */
#define CG_LINE_MAX 4096
#define CG_FIELDS_MAX 32

/* Small cgroupfs files (limits, counters, cpu.stat, memory.events). */
#define CG_SMALL_FILE 4096

#define CG_PATH_MAX PATH_MAX

struct cg_hier {
    char *mount;  /* the hierarchy's mount point; owned */
    char *dir;    /* <mount>/<parent>; owned */
    char dev[32]; /* mountinfo major:minor, to merge co-mounted controllers */
};

struct cgroup_ctx {
    int version;
    char *parent; /* owned copy of the relative parent name */
    int ndepth;   /* components in parent */
    struct cg_hier hier[CGROUP_HIER_MAX];
    int nhier;
    int idx[CG_NCTRL]; /* hierarchy of each controller, or -1 */
    int primary;       /* hierarchy whose cgroup.procs lists a job's
                          processes: freezer if mounted, else memory */
};

/* One candidate mount found in mountinfo. */
struct cg_mount {
    bool found;
    bool root; /* the mount shows the hierarchy's root ("/") */
    bool ro;
    char dev[32];
    char dir[CG_LINE_MAX];
};

struct cg_scan {
    struct cg_mount v2;
    struct cg_mount v1[CG_NCTRL];
};

/* --- paths and files ---------------------------------------------------- */

/* buf = a[/b[/c]] (b and c may be NULL). SH_EINVAL when it does not fit. */
static int cg_join(char *buf, size_t size, const char *a, const char *b,
                   const char *c, struct sh_error *err)
{
    int n = snprintf(buf, size, "%s%s%s%s%s", a, b ? "/" : "", b ? b : "",
                     c ? "/" : "", c ? c : "");
    if (n < 0 || (size_t)n >= size)
        return sh_errorf(err, SH_EINVAL, "cgroup path too long under %s", a);
    return 0;
}

static bool cg_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool cg_exists(const char *dir, const char *key, const char *file)
{
    char path[CG_PATH_MAX];
    if (cg_join(path, sizeof(path), dir, key, file, NULL) < 0)
        return false;
    return access(path, F_OK) == 0;
}

/* Write val to dir/key/file in one write(2), as cgroupfs wants. */
static int cg_write(const char *dir, const char *key, const char *file,
                    const char *val, struct sh_error *err)
{
    char path[CG_PATH_MAX];
    size_t len = strlen(val);
    int rc = -1;
    int fd = -1;
    ssize_t n;

    if (cg_join(path, sizeof(path), dir, key, file, err) < 0)
        goto out;
    fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) {
        sh_errorf(err, SH_EINTERNAL, "open %s: %s", path, strerror(errno));
        goto out;
    }
    n = write(fd, val, len);
    if (n < 0) {
        sh_errorf(err, SH_EINTERNAL, "write \"%s\" to %s: %s", val, path,
                  strerror(errno));
        goto out;
    }
    if ((size_t)n != len) {
        sh_errorf(err, SH_EINTERNAL, "write \"%s\" to %s: short write", val,
                  path);
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Read dir/key/file (all of it, at most size - 1 bytes) into buf as a
 * string. SH_ETOOLARGE when it does not fit. */
static int cg_read(const char *dir, const char *key, const char *file,
                   char *buf, size_t size, struct sh_error *err)
{
    char path[CG_PATH_MAX];
    size_t len = 0;
    int rc = -1;
    int fd = -1;

    assert(size > 1);
    if (cg_join(path, sizeof(path), dir, key, file, err) < 0)
        goto out;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        sh_errorf(err, SH_EINTERNAL, "open %s: %s", path, strerror(errno));
        goto out;
    }
    for (;;) {
        ssize_t n = read(fd, buf + len, size - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            sh_errorf(err, SH_EINTERNAL, "read %s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == size - 1) {
            sh_errorf(err, SH_ETOOLARGE, "%s is over %zu bytes", path,
                      size - 1);
            goto out;
        }
    }
    rc = 0;
out:
    buf[len] = '\0';
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Parse a decimal u64 that ends the string or its line. */
static int cg_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || (*end != '\0' && *end != '\n'))
        return -1;
    *out = v;
    return 0;
}

static int cg_read_u64(const char *dir, const char *key, const char *file,
                       uint64_t *out, struct sh_error *err)
{
    char buf[64];

    if (cg_read(dir, key, file, buf, sizeof(buf), err) < 0)
        return -1;
    if (cg_parse_u64(buf, out) < 0)
        return sh_errorf(err, SH_EINTERNAL, "%s/%s/%s: not a number", dir, key,
                         file);
    return 0;
}

/* From a "name value" per line file, the value of `name`; *out is 0 when
 * the line is absent (older kernels lack some). */
static int cg_read_keyed(const char *dir, const char *key, const char *file,
                         const char *name, uint64_t *out, struct sh_error *err)
{
    char buf[CG_SMALL_FILE];
    size_t nlen = strlen(name);
    const char *line = buf;

    *out = 0;
    if (cg_read(dir, key, file, buf, sizeof(buf), err) < 0)
        return -1;
    while (*line) {
        const char *next = strchr(line, '\n');
        if (strncmp(line, name, nlen) == 0 && line[nlen] == ' ') {
            if (cg_parse_u64(line + nlen + 1, out) < 0)
                return sh_errorf(err, SH_EINTERNAL, "%s/%s/%s: bad %s line",
                                 dir, key, file, name);
            return 0;
        }
        if (!next)
            break;
        line = next + 1;
    }
    return 0;
}

/* Whether a list separated by sep contains tok. */
static bool cg_has_token(const char *list, char sep, const char *tok)
{
    size_t tlen = strlen(tok);
    const char *p = list;

    while (*p) {
        const char *end = strchr(p, sep);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0 && p[len - 1] == '\n')
            len--;
        if (len == tlen && strncmp(p, tok, tlen) == 0)
            return true;
        if (!end)
            break;
        p = end + 1;
    }
    return false;
}

typedef void cg_pid_f(pid_t pid, void *arg);

/* Call fn for each pid listed in the cgroup.procs file open as fd (named
 * path, for errors), streaming it so a job with many processes needs no
 * large buffer. Closes fd. */
static int cg_procs_read(int fd, const char *path, cg_pid_f *fn, void *arg,
                         struct sh_error *err)
{
    char buf[512];
    long long cur = -1;
    int rc = -1;

    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            sh_errorf(err, SH_EINTERNAL, "read %s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        for (ssize_t i = 0; i < n; i++) {
            char c = buf[i];
            if (c >= '0' && c <= '9') {
                cur = (cur < 0 ? 0 : cur * 10) + (c - '0');
                if (cur > INT_MAX) {
                    sh_errorf(err, SH_EINTERNAL, "%s: pid out of range", path);
                    goto out;
                }
            } else if (c == '\n') {
                if (cur > 0)
                    fn((pid_t)cur, arg);
                cur = -1;
            } else {
                sh_errorf(err, SH_EINTERNAL, "%s: unexpected content", path);
                goto out;
            }
        }
    }
    if (cur > 0)
        fn((pid_t)cur, arg);
    rc = 0;
out:
    close(fd);
    return rc;
}

/* Call fn for each pid listed in dir/key/cgroup.procs. */
static int cg_procs_foreach(const char *dir, const char *key, cg_pid_f *fn,
                            void *arg, struct sh_error *err)
{
    char path[CG_PATH_MAX];

    if (cg_join(path, sizeof(path), dir, key, "cgroup.procs", err) < 0)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sh_errorf(err, SH_EINTERNAL, "open %s: %s", path,
                         strerror(errno));
    return cg_procs_read(fd, path, fn, arg, err);
}

static void cg_count_one(pid_t pid, void *arg)
{
    (void)pid;
    (*(int *)arg)++;
}

static void cg_sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* --- names -------------------------------------------------------------- */

/* One path component: 1..max characters of [A-Za-z0-9._-], not starting
 * with '.' (no ".", "..", hidden names), no "..". */
static bool cg_name_ok(const char *s, size_t len, size_t max)
{
    if (len == 0 || len > max || s[0] == '.')
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        if (!ok)
            return false;
        if (c == '.' && i + 1 < len && s[i + 1] == '.')
            return false;
    }
    return true;
}

int cgroup_key_check(const char *key, struct sh_error *err)
{
    if (!key || !cg_name_ok(key, strlen(key), CGROUP_KEY_MAX))
        return sh_errorf(err, SH_EINVAL,
                         "cgroup key must be 1..%d characters of "
                         "[A-Za-z0-9._-], not starting with '.' and without "
                         "\"..\"",
                         CGROUP_KEY_MAX);
    return 0;
}

/* Validate a relative parent name and count its components. */
static int cg_parent_check(const char *parent, int *ndepth,
                           struct sh_error *err)
{
    const char *p = parent;
    int depth = 0;

    if (!parent || !*parent)
        goto bad;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (!cg_name_ok(p, len, CGROUP_KEY_MAX))
            goto bad;
        if (++depth > CGROUP_PARENT_DEPTH_MAX)
            goto bad;
        if (!slash)
            break;
        p = slash + 1;
    }
    *ndepth = depth;
    return 0;
bad:
    return sh_errorf(err, SH_EINVAL,
                     "cgroup parent must be 1..%d '/'-separated names of "
                     "1..%d characters of [A-Za-z0-9._-], none starting "
                     "with '.'",
                     CGROUP_PARENT_DEPTH_MAX, CGROUP_KEY_MAX);
}

/* buf = <mount>/<the first depth components of parent>. */
static int cg_parent_prefix(const struct cgroup_ctx *ctx, int h, int depth,
                            char *buf, size_t size, struct sh_error *err)
{
    const char *p = ctx->parent;
    size_t len = 0;

    for (int i = 0; i < depth; i++) {
        const char *slash = strchr(p, '/');
        len = slash ? (size_t)(slash - ctx->parent) : strlen(ctx->parent);
        p = slash ? slash + 1 : p;
    }
    int n = snprintf(buf, size, "%s%s%.*s", ctx->hier[h].mount,
                     depth > 0 ? "/" : "", (int)len, ctx->parent);
    if (n < 0 || (size_t)n >= size)
        return sh_errorf(err, SH_EINVAL, "cgroup path too long under %s",
                         ctx->hier[h].mount);
    return 0;
}

/* --- detection ---------------------------------------------------------- */

/* Split line on spaces into fields, in place. Returns the count. */
static int cg_split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;

    while (*p && n < max) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        f[n++] = p;
        while (*p && *p != ' ')
            p++;
        if (*p)
            *p++ = '\0';
    }
    return n;
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void cg_unescape(char *s)
{
    char *out = s;

    for (char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' &&
            p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
            *out++ =
                (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 3;
        } else {
            *out++ = *p;
        }
    }
    *out = '\0';
}

/* Keep the better of two mounts of one hierarchy: the first one showing
 * its root, else the first. */
static void cg_consider(struct cg_mount *m, char **f, bool ro)
{
    bool root = strcmp(f[3], "/") == 0;

    if (m->found && (m->root || !root))
        return;
    m->found = true;
    m->root = root;
    m->ro = ro;
    snprintf(m->dev, sizeof(m->dev), "%s", f[2]);
    snprintf(m->dir, sizeof(m->dir), "%s", f[4]);
    cg_unescape(m->dir);
}

/* Record the cgroup mounts of one mountinfo line:
 *   id parent maj:min root mountpoint opts [optional...] - fstype src sopts */
static void cg_scan_line(char *line, struct cg_scan *scan)
{
    char *f[CG_FIELDS_MAX];
    int n;
    int sep = -1;

    line[strcspn(line, "\n")] = '\0';
    n = cg_split(line, f, CG_FIELDS_MAX);
    for (int i = 6; i < n; i++) {
        if (strcmp(f[i], "-") == 0) {
            sep = i;
            break;
        }
    }
    if (sep < 0 || sep + 3 >= n)
        return;
    const char *fstype = f[sep + 1];
    const char *sopts = f[sep + 3];
    bool ro = cg_has_token(f[5], ',', "ro") || cg_has_token(sopts, ',', "ro");
    if (strcmp(fstype, "cgroup2") == 0) {
        cg_consider(&scan->v2, f, ro);
    } else if (strcmp(fstype, "cgroup") == 0) {
        for (int c = 0; c < CG_NCTRL; c++) {
            if (cg_has_token(sopts, ',', cg_ctrl_names[c]))
                cg_consider(&scan->v1[c], f, ro);
        }
    }
}

static int cg_scan_file(const char *mountinfo, struct cg_scan *scan,
                        struct sh_error *err)
{
    char line[CG_LINE_MAX];
    bool skipping = false;
    FILE *fp = fopen(mountinfo, "re");

    if (!fp)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot read %s: %s", mountinfo,
                         strerror(errno));
    while (fgets(line, sizeof(line), fp)) {
        bool whole = strchr(line, '\n') != NULL || feof(fp);
        if (!skipping && whole)
            cg_scan_line(line, scan);
        skipping = !whole;
    }
    fclose(fp);
    return 0;
}

static int cg_add_hier(struct cgroup_ctx *ctx, const struct cg_mount *m,
                       struct sh_error *err)
{
    for (int h = 0; h < ctx->nhier; h++) {
        if (strcmp(ctx->hier[h].dev, m->dev) == 0)
            return h;
    }
    assert(ctx->nhier < CGROUP_HIER_MAX);
    struct cg_hier *hi = &ctx->hier[ctx->nhier];
    hi->mount = strdup(m->dir);
    if (!hi->mount)
        return sh_errorf(err, SH_EUNAVAILABLE, "out of memory");
    snprintf(hi->dev, sizeof(hi->dev), "%s", m->dev);
    return ctx->nhier++;
}

static int cg_use_v2(struct cgroup_ctx *ctx, const struct cg_mount *m,
                     const char *controllers, struct sh_error *err)
{
    for (size_t i = 0; i < sizeof(cg_v2_required) / sizeof(*cg_v2_required);
         i++) {
        if (!cg_has_token(controllers, ' ', cg_v2_required[i]))
            return sh_errorf(err, SH_EUNAVAILABLE,
                             "cgroup v2 at %s lacks the %s controller", m->dir,
                             cg_v2_required[i]);
    }
    if (m->ro)
        return sh_errorf(err, SH_EUNAVAILABLE,
                         "cgroup v2 at %s is mounted read-only", m->dir);
    ctx->version = 2;
    if (cg_add_hier(ctx, m, err) < 0)
        return -1;
    for (int c = 0; c < CG_NCTRL; c++)
        ctx->idx[c] = 0;
    ctx->idx[CG_DEVICES] = -1; /* v2 has no devices files (eBPF instead) */
    ctx->primary = 0;
    return 0;
}

static int cg_use_v1(struct cgroup_ctx *ctx, const struct cg_scan *scan,
                     struct sh_error *err)
{
    for (int c = 0; c < CG_NCTRL; c++) {
        const struct cg_mount *m = &scan->v1[c];
        if (!m->found) {
            if (cg_v1_required[c])
                return sh_errorf(err, SH_EUNAVAILABLE,
                                 "cgroup v1 controller %s is not mounted",
                                 cg_ctrl_names[c]);
            continue;
        }
        if (m->ro)
            return sh_errorf(err, SH_EUNAVAILABLE,
                             "cgroup v1 %s at %s is mounted read-only",
                             cg_ctrl_names[c], m->dir);
        ctx->idx[c] = cg_add_hier(ctx, m, err);
        if (ctx->idx[c] < 0)
            return -1;
    }
    ctx->version = 1;
    ctx->primary =
        ctx->idx[CG_FREEZER] >= 0 ? ctx->idx[CG_FREEZER] : ctx->idx[CG_MEMORY];
    return 0;
}

/* v2 when a cgroup2 mount holds the memory controller (a controller lives in
 * one hierarchy only, so then no v1 mount has it), else v1. */
static int cg_detect(struct cgroup_ctx *ctx, const char *mountinfo,
                     struct sh_error *err)
{
    struct cg_scan *scan = calloc(1, sizeof(*scan));
    char controllers[1024] = "";
    int rc = -1;

    if (!scan)
        return sh_errorf(err, SH_EUNAVAILABLE, "out of memory");
    if (cg_scan_file(mountinfo, scan, err) < 0)
        goto out;
    if (scan->v2.found &&
        cg_read(scan->v2.dir, NULL, "cgroup.controllers", controllers,
                sizeof(controllers), NULL) == 0 &&
        cg_has_token(controllers, ' ', "memory")) {
        rc = cg_use_v2(ctx, &scan->v2, controllers, err);
        goto out;
    }
    if (!scan->v1[CG_MEMORY].found) {
        sh_errorf(err, SH_EUNAVAILABLE,
                  "no cgroup hierarchy with the memory controller is "
                  "mounted (per %s)",
                  mountinfo);
        goto out;
    }
    rc = cg_use_v1(ctx, scan, err);
out:
    free(scan);
    return rc;
}

/* --- the parent --------------------------------------------------------- */

/* mkdir that accepts an existing directory; *created says which it was. */
static int cg_mkdir(const char *path, bool *created, struct sh_error *err)
{
    *created = false;
    if (mkdir(path, 0755) == 0) {
        *created = true;
        return 0;
    }
    if (errno != EEXIST)
        return sh_errorf(err, SH_EINTERNAL, "mkdir %s: %s", path,
                         strerror(errno));
    if (!cg_is_dir(path))
        return sh_errorf(err, SH_EINVAL, "%s exists and is not a directory",
                         path);
    return 0;
}

/* v2: make the controllers available to dir's children. */
static int cg_v2_enable(const char *dir, struct sh_error *err)
{
    char buf[1024];

    if (cg_read(dir, NULL, "cgroup.subtree_control", buf, sizeof(buf), err) < 0)
        return -1;
    for (size_t i = 0; i < sizeof(cg_v2_required) / sizeof(*cg_v2_required);
         i++) {
        if (!cg_has_token(buf, ' ', cg_v2_required[i]))
            return cg_write(dir, NULL, "cgroup.subtree_control", CG_V2_ENABLE,
                            err);
    }
    return 0;
}

/* Remove parent components depth-1 .. from of hierarchy h, deepest first;
 * failures are ignored (used to undo, and the caller reports its error). */
static void cg_parent_unmake(struct cgroup_ctx *ctx, int h, int from)
{
    char path[CG_PATH_MAX];

    for (int d = ctx->ndepth; d > from; d--) {
        if (cg_parent_prefix(ctx, h, d, path, sizeof(path), NULL) == 0)
            rmdir(path);
    }
}

/* Create the parent in hierarchy h. *from is the depth of the shallowest
 * directory that was already there (ndepth when all were). */
static int cg_parent_make(struct cgroup_ctx *ctx, int h, int *from,
                          struct sh_error *err)
{
    char path[CG_PATH_MAX];

    *from = ctx->ndepth;
    for (int d = 0; d <= ctx->ndepth; d++) {
        bool created = false;
        if (cg_parent_prefix(ctx, h, d, path, sizeof(path), err) < 0)
            return -1;
        if (d > 0 && cg_mkdir(path, &created, err) < 0)
            return -1;
        if (created && *from == ctx->ndepth)
            *from = d - 1;
        if (ctx->version == 2 && cg_v2_enable(path, err) < 0)
            return -1;
    }
    ctx->hier[h].dir = strdup(path);
    if (!ctx->hier[h].dir)
        return sh_errorf(err, SH_EUNAVAILABLE, "out of memory");
    return 0;
}

struct cgroup_ctx *cgroup_ctx_create_mountinfo(const char *mountinfo,
                                               const char *parent,
                                               struct sh_error *err)
{
    struct cgroup_ctx *ctx = NULL;
    int from[CGROUP_HIER_MAX];
    int h = 0;
    int ndepth = 0;

    if (cg_parent_check(parent, &ndepth, err) < 0)
        return NULL;
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        sh_errorf(err, SH_EUNAVAILABLE, "out of memory");
        return NULL;
    }
    for (int c = 0; c < CG_NCTRL; c++)
        ctx->idx[c] = -1;
    ctx->ndepth = ndepth;
    ctx->parent = strdup(parent);
    if (!ctx->parent) {
        sh_errorf(err, SH_EUNAVAILABLE, "out of memory");
        goto error;
    }
    if (cg_detect(ctx, mountinfo, err) < 0)
        goto error;
    for (h = 0; h < ctx->nhier; h++) {
        if (cg_parent_make(ctx, h, &from[h], err) < 0) {
            cg_parent_unmake(ctx, h, from[h]);
            goto undo;
        }
    }
    return ctx;
undo:
    /* No side effects on failure: remove what earlier hierarchies got. */
    while (--h >= 0)
        cg_parent_unmake(ctx, h, from[h]);
error:
    /* Whatever went wrong, the agent can only run without enforcement. */
    if (err)
        err->code = SH_EUNAVAILABLE;
    cgroup_ctx_destroy(ctx);
    return NULL;
}

struct cgroup_ctx *cgroup_ctx_create(const char *parent, struct sh_error *err)
{
    return cgroup_ctx_create_mountinfo("/proc/self/mountinfo", parent, err);
}

void cgroup_ctx_destroy(struct cgroup_ctx *ctx)
{
    int saved = errno;

    if (ctx) {
        for (int h = 0; h < ctx->nhier; h++) {
            free(ctx->hier[h].mount);
            free(ctx->hier[h].dir);
        }
        free(ctx->parent);
        free(ctx);
    }
    errno = saved;
}

int cgroup_version(const struct cgroup_ctx *ctx)
{
    return ctx->version;
}

const char *cgroup_ctx_dir(const struct cgroup_ctx *ctx, const char *controller)
{
    for (int c = 0; c < CG_NCTRL; c++) {
        if (controller && strcmp(controller, cg_ctrl_names[c]) == 0)
            return ctx->idx[c] >= 0 ? ctx->hier[ctx->idx[c]].dir : NULL;
    }
    return NULL;
}

/* Whether dir has a subdirectory (a child cgroup). */
static int cg_has_children(const char *dir, bool *yes, struct sh_error *err)
{
    DIR *d = opendir(dir);
    struct dirent *de;

    *yes = false;
    if (!d) {
        if (errno == ENOENT)
            return 0;
        return sh_errorf(err, SH_EINTERNAL, "opendir %s: %s", dir,
                         strerror(errno));
    }
    while (!*yes && (de = readdir(d)) != NULL) {
        if (de->d_type == DT_DIR && strcmp(de->d_name, ".") != 0 &&
            strcmp(de->d_name, "..") != 0)
            *yes = true;
    }
    closedir(d);
    return 0;
}

int cgroup_ctx_prune(struct cgroup_ctx *ctx, struct sh_error *err)
{
    char path[CG_PATH_MAX];

    for (int h = 0; h < ctx->nhier; h++) {
        bool children;
        if (cg_has_children(ctx->hier[h].dir, &children, err) < 0)
            return -1;
        if (children)
            return sh_errorf(err, SH_ECONFLICT, "%s still has job cgroups",
                             ctx->hier[h].dir);
    }
    for (int h = 0; h < ctx->nhier; h++) {
        for (int d = ctx->ndepth; d > 0; d--) {
            if (cg_parent_prefix(ctx, h, d, path, sizeof(path), err) < 0)
                return -1;
            if (rmdir(path) == 0 || errno == ENOENT)
                continue;
            if (errno == EBUSY || errno == ENOTEMPTY)
                break; /* shared with another agent or a job: keep it */
            return sh_errorf(err, SH_EINTERNAL, "rmdir %s: %s", path,
                             strerror(errno));
        }
    }
    return 0;
}

/* --- job cgroups -------------------------------------------------------- */

static int cg_limits_check(const struct cgroup_limits *lim,
                           struct sh_error *err)
{
    if (lim->cpu_millis != 0 && (lim->cpu_millis < CG_CPU_MILLIS_MIN ||
                                 lim->cpu_millis > CG_CPU_MILLIS_MAX))
        return sh_errorf(err, SH_EINVAL,
                         "cpu_millis must be 0 (no limit) or %d..%" PRId64,
                         CG_CPU_MILLIS_MIN, CG_CPU_MILLIS_MAX);
    if (lim->mem_bytes > (uint64_t)INT64_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "mem_bytes must be 0 (no limit) or at most %" PRId64,
                         INT64_MAX);
    if (lim->pids_max < 0 || lim->pids_max > CG_PIDS_LIMIT)
        return sh_errorf(err, SH_EINVAL,
                         "pids_max must be 0 (no limit) or 1..%d",
                         CG_PIDS_LIMIT);
    return 0;
}

/* The job's directory in hierarchy h exists. */
static bool cg_job_there(const struct cgroup_ctx *ctx, int h, const char *key)
{
    char path[CG_PATH_MAX];

    if (cg_join(path, sizeof(path), ctx->hier[h].dir, key, NULL, NULL) < 0)
        return false;
    return cg_is_dir(path);
}

/* Validate key and require the job cgroup (in the primary hierarchy). */
static int cg_job_lookup(const struct cgroup_ctx *ctx, const char *key,
                         struct sh_error *err)
{
    if (cgroup_key_check(key, err) < 0)
        return -1;
    if (!cg_job_there(ctx, ctx->primary, key))
        return sh_errorf(err, SH_ENOTFOUND, "job cgroup %s does not exist",
                         key);
    return 0;
}

static const char *cg_hdir(const struct cgroup_ctx *ctx, enum cg_ctrl c)
{
    assert(ctx->idx[c] >= 0);
    return ctx->hier[ctx->idx[c]].dir;
}

/* v1 memory. memory.memsw.limit_in_bytes (memory plus swap) may never be
 * below memory.limit_in_bytes, so when raising write memsw first and when
 * lowering write it last; both get the same value, so a job cannot use swap
 * to go past its request. Without swap accounting only the memory limit. */
static int cg_v1_memory(const char *mem, const char *key, uint64_t bytes,
                        struct sh_error *err)
{
    static const char *const limit = "memory.limit_in_bytes";
    static const char *const memsw = "memory.memsw.limit_in_bytes";
    uint64_t cur;
    char v[32];

    if (bytes)
        snprintf(v, sizeof(v), "%" PRIu64, bytes);
    else
        snprintf(v, sizeof(v), "-1");
    if (!cg_exists(mem, key, memsw))
        return cg_write(mem, key, limit, v, err);
    if (cg_read_u64(mem, key, limit, &cur, err) < 0)
        return -1;
    if (bytes == 0 || bytes >= cur) {
        if (cg_write(mem, key, memsw, v, err) < 0 ||
            cg_write(mem, key, limit, v, err) < 0)
            return -1;
    } else {
        if (cg_write(mem, key, limit, v, err) < 0 ||
            cg_write(mem, key, memsw, v, err) < 0)
            return -1;
    }
    return 0;
}

/* FRESH: the job's cgroups were just made by the kernel, so every value
 * is its default for a new cgroup (unlimited memory and pids, no CPU
 * quota, a period of CG_CPU_PERIOD_US, thawed): those are not written. */
static int cg_v1_limits(struct cgroup_ctx *ctx, const char *key,
                        const struct cgroup_limits *lim, bool fresh,
                        struct sh_error *err)
{
    const char *cpu = cg_hdir(ctx, CG_CPU);
    char v[32];

    if (!(fresh && lim->mem_bytes == 0) &&
        cg_v1_memory(cg_hdir(ctx, CG_MEMORY), key, lim->mem_bytes, err) < 0)
        return -1;

    snprintf(v, sizeof(v), "%d", CG_CPU_PERIOD_US);
    if (!fresh && cg_write(cpu, key, "cpu.cfs_period_us", v, err) < 0)
        return -1;
    if (fresh && lim->cpu_millis == 0)
        v[0] = '\0';
    else if (lim->cpu_millis)
        snprintf(v, sizeof(v), "%" PRId64,
                 lim->cpu_millis * (CG_CPU_PERIOD_US / 1000));
    else
        snprintf(v, sizeof(v), "-1");
    if (v[0] && cg_write(cpu, key, "cpu.cfs_quota_us", v, err) < 0)
        return -1;

    if (lim->pids_max)
        snprintf(v, sizeof(v), "%" PRId64, lim->pids_max);
    else
        snprintf(v, sizeof(v), "max");
    if (!(fresh && lim->pids_max == 0) &&
        cg_write(cg_hdir(ctx, CG_PIDS), key, "pids.max", v, err) < 0)
        return -1;
    if (!fresh && ctx->idx[CG_FREEZER] >= 0 &&
        cg_write(cg_hdir(ctx, CG_FREEZER), key, "freezer.state", "THAWED",
                 err) < 0)
        return -1;
    return 0;
}

/* FRESH: as for cg_v1_limits (memory.max, memory.swap.max and pids.max
 * "max", cpu.max "max 100000", cgroup.freeze 0 are not written). */
static int cg_v2_limits(struct cgroup_ctx *ctx, const char *key,
                        const struct cgroup_limits *lim, bool fresh,
                        struct sh_error *err)
{
    const char *dir = ctx->hier[0].dir;
    char v[64];

    if (lim->mem_bytes)
        snprintf(v, sizeof(v), "%" PRIu64, lim->mem_bytes);
    else
        snprintf(v, sizeof(v), "max");
    bool mem_default = fresh && lim->mem_bytes == 0;
    if (!mem_default && cg_write(dir, key, "memory.max", v, err) < 0)
        return -1;
    if (!mem_default && cg_exists(dir, key, "memory.swap.max") &&
        cg_write(dir, key, "memory.swap.max", lim->mem_bytes ? "0" : "max",
                 err) < 0)
        return -1;
    if (lim->cpu_millis)
        snprintf(v, sizeof(v), "%" PRId64 " %d",
                 lim->cpu_millis * (CG_CPU_PERIOD_US / 1000), CG_CPU_PERIOD_US);
    else
        snprintf(v, sizeof(v), "max %d", CG_CPU_PERIOD_US);
    if (!(fresh && lim->cpu_millis == 0) &&
        cg_write(dir, key, "cpu.max", v, err) < 0)
        return -1;
    if (lim->pids_max)
        snprintf(v, sizeof(v), "%" PRId64, lim->pids_max);
    else
        snprintf(v, sizeof(v), "max");
    if (!(fresh && lim->pids_max == 0) &&
        cg_write(dir, key, "pids.max", v, err) < 0)
        return -1;
    if (!fresh && cg_exists(dir, key, "cgroup.freeze") &&
        cg_write(dir, key, "cgroup.freeze", "0", err) < 0)
        return -1;
    return 0;
}

int cgroup_job_create(struct cgroup_ctx *ctx, const char *key,
                      const struct cgroup_limits *limits, struct sh_error *err)
{
    static const struct cgroup_limits none = {0};
    const struct cgroup_limits *lim = limits ? limits : &none;
    bool created[CGROUP_HIER_MAX] = {false};
    char path[CG_PATH_MAX];
    int rc = -1;

    if (cgroup_key_check(key, err) < 0 || cg_limits_check(lim, err) < 0)
        return -1;
    bool fresh = true;
    for (int h = 0; h < ctx->nhier; h++) {
        if (cg_join(path, sizeof(path), ctx->hier[h].dir, key, NULL, err) < 0 ||
            cg_mkdir(path, &created[h], err) < 0)
            goto out;
        fresh &= created[h];
    }
    /* Made here, and by the kernel (its cgroup.procs is there): the
     * defaults need not be written (one access instead of up to ten
     * writes). */
    fresh =
        fresh && cg_exists(ctx->hier[ctx->primary].dir, key, "cgroup.procs");
    if (ctx->version == 2)
        rc = cg_v2_limits(ctx, key, lim, fresh, err);
    else
        rc = cg_v1_limits(ctx, key, lim, fresh, err);
out:
    if (rc < 0) {
        for (int h = 0; h < ctx->nhier; h++) {
            if (created[h] && cg_join(path, sizeof(path), ctx->hier[h].dir, key,
                                      NULL, NULL) == 0)
                rmdir(path);
        }
    }
    return rc;
}

/* --- attach ------------------------------------------------------------- */

int cgroup_attach_init(struct cgroup_attach *att, struct cgroup_ctx *ctx,
                       const char *key, struct sh_error *err)
{
    char path[CG_PATH_MAX];

    att->nfd = 0;
    for (int i = 0; i < CGROUP_HIER_MAX; i++)
        att->fd[i] = -1;
    if (cg_job_lookup(ctx, key, err) < 0)
        return -1;
    for (int h = 0; h < ctx->nhier; h++) {
        if (cg_join(path, sizeof(path), ctx->hier[h].dir, key, "cgroup.procs",
                    err) < 0)
            goto error;
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            sh_errorf(err, errno == ENOENT ? SH_ENOTFOUND : SH_EINTERNAL,
                      "open %s: %s", path, strerror(errno));
            goto error;
        }
        att->fd[att->nfd++] = fd;
    }
    return 0;
error:
    cgroup_attach_fini(att);
    return -1;
}

int cgroup_nhier(const struct cgroup_ctx *ctx)
{
    return ctx->nhier;
}

int cgroup_job_procs_path(const struct cgroup_ctx *ctx, int h, const char *key,
                          char *buf, size_t size)
{
    if (h < 0 || h >= ctx->nhier || cgroup_key_check(key, NULL) < 0)
        return -1;
    return cg_join(buf, size, ctx->hier[h].dir, key, "cgroup.procs", NULL);
}

int cgroup_attach_paths(struct cgroup_attach *att, const char *const *paths,
                        int n, struct sh_error *err)
{
    att->nfd = 0;
    for (int i = 0; i < CGROUP_HIER_MAX; i++)
        att->fd[i] = -1;
    if (n < 1 || n > CGROUP_HIER_MAX)
        return sh_errorf(err, SH_EINVAL, "%d cgroup.procs files", n);
    for (int i = 0; i < n; i++) {
        size_t len = paths[i] ? strlen(paths[i]) : 0;
        static const char tail[] = "/cgroup.procs";
        if (len < sizeof(tail) || paths[i][0] != '/' ||
            strcmp(paths[i] + len - (sizeof(tail) - 1), tail) != 0) {
            sh_errorf(err, SH_EINVAL, "not a cgroup.procs file: %s",
                      paths[i] ? paths[i] : "(none)");
            goto error;
        }
        int fd = open(paths[i], O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
            sh_errorf(err, errno == ENOENT ? SH_ENOTFOUND : SH_EINTERNAL,
                      "open %s: %s", paths[i], strerror(errno));
            goto error;
        }
        att->fd[att->nfd++] = fd;
    }
    return 0;
error:
    cgroup_attach_fini(att);
    return -1;
}

int cgroup_attach_move(const struct cgroup_attach *att, pid_t pid)
{
    char buf[24];
    char *p = buf + sizeof(buf);
    unsigned long v = (unsigned long)(pid > 0 ? pid : getpid());
    size_t len;

    /* Format by hand: snprintf is not async-signal-safe. */
    *--p = '\n';
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    len = (size_t)(buf + sizeof(buf) - p);
    for (int i = 0; i < att->nfd; i++) {
        ssize_t n = pwrite(att->fd[i], p, len, 0);
        if (n < 0)
            return -1;
        if ((size_t)n != len) {
            errno = EIO;
            return -1;
        }
    }
    return 0;
}

void cgroup_attach_fini(struct cgroup_attach *att)
{
    int saved = errno;

    if (att) {
        for (int i = 0; i < att->nfd; i++)
            close(att->fd[i]);
        att->nfd = 0;
        for (int i = 0; i < CGROUP_HIER_MAX; i++)
            att->fd[i] = -1;
    }
    errno = saved;
}

int cgroup_job_attach(struct cgroup_ctx *ctx, const char *key, pid_t pid,
                      struct sh_error *err)
{
    struct cgroup_attach att;
    int rc = -1;

    if (pid < 0)
        return sh_errorf(err, SH_EINVAL, "pid must be 0 (self) or positive");
    if (cgroup_attach_init(&att, ctx, key, err) < 0)
        return -1;
    if (cgroup_attach_move(&att, pid) < 0) {
        sh_errorf(err, errno == ESRCH ? SH_ENOTFOUND : SH_EINTERNAL,
                  "attach pid %d to job cgroup %s: %s",
                  pid > 0 ? (int)pid : (int)getpid(), key, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    cgroup_attach_fini(&att);
    return rc;
}

/* --- kill, count, stats, destroy ---------------------------------------- */

struct cg_kill {
    int sig;
    pid_t self;
    int first_errno;
};

static void cg_kill_one(pid_t pid, void *arg)
{
    struct cg_kill *k = arg;

    /* Never signal the agent itself, should it have been put in a job. */
    if (pid <= 0 || pid == k->self)
        return;
    if (kill(pid, k->sig) < 0 && errno != ESRCH && k->first_errno == 0)
        k->first_errno = errno;
}

/* Freeze (on) or thaw (off) the job where a freezer exists. *frozen tells
 * whether the job is now frozen; failing to freeze is not an error (kill
 * then walks the list several times), failing to thaw is. */
static int cg_freeze(struct cgroup_ctx *ctx, const char *key, bool on,
                     bool *frozen, struct sh_error *err)
{
    const char *dir;
    const char *file;
    const char *val;
    char buf[CG_SMALL_FILE];
    uint64_t v;

    *frozen = false;
    if (ctx->version == 1) {
        if (ctx->idx[CG_FREEZER] < 0)
            return 0;
        dir = cg_hdir(ctx, CG_FREEZER);
        file = "freezer.state";
        val = on ? "FROZEN" : "THAWED";
    } else {
        dir = ctx->hier[0].dir;
        file = "cgroup.freeze";
        val = on ? "1" : "0";
        if (!cg_exists(dir, key, file))
            return 0;
    }
    if (cg_write(dir, key, file, val, on ? NULL : err) < 0)
        return on ? 0 : -1;
    if (!on)
        return 0;
    /* FREEZING may take a moment; wait a bounded time, then go on. */
    for (int ms = 0; ms < CG_FREEZE_WAIT_MS; ms++) {
        if (ctx->version == 1) {
            if (cg_read(dir, key, file, buf, sizeof(buf), NULL) == 0 &&
                strcmp(buf, "FROZEN\n") == 0)
                break;
        } else {
            if (cg_read_keyed(dir, key, "cgroup.events", "frozen", &v, NULL) ==
                    0 &&
                v == 1)
                break;
        }
        cg_sleep_ms(1);
    }
    *frozen = true;
    return 0;
}

int cgroup_job_kill(struct cgroup_ctx *ctx, const char *key, int sig,
                    struct sh_error *err)
{
    struct cg_kill k = {.sig = sig, .self = getpid()};
    const char *dir = ctx->hier[ctx->primary].dir;
    bool frozen = false;
    int rc = -1;

    if (sig <= 0 || sig >= _NSIG)
        return sh_errorf(err, SH_EINVAL, "signal must be 1..%d", _NSIG - 1);
    if (cg_job_lookup(ctx, key, err) < 0)
        return -1;
    if (ctx->version == 2 && sig == SIGKILL &&
        cg_exists(dir, key, "cgroup.kill"))
        return cg_write(dir, key, "cgroup.kill", "1", err);

    cg_freeze(ctx, key, true, &frozen, NULL);
    for (int pass = 0; pass < (frozen ? 1 : CG_UNFROZEN_PASSES); pass++) {
        if (cg_procs_foreach(dir, key, cg_kill_one, &k, err) < 0)
            goto out;
    }
    if (k.first_errno != 0) {
        sh_errorf(err, SH_EINTERNAL, "signal %d to job cgroup %s: %s", sig, key,
                  strerror(k.first_errno));
        goto out;
    }
    rc = 0;
out:
    /* Thaw even after an error: a job must never stay frozen. Frozen tasks
     * act on the SIGKILL queued for them as soon as they run again. */
    if (frozen && cg_freeze(ctx, key, false, &frozen, rc < 0 ? NULL : err) < 0)
        rc = -1;
    /* A freezer still FREEZING when its wait ran out (a loaded machine)
     * or no freezer at all lets a task fork between the listing and the
     * signal: sweep again until only dying tasks could remain. */
    for (int round = 0; rc == 0 && sig == SIGKILL && round < CG_KILL_SWEEPS;
         round++) {
        int left = 0;
        if (cg_procs_foreach(dir, key, cg_count_one, &left, NULL) < 0 ||
            left == 0)
            break;
        cg_procs_foreach(dir, key, cg_kill_one, &k, NULL);
        cg_sleep_ms(2);
    }
    return rc;
}

int cgroup_job_count(struct cgroup_ctx *ctx, const char *key, int *nprocs,
                     struct sh_error *err)
{
    int n = 0;

    if (cg_job_lookup(ctx, key, err) < 0)
        return -1;
    if (cg_procs_foreach(ctx->hier[ctx->primary].dir, key, cg_count_one, &n,
                         err) < 0)
        return -1;
    *nprocs = n;
    return 0;
}

static int cg_v1_stats(struct cgroup_ctx *ctx, const char *key,
                       struct cgroup_stats *st, struct sh_error *err)
{
    const char *mem = cg_hdir(ctx, CG_MEMORY);
    uint64_t oom_kill;

    if (cg_read_u64(cg_hdir(ctx, CG_CPUACCT), key, "cpuacct.usage",
                    &st->cpu_usage_ns, err) < 0 ||
        cg_read_u64(mem, key, "memory.usage_in_bytes", &st->mem_current, err) <
            0 ||
        cg_read_u64(mem, key, "memory.max_usage_in_bytes", &st->mem_peak, err) <
            0 ||
        cg_read_keyed(mem, key, "memory.oom_control", "oom_kill", &oom_kill,
                      err) < 0)
        return -1;
    st->oom_killed = oom_kill > 0;
    return 0;
}

static int cg_v2_stats(struct cgroup_ctx *ctx, const char *key,
                       struct cgroup_stats *st, struct sh_error *err)
{
    const char *dir = ctx->hier[0].dir;
    uint64_t usec;
    uint64_t oom_kill;

    if (cg_read_keyed(dir, key, "cpu.stat", "usage_usec", &usec, err) < 0 ||
        cg_read_u64(dir, key, "memory.current", &st->mem_current, err) < 0 ||
        cg_read_keyed(dir, key, "memory.events", "oom_kill", &oom_kill, err) <
            0)
        return -1;
    if (cg_exists(dir, key, "memory.peak") &&
        cg_read_u64(dir, key, "memory.peak", &st->mem_peak, err) < 0)
        return -1;
    st->cpu_usage_ns = usec * 1000;
    st->oom_killed = oom_kill > 0;
    return 0;
}

int cgroup_job_stats(struct cgroup_ctx *ctx, const char *key,
                     struct cgroup_stats *stats, struct sh_error *err)
{
    struct cgroup_stats st = {0};

    if (cg_job_lookup(ctx, key, err) < 0)
        return -1;
    if ((ctx->version == 2 ? cg_v2_stats(ctx, key, &st, err)
                           : cg_v1_stats(ctx, key, &st, err)) < 0)
        return -1;
    *stats = st;
    return 0;
}

int cgroup_job_usage(struct cgroup_ctx *ctx, const char *key, uint64_t *cpu_ns,
                     uint64_t *mem_peak, struct sh_error *err)
{
    uint64_t cpu = 0, peak = 0;

    if (cgroup_key_check(key, err) < 0)
        return -1;
    if (ctx->version == 1) {
        if (cg_read_u64(cg_hdir(ctx, CG_CPUACCT), key, "cpuacct.usage", &cpu,
                        err) < 0 ||
            cg_read_u64(cg_hdir(ctx, CG_MEMORY), key,
                        "memory.max_usage_in_bytes", &peak, err) < 0)
            return -1;
    } else {
        const char *dir = ctx->hier[0].dir;
        uint64_t usec;
        if (cg_read_keyed(dir, key, "cpu.stat", "usage_usec", &usec, err) < 0)
            return -1;
        if (cg_exists(dir, key, "memory.peak") &&
            cg_read_u64(dir, key, "memory.peak", &peak, err) < 0)
            return -1;
        cpu = usec * 1000;
    }
    *cpu_ns = cpu;
    *mem_peak = peak;
    return 0;
}

int cgroup_job_destroy(struct cgroup_ctx *ctx, const char *key,
                       struct sh_error *err)
{
    char path[CG_PATH_MAX];
    int total = 0;

    if (cgroup_key_check(key, err) < 0)
        return -1;
    /* Check every hierarchy before removing anything. A job cgroup's
     * cgroup.procs is opened straight away (one path walk per hierarchy,
     * not two): only when it is missing is the folder looked for, a
     * hierarchy without the job being skipped as before. */
    for (int h = 0; h < ctx->nhier; h++) {
        if (cg_join(path, sizeof(path), ctx->hier[h].dir, key, "cgroup.procs",
                    err) < 0)
            return -1;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 && errno != ENOENT && errno != ENOTDIR)
            return sh_errorf(err, SH_EINTERNAL, "open %s: %s", path,
                             strerror(errno));
        if (fd < 0 && !cg_job_there(ctx, h, key))
            continue;
        if (fd < 0)
            return sh_errorf(err, SH_EINTERNAL, "open %s: %s", path,
                             strerror(ENOENT));
        if (cg_procs_read(fd, path, cg_count_one, &total, err) < 0)
            return -1;
    }
    if (total > 0)
        return sh_errorf(err, SH_ECONFLICT, "job cgroup %s still has processes",
                         key);
    for (int h = 0; h < ctx->nhier; h++) {
        if (cg_join(path, sizeof(path), ctx->hier[h].dir, key, NULL, err) < 0)
            return -1;
        if (rmdir(path) == 0 || errno == ENOENT)
            continue;
        if (errno == EBUSY)
            return sh_errorf(err, SH_ECONFLICT,
                             "rmdir %s: busy (a process or child cgroup "
                             "appeared)",
                             path);
        return sh_errorf(err, SH_EINTERNAL, "rmdir %s: %s", path,
                         strerror(errno));
    }
    return 0;
}

/* --- devices ------------------------------------------------------------ */

bool cgroup_has_devices(const struct cgroup_ctx *ctx)
{
    return ctx->version == 1 && ctx->idx[CG_DEVICES] >= 0;
}

int cgroup_job_deny_devices(struct cgroup_ctx *ctx, const char *key,
                            const struct cgroup_device *devs, int ndevs,
                            struct sh_error *err)
{
    if (cgroup_key_check(key, err) < 0)
        return -1;
    if (ndevs == 0)
        return 0;
    if (!cgroup_has_devices(ctx))
        return sh_errorf(err, SH_EUNAVAILABLE,
                         ctx->version == 2
                             ? "device access control on cgroup v2 needs an "
                               "eBPF device program, not supported yet"
                             : "the cgroup v1 devices controller is not "
                               "mounted");
    if (!cg_job_there(ctx, ctx->idx[CG_DEVICES], key))
        return sh_errorf(err, SH_ENOTFOUND, "job cgroup %s does not exist",
                         key);
    const char *dir = cg_hdir(ctx, CG_DEVICES);
    for (int i = 0; i < ndevs; i++) {
        char rule[48];
        snprintf(rule, sizeof(rule), "c %u:%u rwm", devs[i].major,
                 devs[i].minor);
        if (cg_write(dir, key, "devices.deny", rule, err) < 0)
            return -1;
    }
    return 0;
}
