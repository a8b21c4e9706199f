/* SPDX-License-Identifier: Apache-2.0 */
/* Node-level mounts shared by jobs' volumes (see stage.h). */
#include "agent/stage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

#include "lib/model/job.h"
#include "lib/util/clock.h"
#include "lib/util/file.h"

#define STAGE_START_MS 20000 /* s3fs may take this long to mount */

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

bool stage_is_mountpoint(const char *dir)
{
    char parent[4200];
    struct stat a, b;
    snprintf(parent, sizeof(parent), "%s/..", dir);
    if (lstat(parent, &b) < 0)
        return false;
    if (lstat(dir, &a) < 0)
        return errno == ENOTCONN; /* a FUSE mount whose daemon died */
    return a.st_dev != b.st_dev;
}

/* Can the mount be listed (which waits for s3fs to have checked the
 * bucket)? */
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

/* What s3fs said last that explains a failure: its last [CRT] or [ERR]
 * line, without the time stamp and source location. */
static void log_reason(const char *dir, char *out, size_t size)
{
    char path[4200], line[1024];
    snprintf(path, sizeof(path), "%s/log", dir);
    snprintf(out, size, "s3fs gave up (see %s)", path);
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
        snprintf(best, sizeof(best), "%s", msg ? msg + 3 : line);
        best_rank = rank;
    }
    fclose(f);
    best[strcspn(best, "\n")] = '\0';
    if (best[0])
        snprintf(out, size, "s3fs: %s", best);
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

/* Start s3fs in the foreground of a process of its own (a session apart
 * from the job's, so stopping the job never stops the mount) and wait
 * until the mount works or s3fs gives up. */
static int start_s3fs(const char *dir, const json_t *m, char *why, size_t wsize)
{
    char mnt[4200], passwd[4200], logp[4200], cache[4200], bucket[600];
    char url[700], region[100], umask[64];
    snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
    snprintf(passwd, sizeof(passwd), "passwd_file=%s/passwd", dir);
    snprintf(logp, sizeof(logp), "%s/log", dir);
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
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, wsize, "cannot start s3fs: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        setsid();
        int in = open("/dev/null", O_RDONLY);
        int out = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
        if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
            dup2(out, 2) < 0)
            _exit(126);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int sig = 1; sig < NSIG; sig++)
            signal(sig, SIG_DFL);
        execvp("s3fs", (char *const *)argv);
        dprintf(2, "[CRT] stage.c:exec(0): cannot run s3fs: %s\n",
                strerror(errno));
        _exit(127);
    }
    int64_t until = clock_mono_ms() + STAGE_START_MS;
    while (clock_mono_ms() < until) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            log_reason(dir, why, wsize);
            if (stage_is_mountpoint(mnt))
                umount2(mnt, MNT_DETACH);
            return -1;
        }
        if (stage_is_mountpoint(mnt) && mount_works(mnt) &&
            waitpid(pid, &status, WNOHANG) == 0)
            return 0;
        sleep_ms(50);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (stage_is_mountpoint(mnt))
        umount2(mnt, MNT_DETACH);
    snprintf(why, wsize, "s3fs did not mount within %d s",
             STAGE_START_MS / 1000);
    return -1;
}

int stage_acquire(const char *stages_dir, const json_t *m, char *source,
                  size_t size, char *why, size_t wsize)
{
    const char *name = str(m, "name");
    const char *stage = str(m, "stage");
    if (!stage || !job_ident_valid(stage) || !str(m, "bucket") ||
        !str(m, "endpoint") || !str(m, "access_key") || !str(m, "secret_key")) {
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
    if (stage_is_mountpoint(mnt) && !mount_works(mnt))
        umount2(mnt, MNT_DETACH); /* its s3fs died: mount it again */
    if (!stage_is_mountpoint(mnt)) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char reason[600];
        rc = dfd < 0 ? -1 : write_passwd(dfd, m, reason, sizeof(reason));
        if (dfd >= 0)
            close(dfd);
        if (rc == 0)
            rc = start_s3fs(dir, m, reason, sizeof(reason));
        if (rc < 0)
            snprintf(why, wsize, "volume %s: bucket %s at %s: %s", name,
                     str(m, "bucket"), str(m, "endpoint"),
                     dfd < 0 ? strerror(errno) : reason);
    }
    if (rc == 0)
        snprintf(source, size, "%s", mnt);
    close(lock); /* releases the flock */
    return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
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
        snprintf(path, sizeof(path), "%s/mnt", dir);
        if (stage_is_mountpoint(path) && umount2(path, MNT_DETACH) < 0) {
            if (lock >= 0)
                close(lock);
            continue;
        }
        static const char *const files[] = {"passwd", "log", "lock"};
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
            snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
            unlink(path);
        }
        snprintf(path, sizeof(path), "%s/mnt", dir);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/cache", dir);
        nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        rmdir(dir);
        if (lock >= 0)
            close(lock);
        released++;
    }
    closedir(d);
    return released;
}
