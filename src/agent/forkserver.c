/* SPDX-License-Identifier: Apache-2.0 */
/* The shim fork server (see forkserver.h). */
#include "agent/forkserver.h"

#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/shim.h"
#include "lib/util/log.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define FORKSERVER_FD 3
#define REPLY_TIMEOUT_S 10
#define BIND_NOW "LD_BIND_NOW=1"
/* The largest request: a run folder, a NUL, a launch description. */
#define REQUEST_MAX (PATH_MAX + 1 + FORKSERVER_LAUNCH_MAX)

extern char **environ;

struct forkserver {
    int sock;
    pid_t pid;
    int pidfd; /* the server's: killed through it, never waited for */
};

/* The answer to one request: the shim's pid and its start time (read
 * before the server could reap it), or pid 0 and why not. */
struct reply {
    int32_t pid;
    int32_t err;
    uint64_t start;
};

unsigned long long forkserver_proc_start(pid_t pid)
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
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    /* After ") " come fields 3.. ; starttime is field 22. */
    int field = 2;
    for (p++; *p && field < 22; p++) {
        if (*p == ' ')
            field++;
    }
    return strtoull(p, NULL, 10);
}

/* ---- the agent's side ---- */

/* The agent's environment with LD_BIND_NOW=1 added (see forkserver.h);
 * the strings are borrowed. NULL when out of memory. */
static char **bind_now_env(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof(char *));
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "LD_BIND_NOW=", 12) != 0)
            env[k++] = environ[i];
    }
    env[k++] = BIND_NOW;
    env[k] = NULL;
    return env;
}

struct forkserver *forkserver_start(const char *self_exe, const char *runs_dir,
                                    struct sh_error *err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        sh_errorf(err, SH_EUNAVAILABLE, "socketpair: %s", strerror(errno));
        return NULL;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none;
    sigemptyset(&none);
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0 && (rc = posix_spawnattr_init(&attr)) != 0)
        posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        close(sv[0]);
        close(sv[1]);
        sh_errorf(err, SH_EUNAVAILABLE, "posix_spawn: %s", strerror(rc));
        return NULL;
    }
    rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, 0, 1);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, sv[1], FORKSERVER_FD);
    if (rc == 0)
        rc = posix_spawnattr_setsigmask(&attr, &none);
    if (rc == 0)
        rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    pid_t pid = -1;
    char *argv[] = {(char *)self_exe, "--fork-server", (char *)runs_dir, NULL};
    char **env = bind_now_env();
    if (rc == 0)
        rc = posix_spawn(&pid, self_exe, &fa, &attr, argv, env ? env : environ);
    free(env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        sh_errorf(err, SH_EUNAVAILABLE, "cannot start the fork server: %s",
                  strerror(rc));
        return NULL;
    }
    struct timeval tv = {.tv_sec = REPLY_TIMEOUT_S};
    setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    /* Room for the largest request whatever the system's default (a
     * message over the send buffer fails with EMSGSIZE). */
    int sndbuf = 2 * REQUEST_MAX;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    /* The kernel caps it at net.core.wmem_max (and doubles what it
     * grants, for its own bookkeeping): a message over what it reads
     * back less 32 bytes is refused with EMSGSIZE (unix_dgram_sendmsg)
     * and its run gets a launch.json instead. */
    socklen_t optlen = sizeof(sndbuf);
    if (getsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, &optlen) == 0 &&
        sndbuf - 32 < (int)REQUEST_MAX)
        sh_log(LOG_WARNING, "forkserver",
               "send buffer of %d bytes (net.core.wmem_max) is below the "
               "largest request (%d bytes): longer launch descriptions go "
               "through launch.json",
               sndbuf, (int)REQUEST_MAX);
    /* Opened before the agent's SIGCHLD loop can reap it. */
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    struct forkserver *fs = pidfd >= 0 ? calloc(1, sizeof(*fs)) : NULL;
    if (!fs) {
        int e = errno;
        close(sv[0]); /* it exits when its end of the socket closes */
        if (pidfd >= 0)
            close(pidfd);
        sh_errorf(err, SH_EUNAVAILABLE, "fork server: %s", strerror(e));
        return NULL;
    }
    fcntl(pidfd, F_SETFD, FD_CLOEXEC);
    fs->sock = sv[0];
    fs->pid = pid;
    fs->pidfd = pidfd;
    return fs;
}

int forkserver_spawn(struct forkserver *fs, const char *run_dir, pid_t *pid,
                     int *pidfd, unsigned long long *start,
                     struct sh_error *err)
{
    return forkserver_spawn_launch(fs, run_dir, NULL, 0, pid, pidfd, start,
                                   err);
}

