/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal sim`: options, then sim_trace_read(), sim_cluster_parse(),
 * sim_run() and a report. Self-contained (no controller, no client
 * library), so the standalone shoal-sim and the shoal dispatcher share it.
 */
#include "cmd/cmd_sim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd_opts.h"
#include "lib/util/parse.h"
#include "sim/sim.h"

static const char usage[] =
    "Usage: shoal sim --cluster SPEC --trace FILE [options]\n"
    "\n"
    "Replay a job trace against a cluster shape with the real scheduling\n"
    "engine in simulated time; report job completion times, queueing delay,\n"
    "GPU utilization and fairness across projects.\n"
    "\n"
    "  --cluster SPEC        NxGxMODEL[@GROUP][:PRESET] joined by '+', e.g.\n"
    "                        16x8xH100-80GB@8+4x8xA100-80GB:all-1g.10gb\n"
    "                        (@GROUP: nodes per switch group; :PRESET: slice\n"
    "                        every GPU), or a file of such terms\n"
    "  --trace FILE          the trace (CSV; '-' reads stdin)\n"
    "  --trace-format F      auto (default: by the header), shoal, philly,\n"
    "                        tiresias or pollux\n"
    "  --policy NAME         default (priority, fair share, quotas,\n"
    "                        backfill; jobs that checkpoint share GPUs by\n"
    "                        LAS levels), fifo (strict order, no backfill)\n"
    "                        or las (least attained service first; preempts\n"
    "                        jobs that checkpoint, see --resume)\n"
    "  --json                print the metrics as JSON\n"
    "  --outcomes FILE       write one CSV row per job: id, submit,\n"
    "                        first_start, start, end (seconds), attempts,\n"
    "                        state, nodes of its last attempt\n"
    "  --exact-limits        jobs without a time limit get their duration as\n"
    "                        limit (perfect estimates for backfill)\n"
    "  --default-limit DUR   assumed run time of jobs without a limit\n"
    "                        (default 24h)\n"
    "  --reservations N      backfill reservations (default 1 = EASY;\n"
    "                        0 = no backfill)\n"
    "  --full-pass DUR       full scheduling pass interval (default 1s, as\n"
    "                        the controller)\n"
    "  --short-credit DUR    small jobs first: a 1-GPU job counts as\n"
    "                        submitted DUR earlier (2 GPUs: half, 3-4: a\n"
    "                        fifth); default 10d, as the controller; 0s = off\n"
    "  --grace DUR           preemption grace period (default 10s, as\n"
    "                        shoald --kill-grace; 0s: stopped at once)\n"
    "  The --las-* options apply to las (every job) and to default (the\n"
    "  jobs that checkpoint, --resume); fifo refuses them:\n"
    "  --las-levels LIST     GPU-time thresholds of the levels\n"
    "                        (default 1h,10h)\n"
    "  --las-quantum DUR     run time before a job may be preempted for a\n"
    "                        lower level (default 10m)\n"
    "  --las-starve-factor N, --las-starve-max DUR\n"
    "                        a waiting job is back at level 0 after N x\n"
    "                        its run time so far or DUR, whichever is less\n"
    "                        (default 4 and 2d; N 0: DUR alone)\n"
    "  --las-hold DUR, --las-hold-gpus N\n"
    "                        a job of N GPUs or more that has waited DUR\n"
    "                        in all when it starts is not preempted for\n"
    "                        half of its wait (default 14d and 8; 0s = off)\n"
    "  --resume WHO:DUR      jobs of project WHO (or all) checkpoint when\n"
    "                        preempted and resume after DUR of restore\n"
    "                        (others rerun from the start); repeatable\n"
    "  --tenants FILE        teams, projects and users with quotas (lines\n"
    "                        'project vision team=research guaranteed=8\n"
    "                        limit=H100-80GB:16', 'team ...', 'user ...\n"
    "                        max_gpus=4 max_jobs=2')\n"
    "  --convert             print the trace in the shoal CSV format and stop\n"
    "  -h, --help            this help\n";

static int fail(int rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail(int rc, const char *fmt, ...)
{
    va_list ap;
    fputs("shoal: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return rc;
}

struct opts {
    const char *cluster;
    const char *trace;
    enum sim_format format;
    bool json;
    bool convert;
    const char *tenants;
    const char *outcomes; /* --outcomes FILE */
    bool las_set;         /* an --las-* option given */
    struct sim_options sim;
};

#define TENANTS_MAX (1 << 20) /* bytes of a --tenants file */

/* The whole --tenants file (caller frees), or NULL after an error. */
static char *read_small(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = f ? malloc(TENANTS_MAX + 1) : NULL;
    size_t n = buf ? fread(buf, 1, TENANTS_MAX + 1, f) : 0;
    if (f)
        fclose(f);
    if (!f) {
        fail(1, "cannot open %s", path);
        return NULL;
    }
    if (!buf || n > TENANTS_MAX) {
        free(buf);
        fail(1, "%s is larger than %d bytes", path, TENANTS_MAX);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static int duration_ms(const char *opt, const char *v, int64_t *out)
{
    int64_t s;
    struct sh_error err;
    if (parse_duration(opt, v, &s, &err) < 0)
        return fail(2, "%s", err.msg);
    *out = s * 1000;
    return 0;
}

/* A setting of up to 365 days that 0 ("0", "0s") turns off. */
static int duration_or_zero_ms(const char *opt, const char *v, int64_t *out)
{
    int64_t s;
    struct sh_error err;
    if (strcmp(v, "0") == 0 || strcmp(v, "0s") == 0) {
        *out = 0;
        return 0;
    }
    if (parse_duration_max(opt, v, INT64_C(365) * 24 * 3600, &s, &err) < 0)
        return fail(2, "%s", err.msg);
    *out = s * 1000;
    return 0;
}

static const struct option longs[] = {
    {"cluster", required_argument, NULL, 'c'},
    {"trace", required_argument, NULL, 't'},
    {"trace-format", required_argument, NULL, 'f'},
    {"policy", required_argument, NULL, 'p'},
    {"json", no_argument, NULL, 'j'},
    {"exact-limits", no_argument, NULL, 'e'},
    {"default-limit", required_argument, NULL, 'd'},
    {"reservations", required_argument, NULL, 'r'},
    {"full-pass", required_argument, NULL, 'F'},
    {"grace", required_argument, NULL, 'g'},
    {"short-credit", required_argument, NULL, 'S'},
    {"resume", required_argument, NULL, 'R'},
    {"las-levels", required_argument, NULL, 'L'},
    {"las-quantum", required_argument, NULL, 'Q'},
    {"las-hold", required_argument, NULL, 'O'},
    {"las-hold-gpus", required_argument, NULL, 'G'},
    {"las-starve-factor", required_argument, NULL, 'A'},
    {"las-starve-max", required_argument, NULL, 'M'},
    {"convert", no_argument, NULL, 'C'},
    {"tenants", required_argument, NULL, 'T'},
    {"outcomes", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};

/* One option: 0, or 2 on a usage error (reported). */
static int apply_opt(int c, const char *arg, struct opts *o)
{
    struct sh_error err;
    int64_t v;
    struct sched_config *sc = &o->sim.sched;
    switch (c) {
    case 'c':
        o->cluster = arg;
        return 0;
    case 't':
        o->trace = arg;
        return 0;
    case 'f':
        return sim_format_parse(arg, &o->format, &err) < 0
                   ? fail(2, "%s", err.msg)
                   : 0;
    case 'p':
        return sched_policy_from_name(arg, &sc->policy, &err) < 0
                   ? fail(2, "--policy: %s", err.msg)
                   : 0;
    case 'j':
        o->json = true;
        return 0;
    case 'e':
        o->sim.exact_limits = true;
        return 0;
    case 'C':
        o->convert = true;
        return 0;
    case 'T':
        o->tenants = arg;
        return 0;
    case 'o':
        if (!*arg)
            return fail(2, "--outcomes: empty file name");
        o->outcomes = arg;
        return 0;
    case 'd':
        return duration_ms("--default-limit", arg, &sc->default_time_limit_ms);
    case 'F':
        return duration_ms("--full-pass", arg, &sc->full_pass_interval_ms);
    case 'g':
        if (duration_or_zero_ms("--grace", arg, &o->sim.grace_ms))
            return 2;
        sc->preempt_grace_ms = o->sim.grace_ms;
        return 0;
    case 'R':
        if (o->sim.nresume >= SIM_RESUME_MAX)
            return fail(2, "--resume: at most %d", SIM_RESUME_MAX);
        if (sim_resume_parse(arg, &o->sim.resume[o->sim.nresume], &err) < 0)
            return fail(2, "%s", err.msg);
        o->sim.nresume++;
        return 0;
    case 'L':
        o->las_set = true;
        return sched_las_levels_parse(arg, sc, &err) < 0
                   ? fail(2, "--las-levels: %s", err.msg)
                   : 0;
    case 'Q':
        o->las_set = true;
        return duration_ms("--las-quantum", arg, &sc->las_quantum_ms) ? 2 : 0;
    case 'O':
        o->las_set = true;
        return duration_or_zero_ms("--las-hold", arg, &sc->las_hold_ms);
    case 'G':
        o->las_set = true;
        if (parse_int64("--las-hold-gpus", arg, 1, 65536, &v, &err) < 0)
            return fail(2, "%s", err.msg);
        sc->las_hold_gpus = v;
        return 0;
    case 'A':
        o->las_set = true;
        if (parse_int64("--las-starve-factor", arg, 0, 1000, &v, &err) < 0)
            return fail(2, "%s", err.msg);
        sc->las_starve_factor = v;
        return 0;
    case 'M':
        o->las_set = true;
        if (strcmp(arg, "0") == 0 || strcmp(arg, "0s") == 0)
            return fail(2, "--las-starve-max must be more than zero");
        return duration_or_zero_ms("--las-starve-max", arg,
                                   &sc->las_starve_max_ms);
    case 'S':
        return duration_or_zero_ms("--short-credit", arg, &sc->short_credit_ms);
    case 'r':
        if (parse_int64("--reservations", arg, 0, 64, &v, &err) < 0)
            return fail(2, "%s", err.msg);
        sc->max_reservations = (int)v;
        return 0;
    default:
        return 2;
    }
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    struct cmd_opts p;
    int c;
    cmd_opts_init(&p, "sim", usage, longs, NULL, false, argc, argv);
    while ((c = cmd_opts_next(&p)) != -1) {
        if (c == CMD_OPT_ARG)
            cmd_opts_fail(&p, "unexpected argument '%s'", p.arg);
        int rc = apply_opt(c, p.arg, o);
        if (rc != 0)
            return rc;
    }
    if (o->las_set && o->sim.sched.policy == SCHED_POLICY_FIFO)
        return fail(2, "sim: --las-levels, --las-quantum, --las-hold* and "
                       "--las-starve-* need --policy las or default");
    if (!o->trace)
        return fail(2, "sim: --trace FILE is required (see shoal sim "
                       "--help)");
    if (!o->cluster && !o->convert)
        return fail(2, "sim: --cluster SPEC is required (see shoal sim "
                       "--help)");
    return 0;
}

static int read_trace(const struct opts *o, struct sim_trace *t)
{
    struct sh_error err;
    bool std = strcmp(o->trace, "-") == 0;
    FILE *f = std ? stdin : fopen(o->trace, "r");
    if (!f) {
        memset(t, 0, sizeof(*t));
        return fail(1, "cannot open trace %s", o->trace);
    }
    int rc = sim_trace_read(f, o->trace, o->format, t, &err);
    if (!std)
        fclose(f);
    if (rc < 0)
        return fail(1, "%s", err.msg);
    return 0;
}

/* The per-job outcomes into path (created or truncated, 0644 by umask). */
static int write_outcomes(const char *path, const struct sim_trace *t,
                          const struct sim_result *r)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return fail(1, "--outcomes %s: %s", path, strerror(errno));
    int bad = sim_report_outcomes(f, t, r) < 0;
    if (fclose(f) != 0 || bad)
        return fail(1, "--outcomes %s: write failed", path);
    return 0;
}

int cmd_sim(int argc, char **argv)
{
    struct opts o;
    struct sim_trace t;
    struct sim_cluster c;
    struct sim_result r;
    struct sh_error err;
    char *tenants = NULL;
    int rc;
    memset(&o, 0, sizeof(o));
    memset(&c, 0, sizeof(c));
    memset(&r, 0, sizeof(r));
    sim_options_init(&o.sim);
    rc = parse_opts(argc, argv, &o);
    if (rc != 0)
        return rc;
    rc = read_trace(&o, &t);
    if (rc != 0)
        goto out;
    if (o.convert) {
        rc = sim_trace_write(stdout, &t) < 0 ? fail(1, "write failed") : 0;
        goto out;
    }
    if (sim_cluster_parse(o.cluster, &c, &err) < 0) {
        rc = fail(1, "%s", err.msg);
        goto out;
    }
    if (o.tenants) {
        tenants = read_small(o.tenants);
        if (!tenants) {
            rc = 1;
            goto out;
        }
        o.sim.tenants = tenants;
        o.sim.tenants_name = o.tenants;
    }
    if (sim_run(&c, &t, &o.sim, &r, &err) < 0) {
        rc = fail(1, "%s", err.msg);
        goto out;
    }
    if (o.outcomes && (rc = write_outcomes(o.outcomes, &t, &r)) != 0)
        goto out;
    if (o.json)
        rc = sim_report_json(stdout, &r) < 0 ? fail(1, "write failed") : 0;
    else
        sim_report_text(stdout, &r, &c);
out:
    free(tenants);
    sim_result_fini(&r);
    sim_cluster_fini(&c);
    sim_trace_fini(&t);
    return rc;
}
