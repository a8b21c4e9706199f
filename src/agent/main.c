/* SPDX-License-Identifier: Apache-2.0 */
/* shoal-agent: the node agent. Finds the node's GPUs (NVML through dlopen,
 * or simgpu), joins the controller, runs what it is asked to run, reports
 * heartbeats and output, and keeps its runs across its own restarts.
 * `shoal-agent --shim DIR` is the supervisor of one run (shim.c);
 * `shoal-agent --fork-server` forks those for the agent (forkserver.c). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/cgroup.h"
#include "agent/container.h"
#include "agent/forkserver.h"
#include "agent/gpu.h"
#include "agent/image.h"
#include "agent/link.h"
#include "agent/runs.h"
#include "agent/shim.h"
#include "agent/slicing.h"
#include "agent/steps.h"
#include "lib/config/config.h"
#include "lib/loop/loop.h"
#include "lib/service/service.h"
#include "lib/model/job.h"
#include "lib/util/file.h"
#include "lib/util/log.h"
#include "lib/util/parse.h"

#define TICK_MS 200

#define AGENT_CONFIG SHOAL_SYSCONFDIR "/shoal/agent.conf"

static const char usage[] =
    "Usage: shoal-agent --controller URL --state DIR [options]\n"
    "Run the Shoal node agent in the foreground.\n"
    "\n"
    "  --controller URL[,URL]  the controller (http://HOST:PORT), or every\n"
    "                          controller of a highly available cluster:\n"
    "                          the agent follows the leader\n"
    "  --join-token TOKEN      the cluster's join token (first start)\n"
    "  --join-token-file FILE  ... read from a file instead\n"
    "  --name NAME             node name (default: the host name)\n"
    "  --address ADDR          address other nodes reach this one at\n"
    "                          (default: the one that reaches the controller)\n"
    "  --state DIR             agent state: token, runs, output (required)\n"
    "  --nvml-lib PATH         NVML library (default libnvidia-ml.so.1)\n"
    "  --no-gpus               join with zero GPUs when NVML is missing\n"
    "  --label KEY=VALUE|NAME  node label, e.g. switch=sw1 or a100 "
    "(repeatable;\n"
    "                          jobs select nodes with --constraint)\n"
    "  --cpus N                CPUs offered (default: all online)\n"
    "  --mem SIZE              memory offered (default: all)\n"
    "  --reserve-cpus N        CPUs kept for the system: jobs are offered\n"
    "                          the rest (default 0)\n"
    "  --reserve-mem SIZE      memory kept for the system (default 0)\n"
    "  --max-pids N            processes and threads one job may have on\n"
    "                          this node (default 4096; 0 = no limit)\n"
    "  --heartbeat DUR         heartbeat interval (default 5s)\n"
    "  --stop-jobs-on-exit     stop this node's jobs when the agent stops\n"
    "                          (default: they keep running and are adopted by\n"
    "                          the next agent start)\n"
    "  --min-job-uid N         refuse to run jobs as Unix accounts below uid "
    "N\n"
    "                          (default 1000: root and system accounts)\n"
    "  --allow-job-user NAME   ... except this account (repeatable), e.g. the\n"
    "                          admin of a one-machine cluster who runs as "
    "root\n"
    "  --sim-device-dir DIR    simulated GPUs: make their device nodes\n"
    "                          (DIR/nvidiaN) there, so GPU device isolation\n"
    "                          can be checked without real GPUs\n"
    "  --image-cache DIR       where images are cached and unpacked\n"
    "                          (default: STATE/images)\n"
    "  --image-cache-size SIZE evict least recently used images beyond it\n"
    "                          (default 50G; 0: no limit)\n"
    "  --image-max-size SIZE   refuse an image that unpacks to more than SIZE\n"
    "                          (default 20G; 0: no limit)\n"
    "  --image-max-files N     refuse an image that unpacks to more than N\n"
    "                          files and folders (default 1000000; 0: no\n"
    "                          limit)\n"
    "  --image-tls-insecure    pull from registries over plain HTTP or\n"
    "                          without verifying their certificates\n"
    "  --debug LIST            debug logs for components (runs,link,...|all)\n"
    "  --config FILE           read options from FILE (default\n"
    "                          " AGENT_CONFIG "): `key = value`\n"
    "                          lines, each key an option's long name;\n"
    "                          options given here override the file's\n"
    "  --check-config          check the file and options, then exit\n"
    "  -h, --help              show this help\n";

static int read_token_file(const char *path, char *out, size_t size,
                           struct sh_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return sh_errorf(err, SH_EINVAL, "cannot read %s: %s", path,
                         strerror(errno));
    if (!fgets(out, (int)size, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    if (!out[0])
        return sh_errorf(err, SH_EINVAL, "%s is empty", path);
    return 0;
}

static int add_label(struct agent_config *cfg, const char *arg,
                     struct sh_error *err)
{
    /* KEY=VALUE, or a bare NAME (a feature, as Slurm's node features):
     * a label with an empty value, which --constraint NAME matches. */
    const char *eq = strchr(arg, '=');
    if (eq == arg || cfg->nlabels == NODE_LABELS_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "--label '%s' must be KEY=VALUE or NAME (at most %d "
                         "labels)",
                         arg, NODE_LABELS_MAX);
    char *key = eq ? strndup(arg, (size_t)(eq - arg)) : strdup(arg);
    if (!key || !job_ident_valid(key) || (eq && !job_ident_valid(eq + 1))) {
        free(key);
        return sh_errorf(err, SH_EINVAL,
                         "--label '%s': key and value must be names", arg);
    }
    for (int i = 0; i < cfg->nlabels; i++) {
        if (strcmp(cfg->labels[i].key, key) == 0) {
            free(key);
            return sh_errorf(err, SH_EINVAL, "--label '%s': %s is given twice",
                             arg, cfg->labels[i].key);
        }
    }
    cfg->labels[cfg->nlabels].key = key;
    cfg->labels[cfg->nlabels].value = strdup(eq ? eq + 1 : "");
    cfg->nlabels++;
    return 0;
}

