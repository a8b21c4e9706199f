/* SPDX-License-Identifier: Apache-2.0 */
/* sched_run(): one scheduling pass.
 *
 * Order: pending queues (one per project and priority class, each sorted by
 * submit time and id) are merged by priority class, then the project's
 * fair-share score plus the job's age, then submit time, then id.
 *
 * Phase 1 walks that order and admits jobs within their guarantee (all
 * jobs when quotas are off). A job that cannot start may reclaim borrowed
 * GPUs by preemption, or gets a reservation (the first max_reservations
 * such jobs, full passes only); later jobs start only where they do not
 * delay a reservation (placement treats reserved GPUs as usable only by
 * jobs that end before the reservation starts). Phase 2 walks, in the same
 * order, the jobs that could only borrow, and starts them on idle GPUs.
 *
 * A full pass (forced, after a change to nodes, tenants or config, or every
 * full_pass_interval_ms) recomputes fair-share scores and reservations. An
 * incremental pass reuses them and stops as soon as nothing more can start
 * (no free GPU or slice and nothing to reclaim), so a freed GPU costs a few
 * queue entries, not the whole queue.
 *
 * A full pass stops, or skips the size classes that cannot fit, only where
 * that cannot change a decision: once nothing more can start, no further
 * reservation is to be made and nothing can be reclaimed (may_stop(),
 * full_may_skip()). Its decisions never depend on all_reasons: that
 * setting only adds a reason walk after them, which gives the jobs the
 * pass did not reach a reason and decides nothing (reason_walk()).
 *
 * Failed placements are memoised for the pass: resources only shrink during
 * a pass, so a job at least as large (and as long) as one that failed fails
 * too and is answered in O(1).
 */
#include "sched/sched_int.h"

#include <stdlib.h>
#include <string.h>

#define OPTS_MAX 32

struct cursor {
    uint32_t job;
    uint32_t project;
    uint8_t prio;
    uint8_t cls; /* size class (sched_job_class) */
    uint8_t lvl; /* its job's LAS level (0 unless the LAS rules are on) */
    int64_t score;
};

struct pass {
    int64_t now;
    bool full;
    int phase;
    uint32_t blocked_head; /* FIFO / no backfill: nothing passes it */
    uint32_t ndeferred;
    struct cursor *heap;
    uint32_t nheap;
    struct smemo memo[SCHED_MEMO_MAX];
    int nmemo;
    int memo_next;
    struct sched_decisions *out;
    bool claim_released; /* the evaluated job's claim is given back */
    bool reasons_only;   /* the reason walk: start, reserve, reclaim nothing */
    struct cursor *rest; /* queues a full pass skipped, for the reason walk */
    uint32_t nrest;
    uint32_t maxfree;    /* max_free() cache ... */
    int64_t maxfree_key; /* ... valid for this free_whole + 1 */
    bool no_resv;        /* make no reservation (out of order) */
    uint64_t present;    /* models on present nodes */
    /* Shapes that failed for every model: no n nodes with g usable GPUs
     * for a job ending at end or later (INT64_MIN: at any time). */
    struct {
        uint32_t n, g;
        int64_t end;
    } blk[SCHED_BLOCK_MAX];
    int nblk;
    /* Shapes that failed for the host CPUs or memory: no node with g
     * free GPUs has more than cpus CPUs and mem MiB free for a job ending
     * at end or later, so such a job needing g or more GPUs per node and
     * more than that cannot start. */
    struct {
        uint32_t g;
        int64_t end;
        int64_t cpus, mem;
    } rblk[SCHED_BLOCK_MAX];
    int nrblk;
    /* A slice failed for the host CPUs or memory: the most any node with
     * a free slice has free (-1: none such failure yet). */
    int64_t slice_cpus, slice_mem;
    bool slice_room;
    int64_t wd_key; /* whole_done() cache: valid for this ... */
    bool wd;        /* ... (free_whole, nblk, nrblk) */
};

/* ----------------------------------------------------------- decisions */

void sched_decisions_init(struct sched_decisions *d)
{
    memset(d, 0, sizeof(*d));
}

void sched_decisions_fini(struct sched_decisions *d)
{
    if (!d)
        return;
    free(d->starts);
    free(d->places);
    free(d->preempts);
    memset(d, 0, sizeof(*d));
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 64;
    while (ncap < need)
        ncap *= 2;
    void *np = realloc(*p, ncap * size);
    if (!np)
        return -1;
    *p = np;
    *cap = ncap;
    return 0;
}

int sched_decisions_reserve(struct sched_decisions *d, size_t nplaces)
{
    void *a = d->starts, *b = d->places;
    if (grow(&a, &d->starts_cap, d->nstarts + 1, sizeof(*d->starts)))
        return -1;
    d->starts = a;
    if (grow(&b, &d->places_cap, d->nplaces + nplaces, sizeof(*d->places)))
        return -1;
    d->places = b;
    return 0;
}

int decisions_add_preempt(struct sched_decisions *d, uint64_t job,
                          uint64_t for_job, enum sched_preempt_reason why)
{
    void *p = d->preempts;
    if (grow(&p, &d->preempts_cap, d->npreempts + 1, sizeof(*d->preempts)))
        return -1;
    d->preempts = p;
    d->preempts[d->npreempts].job = job;
    d->preempts[d->npreempts].for_job = for_job;
    d->preempts[d->npreempts++].reason = why;
    return 0;
}

/* ---------------------------------------------------------------- merge */

static int64_t age_score(const struct sched *s, int64_t now, int64_t submit)
{
    /* age_weight per day of age, in the same ppm scale as fair share. */
    return s->cfg.age_weight * (now - submit) * 10 / 864;
}

/* The short-job credit of a job's size class (its queue): the whole
 * credit for 1 GPU per node and slices, 1/2 for 2, 1/5 for 3-4, none for
 * more. Constant within a queue, so a queue stays in submit order. */
static int64_t short_credit(const struct sched *s, const struct sjob *j)
{
    static const int64_t div[SCHED_CLASSES] = {1, 2, 5, 0, 0, 1};
    int64_t d = div[sched_job_class(j)];
    return d ? s->cfg.short_credit_ms / d : 0;
}

static void cursor_load(const struct sched *s, const struct pass *ps,
                        struct cursor *c)
{
    const struct sjob *j = &s->jobs[c->job];
    /* The LAS level goes first (a queue is sorted by it); then LAS takes
     * submit order, the default fair share and age. */
    c->lvl = j->las_lvl;
    c->score = s->cfg.policy != SCHED_POLICY_DEFAULT
                   ? 0
                   : s->projects[c->project].key +
                         age_score(s, ps->now, j->submit - short_credit(s, j));
}

bool sched_before(const struct sched *s, const struct sjob *a,
                  const struct sjob *b)
{
    bool fifo = s->cfg.policy == SCHED_POLICY_FIFO;
    if (!fifo && a->prio != b->prio)
        return a->prio < b->prio;
    if (sched_las(s) && a->las_lvl != b->las_lvl)
        return a->las_lvl < b->las_lvl;
    if (s->cfg.policy == SCHED_POLICY_DEFAULT) {
        int64_t sa = s->projects[a->project].key +
                     age_score(s, s->last_now, a->submit - short_credit(s, a));
        int64_t sb = s->projects[b->project].key +
                     age_score(s, s->last_now, b->submit - short_credit(s, b));
        if (sa != sb)
            return sa > sb;
    }
    if (a->submit != b->submit)
        return a->submit < b->submit;
    return a->id < b->id;
}

