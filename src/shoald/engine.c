/* SPDX-License-Identifier: Apache-2.0 */
/* Binding jobs to nodes through the scheduling engine (see engine.h).
 *
 * Every job goes through the engine, those that ask for no GPU too: they
 * are the engine's own queue class (src/sched/sched_cpu.c), ordered and
 * limited like GPU jobs, and placed on the eligible up node with the
 * fewest running jobs. */
#include "shoald/engine.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lib/loop/loop.h"
#include "lib/model/job_place.h"
#include "lib/model/preset.h"
#include "lib/util/clock.h"
#include "lib/util/histogram.h"
#include "lib/util/log.h"
#include "lib/util/parse.h"
#include "sched/sched.h"
#include "shoald/auth.h"
#include "shoald/commit.h"
#include "shoald/gate.h"
#include "shoald/jobtab.h"
#include "shoald/nodetab.h"
#include "shoald/nodework.h"
#include "shoald/slices.h"
#include "shoald/tenancy.h"

#define MASTER_PORT_BASE 29500
#define MASTER_PORT_SPAN 500
#define FULL_PASS_MS SCHED_FULL_PASS_MS
#define EVICT_EVERY_MS 60000

struct cluster {
    struct sched *sched;
    struct sched_decisions dec;
    bool rebuild; /* rebuild the engine before the next pass */
    int64_t last_pass_ms;
    int64_t last_evict_ms;
    struct array_rt *arrays; /* arrays with a %M: tasks counted against it */
    uint64_t *gated;         /* pending jobs held or waiting for dependencies */
    int ngated;
    int gated_cap;
    bool gate_dirty;       /* a job changed: look at the gated ones again */
    int64_t next_begin_ms; /* earliest --begin among gated jobs; 0 none */
    struct histogram pass_seconds; /* each pass: engine + applying it */
};

/* Scheduling pass durations, in seconds: 100 us (a freed GPU given on a
 * small cluster) to 2.5 s (far past the 50 ms target on 10,000 GPUs). */
static const double pass_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                     0.005,  0.01,    0.025,  0.05,  0.1,
                                     0.25,   0.5,     1.0,    2.5};

/* The cluster decides placements, never states: a start, a preemption or
 * a dependency that can never be met is posted to the job lifecycle
 * (jobs.c, through d->job_transition). */
static int tell_lifecycle(struct shoald *d, struct job *job, enum job_state to,
                          const char *reason, struct sh_error *err)
{
    if (!d->job_transition)
        return sh_errorf(err, SH_EINTERNAL, "no job lifecycle to tell");
    return d->job_transition(d, job, to, reason, err);
}

/* ---- describing the world to the engine ---- */

static enum sched_node_state sched_state_of(const struct node *n)
{
    switch (node_state(n)) {
    case NODE_UP:
        return SCHED_NODE_UP;
    case NODE_DOWN:
        return SCHED_NODE_DOWN;
    case NODE_DRAINING:
        return SCHED_NODE_DRAINING;
    default:
        return SCHED_NODE_DRAINED;
    }
}

static void sync_node(struct shoald *d, struct node *n)
{
    struct sched_gpu_desc gpus[GPU_PER_NODE_MAX];
    struct node_rt *rt = nodetab_rt(d->nodes, n->name);
    for (int i = 0; i < n->ngpus; i++) {
        sched_gpu_desc_from_info(&n->gpus[i], &gpus[i]);
        /* MIG on but no instances yet: nothing can run there; nor on a GPU
         * waiting to be re-sliced. */
        if ((n->gpus[i].mig_enabled && n->gpus[i].nslices == 0) ||
            slices_gpu_blocked(d, n->name, i))
            gpus[i].unschedulable = true;
        /* Time-slices without MPS do not fence one share from another. */
        if (n->gpus[i].nslices > 0 &&
            n->gpus[i].slices[0].kind == GPU_SLICE_SHARED && !n->mps)
            gpus[i].unfenced = true;
    }
    struct sched_node_desc desc = {
        .name = n->name,
        .group = node_label_get(n, "switch"),
        .state = sched_state_of(n),
        .ngpus = n->ngpus,
        .gpus = gpus,
        .labels = n->labels,
        .nlabels = n->nlabels,
        .cpus = n->cpus,
        .mem = n->mem,
    };
    /* Runs we did not ask for may still hold GPUs there. */
    if (rt && rt->stale > 0 && desc.state == SCHED_NODE_UP)
        desc.state = SCHED_NODE_DRAINING;
    struct sh_error err;
    if (sched_node_set(d->cluster->sched, &desc, &err) < 0) {
        sh_log(LOG_WARNING, "cluster", "node %s: %s", n->name, err.msg);
        /* Held GPUs changed under running jobs (an agent reported another
         * layout): start the engine over from the tables. */
        if (err.code == SH_ECONFLICT)
            d->cluster->rebuild = true;
    }
}

