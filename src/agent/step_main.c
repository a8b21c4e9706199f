/* SPDX-License-Identifier: Apache-2.0 */
/* shoal-step: the step launcher inside a job, known there by the names of
 * its links in the job's PATH (steps.h):
 *   srun [options] CMD ARGS...      a step on the job's nodes
 *   scontrol show hostnames [LIST]  the job's nodes (or LIST), one a line
 *   shoal-step --serve              on a batch job's other nodes: runs the
 *                                   parts of steps the agent hands it
 * srun asks the agent of its node (SHOAL_STEP_SOCKET), which knows the
 * job from the caller's process; it starts its own node's tasks itself and
 * waits for the other nodes' through the agent. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/step_hostlist.h"
#include "agent/step_tasks.h"

extern char **environ;

#define MSG_MAX (1 << 20)

/* ---- the agent's socket ---- */

static int agent_connect(const char *who)
{
    const char *path = getenv("SHOAL_STEP_SOCKET");
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (!path || !*path) {
        fprintf(stderr,
                "%s: error: not inside a Shoal job (SHOAL_STEP_SOCKET is "
                "not set)\n",
                who);
        return -1;
    }
    if (strlen(path) >= sizeof(addr.sun_path)) {
        fprintf(stderr, "%s: error: %s: path too long\n", who, path);
        return -1;
    }
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        fprintf(stderr, "%s: error: cannot reach the node's agent at %s: %s\n",
                who, path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int send_msg(int fd, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!text)
        return -1;
    size_t n = strlen(text);
    text[n] = '\n';
    size_t off = 0;
    while (off < n + 1) {
        ssize_t w = send(fd, text + off, n + 1 - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            free(text);
            return -1;
        }
        off += (size_t)w;
    }
    free(text);
    return 0;
}

/* Lines read from the agent. */
struct reader {
    int fd;
    char buf[MSG_MAX];
    size_t len;
};

/* The next message, waiting at most timeout_ms (-1: forever). NULL at the
 * end, on a timeout (*timed_out) or an error. */
static json_t *read_msg(struct reader *r, int timeout_ms, bool *timed_out)
{
    *timed_out = false;
    for (;;) {
        char *nl = memchr(r->buf, '\n', r->len);
        if (nl) {
            size_t line = (size_t)(nl - r->buf);
            json_t *m = json_loadb(r->buf, line, 0, NULL);
            memmove(r->buf, nl + 1, r->len - line - 1);
            r->len -= line + 1;
            return m;
        }
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        int pr = poll(&p, 1, timeout_ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0) {
            *timed_out = true;
            return NULL;
        }
        if (r->len == sizeof(r->buf))
            return NULL;
        ssize_t n = recv(r->fd, r->buf + r->len, sizeof(r->buf) - r->len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL;
        r->len += (size_t)n;
    }
}

static json_t *str_array(char **v)
{
    json_t *a = json_array();
    for (int i = 0; v && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static char **json_strv(const json_t *a)
{
    size_t n = json_array_size(a);
    char **v = calloc(n + 1, sizeof(char *));
    for (size_t i = 0; v && i < n; i++)
        v[i] = (char *)json_string_value(json_array_get(a, i));
    return v;
}

/* ---- scontrol ---- */

static int scontrol_main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "show") == 0 &&
        (strcmp(argv[2], "hostnames") == 0 ||
         strcmp(argv[2], "hostname") == 0) &&
        argc <= 4) {
        const char *list = argc == 4 ? argv[3] : getenv("SLURM_JOB_NODELIST");
        if (!list) {
            fprintf(stderr, "scontrol: error: no host list given and "
                            "SLURM_JOB_NODELIST is not set\n");
            return 1;
        }
        struct sh_error err;
        if (step_hostlist_print(list, stdout, &err) < 0) {
            fprintf(stderr, "scontrol: error: %s\n", err.msg);
            return 1;
        }
        return 0;
    }
    fprintf(stderr,
            "scontrol: error: inside a Shoal job, scontrol answers only "
            "'scontrol show hostnames [LIST]'; for the rest use the shoal "
            "command (shoal show $SLURM_JOB_ID, shoal nodes, shoal update)\n");
    return 1;
}

/* ---- srun ---- */

struct srun_opts {
    int nodes, ntasks, per_node, gpus_per_task, cpus_per_task;
    bool label, kill_on_bad_exit;
};

static int env_int(const char *key, int def)
{
    const char *v = getenv(key);
    return v && *v ? atoi(v) : def;
}

static int positive(const char *opt, const char *arg, int *out)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || v < 1 || v > 1000000) {
        fprintf(stderr, "srun: error: %s wants a positive number, got '%s'\n",
                opt, arg);
        return -1;
    }
    *out = (int)v;
    return 0;
}

