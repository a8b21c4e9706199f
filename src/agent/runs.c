/* SPDX-License-Identifier: Apache-2.0 */
/* The runs of this node (see runs.h for the lifecycle). */
#include "agent/runs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uthash.h>

#include "agent/cgroup.h"
#include "agent/container.h"
#include "agent/forkserver.h"
#include "agent/launch.h"
#include "agent/link.h"
#include "agent/shim.h"
#include "agent/stage.h"
#include "agent/steps.h"
#include "lib/loop/loop.h"
#include "lib/model/job_container.h"
#include "lib/util/clock.h"
#include "lib/util/file.h"
#include "lib/util/log.h"
#include "lib/util/parse.h"

#define LOG_CHUNK_MAX (256u << 10)
#define LOG_TICK_BUDGET (1u << 20)
#define GC_AFTER_MS (10 * 60 * 1000)
#define REPORT_WAIT_LOGS_MS 5000

enum run_phase {
    RUN_RUNNING = 0,
    RUN_STOPPING,
    RUN_EXITED,
};

static const char *const phase_names[] = {"running", "stopping", "exited"};

struct run {
    char key[48]; /* "<id>.<attempt>" */
    uint64_t id;
    int attempt;
    char dir[PATH_MAX];
    char cg_key[64];
    enum run_phase phase;
    pid_t shim_pid;
    unsigned long long shim_start;
    int pidfd;
    int64_t started_ms;
    int64_t deadline_ms; /* 0: no time limit */
    int64_t exited_ms;
    int64_t kill_at_ms;
    int grace_s;
    char stop_reason[32]; /* why we stopped it; "" when we did not */
    int exit_code;
    int exit_signal;
    char error[256];
    uint64_t cpu_ns; /* from the job cgroup at exit */
    uint64_t mem_peak;
    bool reported;
    int64_t reported_ms;
    uint64_t sent[2]; /* stdout, stderr bytes the controller has */
    bool wanted;
    bool cg_gone; /* its job cgroup is removed: no retry per tick */
    /* Ended, reported, every byte of output sent, and nothing of it can
     * write more: its output files are no longer looked at per tick. */
    bool logs_done;
    /* Reported, its output cannot grow any more (run_may_write was false
     * before its files were looked at) and all of it was sent: whether it
     * is sent needs no stat of its files again. */
    bool output_final;
    /* A run in an image: only its shim writes the progress and digest
     * files, which are not looked for in other runs' folders. */
    bool image;
    /* The work entry (work.json) while the run is live, so that no
     * per-job pass reads every live run's file again; NULL once exited. */
    json_t *work;
    struct runs *runs;
    UT_hash_handle hh;
};

struct runs {
    struct agent *a;
    char dir[PATH_MAX];
    char stages[PATH_MAX]; /* node-level mounts of volumes (stage.h) */
    bool loading;          /* adopting runs: the set of live runs is partial */
    struct run *by_key;
    struct forkserver *forkserver; /* forks the shims; NULL: posix_spawn */
};

static const char *const streams[2] = {"out", "err"};
static const char *const stream_files[2] = {"stdout", "stderr"};

/* ---- small file helpers ----
 *
 * The run folder and everything in it belong to the agent (root); the job's
 * user can neither list nor change it. Still, nothing in it is trusted
 * blindly: files are opened relative to the folder, links are never
 * followed, readers take regular files only and temporary files are made
 * exclusively (lib/util/file.h). */

