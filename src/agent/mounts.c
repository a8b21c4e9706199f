/* SPDX-License-Identifier: Apache-2.0 */
/* Mounting a run's volumes in its own mount namespace (see mounts.h). */
#include "agent/mounts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/csi/csi.h"
#include "agent/stage.h"
#include "agent/user_open.h"
#include "lib/model/job.h"
#include "lib/model/volume.h"

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

static void fd_path(int fd, char *buf, size_t size)
{
    snprintf(buf, size, "/proc/self/fd/%d", fd);
}

/* ---- the mount point, reached with the job user's rights ----
 *
 * The user's walk (walk_fn, in a child that became the user) opens the
 * path one component at a time from "/", never following a link, with
 * the user's own lookup: what the user cannot search stops the walk with
 * the user's errno, so an answer never tells more than the user could
 * learn. A missing folder is made there as the user when the user may
 * (their own folder, /tmp): what they could make themselves. Where the
 * user may not (a root-owned /srv, someone else's home), nothing is made
 * on the node: the rest of the path is made on a tmpfs laid over that
 * folder in the job's mount namespace only (underlay), which mirrors the
 * folder's entries by binding each of them, and which vanishes with the
 * namespace. */

/* What walk_fn answers in *aux: the offset in the path of the first
 * component not yet opened, times two, plus one when that component is
 * missing and may not be made by the user (else it is the last one and
 * exists). The fd is the folder it lies in. */
struct walk {
    const char *path;
};

