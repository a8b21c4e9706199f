/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the simulator takes the controller's decisions. Overloaded
 * traces (1, 2, 4 and 8-GPU jobs and 2-node gangs, more demand than GPUs,
 * so reservations and backfill happen) replayed with and without
 * all_reasons start every job at the same time on the same GPUs, with and
 * without quotas (preemption). And a replay that drives the engine the way
 * the controller does (src/shoald/engine.c: sched_config_init() with its
 * full-pass interval and grace, so all_reasons on; submissions and ends
 * reported as they come, one sched_run() per batch; every pending job's
 * status and reason read after every pass, as `shoal queue` does) takes
 * exactly sim_run()'s decisions.
 *
 * Not modelled here: the controller's passes without any event (its
 * liveness timer), its grace and requeue rules for preempted jobs, and its
 * full-pass interval (1 s) against the simulator's default (60 s): the
 * replays below give both the controller's settings.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/strbuf.h"
#include "sim/sim.h"

#define CTL_FULL_PASS_MS 1000 /* src/shoald/engine.c FULL_PASS_MS */
#define CTL_GRACE_MS 10000    /* shoald's default --kill-grace */

static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* n jobs arriving every 0-10 minutes on 32 GPUs: about 1.5 times what
 * the cluster can run. Half have a time limit (some shorter than their
 * run: timeouts). Caller frees. */
static char *overloaded_trace(uint64_t seed, int n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    uint64_t x = seed;
    int64_t t = 0;
    static const char *prio[] = {"normal", "normal", "normal", "high", "low"};
    fprintf(m, "id,submit,duration,gpus,nodes,project,priority,time_limit\n");
    for (int i = 1; i <= n; i++) {
        t += (int64_t)(xorshift(&x) % 600);
        int r = (int)(xorshift(&x) % 100);
        int gpus = r < 45 ? 1 : r < 65 ? 2 : r < 80 ? 4 : r < 94 ? 8 : 16;
        int64_t dur = 60 << (xorshift(&x) % 9); /* 1 min .. 4 h 16 min */
        dur += (int64_t)(xorshift(&x) % 60);
        int64_t limit = 0;
        if (xorshift(&x) % 2)
            limit = dur * (int64_t)(xorshift(&x) % 4) / 2 + 60;
        fprintf(m, "%d,%lld,%lld,%d,%s,p%d,%s,", i, (long long)t,
                (long long)dur, gpus, gpus == 16 ? "2" : "",
                (int)(xorshift(&x) % 4), prio[xorshift(&x) % 5]);
        if (limit > 0)
            fprintf(m, "%lld", (long long)limit);
        fprintf(m, "\n");
    }
    fclose(m);
    return buf;
}

/* Append a run's decisions to sb: time, then per start the job and its
 * GPUs, per preemption the victim and the job it is for. */
static void record(struct strbuf *sb, int64_t now,
                   const struct sched_decisions *dec)
{
    if (dec->nstarts == 0 && dec->npreempts == 0)
        return;
    strbuf_appendf(sb, "@%lld ", (long long)now);
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
    strbuf_appends(sb, "\n");
}

/* What a replay did, seen from the decisions callback. */
struct seen {
    struct strbuf log;
    const struct sim_trace *t;
    size_t reserved;   /* passes after which some job held a reservation */
    size_t backfilled; /* starts that passed an older pending job */
    /* Preemptions by reason; LAS victims outside ckpt_project (the one
     * project that checkpoints, NULL: every job does). */
    size_t reclaims, las_preempts, las_not_ckpt;
    const char *ckpt_project;
};

/* After every pass: the decisions, and what a controller would show. */
static void on_decisions(void *arg, struct sched *s, int64_t now,
                         const struct sched_decisions *dec)
{
    struct seen *w = arg;
    record(&w->log, now, dec);
    int64_t oldest_pending = INT64_MAX;
    bool reserved = false;
    for (size_t i = 0; i < w->t->njobs; i++) {
        struct sched_job_status st;
        if (sched_job_status(s, i + 1, &st, NULL) < 0 ||
            st.state != SCHED_JOB_PENDING)
            continue;
        reserved |= st.wait == SCHED_WAIT_RESERVED;
        if (w->t->jobs[i].submit_ms < oldest_pending)
            oldest_pending = w->t->jobs[i].submit_ms;
    }
    w->reserved += reserved;
    for (size_t i = 0; i < dec->npreempts; i++) {
        const struct sched_preempt *p = &dec->preempts[i];
        if (p->reason == SCHED_PREEMPT_RECLAIM) {
            w->reclaims++;
            continue;
        }
        const struct sim_job *v = &w->t->jobs[p->job - 1];
        w->las_preempts++;
        if (w->ckpt_project &&
            strcmp(w->t->names.names[v->project], w->ckpt_project) != 0)
            w->las_not_ckpt++;
    }
    for (size_t i = 0; i < dec->nstarts; i++) {
        if (w->t->jobs[dec->starts[i].job - 1].submit_ms > oldest_pending)
            w->backfilled++;
    }
}