int forkserver_spawn_launch(struct forkserver *fs, const char *run_dir,
                            const char *launch, size_t launch_len, pid_t *pid,
                            int *pidfd, unsigned long long *start,
                            struct sh_error *err)
{
    size_t len = strlen(run_dir);
    if (len == 0 || len >= PATH_MAX) {
        sh_errorf(err, SH_EINVAL, "bad run folder path");
        return FORKSERVER_REFUSED;
    }
    if (launch && (launch_len == 0 || launch_len > FORKSERVER_LAUNCH_MAX ||
                   memchr(launch, '\0', launch_len))) {
        sh_errorf(err, SH_EINVAL,
                  "a launch description of %zu bytes is not sent (at most "
                  "%d, no NUL)",
                  launch_len, FORKSERVER_LAUNCH_MAX);
        return FORKSERVER_REFUSED;
    }
    /* One message: the folder, and after a NUL the description. */
    struct iovec req[3] = {{.iov_base = (void *)run_dir, .iov_len = len},
                           {.iov_base = "", .iov_len = 1},
                           {.iov_base = (void *)launch, .iov_len = launch_len}};
    struct msghdr rmsg = {.msg_iov = req, .msg_iovlen = launch ? 3 : 1};
    size_t total = len + (launch ? 1 + launch_len : 0);
    ssize_t n;
    do
        n = sendmsg(fs->sock, &rmsg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        /* Nothing reached the server: no shim was forked. */
        int e = errno;
        sh_errorf(err, SH_EUNAVAILABLE, "fork server: send: %s", strerror(e));
        /* Too big for the send buffer, or no kernel memory for it now:
         * this request's trouble, not the server's. */
        if (e == EMSGSIZE || e == ENOBUFS || e == ENOMEM)
            return FORKSERVER_NOT_SENT;
        return FORKSERVER_UNSENT;
    }
    if ((size_t)n != total) {
        /* A SOCK_SEQPACKET message goes whole or not at all: a short count
         * is a socket that is not what it should be, and part of the
         * request may have reached the server. */
        sh_errorf(err, SH_EUNAVAILABLE,
                  "fork server: send: %zd of %zu bytes sent", n, total);
        return FORKSERVER_BROKEN;
    }
    /* From here on the server may have forked a shim for this run: the
     * caller must not start another one. */
    struct reply rep;
    struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = ctl.buf,
                         .msg_controllen = sizeof(ctl.buf)};
    do
        n = recvmsg(fs->sock, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    int fd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); n > 0 && c;
         c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(&fd, CMSG_DATA(c), sizeof(int));
    }
    if (n != (ssize_t)sizeof(rep) || (msg.msg_flags & MSG_TRUNC)) {
        if (fd >= 0)
            close(fd);
        sh_errorf(err, SH_EUNAVAILABLE, "fork server: %s",
                  n < 0 ? strerror(errno) : "no answer");
        return FORKSERVER_BROKEN;
    }
    if (rep.pid <= 0) {
        if (fd >= 0)
            close(fd);
        sh_errorf(err, SH_EUNAVAILABLE, "cannot start the shim: %s",
                  strerror(rep.err > 0 ? rep.err : EPROTO));
        return FORKSERVER_REFUSED;
    }
    if (fd < 0 && (msg.msg_flags & MSG_CTRUNC)) {
        /* The pidfd was dropped (no descriptor left here): open one from
         * the pid, which is the shim's only while its start time says so. */
        fd = (int)syscall(SYS_pidfd_open, rep.pid, 0);
        if (fd >= 0 && forkserver_proc_start(rep.pid) != rep.start) {
            close(fd);
            fd = -1;
        }
        if (fd >= 0)
            fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    if (fd < 0) {
        sh_errorf(err, SH_EUNAVAILABLE,
                  "fork server: shim %d started but cannot be watched",
                  (int)rep.pid);
        return FORKSERVER_BROKEN;
    }
    *pid = rep.pid;
    *pidfd = fd;
    *start = rep.start;
    return FORKSERVER_OK;
}

void forkserver_stop(struct forkserver *fs)
{
    if (!fs)
        return;
    /* Never waits: this is reached when the server stopped answering. The
     * agent's SIGCHLD loop reaps it (the pidfd kept its pid from reuse). */
    close(fs->sock);
    syscall(SYS_pidfd_send_signal, fs->pidfd, SIGKILL, NULL, 0);
    siginfo_t si;
    waitid((idtype_t)P_PIDFD, (id_t)fs->pidfd, &si, WEXITED | WNOHANG);
    close(fs->pidfd);
    free(fs);
}

/* ---- the server ---- */

static void reap(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

/* The forked child: what posix_spawn of `shoal-agent --shim` gave the shim,
 * then the shim itself. */
static void become_shim(const char *run_dir, char *launch, size_t len,
                        int log_fd, int sfd)
{
    close(FORKSERVER_FD);
    close(sfd);
    setsid();
    int null = open("/dev/null", O_RDWR);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
        dup2(log_fd, 2) < 0)
        _exit(127);
    if (null > 2)
        close(null);
    close(log_fd);
    /* The server's dispositions are the defaults (forkserver_main) but for
     * SIGINT, SIGTERM, SIGHUP and SIGPIPE, which the shim ignores first
     * thing too; SIGCHLD is blocked, never caught. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* _exit: the shim leaves nothing buffered in stdio (stderr is
     * unbuffered, stdout /dev/null) and registers no atexit work; exit()
     * would only run the libraries' teardown in every shim. */
    _exit(shim_main_launch(run_dir, launch, len));
}