/* Every option; each is also a key of the configuration file (config.h). */
static const struct option opts[] = {
    {"controller", required_argument, NULL, 'c'},
    {"join-token", required_argument, NULL, 'j'},
    {"join-token-file", required_argument, NULL, 'J'},
    {"name", required_argument, NULL, 'n'},
    {"address", required_argument, NULL, 'a'},
    {"state", required_argument, NULL, 's'},
    {"nvml-lib", required_argument, NULL, 'l'},
    {"no-gpus", no_argument, NULL, 'G'},
    {"label", required_argument, NULL, 'L'},
    {"cpus", required_argument, NULL, 'C'},
    {"mem", required_argument, NULL, 'm'},
    {"reserve-cpus", required_argument, NULL, 1001},
    {"reserve-mem", required_argument, NULL, 1002},
    {"max-pids", required_argument, NULL, 1003},
    {"heartbeat", required_argument, NULL, 'H'},
    {"stop-jobs-on-exit", no_argument, NULL, 'S'},
    {"min-job-uid", required_argument, NULL, 'U'},
    {"allow-job-user", required_argument, NULL, 'A'},
    {"sim-device-dir", required_argument, NULL, 'D'},
    {"image-cache", required_argument, NULL, 'i'},
    {"image-cache-size", required_argument, NULL, 'I'},
    {"image-tls-insecure", no_argument, NULL, 'T'},
    {"image-max-size", required_argument, NULL, 'Z'},
    {"image-max-files", required_argument, NULL, 'F'},
    {"debug", required_argument, NULL, 'd'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* ca: where each option came from, for errors. */
static int parse_args(int argc, char **argv, struct agent_config *cfg,
                      const struct config_args *ca)
{
    struct sh_error err;
    int64_t v;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            cfg->controller = optarg;
            break;
        case 'j':
            snprintf(cfg->join_token, sizeof(cfg->join_token), "%s", optarg);
            break;
        case 'J':
            if (read_token_file(optarg, cfg->join_token,
                                sizeof(cfg->join_token), &err) < 0)
                goto bad;
            break;
        case 'n':
            cfg->name = optarg;
            break;
        case 'a':
            cfg->address = optarg;
            break;
        case 's':
            cfg->state_dir = optarg;
            break;
        case 'l':
            cfg->nvml_lib = optarg;
            break;
        case 'G':
            cfg->allow_no_gpus = true;
            break;
        case 'L':
            if (add_label(cfg, optarg, &err) < 0)
                goto bad;
            break;
        case 'C':
            if (parse_int64("--cpus", optarg, 1, 100000, &v, &err) < 0)
                goto bad;
            cfg->cpus = (int)v;
            break;
        case 'm':
            if (parse_size("--mem", optarg, &cfg->mem, &err) < 0)
                goto bad;
            break;
        case 1001:
            if (parse_int64("--reserve-cpus", optarg, 0, 100000, &v, &err) < 0)
                goto bad;
            cfg->reserve_cpus = (int)v;
            break;
        case 1002:
            if (parse_size("--reserve-mem", optarg, &cfg->reserve_mem, &err) <
                0)
                goto bad;
            break;
        case 1003:
            if (parse_int64("--max-pids", optarg, 0, 4194304, &v, &err) < 0)
                goto bad;
            cfg->max_pids = v;
            break;
        case 'H':
            if (parse_duration("--heartbeat", optarg, &v, &err) < 0)
                goto bad;
            cfg->heartbeat_ms = (int)(v * 1000);
            break;
        case 'S':
            cfg->stop_jobs_on_exit = true;
            break;
        case 'U':
            if (parse_int64("--min-job-uid", optarg, 0, 4294967294LL, &v,
                            &err) < 0)
                goto bad;
            cfg->min_job_uid = (long long)v;
            break;
        case 'A':
            if (cfg->nallow_job_users == AGENT_ALLOW_USERS_MAX ||
                !job_ident_valid(optarg)) {
                sh_errorf(&err, SH_EINVAL,
                          "--allow-job-user '%s': a user name, at most %d "
                          "times",
                          optarg, AGENT_ALLOW_USERS_MAX);
                goto bad;
            }
            cfg->allow_job_users[cfg->nallow_job_users++] = optarg;
            break;
        case 'D':
            cfg->sim_device_dir = optarg;
            break;
        case 'i':
            if (optarg[0] != '/') {
                sh_errorf(&err, SH_EINVAL,
                          "--image-cache '%s' must be an absolute path",
                          optarg);
                goto bad;
            }
            cfg->image_cache_dir = optarg;
            break;
        case 'I':
            if (parse_size("--image-cache-size", optarg, &cfg->image_cache_size,
                           &err) < 0)
                goto bad;
            break;
        case 'T':
            cfg->image_tls_insecure = true;
            break;
        case 'Z':
            if (strcmp(optarg, "0") == 0)
                cfg->image_max_size = 0;
            else if (parse_size("--image-max-size", optarg,
                                &cfg->image_max_size, &err) < 0)
                goto bad;
            break;
        case 'F': {
            int64_t n;
            if (parse_int64("--image-max-files", optarg, 0, INT64_MAX, &n,
                            &err) < 0)
                goto bad;
            cfg->image_max_files = (uint64_t)n;
            break;
        }
        case 'd':
            sh_log_set_debug(optarg);
            break;
        case 'h':
            fputs(usage, stdout);
            exit(0);
        default:
            fputs(usage, stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "shoal-agent: unexpected argument '%s'\n",
                argv[optind]);
        return -1;
    }
    if (!cfg->controller || !cfg->state_dir) {
        fprintf(stderr,
                "shoal-agent: --controller and --state are required\n"
                "%s",
                usage);
        return -1;
    }
    return 0;
bad:
    fprintf(stderr, "shoal-agent: %s%s\n", config_where(ca, optind - 1),
            err.msg);
    return -1;
}

/* GPUs: NVML (or simgpu); without it, zero GPUs only when allowed. */
static int setup_gpus(struct agent *a, struct sh_error *err)
{
    a->gpu = gpu_backend_create(a->cfg.nvml_lib, err);
    if (!a->gpu) {
        if (err->code == SH_EUNAVAILABLE && a->cfg.allow_no_gpus) {
            sh_log(LOG_WARNING, "gpu", "%s; joining with no GPUs", err->msg);
            return 0;
        }
        if (err->code == SH_EUNAVAILABLE)
            sh_error_prefix(err, "%s", "");
        return sh_error_prefix(err, "GPUs: ");
    }
    if (gpu_discover(a->gpu, &a->gpus, &a->ngpus, err) < 0)
        return sh_error_prefix(err, "GPU discovery: ");
    a->mps = gpu_mps_available(NULL);
    gpu_devices_find(&a->gpu_devs, a->gpus, a->ngpus, a->cfg.sim_device_dir);
    for (int i = 0; i < a->ngpus; i++)
        sh_log(LOG_INFO, "gpu", "gpu %d: %s %s mig=%s slices=%d", i,
               a->gpus[i].model, a->gpus[i].uuid,
               a->gpus[i].mig_enabled ? "on" : "off", a->gpus[i].nslices);
    return 0;
}

/* Job cgroups live under shoal/<cluster id>/<node>: two clusters on one
 * host (or two agents of different clusters) never see each other's. */
static void setup_cgroups(struct agent *a)
{
    snprintf(a->cg_parent, sizeof(a->cg_parent), "shoal/%s/%s", a->cluster_id,
             a->cfg.name);
    struct sh_error err;
    a->cg = cgroup_ctx_create(a->cg_parent, &err);
    if (!a->cg) {
        sh_log(LOG_WARNING, "runs",
               "jobs will run without CPU and memory limits: %s", err.msg);
        return;
    }
    sh_log(LOG_INFO, "runs", "job limits through cgroup v%d under %s",
           cgroup_version(a->cg), a->cg_parent);
    if (!cgroup_has_devices(a->cg) && a->ngpus > 0)
        sh_log(LOG_WARNING, "runs",
               "GPU device isolation is not available (cgroup v%d%s): a job "
               "can open GPUs it was not given",
               cgroup_version(a->cg),
               cgroup_version(a->cg) == 1 ? " without the devices controller"
                                          : ", no eBPF device program yet");
}

static bool cluster_id_valid(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    return n > 0 && n < sizeof(((struct agent *)0)->cluster_id) &&
           strspn(id, "0123456789abcdef") == n;
}

void agent_cluster_joined(struct agent *a, const char *id)
{
    if (!cluster_id_valid(id) || strcmp(id, a->cluster_id) == 0)
        return;
    if (a->cluster_id[0]) {
        sh_log(LOG_WARNING, "main",
               "the controller's cluster id is %s, this node's state is of "
               "cluster %s: job cgroups stay under %s until a restart",
               id, a->cluster_id, a->cg_parent);
    } else {
        snprintf(a->cluster_id, sizeof(a->cluster_id), "%s", id);
        setup_cgroups(a);
    }
    char path[PATH_MAX];
    struct sh_error err;
    snprintf(path, sizeof(path), "%s/cluster.id", a->cfg.state_dir);
    if (file_write_atomic(path, id, strlen(id), 0644, true, &err) < 0)
        sh_log(LOG_WARNING, "main", "%s", err.msg);
}

static int setup_resources(struct agent *a, struct sh_error *err)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    a->cpus = a->cfg.cpus ? a->cfg.cpus : (int)(ncpu > 0 ? ncpu : 1);
    a->mem = a->cfg.mem ? a->cfg.mem
                        : (uint64_t)(pages > 0 ? pages : 0) * (uint64_t)page;
    /* What jobs may have: the node's less the system's reserve (what the
     * controller schedules and `shoal nodes` shows). */
    if (a->cfg.reserve_cpus >= a->cpus || a->cfg.reserve_mem >= a->mem) {
        char have[32];
        format_size(a->mem, have, sizeof(have));
        return sh_errorf(err, SH_EINVAL,
                         "--reserve-cpus/--reserve-mem leave nothing for jobs "
                         "(the node has %d CPUs and %s)",
                         a->cpus, have);
    }
    a->cpus -= a->cfg.reserve_cpus;
    a->mem -= a->cfg.reserve_mem;
    /* The cluster this state belongs to, when it joined one before: its
     * runs' cgroups must be found before the first registration. A new
     * node learns the id when it registers. */
    char path[PATH_MAX], id[64] = "";
    snprintf(path, sizeof(path), "%s/cluster.id", a->cfg.state_dir);
    FILE *f = fopen(path, "re");
    if (f) {
        if (!fgets(id, sizeof(id), f))
            id[0] = '\0';
        fclose(f);
        id[strcspn(id, "\n")] = '\0';
    }
    if (cluster_id_valid(id)) {
        snprintf(a->cluster_id, sizeof(a->cluster_id), "%s", id);
        setup_cgroups(a);
    }
    return 0;
}

