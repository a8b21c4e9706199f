/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: properties of the engine over random clusters and queues with
 * fixed seeds: the invariants (no GPU or slice given twice, never above a
 * limit, gangs whole, accounting consistent) after every step; the same
 * input gives the same decisions, with or without all_reasons; backfill
 * never delays a reservation.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/strbuf.h"
#include "sched/sched.h"

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

static void check(struct sched *s, const char *when, int step)
{
    struct sh_error err;
    int rc = sched_check_invariants(s, &err);
    cr_assert(rc == 0, "after %s (step %d): %s", when, step, err.msg);
}

/* A random cluster: models, groups, NVLink halves, some sliced GPUs. */
/* Nodes and jobs get host CPUs and memory (random_steps_count_host). */
static bool with_host;

static void random_cluster(struct sched *s, struct rng *r, bool slices)
{
    static const char *models[] = {"H100-80GB", "A100-40GB"};
    int nnodes = 2 + (int)rnd(r, 10);
    for (int n = 0; n < nnodes; n++) {
        struct sched_gpu_desc g[8];
        struct gpu_slice sl[8][7];
        char name[16], group[16];
        int ng = (int)(rnd(r, 2) ? 8 : 4);
        const char *model = models[rnd(r, 2)];
        memset(g, 0, sizeof(g));
        for (int i = 0; i < ng; i++) {
            g[i].model = model;
            g[i].mem_bytes = 80ULL << 30;
            g[i].nvlink_group = i < ng / 2 ? 0 : 1;
            if (!slices || rnd(r, 6) != 0)
                continue;
            bool mig = rnd(r, 2);
            int k = mig ? 7 : 4;
            for (int j = 0; j < k; j++) {
                memset(&sl[i][j], 0, sizeof(sl[i][j]));
                sl[i][j].kind = mig ? GPU_SLICE_MIG : GPU_SLICE_SHARED;
                snprintf(sl[i][j].profile, sizeof(sl[i][j].profile), "%s",
                         mig ? "1g.10gb" : "shared/4");
                sl[i][j].mem_bytes = mig ? 10ULL << 30 : 20ULL << 30;
                sl[i][j].share_num = 1;
                sl[i][j].share_den = k;
            }
            g[i].nslices = k;
            g[i].slices = sl[i];
            g[i].unfenced = !mig && rnd(r, 2);
        }
        snprintf(name, sizeof(name), "n%02d", n);
        snprintf(group, sizeof(group), "sw%d", n / 4);
        struct sched_node_desc d = {.name = name,
                                    .group = group,
                                    .state = SCHED_NODE_UP,
                                    .ngpus = ng,
                                    .gpus = g};
        if (with_host) {
            d.cpus = 8 + (int)rnd(r, 56);
            d.mem = (uint64_t)(16 + rnd(r, 240)) << 30;
        }
        struct sh_error err;
        cr_assert(sched_node_set(s, &d, &err) == 0, "%s", err.msg);
    }
}

static void random_tenants(struct sched *s, struct rng *r)
{
    struct sh_error err;
    struct sched_quota tq = {NULL, SCHED_GPUS(8), SCHED_GPUS(24)};
    cr_assert(sched_team_set(s, "t0", &tq, 1, &err) == 0, "%s", err.msg);
    for (int p = 0; p < 4; p++) {
        char name[16];
        snprintf(name, sizeof(name), "p%d", p);
        struct sched_quota q[2] = {
            {NULL, SCHED_GPUS(rnd(r, 8)), SCHED_GPUS(8 + rnd(r, 24))},
            {"H100-80GB", SCHED_GPUS(rnd(r, 4)), SCHED_UNLIMITED},
        };
        cr_assert(sched_project_set(s, name, p < 2 ? "t0" : NULL, q,
                                    1 + (int)rnd(r, 2), &err) == 0,
                  "%s", err.msg);
    }
    cr_assert(sched_user_set(s, "u1", SCHED_GPUS(6), 3, 0, &err) == 0);
}