static void job_desc(const struct job *job, struct sched_job_desc *desc)
{
    const struct job_spec *s = &job->spec;
    memset(desc, 0, sizeof(*desc));
    desc->id = job->id;
    desc->user = s->user;
    desc->project = s->project;
    desc->priority = s->priority;
    desc->nodes = s->nodes;
    desc->gpus = s->gpus_per_node;
    if (s->gpus_total) { /* nodes 0: the engine picks the fewest */
        desc->nodes = 0;
        desc->gpus = s->gpus_total;
    }
    desc->gpu_type = s->gpu_type;
    desc->slice = s->slice;
    desc->gpu_mem = s->gpu_mem;
    desc->flexible =
        s->gpu_mem > 0 && !s->slice && s->gpus_per_node == 1 && s->nodes == 1;
    desc->submit_ms = job->queued_ms;
    desc->time_limit_ms = s->time_limit * 1000;
    desc->nodelist = s->nodelist;
    desc->exclude = s->exclude;
    desc->constraint = s->constraint;
    desc->exclusive = s->exclusive;
    desc->checkpointable = s->checkpointable;
    desc->attained_gpu_ms = job->attained_gpu_ms;
    desc->cpus = s->cpus;
    desc->mem = s->mem;
}

static bool uses_gpus(const struct job *job)
{
    return job_spec_uses_gpus(&job->spec);
}

/* Map a job's placement (UUIDs) back to GPU and slice indices. */
static int placement_of(struct shoald *d, const struct job *job,
                        struct sched_place *places, int max)
{
    int n = 0;
    for (int a = 0; a < job->nalloc; a++) {
        const struct job_alloc *al = &job->alloc[a];
        const struct node *node = nodetab_get(d->nodes, al->node);
        if (!node || al->done)
            continue;
        if (!uses_gpus(job) && n < max) { /* a node, no GPU */
            places[n].node = node->name;
            places[n].gpu = -1;
            places[n].slice = -1;
            n++;
            continue;
        }
        for (int g = 0; g < al->ngpus && n < max; g++) {
            int slice;
            const struct gpu_info *gi =
                node_find_gpu(node, al->gpus[g], &slice);
            if (!gi)
                continue;
            places[n].node = node->name;
            places[n].gpu = (int)(gi - node->gpus);
            places[n].slice = slice;
            n++;
        }
    }
    return n;
}

/* An array with a limit (%M) on its tasks running or queued at once:
 * the tasks given to the engine (pending there, or running) are counted;
 * the rest wait aside, with the gated jobs, for a place. */
struct array_rt {
    uint64_t id;
    int active;
    UT_hash_handle hh;
};

static struct array_rt *array_rt_get(struct cluster *c, uint64_t id)
{
    struct array_rt *a;
    HASH_FIND(hh, c->arrays, &id, sizeof(id), a);
    if (!a && (a = calloc(1, sizeof(*a)))) {
        a->id = id;
        HASH_ADD(hh, c->arrays, id, sizeof(a->id), a);
    }
    return a;
}

/* Whether a task of a limited array must wait for a place. */
static bool array_full(struct cluster *c, const struct job *job)
{
    if (job->array_max <= 0 || job->array_counted)
        return false;
    struct array_rt *a = array_rt_get(c, job->array_id);
    return a && a->active >= job->array_max;
}

static void array_count(struct cluster *c, struct job *job)
{
    struct array_rt *a;
    if (job->array_max <= 0 || job->array_counted ||
        !(a = array_rt_get(c, job->array_id)))
        return;
    a->active++;
    job->array_counted = true;
}

/* A counted task left the engine (ended, held, changed): a place frees. */
static void array_uncount(struct cluster *c, struct job *job)
{
    struct array_rt *a;
    if (!job->array_counted)
        return;
    job->array_counted = false;
    HASH_FIND(hh, c->arrays, &job->array_id, sizeof(job->array_id), a);
    if (a && --a->active <= 0) {
        HASH_DEL(c->arrays, a);
        free(a);
    }
    c->gate_dirty = true;
}

static void arrays_clear(struct cluster *c)
{
    struct array_rt *a, *tmp;
    HASH_ITER (hh, c->arrays, a, tmp) {
        HASH_DEL(c->arrays, a);
        free(a);
    }
}

/* A pending job whose gate is closed waits here, out of the engine. */
static void gated_add(struct cluster *c, uint64_t id)
{
    for (int i = 0; i < c->ngated; i++) {
        if (c->gated[i] == id)
            return;
    }
    if (c->ngated == c->gated_cap) {
        int cap = c->gated_cap ? c->gated_cap * 2 : 64;
        uint64_t *p = realloc(c->gated, sizeof(*p) * (size_t)cap);
        if (!p) {
            sh_log(LOG_ERR, "cluster", "job %llu: out of memory",
                   (unsigned long long)id);
            return;
        }
        c->gated = p;
        c->gated_cap = cap;
    }
    c->gated[c->ngated++] = id;
    c->gate_dirty = true; /* a dependency that can never be met ends it */
}