int sched_order_cmp(const void *a, const void *b, void *arg)
{
    const struct sched *s = arg;
    const struct sjob *x = &s->jobs[*(const uint32_t *)a];
    const struct sjob *y = &s->jobs[*(const uint32_t *)b];
    if (sched_before(s, x, y))
        return -1;
    return sched_before(s, y, x) ? 1 : 0;
}

static bool cursor_before(const struct sched *s, const struct cursor *a,
                          const struct cursor *b)
{
    if (a->prio != b->prio)
        return a->prio < b->prio;
    if (a->lvl != b->lvl)
        return a->lvl < b->lvl;
    if (a->score != b->score)
        return a->score > b->score;
    const struct sjob *x = &s->jobs[a->job], *y = &s->jobs[b->job];
    if (x->submit != y->submit)
        return x->submit < y->submit;
    if (x->id != y->id)
        return x->id < y->id;
    if (a->project != b->project)
        return a->project < b->project;
    return a->cls < b->cls;
}

static void heap_down(const struct sched *s, struct pass *ps, uint32_t i)
{
    struct cursor *h = ps->heap;
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < ps->nheap && cursor_before(s, &h[l], &h[m]))
            m = l;
        if (r < ps->nheap && cursor_before(s, &h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        struct cursor t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static int merge_init(struct sched *s, struct pass *ps)
{
    uint32_t nq = s->cfg.policy == SCHED_POLICY_FIFO
                      ? 1
                      : s->project_names.n * SCHED_NQUEUES;
    /* The cursors' arrays are kept across passes (sched_destroy() frees
     * them). */
    void *heap = s->merge_heap, *rest = s->merge_rest;
    if (sched_grow(&heap, &s->merge_heap_cap, nq ? nq : 1, sizeof(*ps->heap)) <
        0)
        return -1;
    s->merge_heap = heap;
    if (sched_grow(&rest, &s->merge_rest_cap, nq ? nq : 1, sizeof(*ps->rest)) <
        0)
        return -1;
    s->merge_rest = rest;
    ps->heap = heap;
    ps->rest = rest;
    ps->nheap = 0;
    ps->nrest = 0;
    if (s->cfg.policy == SCHED_POLICY_FIFO) {
        if (s->fifo.head != SCHED_NONE) {
            ps->heap[0] = (struct cursor){s->fifo.head, 0, 0, 0, 0, 0};
            ps->nheap = 1;
        }
        return 0;
    }
    for (uint32_t p = 0; p < s->project_names.n; p++) {
        for (uint32_t qm = s->projects[p].qmask; qm; qm &= qm - 1) {
            int c = __builtin_ctz(qm);
            uint32_t h = s->projects[p]
                             .queues[c / SCHED_CLASSES][c % SCHED_CLASSES]
                             .head;
            struct cursor *cu = &ps->heap[ps->nheap++];
            cu->job = h;
            cu->project = p;
            cu->prio = (uint8_t)(c / SCHED_CLASSES);
            cu->cls = (uint8_t)(c % SCHED_CLASSES);
            cursor_load(s, ps, cu);
        }
    }
    for (uint32_t i = ps->nheap / 2; i-- > 0;)
        heap_down(s, ps, i);
    return 0;
}

/* Whether node nd has the host CPUs and memory free that the least
 * demanding pending GPU job asks (a lower bound; sched_pend_host_min()). */
static bool node_min_room(const struct snode *nd, int64_t cpus, int64_t mem)
{
    return (nd->cpus == 0 || (int64_t)nd->cpus - nd->cpus_used >= cpus) &&
           (nd->mem_mib == 0 || (int64_t)nd->mem_mib - nd->mem_used >= mem);
}

/* Whether some node of row k of model m has that room. */
static bool row_has_room(const struct sched *s, uint16_t m, uint32_t k,
                         int64_t cpus, int64_t mem)
{
    const uint64_t *r = s->models[m].by_free + (size_t)k * s->nwords;
    for (uint32_t w = 0; w < s->nwords; w++) {
        for (uint64_t b = r[w]; b; b &= b - 1) {
            if (node_min_room(&s->nodes[w * 64 + (uint32_t)__builtin_ctzll(b)],
                              cpus, mem))
                return true;
        }
    }
    return false;
}

/* The most free GPUs on any one node (reservations aside) that has the
 * host CPUs and memory some pending GPU job asks, cached while the count
 * of free GPUs does not change (room only shrinks during a pass). */
static uint32_t max_free(const struct sched *s, struct pass *ps)
{
    if (ps->maxfree_key == s->free_whole + 1)
        return ps->maxfree;
    int64_t cpus = sched_pend_host_min(s->pend_hcpu_bits[1]);
    int64_t mem = sched_pend_host_min(s->pend_hmem_bits[1]);
    bool room =
        (cpus > 0 && cpus != INT64_MAX) || (mem > 0 && mem != INT64_MAX);
    uint32_t best = 0;
    for (uint32_t m = 0; m < s->model_names.n; m++) {
        for (uint32_t k = (uint32_t)s->models[m].maxper; k > best; k--) {
            if (s->models[m].cnt[k] > 0 &&
                (!room || row_has_room(s, (uint16_t)m, k, cpus, mem))) {
                best = k;
                break;
            }
        }
    }
    ps->maxfree = best;
    ps->maxfree_key = s->free_whole + 1;
    return best;
}

/* The lowest bound on pending jobs' run times: the default limit exactly
 * (jobs without a limit), or the floor of the lowest bucket. */
static int64_t min_pending_run(struct sched *s)
{
    if (s->minrun_version == s->pend_version + 1)
        return s->minrun;
    uint32_t b = SCHED_DUR_BUCKETS;
    for (uint32_t w = 0; w < SCHED_DUR_BUCKETS / 64; w++) {
        if (s->pend_dur_bits[w]) {
            b = w * 64 + (uint32_t)__builtin_ctzll(s->pend_dur_bits[w]);
            break;
        }
    }
    int64_t d = b < SCHED_DUR_BUCKETS ? sched_dur_floor(b) : INT64_MAX;
    if (s->pend_default > 0 && s->cfg.default_time_limit_ms < d)
        d = s->cfg.default_time_limit_ms;
    s->minrun = d;
    s->minrun_version = s->pend_version + 1;
    return d;
}

static const uint32_t ncls_lb[SCHED_NCLS] = {1, 2, 3, 5, 9};

/* Whether a job of n nodes x k GPUs running at least d can no longer
 * start in this pass: nothing free, no node with k free GPUs, or a shape
 * no larger failed already (for every model, reservations aside or with
 * an end no later). Sound because free resources only shrink during a
 * pass. */
static bool shape_cant(struct sched *s, struct pass *ps, uint32_t n, uint32_t k,
                       int64_t d)
{
    if (s->free_whole == 0 || k > max_free(s, ps))
        return true;
    int64_t end = d == INT64_MAX ? INT64_MAX : ps->now + d;
    for (int i = 0; i < ps->nblk; i++) {
        if (ps->blk[i].g <= k && ps->blk[i].n <= n && ps->blk[i].end <= end)
            return true;
    }
    if (ps->nrblk > 0) {
        /* The least any pending GPU job asks (a lower bound). */
        int64_t cpus = sched_pend_host_min(s->pend_hcpu_bits[1]);
        int64_t mem = sched_pend_host_min(s->pend_hmem_bits[1]);
        for (int i = 0; i < ps->nrblk; i++) {
            if (ps->rblk[i].g <= k && ps->rblk[i].end <= end &&
                (cpus > ps->rblk[i].cpus || mem > ps->rblk[i].mem))
                return true;
        }
    }
    return false;
}

static bool whole_cant(struct sched *s, struct pass *ps, uint32_t k)
{
    return shape_cant(s, ps, 1, k, min_pending_run(s));
}

/* Whether no whole-GPU job can start any more in this pass: every shape
 * pending is blocked. Cached while free GPUs and blocks do not change. */
static bool whole_done(struct sched *s, struct pass *ps)
{
    int64_t key = (s->free_whole * (SCHED_BLOCK_MAX + 1) + ps->nblk) *
                      (SCHED_BLOCK_MAX + 1) +
                  ps->nrblk + 1;
    if (ps->wd_key == key)
        return ps->wd;
    bool done = true;
    int64_t d = min_pending_run(s);
    for (uint32_t k = 1; k <= SCHED_KMAX && done; k++) {
        if (s->pend_lb[k] == 0)
            continue;
        for (int c = 0; c < SCHED_NCLS && done; c++) {
            if (s->pend_shape[k][c] > 0 && !shape_cant(s, ps, ncls_lb[c], k, d))
                done = false;
        }
    }
    ps->wd_key = key;
    ps->wd = done;
    return done;
}

/* Models with something free now (all of them while slices are free). */
static uint64_t free_models(const struct sched *s)
{
    uint64_t m = 0;
    if (s->free_slices > 0)
        return ~UINT64_C(0);
    for (uint32_t i = 0; i < s->model_names.n; i++) {
        if (s->models[i].free_gpus > 0)
            m |= UINT64_C(1) << i;
    }
    return m;
}

/* Whether a full pass may pass over jobs that cannot start: only when such
 * a job could change nothing else. While fewer than max_reservations are
 * made it could get one; with quotas on it could reclaim GPUs, or borrow
 * in phase 2 (which walks only the jobs phase 1 looked at); without
 * backfill it would hold up every job behind it. */
static bool full_may_skip(const struct sched *s)
{
    return !s->quotas_on && s->las_maxlvl == 0 && s->cfg.max_reservations > 0 &&
           s->nresv >= s->cfg.max_reservations;
}

/* Whole queues that cannot act are skipped: a kind that cannot fit any
 * more, and in incremental passes' phase 1 (in-quota jobs) the queues of
 * projects with no guarantee left on a model with free GPUs. Resources
 * and guarantees only shrink during a pass, so a skipped queue stays
 * skippable. Full passes skip only under full_may_skip(); without backfill
 * no pass skips: a job that cannot start holds up every job behind it
 * (and the pass stops there). */
static bool queue_skip(struct sched *s, struct pass *ps, const struct cursor *c)
{
    if (s->cfg.policy == SCHED_POLICY_FIFO || ps->reasons_only ||
        s->cfg.max_reservations == 0)
        return false;
    if (ps->full && !full_may_skip(s))
        return false;
    static const uint32_t lo[SCHED_CLASSES] = {1, 2, 3, 5, 9, 1};
    static const uint32_t hi[SCHED_CLASSES] = {1, 2, 4, 8, SCHED_KMAX, 1};
    uint32_t k = lo[c->cls];
    /* The fewest GPUs per node any pending job of the class needs. */
    while (k < hi[c->cls] && s->pend_lb[k] == 0)
        k++;
    if (c->cls == SCHED_CLASS_SLICE
            ? s->free_slices == 0 && whole_cant(s, ps, 1)
            : whole_cant(s, ps, k))
        return true;
    /* The smallest job of the queue's kind: a GPU, or a slice. */
    int64_t least = c->cls != SCHED_CLASS_SLICE ? SCHED_UNITS_PER_GPU : 1;
    return !ps->full && ps->phase == 1 &&
           !quota_has_room(s, c->project, free_models(s), least);
}

/* The next pending job in order, or SCHED_NONE. */
static uint32_t merge_next(struct sched *s, struct pass *ps)
{
    while (ps->nheap > 0 && queue_skip(s, ps, &ps->heap[0])) {
        if (ps->full)
            ps->rest[ps->nrest++] = ps->heap[0];
        ps->heap[0] = ps->heap[--ps->nheap];
        heap_down(s, ps, 0);
    }
    if (ps->nheap == 0)
        return SCHED_NONE;
    struct cursor *top = &ps->heap[0];
    uint32_t j = top->job;
    uint32_t next = s->jobs[j].next;
    if (next == SCHED_NONE) {
        ps->heap[0] = ps->heap[--ps->nheap];
    } else {
        top->job = next;
        cursor_load(s, ps, top);
    }
    heap_down(s, ps, 0);
    return j;
}

/* ----------------------------------------------------------------- memo */

static uint32_t job_total(const struct sjob *j)
{
    return j->nodes >= 1 ? (uint32_t)j->nodes * j->gpus : j->gpus;
}

/* A whole job's shape for the memo: (nodes, GPUs per node), with "the
 * engine picks the nodes" resolved to one node when every allowed model's
 * nodes can hold the job; nodes 0 when it stays open. */
static void eff_shape(const struct sched *s, const struct sjob *j,
                      uint64_t mask, uint32_t *n, uint32_t *g)
{
    *g = j->gpus;
    *n = j->nodes;
    if (j->nodes >= 1)
        return;
    for (uint64_t b = mask; b; b &= b - 1) {
        if ((uint32_t)s->models[__builtin_ctzll(b)].maxper < j->gpus)
            return;
    }
    *n = 1;
}

static const struct smemo *memo_find(const struct sched *s,
                                     const struct pass *ps,
                                     const struct sjob *j, const struct sopt *o,
                                     uint64_t mask, int64_t end)
{
    uint32_t n = 0, g = 0;
    if (o->kind == SJOB_WHOLE)
        eff_shape(s, j, mask, &n, &g);
    for (int i = 0; i < ps->nmemo; i++) {
        const struct smemo *m = &ps->memo[i];
        if (m->kind != o->kind || (mask & ~m->mask) || end < m->end ||
            j->host_cpus < m->host_cpus || j->host_mem < m->host_mem)
            continue;
        if (o->kind == SJOB_SLICE) {
            if (m->profile == o->profile && m->project == j->project &&
                j->mem_mib >= m->mem_mib)
                return m;
            continue;
        }
        if (n == 0 || m->nodes == 0) {
            if (n == m->nodes && g == m->total && j->mem_mib >= m->mem_mib)
                return m;
            continue;
        }
        if (n >= m->nodes && g >= m->gpus && j->mem_mib >= m->mem_mib)
            return m;
    }
    return NULL;
}

/* A whole-GPU shape of g GPUs per node failed for job ji ending at end,
 * some node short of host CPUs or memory: the most any node with g free
 * GPUs has free for a job ending at end or later (less what reservations
 * starting before then keep), for shape_cant(). */
static void rblk_add(const struct sched *s, struct pass *ps, uint32_t g,
                     int64_t end, uint32_t ji)
{
    int64_t cpus = -1, mem = -1;
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        const struct snode *nd = &s->nodes[n];
        if (!nd->indexed || (uint32_t)sched_popcount64(nd->free) < g)
            continue;
        int64_t c = nd->cpus ? (int64_t)nd->cpus - nd->cpus_used : INT64_MAX;
        int64_t m =
            nd->mem_mib ? (int64_t)nd->mem_mib - nd->mem_used : INT64_MAX;
        uint32_t seen[SCHED_KMAX];
        int nseen = 0;
        for (int k = 0; nd->resv_epoch == s->epoch && k < nd->ngpus; k++) {
            const struct sgpu *gp = &nd->gpus[k];
            if (gp->resv_epoch != s->epoch || end <= gp->resv_time ||
                !resv_live(s, gp, ji))
                continue;
            bool dup = false;
            for (int x = 0; x < nseen && !dup; x++)
                dup = seen[x] == gp->resv_job;
            if (dup)
                continue;
            seen[nseen++] = gp->resv_job;
            c -= s->jobs[gp->resv_job].host_cpus;
            m -= s->jobs[gp->resv_job].host_mem;
        }
        cpus = c > cpus ? c : cpus;
        mem = m > mem ? m : mem;
    }
    for (int k = 0; k < ps->nrblk; k++) {
        if (ps->rblk[k].g <= g && ps->rblk[k].end <= end &&
            ps->rblk[k].cpus <= cpus && ps->rblk[k].mem <= mem)
            return; /* a stronger one is known */
    }
    int k = ps->nrblk < SCHED_BLOCK_MAX ? ps->nrblk++ : SCHED_BLOCK_MAX - 1;
    ps->rblk[k].g = g;
    ps->rblk[k].end = end;
    ps->rblk[k].cpus = cpus;
    ps->rblk[k].mem = mem;
}

/* A slice failed, some node short of host CPUs or memory: the most any
 * node with a free slice has free, for nothing_can_start(). Free slices
 * and room only shrink during a pass, so the first such failure says it. */
static void slice_room_note(const struct sched *s, struct pass *ps)
{
    int64_t cpus = -1, mem = -1;
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        const struct snode *nd = &s->nodes[n];
        bool free_slice = false;
        for (int i = 0; i < nd->npf && !free_slice; i++)
            free_slice = nd->pf[i].free > 0;
        if (!nd->indexed || !free_slice)
            continue;
        int64_t c = nd->cpus ? (int64_t)nd->cpus - nd->cpus_used : INT64_MAX;
        int64_t m =
            nd->mem_mib ? (int64_t)nd->mem_mib - nd->mem_used : INT64_MAX;
        cpus = c > cpus ? c : cpus;
        mem = m > mem ? m : mem;
    }
    ps->slice_room = true;
    ps->slice_cpus = cpus;
    ps->slice_mem = mem;
}