static void random_job(struct rng *r, uint64_t id, int64_t now,
                       struct sched_job_desc *d, bool slices)
{
    static const char *projects[] = {"p0", "p1", "p2", "p3"};
    static const char *users[] = {"u0", "u1", "u2"};
    memset(d, 0, sizeof(*d));
    d->id = id;
    d->user = users[rnd(r, 3)];
    d->project = projects[rnd(r, 4)];
    d->priority = (enum job_priority)rnd(r, 3);
    d->submit_ms = now;
    d->time_limit_ms = rnd(r, 3) ? (int64_t)(60 + rnd(r, 3600)) * 1000 : 0;
    uint32_t shape = rnd(r, 10);
    if (slices && shape == 0) {
        d->gpus = 1;
        d->nodes = 1;
        d->slice = rnd(r, 2) ? "1g.10gb" : "shared";
    } else if (slices && shape == 1) {
        d->gpus = 1;
        d->gpu_mem = (uint64_t)(5 + rnd(r, 60)) << 30;
        d->flexible = true;
    } else if (shape < 4) {
        d->nodes = 2 + (int)rnd(r, 2);
        d->gpus = 1 << rnd(r, 3);
    } else {
        d->nodes = rnd(r, 5) ? 1 : 0;
        d->gpus = 1 << rnd(r, 4);
    }
    if (rnd(r, 8) == 0)
        d->gpu_type = "A100-40GB";
    if (with_host) {
        d->cpus = (int)rnd(r, 24);
        d->mem = (uint64_t)rnd(r, 96) << 30;
        if (rnd(r, 6) == 0) { /* no GPUs: a node's CPUs and memory */
            d->gpus = 0;
            d->slice = NULL;
            d->flexible = false;
            d->gpu_mem = 0;
            d->nodes = 1 + (int)rnd(r, 2);
        }
    }
}

/* Append a run's decisions to sb, for comparing two engines. */
static void record(struct strbuf *sb, const struct sched_decisions *dec)
{
    for (size_t i = 0; i < dec->nstarts; i++) {
        const struct sched_start *st = &dec->starts[i];
        strbuf_appendf(sb, "S%llu:", (unsigned long long)st->job);
        for (int k = 0; k < st->nplaces; k++) {
            const struct sched_place *p = &dec->places[st->first + (size_t)k];
            strbuf_appendf(sb, "%s/%d/%d,", p->node, p->gpu, p->slice);
        }
    }
    for (size_t i = 0; i < dec->npreempts; i++)
        strbuf_appendf(sb, "P%llu>%llu,",
                       (unsigned long long)dec->preempts[i].job,
                       (unsigned long long)dec->preempts[i].for_job);
    strbuf_appends(sb, "|");
}

/* A random run of adds, passes, ends, cancels and node changes. Running
 * jobs are tracked so ends can be reported; preempted ones end after the
 * next pass. */
static void random_run(uint64_t seed, int steps, bool incremental,
                       bool all_reasons, struct strbuf *log)
{
    struct rng r = {seed};
    struct sched_config cfg;
    struct sh_error err;
    sched_config_init(&cfg);
    cfg.all_reasons = all_reasons;
    cfg.full_pass_interval_ms = incremental ? 600 * 1000 : 0;
    cfg.max_reservations = (int)rnd(&r, 3);
    struct sched *s = sched_create(&cfg, &err);
    cr_assert(s, "%s", err.msg);
    random_cluster(s, &r, true);
    if (rnd(&r, 2))
        random_tenants(s, &r);
    struct sched_decisions dec;
    sched_decisions_init(&dec);
    uint64_t *running = calloc(4096, sizeof(*running));
    uint64_t *pending = calloc(4096, sizeof(*pending));
    int nrun = 0, npend = 0;
    uint64_t next_id = 1;
    int64_t now = 0;
    for (int step = 0; step < steps; step++) {
        uint32_t what = rnd(&r, 10);
        now += rnd(&r, 60) * 1000;
        if (rnd(&r, 50) == 0) {
            /* An admin moves a project to another team and changes its
             * quotas, maybe below what it runs. */
            static const char *teams[] = {"t0", "t1", NULL};
            char name[16];
            snprintf(name, sizeof(name), "p%u", rnd(&r, 4));
            struct sched_quota q = {NULL, SCHED_GPUS(rnd(&r, 6)),
                                    SCHED_GPUS(rnd(&r, 12))};
            if (q.limit < q.guaranteed)
                q.limit = q.guaranteed;
            cr_assert(
                sched_project_set(s, name, teams[rnd(&r, 3)], &q, 1, &err) == 0,
                "%s", err.msg);
        } else if (what < 4 && npend < 4000) {
            struct sched_job_desc d;
            random_job(&r, next_id, now, &d, true);
            if (sched_job_add(s, &d, &err) == 0)
                pending[npend++] = next_id;
            next_id++;
        } else if (what < 7) {
            cr_assert(sched_run(s, now, false, &dec, &err) == 0, "%s", err.msg);
            if (log)
                record(log, &dec);
            for (size_t i = 0; i < dec.nstarts && nrun < 4000; i++)
                running[nrun++] = dec.starts[i].job;
            for (size_t i = 0; i < dec.npreempts; i++)
                cr_assert(sched_job_end(s, dec.preempts[i].job, now, &err) == 0,
                          "%s", err.msg);
        } else if (what < 9 && nrun > 0) {
            int k = (int)rnd(&r, (uint32_t)nrun);
            /* Already ended by preemption: not found is fine. */
            sched_job_end(s, running[k], now, NULL);
            running[k] = running[--nrun];
        } else if (npend > 0) {
            int k = (int)rnd(&r, (uint32_t)npend);
            sched_job_remove(s, pending[k], NULL);
            pending[k] = pending[--npend];
        }
        check(s, "a step", step);
    }
    free(running);
    free(pending);
    sched_decisions_fini(&dec);
    sched_destroy(s);
}