static int run_dirfd(const char *dir)
{
    return open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* o as the file `name` of the run folder open as dfd. */
static int write_json_at(int dfd, const char *name, const json_t *o)
{
    char *text = json_dumps(o, JSON_COMPACT);
    /* No fsync: the notes are rewritten often and rebuilt from the shim's
     * status after a power loss. 0600: work and launch hold the job's
     * environment, for no other user's eyes. */
    int rc = text && dfd >= 0
                 ? file_write_atomic_at(dfd, name, text, strlen(text), 0600,
                                        false, NULL)
                 : -1;
    free(text);
    return rc;
}

/* run.json is saved two or three times per run. Replacing it (a new file
 * renamed over the old) allocates an inode and frees one each time, and on
 * ext4 without a journal every inode allocation skips those freed in the
 * last minute (find_inode_bit, recently_deleted): the largest kernel cost
 * of the agent's per-job path in bench/job-path.sh. So an existing
 * run.json is overwritten in place, in one pwrite of at most a page, padded
 * with blanks to its old length (trailing blanks are valid JSON): a reader
 * after a crash finds the old text or the new. Only a regular file with a
 * single link, the agent's own and open to nobody else, is written
 * through; anything else (a link or a FIFO planted there, a hard link, a
 * file a user owns or can open, say one an older agent left, a note too
 * long) is replaced as before. */
#define NOTE_IN_PLACE_MAX 4096

/* In the run folder open as dfd. FRESH: the agent made the folder itself
 * for this run a moment ago, so it has no such file yet: it is written as
 * a new file at once, without first trying to open one to write through
 * (the same result: what the in-place write would not take is replaced). */
static int rewrite_json_at(int dfd, const char *name, const json_t *o,
                           bool fresh)
{
    char *text = json_dumps(o, JSON_COMPACT);
    if (!text)
        return -1;
    size_t len = strlen(text);
    int fd =
        dfd >= 0 && !fresh && len <= NOTE_IN_PLACE_MAX
            ? openat(dfd, name,
                     O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
            : -1;
    int rc = -1;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_nlink == 1 && st.st_uid == geteuid() && (st.st_mode & 077) == 0 &&
        st.st_size <= NOTE_IN_PLACE_MAX) {
        char buf[NOTE_IN_PLACE_MAX];
        size_t n = len > (size_t)st.st_size ? len : (size_t)st.st_size;
        memcpy(buf, text, len);
        memset(buf + len, ' ', n - len);
        if (pwrite(fd, buf, n, 0) == (ssize_t)n)
            rc = 0;
    }
    if (fd >= 0)
        close(fd);
    if (rc < 0 && dfd >= 0)
        rc = file_write_atomic_at(dfd, name, text, len, 0600, false, NULL);
    free(text);
    return rc;
}

/* The whole file in one read where it fits (json_loadfd reads one byte
 * per system call: 2,000 calls for a job's work.json). OWN: only a file of
 * the agent's own user (run.json, which the agent writes in place and
 * whose shim pid it signals). */
static json_t *read_json_at(int dfd, const char *dir, const char *name,
                            bool own)
{
    struct stat st;
    int fd = dfd >= 0 ? file_open_regular_stat_at(dfd, name, &st) : -1;
    if (fd < 0)
        return NULL;
    json_t *o = NULL;
    if (own && st.st_uid != geteuid()) {
        sh_log(LOG_WARNING, "runs", "%s/%s is not the agent's: not read", dir,
               name);
        close(fd);
        return NULL;
    }
    size_t cap = st.st_size > 0 && st.st_size < (off_t)(64 << 20)
                     ? (size_t)st.st_size + 1
                     : 4096;
    char *buf = malloc(cap);
    size_t len = 0;
    for (;;) {
        if (!buf)
            break;
        if (len == cap) {
            char *nb = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(buf);
            buf = NULL;
            break;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (buf)
        o = json_loadb(buf, len, 0, NULL);
    free(buf);
    close(fd);
    return o;
}

static json_t *read_json_of(const char *dir, const char *name, bool own)
{
    int dfd = run_dirfd(dir);
    json_t *o = read_json_at(dfd, dir, name, own);
    if (dfd >= 0)
        close(dfd);
    return o;
}

static json_t *read_json(const char *dir, const char *name)
{
    return read_json_of(dir, name, false);
}

/* The run folder is the agent's (runs/ is 0711, root's): a path is as good
 * as a pinned folder for a size, and costs one system call, not three. */
static uint64_t file_size(const char *dir, const char *name)
{
    char path[PATH_MAX + 16];
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
        return 0;
    return file_size_at(AT_FDCWD, path);
}

/* Make sure the run folder is a real folder that belongs to the agent and
 * only it can change (an older agent gave script jobs' folders to their
 * user). 0, or -1 with errno. */
static int run_dir_reclaim_at(int dfd)
{
    struct stat st;
    int rc = fstat(dfd, &st);
    if (rc == 0 && (st.st_uid != geteuid() || (st.st_mode & 022) != 0))
        rc = fchown(dfd, geteuid(), getegid()) == 0 ? fchmod(dfd, 0711) : -1;
    return rc;
}

static int run_dir_reclaim(const char *dir)
{
    int dfd = run_dirfd(dir);
    if (dfd < 0)
        return -1;
    int rc = run_dir_reclaim_at(dfd);
    int e = errno;
    close(dfd);
    errno = e;
    return rc;
}

/* Remove a run folder (files only one level deep). */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char path[PATH_MAX + 300];
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* The start time of a process, to tell a live shim from a new process
 * that reused its PID. 0 when absent. */
static unsigned long long proc_start(pid_t pid)
{
    return forkserver_proc_start(pid);
}

static int pidfd_open_pid(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* ---- persistence of the agent's notes ---- */

/* The notes in the run folder open as dfd (FRESH: see rewrite_json_at). */
static void run_save_at(struct run *r, int dfd, bool fresh)
{
    json_t *o = json_pack(
        "{s:I, s:i, s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:i, s:s, s:i, s:i, "
        "s:s, s:b, s:I, s:I, s:I}",
        "id", (json_int_t)r->id, "attempt", r->attempt, "phase",
        phase_names[r->phase], "shim_pid", (int)r->shim_pid, "shim_start",
        (json_int_t)r->shim_start, "started_ms", (json_int_t)r->started_ms,
        "deadline_ms", (json_int_t)r->deadline_ms, "exited_ms",
        (json_int_t)r->exited_ms, "kill_at_ms", (json_int_t)r->kill_at_ms,
        "grace_s", r->grace_s, "stop_reason", r->stop_reason, "exit_code",
        r->exit_code, "exit_signal", r->exit_signal, "error", r->error,
        "reported", r->reported, "reported_ms", (json_int_t)r->reported_ms,
        "sent_out", (json_int_t)r->sent[0], "sent_err", (json_int_t)r->sent[1]);
    if (o) {
        json_object_set_new(o, "image", json_boolean(r->image));
        json_object_set_new(o, "cpu_ns", json_integer((json_int_t)r->cpu_ns));
        json_object_set_new(o, "mem_peak",
                            json_integer((json_int_t)r->mem_peak));
    }
    if (!o || rewrite_json_at(dfd, "run.json", o, fresh) < 0)
        sh_log(LOG_ERR, "runs", "run %s: cannot save its state in %s", r->key,
               r->dir);
    json_decref(o);
}

static void run_save(struct run *r)
{
    int dfd = run_dirfd(r->dir);
    run_save_at(r, dfd, false);
    if (dfd >= 0)
        close(dfd);
}

static void run_load_notes(struct run *r, const json_t *o)
{
    const char *phase = json_string_value(json_object_get(o, "phase"));
    for (int i = 0; i < 3; i++) {
        if (phase && strcmp(phase, phase_names[i]) == 0)
            r->phase = (enum run_phase)i;
    }
#define GETI(field, key) r->field = json_integer_value(json_object_get(o, key))
    GETI(shim_pid, "shim_pid");
    GETI(shim_start, "shim_start");
    GETI(started_ms, "started_ms");
    GETI(deadline_ms, "deadline_ms");
    GETI(exited_ms, "exited_ms");
    GETI(kill_at_ms, "kill_at_ms");
    GETI(grace_s, "grace_s");
    GETI(exit_code, "exit_code");
    GETI(exit_signal, "exit_signal");
    GETI(reported_ms, "reported_ms");
    GETI(sent[0], "sent_out");
    GETI(sent[1], "sent_err");
    GETI(cpu_ns, "cpu_ns");
    GETI(mem_peak, "mem_peak");
#undef GETI
    r->reported = json_is_true(json_object_get(o, "reported"));
    /* Notes of an older agent do not say: look for the files. */
    const json_t *image = json_object_get(o, "image");
    r->image = !json_is_boolean(image) || json_is_true(image);
    const char *s = json_string_value(json_object_get(o, "stop_reason"));
    snprintf(r->stop_reason, sizeof(r->stop_reason), "%s", s ? s : "");
    s = json_string_value(json_object_get(o, "error"));
    snprintf(r->error, sizeof(r->error), "%s", s ? s : "");
}

/* ---- the table ---- */

static struct run *run_new(struct runs *rs, uint64_t id, int attempt)
{
    struct run *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->id = id;
    r->attempt = attempt;
    r->runs = rs;
    r->pidfd = -1;
    r->exit_code = -1;
    r->grace_s = LAUNCH_DEFAULT_GRACE_S;
    snprintf(r->key, sizeof(r->key), "%llu.%d", (unsigned long long)id,
             attempt);
    snprintf(r->dir, sizeof(r->dir), "%s/%s", rs->dir, r->key);
    launch_cgroup_key(id, attempt, r->cg_key, sizeof(r->cg_key));
    HASH_ADD_STR(rs->by_key, key, r);
    return r;
}

static void run_free(struct runs *rs, struct run *r)
{
    json_decref(r->work);
    if (r->pidfd >= 0) {
        loop_del_fd(rs->a->loop, r->pidfd);
        close(r->pidfd);
    }
    HASH_DEL(rs->by_key, r);
    free(r);
}

/* ---- signals ---- */

/* Processes whose session is `sid`, the shim's (tasks stay in it unless
 * they call setsid, which the job cgroup still catches). */
static void kill_session(pid_t sid, int sig)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 1)
            continue;
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        /* ") state ppid pgrp session" */
        char *p = strrchr(buf, ')');
        int ppid, pgrp, session;
        char state;
        if (p &&
            sscanf(p + 1, " %c %d %d %d", &state, &ppid, &pgrp, &session) ==
                4 &&
            session == sid)
            kill((pid_t)pid, sig);
    }
    if (d)
        closedir(d);
}

/* Signal the run's tasks. Their process group is known only to the shim,
 * which made it when it forked them: the agent asks the shim (SIGUSR1:
 * forward SIGTERM, SIGUSR2: forward SIGKILL) through a pidfd, so a reused
 * PID is never hit. Nothing written in the run folder is read for this.
 * When the shim is gone, what is left of its session is signalled; the
 * job cgroup catches the rest (a task that made a session of its own). */
static void run_signal(struct run *r, int sig)
{
    struct agent *a = r->runs->a;
    int forward = sig == SIGKILL ? SHIM_SIG_KILL : SHIM_SIG_TERM;
    bool asked = false;
    if (r->pidfd >= 0 &&
        syscall(SYS_pidfd_send_signal, r->pidfd, forward, NULL, 0) == 0)
        asked = true;
    if (!asked && r->shim_pid > 1) {
        unsigned long long start = proc_start(r->shim_pid);
        /* Gone: its session may live on. A live process with that PID that
         * is not our shim means the PID was reused, which the kernel does
         * not do while a session of that id remains: nothing to signal. */
        if (start == 0)
            kill_session(r->shim_pid, sig);
        else if (start == r->shim_start)
            kill(r->shim_pid, forward);
    }
    /* The cgroup reaches what left the process group. A SIGTERM the shim
     * passed on is not sent twice: a job's SIGTERM handler that is
     * checkpointing must not be interrupted by a second one (processes
     * outside the group get the SIGKILL at the deadline). */
    if (a->cg && (sig == SIGKILL || !asked))
        cgroup_job_kill(a->cg, r->cg_key, sig, NULL);
}

/* Tell the job when its SIGKILL comes (SHOAL_PREEMPT_DEADLINE, launch.h):
 * the file appears whole (renamed into place) and is the agent's, 0644, in
 * the agent's folder: the job reads it and cannot change it. */
static void write_deadline(const struct run *r)
{
    char text[32];
    struct sh_error err;
    int len = launch_deadline_text(r->kill_at_ms, text, sizeof(text));
    int dfd = run_dirfd(r->dir);
    if (len < 0 || dfd < 0)
        sh_log(LOG_WARNING, "runs", "run %s: cannot write its deadline: %s: %s",
               r->key, r->dir, len < 0 ? "bad time" : strerror(errno));
    else if (file_write_atomic_at(dfd, LAUNCH_DEADLINE_FILE, text, (size_t)len,
                                  0644, false, &err) < 0)
        sh_log(LOG_WARNING, "runs", "run %s: cannot write its deadline: %s",
               r->key, err.msg);
    if (dfd >= 0)
        close(dfd);
}

/* SIGTERM now, SIGKILL at the deadline (runs_tick), which the job can read
 * in its deadline file before the SIGTERM reaches it. */
static void run_stop(struct run *r, const char *reason, int grace_s)
{
    if (r->phase != RUN_RUNNING)
        return;
    r->phase = RUN_STOPPING;
    snprintf(r->stop_reason, sizeof(r->stop_reason), "%s", reason);
    r->kill_at_ms = launch_kill_at_ms(clock_wall_ms(), grace_s);
    write_deadline(r);
    sh_log(LOG_INFO, "runs", "stopping run %s: %s (SIGKILL in %ds, at %lld)",
           r->key, reason, grace_s, (long long)(r->kill_at_ms / 1000));
    run_signal(r, SIGTERM);
    run_save(r);
}

/* ---- exit ---- */

/* Unmount the stages no run that is not over uses any more. The count is
 * never stored: it is read from the live runs' work entries. */
static void release_stages(struct runs *rs)
{
    if (rs->loading)
        return;
    json_t *in_use = json_array();
    struct run *r, *tmp;
    HASH_ITER (hh, rs->by_key, r, tmp) {
        if (r->phase == RUN_EXITED)
            continue;
        size_t i;
        json_t *m;
        json_array_foreach (json_object_get(r->work, "mounts"), i, m) {
            json_t *stage = json_object_get(m, "stage");
            if (json_is_string(stage))
                json_array_append(in_use, stage);
        }
    }
    int n = stage_release_unused(rs->stages, in_use);
    if (n > 0)
        sh_log(LOG_INFO, "runs", "released %d volume mount(s) no run uses", n);
    json_decref(in_use);
}

/* The kernel killed a process of the run for its memory limit: that is
 * the run's error (the job's reason), unless it has one already. */
static void run_note_oom(struct run *r)
{
    struct agent *a = r->runs->a;
    struct cgroup_stats st;
    if (!a->cg || r->error[0] ||
        cgroup_job_stats(a->cg, r->cg_key, &st, NULL) < 0 || !st.oom_killed)
        return;
    json_t *work = r->work;
    if (!work) {
        int dfd = run_dirfd(r->dir);
        work = read_json_at(dfd, r->dir, "work.json", false);
        if (dfd >= 0)
            close(dfd);
    } else {
        json_incref(work);
    }
    uint64_t mem = (uint64_t)json_integer_value(
        json_object_get(json_object_get(work, "spec"), "mem"));
    json_decref(work);
    char lim[32];
    format_size(mem, lim, sizeof(lim));
    snprintf(r->error, sizeof(r->error), "out of memory: limit %s",
             mem ? lim : "none");
}

static void run_exited(struct run *r)
{
    struct agent *a = r->runs->a;
    if (r->pidfd >= 0) {
        loop_del_fd(a->loop, r->pidfd);
        close(r->pidfd);
        r->pidfd = -1;
    }
    if (r->shim_pid > 0)
        waitpid(r->shim_pid, NULL, WNOHANG); /* reap when it is our child */
    /* The run folder, opened once for the status, the notes and (for a
     * run adopted as gone) the work entry. */
    int dfd = run_dirfd(r->dir);
    json_t *st = read_json_at(dfd, r->dir, "status.json", false);
    if (st) {
        r->exit_code =
            (int)json_integer_value(json_object_get(st, "exit_code"));
        r->exit_signal = (int)json_integer_value(json_object_get(st, "signal"));
        const char *e = json_string_value(json_object_get(st, "error"));
        snprintf(r->error, sizeof(r->error), "%s", e ? e : "");
        json_decref(st);
    } else {
        /* The shim died without a verdict (killed with SIGKILL?): whatever
         * it started is orphaned; end it. */
        r->exit_code = -1;
        r->exit_signal = 0;
        if (!r->stop_reason[0])
            snprintf(r->stop_reason, sizeof(r->stop_reason), "lost");
        snprintf(r->error, sizeof(r->error),
                 "the run's supervisor ended without a status");
        run_signal(r, SIGKILL);
    }
    r->phase = RUN_EXITED;
    r->exited_ms = clock_wall_ms();
    uint64_t cpu_ns, mem_peak;
    if (a->cg &&
        cgroup_job_usage(a->cg, r->cg_key, &cpu_ns, &mem_peak, NULL) == 0) {
        r->cpu_ns = cpu_ns;
        r->mem_peak = mem_peak;
    }
    run_note_oom(r);
    if (a->cg && cgroup_job_destroy(a->cg, r->cg_key, NULL) < 0)
        run_signal(r, SIGKILL); /* stragglers; tick retries the removal */
    else
        r->cg_gone = true;
    sh_log(LOG_INFO, "runs", "run %s exited code=%d signal=%d%s%s", r->key,
           r->exit_code, r->exit_signal, r->stop_reason[0] ? " reason=" : "",
           r->stop_reason);
    run_save_at(r, dfd, false);
    /* A run adopted as already gone has no work in memory yet. */
    json_t *work =
        r->work ? r->work : read_json_at(dfd, r->dir, "work.json", false);
    r->work = NULL;
    if (dfd >= 0)
        close(dfd);
    const json_t *mounts = json_object_get(work, "mounts");
    stage_csi_unpublish_run(r->runs->stages, mounts, r->key);
    /* Only a run that had volumes can leave a stage unused. */
    if (json_array_size(mounts) > 0)
        release_stages(r->runs);
    json_decref(work);
    link_heartbeat_soon(a->link);
}

static void on_pidfd(struct loop *loop, int fd, uint32_t events, void *arg)
{
    struct run *r = arg;
    (void)loop;
    (void)fd;
    (void)events;
    run_exited(r);
}

static void watch(struct run *r)
{
    struct agent *a = r->runs->a;
    if (r->pidfd < 0) /* the fork server passed one */
        r->pidfd = pidfd_open_pid(r->shim_pid);
    if (r->pidfd < 0 ||
        loop_add_fd(a->loop, r->pidfd, EPOLLIN, on_pidfd, r, NULL) < 0) {
        if (r->pidfd >= 0)
            close(r->pidfd);
        r->pidfd = -1;
        run_exited(r); /* already gone */
    }
}

/* ---- start ---- */

/* The run folder, open as *DFD (to be closed by the caller; *MADE: made
 * here, new), work.json, the job cgroup and *LAUNCH, the launch
 * description (a new reference) for spawn_shim. */
static int prepare(struct run *r, const json_t *work, json_t **launch_out,
                   int *dfd, bool *made, struct sh_error *err)
{
    struct agent *a = r->runs->a;
    *made = mkdir(r->dir, 0711) == 0;
    if (!*made && errno != EEXIST)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot create %s: %s", r->dir,
                         strerror(errno));
    *dfd = run_dirfd(r->dir);
    if (*dfd < 0 || run_dir_reclaim_at(*dfd) < 0)
        return sh_errorf(err, SH_EUNAVAILABLE,
                         "%s is not a folder of the agent's own: %s", r->dir,
                         strerror(errno));
    /* Without the registry's credentials: only the shim's pull needs
     * them, from its launch description (spawn_shim). */
    json_t *kept = json_copy((json_t *)work);
    if (kept)
        json_object_del(kept, "registry_auth");
    int wrc = kept ? write_json_at(*dfd, "work.json", kept) : -1;
    json_decref(kept);
    if (wrc < 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot write %s/work.json",
                         r->dir);
    const json_t *spec = json_object_get(work, "spec");
    bool cg = false;
    if (a->cg) {
        /* A job without a CPU count may use the CPUs the node offers
         * jobs, not those kept for the system (--reserve-cpus). */
        json_int_t cpus = json_integer_value(json_object_get(spec, "cpus"));
        if (cpus <= 0 && a->cpus <= 10000) /* the cgroup's largest quota */
            cpus = a->cpus;
        struct cgroup_limits lim = {
            .cpu_millis = cpus > 0 ? cpus * 1000 : 0,
            .mem_bytes =
                (uint64_t)json_integer_value(json_object_get(spec, "mem")),
            .pids_max = a->cfg.max_pids,
        };
        struct sh_error cerr;
        if (cgroup_job_create(a->cg, r->cg_key, &lim, &cerr) == 0)
            cg = true;
        else
            sh_log(LOG_WARNING, "runs", "run %s without cgroup limits: %s",
                   r->key, cerr.msg);
        /* Only its own GPUs' device nodes: where the fence cannot be set
         * the agent warned once at start-up. */
        struct cgroup_device deny[GPU_PER_NODE_MAX];
        int ndeny = gpu_devices_denied(&a->gpu_devs, a->gpus, a->ngpus,
                                       json_object_get(work, "gpus"), deny,
                                       GPU_PER_NODE_MAX);
        if (cg && cgroup_has_devices(a->cg) &&
            cgroup_job_deny_devices(a->cg, r->cg_key, deny, ndeny, &cerr) < 0)
            return sh_errorf(err, SH_EUNAVAILABLE,
                             "cannot fence the GPUs of run %s: %s", r->key,
                             cerr.msg);
    }
    struct launch_ctx ctx = {
        .node = a->cfg.name,
        .run_dir = r->dir,
        .stages_dir = r->runs->stages,
        .as_root = geteuid() == 0,
        .cg_parent = cg ? a->cg_parent : NULL,
        .gpus = a->gpus,
        .ngpus = a->ngpus,
        .mps = a->mps,
        .min_uid = a->cfg.min_job_uid,
        .allow_users = a->cfg.allow_job_users,
        .nallow_users = a->cfg.nallow_job_users,
        .step_socket = a->steps ? steps_socket_path(a->steps) : NULL,
        .step_bin_dir = a->steps ? steps_bin_dir(a->steps) : NULL,
        .step_program = a->steps ? steps_program(a->steps) : NULL,
    };
    json_t *cdevs = NULL;
    if (json_string_value(json_object_get(spec, "image"))) {
        ctx.image_cache_dir = a->image_cache;
        ctx.image_cache_size = a->cfg.image_cache_size;
        ctx.image_max_size = a->cfg.image_max_size;
        ctx.image_max_files = a->cfg.image_max_files;
        ctx.image_tls_verify = !a->cfg.image_tls_insecure;
        cdevs = gpu_devices_container(&a->gpu_devs, a->gpus, a->ngpus,
                                      json_object_get(work, "gpus"));
        if (cdevs && json_array_size(json_object_get(work, "gpus")) > 0)
            container_control_devices(cdevs);
        ctx.container_devices = cdevs;
        ctx.container_libs = a->container_libs;
    }
    json_t *launch = launch_from_work(work, &ctx, err);
    json_decref(cdevs);
    if (!launch)
        return -1;
    /* The job cgroup's cgroup.procs files, so the shim opens them without
     * scanning the mounts and walking the parents again. */
    json_t *procs = cg ? json_array() : NULL;
    for (int h = 0; procs && h < cgroup_nhier(a->cg); h++) {
        char path[PATH_MAX];
        if (cgroup_job_procs_path(a->cg, h, r->cg_key, path, sizeof(path)) <
            0) {
            json_decref(procs);
            procs = NULL;
            break;
        }
        json_array_append_new(procs, json_string(path));
    }
    if (procs)
        json_object_set_new(launch, "cgroup_procs", procs);
    *launch_out = launch;
    return 0;
}