static void memo_add(const struct sched *s, struct pass *ps,
                     const struct sjob *j, const struct sopt *o, uint64_t mask,
                     int64_t end)
{
    struct smemo *m;
    uint32_t n = 0, g = 0;
    if (o->kind == SJOB_WHOLE)
        eff_shape(s, j, mask, &n, &g);
    if (ps->nmemo < SCHED_MEMO_MAX) {
        m = &ps->memo[ps->nmemo++];
    } else {
        m = &ps->memo[ps->memo_next];
        ps->memo_next = (ps->memo_next + 1) % SCHED_MEMO_MAX;
    }
    m->kind = o->kind;
    m->wait = j->wait;
    m->other = j->other;
    m->profile = o->profile;
    m->mask = mask;
    m->nodes = n;
    m->gpus = g;
    m->total = g;
    m->project = j->project;
    m->mem_mib = j->mem_mib;
    /* Short of host CPUs or memory somewhere: a job asking less may fit. */
    m->host_cpus = s->room_short ? j->host_cpus : 0;
    m->host_mem = s->room_short ? j->host_mem : 0;
    m->end = end;
    /* A shape failed on every model, ignoring reservations (resources)
     * or for jobs ending this late (reservation): remember it (not when
     * the host CPUs or memory were short: another job of the shape may
     * ask less). */
    if (o->kind == SJOB_SLICE && s->room_short && !ps->slice_room)
        slice_room_note(s, ps);
    if (o->kind != SJOB_WHOLE || n == 0 || (mask & ps->present) != ps->present)
        return;
    if (s->room_short) {
        rblk_add(s, ps, g, end, (uint32_t)(j - s->jobs));
        return;
    }
    int64_t bend = j->wait == SCHED_WAIT_RESOURCES ? INT64_MIN : end;
    int k;
    for (k = 0; k < ps->nblk; k++) {
        if (ps->blk[k].g <= g && ps->blk[k].n <= n && ps->blk[k].end <= bend)
            return; /* a stronger one is known */
    }
    k = ps->nblk < SCHED_BLOCK_MAX ? ps->nblk++ : SCHED_BLOCK_MAX - 1;
    ps->blk[k].n = n;
    ps->blk[k].g = g;
    ps->blk[k].end = bend;
}