struct replay {
    struct sim_trace t;
    struct sim_cluster c;
    struct sim_result r;
    struct seen seen;
};

/* las: the LAS policy (LAS_CKPT: every job checkpointing, free restore;
 * LAS_HOLD: the same with a 20-minute hold, LAS_CKPT without one);
 * DEFAULT_CKPT: the default policy with every job checkpointing, free
 * restore (its LAS rules, the default hold); DEFAULT_P0: the same with
 * only project p0's jobs checkpointing. */
enum { LAS_OFF = 0, LAS_CKPT, LAS_PLAIN, LAS_HOLD, DEFAULT_CKPT, DEFAULT_P0 };
static void replay_run_policy(struct replay *rp, const char *cluster,
                              const char *trace, const char *tenants,
                              bool all_reasons, bool controller_settings,
                              int las)
{
    struct sh_error err = {0};
    struct sim_options o;
    memset(rp, 0, sizeof(*rp));
    sim_options_init(&o);
    o.sched.all_reasons = all_reasons;
    if (las) {
        if (las != DEFAULT_CKPT && las != DEFAULT_P0)
            o.sched.policy = SCHED_POLICY_LAS;
        o.sched.las_quantum_ms = 60 * 1000;
    }
    if (las == DEFAULT_CKPT) {
        cr_assert(sim_resume_parse("all:0s", &o.resume[0], &err) == 0, "%s",
                  err.msg);
        o.nresume = 1;
    }
    if (las == DEFAULT_P0) {
        cr_assert(sim_resume_parse("p0:0s", &o.resume[0], &err) == 0, "%s",
                  err.msg);
        o.nresume = 1;
        rp->seen.ckpt_project = "p0";
    }
    if (las == LAS_CKPT || las == LAS_HOLD) {
        cr_assert(sim_resume_parse("all:0s", &o.resume[0], &err) == 0, "%s",
                  err.msg);
        o.nresume = 1;
        o.sched.las_hold_ms = las == LAS_HOLD ? 20 * 60 * 1000 : 0;
    }
    if (controller_settings) {
        o.sched.full_pass_interval_ms = CTL_FULL_PASS_MS;
        o.grace_ms = o.sched.preempt_grace_ms = CTL_GRACE_MS;
    }
    o.tenants = tenants;
    o.on_decisions = on_decisions;
    o.on_decisions_arg = &rp->seen;
    strbuf_init(&rp->seen.log, 1 << 26);
    rp->seen.t = &rp->t;
    cr_assert(sim_trace_parse(trace, "t.csv", SIM_FORMAT_AUTO, &rp->t, &err) ==
                  0,
              "%s", err.msg);
    cr_assert(sim_cluster_parse(cluster, &rp->c, &err) == 0, "%s", err.msg);
    cr_assert(sim_run(&rp->c, &rp->t, &o, &rp->r, &err) == 0, "%s", err.msg);
}

static void replay_run(struct replay *rp, const char *cluster,
                       const char *trace, const char *tenants, bool all_reasons,
                       bool controller_settings)
{
    replay_run_policy(rp, cluster, trace, tenants, all_reasons,
                      controller_settings, LAS_OFF);
}

static void replay_fini(struct replay *rp)
{
    strbuf_fini(&rp->seen.log);
    sim_result_fini(&rp->r);
    sim_cluster_fini(&rp->c);
    sim_trace_fini(&rp->t);
}

/* The first line where two decision logs part, for the failure message. */
static const char *first_difference(const char *a, const char *b)
{
    const char *line = a;
    for (; *a && *a == *b; a++, b++) {
        if (*a == '\n')
            line = a + 1;
    }
    return line;
}

