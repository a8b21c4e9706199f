/* SPDX-License-Identifier: Apache-2.0 */
/* Node-level mounts shared by jobs' volumes (see stage.h). */
#include "agent/stage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/csi/csi.h"
#include "lib/model/job.h"
#include "lib/util/clock.h"
#include "lib/util/file.h"
#include "lib/util/log.h"

#define STAGE_START_MS 20000 /* a mount daemon may take this long */
#define STAGE_SETTLE_MS 1500 /* ...and must keep working this long */
#define STAGE_CHECK_MS 5000  /* a stage in use must list within this */

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* A mount point field of /proc/self/mountinfo with its octal escapes
 * (\040 for a space, ...) undone, in place. */
static void mountinfo_unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' &&
            r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* From the mount table, never from the mount itself: a stat of a mount
 * whose server hangs (NFS, a stopped FUSE daemon) blocks for as long as
 * the server does, and the agent's loop asks this. A FUSE mount whose
 * daemon died, or one that answers EIO, is still a mount point here. */
bool stage_is_mountpoint(const char *dir)
{
    /* The table holds absolute paths without links: resolve the parent
     * (a plain folder of the agent's state), never the mount itself. */
    char parent[4200], abs_parent[PATH_MAX], want[PATH_MAX + 256];
    const char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : dir;
    snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - dir) : 1,
             slash ? dir : ".");
    if (!parent[0])
        snprintf(parent, sizeof(parent), "/");
    if (!*base || !realpath(parent, abs_parent))
        return false;
    snprintf(want, sizeof(want), "%s%s%s", abs_parent,
             strcmp(abs_parent, "/") == 0 ? "" : "/", base);
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return false;
    char *line = NULL;
    size_t cap = 0;
    bool found = false;
    while (!found && getline(&line, &cap, f) > 0) {
        /* id parent major:minor root MOUNTPOINT options ... */
        char *save = NULL, *field = strtok_r(line, " ", &save);
        for (int i = 0; field && i < 4; i++)
            field = strtok_r(NULL, " ", &save);
        if (!field)
            continue;
        mountinfo_unescape(field);
        found = strcmp(field, want) == 0;
    }
    free(line);
    fclose(f);
    return found;
}

/* Can the mount be listed (which waits for s3fs to have checked the
 * bucket)? May block as long as the server does: see mount_works_within. */
static bool mount_works(const char *mnt)
{
    DIR *d = opendir(mnt);
    if (!d)
        return false;
    errno = 0;
    while (readdir(d))
        ;
    bool ok = errno == 0;
    closedir(d);
    return ok;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* mount_works, asked in a child so that a server that never answers holds
 * the child, not the caller: false when it has not answered within
 * timeout_ms (the child is killed; a caller that reaps any child, as the
 * shim does, collects it if it was not yet gone). */
static bool mount_works_within(const char *mnt, int timeout_ms)
{
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0)
        _exit(mount_works(mnt) ? 0 : 1);
    int64_t until = clock_mono_ms() + timeout_ms;
    for (;;) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (r < 0 && errno != EINTR)
            return false;
        if (clock_mono_ms() >= until)
            break;
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    for (int i = 0; i < 10 && waitpid(pid, NULL, WNOHANG) == 0; i++)
        sleep_ms(10);
    return false;
}

/* What the daemon said last that explains a failure: its last [CRT] (or
 * else [ERR]) line, without time stamp and source location, as
 * "what: message". */
static void log_reason(const char *dir, const char *what, char *out,
                       size_t size)
{
    char path[4200], line[1024];
    snprintf(path, sizeof(path), "%s/log", dir);
    snprintf(out, size, "%s gave up (see %s)", what, path);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char best[1024] = "";
    int best_rank = 0;
    while (fgets(line, sizeof(line), f)) {
        int rank = strstr(line, "[CRT]") ? 2 : strstr(line, "[ERR]") ? 1 : 0;
        if (rank == 0 || rank < best_rank || strstr(line, "LowSetLogLevel") ||
            strstr(line, "retry to connect"))
            continue;
        /* "...[CRT] file.cpp:func(123): message" -> "message" */
        const char *msg = strstr(line, "): ");
        const char *tag = strstr(line, rank == 2 ? "[CRT] " : "[ERR] ");
        snprintf(best, sizeof(best), "%s",
                 msg   ? msg + 3
                 : tag ? tag + 6
                       : line);
        best_rank = rank;
    }
    fclose(f);
    best[strcspn(best, "\n")] = '\0';
    if (best[0])
        snprintf(out, size, "%s: %s", what, best);
}

