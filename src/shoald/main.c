/* SPDX-License-Identifier: Apache-2.0 */
/* shoald: the Shoal controller. Parses options, opens the state folder and
 * the store, initialises a new cluster when the store is empty, and runs
 * the event loop until SIGINT or SIGTERM. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/config/config.h"
#include "lib/loop/loop.h"
#include "lib/service/service.h"
#include "lib/util/log.h"
#include "lib/util/parse.h"
#include "sched/sched.h"
#include "shoald/acct.h"
#include "shoald/api.h"
#include "shoald/api_handlers.h"
#include "shoald/auth.h"
#include "shoald/engine.h"
#include "shoald/commit.h"
#include "shoald/ha.h"
#include "shoald/jobtab.h"
#include "shoald/logs.h"
#include "shoald/nodes.h"
#include "shoald/nodetab.h"
#include "shoald/retention.h"
#include "shoald/slices.h"
#include "shoald/state.h"
#include "shoald/tenancy.h"
#include "shoald/shoald_setup.h"
#include "store/store.h"

#define SHOALD_CONFIG SHOAL_SYSCONFDIR "/shoal/shoald.conf"

static const char usage[] =
    "Usage: shoald --state DIR [options]\n"
    "Run the Shoal controller in the foreground.\n"
    "\n"
    "  --state DIR            state folder: database, tokens, URL (required)\n"
    "  --listen ADDR          address to listen on (default 127.0.0.1)\n"
    "  --port N               port (default 6820; 0 = any free port)\n"
    "  --store URL            database (default sqlite:DIR/shoal.db), or\n"
    "                         postgresql://...: several shoald on one\n"
    "                         PostgreSQL database are highly available\n"
    "                         (one leads, the others follow and take over)\n"
    "  --advertise-url URL    the URL other controllers send clients to\n"
    "                         while this one leads (default: the listen "
    "URL)\n"
    "  --leader-lease DUR     with several controllers: a leader that renews\n"
    "                         nothing this long is taken over (default 10s)\n"
    "  --admin-user NAME      first cluster admin of a new cluster\n"
    "                         (default: the user running shoald)\n"
    "  --tls-cert FILE        serve HTTPS with this PEM certificate...\n"
    "  --tls-key FILE         ...and this PEM key\n"
    "  --max-body SIZE        largest request body (default 1M)\n"
    "  --max-conns-per-address N  connections one IP address may hold open\n"
    "                         (default 64; 0 = no limit). A client over it is\n"
    "                         refused, so one address cannot take all 4096.\n"
    "                         Clients sharing an address share the limit: "
    "each\n"
    "                         agent holds 2, a CLI call 1, a browser up to 6;\n"
    "                         raise it for many agents on one host or behind\n"
    "                         one NAT (`shoal up` sets it for its agents)\n"
    "  --max-pending-per-user N  pending jobs one user may have (array\n"
    "                         tasks count one each; default 10000; 0 = no\n"
    "                         limit); shoal user set-limits --max-pending\n"
    "                         sets one user's own\n"
    "  --request-timeout DUR  close a connection that stays silent this long\n"
    "                         before it has sent a whole request (default "
    "10s)\n"
    "  --keepalive-timeout DUR  ...or, after a request with a valid token,\n"
    "                         between requests (default 2m)\n"
    "  --request-deadline DUR  the whole time a request may take to arrive\n"
    "                         after its request line, however it trickles\n"
    "                         (a request line within the silence allowed\n"
    "                         plus this; an answer must be read within 4x\n"
    "                         this; default 30s; 0 = none)\n"
    "  --heartbeat-timeout DUR  a node is down after this silence (default "
    "30s)\n"
    "  --kill-grace DUR       SIGTERM to SIGKILL when a job is stopped: "
    "cancel,\n"
    "                         preemption, time limit (default 10s)\n"
    "  --mail-program PATH    run for jobs' --mail-type events as PATH\n"
    "                         JOB_ID USER EVENT MAIL_USER STATE (without it,\n"
    "                         jobs asking for mail are refused)\n"
    "  --keep-finished DUR    finished jobs stay in memory (default 7d)\n"
    "  --keep-output DUR      remove an ended job's output this long after\n"
    "                         its last write (default 0: keep it)\n"
    "  --keep-output-size SIZE  ...and the oldest ended jobs' output while\n"
    "                         all output is over SIZE (default 0: no cap)\n"
    "  --keep-history DUR     remove jobs from the store (history, usage)\n"
    "                         this long after they ended (default 0: keep;\n"
    "                         at least --keep-finished)\n"
    "  --retention-interval DUR  between two retention passes (10m)\n"
    "  --idle-threshold PCT   GPUs under this utilization are idle (5)\n"
    "  --idle-after DUR       ...after this long (default 30m)\n"
    "  --idle-policy P        default for projects: none, warn, cancel,\n"
    "                         preempt (default warn)\n"
    "  --reslice-on-demand    re-slice idle GPUs to the preset waiting jobs\n"
    "                         need (and back to whole GPUs)\n"
    "  --reslice-hold DUR     leave a re-sliced GPU alone this long (1m)\n"
    "  --policy NAME          queue order: default (priority, fair share,\n"
    "                         small jobs first; checkpointable jobs by\n"
    "                         LAS levels), fifo (submit order, nothing\n"
    "                         passes the first job) or las (least attained\n"
    "                         GPU time first, preempting checkpointable jobs)\n"
    "  The --las-* options apply to las (every job) and to default (the\n"
    "  checkpointable jobs); fifo refuses them:\n"
    "  --las-levels LIST      GPU-time thresholds of the levels\n"
    "                         (default 1h,10h)\n"
    "  --las-quantum DUR      a job runs this long before it may be\n"
    "                         preempted for a lower level (default 10m)\n"
    "  --las-starve-factor N, --las-starve-max DUR\n"
    "                         a waiting job is back at level 0 after N x\n"
    "                         its run time so far or DUR, whichever is\n"
    "                         less (default 4 and 2d; N 0: DUR alone)\n"
    "  --las-hold DUR, --las-hold-gpus N\n"
    "                         a job of N GPUs or more that has waited DUR\n"
    "                         when it starts is not preempted for half of\n"
    "                         its wait (default 14d and 8; 0s = off)\n"
    "  Host CPUs and memory of a job that asks none (per node):\n"
    "  --default-cpus-per-gpu N, --default-mem-per-gpu SIZE\n"
    "                         per GPU it asks (default: the least a node\n"
    "                         has per GPU, its CPUs or memory / its GPUs;\n"
    "                         no CPUs where a node has fewer CPUs than GPUs)\n"
    "  --default-cpus N, --default-mem-per-cpu SIZE\n"
    "                         a job without GPUs: N CPUs (default none)\n"
    "                         and SIZE per CPU (default: the least a node\n"
    "                         has per CPU, or per GPU if it has more GPUs)\n"
    "  --debug LIST           debug logs for components (api,jobs,...|all)\n"
    "  --config FILE          read options from FILE (default\n"
    "                         " SHOALD_CONFIG "): `key = value`\n"
    "                         lines, each key an option's long name;\n"
    "                         options given here override the file's\n"
    "  --check-config         check the file and options, then exit\n"
    "  -h, --help             show this help\n"
    "\n"
    "On start it writes DIR/url; a new cluster also gets DIR/admin.token and\n"
    "DIR/join.token (mode 0600).\n";

/* A connection timeout: a duration of at most a day. */
static int parse_timeout(const char *field, const char *s, int *seconds,
                         struct sh_error *err)
{
    int64_t v;
    if (parse_duration(field, s, &v, err) < 0)
        return -1;
    if (v > 24 * 3600)
        return sh_errorf(err, SH_EINVAL, "%s must be at most 1d", field);
    *seconds = (int)v;
    return 0;
}