/* ---------------------------------------------------------------- start */

static int start_apply(struct sched *s, struct pass *ps, uint32_t ji,
                       const struct sfound *f)
{
    struct sched_decisions *d = ps->out;
    int np = 0;
    for (int i = 0; i < f->nnodes; i++)
        np += f->slice_gpu >= 0 ? 1 : sched_popcount64(f->masks[i]);
    struct splace *p = malloc(sizeof(*p) * (size_t)np);
    if (!p || sched_decisions_reserve(d, (size_t)np) < 0 ||
        sched_running_reserve(s, 1) < 0) {
        free(p);
        return -1;
    }
    int k = 0;
    for (int i = 0; i < f->nnodes; i++) {
        if (f->slice_gpu >= 0) {
            p[k++] = (struct splace){f->nodes[i], (uint8_t)f->slice_gpu,
                                     (int8_t)f->slice};
            continue;
        }
        for (uint64_t m = f->masks[i]; m; m &= m - 1)
            p[k++] =
                (struct splace){f->nodes[i], (uint8_t)__builtin_ctzll(m), -1};
    }
    struct sjob *j = &s->jobs[ji];
    sched_queue_unlink(s, ji);
    sched_pending_count(s, ji, -1);
    s->npending--;
    if (node_hold(s, ji, p, np) < 0) {
        /* A placement from this engine is always free: a bug. */
        free(p);
        sched_queue_insert(s, ji);
        sched_pending_count(s, ji, +1);
        s->npending++;
        return -1;
    }
    /* eval_claimed() gave back a claim held before this evaluation; one
     * taken during it (preempted, then placed elsewhere) goes now. */
    if (j->victims > 0 && !ps->claim_released)
        quota_claim(s, j->project, j->run_model, j->units, -1);
    j->victims = 0;
    j->state = SCHED_JOB_RUNNING;
    j->start = ps->now;
    las_job_started(s, j, ps->now);
    j->est = ps->now + sched_job_duration(s, j);
    j->other = 0;
    sched_running_add(s, ji);
    usage_advance(s, j->project, ps->now);
    quota_account(s, ji, +1);
    struct sched_start *st = &d->starts[d->nstarts++];
    st->job = j->id;
    st->first = d->nplaces;
    st->nplaces = np;
    st->nnodes = f->nnodes;
    for (int i = 0; i < np; i++) {
        struct sched_place *o = &d->places[d->nplaces++];
        o->node = s->node_names.names[p[i].node];
        o->gpu = p[i].gpu;
        o->slice = p[i].slice;
    }
    return 0;
}