static void answer(int pid, int e, int pidfd, unsigned long long start)
{
    struct reply rep = {.pid = pid, .err = e, .start = start};
    struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (pidfd >= 0) {
        memset(&ctl, 0, sizeof(ctl));
        msg.msg_control = ctl.buf;
        msg.msg_controllen = sizeof(ctl.buf);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &pidfd, sizeof(int));
    }
    if (sendmsg(FORKSERVER_FD, &msg, MSG_NOSIGNAL) < 0) {
        /* the agent is gone: the next recv says so */
    }
}

static void serve_one(const char *run_dir, char *launch, size_t len, int sfd)
{
    char log[PATH_MAX + 16];
    snprintf(log, sizeof(log), "%s/shim.log", run_dir);
    int log_fd =
        open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (log_fd < 0) {
        answer(0, errno, -1, 0);
        return;
    }
    pid_t pid = fork();
    if (pid == 0)
        become_shim(run_dir, launch, len, log_fd, sfd);
    int e = errno;
    close(log_fd);
    if (pid < 0) {
        answer(0, e, -1, 0);
        return;
    }
    /* Opened before this process reaps it: the pid cannot be reused yet. */
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        e = errno;
        kill(pid, SIGKILL);
        answer(0, e, -1, 0);
        return;
    }
    /* Read before this process reaps it, so the pid is still the shim's. */
    answer(pid, 0, pidfd, forkserver_proc_start(pid));
    close(pidfd);
}

/* DIR is RUNS_DIR/<id>.<attempt>, decimal numbers, nothing else. */
static bool is_run_dir(const char *runs_dir, const char *dir)
{
    size_t len = strlen(runs_dir);
    if (len == 0 || strncmp(dir, runs_dir, len) != 0 || dir[len] != '/')
        return false;
    const char *p = dir + len + 1;
    size_t id = strspn(p, "0123456789");
    if (id == 0 || p[id] != '.')
        return false;
    p += id + 1;
    size_t attempt = strspn(p, "0123456789");
    return attempt > 0 && p[attempt] == '\0';
}

int forkserver_main(const char *runs_dir)
{
    /* LD_BIND_NOW did its work when this process was loaded; nothing
     * started from here (shims, their helpers, jobs) inherits it. */
    unsetenv("LD_BIND_NOW");
    /* jansson's hash seed, drawn once here from /dev/urandom: every shim
     * forked from here parses its launch description with it instead of
     * drawing its own (three system calls in each; the shim's parse step
     * moved from ~650 to ~625 us of CPU here, inside the noise). */
    json_object_seed(0);
    /* A request: the run folder, then after a NUL (when sent) the launch
     * description. The buffer is wiped after every request, served or
     * refused, as the description may hold secrets (registry credentials,
     * the job's environment); each forked shim wipes its copy once parsed.
     * The kernel's socket buffers that carried it are freed, not wiped. */
    static char req[REQUEST_MAX + 1];
    /* Defaults first (the agent's ignored signals stay ignored through
     * its exec of this server), so a forked shim starts from them
     * (shim_reset_signals). A terminal's signals are the agent's to act
     * on; the server ends when the agent's end of the socket closes. */
    shim_reset_signals();
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0 || fcntl(FORKSERVER_FD, F_SETFD, FD_CLOEXEC) < 0)
        return 1;
    for (;;) {
        struct pollfd p[2] = {{.fd = FORKSERVER_FD, .events = POLLIN},
                              {.fd = sfd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (p[1].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof(si)) > 0) {
            }
            reap();
        }
        if (!p[0].revents)
            continue;
        struct iovec iov = {.iov_base = req, .iov_len = REQUEST_MAX};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
        ssize_t n = recvmsg(FORKSERVER_FD, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* the agent closed its end (or died) */
        req[n] = '\0';
        size_t dir_len = strlen(req);
        char *launch = NULL;
        size_t launch_len = 0;
        if (dir_len < (size_t)n) {
            launch = req + dir_len + 1;
            launch_len = (size_t)n - dir_len - 1;
        }
        if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || dir_len == 0 ||
            dir_len >= PATH_MAX || !is_run_dir(runs_dir, req) ||
            (launch && (launch_len == 0 || launch_len > FORKSERVER_LAUNCH_MAX ||
                        memchr(launch, '\0', launch_len))))
            answer(0, EINVAL, -1, 0);
        else
            serve_one(req, launch, launch_len, sfd);
        explicit_bzero(req, (size_t)n);
    }
    reap();
    return 0;
}
