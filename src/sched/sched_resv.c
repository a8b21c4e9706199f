/* SPDX-License-Identifier: Apache-2.0 */
/* Reservations for backfill. The first blocked whole-GPU jobs of a full
 * pass (max_reservations of them; 1 is EASY backfill) get the earliest time
 * T at which they would fit, found by replaying the running jobs' ends
 * (start + time limit, or the default limit) on a shadow copy of each
 * node's free GPUs. The GPUs chosen at T are marked reserved: later jobs may
 * use them only if they end by T, so no later job delays the reservation.
 *
 * The walk takes the ends of the jobs without GPUs too, merged by time: an
 * exclusive job needs a node without them, and a node an exclusive job
 * runs on (with or without GPUs) is no one else's until that job ends.
 *
 * The shadow counts each node's host CPUs and memory too (a job's share
 * comes back when it ends), and a node holds a job's shape only with the
 * room it asks; the reservation holds that room (node_room() keeps later
 * jobs ending after T off it).
 *
 * GPUs reserved by an earlier reservation of the same pass never count as
 * free in the shadow (conservative: a later reservation never takes them).
 * Slice jobs get no reservation: they never compete with whole-GPU jobs for
 * GPUs, and each slice frees as soon as one job ends.
 */
#include "sched/sched_int.h"

#include <stdlib.h>
#include <string.h>

static inline uint64_t model_bits(const struct snode *nd, uint16_t m)
{
    for (int i = 0; i < nd->nmodels; i++) {
        if (nd->models[i].model == m)
            return nd->models[i].mask;
    }
    return 0;
}

/* GPUs of the node that a reservation (of a job before ji) holds, and
 * the host CPUs and memory those reservations need (each job once). */
static uint64_t reserved_bits(const struct sched *s, const struct snode *nd,
                              uint32_t ji, int64_t *cpus, int64_t *mem)
{
    uint64_t r = 0;
    uint32_t seen[SCHED_KMAX];
    int nseen = 0;
    *cpus = *mem = 0;
    if (nd->resv_epoch != s->epoch)
        return 0;
    for (int g = 0; g < nd->ngpus; g++) {
        const struct sgpu *gp = &nd->gpus[g];
        if (gp->resv_epoch != s->epoch || !resv_live(s, gp, ji))
            continue;
        r |= UINT64_C(1) << g;
        bool dup = false;
        for (int k = 0; k < nseen && !dup; k++)
            dup = seen[k] == gp->resv_job;
        if (dup)
            continue;
        seen[nseen++] = gp->resv_job;
        *cpus += s->jobs[gp->resv_job].host_cpus;
        *mem += s->jobs[gp->resv_job].host_mem;
    }
    return r;
}

/* A node without figures has room for anything. */
#define ROOM_ANY (INT64_MAX / 4)

static inline void shadow_load(struct sched *s, uint32_t n, uint32_t ji)
{
    struct snode *nd = &s->nodes[n];
    if (nd->shadow_stamp == s->stamp)
        return;
    int64_t rc, rm;
    nd->shadow_stamp = s->stamp;
    uint64_t held = reserved_bits(s, nd, ji, &rc, &rm);
    nd->shadow = nd->indexed ? nd->free & ~held : 0;
    nd->shadow_cpus =
        nd->cpus ? (int64_t)nd->cpus - nd->cpus_used - rc : ROOM_ANY;
    nd->shadow_mem =
        nd->mem_mib ? (int64_t)nd->mem_mib - nd->mem_used - rm : ROOM_ANY;
    nd->shadow_ncpu = nd->ncpu;
    nd->shadow_excl = nd->excl;
    nd->shadow_held = 0;
    if (nd->excl != SCHED_NONE) {
        nd->shadow_held = nd->shadow;
        nd->shadow = 0;
    }
}

struct rmodel {
    uint16_t m;
    uint32_t nn, g;
    uint32_t cnt; /* nodes whose shadow holds g GPUs of m */
};

/* The shadow-free GPUs of model m on node n that job ji may use: none on
 * a node its wishes exclude, and for an exclusive job none unless every
 * whole GPU of the node is free in the shadow. */