/* ---------------------------------------------------------- evaluation */

static int job_options(struct sched *s, const struct sjob *j, struct sopt *o)
{
    if (j->kind == SJOB_WHOLE) {
        o[0].kind = SJOB_WHOLE;
        o[0].profile = SCHED_NONE16;
        o[0].mask = model_mask_for(s, j);
        o[0].units = (int64_t)job_total(j) * SCHED_UNITS_PER_GPU;
        return 1;
    }
    uint64_t all = j->models ? j->models : ~UINT64_C(0);
    if (j->kind == SJOB_SLICE) {
        o[0].kind = SJOB_SLICE;
        o[0].profile = j->profile;
        o[0].mask = all;
        o[0].units = s->profiles[j->profile].units_max;
        return 1;
    }
    uint64_t mem = (uint64_t)j->mem_mib * 1024 * 1024;
    int n = 0;
    for (int i = 0; i < s->nmemopts && n < OPTS_MAX; i++) {
        if (s->memopt_mem[i] < mem || !(s->memopts[i].mask & all))
            continue;
        o[n] = s->memopts[i];
        o[n++].mask &= all;
    }
    return n;
}

/* The pass may use reserved GPUs only where no reservation is delayed. */
static bool try_place(struct sched *s, struct pass *ps, uint32_t ji,
                      const struct sopt *o, uint64_t mask, struct sfound *f)
{
    struct sjob *j = &s->jobs[ji];
    int64_t end = ps->now + sched_job_duration(s, j);
    /* A reservation holder may use its own reserved GPUs: the memo of
     * other jobs' failures does not speak for it. */
    bool holder = j->wait == SCHED_WAIT_RESERVED;
    /* Nor for a job with node wishes: its failure says nothing of others'
     * nodes (and theirs nothing of its own). */
    bool nomemo = holder || j->filter || j->excl;
    const struct smemo *m = nomemo ? NULL : memo_find(s, ps, j, o, mask, end);
    if (m) {
        j->wait = m->wait;
        j->other = m->other;
        return false;
    }
    bool ok;
    s->room_short = false;
    if (o->kind == SJOB_SLICE) {
        ok = place_slice(s, j, o->profile, mask, f);
    } else {
        int64_t have = 0;
        for (uint64_t b = mask; b; b &= b - 1)
            have += s->models[__builtin_ctzll(b)].free_gpus;
        ok = have >= (int64_t)job_total(j) &&
             place_whole(s, j, mask, end, false, f);
        if (!ok && have >= (int64_t)job_total(j) && s->nresv > 0 &&
            place_whole(s, j, mask, end, true, &s->found2)) {
            /* It fits, but only on GPUs reserved for another job. */
            const struct snode *nd = &s->nodes[s->found2.nodes[0]];
            uint32_t who = SCHED_NONE;
            for (int i = 0; i < s->found2.nnodes && who == SCHED_NONE; i++) {
                nd = &s->nodes[s->found2.nodes[i]];
                for (uint64_t b = s->found2.masks[i]; b; b &= b - 1) {
                    const struct sgpu *gp = &nd->gpus[__builtin_ctzll(b)];
                    if (gp->resv_epoch == s->epoch && resv_live(s, gp, ji)) {
                        who = gp->resv_job;
                        break;
                    }
                }
            }
            /* Not the GPUs but the host CPUs or memory a reservation on
             * one of those nodes keeps. */
            for (int i = 0; i < s->found2.nnodes && who == SCHED_NONE; i++) {
                nd = &s->nodes[s->found2.nodes[i]];
                for (int g = 0; g < nd->ngpus && who == SCHED_NONE; g++) {
                    const struct sgpu *gp = &nd->gpus[g];
                    if (gp->resv_epoch == s->epoch && resv_live(s, gp, ji))
                        who = gp->resv_job;
                }
            }
            j->wait = SCHED_WAIT_RESERVATION;
            j->other = who != SCHED_NONE ? s->jobs[who].id : 0;
            if (!nomemo)
                memo_add(s, ps, j, o, mask, end);
            return false;
        }
    }
    if (ok)
        return true;
    j->wait = SCHED_WAIT_RESOURCES;
    j->other = 0;
    if (!nomemo)
        memo_add(s, ps, j, o, mask, end);
    return false;
}

static int64_t option_units(const struct sjob *j, const struct sopt *o)
{
    (void)j;
    return o->units;
}

/* The user's limits: 0 when they allow the job, else the wait code. */
static int user_blocks(const struct sched *s, const struct sjob *j,
                       int64_t units)
{
    const struct suser *u = &s->users[j->user];
    if (u->max_jobs > 0 && u->running + 1 > u->max_jobs)
        return SCHED_WAIT_USER_JOBS;
    if (u->max_units != SCHED_UNLIMITED && u->used_units + units > u->max_units)
        return SCHED_WAIT_USER_GPUS;
    return 0;
}

/* Split an option's models by quota class. Returns the first blocking
 * class seen (QC_IN when none). */
static enum qclass quota_masks(const struct sched *s, const struct sjob *j,
                               const struct sopt *o, uint64_t *in,
                               uint64_t *borrow, uint16_t *blocked_model)
{
    enum qclass first = QC_IN;
    *in = *borrow = 0;
    for (uint64_t b = o->mask; b; b &= b - 1) {
        uint16_t m = (uint16_t)__builtin_ctzll(b);
        if (m >= s->model_names.n)
            break;
        enum qclass c = quota_class(s, j->project, m, option_units(j, o));
        if (c == QC_IN)
            *in |= UINT64_C(1) << m;
        else if (c == QC_BORROW)
            *borrow |= UINT64_C(1) << m;
        else if (first == QC_IN) {
            first = c;
            *blocked_model = m;
        }
    }
    return first;
}

static void set_quota_wait(struct sjob *j, enum qclass c, uint16_t m)
{
    j->wait =
        c == QC_TEAM_LIMIT ? SCHED_WAIT_QUOTA_TEAM : SCHED_WAIT_QUOTA_PROJECT;
    j->wait_arg = m;
}

/* Try every option with its in-quota (phase 1) or borrowing (phase 2)
 * models. 1 started, 0 not, -1 out of memory. */