/* RUN/launch.json, for a shim that does not get its description in the
 * fork server's request. */
static int write_launch(const struct run *r, const char *text, size_t len,
                        struct sh_error *err)
{
    int dfd = run_dirfd(r->dir);
    int rc = dfd >= 0 ? file_write_atomic_at(dfd, "launch.json", text, len,
                                             0600, false, NULL)
                      : -1;
    if (dfd >= 0)
        close(dfd);
    if (rc < 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot write %s/launch.json",
                         r->dir);
    return 0;
}

/* Remove RUN/launch.json once no shim will read it: it may hold the
 * registry's credentials and the job's environment, which must not wait
 * on disk for the run folder's collection. */
static void unlink_launch(const struct run *r)
{
    int dfd = run_dirfd(r->dir);
    if (dfd < 0 || (unlinkat(dfd, "launch.json", 0) < 0 && errno != ENOENT))
        sh_log(LOG_WARNING, "runs", "run %s: cannot remove %s/launch.json: %s",
               r->key, r->dir, strerror(errno));
    if (dfd >= 0)
        close(dfd);
}

/* The shim through the fork server, the launch description in the
 * request when IN_REQUEST (no launch.json: one file less per job, and the
 * registry's credentials never on disk), else the run folder alone (the
 * shim reads launch.json). 1 when the server was gone before it got the
 * request (UNSENT; the server is dropped), 2 when this request could not
 * be sent (NOT_SENT; the server is kept): the caller starts the shim by
 * other means. */
