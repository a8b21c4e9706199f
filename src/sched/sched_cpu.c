/* SPDX-License-Identifier: Apache-2.0 */
/* Jobs without GPUs (gpus 0): their own queue class in the engine.
 *
 * They take a node, not a GPU: no GPU quota, no reservation, never
 * preempted, and they never hold up a GPU job's placement, except an
 * exclusive one (whole nodes: it waits for the CPU jobs of a node, as an
 * exclusive CPU job waits for every job of one). They are ordered like
 * GPU jobs (sched_before(): priority class, fair share and age, submit
 * time, id), count against their user's running-job limit, and with the
 * FIFO policy wait behind a blocked head as every job does.
 *
 * Each pass walks them in that order, merged into phase 1's walk of the
 * GPU jobs (a CPU job is looked at just before the first GPU job it comes
 * before; the rest once phase 1 is done), so a user's running-job limit
 * goes to their jobs in order whatever they ask for. Each starts on the
 * eligible up node (nodelist, exclude, constraint, exclusivity both ways)
 * with the fewest running jobs that has the host CPUs and memory it asks
 * (node_room(): nor those a reservation it would delay needs); a job of N
 * nodes on the N such nodes. A pass with no pending CPU job costs nothing
 * here,
 * so GPU-only runs (the simulator's traces) decide exactly as before.
 */
#include "sched/sched_int.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- queue */

void cpu_queue_add(struct sched *s, uint32_t j)
{
    struct sjob *job = &s->jobs[j];
    sched_list_append(s, &s->cpu, j);
    s->ncpu_pending++;
    s->ncpu_excl_pending += job->excl;
    s->users[job->user].cpu_pending++;
    s->cpu_wake = true;
}

void cpu_queue_remove(struct sched *s, uint32_t j)
{
    struct sjob *job = &s->jobs[j];
    sched_list_unlink(s, &s->cpu, j);
    s->ncpu_pending--;
    s->ncpu_excl_pending -= job->excl;
    s->users[job->user].cpu_pending--;
}

void cpu_note_stop(struct sched *s, const struct sjob *j)
{
    if (s->users[j->user].cpu_pending > 0 || j->excl ||
        s->ncpu_excl_pending > 0 ||
        (s->ncpu_pending > 0 && (j->host_cpus > 0 || j->host_mem > 0)))
        s->cpu_wake = true;
}

/* ----------------------------------------------------------- hold, free */

/* Whether node n holds a live reservation of a job ahead of CPU job j
 * that a start of j there would delay: an exclusive job's (it needs the
 * node empty), or any job's when j itself is exclusive. */
static bool cpu_node_reserved(const struct sched *s, const struct sjob *j,
                              uint32_t n)
{
    const struct snode *nd = &s->nodes[n];
    if (nd->resv_epoch != s->epoch)
        return false;
    uint32_t x = (uint32_t)(j - s->jobs);
    for (uint8_t g = 0; g < nd->ngpus; g++) {
        const struct sgpu *gp = &nd->gpus[g];
        if (gp->resv_epoch == s->epoch && resv_live(s, gp, x) &&
            (j->excl || s->jobs[gp->resv_job].excl))
            return true;
    }
    return false;
}

/* Whether CPU job j may start on node n now: an up node its wishes allow,
 * no exclusive job there, and for an exclusive job no job at all; not a
 * node an exclusive job ahead has reserved (a stream of CPU jobs would
 * keep it waiting for ever), nor, for an exclusive CPU job, one whose GPUs
 * a job ahead has reserved. */
static bool cpu_node_ok(const struct sched *s, const struct sjob *j, uint32_t n,
                        int64_t end)
{
    const struct snode *nd = &s->nodes[n];
    if (!nd->present || nd->state != SCHED_NODE_UP)
        return false;
    if (j->filter && !(n < j->filter->nbits && bits_test(j->filter->allow, n)))
        return false;
    return nd->excl == SCHED_NONE && (!j->excl || nd->njobs == 0) &&
           !cpu_node_reserved(s, j, n) && node_room(s, nd, j, end);
}

