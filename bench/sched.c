/* SPDX-License-Identifier: Apache-2.0 */
/* bench-sched: the scheduling engine on the target cluster: 1,250 nodes x 8
 * GPUs (three models, switch groups of 32 nodes, some MIG-sliced GPUs),
 * 100,000 pending jobs of mixed shapes (1/2/4/8 GPUs, 2-16 node gangs,
 * slices) across 50 projects in 10 teams with quotas and 500 users.
 * Prints: building the engine, a full pass on an empty and on a full
 * cluster, placing one job after one GPU frees (incremental pass), a
 * rebuild from scratch with the running jobs, and peak memory. Figures
 * only; nothing here passes or fails on time.
 *
 *   bench-sched [--pending N] [--seed S] [--random-submit] [--cpu-held N]
 *               [--cpu-waiting N] [--host]
 * --random-submit gives jobs submit times in random order of their ids
 * (as if added out of order): the job table is then walked in random
 * memory order, the worst case for caches. --cpu-held N adds N jobs
 * without GPUs of one user limited to one running job: one runs, the
 * others stay pending, and every pass (full and incremental) orders and
 * looks at them (the rebuild figures leave them out). --cpu-waiting N
 * adds, at the end, N exclusive jobs without GPUs (no user limit) to the
 * full cluster and times a full pass: each finds no idle node and gets an
 * estimate (when every job of a node ends). --host gives every node 126
 * CPUs and 1016 GiB for jobs (128 and 1 TiB less a reserve) and every job
 * host CPUs and memory per node: 8 CPUs and 96 GiB per GPU plus 0-48 GiB
 * by id (4 CPUs and 16 GiB for a slice), so memory, not GPUs, is what
 * fills some nodes; the jobs are otherwise the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "lib/util/clock.h"
#include "sched/sched.h"

#define NODES 1250
#define GPUS 8
#define PROJECTS 50
#define USERS 500

struct rng {
    uint64_t x;
};

static uint32_t rnd(struct rng *r, uint32_t n)
{
    r->x ^= r->x << 13;
    r->x ^= r->x >> 7;
    r->x ^= r->x << 17;
    return (uint32_t)(r->x % n);
}

static const char *models[] = {"H100-80GB", "A100-80GB", "L40S-48GB"};
static bool random_submit;
static int cpu_held;
static int cpu_waiting;
static bool host;
static char project_names[PROJECTS][16];
static char user_names[USERS][16];

static long rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static void die(const char *what, const struct sh_error *err)
{
    fprintf(stderr, "bench-sched: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

static const char *node_model(int n)
{
    return n < NODES / 2        ? models[0]
           : n < NODES * 8 / 10 ? models[1]
                                : models[2];
}

static void add_nodes(struct sched *s)
{
    struct gpu_slice mig[7];
    memset(mig, 0, sizeof(mig));
    for (int k = 0; k < 7; k++) {
        mig[k].kind = GPU_SLICE_MIG;
        snprintf(mig[k].profile, sizeof(mig[k].profile), "1g.10gb");
        mig[k].mem_bytes = 10ULL << 30;
        mig[k].share_num = 1;
        mig[k].share_den = 7;
    }
    for (int n = 0; n < NODES; n++) {
        struct sched_gpu_desc g[GPUS];
        char name[32], group[32];
        memset(g, 0, sizeof(g));
        for (int i = 0; i < GPUS; i++) {
            g[i].model = node_model(n);
            g[i].mem_bytes = (n < NODES * 8 / 10 ? 80ULL : 48ULL) << 30;
            g[i].nvlink_group = i < 4 ? 0 : 1;
            /* The first 40 H100 nodes have two GPUs cut in 7 slices. */
            if (n < 40 && i < 2) {
                g[i].nslices = 7;
                g[i].slices = mig;
            }
        }
        snprintf(name, sizeof(name), "gpu%04d", n);
        snprintf(group, sizeof(group), "sw%02d", n / 32);
        struct sched_node_desc d = {.name = name,
                                    .group = group,
                                    .state = SCHED_NODE_UP,
                                    .ngpus = GPUS,
                                    .gpus = g,
                                    .cpus = host ? 126 : 0,
                                    .mem = host ? UINT64_C(1016) << 30 : 0};
        struct sh_error err;
        if (sched_node_set(s, &d, &err) < 0)
            die("node", &err);
    }
}