static inline uint64_t resv_bits(const struct sched *s, const struct sjob *j,
                                 uint32_t n, uint16_t m)
{
    const struct snode *nd = &s->nodes[n];
    const struct sfilter *f = j->filter;
    if (f && !(n < f->nbits && bits_test(f->allow, n)))
        return 0;
    if (j->excl &&
        ((nd->shadow & nd->whole) != nd->whole || nd->shadow_ncpu > 0))
        return 0;
    if (nd->shadow_cpus < (int64_t)j->host_cpus ||
        nd->shadow_mem < (int64_t)j->host_mem)
        return 0;
    return nd->shadow & model_bits(nd, m);
}

/* Whether node n's shadow holds shape i for job ji (before and after a
 * change, for the counts of jobs without wishes). */
static inline bool shape_fits(const struct sched *s, uint32_t ji, uint32_t n,
                              const struct rmodel *r)
{
    return (uint32_t)sched_popcount64(resv_bits(s, &s->jobs[ji], n, r->m)) >=
           r->g;
}

/* Around a change to node n's shadow: which shapes it held before, then
 * the counts moved by what it holds after. Jobs with wishes recount(). */
static void shapes_before(const struct sched *s, uint32_t ji, uint32_t n,
                          const struct rmodel *rm, int nrm, bool wishes,
                          bool *before)
{
    for (int i = 0; i < nrm && !wishes; i++)
        before[i] = shape_fits(s, ji, n, &rm[i]);
}

static void shapes_after(const struct sched *s, uint32_t ji, uint32_t n,
                         struct rmodel *rm, int nrm, bool wishes,
                         const bool *before)
{
    for (int i = 0; i < nrm && !wishes; i++) {
        bool after = shape_fits(s, ji, n, &rm[i]);
        if (after != before[i])
            rm[i].cnt += after ? 1u : (uint32_t)-1;
    }
}

/* Count, for jobs with wishes, the nodes whose shadow holds each shape. */
static void recount(struct sched *s, uint32_t ji, struct rmodel *rm, int nrm)
{
    for (int i = 0; i < nrm; i++)
        rm[i].cnt = 0;
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        if (!s->nodes[n].indexed)
            continue;
        shadow_load(s, n, ji);
        for (int i = 0; i < nrm; i++) {
            if ((uint32_t)sched_popcount64(
                    resv_bits(s, &s->jobs[ji], n, rm[i].m)) >= rm[i].g)
                rm[i].cnt++;
        }
    }
}

static bool fits(const struct rmodel *rm, int nrm)
{
    for (int i = 0; i < nrm; i++) {
        if (rm[i].cnt >= rm[i].nn)
            return true;
    }
    return false;
}

/* Pick the GPUs at time t on the shadow and mark them reserved. */
static int mark(struct sched *s, uint32_t ji, const struct rmodel *rm,
                int64_t t)
{
    uint32_t nn = s->node_names.n;
    uint32_t *elig = malloc(sizeof(*elig) * (nn + 1) * 2);
    uint64_t *usable = malloc(sizeof(*usable) * (nn + 1) * 2);
    int rc = -1;
    if (!elig || !usable)
        goto out;
    /* Best fit: nodes with the fewest shadow-free GPUs first, each count
     * in node order (a counting sort by count: one walk of the nodes,
     * whose GPUs and counts the second half of each array keeps for the
     * sort). */
    uint32_t ne = 0;
    uint32_t kmax = (uint32_t)s->models[rm->m].maxper;
    uint32_t at[65] = {0};
    uint64_t *cand_bits = usable + nn + 1;
    uint32_t *cand = elig + nn + 1;
    for (uint32_t n = 0; n < nn; n++) {
        const struct snode *nd = &s->nodes[n];
        if (nd->shadow_stamp != s->stamp || !nd->indexed)
            continue;
        uint64_t u = resv_bits(s, &s->jobs[ji], n, rm->m);
        uint32_t k = (uint32_t)sched_popcount64(u);
        if (k >= rm->g && k <= kmax) {
            at[k]++;
            cand_bits[ne] = u;
            cand[ne++] = n;
        }
    }
    for (uint32_t k = rm->g, sum = 0; k <= kmax; k++) {
        uint32_t c = at[k];
        at[k] = sum;
        sum += c;
    }
    for (uint32_t i = 0; i < ne; i++) {
        uint64_t u = cand_bits[i];
        uint32_t k = (uint32_t)sched_popcount64(u);
        usable[at[k]] = u;
        elig[at[k]++] = cand[i];
    }
    struct sfound *f = &s->found2;
    if (!gang_choose(s, elig, usable, ne, rm->nn, rm->g, f))
        goto out;
    for (int i = 0; i < f->nnodes; i++) {
        struct snode *nd = &s->nodes[f->nodes[i]];
        nd->resv_epoch = s->epoch;
        for (uint64_t b = f->masks[i]; b; b &= b - 1) {
            struct sgpu *gp = &nd->gpus[__builtin_ctzll(b)];
            gp->resv_epoch = s->epoch;
            gp->resv_job = ji;
            gp->resv_time = t;
        }
    }
    struct sjob *j = &s->jobs[ji];
    j->wait = SCHED_WAIT_RESERVED;
    j->est = t;
    j->other = 0;
    s->resv_ids[s->nresv++] = j->id;
    rc = 0;
out:
    free(elig);
    free(usable);
    return rc;
}