static int walk_fn(void *arg, int *aux, int *err)
{
    const struct walk *w = arg;
    int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return *err = errno, -1;
    const char *p = w->path;
    char comp[256];
    for (;;) {
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        *aux = (int)(p - w->path) * 2;
        if (n == 0 || n >= sizeof(comp)) {
            close(dir);
            return *err = EINVAL, -1;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        int flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
        int next = openat(dir, comp, flags);
        if (next < 0 && errno == ENOENT) {
            if (mkdirat(dir, comp, 0755) == 0 || errno == EEXIST)
                next = openat(dir, comp, flags);
            else if (errno == EACCES || errno == EPERM || errno == EROFS) {
                /* Laid over in the job's view, which mirrors the folder's
                 * entries: only a folder the user may list. */
                int r = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (r < 0) {
                    *err = errno;
                    close(dir);
                    return -1;
                }
                close(r);
                *aux += 1;
                return dir;
            } else
                errno = ENOENT;
        }
        if (next < 0) {
            *err = errno;
            close(dir);
            return -1;
        }
        if (p[n] == '\0') {
            close(next);
            return dir;
        }
        close(dir);
        dir = next;
        p += n;
    }
}

/* A view over a folder binds each of its entries: one with more is
 * refused (the job's namespace would hold that many mounts), and so is a
 * job whose views would bind more than JOB_MIRROR_MOUNTS_MAX in all (32
 * volumes times 4096). Each is checked while the view is made, not only
 * counted before: the folder may fill meanwhile. */
#define UNDERLAY_ENTRIES_MAX 4096
#define JOB_MIRROR_MOUNTS_MAX 8192

static long count_entries(int d)
{
    int dup_d = openat(d, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = dup_d >= 0 ? fdopendir(dup_d) : NULL;
    if (!dir) {
        if (dup_d >= 0)
            close(dup_d);
        return -1;
    }
    long n = 0;
    while (readdir(dir) && n <= UNDERLAY_ENTRIES_MAX + 2)
        n++;
    closedir(dir);
    return n - 2;
}

/* The skeleton of folder d's entries in t: an empty folder for a folder,
 * an empty file for anything else (a bind target), the same link for a
 * link. Owners as in d. More than UNDERLAY_ENTRIES_MAX entries: -1 with
 * EMLINK. */
static int mirror_skeleton(int d, int t)
{
    int dup_d = openat(d, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = dup_d >= 0 ? fdopendir(dup_d) : NULL;
    if (!dir) {
        if (dup_d >= 0)
            close(dup_d);
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    long seen = 0;
    while (rc == 0 && (e = readdir(dir))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (++seen > UNDERLAY_ENTRIES_MAX) {
            closedir(dir);
            return errno = EMLINK, -1;
        }
        struct stat st;
        if (fstatat(d, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            char to[4096];
            ssize_t n = readlinkat(d, e->d_name, to, sizeof(to) - 1);
            if (n < 0)
                continue;
            to[n] = '\0';
            if (symlinkat(to, t, e->d_name) < 0)
                rc = -1;
        } else if (S_ISDIR(st.st_mode)) {
            if (mkdirat(t, e->d_name, st.st_mode & 07777) < 0)
                rc = -1;
        } else {
            int f = openat(t, e->d_name,
                           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           st.st_mode & 0777);
            if (f < 0)
                rc = -1;
            else
                close(f);
        }
        if (rc == 0)
            fchownat(t, e->d_name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW);
    }
    closedir(dir);
    return rc;
}

/* Bind every entry of d (but links) on its skeleton in t, with what is
 * mounted beneath it. An entry that went away in between is left out, and
 * so is one named skip (the mount path's own folder, made in t: an entry
 * of that name that appeared in d since is never bound over it). *budget
 * is how many more mounts the job may make: past it, -1 with EDQUOT. */
static int mirror_bind(int d, int t, const char *skip, long *budget)
{
    int dup_d = openat(d, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = dup_d >= 0 ? fdopendir(dup_d) : NULL;
    if (!dir) {
        if (dup_d >= 0)
            close(dup_d);
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(dir))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            strcmp(e->d_name, skip) == 0)
            continue;
        int src = openat(d, e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        int dst = openat(t, e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (src >= 0 && dst >= 0 && fstat(src, &st) == 0 &&
            !S_ISLNK(st.st_mode)) {
            char from[64], to[64];
            fd_path(src, from, sizeof(from));
            fd_path(dst, to, sizeof(to));
            if (*budget <= 0) {
                errno = EDQUOT;
                rc = -1;
            } else if (mount(from, to, NULL, MS_BIND | MS_REC, NULL) == 0)
                --*budget;
            else if (errno != ENOTDIR && errno != EISDIR)
                rc = -1;
        }
        if (src >= 0)
            close(src);
        if (dst >= 0)
            close(dst);
    }
    closedir(dir);
    return rc;
}

/* Lay a tmpfs over folder d in this (the job's) mount namespace, with
 * d's owner and mode and d's entries bound in it, and folder first (the
 * first component of the mount path that d lacks) made in it, root's,
 * 0755; scratch (a folder of the agent's) holds the tmpfs while it is
 * filled. first is made before anything is bound: a name first that
 * appeared in d since the user's walk (a link or a folder the user
 * planted) makes it fail with EEXIST rather than have anything done to
 * what that name reaches. *budget: the mounts the job may still make.
 * The tmpfs's root (an O_PATH fd), or -1 with errno (EMLINK: d holds
 * more than UNDERLAY_ENTRIES_MAX entries; EDQUOT: the job's views would
 * bind more than JOB_MIRROR_MOUNTS_MAX). d being "/", the tmpfs becomes
 * this process's root (chroot), which the job's tasks inherit. */
static int underlay(int d, const char *scratch, const char *first, long *budget)
{
    struct stat st, root;
    if (fstat(d, &st) < 0 || stat("/", &root) < 0)
        return -1;
    bool is_root = st.st_dev == root.st_dev && st.st_ino == root.st_ino;
    int rd = openat(d, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rd < 0)
        return -1;
    /* Refused at once when it is plainly too big. */
    long entries = count_entries(rd);
    if (entries < 0 || entries > UNDERLAY_ENTRIES_MAX || entries > *budget) {
        int e = entries < 0                      ? errno
                : entries > UNDERLAY_ENTRIES_MAX ? EMLINK
                                                 : EDQUOT;
        close(rd);
        return errno = e, -1;
    }
    /* Inodes for the skeleton, the tmpfs's root and the folders of a
     * mount path. */
    char opts[160];
    snprintf(opts, sizeof(opts), "mode=%o,uid=%u,gid=%u,size=1m,nr_inodes=%d",
             (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
             (unsigned)st.st_gid, UNDERLAY_ENTRIES_MAX + JOB_PATH_MAX / 2 + 2);
    if (mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
        int e = errno;
        close(rd);
        return errno = e, -1;
    }
    int t = open(scratch, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char dpath[64];
    fd_path(d, dpath, sizeof(dpath));
    /* Moved before the binds: a bind of the folder holding scratch would
     * otherwise take the tmpfs along. */
    int rc = t < 0 || mirror_skeleton(rd, t) < 0 || mkdirat(t, first, 0755) < 0
                 ? -1
                 : 0;
    bool moved = false;
    if (rc == 0) {
        rc = mount(scratch, is_root ? "/" : dpath, NULL, MS_MOVE, NULL);
        moved = rc == 0;
    }
    if (rc == 0 &&
        (mirror_bind(rd, t, first, budget) < 0 ||
         (is_root && (fchdir(t) < 0 || chroot(".") < 0 || chdir("/") < 0))))
        rc = -1;
    if (rc < 0) {
        int e = errno;
        /* The tmpfs where it is by then, with what was bound in it: once
         * moved, scratch names the run folder again, not the tmpfs. */
        char tpath[64];
        fd_path(t, tpath, sizeof(tpath));
        umount2(moved ? tpath : scratch, MNT_DETACH);
        if (t >= 0)
            close(t);
        close(rd);
        return errno = e, -1;
    }
    close(rd);
    return t;
}

/* Open the mount point of volume name at path: its folder (*parent), the
 * mount point (*target) and its name (*leaf). */
static int open_target(const char *name, const char *path,
                       const struct mount_user *mu, long *budget, int *parent,
                       int *target, const char **leaf, char *why, size_t size)
{
    struct walk w = {.path = path};
    int aux = 0, err = 0;
    int dir = user_run(mu->creds, walk_fn, &w, &aux, &err);
    const char *rest = path + aux / 2;
    if (dir < 0) {
        char comp[256];
        snprintf(comp, sizeof(comp), "%.*s", (int)strcspn(rest, "/"), rest);
        return failf(
            why, size, "volume %s: cannot use mount path %s at '%s': %s%s",
            name, path, comp, strerror(err),
            err == ENOTDIR ? " (a link is never followed)"
            : err == ETIME ? " (its walk did not end within 30 s: a mount on "
                             "the path that does not answer?)"
                           : "");
    }
    if (aux % 2) {
        /* Missing, and not the user's to make: made in the job's view, on
         * a tmpfs of its own where every folder made is new (a name that
         * is there already fails) and stays root's, 0755: nothing is
         * given to the user, and the leaf is covered by the volume. */
        char first[256];
        snprintf(first, sizeof(first), "%.*s", (int)strcspn(rest, "/"), rest);
        int t = underlay(dir, mu->scratch, first, budget);
        int e = errno;
        close(dir);
        if (t < 0 && e == EMLINK)
            return failf(why, size,
                         "volume %s: cannot make mount path %s in the job's "
                         "view: the folder it would be made in holds more "
                         "than %d entries; mount it in a folder that exists "
                         "or that you may write",
                         name, path, UNDERLAY_ENTRIES_MAX);
        if (t < 0 && e == EDQUOT)
            return failf(why, size,
                         "volume %s: cannot make mount path %s in the job's "
                         "view: the job's mount paths would mirror more than "
                         "%d entries of the folders they are made in; mount "
                         "them in folders that exist or that you may write",
                         name, path, JOB_MIRROR_MOUNTS_MAX);
        if (t < 0)
            return failf(why, size,
                         "volume %s: cannot make mount path %s in the job's "
                         "view: %s%s",
                         name, path, strerror(e),
                         e == EEXIST ? " (it appeared while being made)" : "");
        dir = t;
        const char *p = rest;
        for (;;) {
            size_t n = strcspn(p, "/");
            char comp[256];
            snprintf(comp, sizeof(comp), "%.*s", (int)n, p);
            /* The first one underlay made. */
            if (p != rest && mkdirat(dir, comp, 0755) < 0) {
                int e2 = errno;
                close(dir);
                return failf(why, size,
                             "volume %s: cannot make mount path %s in the "
                             "job's view: %s",
                             name, path, strerror(e2));
            }
            if (p[n] == '\0') {
                rest = p;
                break;
            }
            int next = openat(dir, comp,
                              O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            int e2 = errno;
            close(dir);
            if (next < 0)
                return failf(why, size,
                             "volume %s: cannot make mount path %s in the "
                             "job's view: %s",
                             name, path, strerror(e2));
            dir = next;
            p += n;
            while (*p == '/')
                p++;
        }
    }
    int t = openat(dir, rest, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (t < 0) {
        int e = errno;
        close(dir);
        return failf(why, size,
                     "volume %s: cannot use mount path %s at '%s': %s%s", name,
                     path, rest, strerror(e),
                     e == ENOTDIR ? " (a link is never followed)" : "");
    }
    *parent = dir;
    *target = t;
    *leaf = rest;
    return 0;
}

/* Bind source (a folder of the node: a host volume's path, or a stage)
 * at the mount's path, read-only when it says so. */
static int bind_volume(const json_t *m, const char *source,
                       const struct mount_user *mu, long *budget, char *why,
                       size_t size)
{
    const char *name = json_string_value(json_object_get(m, "name"));
    const char *path = json_string_value(json_object_get(m, "path"));
    bool ro = json_is_true(json_object_get(m, "readonly"));
    int src = open(source, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (src < 0)
        return failf(
            why, size, "volume %s: %s %s is not usable on this node: %s", name,
            strcmp(json_string_value(json_object_get(m, "kind")), "host") == 0
                ? "host path"
                : "its mount",
            source, strerror(errno));
    int parent = -1, target = -1;
    const char *leaf = NULL;
    if (open_target(name, path, mu, budget, &parent, &target, &leaf, why,
                    size) < 0) {
        close(src);
        return -1;
    }
    char from[64], to[64];
    fd_path(src, from, sizeof(from));
    fd_path(target, to, sizeof(to));
    int rc = 0;
    if (mount(from, to, NULL, MS_BIND, NULL) < 0) {
        rc = failf(why, size, "volume %s: cannot bind %s at %s: %s", name,
                   source, path, strerror(errno));
        goto out;
    }
    /* Flags apply to the new mount, reached through its parent folder
     * (the descriptor taken before the bind still names what lies
     * beneath it). */
    int top =
        openat(parent, leaf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (top >= 0) {
        fd_path(top, to, sizeof(to));
        unsigned long flags =
            MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (ro ? MS_RDONLY : 0);
        if (mount(NULL, to, NULL, flags, NULL) < 0)
            rc = failf(why, size, "volume %s: cannot make %s %s: %s", name,
                       path, ro ? "read-only" : "nosuid", strerror(errno));
        close(top);
    } else {
        rc = failf(why, size, "volume %s: mount at %s vanished: %s", name, path,
                   strerror(errno));
    }
out:
    close(src);
    close(parent);
    close(target);
    return rc;
}

/* A CSI volume: staged once per node, then published for this run at a
 * target of its own, which is what the job's namespace binds. */
static int csi_source(const json_t *m, const char *stages_dir,
                      const char *run_key, char *source, size_t ssize,
                      char *why, size_t size)
{
    char staging[4200], publish[4300];
    if (!run_key ||
        stage_acquire(stages_dir, m, staging, sizeof(staging), why, size) < 0)
        return -1;
    stage_csi_target(stages_dir, m, run_key, source, ssize);
    /* The CO makes the target's parent; the plugin the target. */
    snprintf(publish, sizeof(publish), "%s", source);
    char *slash = strrchr(publish, '/');
    if (slash)
        *slash = '\0';
    if (mkdir(publish, 0700) < 0 && errno != EEXIST)
        return failf(why, size, "volume %s: cannot make %s: %s",
                     json_string_value(json_object_get(m, "name")), publish,
                     strerror(errno));
    return csi_publish(m, staging, source, why, size);
}

/* The folder of the node each volume is bound from: a host volume's own
 * path, or the stage an s3 volume is mounted on (mounted here first if no
 * other job of the node has it). */
static int find_source(const json_t *m, const char *stages_dir,
                       const char *run_key, char *source, size_t ssize,
                       char *why, size_t size)
{
    const char *name = json_string_value(json_object_get(m, "name"));
    const char *kind = json_string_value(json_object_get(m, "kind"));
    const char *error = json_string_value(json_object_get(m, "error"));
    if (error)
        return failf(why, size, "%s", error);
    if (kind && strcmp(kind, "host") == 0) {
        const char *src = json_string_value(json_object_get(m, "source"));
        if (!src)
            return failf(why, size, "volume %s has no host path", name);
        snprintf(source, ssize, "%s", src);
        return 0;
    }
    if (kind && strcmp(kind, "csi") == 0)
        return csi_source(m, stages_dir, run_key, source, ssize, why, size);
    if (kind && (strcmp(kind, "s3") == 0 || strcmp(kind, "nfs") == 0))
        return stage_acquire(stages_dir, m, source, ssize, why, size);
    return failf(why, size, "volume %s: this agent cannot mount %s volumes",
                 name, kind ? kind : "unknown");
}

int mounts_enter(const json_t *mounts, const char *stages_dir,
                 const char *run_key, const struct mount_user *mu, char *why,
                 size_t size)
{
    size_t n = json_array_size(mounts);
    if (n == 0)
        return 0;
    if (geteuid() != 0)
        return failf(why, size,
                     "this job mounts volumes, which needs the node's agent "
                     "to run as root");
    if (n > JOB_VOLUMES_MAX)
        return failf(why, size, "too many volumes");
    char sources[JOB_VOLUMES_MAX][4200];
    size_t i;
    const json_t *m;
    /* Stages first, in the node's namespace, where other jobs find them. */
    json_array_foreach (mounts, i, m) {
        const char *name = json_string_value(json_object_get(m, "name"));
        const char *path = json_string_value(json_object_get(m, "path"));
        struct sh_error err;
        if (!name || !path)
            return failf(why, size, "a volume of this job is malformed");
        if (volume_mount_path_check(path, &err) < 0)
            return failf(why, size, "volume %s: %s", name, err.msg);
        if (find_source(m, stages_dir, run_key, sources[i], sizeof(sources[i]),
                        why, size) < 0)
            return -1;
    }
    if (unshare(CLONE_NEWNS) < 0)
        return failf(why, size, "cannot make the job's mount namespace: %s",
                     strerror(errno));
    /* Nothing mounted here reaches the node's namespace, and the reverse. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return failf(why, size, "cannot make the job's mounts private: %s",
                     strerror(errno));
    /* What is made in the job's view is 0755 whatever the shim's umask. */
    mode_t mask = umask(022);
    long budget = JOB_MIRROR_MOUNTS_MAX;
    json_array_foreach (mounts, i, m) {
        if (bind_volume(m, sources[i], mu, &budget, why, size) < 0) {
            umask(mask);
            return -1;
        }
    }
    umask(mask);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return failf(why, size, "cannot set no_new_privs: %s", strerror(errno));
    return 0;
}