/* Every option; each is also a key of the configuration file (config.h). */
static const struct option opts[] = {
    {"state", required_argument, NULL, 's'},
    {"listen", required_argument, NULL, 'l'},
    {"port", required_argument, NULL, 'p'},
    {"store", required_argument, NULL, 'S'},
    {"advertise-url", required_argument, NULL, 'U'},
    {"admin-user", required_argument, NULL, 'a'},
    {"tls-cert", required_argument, NULL, 'c'},
    {"tls-key", required_argument, NULL, 'k'},
    {"max-body", required_argument, NULL, 'b'},
    {"max-conns-per-address", required_argument, NULL, 'C'},
    {"request-timeout", required_argument, NULL, 'T'},
    {"keepalive-timeout", required_argument, NULL, 'E'},
    {"heartbeat-timeout", required_argument, NULL, 't'},
    {"kill-grace", required_argument, NULL, 'g'},
    {"keep-finished", required_argument, NULL, 'K'},
    {"keep-output", required_argument, NULL, 1201},
    {"keep-output-size", required_argument, NULL, 1202},
    {"keep-history", required_argument, NULL, 1203},
    {"retention-interval", required_argument, NULL, 1204},
    {"max-pending-per-user", required_argument, NULL, 1101},
    {"request-deadline", required_argument, NULL, 1102},
    {"mail-program", required_argument, NULL, 1005},
    {"idle-threshold", required_argument, NULL, 'I'},
    {"idle-after", required_argument, NULL, 'A'},
    {"idle-policy", required_argument, NULL, 'P'},
    {"reslice-on-demand", no_argument, NULL, 'R'},
    {"reslice-hold", required_argument, NULL, 'r'},
    {"policy", required_argument, NULL, 'Y'},
    {"las-levels", required_argument, NULL, 'L'},
    {"las-quantum", required_argument, NULL, 'Q'},
    {"las-hold", required_argument, NULL, 1001},
    {"las-starve-factor", required_argument, NULL, 1002},
    {"las-starve-max", required_argument, NULL, 1003},
    {"las-hold-gpus", required_argument, NULL, 1004},
    {"leader-lease", required_argument, NULL, 1010},
    {"default-cpus-per-gpu", required_argument, NULL, 1011},
    {"default-mem-per-gpu", required_argument, NULL, 1012},
    {"default-cpus", required_argument, NULL, 1013},
    {"default-mem-per-cpu", required_argument, NULL, 1014},
    {"debug", required_argument, NULL, 'd'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* ca: where each option came from, for errors. */
static int parse_args(int argc, char **argv, struct shoald_config *cfg,
                      const struct config_args *ca)
{
    struct sh_error err;
    int64_t v;
    uint64_t size;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            cfg->state_dir = optarg;
            break;
        case 'l':
            cfg->listen_addr = optarg;
            break;
        case 'p':
            if (parse_int64("--port", optarg, 0, 65535, &v, &err) < 0)
                goto bad;
            cfg->port = (int)v;
            break;
        case 'S':
            cfg->store_url = optarg;
            break;
        case 'U':
            if (strncmp(optarg, "http://", 7) != 0 &&
                strncmp(optarg, "https://", 8) != 0) {
                sh_errorf(&err, SH_EINVAL,
                          "--advertise-url must start with http:// or "
                          "https://");
                goto bad;
            }
            if (strlen(optarg) >= 500 || strchr(optarg, ',')) {
                sh_errorf(&err, SH_EINVAL,
                          "--advertise-url must be one URL of at most 499 "
                          "bytes");
                goto bad;
            }
            cfg->advertise_url = optarg;
            break;
        case 'a':
            cfg->admin_user = optarg;
            break;
        case 'c':
            cfg->tls_cert = optarg;
            break;
        case 'k':
            cfg->tls_key = optarg;
            break;
        case 'b':
            if (parse_size("--max-body", optarg, &size, &err) < 0)
                goto bad;
            cfg->max_body = (size_t)size;
            break;
        case 'C':
            if (parse_int64("--max-conns-per-address", optarg, 0, 4096, &v,
                            &err) < 0)
                goto bad;
            cfg->max_conns_per_address = (int)v;
            break;
        case 1101:
            if (parse_int64("--max-pending-per-user", optarg, 0, 10000000, &v,
                            &err) < 0)
                goto bad;
            cfg->max_pending_per_user = (int)v;
            break;
        case 'T':
            if (parse_timeout("--request-timeout", optarg,
                              &cfg->request_timeout_s, &err) < 0)
                goto bad;
            break;
        case 1102:
            if (parse_duration("--request-deadline", optarg, &v, &err) < 0)
                goto bad;
            if (v > 3600) {
                sh_errorf(&err, SH_EINVAL,
                          "--request-deadline must be at most 1h, not %s",
                          optarg);
                goto bad;
            }
            cfg->request_deadline_s = (int)v;
            break;
        case 'E':
            if (parse_timeout("--keepalive-timeout", optarg,
                              &cfg->keepalive_timeout_s, &err) < 0)
                goto bad;
            break;
        case 't':
            if (parse_duration("--heartbeat-timeout", optarg, &v, &err) < 0)
                goto bad;
            cfg->heartbeat_timeout_s = (int)v;
            break;
        case 'g':
            if (parse_duration("--kill-grace", optarg, &v, &err) < 0)
                goto bad;
            cfg->kill_grace_s = (int)v;
            break;
        case 1005:
            if (optarg[0] != '/' || access(optarg, X_OK) != 0) {
                sh_errorf(&err, SH_EINVAL,
                          "--mail-program: '%s' is not an absolute path to "
                          "a program this user may run",
                          optarg);
                goto bad;
            }
            cfg->mail_program = optarg;
            break;
        case 'K':
            if (parse_duration("--keep-finished", optarg, &v, &err) < 0)
                goto bad;
            cfg->keep_finished_ms = v * 1000;
            break;
        case 'I':
            if (parse_int64("--idle-threshold", optarg, 0, 100, &v, &err) < 0)
                goto bad;
            cfg->idle_threshold_pct = (int)v;
            break;
        case 'A':
            if (parse_duration("--idle-after", optarg, &v, &err) < 0)
                goto bad;
            cfg->idle_after_ms = v * 1000;
            break;
        case 'P': {
            enum acct_idle_policy p;
            if (acct_idle_policy_from_name(optarg, &p) < 0) {
                sh_errorf(&err, SH_EINVAL,
                          "--idle-policy must be none, warn, cancel or "
                          "preempt");
                goto bad;
            }
            cfg->idle_policy = (int)p;
            break;
        }
        case 'R':
            cfg->reslice_on_demand = true;
            break;
        case 'r':
            if (parse_duration("--reslice-hold", optarg, &v, &err) < 0)
                goto bad;
            cfg->reslice_hold_ms = v * 1000;
            break;
        case 'd':
            sh_log_set_debug(optarg);
            break;
        case 'Y': {
            enum sched_policy p;
            if (sched_policy_from_name(optarg, &p, &err) < 0) {
                sh_errorf(&err, SH_EINVAL,
                          "--policy must be default, fifo or las, not '%s'",
                          optarg);
                goto bad;
            }
            cfg->policy = (int)p;
            break;
        }
        case 'L': {
            struct sched_config sc;
            sched_config_init(&sc);
            if (sched_las_levels_parse(optarg, &sc, &err) < 0) {
                sh_error_prefix(&err, "--las-levels: ");
                goto bad;
            }
            cfg->las_levels = optarg;
            break;
        }
        case 'Q':
            if (parse_duration("--las-quantum", optarg, &v, &err) < 0)
                goto bad;
            cfg->las_quantum_ms = v * 1000;
            break;
        case 1001: /* --las-hold */
        case 1003: /* --las-starve-max */
            if (parse_duration(c == 1001 ? "--las-hold" : "--las-starve-max",
                               optarg, &v, &err) < 0)
                goto bad;
            if (v > 365 * 86400 || (c == 1003 && v == 0)) {
                fprintf(stderr, "shoald: %s must be %s365d\n",
                        c == 1001 ? "--las-hold" : "--las-starve-max",
                        c == 1001 ? "0s.." : "1s..");
                return -1;
            }
            *(c == 1001 ? &cfg->las_hold_ms : &cfg->las_starve_max_ms) =
                v * 1000;
            break;
        case 1002:
            if (parse_int64("--las-starve-factor", optarg, 0, 1000, &v, &err) <
                0)
                goto bad;
            cfg->las_starve_factor = v;
            break;
        case 1004:
            if (parse_int64("--las-hold-gpus", optarg, 1, 65536, &v, &err) < 0)
                goto bad;
            cfg->las_hold_gpus = v;
            break;
        case 1010:
            if (parse_duration("--leader-lease", optarg, &v, &err) < 0)
                goto bad;
            if (v < 2 || v > 3600) {
                sh_errorf(&err, SH_EINVAL,
                          "--leader-lease must be 2s..1h (a leader renews "
                          "it every second)");
                goto bad;
            }
            cfg->leader_lease_ms = v * 1000;
            break;
        case 1011:
            if (parse_int64("--default-cpus-per-gpu", optarg, 1, 1024, &v,
                            &err) < 0)
                goto bad;
            cfg->default_cpus_per_gpu = (int)v;
            break;
        case 1012:
            if (parse_size("--default-mem-per-gpu", optarg,
                           &cfg->default_mem_per_gpu, &err) < 0)
                goto bad;
            break;
        case 1013:
            if (parse_int64("--default-cpus", optarg, 1, 1024, &v, &err) < 0)
                goto bad;
            cfg->default_cpus = (int)v;
            break;
        case 1014:
            if (parse_size("--default-mem-per-cpu", optarg,
                           &cfg->default_mem_per_cpu, &err) < 0)
                goto bad;
            break;
        case 1201: /* --keep-output */
        case 1203: /* --keep-history */
        case 1204: /* --retention-interval */
            if (parse_duration(c == 1201   ? "--keep-output"
                               : c == 1203 ? "--keep-history"
                                           : "--retention-interval",
                               optarg, &v, &err) < 0)
                goto bad;
            if (c == 1204 && v == 0) {
                sh_errorf(&err, SH_EINVAL,
                          "--retention-interval must be at least 1s");
                goto bad;
            }
            *(c == 1201   ? &cfg->keep_output_ms
              : c == 1203 ? &cfg->keep_history_ms
                          : &cfg->retention_interval_ms) = v * 1000;
            break;
        case 1202:
            if (strcmp(optarg, "0") == 0)
                cfg->keep_output_size = 0;
            else if (parse_size("--keep-output-size", optarg,
                                &cfg->keep_output_size, &err) < 0)
                goto bad;
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
        fprintf(stderr, "shoald: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (!cfg->state_dir) {
        fprintf(stderr, "shoald: --state DIR is required\n%s", usage);
        return -1;
    }
    if (cfg->keep_history_ms > 0 &&
        cfg->keep_history_ms < cfg->keep_finished_ms) {
        fprintf(stderr, "shoald: --keep-history must be at least "
                        "--keep-finished (default 7d): jobs in memory "
                        "keep their record\n");
        return -1;
    }
    if ((cfg->las_levels || cfg->las_quantum_ms >= 0 || cfg->las_hold_ms >= 0 ||
         cfg->las_starve_factor >= 0 || cfg->las_starve_max_ms >= 0 ||
         cfg->las_hold_gpus >= 0) &&
        cfg->policy == SCHED_POLICY_FIFO) {
        /* The default policy uses them for checkpointable jobs. */
        fprintf(stderr, "shoald: --las-levels, --las-quantum, --las-hold* "
                        "and --las-starve-* need --policy las or default\n");
        return -1;
    }
    return 0;
bad:
    fprintf(stderr, "shoald: %s%s\n", config_where(ca, optind - 1), err.msg);
    return -1;
}

static void on_signal(struct loop *loop, int fd, uint32_t events, void *arg)
{
    struct shoald *d = arg;
    struct signalfd_siginfo si;
    (void)events;
    if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        sh_log(LOG_NOTICE, "main", "signal %u: stopping", si.ssi_signo);
        d->stopping = true;
        loop_stop(loop);
    }
}

static int before_sleep(struct loop *loop, void *arg)
{
    struct shoald *d = arg;
    struct sh_error err;
    (void)loop;
    bool pass_skipped = false;
    if (ha_serving(d)) {
        /* What is queued so far (submissions, the agents' reports) goes
         * out, and its answers with it, before the scheduling pass: the
         * starts the pass decides go into the next commit, and a submitter
         * does not wait for the start of its job. When that commit failed
         * (memory was reloaded, or could not be) or deposed this
         * controller, no pass runs on this memory now: the next iteration
         * decides. */
        if (commit_pending(d->commit) && cluster_pass_due(d)) {
            /* failures: logged, answered */
            pass_skipped = commit_start(d->commit, &err) < 0;
            api_before_sleep(d->api);
        }
        if (!pass_skipped && ha_serving(d))
            cluster_before_sleep(d);
    }
    commit_start(d->commit, &err); /* failures are logged and answered */
    int timeout = api_before_sleep(d->api);
    /* Running MHD may have accepted new changes (a kept-alive client sends
     * its next request at once): flush them before sleeping. A pass left
     * for later runs at once. */
    if (commit_pending(d->commit) || (pass_skipped && ha_serving(d)))
        return 0;
    return timeout;
}

/* Hold an exclusive lock on the state folder for the life of the process:
 * two controllers on one state would corrupt each other. */
static int lock_state(const char *dir, struct sh_error *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/shoald.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot open %s: %s", path,
                         strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        close(fd);
        return sh_errorf(err, SH_ECONFLICT, "another shoald is running on %s",
                         dir);
    }
    return fd; /* kept open until exit */
}