static int try_options(struct sched *s, struct pass *ps, uint32_t ji,
                       const struct sopt *o, int no, const uint64_t *masks)
{
    struct sfound *f = &s->found;
    for (int i = 0; i < no; i++) {
        if (!masks[i])
            continue;
        if (!try_place(s, ps, ji, &o[i], masks[i], f))
            continue;
        if (ps->reasons_only) {
            /* The reason walk decides nothing. (It looks only at jobs that
             * cannot start: not reached once nothing could.) */
            s->jobs[ji].wait = SCHED_WAIT_RESOURCES;
            s->jobs[ji].other = 0;
            return 0;
        }
        return start_apply(s, ps, ji, f) < 0 ? -1 : 1;
    }
    return 0;
}

/* Whether no pending job can start any more in this pass (incremental
 * passes stop there). */
static bool nothing_can_start(struct sched *s, struct pass *ps)
{
    if (ps->blocked_head != SCHED_NONE)
        return true; /* FIFO or no backfill: nothing passes it */
    bool slices_done =
        s->free_slices == 0 || (s->pend_lb[0] == 0 && s->pend_flex == 0) ||
        (s->pend_flex == 0 && ps->slice_room &&
         (sched_pend_host_min(s->pend_hcpu_bits[0]) > ps->slice_cpus ||
          sched_pend_host_min(s->pend_hmem_bits[0]) > ps->slice_mem));
    return slices_done && whole_done(s, ps);
}

/* Phase 1 for one job. */
/* One job's options split by quota class. */
struct evalx {
    struct sopt o[OPTS_MAX];
    uint64_t in[OPTS_MAX];
    uint64_t borrow[OPTS_MAX];
    int no;
    bool any_in;
    bool any_borrow;
};

/* What stops a job before placement: a blocked head (FIFO), a shape that
 * never fits, its user's limits, its quota limits. 1 when the job is
 * settled (its reason set), 0 to go on with x filled. */
static int eval_gate(struct sched *s, struct pass *ps, uint32_t ji,
                     struct evalx *x)
{
    struct sjob *j = &s->jobs[ji];
    bool fifo = s->cfg.policy == SCHED_POLICY_FIFO;
    if (ps->blocked_head != SCHED_NONE) {
        j->wait = SCHED_WAIT_PRIORITY;
        j->other = s->jobs[ps->blocked_head].id;
        return 1;
    }
    x->no = static_fit(s, j, NULL) ? job_options(s, j, x->o) : 0;
    if (x->no == 0) {
        j->wait = SCHED_WAIT_NEVER;
        return 1;
    }
    int ub = user_blocks(s, j, x->o[0].units);
    if (ub) {
        j->wait = (uint8_t)ub;
        if (fifo)
            ps->blocked_head = ji;
        return 1;
    }
    enum qclass first = QC_IN;
    uint16_t bm = SCHED_NONE16;
    x->any_in = x->any_borrow = false;
    for (int i = 0; i < x->no; i++) {
        enum qclass c =
            quota_masks(s, j, &x->o[i], &x->in[i], &x->borrow[i], &bm);
        if (first == QC_IN)
            first = c;
        if (fifo) {
            x->in[i] |= x->borrow[i];
            x->borrow[i] = 0;
        }
        x->any_in |= x->in[i] != 0;
        x->any_borrow |= x->borrow[i] != 0;
    }
    if (!x->any_in && !x->any_borrow) {
        set_quota_wait(j, first, bm);
        if (fifo)
            ps->blocked_head = ji;
        return 1;
    }
    return 0;
}

/* Whether a full pass still gives a reservation to the next whole-GPU
 * job that cannot start: in quota (phase 1) or only borrowing (phase 2),
 * the first blocked jobs in the order hold them, so a short job never
 * passes a blocked big one because the big one is beyond its guarantee. */
static bool resv_open(const struct sched *s, const struct pass *ps,
                      const struct sjob *j)
{
    return ps->full && !ps->no_resv && s->cfg.policy != SCHED_POLICY_FIFO &&
           j->kind == SJOB_WHOLE && s->nresv < s->cfg.max_reservations;
}

static bool waits_for_gpus(const struct sjob *j)
{
    return j->wait == SCHED_WAIT_RESOURCES || j->wait == SCHED_WAIT_RESERVATION;
}

/* An in-quota job that could not start: keep its reservation, reclaim
 * borrowed GPUs, get a reservation, or block the queue (FIFO). */
static int eval_blocked(struct sched *s, struct pass *ps, uint32_t ji,
                        const struct evalx *x, bool held_resv, bool may_preempt,
                        int64_t held_est)
{
    struct sjob *j = &s->jobs[ji];
    bool fifo = s->cfg.policy == SCHED_POLICY_FIFO;
    if (held_resv) {
        j->wait = SCHED_WAIT_RESERVED;
        j->est = held_est;
    } else if (!fifo && (may_preempt || ps->reasons_only) &&
               ((s->quotas_on && s->nborrowing > 0) ||
                j->las_lvl < s->las_maxlvl) &&
               waits_for_gpus(j)) {
        if (j->victims > 0) {
            j->wait = SCHED_WAIT_PREEMPTING;
            j->est = held_est;
        }
        /* A job with node wishes waits rather than preempts: the
         * victim plans know nothing of its nodes. */
        bool wishes = j->filter || j->excl;
        for (int i = 0; i < x->no && j->victims == 0 && may_preempt && !wishes;
             i++) {
            if (x->in[i] &&
                preempt_plan(s, ji, &x->o[i], x->in[i], ps->now, ps->out) < 0)
                return -1;
        }
    }
    if (!fifo && resv_open(s, ps, j) && waits_for_gpus(j) &&
        resv_compute(s, ji, x->in[0], ps->now) < 0)
        return -1;
    if ((fifo || s->cfg.max_reservations == 0) && !x->any_borrow &&
        waits_for_gpus(j))
        ps->blocked_head = ji;
    return 0;
}

/* Phase 1 for one job. */
static int eval_job(struct sched *s, struct pass *ps, uint32_t ji)
{
    struct sjob *j = &s->jobs[ji];
    struct evalx x;
    bool held_resv = !ps->full && j->wait == SCHED_WAIT_RESERVED;
    /* Incremental passes reclaim only for jobs never looked at before; the
     * rest wait for the next full pass. */
    bool may_preempt =
        !ps->reasons_only && (ps->full || j->wait == SCHED_WAIT_NEW);
    int64_t held_est = j->est;
    j->est = 0;
    if (eval_gate(s, ps, ji, &x))
        return 0;
    if (x.any_in) {
        int rc = try_options(s, ps, ji, x.o, x.no, x.in);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
        if (eval_blocked(s, ps, ji, &x, held_resv, may_preempt, held_est) < 0)
            return -1;
    }
    if (x.any_borrow) {
        /* Its reason unless phase 2 finds better; no phase 2 at all once
         * nothing can start (resources only shrink in a pass). */
        if (!x.any_in && held_resv) {
            j->wait = SCHED_WAIT_RESERVED; /* a borrower's, kept */
            j->est = held_est;
        } else if (!x.any_in) {
            j->wait = SCHED_WAIT_RESOURCES;
        }
        if (!nothing_can_start(s, ps) || resv_open(s, ps, j))
            s->scratch[ps->ndeferred++] = ji;
    }
    return 0;
}