/* The gate of a pending job now (gate.h). */
static enum gate_state gate_now(struct shoald *d, const struct job *job,
                                char *why, size_t size)
{
    return gate_of(d->jobs, d->store, shoald_now_ms(d), job, why, size);
}

static void engine_add_job(struct shoald *d, struct job *job)
{
    struct cluster *c = d->cluster;
    struct sched_job_desc desc;
    struct sh_error err;
    char why[JOB_REASON_MAX];
    if (job->state == JOB_PENDING &&
        (gate_now(d, job, why, sizeof(why)) != GATE_OPEN ||
         array_full(c, job))) {
        gated_add(c, job->id);
        return;
    }
    if (job->state == JOB_PENDING || job->state == JOB_RUNNING)
        array_count(c, job);
    job_desc(job, &desc);
    if (job->state == JOB_PENDING) {
        if (sched_job_add(c->sched, &desc, &err) < 0)
            sh_log(LOG_ERR, "cluster", "job %llu: %s",
                   (unsigned long long)job->id, err.msg);
        return;
    }
    if (!job_parts_active(job))
        return;
    struct sched_place places[JOB_NODES_MAX];
    int n = placement_of(d, job, places, JOB_NODES_MAX);
    if (n > 0 &&
        sched_job_recover(c->sched, &desc, job->start_ms, places, n, &err) < 0)
        sh_log(LOG_ERR, "cluster", "job %llu cannot be recovered: %s",
               (unsigned long long)job->id, err.msg);
}

/* Quota entries in the engine's units. out has room for
 * TENANCY_QUOTAS_MAX. */
static int quotas_to_units(const struct tenancy_quota *q, int n,
                           struct sched_quota *out)
{
    for (int i = 0; i < n; i++) {
        out[i].model = q[i].model;
        out[i].guaranteed = SCHED_GPUS(q[i].guaranteed);
        out[i].limit = q[i].limit == TENANCY_UNLIMITED ? SCHED_UNLIMITED
                                                       : SCHED_GPUS(q[i].limit);
    }
    return n;
}

/* Teams, projects and user limits into the engine. */
static void sync_tenants(struct shoald *d)
{
    struct cluster *c = d->cluster;
    struct sched_quota q[TENANCY_QUOTAS_MAX];
    struct sh_error err;
    if (!d->tenancy)
        return;
    for (const struct tenancy_team *t = tenancy_team_next(d->tenancy, NULL); t;
         t = tenancy_team_next(d->tenancy, t)) {
        int n = quotas_to_units(t->quotas, t->nquotas, q);
        if (sched_team_set(c->sched, t->name, q, n, &err) < 0)
            sh_log(LOG_ERR, "cluster", "team %s: %s", t->name, err.msg);
    }
    for (const struct tenancy_project *p =
             tenancy_project_next(d->tenancy, NULL);
         p; p = tenancy_project_next(d->tenancy, p)) {
        int n = quotas_to_units(p->quotas, p->nquotas, q);
        if (sched_project_set(c->sched, p->name, p->team, q, n, &err) < 0)
            sh_log(LOG_ERR, "cluster", "project %s: %s", p->name, err.msg);
    }
    for (const struct auth_user *u = auth_user_next(d->auth, NULL); u;
         u = auth_user_next(d->auth, u)) {
        const struct auth_user_limits *l = &u->limits;
        if (l->max_gpus == 0 && l->max_jobs == 0 && l->max_time_s == 0)
            continue;
        if (sched_user_set(c->sched, u->name,
                           l->max_gpus ? SCHED_GPUS(l->max_gpus)
                                       : SCHED_UNLIMITED,
                           l->max_jobs, l->max_time_s * 1000, &err) < 0)
            sh_log(LOG_ERR, "cluster", "user %s: %s", u->name, err.msg);
    }
}