Test(sched_props, random_steps_keep_invariants)
{
    for (uint64_t seed = 1; seed <= 40; seed++)
        random_run(seed * 7919, 400, seed % 2 == 0, seed % 3 != 0, NULL);
}

/* The same with host CPUs and memory on nodes and jobs (and jobs without
 * GPUs): no node is ever given more than it has (check_room()). */
Test(sched_props, random_steps_count_host_cpus_and_memory)
{
    with_host = true;
    for (uint64_t seed = 1; seed <= 40; seed++)
        random_run(seed * 104729, 400, seed % 2 == 0, seed % 3 != 0, NULL);
    with_host = false;
}

Test(sched_props, same_input_gives_same_decisions)
{
    for (uint64_t seed = 100; seed < 110; seed++) {
        struct strbuf a, b;
        strbuf_init(&a, 1 << 24);
        strbuf_init(&b, 1 << 24);
        random_run(seed, 300, seed % 2 == 0, true, &a);
        random_run(seed, 300, seed % 2 == 0, true, &b);
        cr_assert(a.len > 0);
        cr_assert_str_eq(strbuf_str(&a), strbuf_str(&b), "seed %llu differs",
                         (unsigned long long)seed);
        strbuf_fini(&a);
        strbuf_fini(&b);
    }
}

/* all_reasons only decides whether the jobs a full pass did not reach get
 * a reason; the decisions (starts with their GPUs, preemptions) are the
 * same, pass by pass, over random clusters, tenants and queues: with
 * quotas and without, full passes only or mostly incremental ones. */
Test(sched_props, all_reasons_never_changes_a_decision)
{
    for (uint64_t seed = 200; seed < 260; seed++) {
        struct strbuf a, b;
        strbuf_init(&a, 1 << 24);
        strbuf_init(&b, 1 << 24);
        random_run(seed, 400, seed % 2 == 0, true, &a);
        random_run(seed, 400, seed % 2 == 0, false, &b);
        cr_assert(a.len > 0);
        cr_assert_str_eq(strbuf_str(&a), strbuf_str(&b), "seed %llu differs",
                         (unsigned long long)seed);
        strbuf_fini(&a);
        strbuf_fini(&b);
    }
}

/* All jobs submitted at 0 with exact time limits, one project: whoever
 * holds the reservation starts no later than its first estimate. */