/* ---- the loop ---- */

/* Reads the pending signals: SIGCHLD reaps, SIGINT and SIGTERM stop. */
static void read_signals(struct agent *a)
{
    struct signalfd_siginfo si;
    while (read(a->signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
            /* Shims are our children until an agent restart: reap them (their
             * exit is noticed through their pidfd). */
            while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
            continue;
        }
        sh_log(LOG_NOTICE, "main", "signal %u: stopping", si.ssi_signo);
        a->stopping = true;
    }
}

static void on_signal(struct loop *loop, int fd, uint32_t events, void *arg)
{
    struct agent *a = arg;
    (void)fd;
    (void)events;
    read_signals(a);
    if (a->stopping)
        loop_stop(loop);
}

static void on_work(struct loop *loop, int fd, uint32_t events, void *arg)
{
    struct agent *a = arg;
    (void)loop;
    (void)fd;
    (void)events;
    json_t *work = link_take_work(a->link);
    if (work) {
        work_apply(a, work);
        json_decref(work);
    }
}

static int64_t on_tick(struct loop *loop, void *arg)
{
    struct agent *a = arg;
    (void)loop;
    runs_tick(a->runs);
    return TICK_MS;
}

/* Stale copies in the image cache's incoming/ go every few minutes, not
 * only at start and a pull's end (each sweep does a bounded amount of
 * work, image.h). */