static void assert_same_decisions(const struct replay *a,
                                  const struct replay *b, const char *what)
{
    const char *la = strbuf_str(&a->seen.log), *lb = strbuf_str(&b->seen.log);
    cr_assert(a->r.jobs == a->t.njobs, "%s: %zu of %zu jobs completed", what,
              a->r.jobs, a->t.njobs);
    cr_assert(strcmp(la, lb) == 0,
              "%s: decisions differ from:\n%.300s\nvs\n%.300s", what,
              first_difference(la, lb), first_difference(lb, la));
    for (size_t i = 0; i < a->t.njobs; i++) {
        cr_assert_eq(a->r.outcomes[i].first_start_ms,
                     b->r.outcomes[i].first_start_ms, "%s: job %zu", what,
                     i + 1);
        cr_assert_eq(a->r.outcomes[i].end_ms, b->r.outcomes[i].end_ms,
                     "%s: job %zu", what, i + 1);
    }
}

/* The replay exercised what the test is about. */
static void assert_overloaded(const struct replay *rp, const char *what)
{
    cr_assert(rp->seen.reserved > 10, "%s: only %zu passes with a reservation",
              what, rp->seen.reserved);
    cr_assert(rp->seen.backfilled > 10, "%s: only %zu backfilled starts", what,
              rp->seen.backfilled);
    cr_assert(rp->r.wait_avg_s > 600, "%s: jobs waited %.0f s on average", what,
              rp->r.wait_avg_s);
}

Test(sim_decisions, all_reasons_does_not_change_a_replay)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        char *trace = overloaded_trace(seed * 7777, 300);
        struct replay with, without;
        char what[64];
        /* The simulator's settings (full passes every 60 s: incremental
         * passes in between), then the controller's (every 1 s). */
        bool ctl = seed % 2 == 0;
        snprintf(what, sizeof(what), "seed %llu%s", (unsigned long long)seed,
                 ctl ? ", controller settings" : "");
        replay_run(&with, "4x8xH100-80GB@2", trace, NULL, true, ctl);
        replay_run(&without, "4x8xH100-80GB@2", trace, NULL, false, ctl);
        assert_overloaded(&with, what);
        assert_same_decisions(&with, &without, what);
        replay_fini(&with);
        replay_fini(&without);
        free(trace);
    }
}

/* Guarantees below the demand: in-quota jobs reclaim what others borrow. */
static const char *tenants = "project p0 guaranteed=12 limit=unlimited\n"
                             "project p1 guaranteed=12 limit=unlimited\n"
                             "project p2 guaranteed=8 limit=24\n"
                             "project p3 guaranteed=0 limit=16\n";

Test(sim_decisions, all_reasons_does_not_change_a_replay_with_quotas)
{
    for (uint64_t seed = 11; seed <= 12; seed++) {
        char *trace = overloaded_trace(seed * 7777, 300);
        struct replay with, without;
        char what[64];
        snprintf(what, sizeof(what), "seed %llu, quotas",
                 (unsigned long long)seed);
        replay_run(&with, "4x8xH100-80GB@2", trace, tenants, true, false);
        replay_run(&without, "4x8xH100-80GB@2", trace, tenants, false, false);
        cr_assert(with.r.preemptions > 0, "%s: nothing preempted", what);
        assert_same_decisions(&with, &without, what);
        replay_fini(&with);
        replay_fini(&without);
        free(trace);
    }
}

/* LAS, jobs checkpointing: preemptions by level, and the same decisions
 * whether or not reasons are given, with and without the hold (which
 * changes them). */
Test(sim_decisions, all_reasons_does_not_change_a_las_replay)
{
    for (uint64_t seed = 31; seed <= 32; seed++) {
        char *trace = overloaded_trace(seed * 7777, 300);
        struct replay nohold;
        replay_run_policy(&nohold, "4x8xH100-80GB@2", trace, NULL, false, true,
                          LAS_CKPT);
        static const int modes[] = {LAS_CKPT, LAS_HOLD};
        for (int k = 0; k < 2; k++) {
            int las = modes[k];
            struct replay with, without;
            char what[64];
            snprintf(what, sizeof(what), "seed %llu, las%s",
                     (unsigned long long)seed, las == LAS_HOLD ? ", hold" : "");
            replay_run_policy(&with, "4x8xH100-80GB@2", trace, NULL, true, true,
                              las);
            replay_run_policy(&without, "4x8xH100-80GB@2", trace, NULL, false,
                              true, las);
            cr_assert(with.r.preemptions > 0, "%s: nothing preempted", what);
            cr_assert(with.r.resumes > 0, "%s: nothing resumed", what);
            assert_same_decisions(&with, &without, what);
            if (las == LAS_HOLD)
                cr_assert(strcmp(strbuf_str(&with.seen.log),
                                 strbuf_str(&nohold.seen.log)) != 0,
                          "%s: the hold changed nothing", what);
            replay_fini(&with);
            replay_fini(&without);
        }
        replay_fini(&nohold);
        free(trace);
    }
}

