/* SPDX-License-Identifier: Apache-2.0 */
/* Mounting a run's volumes in its own mount namespace (see mounts.h). */
#include "agent/mounts.h"

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

/* Walk path from "/" one component at a time, never following a link,
 * creating missing folders. Returns the open parent of the last component
 * (its name in *leaf) and the last component itself in *target. */
static int open_target(const char *name, const char *path, int *parent,
                       int *target, const char **leaf, char *why, size_t size)
{
    int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return failf(why, size, "cannot open /: %s", strerror(errno));
    const char *p = path;
    char comp[256];
    for (;;) {
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        if (n == 0 || n >= sizeof(comp)) {
            close(dir);
            return failf(why, size, "volume %s: bad mount path %s", name, path);
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        int flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
        int next = openat(dir, comp, flags);
        if (next < 0 && errno == ENOENT &&
            (mkdirat(dir, comp, 0755) == 0 || errno == EEXIST))
            next = openat(dir, comp, flags);
        if (next < 0) {
            int e = errno;
            close(dir);
            return failf(why, size,
                         "volume %s: cannot use mount path %s at '%s': %s%s",
                         name, path, comp, strerror(e),
                         e == ENOTDIR ? " (a link is never followed)" : "");
        }
        if (p[n] == '\0') {
            *parent = dir;
            *target = next;
            *leaf = p;
            return 0;
        }
        close(dir);
        dir = next;
        p += n;
    }
}

/* Bind source (a folder of the node: a host volume's path, or a stage)
 * at the mount's path, read-only when it says so. */
static int bind_volume(const json_t *m, const char *source, char *why,
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
    if (open_target(name, path, &parent, &target, &leaf, why, size) < 0) {
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
                 const char *run_key, char *why, size_t size)
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
    json_array_foreach (mounts, i, m) {
        if (bind_volume(m, sources[i], why, size) < 0)
            return -1;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return failf(why, size, "cannot set no_new_privs: %s", strerror(errno));
    return 0;
}