/* The URL clients and agents reach this controller at, for DIR/url and the
 * logs: --advertise-url when given; on a wildcard listen address (0.0.0.0,
 * ::) the host's name, since the wildcard reaches nothing; else the listen
 * address (an IPv6 one in brackets). */
static void reachable_url(struct shoald *d, char *out, size_t size)
{
    const char *scheme = d->cfg.tls_cert ? "https" : "http";
    const char *addr = d->cfg.listen_addr;
    char host[256];
    if (d->cfg.advertise_url) {
        snprintf(out, size, "%s", d->cfg.advertise_url);
        return;
    }
    if (strcmp(addr, "0.0.0.0") == 0 || strcmp(addr, "::") == 0 ||
        strcmp(addr, "[::]") == 0 || !addr[0]) {
        if (gethostname(host, sizeof(host)) < 0 || !host[0])
            snprintf(host, sizeof(host), "localhost");
        host[sizeof(host) - 1] = '\0';
        addr = host;
    }
    bool bracket = strchr(addr, ':') && addr[0] != '[';
    snprintf(out, size, "%s://%s%s%s:%d", scheme, bracket ? "[" : "", addr,
             bracket ? "]" : "", api_port(d->api));
}

/* Everything but the cluster's state, which only the leader loads
 * (ha_start). */