static void add_tenants(struct sched *s)
{
    struct sh_error err;
    for (int t = 0; t < 10; t++) {
        char team[16];
        snprintf(team, sizeof(team), "team%d", t);
        struct sched_quota q = {NULL, SCHED_GPUS(800), SCHED_GPUS(2400)};
        if (sched_team_set(s, team, &q, 1, &err) < 0)
            die("team", &err);
        for (int p = t * 5; p < t * 5 + 5; p++) {
            snprintf(project_names[p], sizeof(project_names[p]), "proj%02d", p);
            struct sched_quota pq[2] = {
                {NULL, SCHED_GPUS(160), SCHED_GPUS(600)},
                {models[0], SCHED_GPUS(80), SCHED_GPUS(400)},
            };
            if (sched_project_set(s, project_names[p], team, pq, 2, &err) < 0)
                die("project", &err);
        }
    }
    for (int u = 0; u < USERS; u++)
        snprintf(user_names[u], sizeof(user_names[u]), "user%03d", u);
}

/* Ids are given at submission, so submit times grow with ids: the last
 * day's jobs, one every 864 ms for 100,000. */
static void make_job(struct rng *r, uint64_t id, int64_t now, int pending,
                     struct sched_job_desc *d)
{
    memset(d, 0, sizeof(*d));
    d->id = id;
    d->user = user_names[rnd(r, USERS)];
    d->project = project_names[rnd(r, PROJECTS)];
    uint32_t pr = rnd(r, 10);
    d->priority = pr == 0   ? JOB_PRIO_HIGH
                  : pr == 9 ? JOB_PRIO_LOW
                            : JOB_PRIO_NORMAL;
    d->submit_ms = now - INT64_C(86400000) +
                   (int64_t)id * INT64_C(86400000) / (pending + 1);
    if (random_submit)
        d->submit_ms = now - (int64_t)rnd(r, 86400) * 1000;
    d->time_limit_ms = rnd(r, 5) ? (int64_t)(600 + rnd(r, 86000)) * 1000 : 0;
    uint32_t shape = rnd(r, 100);
    d->nodes = 1;
    if (shape < 40)
        d->gpus = 1;
    else if (shape < 60)
        d->gpus = 2;
    else if (shape < 75)
        d->gpus = 4;
    else if (shape < 87)
        d->gpus = 8;
    else if (shape < 95) {
        d->gpus = 8;
        d->nodes = 2 << rnd(r, 4); /* 2, 4, 8, 16 */
    } else {
        d->gpus = 1;
        d->slice = "1g.10gb";
    }
    if (!d->slice && rnd(r, 10) < 3)
        d->gpu_type = models[rnd(r, 3)];
    if (host) { /* no draw: the same jobs as without */
        d->cpus = d->slice ? 4 : 8 * d->gpus;
        d->mem = d->slice ? UINT64_C(16) << 30
                          : ((uint64_t)d->gpus * 96 + (id % 7) * 8) << 30;
    }
}

static double ms_since(int64_t t0)
{
    return (double)(clock_mono_us() - t0) / 1000.0;
}

static void run(struct sched *s, int64_t now, bool full,
                struct sched_decisions *dec)
{
    struct sh_error err;
    if (sched_run(s, now, full, dec, &err) < 0)
        die("run", &err);
}

/* The running jobs, for ends and the rebuild. */
struct runset {
    uint64_t *id;
    size_t n;
    size_t cap;
};

static void keep_starts(struct runset *rs, const struct sched_decisions *d)
{
    for (size_t i = 0; i < d->nstarts; i++) {
        if (rs->n == rs->cap) {
            rs->cap = rs->cap ? rs->cap * 2 : 4096;
            rs->id = realloc(rs->id, rs->cap * sizeof(*rs->id));
            if (!rs->id)
                die("out of memory", NULL);
        }
        rs->id[rs->n++] = d->starts[i].job;
    }
}

static struct sched *build(const struct sched_config *cfg, uint64_t seed,
                           int pending, int64_t now)
{
    struct rng r = {seed};
    struct sh_error err;
    struct sched *s = sched_create(cfg, &err);
    if (!s)
        die("create", &err);
    add_nodes(s);
    add_tenants(s);
    for (int i = 1; i <= pending; i++) {
        struct sched_job_desc d;
        make_job(&r, (uint64_t)i, now, pending, &d);
        if (sched_job_add(s, &d, &err) < 0)
            die("add", &err);
    }
    /* Jobs without GPUs held by their user's limit (one running job). */
    if (cpu_held > 0 &&
        sched_user_set(s, "cpuheld", SCHED_UNLIMITED, 1, 0, &err) < 0)
        die("user", &err);
    for (int i = 1; i <= cpu_held; i++) {
        struct sched_job_desc d = {
            .id = (uint64_t)(pending + i),
            .user = "cpuheld",
            .project = project_names[rnd(&r, PROJECTS)],
            .priority = JOB_PRIO_NORMAL,
            .nodes = 1,
            .submit_ms = now - (int64_t)rnd(&r, 86400) * 1000,
        };
        if (sched_job_add(s, &d, &err) < 0)
            die("add", &err);
    }
    return s;
}