/* (Re)build the engine and the nodes' active job lists from memory. */
static int build(struct shoald *d, struct sh_error *err)
{
    struct cluster *c = d->cluster;
    sched_destroy(c->sched);
    struct sched_config cfg;
    sched_config_init(&cfg);
    /* Full passes (order, fair share, reservations, preemption, every
     * reason) at most once a second; incremental ones between. */
    cfg.full_pass_interval_ms = FULL_PASS_MS;
    cfg.preempt_grace_ms = (int64_t)d->cfg.kill_grace_s * 1000;
    cfg.short_credit_ms = SCHED_SHORT_CREDIT_MS; /* small jobs first */
    cfg.policy = (enum sched_policy)d->cfg.policy;
    if (d->cfg.las_levels) /* checked when shoald started */
        sched_las_levels_parse(d->cfg.las_levels, &cfg, NULL);
    if (d->cfg.las_quantum_ms >= 0)
        cfg.las_quantum_ms = d->cfg.las_quantum_ms;
    if (d->cfg.las_hold_ms >= 0)
        cfg.las_hold_ms = d->cfg.las_hold_ms;
    if (d->cfg.las_starve_factor >= 0)
        cfg.las_starve_factor = d->cfg.las_starve_factor;
    if (d->cfg.las_starve_max_ms >= 0)
        cfg.las_starve_max_ms = d->cfg.las_starve_max_ms;
    if (d->cfg.las_hold_gpus >= 0)
        cfg.las_hold_gpus = d->cfg.las_hold_gpus;
    /* Sliced GPUs can become whole again only when shoald re-slices. */
    cfg.reslice = d->cfg.reslice_on_demand;
    c->sched = sched_create(&cfg, err);
    if (!c->sched)
        return -1;
    c->ngated = 0; /* engine_add_job() gates them again */
    arrays_clear(c);
    for (struct job *j = jobtab_next(d->jobs, NULL); j;
         j = jobtab_next(d->jobs, j))
        j->array_counted = false; /* counted again as they are added */
    c->rebuild = false;
    sync_tenants(d);
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n)) {
        struct node_rt *rt = nodetab_rt(d->nodes, n->name);
        rt->njobs = 0;
        sync_node(d, n);
    }
    for (struct job *j = jobtab_next(d->jobs, NULL); j;
         j = jobtab_next(d->jobs, j)) {
        if (job_state_is_terminal(j->state) && !j->releasing) {
            /* Finished jobs are the usage history behind fair share. */
            if (j->start_ms > 0 && j->end_ms > j->start_ms)
                sched_usage_seed(c->sched, j->spec.project,
                                 cluster_slice_share_sum(d, j) *
                                     SCHED_UNITS_PER_GPU *
                                     (double)(j->end_ms - j->start_ms),
                                 j->end_ms, NULL);
            continue;
        }
        for (int a = 0; a < j->nalloc; a++) {
            struct node_rt *rt = nodetab_rt(d->nodes, j->alloc[a].node);
            if (rt && !j->alloc[a].done)
                node_rt_add_job(rt, j->id);
        }
        engine_add_job(d, j);
    }
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n))
        n->running = nodetab_rt(d->nodes, n->name)->njobs;
    d->schedule_pending = true;
    return 0;
}

/* ---- periodic duties (shoald_cron in main.c calls them) ---- */

void cluster_tick(struct shoald *d, int64_t now)
{
    /* Finished jobs leave memory after --keep-finished (they stay in the
     * store: `shoal show` and history still find them). */
    if (now - d->cluster->last_evict_ms >= EVICT_EVERY_MS) {
        d->cluster->last_evict_ms = now;
        jobtab_evict_finished(d->jobs, now - d->cfg.keep_finished_ms);
    }
    /* A pass now and then even without events: the engine runs its full
     * pass (preemption, reservations, reasons) when one is due. */
    if (now - d->cluster->last_pass_ms >= FULL_PASS_MS)
        shoald_schedule_soon(d);
    /* A gated job's --begin came: look at the gates again. */
    if (d->cluster->next_begin_ms > 0 && now >= d->cluster->next_begin_ms) {
        d->cluster->next_begin_ms = 0;
        d->cluster->gate_dirty = true;
        shoald_schedule_soon(d);
    }
}

int cluster_create(struct shoald *d, struct sh_error *err)
{
    d->cluster = calloc(1, sizeof(*d->cluster));
    if (!d->cluster)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    sched_decisions_init(&d->cluster->dec);
    histogram_init(&d->cluster->pass_seconds, pass_bounds,
                   (int)(sizeof(pass_bounds) / sizeof(pass_bounds[0])));
    /* A controller that just started gives every known node one heartbeat
     * timeout to reconnect before its jobs are declared lost. */
    nodetab_grace(d->nodes, shoald_now_ms(d), true);
    if (build(d, err) < 0)
        return -1;
    return 0;
}

void cluster_destroy(struct shoald *d)
{
    struct cluster *c = d->cluster;
    if (!c)
        return;
    sched_decisions_fini(&c->dec);
    sched_destroy(c->sched);
    free(c->gated);
    arrays_clear(c);
    free(c);
    d->cluster = NULL;
}

void cluster_reloaded(struct shoald *d)
{
    if (d->cluster)
        d->cluster->rebuild = true;
    shoald_schedule_soon(d);
}

void cluster_tenants_changed(struct shoald *d)
{
    if (d->cluster)
        d->cluster->rebuild = true;
    shoald_schedule_soon(d);
}

/* ---- submission checks ---- */

/* A slice no GPU has now, but one a GPU of the cluster could be sliced
 * into (by an admin, or by re-slicing on demand): the job may wait. */