#define SWEEP_INCOMING_MS (5 * 60 * 1000)
static int64_t on_sweep(struct loop *loop, void *arg)
{
    struct agent *a = arg;
    (void)loop;
    /* Sooner while a big stale copy is removed a part at a time. */
    return image_sweep_incoming(a->image_cache) ? 10 * 1000 : SWEEP_INCOMING_MS;
}

/* WATCHDOG=1 from the event loop (WatchdogSec= of shoal-agent.service). */
static int64_t on_watchdog(struct loop *loop, void *arg)
{
    (void)loop;
    (void)arg;
    service_watchdog();
    return service_watchdog_interval_ms();
}

static int64_t on_heartbeat(struct loop *loop, void *arg)
{
    struct agent *a = arg;
    (void)loop;
    link_heartbeat_soon(a->link);
    return a->cfg.heartbeat_ms;
}

static int before_sleep(struct loop *loop, void *arg)
{
    struct agent *a = arg;
    (void)loop;
    if (link_heartbeat_due(a->link)) {
        struct sh_error err;
        if (link_heartbeat(a->link, &err) < 0)
            sh_debug("link", "heartbeat failed: %s", err.msg);
    }
    return -1;
}

/* Sleeps ms milliseconds, or less when SIGINT or SIGTERM comes: true when
 * the agent is to stop. Before the loop runs, signals come here. */
