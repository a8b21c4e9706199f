/* SPDX-License-Identifier: Apache-2.0 */
/* Estimated starts for every pending job (sched_plan_estimates()).
 *
 * The plan walks the pending jobs in the queue order (sched_before()) and
 * gives each the earliest time its shape fits, on a copy of every GPU's
 * and slice's "free from" time: now when free, the estimated end (start +
 * time limit, or the default limit) of the running job holding it. The
 * job then holds the GPUs it was given until its own estimated end, so
 * every later job plans around it: the same rule as the reservations, run
 * down the whole queue (conservative backfill), but only to tell people
 * when their job should start; it decides nothing. Reservation holders and
 * jobs waiting for their victims keep the engine's own estimate.
 *
 * A node serves a job only from when the host CPUs and memory it asks are
 * free there, as the running jobs end (room_time()).
 *
 * Jobs that wait for a quota or a user limit, jobs that can never fit and
 * jobs that would not fit even once every running job has ended get no
 * estimate but the reason why (sched_job_estimate_note()); so do the jobs
 * beyond the first SCHED_PLAN_MAX of the order, to keep a plan at a few
 * milliseconds. The plan is recomputed only when something changed (a
 * pass, a job or node change) since the last one.
 */
#include "sched/sched_int.h"

#include <stdlib.h>
#include <string.h>

struct plan_node {
    uint32_t n;
    int64_t t;     /* when g GPUs of the model are free on it */
    uint64_t pick; /* those GPUs */
};

static int plan_node_cmp(const void *a, const void *b)
{
    const struct plan_node *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->n < y->n ? -1 : x->n > y->n;
}

/* A fingerprint of everything a plan reads: it changes with every pass,
 * job and node change the controller reports. */
static uint64_t plan_key(const struct sched *s)
{
    uint64_t k = s->full_passes * UINT64_C(0x9e3779b97f4a7c15);
    k ^= (s->incr_passes + 1) * UINT64_C(0xbf58476d1ce4e5b9);
    k ^= ((uint64_t)s->npending << 32 | s->nrunning) * UINT64_C(0x94d049bb);
    k ^= (uint64_t)s->free_whole * 7919 + (uint64_t)s->free_slices * 104729;
    return k | 1;
}

/* The free-from time of what job v holds. */
static int64_t held_until(const struct sched *s, uint32_t v, int64_t now)
{
    if (v == SCHED_NONE)
        return now;
    int64_t e = s->jobs[v].est;
    return e > now ? e : now;
}

struct plan_ctx {
    struct sched *s;
    int64_t now;
    int64_t *gpu_avail;   /* per GPU, at gpu_off[n] + g */
    int64_t *slice_avail; /* per slice, at slice_off[n][g] + k */
    uint32_t *gpu_off;
    uint32_t *slice_off; /* per GPU, flattened like gpu_avail */
    struct plan_node *pn;
    struct plan_node *chosen; /* the best model's nodes */
    uint8_t *ord;             /* per node, its GPUs by free-from time */
    /* Host CPUs and memory: per node (at room_off[n]) the running jobs'
     * shares, by their estimated end. */
    struct room_ev *room;
    uint32_t *room_off;
};

struct room_ev {
    int64_t end;
    uint32_t cpus;
    uint32_t mem;
};