/* Phase 2: a job that may only borrow idle GPUs. */
static int eval_borrower(struct sched *s, struct pass *ps, uint32_t ji)
{
    struct sjob *j = &s->jobs[ji];
    struct sopt o[OPTS_MAX];
    uint64_t in[OPTS_MAX], borrow[OPTS_MAX];
    uint8_t wait = j->wait;
    uint64_t other = j->other;
    int64_t est = j->est;
    bool had_in = false;
    uint16_t bm = SCHED_NONE16;
    int no = job_options(s, j, o);
    enum qclass first = QC_IN;
    bool any = false;
    for (int i = 0; i < no; i++) {
        enum qclass c = quota_masks(s, j, &o[i], &in[i], &borrow[i], &bm);
        if (first == QC_IN)
            first = c;
        had_in |= in[i] != 0;
        any |= borrow[i] != 0;
    }
    if (had_in && !any)
        return 0; /* an in-quota job: phase 1 dealt with it */
    if (!any) {
        if (wait == SCHED_WAIT_NEW || wait == SCHED_WAIT_RESOURCES)
            set_quota_wait(j, first, bm);
        return 0;
    }
    int ub = user_blocks(s, j, o[0].units);
    if (ub) {
        j->wait = (uint8_t)ub;
        return 0;
    }
    int rc = try_options(s, ps, ji, o, no, borrow);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    /* Keep a reason from phase 1 (reservation, preemption) when it said
     * more than "resources". */
    if (wait == SCHED_WAIT_RESERVED || wait == SCHED_WAIT_PREEMPTING) {
        j->wait = wait;
        j->other = other;
        j->est = est;
        return 0;
    }
    /* Blocked while borrowing: it may still get the pass's reservation. */
    if (resv_open(s, ps, j) && waits_for_gpus(j) &&
        resv_compute(s, ji, borrow[0], ps->now) < 0)
        return -1;
    return 0;
}

/* Evaluate a job in a phase. A job waiting for its victims holds a claim
 * on its quota; it is given back for the job's own evaluation (the job
 * must not count against itself) and taken again if it still waits. */
static int eval_claimed(struct sched *s, struct pass *ps, uint32_t ji,
                        int phase)
{
    struct sjob *j = &s->jobs[ji];
    bool had_claim = j->victims > 0;
    if (had_claim)
        quota_claim(s, j->project, j->run_model, j->units, -1);
    ps->claim_released = had_claim;
    int r = phase == 1 ? eval_job(s, ps, ji) : eval_borrower(s, ps, ji);
    if (had_claim && j->state == SCHED_JOB_PENDING && j->victims > 0)
        quota_claim(s, j->project, j->run_model, j->units, +1);
    return r;
}

static int ensure_scratch(struct sched *s)
{
    size_t need = s->npending + 1;
    if (need > s->scratch_cap) {
        uint32_t *p = realloc(s->scratch, need * 2 * sizeof(*p));
        if (!p)
            return -1;
        s->scratch = p;
        s->scratch_cap = need * 2;
    }
    need = (size_t)s->node_names.n + 1;
    if (need < (size_t)s->nrunning + 1)
        need = (size_t)s->nrunning + 1;
    if (need > s->scratch2_cap) {
        uint32_t *p = realloc(s->scratch2, need * 2 * sizeof(*p));
        if (!p)
            return -1;
        s->scratch2 = p;
        s->scratch2_cap = need * 2;
    }
    return 0;
}

static void pass_begin(struct sched *s, struct pass *ps)
{
    for (uint32_t m = 0; m < s->model_names.n; m++) {
        if (s->models[m].nnodes > 0)
            ps->present |= UINT64_C(1) << m;
    }
    if (ps->full && s->lb_stale) {
        /* The largest node per model changed: recount pending demand. */
        memset(s->pend_lb, 0, sizeof(s->pend_lb));
        memset(s->pend_dur, 0, sizeof(s->pend_dur));
        memset(s->pend_dur_bits, 0, sizeof(s->pend_dur_bits));
        memset(s->pend_shape, 0, sizeof(s->pend_shape));
        memset(s->pend_hcpu, 0, sizeof(s->pend_hcpu));
        memset(s->pend_hcpu_bits, 0, sizeof(s->pend_hcpu_bits));
        memset(s->pend_hmem, 0, sizeof(s->pend_hmem));
        memset(s->pend_hmem_bits, 0, sizeof(s->pend_hmem_bits));
        s->pend_default = 0;
        s->pend_flex = 0;
        for (uint32_t j = 0; j < s->jobs_cap; j++) {
            if (s->jobs[j].state != SCHED_JOB_PENDING ||
                sched_job_cpu(&s->jobs[j]))
                continue;
            uint32_t cls = sched_job_class(&s->jobs[j]);
            uint8_t lb = s->jobs[j].lb;
            sched_pending_count(s, j, +1);
            if (sched_job_class(&s->jobs[j]) != cls) {
                /* Move it to the queue of its new size class. */
                uint8_t nlb = s->jobs[j].lb;
                s->jobs[j].lb = lb;
                sched_queue_unlink(s, j);
                s->jobs[j].lb = nlb;
                sched_queue_insert(s, j);
            }
        }
        s->lb_stale = false;
    }
    if (ps->full) {
        usage_keys(s, ps->now);
        memcpy(s->resv_prev, s->resv_ids, sizeof(*s->resv_ids) * s->nresv);
        s->nresv_prev = s->nresv;
        s->epoch++;
        s->nresv = 0;
        s->last_full = ps->now;
        s->full_passes++;
        s->dirty = false;
    } else {
        s->incr_passes++;
    }
    las_pass_begin(s, ps->now, ps->full);
    /* Preempting jobs end no later than their grace period. */
    ps->blocked_head = SCHED_NONE;
}

/* Whether the pass may stop now: nothing more can start, and (full
 * passes) no job further down the order could get a reservation or
 * reclaim GPUs by preemption. A blocked head (FIFO, no backfill) holds up
 * only starts, so it no longer matters. Nothing else a job's evaluation
 * changes is read by a decision: its reason, estimate and the pass's memo.
 */
static bool may_stop(struct sched *s, struct pass *ps)
{
    if (!nothing_can_start(s, ps))
        return false;
    /* Without backfill a GPU job that cannot start holds up the jobs
     * without GPUs behind it: while some are left to walk, an incremental
     * pass goes as far as a full one would, to find the same blocked head
     * (its jobs preempt only as they would anyway). */
    bool cpu_left = s->cfg.max_reservations == 0 && s->cpu_next < s->cpu_norder;
    if ((!ps->full && !cpu_left) || s->cfg.policy == SCHED_POLICY_FIFO)
        return true;
    if (s->quotas_on && s->nborrowing > 0)
        return false;
    /* LAS: a job further down of a lower level than a preemptible running
     * one could still preempt it. */
    if (s->las_maxlvl > 0 && ps->nheap > 0 &&
        s->jobs[ps->heap[0].job].las_lvl < s->las_maxlvl)
        return false;
    return s->nresv >= s->cfg.max_reservations;
}

