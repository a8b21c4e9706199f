/* SPDX-License-Identifier: Apache-2.0 */
/* Reclaim by preemption: an owner's in-quota job cannot start because
 * borrowing jobs hold the GPUs. Victims are running jobs of other projects
 * that are above their guarantee (and whose team is too, when it has one),
 * chosen so that the job fits: the fewest jobs, then the lowest priority,
 * then the most recently started.
 *
 * Victims are told to stop (state "preempting") but keep their GPUs until
 * the caller reports their end; the preemptor holds a claim on its quota
 * meanwhile so that no other job of its project preempts for the same
 * share, and it does not preempt again while its victims are stopping.
 *
 * The LAS rules (the LAS policy, and the default policy once a
 * checkpointable job is known; sched_las.c) add their own victims:
 * checkpointable jobs of a higher level than the waiting job that have
 * run their quantum, which are preferred (highest level first). In the
 * LAS policy every victim is ordered by its level first; in the default
 * policy only those LAS victims are, and reclaim victims keep the order
 * above.
 *
 * A node's plan frees the host CPUs and memory the job asks as well as
 * its GPUs (jobs without GPUs are never victims).
 *
 * Not here: preemption by priority inside a project (not a rule), and
 * reclaiming slices on unfenced GPUs (their other slices would keep the
 * GPU fenced to the borrower's project).
 */
#include "sched/sched_int.h"

#include <stdlib.h>
#include <string.h>

struct ventry {
    uint32_t node;
    uint32_t job;
    uint32_t gpus; /* GPUs of the victim on this node */
    uint32_t cpus; /* its host CPUs and memory (MiB) there */
    uint32_t mem;
    /* The victim's preference keys (victim_before()), copied so that the
     * sort reads no job: LAS key (victim_lvl()), priority, start, id. */
    uint8_t lvl;
    uint8_t prio;
    int64_t start;
    uint64_t id;
};

/* A victim's LAS key for job j on model m: in the LAS policy its level;
 * in the default policy its level only when the LAS rule may take it
 * (a checkpointable job past its quantum), so that quota reclaim keeps
 * its order (fewest, lowest priority, most recent); else 0. */
static uint8_t victim_lvl(const struct sched *s, const struct sjob *j,
                          const struct sjob *v, uint16_t m)
{
    if (s->cfg.policy == SCHED_POLICY_LAS)
        return v->las_run_lvl;
    return las_victim_ok(s, j, v, m) ? v->las_run_lvl : 0;
}

/* Preference among victims of job j: the highest LAS key first
 * (victim_lvl()), then lower priority (higher class number), then the
 * most recently started, then the highest id. */
static bool victim_before(const struct sched *s, const struct sjob *j,
                          uint32_t a, uint32_t b)
{
    const struct sjob *x = &s->jobs[a], *y = &s->jobs[b];
    uint8_t lx = victim_lvl(s, j, x, x->run_model);
    uint8_t ly = victim_lvl(s, j, y, y->run_model);
    if (lx != ly)
        return lx > ly;
    if (x->prio != y->prio)
        return x->prio > y->prio;
    if (x->start != y->start)
        return x->start > y->start;
    return x->id > y->id;
}

/* victim_before() on the keys an entry holds. */
static bool ventry_before(const struct ventry *x, const struct ventry *y)
{
    if (x->lvl != y->lvl)
        return x->lvl > y->lvl;
    if (x->prio != y->prio)
        return x->prio > y->prio;
    if (x->start != y->start)
        return x->start > y->start;
    return x->id > y->id;
}

static int ventry_cmp(const void *a, const void *b, void *arg)
{
    (void)arg;
    const struct ventry *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    if (x->gpus != y->gpus)
        return x->gpus > y->gpus ? -1 : 1;
    if (x->job == y->job)
        return 0;
    return ventry_before(x, y) ? -1 : 1;
}

/* Sort e[0..n) by ventry_cmp(): a merge sort with the comparison inline
 * (qsort_r() called it through a pointer, the most of a LAS replay's
 * planning). The order is total, so the result is qsort_r()'s. */