static bool slice_possible(struct shoald *d, const struct job_spec *spec)
{
    if (!spec->slice || spec->nodes != 1)
        return false;
    bool shared = strncmp(spec->slice, "shared", 6) == 0;
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n)) {
        for (int g = 0; g < n->ngpus; g++) {
            const struct gpu_info *gi = &n->gpus[g];
            if (spec->gpu_type && strcmp(spec->gpu_type, gi->model) != 0)
                continue;
            if (shared || (gi->mig_capable &&
                           preset_profile_find(gi->model, spec->slice)))
                return true;
        }
    }
    return false;
}

int cluster_check_submit(struct shoald *d, const struct job_spec *spec,
                         struct sh_error *err)
{
    const struct auth_user *u = auth_user_get(d->auth, spec->user);
    if (u && u->limits.max_time_s > 0) {
        char lim[32];
        format_duration(u->limits.max_time_s, lim, sizeof(lim));
        if (spec->time_limit == 0)
            return sh_errorf(err, SH_EQUOTA,
                             "limit: user %s must give a time limit of at "
                             "most %s (--time)",
                             spec->user, lim);
        if (spec->time_limit > u->limits.max_time_s)
            return sh_errorf(err, SH_EQUOTA,
                             "limit: user %s may run jobs for at most %s",
                             spec->user, lim);
    }
    if (!job_spec_uses_gpus(spec)) {
        int up = 0;
        for (struct node *n = nodetab_next(d->nodes, NULL); n;
             n = nodetab_next(d->nodes, n))
            up++;
        if (up > 0 && spec->nodes > up)
            return sh_errorf(err, SH_EINVAL,
                             "the job needs %d nodes but the cluster has %d",
                             spec->nodes, up);
        return 0;
    }
    /* With no node known yet, nothing can be judged: accept and wait. */
    if (nodetab_count(d->nodes) == 0)
        return 0;
    struct job tmp;
    memset(&tmp, 0, sizeof(tmp));
    tmp.spec = *spec;
    struct sched_job_desc desc;
    job_desc(&tmp, &desc);
    if (d->cluster->rebuild && build(d, err) < 0)
        return -1;
    if (sched_job_check(d->cluster->sched, &desc, err) < 0 &&
        !slice_possible(d, spec))
        return -1;
    if (sched_job_check_limits(d->cluster->sched, &desc, err) < 0)
        return -1;
    return 0;
}

/* ---- starting jobs ---- */

static int pick_master_port(struct shoald *d, const char *node)
{
    struct node_rt *rt = nodetab_rt(d->nodes, node);
    bool used[MASTER_PORT_SPAN] = {false};
    for (int i = 0; rt && i < rt->njobs; i++) {
        const struct job *j = jobtab_get(d->jobs, rt->jobs[i]);
        if (j && j->master_port >= MASTER_PORT_BASE &&
            j->master_port < MASTER_PORT_BASE + MASTER_PORT_SPAN)
            used[j->master_port - MASTER_PORT_BASE] = true;
    }
    for (int p = 0; p < MASTER_PORT_SPAN; p++) {
        if (!used[p])
            return MASTER_PORT_BASE + p;
    }
    return MASTER_PORT_BASE;
}

static double slice_share(const struct gpu_info *g, int slice)
{
    if (slice < 0)
        return 1.0;
    return (double)g->slices[slice].share_num / g->slices[slice].share_den;
}

/* Build the placement from engine places (grouped by node, node order). */
static struct job_alloc *alloc_from_places(struct shoald *d,
                                           const struct sched_place *p, int n,
                                           int *nalloc)
{
    struct job_alloc *alloc = calloc((size_t)n, sizeof(*alloc));
    int na = 0;
    if (!alloc)
        return NULL;
    for (int i = 0; i < n; i++) {
        const struct node *node = nodetab_get(d->nodes, p[i].node);
        if (na == 0 || strcmp(alloc[na - 1].node, node->name) != 0) {
            alloc[na].node = strdup(node->name);
            alloc[na].gpus = calloc((size_t)n, sizeof(char *));
            alloc[na].exit_code = -1;
            na++;
            if (!alloc[na - 1].node || !alloc[na - 1].gpus)
                goto oom;
        }
        if (p[i].gpu < 0)
            continue; /* a job without GPUs: the node only */
        const struct gpu_info *g = &node->gpus[p[i].gpu];
        const char *uuid =
            p[i].slice >= 0 ? g->slices[p[i].slice].uuid : g->uuid;
        struct job_alloc *a = &alloc[na - 1];
        if (!(a->gpus[a->ngpus] = strdup(uuid)))
            goto oom;
        a->ngpus++;
        a->share += slice_share(g, p[i].slice);
    }
    *nalloc = na;
    return alloc;
oom:
    job_alloc_free(alloc, na);
    return NULL;
}