enum { OPT_TPN = 256, OPT_GPT };

static int srun_parse(int argc, char **argv, struct srun_opts *o)
{
    static const struct option longs[] = {
        {"nodes", required_argument, NULL, 'N'},
        {"ntasks", required_argument, NULL, 'n'},
        {"ntasks-per-node", required_argument, NULL, OPT_TPN},
        {"gpus-per-task", required_argument, NULL, OPT_GPT},
        {"cpus-per-task", required_argument, NULL, 'c'},
        {"label", no_argument, NULL, 'l'},
        {"kill-on-bad-exit", optional_argument, NULL, 'K'},
        {NULL, 0, NULL, 0}};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+N:n:c:lK::", longs, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'N':
            rc = positive("-N/--nodes", optarg, &o->nodes);
            break;
        case 'n':
            rc = positive("-n/--ntasks", optarg, &o->ntasks);
            break;
        case OPT_TPN:
            rc = positive("--ntasks-per-node", optarg, &o->per_node);
            break;
        case OPT_GPT:
            rc = positive("--gpus-per-task", optarg, &o->gpus_per_task);
            break;
        case 'c':
            rc = positive("-c/--cpus-per-task", optarg, &o->cpus_per_task);
            break;
        case 'l':
            o->label = true;
            break;
        case 'K':
            o->kill_on_bad_exit = !optarg || strcmp(optarg, "0") != 0;
            break;
        default:
            fprintf(stderr,
                    "srun: error: Shoal's srun does not take '%s' (it takes "
                    "-N/--nodes, -n/--ntasks, --ntasks-per-node, "
                    "--gpus-per-task, -c/--cpus-per-task, -l/--label, "
                    "-K/--kill-on-bad-exit)\n",
                    argv[optind - 1]);
            return -1;
        }
        if (rc < 0)
            return -1;
    }
    if (optind >= argc) {
        fprintf(stderr, "srun: error: no command given (srun [options] CMD "
                        "ARGS...)\n");
        return -1;
    }
    return optind;
}

/* Where the tasks go: nnodes of the job's first nodes, ntasks in blocks. */
static int srun_layout(struct srun_opts *o, int job_nodes, int *nnodes,
                       int *ntasks)
{
    int per_node =
        o->per_node ? o->per_node : env_int("SLURM_NTASKS_PER_NODE", 1);
    if (o->nodes)
        *nnodes = o->nodes;
    else if (o->ntasks && !o->per_node)
        *nnodes = o->ntasks < job_nodes ? o->ntasks : job_nodes;
    else
        *nnodes = job_nodes;
    *ntasks = o->ntasks ? o->ntasks : *nnodes * per_node;
    if (*nnodes > job_nodes) {
        fprintf(stderr, "srun: error: %d nodes asked, the job has %d\n",
                *nnodes, job_nodes);
        return -1;
    }
    if (*ntasks < *nnodes) {
        fprintf(stderr, "srun: error: %d tasks cannot cover %d nodes\n",
                *ntasks, *nnodes);
        return -1;
    }
    int most = (*ntasks + *nnodes - 1) / *nnodes;
    int gpus = env_int("SLURM_GPUS_ON_NODE", 0);
    if (o->gpus_per_task && most * o->gpus_per_task > gpus) {
        fprintf(stderr,
                "srun: error: %d tasks on a node with --gpus-per-task=%d "
                "need %d GPUs; the job has %d per node\n",
                most, o->gpus_per_task, most * o->gpus_per_task, gpus);
        return -1;
    }
    int cpus = env_int("SLURM_CPUS_ON_NODE", 0);
    if (o->cpus_per_task && cpus && most * o->cpus_per_task > cpus) {
        fprintf(stderr,
                "srun: error: %d tasks on a node with --cpus-per-task=%d "
                "need %d CPUs; the job has %d per node\n",
                most, o->cpus_per_task, most * o->cpus_per_task, cpus);
        return -1;
    }
    if (most > STEP_TASKS_MAX) {
        fprintf(stderr, "srun: error: at most %d tasks per node\n",
                STEP_TASKS_MAX);
        return -1;
    }
    return 0;
}