static int write_passwd(int dirfd, const json_t *m, char *why, size_t wsize)
{
    char text[2 * 4200];
    int n = snprintf(text, sizeof(text), "%s:%s\n", str(m, "access_key"),
                     str(m, "secret_key"));
    struct sh_error err;
    if (n < 0 || n >= (int)sizeof(text) ||
        file_write_atomic_at(dirfd, "passwd", text, (size_t)n, 0600, false,
                             &err) < 0) {
        snprintf(why, wsize, "cannot write the volume's credentials file");
        return -1;
    }
    return 0;
}

/* Start a FUSE daemon (argv, in the foreground) in a session of its own,
 * apart from the job's, so stopping the job never stops the mount; its
 * output goes to the stage's log. Wait until the mount works, or the
 * daemon gives up (why: what it said last). */
static int run_mount_daemon(const char *dir, const char *what,
                            const char *const *argv, char *why, size_t wsize)
{
    char mnt[4200], logp[4200];
    snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
    snprintf(logp, sizeof(logp), "%s/log", dir);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, wsize, "cannot start %s: %s", what, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        setsid();
        int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int out = open(
            logp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
            dup2(out, 2) < 0)
            _exit(126);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int sig = 1; sig < NSIG; sig++)
            signal(sig, SIG_DFL);
        execvp(argv[0], (char *const *)argv);
        dprintf(2, "[CRT] cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    /* A daemon may answer the first listing before it has checked its
     * server (s3fs checks the bucket and credentials beside serving): the
     * mount counts as working once it still works, daemon alive, after
     * STAGE_SETTLE_MS. */
    int64_t until = clock_mono_ms() + STAGE_START_MS;
    int64_t worked_at = 0;
    while (clock_mono_ms() < until) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            log_reason(dir, what, why, wsize);
            if (stage_is_mountpoint(mnt))
                umount2(mnt, MNT_DETACH);
            return -1;
        }
        if (stage_is_mountpoint(mnt) &&
            mount_works_within(mnt, (int)(until - clock_mono_ms()) + 1)) {
            if (worked_at == 0)
                worked_at = clock_mono_ms();
            else if (clock_mono_ms() - worked_at >= STAGE_SETTLE_MS)
                return 0;
        }
        sleep_ms(50);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (stage_is_mountpoint(mnt))
        umount2(mnt, MNT_DETACH);
    snprintf(why, wsize, "%s did not mount within %d s", what,
             STAGE_START_MS / 1000);
    return -1;
}

/* s3fs, for a bucket (or a folder of it) of an S3-compatible store. */
static int start_s3fs(const char *dir, const json_t *m, char *why, size_t wsize)
{
    char mnt[4200], passwd[4200], cache[4200], bucket[600];
    char url[700], region[100], umask[64];
    snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
    snprintf(passwd, sizeof(passwd), "passwd_file=%s/passwd", dir);
    snprintf(cache, sizeof(cache), "use_cache=%s/cache", dir);
    const char *prefix = str(m, "prefix");
    snprintf(bucket, sizeof(bucket), "%s%s%s", str(m, "bucket"),
             prefix ? ":/" : "", prefix ? prefix : "");
    snprintf(url, sizeof(url), "url=%s", str(m, "endpoint"));
    snprintf(region, sizeof(region), "endpoint=%s",
             str(m, "region") ? str(m, "region") : "us-east-1");
    bool ro = json_is_true(json_object_get(m, "readonly"));
    /* Access is decided by who may mount the volume (its project), so the
     * files are open to every job user that gets it. */
    snprintf(umask, sizeof(umask), "umask=%s", ro ? "0222" : "0000");
    bool cached = json_is_true(json_object_get(m, "cache"));
    if (cached) {
        char cdir[4200];
        snprintf(cdir, sizeof(cdir), "%s/cache", dir);
        mkdir(cdir, 0700);
    }
    const char *argv[32];
    int n = 0;
    argv[n++] = "s3fs";
    argv[n++] = bucket;
    argv[n++] = mnt;
    argv[n++] = "-f";
    const char *opts[] = {passwd,
                          url,
                          region,
                          "use_path_request_style",
                          "allow_other",
                          umask,
                          "retries=2",
                          "connect_timeout=5",
                          "dbglevel=err",
                          ro ? "ro" : "rw",
                          cached ? cache : NULL};
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        if (opts[i]) {
            argv[n++] = "-o";
            argv[n++] = opts[i];
        }
    }
    argv[n] = NULL;
    return run_mount_daemon(dir, "s3fs", argv, why, wsize);
}

