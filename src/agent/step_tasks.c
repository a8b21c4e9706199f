/* SPDX-License-Identifier: Apache-2.0 */
/* A step's tasks on one node (see step_tasks.h). */
#include "agent/step_tasks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LINE_MAX_LEN 65536

extern char **environ;

const char *step_env_get(char **env, const char *key)
{
    size_t n = strlen(key);
    for (int i = 0; env && env[i]; i++) {
        if (strncmp(env[i], key, n) == 0 && env[i][n] == '=')
            return env[i] + n + 1;
    }
    return NULL;
}

/* A copy of env where each KEY=VALUE of set replaces its key. */
static char **env_with(char **env, char **set, int nset)
{
    int n = 0;
    while (env && env[n])
        n++;
    char **out = calloc((size_t)(n + nset + 1), sizeof(char *));
    if (!out)
        return NULL;
    int k = 0;
    for (int i = 0; i < n; i++) {
        bool replaced = false;
        for (int j = 0; j < nset && !replaced; j++) {
            size_t kl = strcspn(set[j], "=");
            replaced = strncmp(env[i], set[j], kl + 1) == 0;
        }
        if (!replaced)
            out[k++] = env[i];
    }
    for (int j = 0; j < nset; j++)
        out[k++] = set[j];
    return out;
}

/* Task t's GPUs: its share of the node's CUDA_VISIBLE_DEVICES. */
static char *task_gpus(const struct step_part *p, int t)
{
    const char *all = step_env_get(p->env, "CUDA_VISIBLE_DEVICES");
    char *copy = strdup(all ? all : "");
    char *out = calloc(1, strlen(all ? all : "") + 1);
    if (!copy || !out) {
        free(copy);
        free(out);
        return NULL;
    }
    int i = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save), i++) {
        if (i >= t * p->gpus_per_task && i < (t + 1) * p->gpus_per_task) {
            if (out[0])
                strcat(out, ",");
            strcat(out, tok);
        }
    }
    free(copy);
    return out;
}

#define TASK_VARS 16