static int ventry_sort(const struct sched *s, struct ventry *e, size_t n)
{
    if (n < 2)
        return 0;
    struct ventry *tmp = malloc(n * sizeof(*tmp));
    if (!tmp)
        return -1;
    struct ventry *src = e, *dst = tmp;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n;
            size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi)
                dst[k++] = ventry_cmp(&src[b], &src[a], (void *)s) < 0
                               ? src[b++]
                               : src[a++];
            while (a < mid)
                dst[k++] = src[a++];
            while (b < hi)
                dst[k++] = src[b++];
        }
        struct ventry *t = src;
        src = dst;
        dst = t;
    }
    if (src != e)
        memcpy(e, src, n * sizeof(*e));
    free(tmp);
    return 0;
}

/* Whether v may be preempted to reclaim GPUs j's project is owed. */
static bool reclaim_ok(const struct sched *s, const struct sjob *j,
                       const struct sjob *v, uint16_t m)
{
    if (v->state != SCHED_JOB_RUNNING || v->run_model != m ||
        v->project == j->project)
        return false;
    /* A project above its guarantee borrows: from its own team's other
     * projects (reclaimable by them even while the team as a whole is
     * within its guarantee) or, when the team is above its guarantee too,
     * from other teams. */
    bool same_team =
        s->projects[v->project].team == s->projects[j->project].team;
    return quota_project_borrowing(s, v->project, m) &&
           (same_team ||
            quota_team_borrowing(s, s->projects[v->project].team, m));
}

static bool victim_ok(const struct sched *s, const struct sjob *j,
                      const struct sjob *v, uint16_t m)
{
    return (s->quotas_on && reclaim_ok(s, j, v, m)) ||
           las_victim_ok(s, j, v, m);
}

/* What a node still needs freed for a job: GPUs, host CPUs, memory. */
struct need {
    uint32_t gpus;
    int64_t cpus;
    int64_t mem;
};

static bool need_met(const struct need *n, uint64_t g, uint64_t c, uint64_t m)
{
    return g >= n->gpus && (int64_t)c >= n->cpus && (int64_t)m >= n->mem;
}

/* Entry i's amount in dimension d: 0 GPUs, 1 CPUs, 2 memory. */
static uint64_t ventry_dim(const struct ventry *e, int d)
{
    return d == 0 ? e->gpus : d == 1 ? e->cpus : e->mem;
}

/* The sum of the `left` largest amounts in dimension d among the entries
 * not used (nor i). */
static uint64_t top_sum(const struct ventry *e, int n, const bool *used, int i,
                        int left, int d)
{
    bool took[64] = {false};
    uint64_t sum = 0;
    for (; left > 0; left--) {
        int best = -1;
        for (int k = 0; k < n && k < 64; k++) {
            if (used[k] || took[k] || k == i)
                continue;
            if (best < 0 || ventry_dim(&e[k], d) > ventry_dim(&e[best], d))
                best = k;
        }
        if (best < 0)
            break;
        took[best] = true;
        sum += ventry_dim(&e[best], d);
    }
    return sum;
}

/* How many of e[0..n), the largest first in dimension d, meet need, with
 * those indices in order[] (-1 when all of them do not). */
static int greedy_count(const struct ventry *e, int n, const struct need *need,
                        int d, int *order)
{
    bool used[64] = {false};
    uint64_t sg = 0, sc = 0, sm = 0;
    int c = 0;
    while (c < n && c < 64 && !need_met(need, sg, sc, sm)) {
        int best = -1;
        for (int k = 0; k < n && k < 64; k++) {
            if (!used[k] &&
                (best < 0 || ventry_dim(&e[k], d) > ventry_dim(&e[best], d)))
                best = k;
        }
        used[best] = true;
        order[c++] = best;
        sg += e[best].gpus;
        sc += e[best].cpus;
        sm += e[best].mem;
    }
    return need_met(need, sg, sc, sm) ? c : -1;
}