static int spawn_via_server(struct run *r, const char *text, size_t len,
                            bool in_request, struct sh_error *err)
{
    struct runs *rs = r->runs;
    pid_t pid;
    int pidfd;
    unsigned long long start;
    int rc = forkserver_spawn_launch(
        rs->forkserver, r->dir, in_request ? text : NULL, in_request ? len : 0,
        &pid, &pidfd, &start, err);
    if (rc == FORKSERVER_OK) {
        r->shim_pid = pid;
        r->shim_start = start;
        r->pidfd = pidfd;
        return 0;
    }
    if (rc == FORKSERVER_REFUSED)
        return -1; /* the server said why; it serves the next run */
    if (rc == FORKSERVER_NOT_SENT) {
        /* Over the send buffer (net.core.wmem_max) or short of kernel
         * memory: this request's trouble; the server serves the next. */
        sh_log(LOG_WARNING, "runs", "run %s: %s; its launch goes to a file",
               r->key, err->msg);
        return 2;
    }
    /* Gone or broken: shims are exec'd from here on. A request it received
     * may have forked a shim for this run, so this run fails rather than
     * getting a second one; only one that never reached the server is
     * started here. */
    sh_log(LOG_WARNING, "runs", "%s; starting shims without it", err->msg);
    forkserver_stop(rs->forkserver);
    rs->forkserver = NULL;
    return rc == FORKSERVER_UNSENT ? 1 : -1;
}