int cpu_hold(struct sched *s, uint32_t j, struct splace *p, int np,
             bool recover)
{
    struct sjob *job = &s->jobs[j];
    for (int i = 0; i < np; i++) {
        const struct snode *nd = &s->nodes[p[i].node];
        if (!nd->present || (!recover && (nd->excl != SCHED_NONE ||
                                          (job->excl && nd->njobs > 0) ||
                                          !node_room_now(nd, job))))
            return -1;
        for (int k = 0; k < i; k++) {
            if (p[k].node == p[i].node)
                return -1;
        }
    }
    if (s->ncpu_running == s->cpu_running_cap) {
        void *r = s->cpu_running;
        if (sched_grow(&r, &s->cpu_running_cap, s->ncpu_running + 1,
                       sizeof(*s->cpu_running)) < 0)
            return -1;
        s->cpu_running = r;
    }
    for (int i = 0; i < np; i++) {
        struct snode *nd = &s->nodes[p[i].node];
        nd->njobs++;
        nd->ncpu++;
        node_room_take(nd, job, +1);
        if (job->excl && nd->excl == SCHED_NONE)
            nd->excl = j;
    }
    job->place = p;
    job->nplace = (uint16_t)np;
    job->units = 0;
    job->run_model = SCHED_NONE16;
    job->prev = s->ncpu_running;
    s->cpu_running[s->ncpu_running++] = j;
    s->users[job->user].running++;
    s->pend_version++; /* estimates read the nodes' jobs */
    return 0;
}

void cpu_release(struct sched *s, uint32_t j)
{
    struct sjob *job = &s->jobs[j];
    for (int i = 0; i < job->nplace; i++) {
        struct snode *nd = &s->nodes[job->place[i].node];
        node_excl_drop(s, job->place[i].node, j);
        nd->njobs--;
        nd->ncpu--;
        node_room_take(nd, job, -1);
        nd->shared = nd->shared && nd->njobs > 0;
    }
    uint32_t slot = job->prev;
    uint32_t last = s->cpu_running[--s->ncpu_running];
    s->cpu_running[slot] = last;
    s->jobs[last].prev = slot;
    struct suser *u = &s->users[job->user];
    u->running--;
    u->over_ok = u->over_ok && !quota_user_within(u);
    s->pend_version++;
}

int64_t cpu_node_busy_until(const struct sched *s, uint32_t n)
{
    int64_t t = 0;
    if (s->nodes[n].ncpu == 0)
        return 0;
    for (uint32_t i = 0; i < s->ncpu_running; i++) {
        const struct sjob *j = &s->jobs[s->cpu_running[i]];
        for (int k = 0; k < j->nplace; k++) {
            if (j->place[k].node == n && j->est > t)
                t = j->est;
        }
    }
    return t;
}

/* ----------------------------------------------------------------- pass */

/* The nodes for job j: the want eligible ones with the fewest running
 * jobs (node order among equals), into nodes. How many it found. */
static int cpu_pick(const struct sched *s, const struct sjob *j, int want,
                    int64_t end, uint32_t *nodes)
{
    int got = 0;
    for (; got < want; got++) {
        uint32_t best = SCHED_NONE;
        for (uint32_t n = 0; n < s->node_names.n; n++) {
            if (!cpu_node_ok(s, j, n, end))
                continue;
            if (best != SCHED_NONE && s->nodes[n].njobs >= s->nodes[best].njobs)
                continue;
            bool taken = false;
            for (int k = 0; k < got && !taken; k++)
                taken = nodes[k] == n;
            if (!taken)
                best = n;
        }
        if (best == SCHED_NONE)
            break;
        nodes[got] = best;
    }
    return got;
}

/* When every job holding each node ends (estimated), into end (one per
 * node; 0 for a node without jobs): one walk of the running jobs. */
static void node_jobs_end(const struct sched *s, int64_t *end)
{
    const uint32_t count[2] = {s->nrunning, s->ncpu_running};
    const uint32_t *list[2] = {s->running, s->cpu_running};
    memset(end, 0, sizeof(*end) * s->node_names.n);
    for (int l = 0; l < 2; l++) {
        for (uint32_t i = 0; i < count[l]; i++) {
            const struct sjob *j = &s->jobs[list[l][i]];
            for (int k = 0; k < j->nplace; k++) {
                if (j->est > end[j->place[k].node])
                    end[j->place[k].node] = j->est;
            }
        }
    }
}

/* The k-th smallest (from 0) of t[0..n), k < n; reorders t (Hoare's
 * selection). */