static int room_ev_cmp(const void *a, const void *b)
{
    const struct room_ev *x = a, *y = b;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* The running jobs' host shares per node, sorted by end; -1 out of
 * memory. */
static int room_build(struct plan_ctx *c)
{
    struct sched *s = c->s;
    uint32_t nn = s->node_names.n;
    const uint32_t count[2] = {s->nrunning, s->ncpu_running};
    const uint32_t *list[2] = {s->running, s->cpu_running};
    c->room_off = calloc(nn + 2, sizeof(*c->room_off));
    if (!c->room_off)
        return -1;
    for (int pass = 0; pass < 2; pass++) {
        for (int l = 0; l < 2; l++) {
            for (uint32_t i = 0; i < count[l]; i++) {
                const struct sjob *v = &s->jobs[list[l][i]];
                if (v->host_cpus == 0 && v->host_mem == 0)
                    continue;
                for (int k = 0; k < v->nplace; k++) {
                    bool seen = false;
                    for (int e = 0; e < k && !seen; e++)
                        seen = v->place[e].node == v->place[k].node;
                    if (seen)
                        continue;
                    uint32_t n = v->place[k].node;
                    if (pass == 0) {
                        c->room_off[n + 2]++;
                        continue;
                    }
                    c->room[c->room_off[n + 1]++] =
                        (struct room_ev){held_until(s, list[l][i], c->now),
                                         v->host_cpus, v->host_mem};
                }
            }
        }
        if (pass == 0) {
            for (uint32_t n = 0; n < nn; n++)
                c->room_off[n + 2] += c->room_off[n + 1];
            c->room = malloc(sizeof(*c->room) * (c->room_off[nn + 1] + 1));
            if (!c->room)
                return -1;
        }
    }
    for (uint32_t n = 0; n < nn; n++)
        qsort(c->room + c->room_off[n], c->room_off[n + 1] - c->room_off[n],
              sizeof(*c->room), room_ev_cmp);
    return 0;
}

/* The latest of t and when node n has the host CPUs and memory job j asks
 * free, as its running jobs end (INT64_MAX: never). Jobs the plan placed
 * before j are not counted: an estimate, optimistic where several pending
 * jobs wait for one node's memory. */
static int64_t room_time(const struct plan_ctx *c, uint32_t n,
                         const struct sjob *j, int64_t t)
{
    const struct snode *nd = &c->s->nodes[n];
    if ((j->host_cpus == 0 && j->host_mem == 0) || node_room_now(nd, j))
        return t;
    if ((nd->cpus && j->host_cpus > nd->cpus) ||
        (nd->mem_mib && j->host_mem > nd->mem_mib))
        return INT64_MAX;
    int64_t cpus = (int64_t)nd->cpus_used + j->host_cpus - nd->cpus;
    int64_t mem = (int64_t)nd->mem_used + j->host_mem - nd->mem_mib;
    for (uint32_t i = c->room_off[n]; i < c->room_off[n + 1]; i++) {
        cpus -= c->room[i].cpus;
        mem -= c->room[i].mem;
        if ((nd->cpus == 0 || cpus <= 0) && (nd->mem_mib == 0 || mem <= 0))
            return c->room[i].end > t ? c->room[i].end : t;
    }
    return INT64_MAX;
}

static void node_sort(struct plan_ctx *c, uint32_t n)
{
    const struct snode *nd = &c->s->nodes[n];
    const int64_t *av = c->gpu_avail + c->gpu_off[n];
    uint8_t *o = c->ord + c->gpu_off[n];
    for (int i = 1; i < nd->ngpus; i++) {
        uint8_t x = o[i];
        int k = i;
        for (; k > 0 && av[o[k - 1]] > av[x]; k--)
            o[k] = o[k - 1];
        o[k] = x;
    }
}

/* When g whole GPUs of model m are free on node n (INT64_MAX: it has
 * fewer), and which (the earliest free) in *pick. */
static int64_t node_time(const struct plan_ctx *c, uint32_t n, uint16_t m,
                         uint32_t g, uint64_t *pick)
{
    const struct snode *nd = &c->s->nodes[n];
    uint64_t mb = 0;
    for (int i = 0; i < nd->nmodels; i++) {
        if (nd->models[i].model == m)
            mb = nd->models[i].mask;
    }
    mb &= nd->whole;
    if ((uint32_t)sched_popcount64(mb) < g)
        return INT64_MAX;
    const uint8_t *o = c->ord + c->gpu_off[n];
    uint64_t chosen = 0;
    uint32_t k = 0;
    for (int i = 0; i < nd->ngpus; i++) {
        if (!((mb >> o[i]) & 1))
            continue;
        chosen |= UINT64_C(1) << o[i];
        if (++k == g) {
            *pick = chosen;
            return c->gpu_avail[c->gpu_off[n] + o[i]];
        }
    }
    return INT64_MAX;
}

/* Whether a job's node wishes allow node n (the plan looks ahead, so a
 * node busy now still counts). */
static bool plan_node_ok(const struct sched *s, const struct sjob *j,
                         uint32_t n)
{
    const struct sfilter *f = j->filter;
    return !f || (n < f->nbits && bits_test(f->allow, n));
}

/* The latest of t and when every whole GPU of node n is free. */
static int64_t node_all_free(const struct plan_ctx *c, uint32_t n, int64_t t)
{
    const struct snode *nd = &c->s->nodes[n];
    for (int g = 0; g < nd->ngpus; g++) {
        if (((nd->whole >> g) & 1) && c->gpu_avail[c->gpu_off[n] + g] > t)
            t = c->gpu_avail[c->gpu_off[n] + g];
    }
    return t;
}

/* Plan a whole-GPU job of model mask `mask`: earliest start, or
 * INT64_MAX; marks the GPUs it takes from then until then + run. */
static int64_t plan_whole(struct plan_ctx *c, const struct sjob *j,
                          uint64_t mask, int64_t not_before, int64_t run)
{
    struct sched *s = c->s;
    int64_t best = INT64_MAX;
    uint32_t best_nn = 0;
    for (uint64_t b = mask; b; b &= b - 1) {
        uint16_t m = (uint16_t)__builtin_ctzll(b);
        if (m >= s->model_names.n)
            break;
        uint32_t nn, g;
        if (!job_shape(s, j, m, &nn, &g) || g == 0 || nn == 0)
            continue;
        uint32_t np = 0, first = 0;
        for (uint32_t n = 0; n < s->node_names.n; n++) {
            if (!s->nodes[n].indexed || !plan_node_ok(s, j, n))
                continue;
            uint64_t pick;
            int64_t t = node_time(c, n, m, g, &pick);
            if (t == INT64_MAX)
                continue;
            if (j->excl) { /* the whole node must be free */
                t = node_all_free(c, n, t);
                int64_t cpu = cpu_node_busy_until(s, n);
                t = cpu > t ? cpu : t;
            }
            t = room_time(c, n, j, t);
            if (t == INT64_MAX)
                continue;
            c->pn[np] = (struct plan_node){n, t, pick};
            if (c->pn[np].t < c->pn[first].t)
                first = np;
            np++;
        }
        if (np < nn)
            continue;
        if (nn == 1) {
            c->pn[0] = c->pn[first]; /* one node: the earliest */
        } else {
            qsort(c->pn, np, sizeof(*c->pn), plan_node_cmp);
        }
        int64_t t = c->pn[nn - 1].t;
        if (t < best) {
            best = t;
            best_nn = nn;
            memcpy(c->chosen, c->pn, sizeof(*c->pn) * nn);
        }
    }
    if (best == INT64_MAX)
        return INT64_MAX;
    int64_t start = best > not_before ? best : not_before;
    for (uint32_t i = 0; i < best_nn; i++) {
        uint32_t n = c->chosen[i].n;
        for (uint64_t b = c->chosen[i].pick; b; b &= b - 1)
            c->gpu_avail[c->gpu_off[n] + (uint32_t)__builtin_ctzll(b)] =
                start + run;
        node_sort(c, n);
    }
    return start;
}

/* Plan a slice job (or a flexible one's slice options): the slice that
 * frees first among those that would do. */
static int64_t plan_slice(struct plan_ctx *c, const struct sjob *j,
                          uint16_t profile, uint64_t mem, uint64_t mask,
                          int64_t not_before, int64_t run, bool apply)
{
    struct sched *s = c->s;
    int64_t best = INT64_MAX;
    uint32_t bi = 0;
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        const struct snode *nd = &s->nodes[n];
        if (!nd->indexed || !plan_node_ok(s, j, n))
            continue;
        int64_t room = room_time(c, n, j, 0);
        if (room == INT64_MAX)
            continue;
        for (int g = 0; g < nd->ngpus; g++) {
            const struct sgpu *gp = &nd->gpus[g];
            if (!gpu_serves_slices(gp, mask) || gpu_fenced_off(gp, j->project))
                continue;
            for (int k = 0; k < gp->nslices; k++) {
                const struct sslice *sl = &gp->slices[k];
                if (sl->mem < mem)
                    continue;
                if (profile != SCHED_NONE16 && !slice_is(s, sl, profile))
                    continue;
                uint32_t i =
                    c->slice_off[c->gpu_off[n] + (uint32_t)g] + (uint32_t)k;
                int64_t at =
                    c->slice_avail[i] > room ? c->slice_avail[i] : room;
                if (at < best) {
                    best = at;
                    bi = i;
                }
            }
        }
    }
    if (best == INT64_MAX)
        return INT64_MAX;
    int64_t start = best > not_before ? best : not_before;
    if (apply)
        c->slice_avail[bi] = start + run;
    return start;
}