static int setup(struct shoald *d, char *store_url, size_t url_size,
                 struct sh_error *err)
{
    if (mkdir(d->cfg.state_dir, 0700) < 0 && errno != EEXIST)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot create %s: %s",
                         d->cfg.state_dir, strerror(errno));
    /* It holds the store, tokens and job output: owner only, even when
     * made by someone else's mkdir (a looser one is tightened). */
    struct stat st;
    if (stat(d->cfg.state_dir, &st) == 0 && st.st_uid == geteuid() &&
        (st.st_mode & 077)) {
        if (chmod(d->cfg.state_dir, 0700) < 0)
            return sh_errorf(err, SH_EUNAVAILABLE, "cannot chmod %s: %s",
                             d->cfg.state_dir, strerror(errno));
        sh_log(LOG_NOTICE, "main", "state folder %s made 0700 (was %04o)",
               d->cfg.state_dir, (unsigned)(st.st_mode & 07777));
    }
    if (lock_state(d->cfg.state_dir, err) < 0)
        return -1;
    if (!d->cfg.store_url) {
        snprintf(store_url, url_size, "sqlite:%s/shoal.db", d->cfg.state_dir);
        d->cfg.store_url = store_url;
    }
    if (shoald_create(d, err) < 0)
        return -1;
    d->api = api_create(d, api_routes, err);
    if (!d->api)
        return -1;
    reachable_url(d, d->url, sizeof(d->url));
    char line[320];
    snprintf(line, sizeof(line), "%s\n", d->url);
    return state_write_file(d->cfg.state_dir, "url", line, 0644, err);
}