static int exec_shim(struct run *r, struct sh_error *err);

/* Start the shim of r with LAUNCH (borrowed): through the fork server with
 * the description in its request when it fits (FORKSERVER_LAUNCH_MAX);
 * else the description goes to launch.json first (no server, too long,
 * the request not sent, or the server gone before the request), and the
 * shim is started through the server when it is still there, else
 * exec'd. When no shim was started, launch.json is removed. The agent's
 * text of it is wiped once sent; the json_t it came from is freed unwiped
 * by the caller, as the work entry it was built from is (launch.h). */
static int spawn_shim(struct run *r, const json_t *launch, struct sh_error *err)
{
    struct runs *rs = r->runs;
    char *text = json_dumps(launch, JSON_COMPACT);
    if (!text)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    size_t len = strlen(text);
    bool in_request = rs->forkserver && len <= FORKSERVER_LAUNCH_MAX;
    int rc = in_request ? 0 : write_launch(r, text, len, err);
    bool on_disk = !in_request && rc == 0;
    /* 1: the shim still to be started by exec (also with no server). */
    rc = rc == 0 ? 1 : rc;
    if (rc == 1 && rs->forkserver) {
        rc = spawn_via_server(r, text, len, in_request, err);
        if (rc > 0 && !on_disk) {
            rc = write_launch(r, text, len, err);
            on_disk = rc == 0;
            /* Still there after NOT_SENT: the run folder alone. */
            if (rc == 0)
                rc = rs->forkserver ? spawn_via_server(r, text, len, false, err)
                                    : 1;
        }
    }
    /* 0: started through the server; below 0: failed for good. */
    if (rc > 0)
        rc = exec_shim(r, err);
    if (rc < 0 && on_disk)
        unlink_launch(r);
    explicit_bzero(text, len);
    free(text);
    return rc;
}

/* posix_spawn of `shoal-agent --shim RUN_DIR`, which reads launch.json (a
 * vfork, so the agent's memory is not copied for each job: fork copied its
 * page tables and the child then threw them away at exec), with what the
 * fork's child did before execv: a session of its own (no terminal signal
 * of the agent reaches it and it outlives the agent), stdin and stdout on
 * /dev/null, stderr appended to the run's shim.log, no signal blocked. */
static int exec_shim(struct run *r, struct sh_error *err)
{
    struct agent *a = r->runs->a;
    char log[PATH_MAX + 16];
    snprintf(log, sizeof(log), "%s/shim.log", r->dir);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none;
    sigemptyset(&none);
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc != 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "posix_spawn: %s", strerror(rc));
    if ((rc = posix_spawnattr_init(&attr)) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return sh_errorf(err, SH_EUNAVAILABLE, "posix_spawn: %s", strerror(rc));
    }
    if (rc == 0)
        rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, 0, 1);
    if (rc == 0)
        rc = posix_spawn_file_actions_addopen(
            &fa, 2, log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
    if (rc == 0)
        rc = posix_spawnattr_setsigmask(&attr, &none);
    if (rc == 0)
        rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID |
                                                 POSIX_SPAWN_SETSIGMASK);
    pid_t pid = -1;
    char *argv[] = {a->cfg.self_exe, "--shim", r->dir, NULL};
    if (rc == 0)
        rc = posix_spawn(&pid, a->cfg.self_exe, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot start the shim: %s",
                         strerror(rc));
    r->shim_pid = pid;
    r->shim_start = proc_start(pid);
    return 0;
}