/* The value of option key in a comma-separated list ("" for a flag), or
 * NULL when absent. */
static const char *option(const char *list, const char *key, char *buf,
                          size_t size)
{
    size_t n = strlen(key);
    for (const char *p = list; p && *p;
         p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (strncmp(p, key, n) == 0 && (p[n] == '=' || p[n] == ',' || !p[n])) {
            const char *v = p[n] == '=' ? p + n + 1 : "";
            snprintf(buf, size, "%.*s", (int)strcspn(v, ","), v);
            return buf;
        }
    }
    return NULL;
}

static bool kernel_has(const char *fs)
{
    FILE *f = fopen("/proc/filesystems", "re");
    char line[128];
    bool found = false;
    while (f && !found && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *name = strrchr(line, '\t');
        found = strcmp(name ? name + 1 : line, fs) == 0;
    }
    if (f)
        fclose(f);
    return found;
}

/* NFS: the kernel client when this node has one (mount.nfs), else
 * shoal-nfs-fuse (libnfs), which honours vers and port only and refuses
 * the other options rather than ignore them. */
static int start_nfs(const char *dir, const json_t *m, char *why, size_t wsize)
{
    char mnt[4200], src[1400], opts[400], vbuf[32], pbuf[32];
    snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
    snprintf(src, sizeof(src), "%s:%s", str(m, "server"), str(m, "export"));
    const char *options = str(m, "options") ? str(m, "options") : "vers=4.1";
    bool ro = json_is_true(json_object_get(m, "readonly"));
    const char *vers = option(options, "vers", vbuf, sizeof(vbuf));
    if (!vers)
        vers = option(options, "nfsvers", vbuf, sizeof(vbuf));
    int major = vers && vers[0] == '3' ? 3 : 4;
    if (kernel_has(major == 3 ? "nfs" : "nfs4") &&
        access("/sbin/mount.nfs", X_OK) == 0) {
        snprintf(opts, sizeof(opts), "%s%s", options, ro ? ",ro" : "");
        const char *argv[] = {"mount", "-t", "nfs", "-o", opts, src, mnt, NULL};
        char logp[4300];
        snprintf(logp, sizeof(logp), "%s/log", dir);
        pid_t pid = fork();
        if (pid == 0) {
            int out =
                open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
            if (out >= 0) {
                dup2(out, 1);
                dup2(out, 2);
            }
            execvp("mount", (char *const *)argv);
            _exit(127);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            FILE *f = fopen(logp, "re");
            char line[512] = "mount.nfs failed";
            if (f) {
                if (!fgets(line, sizeof(line), f))
                    snprintf(line, sizeof(line), "mount.nfs failed");
                fclose(f);
            }
            line[strcspn(line, "\n")] = '\0';
            snprintf(why, wsize, "%s", line);
            return -1;
        }
        return 0;
    }
    /* The userspace client. */
    char list[400];
    snprintf(list, sizeof(list), "%s", options);
    char *save = NULL;
    for (char *o = strtok_r(list, ",", &save); o;
         o = strtok_r(NULL, ",", &save)) {
        o[strcspn(o, "=")] = '\0';
        if (strcmp(o, "vers") && strcmp(o, "nfsvers") && strcmp(o, "port")) {
            snprintf(why, wsize,
                     "option %s needs the kernel NFS client, which this node "
                     "lacks (its userspace client honours vers and port)",
                     o);
            return -1;
        }
    }
    char self[4096], helper[4200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(helper, sizeof(helper), "%s/shoal-nfs-fuse", self);
    if (access(helper, X_OK) != 0) {
        snprintf(why, wsize,
                 "this node has no kernel NFS client and no %s (build with "
                 "libnfs-dev and libfuse3-dev)",
                 helper);
        return -1;
    }
    const char *port = option(options, "port", pbuf, sizeof(pbuf));
    const char *argv[12];
    int k = 0;
    argv[k++] = helper;
    argv[k++] = str(m, "server");
    argv[k++] = str(m, "export");
    argv[k++] = mnt;
    argv[k++] = "--vers";
    argv[k++] = major == 3 ? "3" : "4";
    if (port) {
        argv[k++] = "--port";
        argv[k++] = port;
    }
    if (ro)
        argv[k++] = "--ro";
    argv[k] = NULL;
    return run_mount_daemon(dir, "nfs", argv, why, wsize);
}

/* Mount the stage of m in dir/mnt, by kind. why names the source. */
static int mount_stage(const char *dir, const json_t *m, char *why,
                       size_t wsize)
{
    const char *kind = str(m, "kind");
    char reason[600];
    int rc;
    if (strcmp(kind, "s3") == 0) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        rc = dfd < 0 ? -1 : write_passwd(dfd, m, reason, sizeof(reason));
        if (dfd < 0)
            snprintf(reason, sizeof(reason), "%s", strerror(errno));
        else
            close(dfd);
        if (rc == 0)
            rc = start_s3fs(dir, m, reason, sizeof(reason));
        if (rc < 0)
            snprintf(why, wsize, "volume %s: bucket %s at %s: %s",
                     str(m, "name"), str(m, "bucket"), str(m, "endpoint"),
                     reason);
        return rc;
    }
    rc = start_nfs(dir, m, reason, sizeof(reason));
    if (rc < 0)
        snprintf(why, wsize, "volume %s: nfs %s:%s: %s", str(m, "name"),
                 str(m, "server"), str(m, "export"), reason);
    return rc;
}