/* N exclusive jobs without GPUs, ids from first. */
static void add_cpu_waiting(struct sched *s, uint64_t first, int n, int64_t now)
{
    struct sh_error err;
    for (int i = 0; i < n; i++) {
        struct sched_job_desc d = {
            .id = first + (uint64_t)i,
            .user = "cpuwait",
            .project = project_names[i % PROJECTS],
            .priority = JOB_PRIO_NORMAL,
            .nodes = 1,
            .exclusive = true,
            .submit_ms = now,
        };
        if (sched_job_add(s, &d, &err) < 0)
            die("add", &err);
    }
}

struct incr {
    int rounds, nfull;
    double total, max, full_total;
    size_t starts, visited;
};

/* One GPU frees (a one-GPU job ends), the engine places the next job: the
 * incremental path. Every 60 s of engine time a run is a full pass; those
 * are counted apart. */
static void incremental(struct sched *s, struct runset *rs, int64_t *now,
                        struct rng *r, struct sched_decisions *dec,
                        struct incr *in)
{
    struct sh_error err;
    for (int k = 0; k < in->rounds && rs->n > 0; k++) {
        size_t pick = rnd(r, (uint32_t)rs->n);
        struct sched_place pl[2];
        for (int tries = 0; tries < 64; tries++) {
            if (sched_job_placement(s, rs->id[pick], pl, 2) == 1)
                break;
            pick = rnd(r, (uint32_t)rs->n);
        }
        *now += 1000;
        if (sched_job_end(s, rs->id[pick], *now, &err) < 0)
            die("end", &err);
        rs->id[pick] = rs->id[--rs->n];
        int64_t t1 = clock_mono_us();
        run(s, *now, false, dec);
        double ms = ms_since(t1);
        if (dec->full_pass) {
            in->nfull++;
            in->full_total += ms;
        } else {
            in->total += ms;
            if (ms > in->max)
                in->max = ms;
            in->starts += dec->nstarts;
            in->visited += dec->visited;
        }
        keep_starts(rs, dec);
    }
}

/* Rebuild from scratch: nodes, tenants, running jobs with their
 * placements, then every pending job again. */
static struct sched *rebuild(const struct sched *s,
                             const struct sched_config *cfg, uint64_t seed,
                             int pending, int64_t now, size_t *recovered,
                             size_t *readded)
{
    struct rng r2 = {seed};
    struct sh_error err;
    struct sched *s2 = sched_create(cfg, &err);
    struct sched_place *pl = malloc(sizeof(*pl) * 16 * GPUS);
    if (!s2 || !pl)
        die("rebuild", &err);
    add_nodes(s2);
    add_tenants(s2);
    *recovered = *readded = 0;
    for (int i = 1; i <= pending; i++) {
        struct sched_job_desc d;
        struct sched_job_status js;
        make_job(&r2, (uint64_t)i, now, pending, &d);
        if (sched_job_status(s, d.id, &js, NULL) < 0)
            continue;
        if (js.state == SCHED_JOB_PENDING) {
            if (sched_job_add(s2, &d, &err) < 0)
                die("re-add", &err);
            (*readded)++;
            continue;
        }
        int np = sched_job_placement(s, d.id, pl, 16 * GPUS);
        if (sched_job_recover(s2, &d, js.start_ms, pl, np, &err) < 0)
            die("recover", &err);
        (*recovered)++;
    }
    free(pl);
    return s2;
}

static double timed_run(struct sched *s, int64_t now,
                        struct sched_decisions *dec)
{
    int64_t t0 = clock_mono_us();
    run(s, now, true, dec);
    return ms_since(t0);
}