/* The job's node names, split from SLURM_JOB_NODELIST (comma-separated,
 * as Shoal gives it) in *copy (the caller frees both). */
static int job_node_names(char ***names, char **copy)
{
    const char *list = getenv("SLURM_JOB_NODELIST");
    int n = 0;
    *copy = strdup(list ? list : "");
    *names = *copy ? calloc(strlen(*copy) + 2, sizeof(char *)) : NULL;
    char *save = NULL;
    for (char *t = *names ? strtok_r(*copy, ",", &save) : NULL; t;
         t = strtok_r(NULL, ",", &save))
        (*names)[n++] = t;
    return n;
}

/* srun's own settings, for every task of the step on every node. */
static char **step_env(const struct srun_opts *o, int nnodes)
{
    int n = 0;
    while (environ[n])
        n++;
    char **env = calloc((size_t)n + 4, sizeof(char *));
    int k = 0;
    for (int i = 0; env && i < n; i++) {
        if (strncmp(environ[i], "SLURM_GPUS_PER_TASK=", 20) != 0 &&
            strncmp(environ[i], "SLURM_CPUS_PER_TASK=", 20) != 0 &&
            strncmp(environ[i], "SLURM_STEP_NUM_NODES=", 21) != 0)
            env[k++] = environ[i];
    }
    if (env && o->gpus_per_task &&
        asprintf(&env[k++], "SLURM_GPUS_PER_TASK=%d", o->gpus_per_task) < 0)
        return NULL;
    if (env && o->cpus_per_task &&
        asprintf(&env[k++], "SLURM_CPUS_PER_TASK=%d", o->cpus_per_task) < 0)
        return NULL;
    if (env && asprintf(&env[k++], "SLURM_STEP_NUM_NODES=%d", nnodes) < 0)
        return NULL;
    return env;
}

/* What srun hears from the agent while its own tasks run. */
struct srun_watch {
    struct reader *r;
    bool got_exit; /* the other parts ended, with exit */
    int exit;
    bool cancelled;
};

static int srun_heard(void *arg)
{
    struct srun_watch *w = arg;
    bool timed_out;
    json_t *m = read_msg(w->r, 0, &timed_out);
    if (!m)
        return timed_out ? 0 : -1;
    int rc = 0;
    const char *op = json_string_value(json_object_get(m, "op"));
    if (op && strcmp(op, "cancel") == 0) {
        fprintf(stderr, "srun: error: a task of the step failed on another "
                        "node: killing this node's tasks "
                        "(--kill-on-bad-exit)\n");
        w->cancelled = true;
        rc = 1;
    } else if (json_is_integer(json_object_get(m, "exit"))) {
        w->got_exit = true;
        w->exit = (int)json_integer_value(json_object_get(m, "exit"));
    }
    json_decref(m);
    return rc;
}

/* A step from srun: asked of the agent, its own node's part run here,
 * the others' exit heard. srun's exit status. */