static void start_job(struct shoald *d, struct job *job,
                      struct job_alloc *alloc, int nalloc)
{
    struct sh_error err;
    job_set_alloc(job, alloc, nalloc);
    job->master_port = pick_master_port(d, alloc[0].node);
    free(job->image_digest); /* each attempt resolves its reference anew */
    job->image_digest = NULL;
    /* The model the job's GPU-hours count for in usage reports. */
    free(job->gpu_model);
    job->gpu_model = NULL;
    const struct node *first = nodetab_get(d->nodes, alloc[0].node);
    if (first && alloc[0].ngpus > 0) {
        int slice;
        const struct gpu_info *gi =
            node_find_gpu(first, alloc[0].gpus[0], &slice);
        if (gi)
            job->gpu_model = strdup(gi->model);
    }
    job->util_sum = 0;
    job->util_ms = 0;
    job->idle_since_ms = 0;
    job->idle = false;
    if (tell_lifecycle(d, job, JOB_RUNNING, NULL, &err) < 0) {
        sh_log(LOG_ERR, "cluster", "job %llu cannot start: %s",
               (unsigned long long)job->id, err.msg);
        return;
    }
    job_set_reason(job, NULL);
    job->est_start_ms = 0;
    for (int a = 0; a < nalloc; a++) {
        struct node_rt *rt = nodetab_rt(d->nodes, alloc[a].node);
        node_rt_add_job(rt, job->id);
        nodetab_get(d->nodes, alloc[a].node)->running = rt->njobs;
        cluster_node_touch(d, alloc[a].node);
    }
    sh_debug("cluster", "started job=%llu nodes=%d first=%s",
             (unsigned long long)job->id, nalloc, alloc[0].node);
}

static void apply_starts(struct shoald *d)
{
    struct cluster *c = d->cluster;
    for (size_t i = 0; i < c->dec.nstarts; i++) {
        const struct sched_start *st = &c->dec.starts[i];
        struct job *job = jobtab_get(d->jobs, st->job);
        if (!job || job->state != JOB_PENDING) {
            sched_job_end(c->sched, st->job, shoald_now_ms(d), NULL);
            continue;
        }
        int nalloc;
        struct job_alloc *alloc = alloc_from_places(
            d, &c->dec.places[st->first], st->nplaces, &nalloc);
        if (!alloc) {
            c->rebuild = true;
            return;
        }
        start_job(d, job, alloc, nalloc);
    }
}

static void apply_preempts(struct shoald *d)
{
    struct cluster *c = d->cluster;
    for (size_t i = 0; i < c->dec.npreempts; i++) {
        const struct sched_preempt *p = &c->dec.preempts[i];
        struct job *job = jobtab_get(d->jobs, p->job);
        struct job *for_job = jobtab_get(d->jobs, p->for_job);
        if (!job || job->state != JOB_RUNNING)
            continue;
        char reason[JOB_REASON_MAX];
        snprintf(reason, sizeof(reason),
                 "preempted: project %s reclaims its guaranteed GPUs for job "
                 "%llu",
                 for_job ? for_job->spec.project : "?",
                 (unsigned long long)p->for_job);
        struct sh_error err;
        if (tell_lifecycle(d, job, JOB_PREEMPTED, reason, &err) < 0)
            sh_log(LOG_ERR, "cluster", "job %llu: %s",
                   (unsigned long long)job->id, err.msg);
        else
            sh_log(LOG_NOTICE, "cluster", "preempting job=%llu for job=%llu",
                   (unsigned long long)job->id, (unsigned long long)p->for_job);
    }
}

/* Look at the gated jobs again after a change: an open gate sends the
 * job to the engine, one that can never open cancels it with the reason
 * (which may open other gates: afterany, afternotok). */
static void gate_recheck(struct shoald *d)
{
    struct cluster *c = d->cluster;
    int64_t now = shoald_now_ms(d);
    for (int round = 0; c->gate_dirty && round < 16; round++) {
        c->gate_dirty = false;
        c->next_begin_ms = 0;
        for (int i = 0; i < c->ngated;) {
            struct job *job = jobtab_get(d->jobs, c->gated[i]);
            char why[JOB_REASON_MAX];
            enum gate_state g = GATE_OPEN;
            if (job && job->state == JOB_PENDING)
                g = gate_of(d->jobs, d->store, now, job, why, sizeof(why));
            if (g == GATE_HELD || g == GATE_WAIT ||
                (g == GATE_OPEN && array_full(c, job))) {
                /* The earliest --begin to come, for the timer. */
                int64_t b = job ? job->spec.begin_ms : 0;
                if (b > now && (c->next_begin_ms == 0 || b < c->next_begin_ms))
                    c->next_begin_ms = b;
                i++;
                continue;
            }
            /* In order: an array's tasks get their places by index. */
            memmove(&c->gated[i], &c->gated[i + 1],
                    sizeof(*c->gated) * (size_t)(c->ngated - i - 1));
            c->ngated--;
            if (!job || job->state != JOB_PENDING)
                continue;
            if (g == GATE_NEVER) {
                struct sh_error err;
                if (tell_lifecycle(d, job, JOB_CANCELLED, why, &err) < 0)
                    sh_log(LOG_ERR, "cluster", "job %llu: %s",
                           (unsigned long long)job->id, err.msg);
                continue;
            }
            engine_add_job(d, job);
            shoald_schedule_soon(d);
        }
    }
}