static uint8_t plan_job(struct plan_ctx *c, uint32_t ji, int64_t *est)
{
    struct sched *s = c->s;
    const struct sjob *j = &s->jobs[ji];
    int64_t run = sched_job_duration(s, j);
    bool own = j->wait == SCHED_WAIT_RESERVED && j->est > 0;
    int64_t not_before = own ? j->est : c->now;
    uint64_t all = j->models ? j->models : ~UINT64_C(0);
    int64_t t = INT64_MAX;
    if (j->wait == SCHED_WAIT_PREEMPTING && j->est > 0) {
        /* Its GPUs are its victims': nothing else plans on them. */
        *est = j->est;
        return SCHED_EST_OK;
    }
    switch (j->wait) {
    case SCHED_WAIT_NEVER:
        return SCHED_EST_NEVER;
    case SCHED_WAIT_QUOTA_PROJECT:
    case SCHED_WAIT_QUOTA_TEAM:
    case SCHED_WAIT_USER_GPUS:
    case SCHED_WAIT_USER_JOBS:
        return SCHED_EST_LIMITS;
    default:
        break;
    }
    if (j->kind == SJOB_WHOLE) {
        t = plan_whole(c, j, model_mask_for(s, j), not_before, run);
    } else if (j->kind == SJOB_SLICE) {
        t = plan_slice(c, j, j->profile, (uint64_t)j->mem_mib << 20, all,
                       not_before, run, true);
    } else {
        /* Flexible: a slice or a whole GPU with the memory; the earlier. */
        uint64_t mem = (uint64_t)j->mem_mib << 20;
        int64_t ts =
            plan_slice(c, j, SCHED_NONE16, mem, all, not_before, run, false);
        uint64_t wm = 0;
        for (uint32_t m = 0; m < s->model_names.n && m < 64; m++) {
            if (((all >> m) & 1) && s->models[m].mem >= mem)
                wm |= UINT64_C(1) << m;
        }
        /* Whole GPUs are planned only when no slice comes first. */
        struct sjob one = *j;
        one.nodes = 1;
        one.gpus = 1;
        int64_t tw = INT64_MAX;
        if (wm) {
            int64_t *save = malloc(sizeof(*save) * c->gpu_off[s->node_names.n]);
            if (save) {
                memcpy(save, c->gpu_avail,
                       sizeof(*save) * c->gpu_off[s->node_names.n]);
                tw = plan_whole(c, &one, wm, not_before, run);
                if (tw >= ts)
                    memcpy(c->gpu_avail, save,
                           sizeof(*save) * c->gpu_off[s->node_names.n]);
                free(save);
            }
        }
        if (ts <= tw && ts != INT64_MAX)
            ts =
                plan_slice(c, j, SCHED_NONE16, mem, all, not_before, run, true);
        t = ts < tw ? ts : tw;
    }
    if (t == INT64_MAX)
        return SCHED_EST_NO_ROOM;
    *est = own ? j->est : t;
    return SCHED_EST_OK;
}