/* Running jobs by (estimated end, id), as s->by_end. */
static int end_cmp(const void *a, const void *b, void *arg)
{
    const struct sched *s = arg;
    const struct sjob *x = &s->jobs[*(const uint32_t *)a];
    const struct sjob *y = &s->jobs[*(const uint32_t *)b];
    if (x->est != y->est)
        return x->est < y->est ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Job vi, exclusive on node n, ends in the shadow: the node's GPUs are
 * everyone's again. */
static void shadow_excl_end(struct sched *s, uint32_t ji, uint32_t n,
                            uint32_t vi, struct rmodel *rm, int nrm,
                            bool wishes)
{
    struct snode *nd = &s->nodes[n];
    bool before[SCHED_MODELS_MAX];
    if (nd->shadow_excl != vi)
        return;
    shapes_before(s, ji, n, rm, nrm, wishes, before);
    nd->shadow_excl = SCHED_NONE;
    nd->shadow |= nd->shadow_held;
    nd->shadow_held = 0;
    shapes_after(s, ji, n, rm, nrm, wishes, before);
}

/* Whether place i is the first of its node among p[0..i]. */
static bool place_first(const struct splace *p, int i)
{
    for (int k = 0; k < i; k++) {
        if (p[k].node == p[i].node)
            return false;
    }
    return true;
}

/* Running GPU job vi ends in the shadow of job ji's reservation: its
 * GPUs, host CPUs and memory come free. */
static void shadow_end_gpu_job(struct sched *s, uint32_t ji, uint32_t vi,
                               struct rmodel *rm, int nrm, bool wishes)
{
    const struct sjob *v = &s->jobs[vi];
    bool before[SCHED_MODELS_MAX];
    for (int k = 0; k < v->nplace;) {
        uint32_t n = v->place[k].node;
        struct snode *nd = &s->nodes[n];
        int e = k;
        while (e < v->nplace && v->place[e].node == n)
            e++;
        if (!nd->indexed) {
            k = e;
            continue;
        }
        shadow_load(s, n, ji);
        shapes_before(s, ji, n, rm, nrm, wishes, before);
        if (place_first(v->place, k)) {
            nd->shadow_cpus += v->host_cpus;
            nd->shadow_mem += v->host_mem;
        }
        for (; k < e; k++) {
            const struct splace *p = &v->place[k];
            uint64_t bit = UINT64_C(1) << p->gpu;
            if (p->slice >= 0 || !(nd->whole & bit) || (nd->shadow & bit))
                continue;
            if (nd->gpus[p->gpu].resv_epoch == s->epoch &&
                resv_live(s, &nd->gpus[p->gpu], ji))
                continue;
            if (nd->shadow_excl != SCHED_NONE) /* free when that job ends */
                nd->shadow_held |= bit;
            else
                nd->shadow |= bit;
        }
        shapes_after(s, ji, n, rm, nrm, wishes, before);
    }
    for (int k = 0; k < v->nplace && v->excl; k++) {
        uint32_t n = v->place[k].node;
        if (s->nodes[n].shadow_stamp == s->stamp)
            shadow_excl_end(s, ji, n, vi, rm, nrm, wishes);
    }
}

/* Running job vi without GPUs ends in the shadow of job ji's reservation:
 * one job fewer on its nodes (an exclusive job waits for none), its host
 * CPUs and memory free, and if exclusive, its nodes are free for others. */
static void shadow_end_cpu_job(struct sched *s, uint32_t ji, uint32_t vi,
                               struct rmodel *rm, int nrm, bool wishes)
{
    const struct sjob *v = &s->jobs[vi];
    bool before[SCHED_MODELS_MAX];
    for (int k = 0; k < v->nplace; k++) {
        uint32_t n = v->place[k].node;
        struct snode *nd = &s->nodes[n];
        shadow_load(s, n, ji);
        shapes_before(s, ji, n, rm, nrm, wishes, before);
        if (nd->shadow_ncpu > 0)
            nd->shadow_ncpu--;
        nd->shadow_cpus += v->host_cpus;
        nd->shadow_mem += v->host_mem;
        shapes_after(s, ji, n, rm, nrm, wishes, before);
        shadow_excl_end(s, ji, n, vi, rm, nrm, wishes);
    }
}

int resv_compute(struct sched *s, uint32_t ji, uint64_t mask, int64_t now)
{
    struct sjob *j = &s->jobs[ji];
    struct rmodel rm[SCHED_MODELS_MAX];
    int nrm = 0;
    for (uint64_t b = mask; b; b &= b - 1) {
        uint16_t m = (uint16_t)__builtin_ctzll(b);
        uint32_t nn, g;
        if (!job_shape(s, j, m, &nn, &g) || (int)g > s->models[m].maxper)
            continue;
        rm[nrm++] = (struct rmodel){m, nn, g, 0};
    }
    if (nrm == 0)
        return 0;
    s->stamp++;
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        if (!s->nodes[n].indexed)
            continue;
        shadow_load(s, n, ji);
        for (int i = 0; i < nrm; i++) {
            uint64_t u = resv_bits(s, &s->jobs[ji], n, rm[i].m);
            if ((uint32_t)sched_popcount64(u) >= rm[i].g)
                rm[i].cnt++;
        }
    }
    bool wishes = j->filter || j->excl;
    const uint32_t *order = s->by_end; /* running jobs by end */
    uint32_t ncpu = s->ncpu_running;
    uint32_t *cpu_order = NULL; /* those without GPUs, by end */
    if (ncpu > 0) {
        cpu_order = malloc(sizeof(*cpu_order) * ncpu);
        if (!cpu_order)
            return -1;
        memcpy(cpu_order, s->cpu_running, sizeof(*cpu_order) * ncpu);
        qsort_r(cpu_order, ncpu, sizeof(*cpu_order), end_cmp, s);
    }
    int64_t t = now;
    bool ok = fits(rm, nrm);
    for (uint32_t r = 0, c = 0; !ok && (r < s->nrunning || c < ncpu);) {
        uint32_t vi;
        if (c == ncpu || (r < s->nrunning &&
                          s->jobs[order[r]].est <= s->jobs[cpu_order[c]].est)) {
            vi = order[r++];
            shadow_end_gpu_job(s, ji, vi, rm, nrm, wishes);
        } else {
            vi = cpu_order[c++];
            shadow_end_cpu_job(s, ji, vi, rm, nrm, wishes);
        }
        if (wishes) /* not one bit at a time: count again */
            recount(s, ji, rm, nrm);
        t = s->jobs[vi].est > now ? s->jobs[vi].est : now;
        ok = fits(rm, nrm);
    }
    free(cpu_order);
    if (!ok)
        return 0; /* not even when everything ends: nodes are down */
    for (int i = 0; i < nrm; i++) {
        if (rm[i].cnt >= rm[i].nn)
            return mark(s, ji, &rm[i], t);
    }
    return 0;
}