/* A CSI volume's stage: NodeStageVolume once per node (when the plugin
 * stages), remembered in csi.json with the entry, so the agent can unstage
 * it after a restart. */
static int csi_acquire(const char *dir, const json_t *m, char *why,
                       size_t wsize)
{
    char path[4300], mnt[4300];
    snprintf(path, sizeof(path), "%s/csi.json", dir);
    snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
    json_t *rec = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
    if (rec) {
        json_decref(rec);
        return 0; /* staged (or not needed) by an earlier run */
    }
    int stages = csi_stages(m, why, wsize);
    if (stages < 0 || (stages && csi_stage(m, mnt, why, wsize) < 0))
        return -1;
    /* The entry, without what the job asked (path, readonly) is the
     * volume's; kept for the unstage. */
    rec = json_pack("{s:b, s:O}", "staged", stages, "mount", m);
    char *text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
    json_decref(rec);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = text && dfd >= 0
                 ? file_write_atomic_at(dfd, "csi.json", text, strlen(text),
                                        0600, true, NULL)
                 : -1;
    if (dfd >= 0)
        close(dfd);
    free(text);
    if (rc < 0) {
        snprintf(why, wsize, "volume %s: cannot record its stage in %s",
                 str(m, "name"), dir);
        if (stages)
            csi_unstage(m, mnt, why + strlen(why), 0);
    }
    return rc;
}

/* Does the controller's entry hold what its kind needs? */
static bool entry_complete(const json_t *m)
{
    const char *kind = str(m, "kind");
    const char *stage = str(m, "stage");
    if (!kind || !stage || !job_ident_valid(stage))
        return false;
    if (strcmp(kind, "s3") == 0)
        return str(m, "bucket") && str(m, "endpoint") && str(m, "access_key") &&
               str(m, "secret_key");
    if (strcmp(kind, "nfs") == 0)
        return str(m, "server") && str(m, "export") &&
               str(m, "server")[0] != '-';
    if (strcmp(kind, "csi") == 0)
        return str(m, "socket") && str(m, "volume_id");
    return false;
}

int stage_acquire(const char *stages_dir, const json_t *m, char *source,
                  size_t size, char *why, size_t wsize)
{
    const char *name = str(m, "name");
    const char *stage = str(m, "stage");
    if (!entry_complete(m)) {
        snprintf(why, wsize, "volume %s: the controller's entry is incomplete",
                 name);
        return -1;
    }
    char dir[4200], mnt[4300], lockp[4300];
    snprintf(dir, sizeof(dir), "%s/%s", stages_dir, stage);
    snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
    snprintf(lockp, sizeof(lockp), "%s/lock", dir);
    if ((mkdir(stages_dir, 0700) < 0 && errno != EEXIST) ||
        (mkdir(dir, 0700) < 0 && errno != EEXIST) ||
        (mkdir(mnt, 0700) < 0 && errno != EEXIST && errno != ENOTCONN)) {
        snprintf(why, wsize, "volume %s: cannot make %s: %s", name, mnt,
                 strerror(errno));
        return -1;
    }
    int lock = open(lockp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lock < 0 || flock(lock, LOCK_EX) < 0) {
        snprintf(why, wsize, "volume %s: cannot lock %s: %s", name, lockp,
                 strerror(errno));
        if (lock >= 0)
            close(lock);
        return -1;
    }
    int rc = 0;
    if (strcmp(str(m, "kind"), "csi") == 0) {
        rc = csi_acquire(dir, m, why, wsize);
        if (rc == 0)
            snprintf(source, size, "%s", mnt);
        close(lock);
        return rc;
    }
    /* A stage that cannot be listed in time (its daemon died, its server
     * restarted and the mount answers EIO, or its server hangs) is
     * detached, lazily (jobs still in it keep what they hold), and mounted
     * again for this job. */
    if (stage_is_mountpoint(mnt) && !mount_works_within(mnt, STAGE_CHECK_MS)) {
        sh_log(LOG_WARNING, "stage",
               "volume %s: the stage at %s does not answer: mounting it "
               "again",
               name, mnt);
        umount2(mnt, MNT_DETACH);
    }
    if (!stage_is_mountpoint(mnt))
        rc = mount_stage(dir, m, why, wsize);
    if (rc == 0)
        snprintf(source, size, "%s", mnt);
    close(lock); /* releases the flock */
    return rc;
}