/* shoald_cron: the controller's periodic duties, every SHOALD_CRON_MS while
 * it leads and serves (a leader that lost its database session waits,
 * ha.c: agents cannot reach it meanwhile, and nothing may be decided):
 *   1. nodes without a heartbeat for --heartbeat-timeout go down, their
 *      running jobs end as node_fail          (nodes_check_heartbeats)
 *   2. held agent work polls whose wait is over are answered
 *                                             (api_agent_expire_polls)
 *   3. idle GPUs are re-sliced for waiting jobs (slices_reslice_tick)
 *   4. finished jobs leave memory after --keep-finished, once a minute
 *                                             (cluster_tick)
 *   5. a scheduling pass is asked for when the engine's full pass is due
 *      or a gated job's --begin came          (cluster_tick)
 *   6. ended jobs' output and history past --keep-output(-size) and
 *      --keep-history are removed, every --retention-interval
 *                                             (retention_tick)
 * Other timers are their modules' own: ha.c's leadership tick, logs.c's
 * expiry of held log reads. */
#define SHOALD_CRON_MS 500

static int64_t shoald_cron(struct loop *loop, void *arg)
{
    struct shoald *d = arg;
    (void)loop;
    if (!d->cluster || !ha_serving(d))
        return SHOALD_CRON_MS;
    int64_t now = shoald_now_ms(d);
    nodes_check_heartbeats(d, now);
    api_agent_expire_polls(d, false);
    slices_reslice_tick(d);
    cluster_tick(d, now);
    retention_tick(d, now);
    return SHOALD_CRON_MS;
}