static pid_t start_task(const struct step_part *p, int t, int out_fd,
                        int err_fd)
{
    char *set[TASK_VARS];
    int n = 0;
    int rank = p->first + t;
    char *gpus = p->gpus_per_task > 0 ? task_gpus(p, t) : NULL;
    if (asprintf(&set[n++], "SLURM_STEP_ID=%d", p->step) < 0 ||
        asprintf(&set[n++], "SLURM_STEPID=%d", p->step) < 0 ||
        asprintf(&set[n++], "SLURM_PROCID=%d", rank) < 0 ||
        asprintf(&set[n++], "SLURM_LOCALID=%d", t) < 0 ||
        asprintf(&set[n++], "SLURM_NODEID=%d", p->node_index) < 0 ||
        asprintf(&set[n++], "SLURM_STEP_NUM_TASKS=%d", p->step_tasks) < 0 ||
        asprintf(&set[n++], "SLURM_STEP_NUM_NODES=%d", p->step_nodes) < 0 ||
        asprintf(&set[n++], "SLURM_NTASKS=%d", p->step_tasks) < 0 ||
        asprintf(&set[n++], "SLURM_NPROCS=%d", p->step_tasks) < 0 ||
        asprintf(&set[n++], "RANK=%d", rank) < 0 ||
        asprintf(&set[n++], "LOCAL_RANK=%d", t) < 0 ||
        asprintf(&set[n++], "WORLD_SIZE=%d", p->step_tasks) < 0 ||
        asprintf(&set[n++], "LOCAL_WORLD_SIZE=%d", p->ntasks) < 0 ||
        (gpus && asprintf(&set[n++], "CUDA_VISIBLE_DEVICES=%s", gpus) < 0))
        return -1;
    free(gpus);
    char **envp = env_with(p->env, set, n);
    if (!envp)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        if (out_fd >= 0)
            dup2(out_fd, STDOUT_FILENO);
        if (err_fd >= 0)
            dup2(err_fd, STDERR_FILENO);
        signal(SIGPIPE, SIG_DFL);
        if (p->cwd && chdir(p->cwd) < 0) {
            fprintf(stderr,
                    "srun: task %d: cannot chdir to %s (%s): going "
                    "to /tmp instead\n",
                    rank, p->cwd, strerror(errno));
            if (chdir("/tmp") < 0)
                _exit(1);
        }
        /* execvpe searches the caller's PATH: the task's is the step's. */
        environ = envp;
        execvp(p->argv[0], p->argv);
        fprintf(stderr, "srun: error: task %d: %s: %s\n", rank, p->argv[0],
                strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    free(envp);
    for (int i = 0; i < n; i++)
        free(set[i]);
    return pid;
}

/* Labelled output: each task's stdout and stderr through a pipe, copied
 * line by line with "RANK: " in front. */
struct label_pipe {
    int fd;
    int rank;
    int to; /* 1 or 2 */
    char buf[LINE_MAX_LEN];
    size_t len;
};

static void flush_line(struct label_pipe *lp, size_t n, bool newline)
{
    dprintf(lp->to, "%d: %.*s%s", lp->rank, (int)n, lp->buf,
            newline ? "\n" : "");
}

/* Read what is there; 0 at the end of the pipe. */
static int pump(struct label_pipe *lp)
{
    ssize_t r = read(lp->fd, lp->buf + lp->len, sizeof(lp->buf) - lp->len);
    if (r < 0 && errno == EINTR)
        return 1;
    if (r <= 0) {
        if (lp->len)
            flush_line(lp, lp->len, true);
        lp->len = 0;
        return 0;
    }
    lp->len += (size_t)r;
    char *nl;
    while ((nl = memchr(lp->buf, '\n', lp->len)) != NULL) {
        size_t n = (size_t)(nl - lp->buf);
        flush_line(lp, n, true);
        memmove(lp->buf, nl + 1, lp->len - n - 1);
        lp->len -= n + 1;
    }
    if (lp->len == sizeof(lp->buf)) {
        flush_line(lp, lp->len, false);
        lp->len = 0;
    }
    return 1;
}

static int exit_of(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

static void kill_others(pid_t *pids, int n, pid_t except)
{
    for (int i = 0; i < n; i++) {
        if (pids[i] > 0 && pids[i] != except)
            kill(pids[i], SIGKILL);
    }
}

/* Wait a tenth of a second at most for output or a word from watch_fd
 * (-1: none); copy the output; 1 when p->cancelled says the step is
 * cancelled. */
static int wait_some(const struct step_part *p, struct label_pipe *lps,
                     int npipes, int *open_pipes, struct pollfd *pfd,
                     bool *watching)
{
    int k = 0;
    for (int i = 0; i < npipes; i++) {
        if (lps[i].fd < 0)
            continue;
        pfd[k].fd = lps[i].fd;
        pfd[k++].events = POLLIN;
    }
    int watch = -1;
    if (*watching && p->watch_fd >= 0) {
        watch = k;
        pfd[k].fd = p->watch_fd;
        pfd[k++].events = POLLIN;
    }
    if (poll(pfd, (nfds_t)k, 100) <= 0)
        return 0;
    for (int i = 0, j = 0; i < npipes && j < k; i++) {
        if (lps[i].fd < 0)
            continue;
        if (pfd[j++].revents && pump(&lps[i]) == 0) {
            close(lps[i].fd);
            lps[i].fd = -1;
            (*open_pipes)--;
        }
    }
    if (watch >= 0 && pfd[watch].revents) {
        int rc = p->cancelled(p->arg);
        if (rc < 0)
            *watching = false; /* nothing more to hear */
        return rc > 0;
    }
    return 0;
}

int step_part_run(const struct step_part *p)
{
    int n = p->ntasks;
    if (n < 1 || n > STEP_TASKS_MAX)
        return 1;
    pid_t *pids = calloc((size_t)n, sizeof(pid_t));
    struct label_pipe *lps =
        p->label ? calloc((size_t)n * 2, sizeof(*lps)) : NULL;
    struct pollfd *pfd = calloc((size_t)n * 2 + 1, sizeof(*pfd));
    if (!pids || !pfd || (p->label && !lps)) {
        free(pids);
        free(lps);
        free(pfd);
        return 1;
    }
    int worst = 0;
    for (int t = 0; t < n; t++) {
        int fds[2][2] = {{-1, -1}, {-1, -1}};
        if (p->label) {
            for (int k = 0; k < 2; k++) {
                if (pipe2(fds[k], O_CLOEXEC) < 0)
                    fds[k][0] = fds[k][1] = -1;
                lps[2 * t + k] = (struct label_pipe){
                    .fd = fds[k][0], .rank = p->first + t, .to = k + 1};
            }
        }
        pids[t] = start_task(p, t, fds[0][1], fds[1][1]);
        if (p->label) {
            close(fds[0][1]);
            close(fds[1][1]);
        }
        if (pids[t] < 0)
            worst = 127;
    }
    int npipes = p->label ? 2 * n : 0, open_pipes = 0;
    for (int i = 0; i < npipes; i++)
        open_pipes += lps[i].fd >= 0;
    int left = 0;
    for (int t = 0; t < n; t++)
        left += pids[t] > 0;
    bool watching = p->cancelled != NULL, killed = false;
    while (left > 0 || open_pipes > 0) {
        /* Nothing to copy nor to hear: wait for a task to end. */
        bool block = open_pipes == 0 && !(watching && p->watch_fd >= 0);
        if (!block && wait_some(p, lps, npipes, &open_pipes, pfd, &watching) &&
            !killed) {
            /* Another node's task failed under --kill-on-bad-exit. */
            killed = true;
            kill_others(pids, n, 0);
        }
        int status;
        pid_t pid;
        while (left > 0 &&
               (pid = waitpid(-1, &status, block ? 0 : WNOHANG)) != 0) {
            if (pid < 0) {
                if (errno == EINTR)
                    continue;
                left = 0; /* no child left to wait for */
                break;
            }
            block = false;
            for (int t = 0; t < n; t++) {
                if (pids[t] != pid)
                    continue;
                int e = exit_of(status);
                if (e > worst)
                    worst = e;
                left--;
                pids[t] = -pid;
                if (e != 0 && p->kill_on_bad_exit && !killed) {
                    fprintf(stderr,
                            "srun: error: task %d exited with %d: killing "
                            "the step's other tasks (--kill-on-bad-exit)\n",
                            p->first + t, e);
                    killed = true;
                    kill_others(pids, n, pid);
                }
            }
        }
    }
    free(pfd);
    free(lps);
    free(pids);
    return worst;
}