/* A CSI stage is the plugin's: ask it to unstage (when it staged). 0 when
 * done or not a CSI stage. */
static int csi_release(const char *dir)
{
    char path[4300], mnt[4300], why[600];
    snprintf(path, sizeof(path), "%s/csi.json", dir);
    json_t *rec = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
    if (!rec)
        return 0;
    int rc = 0;
    snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
    if (json_is_true(json_object_get(rec, "staged")) &&
        csi_unstage(json_object_get(rec, "mount"), mnt, why, sizeof(why)) < 0) {
        sh_log(LOG_WARNING, "stage", "%s", why);
        rc = -1;
    }
    json_decref(rec);
    return rc;
}

static bool named(const json_t *in_use, const char *stage)
{
    size_t i;
    const json_t *v;
    json_array_foreach (in_use, i, v) {
        if (json_is_string(v) && strcmp(json_string_value(v), stage) == 0)
            return true;
    }
    return false;
}

int stage_release_unused(const char *stages_dir, const json_t *in_use)
{
    DIR *d = opendir(stages_dir);
    if (!d)
        return 0;
    int released = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!job_ident_valid(e->d_name) || named(in_use, e->d_name))
            continue;
        char dir[4200], path[4300];
        snprintf(dir, sizeof(dir), "%s/%s", stages_dir, e->d_name);
        snprintf(path, sizeof(path), "%s/lock", dir);
        int lock = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) < 0) {
            close(lock); /* a shim is mounting it for a new run */
            continue;
        }
        if (csi_release(dir) < 0) {
            if (lock >= 0)
                close(lock);
            continue; /* the plugin refused: try again at the next end */
        }
        snprintf(path, sizeof(path), "%s/mnt", dir);
        if (stage_is_mountpoint(path) && umount2(path, MNT_DETACH) < 0) {
            if (lock >= 0)
                close(lock);
            continue;
        }
        snprintf(path, sizeof(path), "%s/publish", dir);
        rmdir(path);
        static const char *const files[] = {"passwd", "log", "csi.json",
                                            "lock"};
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
            snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
            unlink(path);
        }
        snprintf(path, sizeof(path), "%s/mnt", dir);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/cache", dir);
        file_remove_tree(path);
        rmdir(dir);
        if (lock >= 0)
            close(lock);
        released++;
    }
    closedir(d);
    return released;
}

void stage_csi_target(const char *stages_dir, const json_t *m,
                      const char *run_key, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s/publish/%s", stages_dir, str(m, "stage"),
             run_key);
}

void stage_csi_unpublish_run(const char *stages_dir, const json_t *mounts,
                             const char *run_key)
{
    size_t i;
    const json_t *m;
    json_array_foreach (mounts, i, m) {
        const char *kind = str(m, "kind");
        if (!kind || strcmp(kind, "csi") != 0 || !entry_complete(m))
            continue;
        char target[4400], why[600];
        stage_csi_target(stages_dir, m, run_key, target, sizeof(target));
        /* Not stat'ed when it is a mount: its server may hang. */
        struct stat st;
        if (!stage_is_mountpoint(target) && lstat(target, &st) < 0)
            continue; /* never published, or already done */
        if (csi_unpublish(m, target, why, sizeof(why)) < 0) {
            sh_log(LOG_WARNING, "stage", "%s", why);
            continue;
        }
        rmdir(target);
    }
}