static bool sleep_or_stop(struct agent *a, int ms)
{
    struct pollfd p = {.fd = a->signal_fd, .events = POLLIN};
    if (poll(&p, 1, ms) > 0)
        read_signals(a);
    return a->stopping;
}

/* Register until it works, or fail for good on a refused join token or an
 * enrolled name this agent has no valid token for (the message says what
 * the operator does: shoal node rekey or shoal node delete). A stop signal
 * ends it (-1 with a->stopping set) between tries (a try itself lasts at
 * most the link's call timeout). */
static int first_register(struct agent *a, struct sh_error *err)
{
    int backoff = 100;
    for (;;) {
        if (sleep_or_stop(a, 0))
            return -1;
        if (link_register(a->link, err) == 0)
            return 0;
        if (err->code == SH_EUNAUTH || err->code == SH_EFORBIDDEN ||
            err->code == SH_EINVAL || err->code == SH_ECONFLICT)
            return -1;
        sh_log(LOG_WARNING, "link", "%s; retrying", err->msg);
        service_status("waiting for the controller: %s", err->msg);
        if (sleep_or_stop(a, backoff))
            return -1;
        backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
    }
}

/* From the start, SIGINT and SIGTERM are read from a signalfd: between
 * setup steps, while the agent waits for its controller, and in the loop. */