/* ------------------------------------------- the controller's way */

/* Drive an engine as src/shoald/engine.c does: build() configures it
 * (defaults, the controller's full-pass interval and grace), sched_job_add()
 * as jobs are submitted, sched_job_end() as they end, one sched_run() per
 * batch before the loop sleeps (here: per instant, submissions first),
 * then the starts applied and every pending job's reason shown. */
struct ctl {
    struct sched *s;
    const struct sim_trace *t;
    int64_t *end; /* per job: when it ends, 0 = not running */
    struct strbuf log;
};

static void ctl_desc(const struct sim_trace *t, size_t i,
                     struct sched_job_desc *d)
{
    const struct sim_job *j = &t->jobs[i];
    memset(d, 0, sizeof(*d));
    d->id = i + 1;
    d->user = t->names.names[j->user];
    d->project = t->names.names[j->project];
    d->priority = (enum job_priority)j->prio;
    d->nodes = j->nodes;
    d->gpus = j->nodes > 0 ? j->gpus / j->nodes : j->gpus;
    d->submit_ms = j->submit_ms;
    d->time_limit_ms = j->limit_ms;
}

static void ctl_pass(struct ctl *c, int64_t now)
{
    struct sched_decisions dec;
    struct sh_error err;
    sched_decisions_init(&dec);
    cr_assert(sched_run(c->s, now, false, &dec, &err) == 0, "%s", err.msg);
    record(&c->log, now, &dec);
    cr_assert_eq(dec.npreempts, 0);
    for (size_t k = 0; k < dec.nstarts; k++) {
        size_t i = dec.starts[k].job - 1;
        const struct sim_job *j = &c->t->jobs[i];
        int64_t run = j->duration_ms;
        if (j->limit_ms > 0 && j->limit_ms < run)
            run = j->limit_ms; /* killed at its time limit */
        c->end[i] = now + run;
    }
    sched_decisions_fini(&dec);
    /* `shoal queue`: every pending job's estimate and reason. */
    for (size_t i = 0; i < c->t->njobs; i++) {
        struct sched_job_status st;
        char reason[256];
        if (sched_job_status(c->s, i + 1, &st, NULL) == 0 &&
            st.state == SCHED_JOB_PENDING)
            sched_job_reason(c->s, i + 1, reason, sizeof(reason));
    }
}

static void controller_replay(struct ctl *c, const struct sim_trace *t,
                              const struct sim_cluster *cl,
                              enum sched_policy policy)
{
    struct sched_config cfg;
    struct sh_error err;
    memset(c, 0, sizeof(*c));
    sched_config_init(&cfg);
    cfg.full_pass_interval_ms = CTL_FULL_PASS_MS;
    cfg.preempt_grace_ms = CTL_GRACE_MS;
    cfg.short_credit_ms = SCHED_SHORT_CREDIT_MS;
    cfg.policy = policy;
    cfg.las_quantum_ms = 60 * 1000;
    c->s = sched_create(&cfg, &err);
    cr_assert(c->s, "%s", err.msg);
    cr_assert(sim_cluster_apply(cl, c->s, &err) == 0, "%s", err.msg);
    c->t = t;
    c->end = calloc(t->njobs, sizeof(*c->end));
    strbuf_init(&c->log, 1 << 26);
    size_t a = 0;
    for (;;) {
        int64_t now = a < t->njobs ? t->jobs[a].submit_ms : INT64_MAX;
        for (size_t i = 0; i < t->njobs; i++) {
            if (c->end[i] > 0 && c->end[i] < now)
                now = c->end[i];
        }
        if (now == INT64_MAX)
            break;
        for (; a < t->njobs && t->jobs[a].submit_ms == now; a++) {
            struct sched_job_desc d;
            ctl_desc(t, a, &d);
            cr_assert(sched_job_check(c->s, &d, &err) == 0, "%s", err.msg);
            cr_assert(sched_job_add(c->s, &d, &err) == 0, "%s", err.msg);
        }
        for (size_t i = 0; i < t->njobs; i++) {
            if (c->end[i] == now) {
                cr_assert(sched_job_end(c->s, i + 1, now, &err) == 0, "%s",
                          err.msg);
                c->end[i] = 0;
            }
        }
        ctl_pass(c, now);
    }
    free(c->end);
    sched_destroy(c->s);
}