static int srun_step(const struct srun_opts *o, char **cmd, char **names,
                     int nnodes, int ntasks, char **env, struct reader *r)
{
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd)))
        return 1;
    json_t *parts = json_array();
    int base = ntasks / nnodes, extra = ntasks % nnodes, next = 0;
    for (int i = 0; i < nnodes; i++) {
        int n = base + (i < extra);
        json_array_append_new(parts,
                              json_pack("{s:s, s:i, s:i}", "node", names[i],
                                        "first", next, "ntasks", n));
        next += n;
    }
    json_t *req =
        json_pack("{s:s, s:o, s:o, s:s, s:b, s:b, s:i, s:o}", "op", "step",
                  "argv", str_array(cmd), "env", str_array(env), "cwd", cwd,
                  "label", o->label, "kill_on_bad_exit", o->kill_on_bad_exit,
                  "ntasks", ntasks, "parts", parts);
    bool timed_out;
    /* The agent may have answered (and closed) before reading the request,
     * when it turned the caller away at once: read that answer anyway. */
    bool sent = send_msg(r->fd, req) == 0;
    json_t *ans = read_msg(r, sent ? -1 : 1000, &timed_out);
    const char *error = json_string_value(json_object_get(ans, "error"));
    if (!json_is_integer(json_object_get(ans, "step"))) {
        fprintf(stderr, "srun: error: %s\n",
                error ? error : "the node's agent did not answer");
        json_decref(ans);
        return 1;
    }
    int step = (int)json_integer_value(json_object_get(ans, "step"));
    json_decref(ans);
    struct srun_watch watch = {.r = r};
    struct step_part part = {
        .argv = cmd,
        .env = env,
        .cwd = NULL,
        .step = step,
        .first = 0,
        .ntasks = base + (0 < extra),
        .node_index = 0,
        .step_tasks = ntasks,
        .step_nodes = nnodes,
        .gpus_per_task = o->gpus_per_task,
        .label = o->label,
        .kill_on_bad_exit = o->kill_on_bad_exit,
        .watch_fd = r->fd,
        .cancelled = srun_heard,
        .arg = &watch,
    };
    int code = step_part_run(&part);
    /* A task failed here under -K: the other nodes' parts end too. */
    if (code != 0 && o->kill_on_bad_exit && !watch.cancelled && nnodes > 1)
        send_msg(r->fd, json_pack("{s:s}", "op", "cancel"));
    send_msg(r->fd, json_pack("{s:s, s:i}", "op", "done", "exit", code));
    if (watch.got_exit)
        code = watch.exit > code ? watch.exit : code;
    while (nnodes > 1 && !watch.got_exit) {
        /* The other nodes' parts: their highest exit, from the agent. */
        json_t *m = read_msg(r, -1, &timed_out);
        if (!m) {
            fprintf(stderr, "srun: error: lost the node's agent before the "
                            "step's other nodes ended\n");
            return code ? code : 1;
        }
        json_t *e = json_object_get(m, "exit");
        if (json_is_integer(e)) {
            int other = (int)json_integer_value(e);
            code = other > code ? other : code;
            watch.got_exit = true;
        }
        json_decref(m);
    }
    return code > 255 ? 255 : code;
}

static int srun_main(int argc, char **argv)
{
    struct srun_opts o = {0};
    int first = srun_parse(argc, argv, &o);
    if (first < 0)
        return 1;
    char **names = NULL, *copy = NULL, **env = NULL;
    struct reader *r = NULL;
    int rc = 1, nnodes, ntasks;
    int job_nodes = job_node_names(&names, &copy);
    if (job_nodes < 1) {
        fprintf(stderr, "srun: error: SLURM_JOB_NODELIST is not set: not "
                        "inside a Shoal job\n");
        goto out;
    }
    if (srun_layout(&o, job_nodes, &nnodes, &ntasks) < 0)
        goto out;
    env = step_env(&o, nnodes);
    r = calloc(1, sizeof(*r));
    if (!env || !r || (r->fd = agent_connect("srun")) < 0)
        goto out;
    rc = srun_step(&o, argv + first, names, nnodes, ntasks, env, r);
    close(r->fd);
out:
    free(names);
    free(copy);
    for (int i = 0; env && env[i]; i++) {
        /* srun's own settings were allocated; environ's are not ours. */
        bool own = true;
        for (int k = 0; environ[k] && own; k++)
            own = environ[k] != env[i];
        if (own)
            free(env[i]);
    }
    free(env);
    free(r);
    return rc;
}