static int setup_signals(struct agent *a, struct sh_error *err)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    a->signal_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (a->signal_fd < 0)
        return sh_errorf(err, SH_EINTERNAL, "signalfd: %s", strerror(errno));
    return 0;
}

/* Hold an exclusive lock on the state folder while the agent runs: two
 * agents on one state would adopt, stop and report each other's runs. The
 * descriptor is close-on-exec, so shims that outlive the agent do not keep
 * the next agent out. */
static int lock_state(struct agent *a, struct sh_error *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/agent.lock", a->cfg.state_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot open %s: %s", path,
                         strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        close(fd);
        return sh_errorf(err, SH_ECONFLICT,
                         "another shoal-agent is running on %s",
                         a->cfg.state_dir);
    }
    return fd; /* kept open until exit */
}

static int setup_loop(struct agent *a, struct sh_error *err)
{
    if (loop_add_fd(a->loop, a->signal_fd, EPOLLIN, on_signal, a, err) < 0 ||
        loop_add_fd(a->loop, link_work_fd(a->link), EPOLLIN, on_work, a, err) <
            0)
        return -1;
    loop_add_timer(a->loop, TICK_MS, on_tick, a);
    loop_add_timer(a->loop, a->cfg.heartbeat_ms, on_heartbeat, a);
    loop_add_timer(a->loop, SWEEP_INCOMING_MS, on_sweep, a);
    if (service_watchdog_interval_ms() > 0)
        loop_add_timer(a->loop, service_watchdog_interval_ms(), on_watchdog, a);
    loop_set_before_sleep(a->loop, before_sleep, a);
    return 0;
}

/* srun and scontrol inside jobs: shoal-step, next to this program. A node
 * without it runs batch jobs without steps (logged). */
static void setup_steps(struct agent *a)
{
    char bin[PATH_MAX];
    const char *slash = strrchr(a->cfg.self_exe, '/');
    int dir = slash ? (int)(slash - a->cfg.self_exe) : 0;
    snprintf(bin, sizeof(bin), "%.*s/shoal-step", dir, a->cfg.self_exe);
    struct sh_error err;
    if (access(bin, X_OK) < 0) {
        sh_log(LOG_WARNING, "steps",
               "%s is missing: jobs get no srun or scontrol", bin);
        return;
    }
    a->steps = steps_create(a, bin, &err);
    if (!a->steps)
        sh_log(LOG_WARNING, "steps", "jobs get no srun or scontrol: %s",
               err.msg);
}

static int run_agent(struct agent *a, struct sh_error *err)
{
    if (mkdir(a->cfg.state_dir, 0711) < 0 && errno != EEXIST)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot create %s: %s",
                         a->cfg.state_dir, strerror(errno));
    if (lock_state(a, err) < 0)
        return -1;
    /* Jobs' users must reach their run folders below it. */
    chmod(a->cfg.state_dir, 0711);
    snprintf(a->image_cache, sizeof(a->image_cache), "%s",
             a->cfg.image_cache_dir ? a->cfg.image_cache_dir : "");
    if (!a->cfg.image_cache_dir)
        snprintf(a->image_cache, sizeof(a->image_cache), "%s/images",
                 a->cfg.state_dir);
    image_sweep_auth(a->image_cache);
    image_sweep_incoming(a->image_cache);
    a->loop = loop_create(err);
    if (!a->loop || setup_gpus(a, err) < 0)
        return -1;
    /* What a container of a GPU job gets bound in (container.h). */
    a->container_libs = container_driver_libs(a->gpu ? a->cfg.nvml_lib : NULL);
    if (setup_resources(a, err) < 0)
        return -1;
    a->link = link_create(a, err);
    if (!a->link)
        return -1;
    slicing_restore(a);
    a->runs = runs_create(a, err);
    if (!a->runs || setup_loop(a, err) < 0)
        return -1;
    setup_steps(a);
    if (first_register(a, err) < 0)
        return a->stopping ? 0 : -1; /* a stop signal is no failure */
    if (link_start_poll(a->link, err) < 0)
        return -1;
    char status[200];
    snprintf(status, sizeof(status), "node %s joined %s", a->cfg.name,
             a->cfg.controller);
    service_ready(status);
    return loop_run(a->loop, err);
}