/* WATCHDOG=1 from the event loop: a controller stuck in a pass or a
 * commit misses it and systemd restarts it (WatchdogSec=). */
static int64_t on_watchdog(struct loop *loop, void *arg)
{
    (void)loop;
    (void)arg;
    service_watchdog();
    return service_watchdog_interval_ms();
}

static int signals_setup(struct shoald *d, struct sh_error *err)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd < 0)
        return sh_errorf(err, SH_EINTERNAL, "signalfd: %s", strerror(errno));
    return loop_add_fd(d->loop, fd, EPOLLIN, on_signal, d, err);
}

static void teardown(struct shoald *d)
{
    struct sh_error err;
    service_stopping();
    /* Held requests are answered first: MHD stops only without suspended
     * connections. New requests are refused from now on (d->stopping). */
    d->stopping = true;
    /* A deposed leader answers nothing more from memory and commits
     * nothing: held requests get 503 from api_destroy. */
    bool deposed = ha_deposed(d);
    if (d->nodes && !deposed)
        api_agent_expire_polls(d, true);
    if (d->nodes && deposed) {
        struct sh_error gone;
        sh_errorf(&gone, SH_EUNAVAILABLE,
                  "this controller is no longer the leader");
        for (struct node *n = nodetab_next(d->nodes, NULL); n;
             n = nodetab_next(d->nodes, n))
            api_agent_answer_poll(d, n, &gone);
    }
    logs_destroy(d->logs);
    d->logs = NULL;
    if (d->commit && !deposed)
        commit_flush(d->commit, &err);
    for (int i = 0; d->api && i < 200; i++) {
        api_before_sleep(d->api);
        if (api_suspended(d->api) == 0)
            break;
        usleep(5000);
    }
    api_destroy(d->api);
    d->api = NULL;
    shoald_destroy(d);
}