int main(int argc, char **argv)
{
    int pending = 100000;
    uint64_t seed = 42;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--random-submit") == 0)
            random_submit = true;
        else if (strcmp(argv[i], "--pending") == 0 && i + 1 < argc)
            pending = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--cpu-held") == 0 && i + 1 < argc)
            cpu_held = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--cpu-waiting") == 0 && i + 1 < argc)
            cpu_waiting = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--host") == 0)
            host = true;
    }
    struct sched_config cfg;
    sched_config_init(&cfg);
    int64_t now = INT64_C(1700000000000);
    long rss0 = rss_kib();
    int64_t t0 = clock_mono_us();
    struct sched *s = build(&cfg, seed, pending, now);
    double build_ms = ms_since(t0);
    long rss_built = rss_kib();

    struct sched_decisions dec;
    struct runset rs = {0};
    struct rng r = {seed + 1};
    sched_decisions_init(&dec);
    double cold_ms = timed_run(s, now, &dec);
    size_t cold_starts = dec.nstarts;
    keep_starts(&rs, &dec);
    now += 1000;
    double full_ms = timed_run(s, now, &dec);
    keep_starts(&rs, &dec);
    struct incr in = {.rounds = 2000};
    incremental(s, &rs, &now, &r, &dec, &in);
    now += 1000;
    double full2_ms = timed_run(s, now, &dec);
    keep_starts(&rs, &dec);
    struct sched_stats st;
    sched_stats_get(s, &st);
    /* Estimates for every pending job (what shoald does before listing). */
    struct sh_error perr;
    t0 = clock_mono_us();
    if (sched_plan_estimates(s, now, &perr) < 0)
        die("plan", &perr);
    double plan_ms = ms_since(t0);

    size_t recovered, readded;
    t0 = clock_mono_us();
    struct sched *s2 =
        rebuild(s, &cfg, seed, pending, now, &recovered, &readded);
    double rebuild_ms = ms_since(t0);
    double rebuilt_pass_ms = timed_run(s2, now, &dec);
    double waiting_ms = 0;
    size_t waiting_starts = 0;
    if (cpu_waiting > 0) {
        add_cpu_waiting(s, (uint64_t)pending + (uint64_t)cpu_held + 1,
                        cpu_waiting, now);
        now += 1000;
        waiting_ms = timed_run(s, now, &dec);
        waiting_starts = dec.nstarts;
    }

    int ninc = in.rounds - in.nfull;
    printf("bench-sched: %d nodes x %d GPUs (%d switch groups), %d pending "
           "jobs, %d projects%s\n",
           NODES, GPUS, (NODES + 31) / 32, pending, PROJECTS,
           random_submit ? ", random submit order" : "");
    if (cpu_held > 0)
        printf("  with %d jobs without GPUs held by their user's limit\n",
               cpu_held);
    if (host)
        printf("  with host CPUs and memory on every node and job\n");
    printf("  build engine (nodes, quotas, %d jobs)  %9.2f ms\n", pending,
           build_ms);
    printf("  full pass, empty cluster              %9.2f ms  (%zu starts)\n",
           cold_ms, cold_starts);
    printf("  full pass, full cluster               %9.2f ms\n", full_ms);
    printf("  one GPU freed -> next job (incr.)     %9.4f ms avg, %.4f ms "
           "max over %d (%.2f starts, %.1f jobs looked at per run)\n",
           in.total / ninc, in.max, ninc, (double)in.starts / ninc,
           (double)in.visited / ninc);
    printf("  periodic full passes among those      %9.2f ms avg (%d)\n",
           in.nfull ? in.full_total / in.nfull : 0.0, in.nfull);
    printf("  full pass after those                 %9.2f ms\n", full2_ms);
    printf("  estimates for every pending job       %9.2f ms  (plan of "
           "the first %d in order)\n",
           plan_ms, SCHED_PLAN_MAX);
    printf("  rebuild from scratch                  %9.2f ms  (%zu running "
           "recovered, %zu pending)\n",
           rebuild_ms, recovered, readded);
    printf("  first pass of the rebuilt engine      %9.2f ms\n",
           rebuilt_pass_ms);
    if (cpu_waiting > 0)
        printf("  full pass, %d exclusive without GPUs  %9.2f ms  (%zu "
               "starts)\n",
               cpu_waiting, waiting_ms, waiting_starts);
    printf("  state: %zu running, %zu pending, %lld of %lld units free\n",
           st.running, st.pending, (long long)st.free_units,
           (long long)(NODES * GPUS * SCHED_UNITS_PER_GPU));
    printf("  peak RSS %ld KiB (engine with %d jobs: ~%ld bytes/job)\n",
           rss_kib(), pending,
           (rss_built - rss0) * 1024 / (pending ? pending : 1));
    free(rs.id);
    sched_decisions_fini(&dec);
    sched_destroy(s2);
    sched_destroy(s);
    return 0;
}