static int64_t nth_smallest(int64_t *t, long n, long k)
{
    long lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t pivot = t[lo + (hi - lo) / 2];
        long i = lo, j = hi;
        while (i <= j) {
            while (t[i] < pivot)
                i++;
            while (t[j] > pivot)
                j--;
            if (i <= j) {
                int64_t x = t[i];
                t[i++] = t[j];
                t[j--] = x;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return t[k];
}

/* The estimated start of a CPU job that found no node now: when the
 * want-th eligible up node is free for it (running jobs end at their
 * time limits). 0 when fewer than want nodes are eligible at all. The
 * room is kept across calls; an exclusive job's node ends come from one
 * walk of the running jobs. */
static int64_t cpu_estimate(struct sched *s, const struct sjob *j, int want,
                            int64_t now)
{
    uint32_t nn = s->node_names.n;
    void *room = s->cpu_times;
    if (sched_grow(&room, &s->cpu_times_cap, nn * 2 + 1,
                   sizeof(*s->cpu_times)) < 0)
        return 0;
    s->cpu_times = room;
    int64_t *t = s->cpu_times, *end = s->cpu_times + nn;
    bool asks = j->host_cpus > 0 || j->host_mem > 0;
    if (j->excl || asks)
        node_jobs_end(s, end);
    long k = 0;
    for (uint32_t n = 0; n < nn; n++) {
        const struct snode *nd = &s->nodes[n];
        if (!nd->present || nd->state != SCHED_NODE_UP ||
            (j->filter &&
             !(n < j->filter->nbits && bits_test(j->filter->allow, n))))
            continue;
        int64_t at = now;
        if (nd->excl != SCHED_NONE && s->jobs[nd->excl].est > at)
            at = s->jobs[nd->excl].est;
        if (j->excl && nd->njobs > 0 && end[n] > at)
            at = end[n];
        if (asks && ((j->host_cpus > nd->cpus && nd->cpus > 0) ||
                     (j->host_mem > nd->mem_mib && nd->mem_mib > 0)))
            continue; /* never enough here */
        /* Short of CPUs or memory now: surely free once all its jobs end. */
        if (asks && !node_room_now(nd, j) && end[n] > at)
            at = end[n];
        t[k++] = at;
    }
    if (k < want)
        return 0;
    int64_t at = nth_smallest(t, k, want - 1);
    return at > now ? at : now + 1;
}

/* Start CPU job ji on nodes: held in the engine and told in out. */
static int cpu_start(struct sched *s, uint32_t ji, const uint32_t *nodes,
                     int np, int64_t now, struct sched_decisions *out)
{
    struct splace *p = malloc(sizeof(*p) * (size_t)np);
    if (!p || sched_decisions_reserve(out, (size_t)np) < 0)
        goto nomem;
    for (int i = 0; i < np; i++)
        p[i] = (struct splace){nodes[i], 0xff, -1};
    cpu_queue_remove(s, ji);
    if (cpu_hold(s, ji, p, np, false) < 0) {
        cpu_queue_add(s, ji);
        goto nomem;
    }
    struct sjob *j = &s->jobs[ji];
    j->state = SCHED_JOB_RUNNING;
    j->start = now;
    j->est = now + sched_job_duration(s, j);
    j->other = 0;
    struct sched_start *st = &out->starts[out->nstarts++];
    st->job = j->id;
    st->first = out->nplaces;
    st->nplaces = np;
    st->nnodes = np;
    for (int i = 0; i < np; i++) {
        struct sched_place *o = &out->places[out->nplaces++];
        o->node = s->node_names.names[nodes[i]];
        o->gpu = -1;
        o->slice = -1;
    }
    return 0;
nomem:
    free(p);
    return -1;
}

int cpu_pass_begin(struct sched *s, bool full)
{
    s->cpu_norder = s->cpu_next = 0;
    s->cpu_plain_want = 0;
    s->cpu_plain_est = 0;
    s->cpu_plain_cpus = s->cpu_plain_mem = 0;
    /* FIFO and no backfill: a GPU job starting may free the ones behind
     * it, so every pass walks them. */
    bool always =
        s->cfg.policy == SCHED_POLICY_FIFO || s->cfg.max_reservations == 0;
    if (s->ncpu_pending == 0 || (!full && !s->cpu_wake && !always))
        return 0;
    s->cpu_wake = false;
    if (s->cpu_order_cap < s->ncpu_pending) {
        void *o = s->cpu_order;
        if (sched_grow(&o, &s->cpu_order_cap, s->ncpu_pending,
                       sizeof(*s->cpu_order)) < 0)
            return -1;
        s->cpu_order = o;
    }
    uint32_t n = 0;
    for (uint32_t j = s->cpu.head; j != SCHED_NONE; j = s->jobs[j].next)
        s->cpu_order[n++] = j;
    qsort_r(s->cpu_order, n, sizeof(*s->cpu_order), sched_order_cmp, s);
    s->cpu_norder = n;
    return 0;
}

/* One pending CPU job: start it, or its reason and estimate. */
static int cpu_eval(struct sched *s, uint32_t ji, int64_t now,
                    uint32_t blocked_head, struct sched_decisions *out)
{
    struct sjob *j = &s->jobs[ji];
    const struct suser *u = &s->users[j->user];
    int want = j->nodes > 0 ? j->nodes : 1;
    bool plain = !j->filter && !j->excl;
    uint32_t nodes[JOB_NODES_MAX];
    out->visited++;
    j->est = 0;
    j->other = 0;
    if (blocked_head != SCHED_NONE &&
        sched_before(s, &s->jobs[blocked_head], j)) {
        j->wait = SCHED_WAIT_PRIORITY;
        j->other = s->jobs[blocked_head].id;
        return 0;
    }
    if (u->max_jobs > 0 && u->running + 1 > u->max_jobs) {
        j->wait = SCHED_WAIT_USER_JOBS;
        return 0;
    }
    /* A job without wishes that found no node: later ones of at least
     * its size find none either (nodes only fill during a pass); their
     * estimate is its. */
    if (plain && s->cpu_plain_want > 0 && want >= s->cpu_plain_want &&
        j->host_cpus >= s->cpu_plain_cpus && j->host_mem >= s->cpu_plain_mem) {
        j->wait = SCHED_WAIT_RESOURCES;
        j->est = want == s->cpu_plain_want ? s->cpu_plain_est : 0;
        return 0;
    }
    if (cpu_pick(s, j, want, now + sched_job_duration(s, j), nodes) < want) {
        j->wait = SCHED_WAIT_RESOURCES;
        j->est = cpu_estimate(s, j, want, now);
        if (plain && (s->cpu_plain_want == 0 || want < s->cpu_plain_want)) {
            s->cpu_plain_want = want;
            s->cpu_plain_est = j->est;
            s->cpu_plain_cpus = j->host_cpus;
            s->cpu_plain_mem = j->host_mem;
        }
        return 0;
    }
    return cpu_start(s, ji, nodes, want, now, out);
}

int cpu_pass_upto(struct sched *s, int64_t now, uint32_t before,
                  uint32_t blocked_head, struct sched_decisions *out)
{
    while (s->cpu_next < s->cpu_norder) {
        uint32_t ji = s->cpu_order[s->cpu_next];
        if (before != SCHED_NONE &&
            !sched_before(s, &s->jobs[ji], &s->jobs[before]))
            break;
        s->cpu_next++;
        if (s->jobs[ji].state == SCHED_JOB_PENDING &&
            cpu_eval(s, ji, now, blocked_head, out) < 0)
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- check */

#define FAIL(...)                                                              \
    do {                                                                       \
        sh_errorf(err, SH_EINTERNAL, __VA_ARGS__);                             \
        return -1;                                                             \
    } while (0)

/* cpu_check's counts: jobs at [node], jobs without GPUs at [nodes +
 * node]. */
static void count_job(const struct sched *s, uint32_t node,
                      const struct sjob *x, bool cpu, void *arg)
{
    uint32_t *cnt = arg;
    (void)x;
    cnt[node]++;
    cnt[s->node_names.n + node] += cpu;
}

int cpu_check(const struct sched *s, struct sh_error *err)
{
    uint32_t c = 0, prev = SCHED_NONE;
    for (uint32_t j = s->cpu.head; j != SCHED_NONE; j = s->jobs[j].next) {
        const struct sjob *x = &s->jobs[j];
        if (x->state != SCHED_JOB_PENDING || !sched_job_cpu(x) ||
            x->prev != prev)
            FAIL("CPU queue link broken at job %llu",
                 (unsigned long long)x->id);
        prev = j;
        c++;
    }
    if (c != s->cpu.count || c != s->ncpu_pending || prev != s->cpu.tail)
        FAIL("CPU queue: %u jobs, count %u, %u pending", c, s->cpu.count,
             s->ncpu_pending);
    for (uint32_t i = 0; i < s->ncpu_running; i++) {
        const struct sjob *x = &s->jobs[s->cpu_running[i]];
        if (x->state != SCHED_JOB_RUNNING || !sched_job_cpu(x) || x->prev != i)
            FAIL("CPU running list broken at slot %u", i);
    }
    uint32_t nn = s->node_names.n;
    uint32_t *cnt = calloc((size_t)nn * 2 + 1, sizeof(*cnt));
    if (!cnt)
        FAIL("out of memory");
    sched_each_running_node(s, count_job, cnt);
    for (uint32_t n = 0; n < nn; n++) {
        if (cnt[n] != s->nodes[n].njobs || cnt[nn + n] != s->nodes[n].ncpu) {
            sh_errorf(err, SH_EINTERNAL,
                      "node %s: %u jobs (kept %u), %u without GPUs (kept %u)",
                      s->node_names.names[n], cnt[n], s->nodes[n].njobs,
                      cnt[nn + n], s->nodes[n].ncpu);
            free(cnt);
            return -1;
        }
    }
    free(cnt);
    return 0;
}