static void teardown(struct agent *a)
{
    service_stopping();
    if (a->runs && a->cfg.stop_jobs_on_exit) {
        runs_stop_all(a->runs, 10000);
        struct sh_error err;
        if (a->link)
            link_heartbeat(a->link, &err); /* report the ends, best effort */
    }
    link_destroy(a->link);
    steps_destroy(a->steps);
    runs_destroy(a->runs);
    cgroup_ctx_destroy(a->cg);
    free(a->gpus);
    json_decref(a->slice_errors);
    json_decref(a->container_libs);
    gpu_backend_destroy(a->gpu);
    loop_destroy(a->loop);
}

int main(int argc, char **argv)
{
    /* The shim ends with _exit: it leaves nothing in stdio buffers and has
     * no atexit work, so exit()'s teardown would be spent per job. */
    if (argc == 3 && strcmp(argv[1], "--shim") == 0)
        _exit(shim_main(argv[2]));
    if (argc == 3 && strcmp(argv[1], "--fork-server") == 0)
        return forkserver_main(argv[2]);
    struct agent a;
    struct sh_error err;
    memset(&a, 0, sizeof(a));
    a.signal_fd = -1;
    sh_log_init("shoal-agent");
    a.cfg.heartbeat_ms = 5000;
    a.cfg.max_pids = 4096;
    a.cfg.min_job_uid = 1000;
    a.cfg.image_cache_size = 50ULL << 30;
    a.cfg.image_max_size = 20ULL << 30;
    a.cfg.image_max_files = 1000000;
    struct config_args ca;
    if (config_load(AGENT_CONFIG, opts, argc, argv, &ca, &err) < 0) {
        fprintf(stderr, "shoal-agent: %s\n", err.msg);
        return 2;
    }
    int rc = 2;
    if (parse_args(ca.argc, ca.argv, &a.cfg, &ca) < 0)
        goto out;
    char host[256];
    if (!a.cfg.name) {
        if (gethostname(host, sizeof(host)) < 0)
            snprintf(host, sizeof(host), "node");
        host[strcspn(host, ".")] = '\0';
        a.cfg.name = host;
    }
    if (!job_ident_valid(a.cfg.name)) {
        fprintf(stderr, "shoal-agent: node name '%s' is not valid\n",
                a.cfg.name);
        goto out;
    }
    if (ca.check_only) {
        printf("shoal-agent: configuration %s%s is valid\n",
               ca.path ? "in " : "(options only)", ca.path ? ca.path : "");
        rc = 0;
        goto out;
    }
    ssize_t n =
        readlink("/proc/self/exe", a.cfg.self_exe, sizeof(a.cfg.self_exe) - 1);
    if (n <= 0) {
        fprintf(stderr, "shoal-agent: cannot find itself: %s\n",
                strerror(errno));
        rc = 1;
        goto out;
    }
    a.cfg.self_exe[n] = '\0';
    rc = 0;
    if (service_managed() && !service_supported())
        sh_log(LOG_WARNING, "main",
               "started by a service manager, but built without libsystemd: "
               "it is not told when this agent is ready");
    if (setup_signals(&a, &err) < 0 || run_agent(&a, &err) < 0) {
        sh_log(LOG_ERR, "main", "%s", err.msg);
        rc = 1;
    }
    teardown(&a);
out:
    for (int i = 0; i < a.cfg.nlabels; i++) {
        free(a.cfg.labels[i].key);
        free(a.cfg.labels[i].value);
    }
    config_args_free(&ca);
    return rc;
}