/* ---- the step server of a batch job's other nodes ---- */

/* This node's own facts, which the step's environment (srun's, from the
 * first node) must not override. */
static const char *const node_keys[] = {"CUDA_VISIBLE_DEVICES",
                                        "NVIDIA_VISIBLE_DEVICES",
                                        "SHOAL_GPU_UUIDS",
                                        "SLURM_GPUS_ON_NODE",
                                        "SHOAL_GPUS_PER_NODE",
                                        "SHOAL_NODE_RANK",
                                        "NODE_RANK",
                                        "SLURMD_NODENAME",
                                        "SHOAL_PREEMPT_DEADLINE",
                                        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                                        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
                                        "SHOAL_STEP_SOCKET",
                                        "SLURM_TOPOLOGY_ADDR",
                                        NULL};

static bool is_node_key(const char *kv)
{
    for (int i = 0; node_keys[i]; i++) {
        size_t n = strlen(node_keys[i]);
        if (strncmp(kv, node_keys[i], n) == 0 && kv[n] == '=')
            return true;
    }
    return false;
}

/* A part's runner learns of a cancel (SIGUSR1 from the server) through
 * this pipe. */
static int cancel_pipe[2] = {-1, -1};

static void on_cancel(int sig)
{
    (void)sig;
    int e = errno;
    if (write(cancel_pipe[1], "x", 1) < 0) {
        /* nothing to do: the pipe is full, a cancel is pending anyway */
    }
    errno = e;
}

static int part_cancelled(void *arg)
{
    (void)arg;
    char c;
    return read(cancel_pipe[0], &c, 1) == 1 ? 1 : 0;
}

/* Run one part in a child; its pid. */
static pid_t serve_part(const json_t *msg)
{
    const json_t *req = json_object_get(msg, "req");
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    if (pipe2(cancel_pipe, O_CLOEXEC | O_NONBLOCK) == 0)
        signal(SIGUSR1, on_cancel);
    const json_t *senv = json_object_get(req, "env");
    size_t n = json_array_size(senv);
    char **env = calloc(n + 64, sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; env && i < n; i++) {
        const char *kv = json_string_value(json_array_get(senv, i));
        if (kv && !is_node_key(kv))
            env[k++] = (char *)kv;
    }
    for (int i = 0; env && environ[i] && k < n + 63; i++) {
        if (is_node_key(environ[i]))
            env[k++] = environ[i];
    }
    char **argv = json_strv(json_object_get(req, "argv"));
    if (!env || !argv || !argv[0])
        _exit(1);
    const char *g = step_env_get(env, "SLURM_GPUS_PER_TASK");
    struct step_part part = {
        .argv = argv,
        .env = env,
        .cwd = json_string_value(json_object_get(req, "cwd")),
        .step = (int)json_integer_value(json_object_get(msg, "step")),
        .first = (int)json_integer_value(json_object_get(msg, "first")),
        .ntasks = (int)json_integer_value(json_object_get(msg, "ntasks")),
        .node_index =
            (int)json_integer_value(json_object_get(msg, "node_index")),
        .step_tasks = (int)json_integer_value(json_object_get(req, "ntasks")),
        .step_nodes = 0,
        .gpus_per_task = g ? atoi(g) : 0,
        .label = json_is_true(json_object_get(req, "label")),
        .kill_on_bad_exit =
            json_is_true(json_object_get(req, "kill_on_bad_exit")),
        .watch_fd = cancel_pipe[0],
        .cancelled = cancel_pipe[0] >= 0 ? part_cancelled : NULL,
    };
    const char *nn = step_env_get(env, "SLURM_STEP_NUM_NODES");
    part.step_nodes = nn ? atoi(nn) : 0;
    int code = step_part_run(&part);
    fflush(NULL);
    _exit(code > 255 ? 255 : code);
}