/* Per-node plan: the fewest victims among e[0..n) (sorted by GPUs desc,
 * then preference) freeing what the node needs (GPUs, and host CPUs and
 * memory), preferring lower-priority ones among plans of that size. The
 * fewest is the best of taking the largest first by GPUs, CPUs or memory
 * (exact for GPUs alone). Writes chosen indices to pick; returns their
 * count, or -1 when even all of them are not enough. */
static int node_plan(const struct sched *s, const struct ventry *e, int n,
                     const struct need *need, int *pick)
{
    int c = -1, order[64], best_order[64];
    (void)s;
    for (int d = 0; d < 3; d++) {
        if (d > 0 && (d == 1 ? need->cpus : need->mem) <= 0)
            continue;
        int k = greedy_count(e, n, need, d, order);
        if (k >= 0 && (c < 0 || k < c)) {
            c = k;
            memcpy(best_order, order, sizeof(int) * (size_t)k);
        }
    }
    if (c < 0)
        return -1;
    /* Choose c entries in preference order while the rest can still be
     * completed (in every dimension) with the largest remaining ones. */
    bool used[64] = {false};
    int npick = 0;
    uint64_t sg = 0, sc = 0, sm = 0;
    for (int slot = 0; slot < c; slot++) {
        int best = -1;
        int left = c - slot - 1;
        for (int i = 0; i < n && i < 64; i++) {
            if (used[i])
                continue;
            uint64_t rg = sg + e[i].gpus + top_sum(e, n, used, i, left, 0);
            uint64_t rc = sc + e[i].cpus, rm = sm + e[i].mem;
            if (need->cpus > 0)
                rc += top_sum(e, n, used, i, left, 1);
            if (need->mem > 0)
                rm += top_sum(e, n, used, i, left, 2);
            if (!need_met(need, rg, rc, rm))
                continue;
            if (best < 0 || ventry_before(&e[i], &e[best]))
                best = i;
        }
        if (best < 0)
            break;
        used[best] = true;
        pick[npick++] = best;
        sg += e[best].gpus;
        sc += e[best].cpus;
        sm += e[best].mem;
        if (need_met(need, sg, sc, sm))
            return npick;
    }
    /* Preference could not complete it: the greedy choice does. */
    memcpy(pick, best_order, sizeof(int) * (size_t)c);
    return c;
}

struct nplan {
    uint32_t node;
    int count;
    uint8_t worst_prio; /* highest class among victims (lowest no.) */
    int64_t oldest;     /* earliest start among victims */
    int first;          /* victims in vpick[first..first+count) */
};

