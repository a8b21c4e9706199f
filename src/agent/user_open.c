/* SPDX-License-Identifier: Apache-2.0 */
/* Opening a path as a job's user (see user_open.h). */
#include "agent/user_open.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int run_timeout_ms = USER_RUN_TIMEOUT_MS;

void user_run_set_timeout(int ms)
{
    run_timeout_ms = ms;
}

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd is readable, at most the deadline: 0, or -1 (ETIME past
 * it, or poll's errno). */
static int wait_readable(int fd)
{
    long long deadline = mono_ms() + run_timeout_ms;
    for (;;) {
        long long left = deadline - mono_ms();
        if (left <= 0)
            return errno = ETIME, -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* The open itself (in the child, as the user): O_PATH, and with type the
 * checked open for reading. The type is checked on the O_PATH descriptor
 * first, so a FIFO or a device is not opened; the open for reading (non-
 * blocking) must then reach that same file, else the path changed in
 * between and nothing is returned. The fd, or -1 with *err. */
static int open_here(const char *path, mode_t type, int *err)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return *err = errno, -1;
    if (!type)
        return fd;
    struct stat st, rst;
    int rfd = -1;
    if (fstat(fd, &st) < 0)
        *err = errno;
    else if ((st.st_mode & S_IFMT) != type)
        *err = EMEDIUMTYPE;
    else if ((rfd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) <
             0)
        *err = errno;
    else if (fstat(rfd, &rst) < 0 || rst.st_dev != st.st_dev ||
             rst.st_ino != st.st_ino) {
        *err = ESTALE;
        close(rfd);
        rfd = -1;
    }
    close(fd);
    return rfd;
}

int user_run(const struct user_creds *u, user_fn fn, void *arg, int *aux,
             int *err)
{
    int a = 0;
    if (!u) {
        int fd = fn(arg, &a, err);
        if (aux)
            *aux = a;
        return fd;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return *err = errno, -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        /* Nothing of root's stays open in a process the user owns (it
         * stays non-dumpable too: the user cannot attach to it). */
        if (sv[1] > 3)
            close_range(3, (unsigned)sv[1] - 1, 0);
        close_range((unsigned)sv[1] + 1, ~0U, 0);
        int ans[2] = {0, 0}, fd = -1;
        if (setgroups((size_t)u->ngroups, u->groups) < 0 ||
            setgid(u->gid) < 0 || setuid(u->uid) < 0)
            ans[0] = errno;
        else
            fd = fn(arg, &ans[1], &ans[0]);
        if (fd < 0 && ans[0] == 0)
            ans[0] = EIO;
        char ctl[CMSG_SPACE(sizeof(int))];
        memset(ctl, 0, sizeof(ctl));
        struct iovec iov = {.iov_base = ans, .iov_len = sizeof(ans)};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
        if (fd >= 0) {
            ans[0] = 0;
            msg.msg_control = ctl;
            msg.msg_controllen = sizeof(ctl);
            struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        }
        _exit(sendmsg(sv[1], &msg, 0) == (ssize_t)sizeof(ans) ? 0 : 1);
    }
    close(sv[1]);
    int ans[2] = {EIO, 0}, fd = -1;
    if (pid > 0) {
        char ctl[CMSG_SPACE(sizeof(int))];
        struct iovec iov = {.iov_base = ans, .iov_len = sizeof(ans)};
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = ctl,
                             .msg_controllen = sizeof(ctl)};
        /* The user's path may lead through a mount of the user's own that
         * never answers (a hung FUSE): the child is killed past the
         * deadline, and the answer is ETIME. */
        ssize_t got = -1;
        if (wait_readable(sv[0]) < 0) {
            int e = errno;
            kill(pid, SIGKILL);
            errno = e;
        } else {
            while ((got = recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC)) < 0 &&
                   errno == EINTR)
                ;
        }
        if (got != (ssize_t)sizeof(ans))
            ans[0] = got < 0 && errno == ETIME ? ETIME : EIO;
        struct cmsghdr *cm = got > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
        if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
            cm->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(&fd, CMSG_DATA(cm), sizeof(int));
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    close(sv[0]);
    if (aux)
        *aux = ans[1];
    if (ans[0] == 0 && fd >= 0)
        return fd;
    if (fd >= 0)
        close(fd);
    *err = ans[0] ? ans[0] : EIO;
    return -1;
}

struct open_req {
    const char *path;
    mode_t type;
};

static int open_fn(void *arg, int *aux, int *err)
{
    (void)aux;
    const struct open_req *r = arg;
    return open_here(r->path, r->type, err);
}

static int open_as(const char *path, const struct user_creds *u, mode_t type,
                   int *err)
{
    struct open_req r = {.path = path, .type = type};
    return user_run(u, open_fn, &r, NULL, err);
}

int user_open_path(const char *path, const struct user_creds *u, int *err)
{
    return open_as(path, u, 0, err);
}

int user_open_read(const char *path, const struct user_creds *u, mode_t type,
                   int *err)
{
    return open_as(path, u, type, err);
}