Test(sim_decisions, the_simulator_decides_as_the_controller)
{
    for (uint64_t seed = 21; seed <= 23; seed++) {
        char *trace = overloaded_trace(seed * 7777, 300);
        struct replay sim;
        struct ctl ctl;
        char what[64];
        snprintf(what, sizeof(what), "seed %llu", (unsigned long long)seed);
        replay_run(&sim, "4x8xH100-80GB@2", trace, NULL, false, true);
        controller_replay(&ctl, &sim.t, &sim.c, SCHED_POLICY_DEFAULT);
        const char *ls = strbuf_str(&sim.seen.log), *lc = strbuf_str(&ctl.log);
        cr_assert(strcmp(ls, lc) == 0,
                  "%s: the simulator's decisions differ from the "
                  "controller's from:\n%.300s\nvs\n%.300s",
                  what, first_difference(ls, lc), first_difference(lc, ls));
        assert_overloaded(&sim, what);
        strbuf_fini(&ctl.log);
        replay_fini(&sim);
        free(trace);
    }
}

/* The default policy with checkpointing jobs: its LAS rules preempt, and
 * the decisions are the same whether or not reasons are given. */
Test(sim_decisions,
     all_reasons_does_not_change_a_default_replay_that_checkpoints)
{
    for (uint64_t seed = 33; seed <= 34; seed++) {
        char *trace = overloaded_trace(seed * 7777, 300);
        struct replay with, without;
        char what[64];
        snprintf(what, sizeof(what), "seed %llu, default with checkpoints",
                 (unsigned long long)seed);
        replay_run_policy(&with, "4x8xH100-80GB@2", trace, NULL, true, true,
                          DEFAULT_CKPT);
        replay_run_policy(&without, "4x8xH100-80GB@2", trace, NULL, false, true,
                          DEFAULT_CKPT);
        cr_assert(with.r.preemptions > 0, "%s: nothing preempted", what);
        cr_assert(with.r.resumes > 0, "%s: nothing resumed", what);
        assert_same_decisions(&with, &without, what);
        replay_fini(&with);
        replay_fini(&without);
        free(trace);
    }
}

/* The default policy where only p0's jobs checkpoint, with quotas (p0
 * borrows beyond its guarantee): both kinds of preemption happen, every
 * LAS victim is a checkpointable job, and the decisions are the same
 * whether or not reasons are given. */
Test(sim_decisions,
     default_replay_where_some_jobs_checkpoint_takes_only_them_for_las)
{
    for (uint64_t seed = 35; seed <= 36; seed++) {
        char *trace = overloaded_trace(seed * 7777, 300);
        struct replay with, without;
        char what[64];
        snprintf(what, sizeof(what), "seed %llu, default, p0 checkpoints",
                 (unsigned long long)seed);
        replay_run_policy(&with, "4x8xH100-80GB@2", trace, tenants, true, true,
                          DEFAULT_P0);
        replay_run_policy(&without, "4x8xH100-80GB@2", trace, tenants, false,
                          true, DEFAULT_P0);
        cr_assert(with.seen.las_preempts > 0, "%s: no LAS preemption", what);
        cr_assert(with.seen.reclaims > 0, "%s: no reclaim", what);
        cr_assert(with.r.resumes > 0, "%s: nothing resumed", what);
        cr_assert_eq(with.seen.las_not_ckpt, 0,
                     "%s: %zu of %zu LAS victims do not checkpoint", what,
                     with.seen.las_not_ckpt, with.seen.las_preempts);
        assert_same_decisions(&with, &without, what);
        replay_fini(&with);
        replay_fini(&without);
        free(trace);
    }
}

/* The LAS policy (shoald --policy las) with jobs that do not checkpoint:
 * the same starts in both (nothing is preempted). */
Test(sim_decisions, the_simulator_decides_as_the_controller_under_las)
{
    char *trace = overloaded_trace(41 * 7777, 300);
    struct replay sim;
    struct ctl ctl;
    replay_run_policy(&sim, "4x8xH100-80GB@2", trace, NULL, false, true,
                      LAS_PLAIN);
    controller_replay(&ctl, &sim.t, &sim.c, SCHED_POLICY_LAS);
    const char *ls = strbuf_str(&sim.seen.log), *lc = strbuf_str(&ctl.log);
    cr_assert(strcmp(ls, lc) == 0,
              "las: the simulator's decisions differ from the "
              "controller's from:\n%.300s\nvs\n%.300s",
              first_difference(ls, lc), first_difference(lc, ls));
    assert_overloaded(&sim, "las");
    strbuf_fini(&ctl.log);
    replay_fini(&sim);
    free(trace);
}