static void run_start(struct runs *rs, const json_t *work)
{
    uint64_t id = (uint64_t)json_integer_value(json_object_get(work, "id"));
    int attempt = (int)json_integer_value(json_object_get(work, "attempt"));
    struct run *r = run_new(rs, id, attempt);
    struct sh_error err;
    if (!r)
        return;
    r->wanted = true;
    r->started_ms = clock_wall_ms();
    r->grace_s = launch_grace_s(work);
    const json_t *spec = json_object_get(work, "spec");
    json_int_t limit = json_integer_value(json_object_get(spec, "time_limit"));
    r->deadline_ms = limit > 0 ? r->started_ms + limit * 1000 : 0;
    r->image = json_string_value(json_object_get(spec, "image")) != NULL;
    r->work = json_deep_copy(work);
    if (r->work)
        json_object_del(r->work, "registry_auth");
    json_t *launch = NULL;
    int dfd = -1;
    bool made = false;
    int rc = prepare(r, work, &launch, &dfd, &made, &err);
    if (rc == 0)
        rc = spawn_shim(r, launch, &err);
    json_decref(launch);
    if (rc < 0) {
        if (dfd >= 0)
            close(dfd);
        sh_log(LOG_ERR, "runs", "run %s cannot start: %s", r->key, err.msg);
        json_decref(r->work);
        r->work = NULL;
        r->phase = RUN_EXITED;
        r->exit_code = 127;
        r->exited_ms = clock_wall_ms();
        snprintf(r->error, sizeof(r->error), "%s", err.msg);
        mkdir(r->dir, 0711);
        run_save(r);
        link_heartbeat_soon(rs->a->link);
        return;
    }
    sh_log(LOG_INFO, "runs", "started run %s shim=%d", r->key,
           (int)r->shim_pid);
    /* The first notes: in a folder made for this run, a new file. */
    run_save_at(r, dfd, made);
    close(dfd);
    watch(r);
}

/* ---- reconcile ---- */

/* A stop for a run this node never had (it was cancelled before the work
 * arrived): record it as ended so the controller hears of it. */
static void run_never_started(struct runs *rs, const json_t *work)
{
    uint64_t id = (uint64_t)json_integer_value(json_object_get(work, "id"));
    int attempt = (int)json_integer_value(json_object_get(work, "attempt"));
    struct run *r = run_new(rs, id, attempt);
    if (!r)
        return;
    const char *why = json_string_value(json_object_get(work, "stop_reason"));
    r->wanted = true;
    r->phase = RUN_EXITED;
    r->exited_ms = clock_wall_ms();
    snprintf(r->stop_reason, sizeof(r->stop_reason), "%s", why ? why : "");
    if (mkdir(r->dir, 0711) == 0 || errno == EEXIST)
        run_save(r);
    link_heartbeat_soon(rs->a->link);
}

/* shoal update changed a running job's time limit: the new deadline
 * counts from the run's start, as the first one did. */
static void run_limit_changed(struct run *r, const json_t *work)
{
    json_int_t limit = json_integer_value(
        json_object_get(json_object_get(work, "spec"), "time_limit"));
    int64_t deadline = limit > 0 ? r->started_ms + limit * 1000 : 0;
    if (deadline == r->deadline_ms)
        return;
    sh_log(LOG_INFO, "runs", "run %s: time limit now %llds", r->key,
           (long long)limit);
    r->deadline_ms = deadline;
    run_save(r);
}

void runs_reconcile(struct runs *rs, const json_t *work)
{
    if (rs->a->steps)
        steps_work(rs->a->steps, work);
    struct run *r, *tmp;
    HASH_ITER (hh, rs->by_key, r, tmp)
        r->wanted = false;
    size_t i;
    json_t *e;
    json_array_foreach (json_object_get(work, "jobs"), i, e) {
        char key[48];
        snprintf(
            key, sizeof(key), "%llu.%d",
            (unsigned long long)json_integer_value(json_object_get(e, "id")),
            (int)json_integer_value(json_object_get(e, "attempt")));
        const char *action = json_string_value(json_object_get(e, "action"));
        HASH_FIND_STR(rs->by_key, key, r);
        if (!r) {
            if (action && strcmp(action, "run") == 0 && !rs->a->stopping)
                run_start(rs, e);
            else
                run_never_started(rs, e);
            continue;
        }
        r->wanted = true;
        if (action && strcmp(action, "run") == 0 && r->phase == RUN_RUNNING)
            run_limit_changed(r, e);
        if (action && strcmp(action, "stop") == 0) {
            const char *why =
                json_string_value(json_object_get(e, "stop_reason"));
            /* The controller's grace now (--kill-grace; 0 is a kill). */
            int grace =
                json_object_get(e, "grace_s") ? launch_grace_s(e) : r->grace_s;
            run_stop(r, why ? why : "stopped", grace);
        }
    }
    HASH_ITER (hh, rs->by_key, r, tmp) {
        if (!r->wanted && r->phase == RUN_RUNNING)
            run_stop(r, "not wanted by the controller", r->grace_s);
    }
}

/* ---- reports ---- */

static bool logs_sent(const struct run *r)
{
    if (r->output_final)
        return true;
    for (int s = 0; s < 2; s++) {
        if (file_size(r->dir, stream_files[s]) > r->sent[s])
            return false;
    }
    return true;
}

bool runs_have_events(const struct runs *rs)
{
    for (struct run *r = rs->by_key; r; r = r->hh.next) {
        if (r->phase == RUN_EXITED && !r->reported)
            return true;
    }
    return false;
}

static void run_digest(const struct run *r, char *buf, size_t size);