#define SERVE_PARTS_MAX 4096

static int serve_main(void)
{
    signal(SIGPIPE, SIG_IGN);
    int fd = -1;
    struct reader *r = calloc(1, sizeof(*r));
    pid_t pids[SERVE_PARTS_MAX];
    int steps[SERVE_PARTS_MAX];
    bool kbe[SERVE_PARTS_MAX]; /* --kill-on-bad-exit */
    int nparts = 0;
    json_t *started = json_object(); /* steps begun, never twice */
    for (int tries = 0; r;) {
        if (fd < 0) {
            fd = agent_connect("shoal-step --serve");
            if (fd < 0 || send_msg(fd, json_pack("{s:s}", "op", "serve")) < 0) {
                if (fd >= 0)
                    close(fd);
                fd = -1;
                /* The agent restarts: come back to it for a while. */
                if (++tries > 120)
                    break;
                sleep(1);
                continue;
            }
            tries = 0;
            r->fd = fd;
            r->len = 0;
        }
        bool timed_out;
        json_t *m = read_msg(r, 200, &timed_out);
        if (!m && !timed_out) {
            close(fd);
            fd = -1;
        }
        const char *op = json_string_value(json_object_get(m, "op"));
        if (op && strcmp(op, "run") == 0 && nparts < SERVE_PARTS_MAX) {
            char key[32];
            int step = (int)json_integer_value(json_object_get(m, "step"));
            snprintf(key, sizeof(key), "%d", step);
            if (!json_object_get(started, key)) {
                json_object_set_new(started, key, json_true());
                kbe[nparts] = json_is_true(json_object_get(
                    json_object_get(m, "req"), "kill_on_bad_exit"));
                pids[nparts] = serve_part(m);
                steps[nparts++] = step;
            }
        } else if (op && strcmp(op, "cancel") == 0) {
            int step = (int)json_integer_value(json_object_get(m, "step"));
            for (int i = 0; i < nparts; i++) {
                if (steps[i] == step && pids[i] > 0)
                    kill(pids[i], SIGUSR1);
            }
        }
        json_decref(m);
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            for (int i = 0; i < nparts; i++) {
                if (pids[i] != pid)
                    continue;
                int code = WIFEXITED(status) ? WEXITSTATUS(status)
                                             : 128 + WTERMSIG(status);
                if (fd >= 0 && code != 0 && kbe[i])
                    send_msg(fd, json_pack("{s:s, s:i}", "op", "cancel", "step",
                                           steps[i]));
                if (fd >= 0)
                    send_msg(fd, json_pack("{s:s, s:i, s:i}", "op", "exit",
                                           "step", steps[i], "exit", code));
                pids[i] = pids[--nparts];
                steps[i] = steps[nparts];
                kbe[i] = kbe[nparts];
                break;
            }
        }
    }
    json_decref(started);
    free(r);
    return 1;
}

int main(int argc, char **argv)
{
    const char *name = strrchr(argv[0], '/');
    name = name ? name + 1 : argv[0];
    if (strcmp(name, "srun") == 0)
        return srun_main(argc, argv);
    if (strcmp(name, "scontrol") == 0)
        return scontrol_main(argc, argv);
    if (argc == 2 && strcmp(argv[1], "--serve") == 0)
        return serve_main();
    if (argc >= 2 && strcmp(argv[1], "srun") == 0)
        return srun_main(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "scontrol") == 0)
        return scontrol_main(argc - 1, argv + 1);
    fprintf(stderr, "usage: srun [options] CMD ARGS... | scontrol show "
                    "hostnames [LIST] (inside a Shoal job)\n");
    return 2;
}