void cluster_job_hold(struct shoald *d, struct job *job)
{
    struct cluster *c = d->cluster;
    sched_job_remove(c->sched, job->id, NULL);
    array_uncount(c, job);
    gated_add(c, job->id);
    shoald_schedule_soon(d);
}

void cluster_job_updated(struct shoald *d, struct job *job)
{
    struct cluster *c = d->cluster;
    if (job->state == JOB_RUNNING) {
        for (int a = 0; a < job->nalloc; a++) {
            if (!job->alloc[a].done)
                cluster_node_touch(d, job->alloc[a].node);
        }
        return;
    }
    if (job->state != JOB_PENDING)
        return;
    /* Out of the engine and in again as it is now; a gated job is
     * looked at again. */
    sched_job_remove(c->sched, job->id, NULL);
    array_uncount(c, job);
    engine_add_job(d, job);
    c->gate_dirty = true;
    shoald_schedule_soon(d);
}

void cluster_job_release(struct shoald *d, struct job *job)
{
    (void)job;
    d->cluster->gate_dirty = true;
    shoald_schedule_soon(d);
}

bool cluster_pass_due(const struct shoald *d)
{
    const struct cluster *c = d->cluster;
    return c && (d->schedule_pending || c->rebuild || c->gate_dirty);
}

void cluster_before_sleep(struct shoald *d)
{
    struct cluster *c = d->cluster;
    struct sh_error err;
    if (c->rebuild && build(d, &err) < 0) {
        sh_log(LOG_ERR, "cluster", "engine rebuild failed: %s", err.msg);
        return;
    }
    gate_recheck(d);
    if (!d->schedule_pending)
        return;
    d->schedule_pending = false;
    c->last_pass_ms = shoald_now_ms(d);
    int64_t t0 = clock_mono_us();
    if (sched_run(c->sched, c->last_pass_ms, false, &c->dec, &err) < 0) {
        sh_log(LOG_ERR, "cluster", "scheduling pass failed: %s", err.msg);
        c->rebuild = true;
        return;
    }
    apply_preempts(d);
    apply_starts(d);
    histogram_observe(&c->pass_seconds, (double)(clock_mono_us() - t0) / 1e6);
}

const struct histogram *cluster_pass_histogram(const struct shoald *d)
{
    return d->cluster ? &d->cluster->pass_seconds : NULL;
}

/* ---- job events ---- */

void cluster_job_added(struct shoald *d, struct job *job)
{
    if (!d->cluster)
        return;
    engine_add_job(d, job);
    shoald_schedule_soon(d);
}

/* All parts of a job are gone: the engine sees its GPUs (or, for a job
 * without GPUs, its place on its nodes) free. */
void cluster_job_free(struct shoald *d, struct job *job)
{
    struct cluster *c = d->cluster;
    if (!c)
        return;
    sched_job_end(c->sched, job->id, shoald_now_ms(d), NULL);
    if (job->start_ms > 0 && uses_gpus(job)) {
        /* Its service so far, for the LAS policy's level when requeued. */
        int64_t end =
            job->end_ms > job->start_ms ? job->end_ms : shoald_now_ms(d);
        job->attained_gpu_ms += (int64_t)(cluster_slice_share_sum(d, job) *
                                          (double)(end - job->start_ms));
    }
}

void cluster_job_ended(struct shoald *d, struct job *job, enum job_state from)
{
    struct cluster *c = d->cluster;
    if (!c)
        return;
    array_uncount(c, job);
    if (from == JOB_PENDING && job->state == JOB_CANCELLED) {
        sched_job_remove(c->sched, job->id, NULL);
    } else if (from == JOB_RUNNING) {
        /* Tell every node still running a part to stop it. */
        for (int a = 0; a < job->nalloc; a++) {
            if (!job->alloc[a].done)
                cluster_node_touch(d, job->alloc[a].node);
        }
    }
}

void cluster_job_changed(struct shoald *d)
{
    struct cluster *c = d->cluster;
    if (!c)
        return;
    if (c->ngated > 0)
        c->gate_dirty = true; /* a dependency may be met now */
}