json_t *runs_events_json(struct runs *rs, int *count)
{
    json_t *arr = json_array();
    int64_t now = clock_wall_ms();
    *count = 0;
    for (struct run *r = rs->by_key; r; r = r->hh.next) {
        if (r->phase != RUN_EXITED || r->reported)
            continue;
        /* Output first, so `shoal logs` of an ended job is complete; but
         * not for ever when the controller will not take it. */
        if (!logs_sent(r) && now - r->exited_ms < REPORT_WAIT_LOGS_MS)
            continue;
        json_t *ev =
            json_pack("{s:I, s:i, s:s, s:i, s:i}", "id", (json_int_t)r->id,
                      "attempt", r->attempt, "event", "exited", "exit_code",
                      r->exit_code, "signal", r->exit_signal);
        if (ev && r->stop_reason[0])
            json_object_set_new(ev, "reason", json_string(r->stop_reason));
        if (ev && r->error[0])
            json_object_set_new(ev, "error", json_string(r->error));
        if (ev && r->cpu_ns)
            json_object_set_new(ev, "cpu_ns",
                                json_integer((json_int_t)r->cpu_ns));
        if (ev && r->mem_peak)
            json_object_set_new(ev, "mem_peak",
                                json_integer((json_int_t)r->mem_peak));
        /* A run that ended before a heartbeat told its digest tells it
         * now: the job's other nodes wait for it. */
        char digest[JOB_IMAGE_DIGEST_LEN + 2] = "";
        if (r->image)
            run_digest(r, digest, sizeof(digest));
        if (ev && digest[0])
            json_object_set_new(ev, "digest", json_string(digest));
        json_array_append_new(arr, ev);
        (*count)++;
    }
    return arr;
}

void runs_events_acked(struct runs *rs, const json_t *events)
{
    size_t i;
    json_t *e;
    json_array_foreach (events, i, e) {
        char key[48];
        struct run *r;
        snprintf(
            key, sizeof(key), "%llu.%d",
            (unsigned long long)json_integer_value(json_object_get(e, "id")),
            (int)json_integer_value(json_object_get(e, "attempt")));
        HASH_FIND_STR(rs->by_key, key, r);
        if (r && r->phase == RUN_EXITED) {
            r->reported = true;
            r->reported_ms = clock_wall_ms();
            run_save(r);
        }
    }
}

/* A small file of the run's folder, a regular file only, never a link
 * (up to size - 1 bytes); "" when there is none. */
static void run_small_file(const struct run *r, const char *name, char *buf,
                           size_t size)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", r->dir, name);
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return;
    struct stat st;
    ssize_t n = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        n = read(fd, buf, size - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
}

/* What the shim is doing before the job starts ("pulling image (1.2 GB /
 * 3.4 GB)", shim_ctr.c), from the run's progress file; "" when none. */
static void run_progress(const struct run *r, char *buf, size_t size)
{
    run_small_file(r, "progress", buf, size);
    for (char *p = buf; *p; p++) {
        if ((unsigned char)*p < 0x20)
            *p = ' ';
    }
}

/* The digest the run's shim resolved its image to (RUN/digest, written
 * by the shim as root; checked all the same), or "". */
static void run_digest(const struct run *r, char *buf, size_t size)
{
    run_small_file(r, "digest", buf, size);
    buf[strcspn(buf, "\n")] = '\0';
    if (!job_image_digest_valid(buf))
        buf[0] = '\0';
}

/* pid's parent, from /proc/<pid>/stat (the field after the command, which
 * may hold spaces and parentheses). 0 when it cannot be read. */
static pid_t parent_of(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    char state;
    int ppid;
    if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
        return 0;
    return (pid_t)ppid;
}

const json_t *runs_work_of_pid(struct runs *rs, pid_t pid)
{
    for (int depth = 0; pid > 1 && depth < 64; depth++) {
        struct run *r, *tmp;
        HASH_ITER (hh, rs->by_key, r, tmp) {
            if (r->phase != RUN_EXITED && r->work && r->shim_pid == pid &&
                proc_start(pid) == r->shim_start)
                return r->work;
        }
        pid = parent_of(pid);
    }
    return NULL;
}

json_t *runs_alive_json(struct runs *rs)
{
    json_t *arr = json_array();
    for (struct run *r = rs->by_key; r; r = r->hh.next) {
        if (r->phase == RUN_EXITED)
            continue;
        json_t *o = json_pack("{s:I, s:i}", "id", (json_int_t)r->id, "attempt",
                              r->attempt);
        if (!r->image) {
            json_array_append_new(arr, o);
            continue;
        }
        char note[128];
        run_progress(r, note, sizeof(note));
        if (o && note[0])
            json_object_set_new(o, "note", json_string(note));
        char digest[JOB_IMAGE_DIGEST_LEN + 2];
        run_digest(r, digest, sizeof(digest));
        if (o && digest[0])
            json_object_set_new(o, "digest", json_string(digest));
        json_array_append_new(arr, o);
    }
    return arr;
}

bool runs_gpu_in_use(const struct runs *rs, const struct gpu_info *g)
{
    for (struct run *r = rs->by_key; r; r = r->hh.next) {
        if (r->phase == RUN_EXITED)
            continue;
        size_t i;
        json_t *u;
        bool uses = false;
        json_array_foreach (json_object_get(r->work, "gpus"), i, u) {
            const char *uuid = json_string_value(u);
            uses |= uuid && strcmp(uuid, g->uuid) == 0;
            for (int s = 0; uuid && s < g->nslices; s++)
                uses |= strcmp(uuid, g->slices[s].uuid) == 0;
        }
        if (uses)
            return true;
    }
    return false;
}

int runs_alive_count(const struct runs *rs)
{
    int n = 0;
    for (struct run *r = rs->by_key; r; r = r->hh.next)
        n += r->phase != RUN_EXITED;
    return n;
}

/* ---- periodic work ---- */

/* Push new output of r; returns the bytes sent, -1 when the controller
 * cannot take it now. */
static bool run_may_write(const struct run *r);

static long push_output(struct run *r, size_t budget)
{
    struct agent *a = r->runs->a;
    long total = 0;
    char *buf = NULL;
    if (r->output_final)
        return 0;
    /* Asked before the sizes are: a write after them would be missed.
     * Only once the run is reported, as before: without a job cgroup (none
     * on this node, or the shim could not attach) nothing proves that no
     * process of the run writes on after the shim ended, and what is
     * collected until the report is acknowledged is the run's output. */
    bool settled = r->reported && !run_may_write(r);
    int nothing_left = 0;
    for (int s = 0; s < 2 && budget > 0; s++) {
        uint64_t size = file_size(r->dir, stream_files[s]);
        if (size <= r->sent[s]) {
            nothing_left++;
            continue;
        }
        size_t want = size - r->sent[s];
        if (want > LOG_CHUNK_MAX)
            want = LOG_CHUNK_MAX;
        if (want > budget)
            want = budget;
        int dfd = run_dirfd(r->dir);
        int fd = dfd >= 0 ? file_open_regular_at(dfd, stream_files[s]) : -1;
        if (dfd >= 0)
            close(dfd);
        if (!buf)
            buf = malloc(LOG_CHUNK_MAX);
        ssize_t n =
            (fd >= 0 && buf) ? pread(fd, buf, want, (off_t)r->sent[s]) : -1;
        if (fd >= 0)
            close(fd);
        if (n <= 0)
            continue;
        uint64_t stored;
        struct sh_error err;
        int rc = link_push_log(a->link, r->id, r->attempt, streams[s],
                               r->sent[s], buf, (size_t)n, &stored, &err);
        if (rc < 0) {
            free(buf);
            return -1;
        }
        if (rc == 1) {
            /* The controller has less: resend from there next time. */
            r->sent[s] = stored < r->sent[s] ? stored : r->sent[s];
            run_save(r);
            continue;
        }
        /* The controller says how much it has: resume from there. */
        r->sent[s] = stored > r->sent[s] ? stored : r->sent[s] + (uint64_t)n;
        total += n;
        budget -= (size_t)n;
    }
    free(buf);
    if (total > 0)
        run_save(r);
    r->output_final = settled && nothing_left == 2;
    return total;
}