static int nplan_cmp(const void *a, const void *b)
{
    const struct nplan *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? -1 : 1;
    if (x->worst_prio != y->worst_prio)
        return x->worst_prio > y->worst_prio ? -1 : 1;
    if (x->oldest != y->oldest)
        return x->oldest > y->oldest ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

static int apply(struct sched *s, uint32_t ji, const uint32_t *victims, int nv,
                 uint16_t m, int64_t units, int64_t now,
                 struct sched_decisions *out)
{
    struct sjob *j = &s->jobs[ji];
    for (int i = 0; i < nv; i++) {
        const struct sjob *v = &s->jobs[victims[i]];
        if (decisions_add_preempt(out, v->id, j->id,
                                  s->quotas_on && reclaim_ok(s, j, v, m)
                                      ? SCHED_PREEMPT_RECLAIM
                                      : SCHED_PREEMPT_LAS) < 0)
            return -1;
    }
    int64_t ready = now + s->cfg.preempt_grace_ms;
    for (int i = 0; i < nv; i++) {
        struct sjob *v = &s->jobs[victims[i]];
        v->state = SCHED_JOB_PREEMPTING;
        s->las_slots[v->prev].until = INT64_MIN; /* no longer a victim */
        v->other = j->id;
        if (v->est > ready) {
            /* It ends by the end of its grace: move it in by_end. */
            sched_by_end_remove(s, victims[i]);
            v->est = ready;
            sched_by_end_insert(s, victims[i]);
        }
        quota_stopping(s, victims[i], +1);
    }
    j->victims = (uint16_t)nv;
    j->units = (uint32_t)units;
    j->run_model = m;
    quota_claim(s, j->project, m, units, +1);
    j->wait = SCHED_WAIT_PREEMPTING;
    j->est = ready;
    j->other = s->jobs[victims[0]].id;
    return 1;
}

/* Every (victim, node) pair of model m for job ji: how many of the
 * victim's GPUs are on that node. *e is allocated (free it). */
static int collect(struct sched *s, uint32_t ji, uint16_t m,
                   struct ventry **out, size_t *nout)
{
    const struct sjob *j = &s->jobs[ji];
    size_t ne = 0, cap = 0;
    struct ventry *e = NULL;
    for (uint32_t i = 0; i < s->nrunning; i++) {
        const struct sjob *v = &s->jobs[s->running[i]];
        if (!victim_ok(s, j, v, m))
            continue;
        for (int k = 0; k < v->nplace; k++) {
            const struct splace *p = &v->place[k];
            if (p->slice >= 0 || !s->nodes[p->node].indexed)
                continue;
            if (ne > 0 && e[ne - 1].job == s->running[i] &&
                e[ne - 1].node == p->node) {
                e[ne - 1].gpus++; /* placements are grouped by node */
                continue;
            }
            if (ne == cap) {
                cap = cap ? cap * 2 : 64;
                void *np = realloc(e, cap * sizeof(*e));
                if (!np) {
                    free(e);
                    return -1;
                }
                e = np;
            }
            e[ne++] = (struct ventry){
                p->node,      s->running[i], 1,
                v->host_cpus, v->host_mem,   victim_lvl(s, j, v, m),
                v->prio,      v->start,      v->id};
        }
    }
    *out = e;
    *nout = ne;
    return 0;
}

/* LAS without quotas: a victim's fitness for job ji depends on ji only
 * through its level (las_victim_ok()). The candidates of model m for
 * level 0 are collected and sorted once, and again only when the running
 * jobs change: one stops, one becomes a candidate (its quantum is over)
 * or changes level (both bump las_key_changes at a pass's start,
 * sched_las.c), a node is set. A job of level L takes those above L,
 * still sorted (a subset of a sorted list). *out is allocated (free it). */
static int collect_cached(struct sched *s, uint32_t ji, uint16_t m,
                          struct ventry **out, size_t *nout)
{
    /* A job started since has not run its quantum: no candidate (without
     * a quantum every start counts). Preempted ones are skipped below (no
     * longer running). */
    bool added = s->vc_adds != s->run_adds && s->cfg.las_quantum_ms <= 0;
    if (s->vc_entries == NULL || s->vc_key_changes != s->las_key_changes ||
        s->vc_nodes_version != s->nodes_version ||
        s->vc_node_states_version != s->node_states_version || added ||
        s->vc_removes != s->run_removes || s->vc_model != m) {
        struct sjob *j = &s->jobs[ji];
        uint8_t lvl = j->las_lvl;
        struct ventry *e = NULL;
        size_t ne = 0;
        j->las_lvl = 0; /* every candidate: any level above 0 */
        int rc = collect(s, ji, m, &e, &ne);
        j->las_lvl = lvl;
        if (rc < 0)
            return -1;
        if (ventry_sort(s, e, ne) < 0) {
            free(e);
            return -1;
        }
        free(s->vc_entries);
        s->vc_entries = e;
        s->vc_n = ne;
        s->vc_key_changes = s->las_key_changes;
        s->vc_nodes_version = s->nodes_version;
        s->vc_node_states_version = s->node_states_version;
        s->vc_adds = s->run_adds;
        s->vc_removes = s->run_removes;
        s->vc_model = m;
    }
    const struct ventry *all = s->vc_entries;
    struct ventry *e = malloc(sizeof(*e) * (s->vc_n + 1));
    if (!e)
        return -1;
    size_t ne = 0;
    uint8_t lvl = s->jobs[ji].las_lvl;
    for (size_t i = 0; i < s->vc_n; i++) {
        const struct sjob *v = &s->jobs[all[i].job];
        if (v->state == SCHED_JOB_RUNNING && v->las_run_lvl > lvl)
            e[ne++] = all[i];
    }
    *out = e;
    *nout = ne;
    return 0;
}

/* One plan per node that has victims (e sorted by node): the victims that
 * would free enough GPUs there. Nodes already free enough need none and
 * are not listed (they would have placed the job, unless reservations
 * stopped it). Returns the number of plans. */
static size_t node_plans(const struct sched *s, uint32_t ji, uint16_t m,
                         uint32_t g, const struct ventry *e, size_t ne,
                         struct nplan *plans, int *vpick)
{
    size_t np = 0, nvp = 0;
    for (size_t a = 0; a < ne;) {
        size_t b = a;
        while (b < ne && e[b].node == e[a].node)
            b++;
        const struct snode *nd = &s->nodes[e[a].node];
        const struct sjob *j = &s->jobs[ji];
        uint32_t freen =
            (uint32_t)sched_popcount64(node_usable(s, nd, m, -1, ji));
        struct need need = {
            g > freen ? g - freen : 0,
            nd->cpus ? (int64_t)nd->cpus_used + j->host_cpus - nd->cpus : 0,
            nd->mem_mib ? (int64_t)nd->mem_used + j->host_mem - nd->mem_mib : 0,
        };
        int pick[64];
        int c = need_met(&need, 0, 0, 0)
                    ? 0
                    : node_plan(s, &e[a], (int)(b - a), &need, pick);
        if (c > 0) {
            struct nplan *pl = &plans[np++];
            pl->node = e[a].node;
            pl->count = c;
            pl->worst_prio = JOB_PRIO_LOW;
            pl->oldest = INT64_MAX;
            pl->first = (int)nvp;
            for (int i = 0; i < c; i++) {
                const struct sjob *v = &s->jobs[e[a + (size_t)pick[i]].job];
                vpick[nvp++] = (int)(a + (size_t)pick[i]);
                if (v->prio < pl->worst_prio)
                    pl->worst_prio = v->prio;
                if (v->start < pl->oldest)
                    pl->oldest = v->start;
            }
        }
        a = b;
    }
    return np;
}

/* The victims of the first want plans, each once. */
static int union_victims(const struct ventry *e, const struct nplan *plans,
                         uint32_t want, const int *vpick, uint32_t *victims)
{
    int nv = 0;
    for (uint32_t i = 0; i < want; i++) {
        for (int k = 0; k < plans[i].count; k++) {
            uint32_t v = e[vpick[plans[i].first + k]].job;
            bool dup = false;
            for (int x = 0; x < nv && !dup; x++)
                dup = victims[x] == v;
            if (!dup)
                victims[nv++] = v;
        }
    }
    return nv;
}

static int plan_whole(struct sched *s, uint32_t ji, uint16_t m,
                      const struct sopt *o, int64_t now,
                      struct sched_decisions *out)
{
    struct sjob *j = &s->jobs[ji];
    uint32_t nn, g;
    size_t pass = s->full_passes + s->incr_passes;
    if (!job_shape(s, j, m, &nn, &g))
        return 0;
    if (s->pfail_pass[m] == pass && nn >= s->pfail_nodes[m] &&
        g >= s->pfail_gpus[m] && j->las_lvl >= s->pfail_lvl[m] &&
        j->host_cpus >= s->pfail_cpus[m] && j->host_mem >= s->pfail_mem[m])
        return 0;
    struct ventry *e = NULL;
    size_t ne = 0;
    bool cached = sched_las(s) && !s->quotas_on;
    if ((cached ? collect_cached(s, ji, m, &e, &ne)
                : collect(s, ji, m, &e, &ne)) < 0)
        return -1;
    /* Plans, picks and victims: at most one each per entry, every one
     * written before it is read; one buffer kept across plans. */
    size_t need =
        (ne + 1) * (sizeof(struct nplan) + sizeof(int) + sizeof(uint32_t));
    int rc = -1;
    if (need > s->plan_buf_cap) {
        void *nb = realloc(s->plan_buf, need);
        if (!nb)
            goto done;
        s->plan_buf = nb;
        s->plan_buf_cap = need;
    }
    struct nplan *plans = s->plan_buf;
    int *vpick = (int *)(plans + ne + 1);
    uint32_t *victims = (uint32_t *)(vpick + ne + 1);
    if (ne > 0 && !cached)
        qsort_r(e, ne, sizeof(*e), ventry_cmp, s);
    size_t np = node_plans(s, ji, m, g, e, ne, plans, vpick);
    /* Nodes already free enough count as plans of zero victims (with the
     * host CPUs and memory the job asks, when it does). */
    uint32_t zero = 0;
    bool room = j->host_cpus > 0 || j->host_mem > 0;
    for (uint32_t k = g; k <= (uint32_t)s->models[m].maxper; k++) {
        if (!room) {
            zero += s->models[m].cnt[k];
            continue;
        }
        const uint64_t *r = s->models[m].by_free + (size_t)k * s->nwords;
        for (uint32_t w = 0; w < s->nwords && s->models[m].cnt[k]; w++) {
            for (uint64_t b = r[w]; b; b &= b - 1)
                zero += node_room_now(
                    &s->nodes[w * 64 + (uint32_t)__builtin_ctzll(b)], j);
        }
    }
    uint32_t want = nn > zero ? nn - zero : 0;
    rc = 0;
    if (np + zero < nn || want == 0) {
        /* Not enough victims, or it fits without: reservations block. */
        s->pfail_pass[m] = pass;
        s->pfail_nodes[m] = nn;
        s->pfail_gpus[m] = g;
        s->pfail_lvl[m] = j->las_lvl;
        s->pfail_cpus[m] = j->host_cpus;
        s->pfail_mem[m] = j->host_mem;
        goto done;
    }
    qsort(plans, np, sizeof(*plans), nplan_cmp);
    int nv = union_victims(e, plans, want, vpick, victims);
    rc = apply(s, ji, victims, nv, m, o->units, now, out);
done:
    free(e);
    return rc;
}

static int plan_slice(struct sched *s, uint32_t ji, const struct sopt *o,
                      uint64_t in_mask, int64_t now,
                      struct sched_decisions *out)
{
    struct sjob *j = &s->jobs[ji];
    uint64_t mem = (uint64_t)j->mem_mib * 1024 * 1024;
    uint32_t best = SCHED_NONE;
    for (uint32_t i = 0; i < s->nrunning; i++) {
        uint32_t vi = s->running[i];
        const struct sjob *v = &s->jobs[vi];
        if (v->nplace != 1 || v->place[0].slice < 0 ||
            !((in_mask >> v->run_model) & 1) ||
            !victim_ok(s, j, v, v->run_model))
            continue;
        const struct snode *nd = &s->nodes[v->place[0].node];
        const struct sgpu *gp = &nd->gpus[v->place[0].gpu];
        const struct sslice *sl = &gp->slices[v->place[0].slice];
        if (!nd->indexed || (gp->flags & (SGPU_UNFENCED | SGPU_UNSCHED)) ||
            sl->mem < mem)
            continue;
        /* Its host CPUs and memory, with the victim's, must do. */
        if ((nd->cpus &&
             nd->cpus_used - v->host_cpus + j->host_cpus > nd->cpus) ||
            (nd->mem_mib &&
             nd->mem_used - v->host_mem + j->host_mem > nd->mem_mib))
            continue;
        if (!slice_is(s, sl, o->profile))
            continue;
        if (best == SCHED_NONE || victim_before(s, j, vi, best))
            best = vi;
    }
    if (best == SCHED_NONE)
        return 0;
    return apply(s, ji, &best, 1, s->jobs[best].run_model, o->units, now, out);
}

int preempt_plan(struct sched *s, uint32_t ji, const struct sopt *o,
                 uint64_t in_mask, int64_t now, struct sched_decisions *out)
{
    if (o->kind == SJOB_SLICE)
        return plan_slice(s, ji, o, in_mask, now, out);
    for (uint64_t b = in_mask; b; b &= b - 1) {
        uint16_t m = (uint16_t)__builtin_ctzll(b);
        int rc = plan_whole(s, ji, m, o, now, out);
        if (rc != 0)
            return rc;
    }
    return 0;
}