int cluster_part_gone(struct shoald *d, struct job *job, const char *node,
                      int exit_code, int exit_signal, struct sh_error *err)
{
    int part = -1;
    for (int a = 0; a < job->nalloc; a++) {
        if (strcmp(job->alloc[a].node, node) == 0)
            part = a;
    }
    if (part < 0)
        return sh_errorf(err, SH_ENOTFOUND, "job %llu has no part on %s",
                         (unsigned long long)job->id, node);
    struct job_alloc *al = &job->alloc[part];
    if (al->done)
        return 0; /* a repeated report */
    al->done = true;
    al->exit_code = exit_code;
    al->exit_signal = exit_signal;
    struct node_rt *rt = nodetab_rt(d->nodes, node);
    struct node *n = nodetab_get(d->nodes, node);
    if (rt) {
        node_rt_remove_job(rt, job->id);
        cluster_node_touch(d, node);
        if (n)
            n->running = rt->njobs;
    }
    return 1;
}

/* ---- nodes ---- */

void cluster_node_changed(struct shoald *d, struct node *n)
{
    if (!d->cluster)
        return;
    sync_node(d, n);
    shoald_schedule_soon(d);
}

void cluster_node_removed(struct shoald *d, const char *name)
{
    struct node *n = nodetab_get(d->nodes, name);
    if (!n)
        return;
    struct sh_error err;
    sh_errorf(&err, SH_ENOTFOUND, "node %s was removed", name);
    nodework_wake(d, n, &err);
    if (sched_node_remove(d->cluster->sched, name, &err) < 0 &&
        err.code == SH_ECONFLICT) {
        /* Jobs the engine still holds there (the table saw none): start
         * the engine over from the tables, which no longer have it. */
        sh_log(LOG_WARNING, "cluster", "node %s: %s", name, err.msg);
        d->cluster->rebuild = true;
    }
    nodetab_remove(d->nodes, name);
    shoald_schedule_soon(d);
}

/* ---- views ---- */

double cluster_slice_share_sum(const struct shoald *d, const struct job *job)
{
    (void)d;
    double gpus = 0.0;
    for (int i = 0; i < job->nalloc; i++)
        gpus += job->alloc[i].share;
    return gpus;
}

void cluster_job_reason(struct shoald *d, const struct job *job, char *buf,
                        size_t size, int64_t *est)
{
    struct cluster *c = d->cluster;
    *est = 0;
    buf[0] = '\0';
    if (job->state != JOB_PENDING || !c)
        return;
    if (gate_now(d, job, buf, size) != GATE_OPEN)
        return; /* held, or waiting for a dependency: buf says which */
    if (job->array_max > 0 && !job->array_counted) {
        snprintf(buf, size,
                 "array: waits for a place: at most %d tasks of array %llu "
                 "run or queue at once",
                 job->array_max, (unsigned long long)job->array_id);
        return;
    }
    if (nodetab_count(d->nodes) == 0) {
        snprintf(buf, size, "resources: no node has joined yet");
        return;
    }
    /* Estimates come from one plan down the queue, made again only when
     * something changed since the last one. */
    struct sh_error err;
    if (sched_plan_estimates(c->sched, shoald_now_ms(d), &err) < 0)
        sh_log(LOG_WARNING, "cluster", "estimates: %s", err.msg);
    struct sched_job_status st;
    if (sched_job_status(c->sched, job->id, &st, NULL) == 0) {
        *est = st.est_start_ms;
        sched_job_reason(c->sched, job->id, buf, size);
    }
}

const char *cluster_job_wait_kind(struct shoald *d, const struct job *job)
{
    struct cluster *c = d->cluster;
    char why[JOB_REASON_MAX];
    if (job->state != JOB_PENDING || !c)
        return "";
    switch (gate_now(d, job, why, sizeof(why))) {
    case GATE_HELD:
        return "held";
    case GATE_WAIT:
    case GATE_NEVER:
        return "dependency";
    case GATE_OPEN:
        break;
    }
    if (job->array_max > 0 && !job->array_counted)
        return "array";
    struct sched_job_status st;
    if (sched_job_status(c->sched, job->id, &st, NULL) < 0)
        return "new";
    return sched_wait_name(st.wait);
}

const char *cluster_job_estimate_note(struct shoald *d, const struct job *job)
{
    struct cluster *c = d->cluster;
    struct sched_job_status st;
    char why[JOB_REASON_MAX];
    if (job->state != JOB_PENDING || !c)
        return "";
    switch (gate_now(d, job, why, sizeof(why))) {
    case GATE_HELD:
        return "no estimate: it is held";
    case GATE_WAIT:
    case GATE_NEVER:
        return "no estimate: it waits for a dependency";
    case GATE_OPEN:
        break;
    }
    if (job->array_max > 0 && !job->array_counted)
        return "no estimate: it waits for a place in its array";
    if (sched_job_status(c->sched, job->id, &st, NULL) < 0)
        return "no estimate: not planned yet";
    return sched_est_why_text(st.est_why);
}