static int plan_grow(struct sched *s)
{
    if (s->plan_cap >= s->jobs_cap)
        return 0;
    int64_t *e = realloc(s->plan_est, sizeof(*e) * s->jobs_cap);
    if (!e)
        return -1;
    s->plan_est = e;
    uint8_t *w = realloc(s->plan_why, s->jobs_cap);
    if (!w)
        return -1;
    s->plan_why = w;
    s->plan_cap = s->jobs_cap;
    return 0;
}

int sched_plan_estimates(struct sched *s, int64_t now, struct sh_error *err)
{
    uint64_t key = plan_key(s);
    if (s->plan_key == key)
        return 0;
    if (sched_filters_fresh(s) < 0) {
        sh_errorf(err, SH_EINTERNAL, "out of memory planning estimates");
        return -1;
    }
    uint32_t nn = s->node_names.n;
    struct plan_ctx c = {.s = s, .now = now > s->last_now ? now : s->last_now};
    uint32_t *order = NULL;
    int rc = -1;
    if (plan_grow(s) < 0)
        goto out;
    c.gpu_off = malloc(sizeof(*c.gpu_off) * (nn + 1));
    c.pn = malloc(sizeof(*c.pn) * (nn + 1));
    c.chosen = malloc(sizeof(*c.chosen) * (nn + 1));
    order = malloc(sizeof(*order) * (s->npending + 1));
    if (!c.gpu_off || !c.pn || !c.chosen || !order)
        goto out;
    uint32_t ng = 0;
    for (uint32_t n = 0; n < nn; n++) {
        c.gpu_off[n] = ng;
        ng += s->nodes[n].ngpus;
    }
    c.gpu_off[nn] = ng;
    c.gpu_avail = malloc(sizeof(*c.gpu_avail) * (ng + 1));
    c.slice_off = malloc(sizeof(*c.slice_off) * (ng + 1));
    c.ord = malloc(ng + 1);
    if (!c.gpu_avail || !c.slice_off || !c.ord || room_build(&c) < 0)
        goto out;
    uint32_t nsl = 0;
    for (uint32_t n = 0; n < nn; n++) {
        const struct snode *nd = &s->nodes[n];
        for (int g = 0; g < nd->ngpus; g++) {
            const struct sgpu *gp = &nd->gpus[g];
            c.gpu_avail[c.gpu_off[n] + (uint32_t)g] =
                held_until(s, gp->job, c.now);
            c.slice_off[c.gpu_off[n] + (uint32_t)g] = nsl;
            c.ord[c.gpu_off[n] + (uint32_t)g] = (uint8_t)g;
            nsl += gp->nslices;
        }
        node_sort(&c, n);
    }
    c.slice_avail = malloc(sizeof(*c.slice_avail) * (nsl + 1));
    if (!c.slice_avail)
        goto out;
    for (uint32_t n = 0; n < nn; n++) {
        const struct snode *nd = &s->nodes[n];
        for (int g = 0; g < nd->ngpus; g++) {
            const struct sgpu *gp = &nd->gpus[g];
            for (int k = 0; k < gp->nslices; k++)
                c.slice_avail[c.slice_off[c.gpu_off[n] + (uint32_t)g] +
                              (uint32_t)k] =
                    held_until(s, gp->slices[k].job, c.now);
        }
    }
    uint32_t np = 0;
    for (uint32_t j = 0; j < s->jobs_cap && np < s->npending; j++) {
        if (s->jobs[j].state == SCHED_JOB_PENDING &&
            !sched_job_cpu(&s->jobs[j]))
            order[np++] = j;
    }
    qsort_r(order, np, sizeof(*order), sched_order_cmp, s);
    uint32_t planned = 0;
    for (uint32_t i = 0; i < np; i++) {
        uint32_t j = order[i];
        s->plan_est[j] = 0;
        if (planned >= SCHED_PLAN_MAX) {
            s->plan_why[j] = SCHED_EST_FAR;
            continue;
        }
        s->plan_why[j] = plan_job(&c, j, &s->plan_est[j]);
        if (s->plan_why[j] == SCHED_EST_OK)
            planned++;
    }
    s->plan_key = key;
    rc = 0;
out:
    if (rc < 0)
        sh_errorf(err, SH_EINTERNAL, "out of memory planning estimates");
    free(c.gpu_off);
    free(c.pn);
    free(c.chosen);
    free(c.gpu_avail);
    free(c.slice_off);
    free(c.ord);
    free(c.slice_avail);
    free(c.room);
    free(c.room_off);
    free(order);
    return rc;
}

bool sched_plan_get(const struct sched *s, uint32_t j, int64_t *est,
                    enum sched_est_why *why)
{
    if (s->plan_key != plan_key(s) || j >= s->plan_cap)
        return false;
    *est = s->plan_est[j];
    *why = (enum sched_est_why)s->plan_why[j];
    return true;
}

const char *sched_est_why_text(enum sched_est_why why)
{
    switch (why) {
    case SCHED_EST_OK:
        return "";
    case SCHED_EST_LIMITS:
        return "no estimate: it waits for a quota or user limit, which "
               "frees when other jobs end";
    case SCHED_EST_NEVER:
        return "no estimate: it can never fit the cluster as it is";
    case SCHED_EST_NO_ROOM:
        return "no estimate: it does not fit even once every running job "
               "ends (nodes down or re-sliced)";
    case SCHED_EST_FAR:
        return "no estimate: more than " SCHED_PLAN_MAX_TEXT
               " jobs are ahead of it";
    case SCHED_EST_STALE:
        return "no estimate: not planned yet";
    }
    return "no estimate";
}