int main(int argc, char **argv)
{
    struct shoald d;
    struct sh_error err;
    char store_url[4200];
    memset(&d, 0, sizeof(d));
    sh_log_init("shoald");
    /* The first admin is who runs the controller: jobs of that user then
     * run as that Unix user on the agents. */
    struct passwd *pw = getpwuid(getuid());
    const char *user = pw ? pw->pw_name : getenv("USER");
    d.cfg.listen_addr = "127.0.0.1";
    d.cfg.port = 6820;
    d.cfg.admin_user = (user && *user) ? user : "admin";
    d.cfg.max_body = 1 << 20;
    /* 64 leaves a local cluster of ~20 agents plus its CLIs and browsers
     * room on 127.0.0.1, while an attacker needs 64 addresses to fill the
     * 4096 connections. */
    d.cfg.max_conns_per_address = 64;
    d.cfg.max_pending_per_user = 10000;
    d.cfg.request_timeout_s = 10;
    d.cfg.keepalive_timeout_s = 120;
    d.cfg.request_deadline_s = 30;
    d.cfg.heartbeat_timeout_s = 30;
    d.cfg.kill_grace_s = 10;
    d.cfg.las_quantum_ms = -1;
    d.cfg.las_hold_ms = -1;
    d.cfg.las_starve_factor = -1;
    d.cfg.las_starve_max_ms = -1;
    d.cfg.las_hold_gpus = -1;
    d.cfg.keep_finished_ms = 7LL * 24 * 3600 * 1000;
    d.cfg.retention_interval_ms = 10LL * 60 * 1000;
    d.cfg.idle_threshold_pct = 5;
    d.cfg.idle_after_ms = 30LL * 60 * 1000;
    d.cfg.idle_policy = ACCT_IDLE_WARN;
    d.cfg.reslice_hold_ms = 60000;
    d.cfg.leader_lease_ms = STORE_LEADER_LEASE_MS;
    struct config_args ca;
    if (config_load(SHOALD_CONFIG, opts, argc, argv, &ca, &err) < 0) {
        fprintf(stderr, "shoald: %s\n", err.msg);
        return 2;
    }
    if (parse_args(ca.argc, ca.argv, &d.cfg, &ca) < 0) {
        config_args_free(&ca);
        return 2;
    }
    if (ca.check_only) {
        printf("shoald: configuration %s%s is valid\n",
               ca.path ? "in " : "(options only)", ca.path ? ca.path : "");
        config_args_free(&ca);
        return 0;
    }
    int rc = 1;
    if (setup(&d, store_url, sizeof(store_url), &err) < 0 ||
        ha_start(&d, api_port(d.api), argc, argv, &err) < 0 ||
        signals_setup(&d, &err) < 0) {
        sh_log(LOG_ERR, "main", "%s", err.msg);
        goto out;
    }
    loop_set_before_sleep(d.loop, before_sleep, &d);
    if (loop_add_timer(d.loop, SHOALD_CRON_MS, shoald_cron, &d) < 0) {
        sh_log(LOG_ERR, "main", "cannot start the controller's cron");
        goto out;
    }
    int64_t watchdog_ms = service_watchdog_interval_ms();
    if (watchdog_ms > 0 &&
        loop_add_timer(d.loop, watchdog_ms, on_watchdog, &d) < 0) {
        sh_log(LOG_ERR, "main", "cannot start the watchdog's timer");
        goto out;
    }
    if (service_managed() && !service_supported())
        sh_log(LOG_WARNING, "main",
               "started by a service manager, but built without libsystemd: "
               "it is not told when this controller is ready");
    sh_log(LOG_NOTICE, "main", "listening on %s state=%s", d.url,
           d.cfg.state_dir);
    service_ready(d.url);
    if (loop_run(d.loop, &err) < 0) {
        sh_log(LOG_ERR, "main", "%s", err.msg);
        goto out;
    }
    rc = 0;
out:
    teardown(&d);
    rc = ha_finish(&d, rc);
    config_args_free(&ca);
    return rc;
}