/* Phase 1: the order, in-quota jobs first (every job without quotas). */
static int phase1(struct sched *s, struct pass *ps)
{
    ps->phase = 1;
    for (;;) {
        if (may_stop(s, ps))
            break;
        uint32_t ji = merge_next(s, ps);
        if (ji == SCHED_NONE)
            break;
        /* The jobs without GPUs that come before it (sched_cpu.c). */
        if (cpu_pass_upto(s, ps->now, ji, ps->blocked_head, ps->out) < 0)
            return -1;
        ps->out->visited++;
        if (eval_claimed(s, ps, ji, 1) < 0)
            return -1;
    }
    return 0;
}

/* Phase 2: jobs that may only borrow idle GPUs. A full pass has them
 * listed (it skips no queue while quotas are on); an incremental one,
 * which may have skipped queues, walks the order again. */
static int phase2(struct sched *s, struct pass *ps)
{
    ps->phase = 2;
    if (ps->full) {
        for (uint32_t i = 0; i < ps->ndeferred; i++) {
            uint32_t ji = s->scratch[i];
            if (nothing_can_start(s, ps) &&
                (s->jobs[ji].state != SCHED_JOB_PENDING ||
                 !resv_open(s, ps, &s->jobs[ji])))
                continue; /* keeps "resources" from phase 1 */
            if (s->jobs[ji].state != SCHED_JOB_PENDING)
                continue;
            if (eval_claimed(s, ps, ji, 2) < 0)
                return -1;
        }
        return 0;
    }
    if (!s->quotas_on || s->cfg.policy == SCHED_POLICY_FIFO)
        return 0;
    if (merge_init(s, ps) < 0)
        return -1;
    for (;;) {
        if (nothing_can_start(s, ps))
            break;
        uint32_t ji = merge_next(s, ps);
        if (ji == SCHED_NONE)
            break;
        ps->out->visited++;
        if (eval_claimed(s, ps, ji, 2) < 0)
            return -1;
    }
    return 0;
}

/* Incremental passes: jobs added since the last pass that the early stop
 * did not reach cannot start now, but they get a reason (and may
 * reclaim). */
static int fresh_reasons(struct sched *s, struct pass *ps)
{
    ps->phase = 1;
    ps->no_resv = true;
    for (uint32_t i = 0; i < s->nfresh; i++) {
        struct sjob *j = sched_job_get(s, s->fresh[i]);
        if (!j || j->state != SCHED_JOB_PENDING || j->wait != SCHED_WAIT_NEW)
            continue;
        uint32_t nd = ps->ndeferred;
        if (eval_claimed(s, ps, (uint32_t)(j - s->jobs), 1) < 0)
            return -1;
        ps->ndeferred = nd;
        if (j->state == SCHED_JOB_PENDING && j->wait == SCHED_WAIT_NEW)
            j->wait = SCHED_WAIT_RESOURCES;
    }
    s->nfresh = 0;
    return 0;
}

/* The last full pass's reservation holders that this one did not reach
 * (nor reserved for again) no longer hold one: as if it had looked at
 * them, only the holders of this pass keep that wait. (It matters: a
 * holder's placements are never memoised.) */
static void resv_lapse(struct sched *s)
{
    for (int i = 0; i < s->nresv_prev; i++) {
        struct sjob *j = sched_job_get(s, s->resv_prev[i]);
        if (!j || j->state != SCHED_JOB_PENDING ||
            j->wait != SCHED_WAIT_RESERVED)
            continue;
        bool holds = false;
        for (int k = 0; k < s->nresv && !holds; k++)
            holds = s->resv_ids[k] == j->id;
        if (!holds) {
            j->wait = SCHED_WAIT_RESOURCES;
            j->other = 0;
            j->est = 0;
        }
    }
    s->nresv_prev = 0;
}

/* Full passes, after every decision: a reason for the jobs the pass did
 * not reach (they cannot start now). With all_reasons every one of them,
 * in order: the queues phase 1 skipped and the rest of the order; else
 * only those added since the last pass. The walk starts, reserves and
 * reclaims nothing, and leaves no job "new" (which would let the next
 * incremental pass reclaim for it) and no job "reserved" but those of this
 * pass, so the next passes decide the same either way. */
static int reason_walk(struct sched *s, struct pass *ps)
{
    ps->phase = 1;
    ps->no_resv = true;
    ps->reasons_only = true;
    if (s->cfg.all_reasons) {
        memcpy(ps->heap + ps->nheap, ps->rest, ps->nrest * sizeof(*ps->rest));
        ps->nheap += ps->nrest;
        ps->nrest = 0;
        for (uint32_t i = ps->nheap / 2; i-- > 0;)
            heap_down(s, ps, i);
        for (uint32_t ji; (ji = merge_next(s, ps)) != SCHED_NONE;) {
            uint32_t nd = ps->ndeferred;
            if (eval_claimed(s, ps, ji, 1) < 0)
                return -1;
            ps->ndeferred = nd;
        }
    }
    resv_lapse(s);
    return fresh_reasons(s, ps);
}

/* The job no CPU job behind it may pass once phase 1 is done: the pass's
 * blocked head (FIFO, no backfill); with FIFO also the first pending GPU
 * job that can fit, which phase 1 may not have reached when nothing
 * could start. */
static uint32_t cpu_blocker(const struct sched *s, const struct pass *ps)
{
    if (ps->blocked_head != SCHED_NONE || s->cfg.policy != SCHED_POLICY_FIFO ||
        s->ncpu_pending == 0)
        return ps->blocked_head;
    for (uint32_t j = s->fifo.head; j != SCHED_NONE; j = s->jobs[j].next) {
        if (s->jobs[j].wait != SCHED_WAIT_NEVER)
            return j;
    }
    return SCHED_NONE;
}

int sched_run(struct sched *s, int64_t now, bool full,
              struct sched_decisions *out, struct sh_error *err)
{
    struct pass ps;
    int rc = -1;
    memset(&ps, 0, sizeof(ps));
    out->nstarts = out->nplaces = out->npreempts = 0;
    out->visited = 0;
    if (now < s->last_now)
        now = s->last_now;
    ps.now = now;
    ps.out = out;
    ps.full = full || s->dirty || !s->ran ||
              s->cfg.full_pass_interval_ms == 0 ||
              now - s->last_full >= s->cfg.full_pass_interval_ms;
    if (sched_memopts_build(s) < 0 || ensure_scratch(s) < 0 ||
        sched_filters_fresh(s) < 0)
        goto nomem;
    /* Fair-share scores first: the merge orders queues by them. */
    s->last_now = now;
    s->ran = true;
    pass_begin(s, &ps);
    out->full_pass = ps.full;
    if (sched_queues_sort(s) < 0 || merge_init(s, &ps) < 0 ||
        cpu_pass_begin(s, ps.full) < 0 || phase1(s, &ps) < 0 ||
        cpu_pass_upto(s, now, SCHED_NONE, cpu_blocker(s, &ps), out) < 0 ||
        phase2(s, &ps) < 0 ||
        (ps.full ? reason_walk(s, &ps) : fresh_reasons(s, &ps)) < 0)
        goto nomem;
    rc = 0;
    goto out;
nomem:
    sh_errorf(err, SH_EINTERNAL, "out of memory in a scheduling pass");
out:
    return rc;
}