static void backfill_run(uint64_t seed, bool incremental)
{
    struct rng r = {seed};
    struct sched_config cfg;
    struct sh_error err;
    sched_config_init(&cfg);
    cfg.full_pass_interval_ms = incremental ? 3600 * 1000 : 0;
    cfg.age_weight = 0;
    struct sched *s = sched_create(&cfg, &err);
    random_cluster(s, &r, false);
    int njobs = 60;
    int64_t first_est[61] = {0};
    int64_t end_at[61] = {0};
    int64_t limit[61];
    for (int i = 1; i <= njobs; i++) {
        struct sched_job_desc d;
        random_job(&r, (uint64_t)i, 0, &d, false);
        d.project = "p";
        d.user = "u";
        d.priority = JOB_PRIO_NORMAL;
        d.gpu_type = NULL;
        d.time_limit_ms = (int64_t)(60 + rnd(&r, 3600)) * 1000;
        limit[i] = d.time_limit_ms;
        if (sched_job_check(s, &d, NULL) == 0)
            cr_assert(sched_job_add(s, &d, &err) == 0, "%s", err.msg);
    }
    struct sched_decisions dec;
    sched_decisions_init(&dec);
    int64_t now = 0;
    for (int guard = 0; guard < 1000; guard++) {
        cr_assert(sched_run(s, now, false, &dec, &err) == 0);
        check(s, "a backfill pass", guard);
        for (size_t i = 0; i < dec.nstarts; i++) {
            int id = (int)dec.starts[i].job;
            end_at[id] = now + limit[id];
            cr_assert(first_est[id] == 0 || now <= first_est[id],
                      "seed %llu: job %d reserved for %lld started %lld",
                      (unsigned long long)seed, id, (long long)first_est[id],
                      (long long)now);
        }
        for (int i = 1; i <= njobs; i++) {
            struct sched_job_status st;
            if (sched_job_status(s, (uint64_t)i, &st, NULL) == 0 &&
                st.state == SCHED_JOB_PENDING &&
                st.wait == SCHED_WAIT_RESERVED && first_est[i] == 0)
                first_est[i] = st.est_start_ms;
        }
        /* Advance to the next end. */
        int64_t next = INT64_MAX;
        for (int i = 1; i <= njobs; i++) {
            if (end_at[i] > now && end_at[i] < next)
                next = end_at[i];
        }
        if (next == INT64_MAX)
            break;
        now = next;
        for (int i = 1; i <= njobs; i++) {
            if (end_at[i] == now)
                cr_assert(sched_job_end(s, (uint64_t)i, now, &err) == 0);
        }
    }
    sched_decisions_fini(&dec);
    sched_destroy(s);
}

Test(sched_props, backfill_never_delays_a_reservation)
{
    for (uint64_t seed = 1; seed <= 30; seed++)
        backfill_run(seed * 104729, seed % 2 == 0);
}

static void add_job(struct sched *s, uint64_t id, int gpus, int64_t submit)
{
    struct sched_job_desc d;
    struct sh_error err;
    memset(&d, 0, sizeof(d));
    d.id = id;
    d.user = "u";
    d.project = "p";
    d.nodes = 1;
    d.gpus = gpus;
    d.submit_ms = submit;
    cr_assert(sched_job_add(s, &d, &err) == 0, "%s", err.msg);
}

/* Without backfill nothing passes a job that cannot start, in incremental
 * passes as in full ones: one node of 8, job 1 runs on 4; job 2 (8 GPUs)
 * waits, and job 3 (1 GPU, submitted after it) must wait behind it. */
Test(sched_props, without_backfill_no_pass_lets_a_job_pass)
{
    for (int full = 0; full <= 1; full++) {
        struct sched_config cfg;
        struct sh_error err;
        sched_config_init(&cfg);
        cfg.max_reservations = 0;
        cfg.full_pass_interval_ms = full ? 0 : 3600 * 1000;
        struct sched *s = sched_create(&cfg, &err);
        struct sched_gpu_desc g[8];
        memset(g, 0, sizeof(g));
        for (int i = 0; i < 8; i++) {
            g[i].model = "H100-80GB";
            g[i].mem_bytes = 80ULL << 30;
        }
        struct sched_node_desc nd = {.name = "n0",
                                     .group = "sw0",
                                     .state = SCHED_NODE_UP,
                                     .ngpus = 8,
                                     .gpus = g};
        cr_assert(sched_node_set(s, &nd, &err) == 0, "%s", err.msg);
        struct sched_decisions dec;
        sched_decisions_init(&dec);
        add_job(s, 1, 4, 0);
        cr_assert(sched_run(s, 0, false, &dec, &err) == 0);
        cr_assert_eq(dec.nstarts, 1);
        add_job(s, 2, 8, 1000);
        add_job(s, 3, 1, 2000);
        cr_assert(sched_run(s, 2000, false, &dec, &err) == 0);
        cr_assert_eq(dec.full_pass, full);
        cr_assert_eq(dec.nstarts, 0, "%s pass: job %llu passed job 2",
                     full ? "full" : "incremental",
                     (unsigned long long)dec.starts[0].job);
        struct sched_job_status st;
        cr_assert(sched_job_status(s, 3, &st, &err) == 0);
        cr_assert_eq(st.wait, SCHED_WAIT_PRIORITY);
        check(s, "no backfill", full);
        sched_decisions_fini(&dec);
        sched_destroy(s);
    }
}
