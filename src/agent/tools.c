/* SPDX-License-Identifier: Apache-2.0 */
/* Root's tools, pinned before a job's volumes are mounted (see tools.h). */
#include "agent/tools.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

static const char *const tool_names[] = {"crun", "skopeo", "umoci"};
#define NTOOLS (sizeof(tool_names) / sizeof(tool_names[0]))

static bool pinned;
static int tool_fd[NTOOLS] = {-1, -1, -1};

/* The first executable regular file name in an absolute folder of path,
 * opened O_PATH, or -1. */
static int find_on(const char *path, const char *name)
{
    for (const char *p = path; *p;) {
        const char *end = strchrnul(p, ':');
        char full[4096];
        int n =
            snprintf(full, sizeof(full), "%.*s/%s", (int)(end - p), p, name);
        if (p[0] == '/' && n > 0 && (size_t)n < sizeof(full) &&
            access(full, X_OK) == 0) {
            int fd = open(full, O_PATH | O_CLOEXEC);
            struct stat st;
            if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
                return fd;
            if (fd >= 0)
                close(fd);
        }
        if (!*end)
            break;
        p = end + 1;
    }
    return -1;
}

void tools_unpin(void)
{
    for (size_t i = 0; i < NTOOLS; i++) {
        if (tool_fd[i] >= 0)
            close(tool_fd[i]);
        tool_fd[i] = -1;
    }
    pinned = false;
}

void tools_pin(const char *path)
{
    tools_unpin();
    if (!path)
        path = getenv("PATH");
    if (!path)
        path = TOOLS_SYSTEM_PATH;
    for (size_t i = 0; i < NTOOLS; i++)
        tool_fd[i] = find_on(path, tool_names[i]);
    pinned = true;
}

int tools_fd(const char *name)
{
    for (size_t i = 0; i < NTOOLS; i++) {
        if (strcmp(name, tool_names[i]) == 0)
            return tool_fd[i];
    }
    return -1;
}

void tools_exec(char *const argv[], char *const envp[])
{
    if (!envp)
        envp = environ;
    if (!pinned) {
        execvpe(argv[0], argv, envp);
        return;
    }
    int fd = tools_fd(argv[0]);
    if (fd < 0) {
        errno = ENOENT;
        return;
    }
    execveat(fd, "", argv, envp, AT_EMPTY_PATH);
    /* A script: its interpreter opens it as /dev/fd/N, which a
     * close-on-exec descriptor is not by then; a copy that stays open is
     * given to it alone. */
    if (errno == ENOENT) {
        int keep = fcntl(fd, F_DUPFD, 3);
        if (keep >= 0)
            execveat(keep, "", argv, envp, AT_EMPTY_PATH);
    }
}
