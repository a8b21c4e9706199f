/* SPDX-License-Identifier: Apache-2.0 */
/* Running the image tools (skopeo, umoci): as root or as a job's user,
 * output collected, a tick while they run (see image_int.h). */
#include "agent/image_int.h"

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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/tools.h"
#include "lib/model/job_container.h"
#include "lib/util/log.h"

#define TOOL_OUT_MAX (1 << 20)
#define TICK_MS 500

/* ---- running a tool ---- */

/* In a child about to act for user: no descriptor of ours beyond stdio
 * and keep (the tool it runs, pinned: tools.h; -1 for none), none of
 * root's groups or ids. 0, or -1 with errno. */
static int become_user(const struct user_creds *u, int keep)
{
    for (int fd = 3; keep >= 0 && fd < keep; fd++)
        close(fd);
    if (close_range(keep >= 3 ? (unsigned)keep + 1 : 3, UINT_MAX, 0) < 0) {
        for (int fd = keep >= 3 ? keep + 1 : 3; fd < 1024; fd++)
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

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int image_tool_run(char *const argv[], struct tool_run *r, tool_tick_f tick,
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
            if (become_user(as->user, tools_fd(argv[0])) < 0) {
                dprintf(2, "cannot become the job's user: %s\n",
                        strerror(errno));
                _exit(126);
            }
        }
        tools_exec(argv, NULL);
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
    int64_t next_tick = mono_ms() + TICK_MS;
    while (open_fds > 0) {
        int64_t wait = next_tick - mono_ms();
        int n = poll(fds, 2, wait > 0 ? (int)wait : 0);
        if (n < 0 && errno != EINTR)
            break;
        if (tick && !r->stopped && mono_ms() >= next_tick) {
            next_tick = mono_ms() + TICK_MS;
            if (tick(arg) < 0) {
                /* It ends; its pipes close with it (a helper it left
                 * holding them is its own). */
                kill(pid, SIGKILL);
                r->stopped = true;
            }
        }
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

bool image_tool_ok(const struct tool_run *r)
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