/* Whether a process of the run may still write its output: until the
 * shim ended, and then while its job cgroup (which holds whatever the
 * tasks left behind) is not removed. Without cgroups, what outlived the
 * shim is not tracked: output written after the run was reported and its
 * output sent is not looked for. */
static bool run_may_write(const struct run *r)
{
    return r->phase != RUN_EXITED || (r->runs->a->cg && !r->cg_gone);
}

void runs_tick(struct runs *rs)
{
    int64_t now = clock_wall_ms();
    size_t budget = LOG_TICK_BUDGET;
    bool link_ok = true;
    struct run *r, *tmp;
    HASH_ITER (hh, rs->by_key, r, tmp) {
        if (r->phase == RUN_RUNNING && r->deadline_ms && now >= r->deadline_ms)
            run_stop(r, "timeout", r->grace_s);
        if (r->phase == RUN_STOPPING && now >= r->kill_at_ms)
            run_signal(r, SIGKILL);
        if (r->phase == RUN_EXITED && rs->a->cg && !r->cg_gone &&
            cgroup_job_destroy(rs->a->cg, r->cg_key, NULL) == 0)
            r->cg_gone = true;
        if (link_ok && budget > 0 && !r->logs_done) {
            if (r->reported && logs_sent(r)) {
                r->logs_done = !run_may_write(r);
            } else {
                long n = push_output(r, budget);
                if (n < 0)
                    link_ok = false;
                else
                    budget -= (size_t)n < budget ? (size_t)n : budget;
            }
        }
        if (r->phase == RUN_EXITED && r->reported && !r->wanted &&
            now - r->reported_ms > GC_AFTER_MS) {
            remove_dir(r->dir);
            run_free(rs, r);
        }
    }
    if (runs_have_events(rs))
        link_heartbeat_soon(rs->a->link);
}

void runs_stop_all(struct runs *rs, int grace_ms)
{
    struct run *r;
    for (r = rs->by_key; r; r = r->hh.next)
        run_stop(r, "the agent stopped", grace_ms / 1000);
    /* At or after every deadline just written (the clock moves on), so no
     * run is killed before the second its file names; a run that was
     * stopping already, with a longer grace, is cut to it. */
    int64_t deadline = launch_kill_at_ms(clock_wall_ms(), grace_ms / 1000);
    while (runs_alive_count(rs) > 0) {
        for (r = rs->by_key; r; r = r->hh.next) {
            if (r->phase == RUN_EXITED)
                continue;
            int64_t now = clock_wall_ms();
            if (now >= deadline || now >= r->kill_at_ms)
                run_signal(r, SIGKILL);
            if (r->shim_pid > 0 && proc_start(r->shim_pid) != r->shim_start)
                run_exited(r);
            else if (r->shim_pid > 0 &&
                     waitpid(r->shim_pid, NULL, WNOHANG) == r->shim_pid) {
                r->shim_pid = 0;
                run_exited(r);
            }
        }
        if (clock_wall_ms() > deadline + 5000)
            break;
        usleep(20000);
    }
}

/* ---- load ---- */

static void adopt(struct runs *rs, const char *name)
{
    unsigned long long id;
    int attempt;
    char extra;
    if (sscanf(name, "%llu.%d%c", &id, &attempt, &extra) != 2)
        return;
    struct run *r = run_new(rs, id, attempt);
    if (!r)
        return;
    if (run_dir_reclaim(r->dir) < 0)
        sh_log(LOG_WARNING, "runs", "run %s: cannot take back %s: %s", r->key,
               r->dir, strerror(errno));
    json_t *notes = read_json_of(r->dir, "run.json", true);
    if (notes) {
        run_load_notes(r, notes);
        json_decref(notes);
    } else {
        /* No notes (the agent ended between the spawn and their first
         * save): whether the run is in an image, as run_start decided it,
         * from its work entry; when that is unreadable too, in one, so
         * that its shim's digest is looked for (a run without one wrote
         * none). */
        json_t *work = read_json(r->dir, "work.json");
        const json_t *spec = json_object_get(work, "spec");
        r->image = !work || json_string_value(json_object_get(spec, "image"));
        json_decref(work);
    }
    if (r->phase == RUN_EXITED)
        return;
    if (r->shim_pid > 0 && proc_start(r->shim_pid) == r->shim_start &&
        r->shim_start != 0) {
        r->work = read_json(r->dir, "work.json");
        sh_log(LOG_INFO, "runs", "adopted run %s shim=%d", r->key,
               (int)r->shim_pid);
        watch(r);
    } else {
        run_exited(r);
    }
}

struct runs *runs_create(struct agent *a, struct sh_error *err)
{
    struct runs *rs = calloc(1, sizeof(*rs));
    if (!rs) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    rs->a = a;
    snprintf(rs->dir, sizeof(rs->dir), "%s/runs", a->cfg.state_dir);
    snprintf(rs->stages, sizeof(rs->stages), "%s/stages", a->cfg.state_dir);
    /* 0711: the jobs' users reach their own run folder, nobody lists. */
    if (mkdir(rs->dir, 0711) < 0 && errno != EEXIST) {
        sh_errorf(err, SH_EUNAVAILABLE, "cannot create %s: %s", rs->dir,
                  strerror(errno));
        free(rs);
        return NULL;
    }
    chmod(rs->dir, 0711);
    DIR *d = opendir(rs->dir);
    rs->loading = true;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] != '.')
                adopt(rs, e->d_name);
        }
        closedir(d);
    }
    rs->loading = false;
    /* Stages of runs that ended while the agent was away. */
    release_stages(rs);
    struct sh_error ferr;
    rs->forkserver = forkserver_start(a->cfg.self_exe, rs->dir, &ferr);
    if (!rs->forkserver)
        sh_log(LOG_WARNING, "runs", "%s; shims are exec'd per run", ferr.msg);
    return rs;
}

void runs_destroy(struct runs *rs)
{
    if (!rs)
        return;
    struct run *r, *tmp;
    HASH_ITER (hh, rs->by_key, r, tmp)
        run_free(rs, r);
    forkserver_stop(rs->forkserver);
    free(rs);
}
