/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal up`: a whole local cluster in the foreground. Starts shoald on a
 * state folder, then N agents (with simulated GPUs from libsimgpu when the
 * machine has no NVIDIA driver), writes the client config, prints the URL,
 * and stops everything on SIGINT/SIGTERM. Started again on the same state
 * folder it resumes the same cluster: same tokens, nodes, GPU UUIDs, jobs. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/cmd_opts.h"
#include "lib/model/gpu.h"
#include "lib/model/job.h"
#include "lib/util/clock.h"
#include "lib/util/file.h"

#define UP_MAX_NODES 64
/* Everything of a local cluster reaches the controller from 127.0.0.1, and
 * shoald limits the connections one address may hold: room for each agent
 * (two kept connections, one more while it registers) and for the CLIs and
 * browsers of the person running it. */
#define UP_CONNS_PER_AGENT 3
#define UP_CONNS_FOR_CLIENTS 64

static const char up_usage[] =
    "Usage: shoal up [--nodes N] [--gpus-per-node G] [--gpu-model M]\n"
    "                [--port P] [--state DIR] [--simulate]\n"
    "Start a local cluster in the foreground: the controller and N node\n"
    "agents. Without NVIDIA GPUs (or with --simulate) the agents use\n"
    "simulated GPUs. Writes the client config so `shoal` finds the cluster.\n"
    "Ctrl-C stops everything; the same --state resumes the same cluster.\n"
    "\n"
    "  --nodes N           agents to start (default 2; 0..64)\n"
    "  --gpus-per-node G   simulated GPUs per node (default 8)\n"
    "  --gpu-model M       simulated model: H100-80GB (default), A100-40GB,\n"
    "                      A100-80GB, H200-141GB, ...\n"
    "  --port P            controller port (default 6820; 0 = any free)\n"
    "  --state DIR         state folder (default ~/.local/state/shoal)\n"
    "  --simulate          simulated GPUs even where real ones exist\n"
    "\n"
    "Given to the controller as they are (see shoald --help):\n"
    "  --kill-grace DUR, --heartbeat-timeout DUR, --keep-finished DUR,\n"
    "  --idle-threshold PCT, --idle-after DUR, --idle-policy P,\n"
    "  --reslice-on-demand, --reslice-hold DUR, --debug LIST,\n"
    "  --policy default|fifo|las, --las-levels LIST, --las-quantum DUR,\n"
    "  --las-hold DUR, --las-hold-gpus N, --las-starve-factor N,\n"
    "  --las-starve-max DUR,\n"
    "  --store URL (e.g. postgresql://HOST/DB: the database is the\n"
    "  cluster's; more controllers on it make it highly available)\n";

/* Options `shoal up` hands to shoald untouched; shoald checks them and
 * `shoal up` stops with its message when one is wrong. */
static const struct option ctl_opts[] = {
    {"kill-grace", required_argument, NULL, 0},
    {"heartbeat-timeout", required_argument, NULL, 0},
    {"keep-finished", required_argument, NULL, 0},
    {"idle-threshold", required_argument, NULL, 0},
    {"idle-after", required_argument, NULL, 0},
    {"idle-policy", required_argument, NULL, 0},
    {"reslice-on-demand", no_argument, NULL, 0},
    {"reslice-hold", required_argument, NULL, 0},
    {"debug", required_argument, NULL, 0},
    {"policy", required_argument, NULL, 0},
    {"las-levels", required_argument, NULL, 0},
    {"las-quantum", required_argument, NULL, 0},
    {"las-hold", required_argument, NULL, 0},
    {"las-hold-gpus", required_argument, NULL, 0},
    {"las-starve-factor", required_argument, NULL, 0},
    {"las-starve-max", required_argument, NULL, 0},
    {"store", required_argument, NULL, 0},
};
#define UP_CTL_OPTS (int)(sizeof(ctl_opts) / sizeof(ctl_opts[0]))

struct up {
    char *ctl_args[2 * UP_CTL_OPTS * 4]; /* for shoald, in order given */
    int nctl;
    int nodes;
    int gpus;
    const char *model;
    int port;
    char state[PATH_MAX];
    bool simulate;
    char bindir[PATH_MAX];
    char shoald[PATH_MAX];
    char agent[PATH_MAX];
    char simgpu[PATH_MAX];
    pid_t ctl_pid;
    pid_t agent_pids[UP_MAX_NODES];
    char url[512];
    char self_user[256]; /* who runs shoal up */
};

static bool file_exists(const char *p)
{
    return access(p, F_OK) == 0;
}

/* Find a program or library next to this shoal, or where the build tree
 * puts it. SHOAL_BIN_DIR overrides. */
static bool find_near(const struct up *u, const char *const *rel, char *out)
{
    const char *env = getenv("SHOAL_BIN_DIR");
    for (int i = 0; rel[i]; i++) {
        if (env && *env) {
            const char *base = strrchr(rel[i], '/');
            snprintf(out, PATH_MAX, "%s/%s", env, base ? base + 1 : rel[i]);
            if (file_exists(out))
                return true;
        }
        snprintf(out, PATH_MAX, "%s/%s", u->bindir, rel[i]);
        if (file_exists(out))
            return true;
    }
    return false;
}

static void find_programs(struct up *u)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        die("cannot find the shoal program itself: %s", strerror(errno));
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    *slash = '\0';
    snprintf(u->bindir, sizeof(u->bindir), "%s", self);
    static const char *const shoald[] = {"shoald", "../shoald/shoald",
                                         "../sbin/shoald", NULL};
    static const char *const agent[] = {"shoal-agent", "../agent/shoal-agent",
                                        "../sbin/shoal-agent", NULL};
    static const char *const simgpu[] = {"libsimgpu.so",
                                         "../simgpu/libsimgpu.so",
                                         "../lib/shoal/libsimgpu.so", NULL};
    if (!find_near(u, shoald, u->shoald))
        die("cannot find shoald next to %s/shoal", u->bindir);
    if (u->nodes > 0 && !find_near(u, agent, u->agent))
        die("cannot find shoal-agent next to %s/shoal", u->bindir);
    if (u->nodes > 0 && u->simulate && !find_near(u, simgpu, u->simgpu))
        die("cannot find libsimgpu.so next to %s/shoal", u->bindir);
}

static void mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0700);
            *p = '/';
        }
    }
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
        die("cannot create %s: %s", tmp, strerror(errno));
}

/* Start a child with stderr to logfile; extra_env is NAME=VALUE or NULL. */
static pid_t spawn(char *const argv[], const char *logfile,
                   const char *extra_env)
{
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(logfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* Its own process group: Ctrl-C reaches shoal up, which then stops
         * the children in order (agents first, then the controller). */
        setpgid(0, 0);
        if (extra_env)
            putenv((char *)extra_env);
        execv(argv[0], argv);
        fprintf(stderr, "shoal up: cannot run %s: %s\n", argv[0],
                strerror(errno));
        _exit(127);
    }
    return pid;
}

static char *read_small_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[1024];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    return buf;
}

static void print_log_tail(const char *logfile)
{
    char cmd[PATH_MAX + 32];
    fprintf(stderr, "--- last lines of %s ---\n", logfile);
    snprintf(cmd, sizeof(cmd), "tail -n 15 '%s' >&2", logfile);
    if (system(cmd) != 0)
        fprintf(stderr, "(no log)\n");
}

/* Wait until the controller has written its URL and answers /v1/health. */
static void wait_controller(struct up *u, const char *logfile)
{
    char urlfile[PATH_MAX];
    snprintf(urlfile, sizeof(urlfile), "%s/controller/url", u->state);
    int64_t deadline = clock_mono_ms() + 20000;
    while (clock_mono_ms() < deadline) {
        int status;
        if (waitpid(u->ctl_pid, &status, WNOHANG) == u->ctl_pid) {
            print_log_tail(logfile);
            die("the controller stopped at start (see %s)", logfile);
        }
        const char *url = read_small_file(urlfile);
        if (url && *url) {
            snprintf(u->url, sizeof(u->url), "%s", url);
            struct sh_error err;
            struct client *c = client_create(u->url, NULL, NULL, &err);
            json_t *out = NULL;
            if (c) {
                client_set_timeout(c, 1000);
                if (client_call(c, "GET", "/v1/health", NULL, &out, NULL,
                                &err) == 0) {
                    json_decref(out);
                    client_destroy(c);
                    return;
                }
                client_destroy(c);
            }
        }
        usleep(20000);
    }
    die("the controller did not answer within 20 s (see %s)", logfile);
}

static void write_client_config(const struct up *u)
{
    char tokfile[PATH_MAX], path[PATH_MAX], dir[PATH_MAX];
    snprintf(tokfile, sizeof(tokfile), "%s/controller/admin.token", u->state);
    const char *tok = read_small_file(tokfile);
    if (!tok || !*tok)
        die("the controller wrote no admin token in %s", tokfile);
    char token[256];
    snprintf(token, sizeof(token), "%s", tok);
    client_config_path(path, sizeof(path));
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = '\0';
    mkdirs(dir);
    char text[PATH_MAX + 1024];
    int n = snprintf(text, sizeof(text),
                     "# written by `shoal up` for the cluster in %s\n"
                     "url = %s\ntoken = %s\n",
                     u->state, u->url, token);
    struct sh_error err;
    if (file_write_atomic(path, text, (size_t)n, 0600, true, &err) < 0)
        die("%s", err.msg);
}

/* A simulated GPU config for node i; kept when it exists so a resumed
 * cluster has the same GPU UUIDs. */
static void simgpu_config(const struct up *u, int i, char *path, size_t size)
{
    snprintf(path, size, "%s/node%d/simgpu.json", u->state, i + 1);
    if (file_exists(path))
        return;
    FILE *f = fopen(path, "w");
    if (!f)
        die("cannot write %s: %s", path, strerror(errno));
    fprintf(f,
            "{\"count\": %d, \"model\": \"%s\", \"uuid_prefix\": \"node%d\"}\n",
            u->gpus, u->model, i + 1);
    fclose(f);
}

static void start_agents(struct up *u)
{
    struct passwd *pw = getpwuid(getuid());
    snprintf(u->self_user, sizeof(u->self_user), "%s",
             pw ? pw->pw_name : "root");
    char jointok[PATH_MAX];
    snprintf(jointok, sizeof(jointok), "%s/controller/join.token", u->state);
    for (int i = 0; i < u->nodes; i++) {
        char name[32], dir[PATH_MAX], log[PATH_MAX], label[64], cfg[PATH_MAX];
        static char env[UP_MAX_NODES][PATH_MAX + 32];
        snprintf(name, sizeof(name), "node%d", i + 1);
        snprintf(dir, sizeof(dir), "%s/%s", u->state, name);
        snprintf(log, sizeof(log), "%s/logs/%s.log", u->state, name);
        snprintf(label, sizeof(label), "switch=sw%d", i / 4);
        mkdirs(dir);
        char *argv[24];
        int a = 0;
        static char devdir[UP_MAX_NODES][PATH_MAX + 8];
        argv[a++] = u->agent;
        argv[a++] = "--controller";
        argv[a++] = u->url;
        argv[a++] = "--join-token-file";
        argv[a++] = jointok;
        argv[a++] = "--name";
        argv[a++] = name;
        argv[a++] = "--state";
        argv[a++] = dir;
        argv[a++] = "--label";
        argv[a++] = label;
        argv[a++] = "--stop-jobs-on-exit";
        /* Who runs `shoal up` is the admin of this one-machine cluster and
         * submits as themselves, root included: allowed explicitly. */
        argv[a++] = "--allow-job-user";
        argv[a++] = u->self_user;
        const char *extra = NULL;
        if (u->simulate) {
            snprintf(devdir[i], sizeof(devdir[i]), "%s/dev", dir);
            argv[a++] = "--sim-device-dir";
            argv[a++] = devdir[i];
            simgpu_config(u, i, cfg, sizeof(cfg));
            argv[a++] = "--nvml-lib";
            argv[a++] = u->simgpu;
            snprintf(env[i], sizeof(env[i]), "SIMGPU_CONFIG=%s", cfg);
            extra = env[i];
        }
        argv[a] = NULL;
        u->agent_pids[i] = spawn(argv, log, extra);
    }
}

/* Stop children: agents first (they stop their jobs), then the
 * controller. Each gets SIGTERM, then SIGKILL after 10 s. */
static void stop_all(struct up *u)
{
    for (int phase = 0; phase < 2; phase++) {
        pid_t pids[UP_MAX_NODES + 1];
        int n = 0;
        if (phase == 0) {
            for (int i = 0; i < u->nodes; i++)
                if (u->agent_pids[i] > 0)
                    pids[n++] = u->agent_pids[i];
        } else if (u->ctl_pid > 0) {
            pids[n++] = u->ctl_pid;
        }
        for (int i = 0; i < n; i++)
            kill(pids[i], SIGTERM);
        int64_t deadline = clock_mono_ms() + 10000;
        int left = n;
        while (left > 0) {
            left = 0;
            for (int i = 0; i < n; i++) {
                if (pids[i] > 0 && waitpid(pids[i], NULL, WNOHANG) == 0)
                    left++;
                else
                    pids[i] = 0;
            }
            if (left && clock_mono_ms() > deadline) {
                for (int i = 0; i < n; i++)
                    if (pids[i] > 0)
                        kill(pids[i], SIGKILL);
                for (int i = 0; i < n; i++)
                    if (pids[i] > 0)
                        waitpid(pids[i], NULL, 0);
                break;
            }
            if (left)
                usleep(20000);
        }
    }
}

static bool nvml_present(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (h)
        dlclose(h);
    return h != NULL;
}

static void parse_up(struct up *u, int argc, char **argv)
{
    static const struct option opts[] = {
        {"nodes", required_argument, NULL, 'n'},
        {"gpus-per-node", required_argument, NULL, 'g'},
        {"gpu-model", required_argument, NULL, 'm'},
        {"port", required_argument, NULL, 'p'},
        {"state", required_argument, NULL, 's'},
        {"simulate", no_argument, NULL, 'S'},
        {NULL, 0, NULL, 0},
    };
    struct option all[16 + UP_CTL_OPTS];
    int n = 0;
    while (opts[n].name) {
        all[n] = opts[n];
        n++;
    }
    for (int i = 0; i < UP_CTL_OPTS; i++) {
        all[n] = ctl_opts[i];
        all[n++].val = 1000 + i;
    }
    all[n] = (struct option){NULL, 0, NULL, 0};
    int c;
    struct cmd_opts p;
    cmd_opts_init(&p, "up", up_usage, all, NULL, false, argc, argv);
    while ((c = cmd_opts_next(&p)) != -1) {
        switch (c) {
        case 'n':
            u->nodes = (int)cmd_parse_int("--nodes", p.arg, 0, UP_MAX_NODES);
            break;
        case 'g':
            u->gpus = (int)cmd_parse_int("--gpus-per-node", p.arg, 0,
                                         GPU_PER_NODE_MAX);
            break;
        case 'm':
            if (!job_ident_valid(p.arg))
                die("--gpu-model '%s' is not a model name such as H100-80GB",
                    p.arg);
            u->model = p.arg;
            break;
        case 'p':
            u->port = (int)cmd_parse_int("--port", p.arg, 0, 65535);
            break;
        case 's':
            if (p.arg[0] == '/') {
                snprintf(u->state, sizeof(u->state), "%s", p.arg);
            } else {
                char cwd[PATH_MAX];
                if (!getcwd(cwd, sizeof(cwd)))
                    die("getcwd: %s", strerror(errno));
                snprintf(u->state, sizeof(u->state), "%s/%s", cwd, p.arg);
            }
            break;
        case 'S':
            u->simulate = true;
            break;
        default:
            if (c >= 1000 && c < 1000 + UP_CTL_OPTS) {
                const struct option *o = &ctl_opts[c - 1000];
                if (u->nctl + 2 >=
                    (int)(sizeof(u->ctl_args) / sizeof(u->ctl_args[0])))
                    cmd_opts_fail(&p, "too many controller options");
                /* "--name", kept for the life of the command. */
                static char flag[UP_CTL_OPTS][32];
                snprintf(flag[c - 1000], sizeof(flag[0]), "--%s", o->name);
                u->ctl_args[u->nctl++] = flag[c - 1000];
                if (o->has_arg)
                    u->ctl_args[u->nctl++] = (char *)p.arg;
                break;
            }
            /* CMD_OPT_ARG */
            cmd_opts_fail(&p, "unexpected argument '%s'", p.arg);
        }
    }
}

int cmd_up(int argc, char **argv)
{
    struct up u = {.nodes = 2, .gpus = 8, .model = "H100-80GB", .port = 6820};
    const char *home = getenv("HOME");
    const char *xdg = getenv("XDG_STATE_HOME");
    if (xdg && *xdg)
        snprintf(u.state, sizeof(u.state), "%s/shoal", xdg);
    else
        snprintf(u.state, sizeof(u.state), "%s/.local/state/shoal",
                 home ? home : "/tmp");
    parse_up(&u, argc, argv);
    if (!u.simulate && u.nodes > 0 && !nvml_present())
        u.simulate = true;
    find_programs(&u);

    /* Signals arrive through sigtimedwait, never asynchronously. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);

    char ctl_dir[PATH_MAX], logdir[PATH_MAX], ctl_log[PATH_MAX], port[16],
        urlfile[PATH_MAX], conns[16];
    snprintf(ctl_dir, sizeof(ctl_dir), "%s/controller", u.state);
    snprintf(logdir, sizeof(logdir), "%s/logs", u.state);
    snprintf(ctl_log, sizeof(ctl_log), "%s/controller.log", logdir);
    snprintf(urlfile, sizeof(urlfile), "%s/url", ctl_dir);
    snprintf(port, sizeof(port), "%d", u.port);
    snprintf(conns, sizeof(conns), "%d",
             UP_CONNS_PER_AGENT * u.nodes + UP_CONNS_FOR_CLIENTS);
    mkdirs(ctl_dir);
    mkdirs(logdir);
    unlink(urlfile); /* a stale URL from the last run must not be trusted */
    char *ctl_argv[8 + sizeof(u.ctl_args) / sizeof(u.ctl_args[0])];
    int a = 0;
    ctl_argv[a++] = u.shoald;
    ctl_argv[a++] = "--state";
    ctl_argv[a++] = ctl_dir;
    ctl_argv[a++] = "--port";
    ctl_argv[a++] = port;
    ctl_argv[a++] = "--max-conns-per-address";
    ctl_argv[a++] = conns;
    for (int i = 0; i < u.nctl; i++)
        ctl_argv[a++] = u.ctl_args[i];
    ctl_argv[a] = NULL;
    u.ctl_pid = spawn(ctl_argv, ctl_log, NULL);
    wait_controller(&u, ctl_log);
    write_client_config(&u);
    start_agents(&u);

    char cfgpath[PATH_MAX];
    client_config_path(cfgpath, sizeof(cfgpath));
    printf("%s\n", u.url);
    fprintf(stderr,
            "shoal: cluster is up at %s with %d node(s)%s\n"
            "shoal: state %s, logs %s, client config %s\n"
            "shoal: try `shoal nodes` and `shoal submit --gpus 1 -- %s`; "
            "Ctrl-C stops the cluster\n",
            u.url, u.nodes,
            u.nodes == 0 ? ""
            : u.simulate ? " of simulated GPUs"
                         : " using this machine's GPUs",
            u.state, logdir, cfgpath,
            u.simulate ? "sh -c 'echo $CUDA_VISIBLE_DEVICES'"
                       : "nvidia-smi -L");
    fflush(stdout);

    int rc = 0;
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&set, &si);
        if (sig == SIGINT || sig == SIGTERM) {
            fprintf(stderr, "shoal: stopping the cluster\n");
            break;
        }
        if (sig != SIGCHLD)
            continue;
        pid_t pid;
        int status;
        bool lost = false;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            if (pid == u.ctl_pid) {
                u.ctl_pid = 0;
                print_log_tail(ctl_log);
                warn("the controller stopped unexpectedly");
                lost = true;
            }
            for (int i = 0; i < u.nodes; i++) {
                if (pid == u.agent_pids[i]) {
                    u.agent_pids[i] = 0;
                    char log[PATH_MAX];
                    snprintf(log, sizeof(log), "%s/node%d.log", logdir, i + 1);
                    print_log_tail(log);
                    warn("agent node%d stopped unexpectedly", i + 1);
                    lost = true;
                }
            }
        }
        if (lost) {
            rc = 1;
            break;
        }
    }
    stop_all(&u);
    return rc;
}
