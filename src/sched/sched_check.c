/* SPDX-License-Identifier: Apache-2.0 */
/* sched_check_invariants(): recompute what the engine keeps incrementally
 * (holders, free masks, indexes, usage, claims, queues) from the jobs'
 * placements and compare. Tests call it after every step; it is O(state)
 * and allocates only scratch arrays.
 */
#include "sched/sched_int.h"

#include <stdlib.h>
#include <string.h>

#define FAIL(...)                                                              \
    do {                                                                       \
        sh_errorf(err, SH_EINTERNAL, __VA_ARGS__);                             \
        goto out;                                                              \
    } while (0)

/* A running job: every placement entry names a GPU or slice it holds,
 * of one model; its units add up; a gang has its shape. */
static int check_running(const struct sched *s, uint32_t ji,
                         struct sh_error *err)
{
    const struct sjob *j = &s->jobs[ji];
    int rc = -1;
    uint32_t units = 0;
    uint32_t nodes[JOB_NODES_MAX];
    uint32_t per[JOB_NODES_MAX];
    int nn = 0;
    if (j->prev >= s->nrunning || s->running[j->prev] != ji)
        FAIL("job %llu: running slot wrong", (unsigned long long)j->id);
    for (int i = 0; i < j->nplace; i++) {
        const struct splace *p = &j->place[i];
        const struct snode *nd = &s->nodes[p->node];
        if (!nd->present || p->gpu >= nd->ngpus)
            FAIL("job %llu: placement on a missing GPU",
                 (unsigned long long)j->id);
        const struct sgpu *gp = &nd->gpus[p->gpu];
        if (gp->model != j->run_model)
            FAIL("job %llu: GPUs of several models", (unsigned long long)j->id);
        if (p->slice < 0 && (gp->job != ji || (gp->flags & SGPU_SLICED)))
            FAIL("job %llu: GPU %s/%d not held by it",
                 (unsigned long long)j->id, s->node_names.names[p->node],
                 p->gpu);
        if ((j->excl && nd->excl == SCHED_NONE) ||
            (!nd->shared && ((nd->excl != SCHED_NONE && nd->excl != ji) ||
                             (j->excl && nd->excl != ji))))
            FAIL("job %llu: shares node %s with an exclusive job",
                 (unsigned long long)j->id, s->node_names.names[p->node]);
        if (p->slice >= 0 &&
            (p->slice >= gp->nslices || gp->slices[p->slice].job != ji))
            FAIL("job %llu: slice %s/%d/%d not held by it",
                 (unsigned long long)j->id, s->node_names.names[p->node],
                 p->gpu, p->slice);
        units +=
            p->slice < 0 ? SCHED_UNITS_PER_GPU : gp->slices[p->slice].units;
        int k;
        for (k = 0; k < nn && nodes[k] != p->node; k++)
            ;
        if (k == nn) {
            if (nn == JOB_NODES_MAX)
                FAIL("job %llu: too many nodes", (unsigned long long)j->id);
            nodes[nn] = p->node;
            per[nn++] = 0;
        }
        per[k]++;
    }
    if (units != j->units)
        FAIL("job %llu: holds %u units, accounts %u", (unsigned long long)j->id,
             units, j->units);
    uint32_t total = 0;
    for (int k = 0; k < nn; k++) {
        total += per[k];
        if (per[k] != per[0] ||
            (j->kind == SJOB_WHOLE && j->nodes >= 1 && per[k] != j->gpus))
            FAIL("job %llu: %u GPUs on a node, asked %u",
                 (unsigned long long)j->id, per[k], j->gpus);
    }
    if (j->kind == SJOB_WHOLE && j->nodes >= 1 && nn != j->nodes)
        FAIL("job %llu: gang on %d nodes, asked %u", (unsigned long long)j->id,
             nn, j->nodes);
    if (j->kind == SJOB_WHOLE && j->nodes == 0 && total != j->gpus)
        FAIL("job %llu: %u GPUs, asked %u", (unsigned long long)j->id, total,
             j->gpus);
    if (j->kind != SJOB_WHOLE && j->nplace != 1)
        FAIL("job %llu: a slice job with %u places", (unsigned long long)j->id,
             j->nplace);
    rc = 0;
out:
    return rc;
}

/* Jobs: the id map, placements, counts, and the by-end index. */
static int check_jobs(const struct sched *s, struct sh_error *err)
{
    int rc = -1;
    uint32_t running = 0, pending = 0;
    for (uint32_t ji = 0; ji < s->jobs_cap; ji++) {
        const struct sjob *j = &s->jobs[ji];
        if (j->state == SJOB_FREE)
            continue;
        if (idmap_get(&s->ids, j->id) != ji)
            FAIL("job %llu: id map points elsewhere",
                 (unsigned long long)j->id);
        if (sched_job_cpu(j)) {
            if ((j->state == SCHED_JOB_PENDING) != (j->place == NULL))
                FAIL("job %llu without GPUs: placement and state disagree",
                     (unsigned long long)j->id);
            continue; /* counted by cpu_check() */
        }
        if (j->state == SCHED_JOB_PENDING) {
            pending++;
            if (j->place)
                FAIL("pending job %llu has a placement",
                     (unsigned long long)j->id);
            if (j->las_lvl > 0 && !(sched_las(s) && las_leveled(s, j)))
                FAIL("pending job %llu has a LAS level it may not have",
                     (unsigned long long)j->id);
            continue;
        }
        running++;
        if (check_running(s, ji, err) < 0)
            return -1;
        /* LAS: a run's level kept for the pass's time holds (sched_las.c);
         * a job without a level (the default policy, not checkpointable)
         * stays at 0. */
        uint8_t lvl = las_leveled(s, j)
                          ? las_level(s, las_attained(s, j, s->last_now))
                          : 0;
        if (sched_las(s) && s->ran && j->las_run_start == j->start &&
            s->last_now < j->las_run_next && j->las_run_lvl != lvl)
            FAIL("job %llu: LAS level %u kept, %u now",
                 (unsigned long long)j->id, j->las_run_lvl, lvl);
    }
    if (running != s->nrunning || pending != s->npending)
        FAIL("counts: %u running (kept %u), %u pending (kept %u)", running,
             s->nrunning, pending, s->npending);
    /* by_end: the running jobs, each once, by (estimated end, id). */
    for (uint32_t i = 0; i < s->nrunning; i++) {
        const struct sjob *a = &s->jobs[s->by_end[i]];
        if (a->state == SJOB_FREE || a->state == SCHED_JOB_PENDING)
            FAIL("by_end holds a job that does not run");
        if (i > 0) {
            const struct sjob *b = &s->jobs[s->by_end[i - 1]];
            if (b->est > a->est || (b->est == a->est && b->id >= a->id))
                FAIL("by_end out of order at job %llu",
                     (unsigned long long)a->id);
        }
    }
    rc = 0;
out:
    return rc;
}

/* Holders point back at running jobs; unfenced GPUs serve one project. */
static int check_gpus(const struct sched *s, struct sh_error *err)
{
    int rc = -1;
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        const struct snode *nd = &s->nodes[n];
        if (!nd->present)
            continue;
        uint32_t held = 0;
        uint64_t whole = 0, freem = 0;
        for (int g = 0; g < nd->ngpus; g++) {
            const struct sgpu *gp = &nd->gpus[g];
            uint32_t fenced = 0;
            if (gp->job != SCHED_NONE) {
                held++;
                if (s->jobs[gp->job].state == SJOB_FREE ||
                    s->jobs[gp->job].state == SCHED_JOB_PENDING)
                    FAIL("GPU %s/%d held by a job that does not run",
                         s->node_names.names[n], g);
            }
            for (int k = 0; k < gp->nslices; k++) {
                uint32_t h = gp->slices[k].job;
                bool freebit = (gp->slice_free >> k) & 1;
                if ((h == SCHED_NONE) != freebit)
                    FAIL("slice %s/%d/%d: free bit wrong",
                         s->node_names.names[n], g, k);
                if (h == SCHED_NONE)
                    continue;
                held++;
                fenced++;
                if (s->jobs[h].state == SJOB_FREE ||
                    s->jobs[h].state == SCHED_JOB_PENDING)
                    FAIL("slice %s/%d/%d held by a job that does not run",
                         s->node_names.names[n], g, k);
                if ((gp->flags & SGPU_UNFENCED) &&
                    s->jobs[h].project != gp->fence_project)
                    FAIL("unfenced GPU %s/%d serves two projects",
                         s->node_names.names[n], g);
            }
            if (fenced != gp->fence_count)
                FAIL("GPU %s/%d: %u slices held, counted %u",
                     s->node_names.names[n], g, fenced, gp->fence_count);
            if (!(gp->flags & (SGPU_SLICED | SGPU_UNSCHED))) {
                whole |= UINT64_C(1) << g;
                if (gp->job == SCHED_NONE)
                    freem |= UINT64_C(1) << g;
            }
        }
        if (held != nd->nheld)
            FAIL("node %s: %u held, counted %u", s->node_names.names[n], held,
                 nd->nheld);
        if (whole != nd->whole || freem != nd->free)
            FAIL("node %s: free mask stale", s->node_names.names[n]);
    }
    rc = 0;
out:
    return rc;
}

static int check_index(const struct sched *s, struct sh_error *err)
{
    int rc = -1;
    int64_t free_whole = 0, free_slices = 0;
    uint32_t *cnt = calloc((size_t)(SCHED_KMAX + 1) *
                               (s->model_names.n ? s->model_names.n : 1),
                           sizeof(*cnt));
    int64_t *pfree =
        calloc(s->profile_names.n ? s->profile_names.n : 1, sizeof(*pfree));
    if (!cnt || !pfree)
        FAIL("out of memory");
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        const struct snode *nd = &s->nodes[n];
        bool up = nd->present && nd->state == SCHED_NODE_UP;
        if (up != nd->indexed)
            FAIL("node %s: indexed %d but up %d", s->node_names.names[n],
                 nd->indexed, up);
        for (int i = 0; i < nd->nmodels && nd->indexed; i++) {
            uint16_t m = nd->models[i].model;
            uint32_t k =
                (uint32_t)sched_popcount64(nd->free & nd->models[i].mask);
            const uint64_t *r = s->models[m].by_free;
            for (uint32_t x = 1; x <= SCHED_KMAX; x++) {
                if (bits_test(r + (size_t)x * s->nwords, n) != (x == k))
                    FAIL("node %s: index row %u wrong for %s",
                         s->node_names.names[n], x, s->model_names.names[m]);
            }
            if (k > 0)
                cnt[(size_t)m * (SCHED_KMAX + 1) + k]++;
            free_whole += k;
        }
        for (int i = 0; i < nd->npf && nd->indexed; i++) {
            uint16_t p = nd->pf[i].profile;
            uint32_t f = 0;
            for (int g = 0; g < nd->ngpus; g++) {
                const struct sgpu *gp = &nd->gpus[g];
                if (gp->flags & SGPU_UNSCHED)
                    continue;
                for (int k = 0; k < gp->nslices; k++) {
                    const struct sslice *sl = &gp->slices[k];
                    if (sl->job == SCHED_NONE &&
                        (sl->profile == p ||
                         (p == s->shared_any && sl->kind == GPU_SLICE_SHARED)))
                        f++;
                }
            }
            if (f != nd->pf[i].free)
                FAIL("node %s: %u free %s slices, counted %u",
                     s->node_names.names[n], f, s->profile_names.names[p],
                     nd->pf[i].free);
            if (bits_test(s->profiles[p].nodes, n) != (f > 0))
                FAIL("node %s: slice index wrong", s->node_names.names[n]);
            pfree[p] += f;
            if (p != s->shared_any)
                free_slices += f;
        }
    }
    for (uint32_t m = 0; m < s->model_names.n; m++) {
        for (uint32_t k = 1; k <= SCHED_KMAX; k++) {
            if (cnt[(size_t)m * (SCHED_KMAX + 1) + k] != s->models[m].cnt[k])
                FAIL("model %s: row %u counts %u, index %u",
                     s->model_names.names[m], k,
                     cnt[(size_t)m * (SCHED_KMAX + 1) + k],
                     s->models[m].cnt[k]);
        }
    }
    for (uint32_t p = 0; p < s->profile_names.n; p++) {
        if (pfree[p] != s->profiles[p].free)
            FAIL("profile %s: %lld free, counted %lld",
                 s->profile_names.names[p], (long long)pfree[p],
                 (long long)s->profiles[p].free);
    }
    if (free_whole != s->free_whole || free_slices != s->free_slices)
        FAIL("free totals drifted");
    rc = 0;
out:
    free(cnt);
    free(pfree);
    return rc;
}

/* Which part of a usage record differs, or NULL. */
static const char *usage_diff(const struct susage *a, const struct susage *b)
{
    if (memcmp(a->used, b->used, sizeof(a->used)) ||
        a->used_total != b->used_total)
        return "used";
    if (memcmp(a->claim, b->claim, sizeof(a->claim)) ||
        a->claim_total != b->claim_total)
        return "claimed";
    if (memcmp(a->stopping, b->stopping, sizeof(a->stopping)) ||
        a->stopping_total != b->stopping_total)
        return "stopping";
    return NULL;
}

/* Usage, claims and stopping units recomputed from jobs; limits hold. */
static int check_usage(const struct sched *s, struct sh_error *err)
{
    int rc = -1;
    uint32_t np = s->project_names.n, nt = s->team_names.n;
    uint32_t nu = s->user_names.n;
    struct susage *pu = calloc(np ? np : 1, sizeof(*pu));
    struct susage *tu = calloc(nt ? nt : 1, sizeof(*tu));
    int64_t *uu = calloc(nu ? nu : 1, sizeof(*uu));
    int *ur = calloc(nu ? nu : 1, sizeof(*ur));
    uint32_t *cp = calloc(nu ? nu : 1, sizeof(*cp));
    if (!pu || !tu || !uu || !ur || !cp)
        FAIL("out of memory");
    for (uint32_t ji = 0; ji < s->jobs_cap; ji++) {
        const struct sjob *j = &s->jobs[ji];
        if (j->state == SJOB_FREE)
            continue;
        if (sched_job_cpu(j)) { /* no GPU quota: only the user's count */
            ur[j->user] += j->state != SCHED_JOB_PENDING;
            cp[j->user] += j->state == SCHED_JOB_PENDING;
            continue;
        }
        uint32_t t = s->projects[j->project].team;
        struct susage *x[2] = {&pu[j->project],
                               t != SCHED_NONE ? &tu[t] : NULL};
        for (int i = 0; i < 2; i++) {
            if (!x[i])
                continue;
            if (j->state == SCHED_JOB_PENDING && j->victims > 0) {
                x[i]->claim[j->run_model] += j->units;
                x[i]->claim_total += j->units;
            }
            if (j->state == SCHED_JOB_PENDING)
                continue;
            x[i]->used[j->run_model] += j->units;
            x[i]->used_total += j->units;
            if (j->state == SCHED_JOB_PREEMPTING) {
                x[i]->stopping[j->run_model] += j->units;
                x[i]->stopping_total += j->units;
            }
        }
        if (j->state != SCHED_JOB_PENDING) {
            uu[j->user] += j->units;
            ur[j->user]++;
        }
    }
    for (uint32_t p = 0; p < np; p++) {
        const char *d = usage_diff(&pu[p], &s->projects[p].u);
        if (d)
            FAIL("project %s: %s units drifted", s->project_names.names[p], d);
        if (pu[p].used_total != s->projects[p].running_units)
            FAIL("project %s: running units drifted",
                 s->project_names.names[p]);
        if (!quota_within(&s->projects[p].q, &pu[p]) && !s->projects[p].over_ok)
            FAIL("project %s: above its limit", s->project_names.names[p]);
    }
    for (uint32_t t = 0; t < nt; t++) {
        const char *d = usage_diff(&tu[t], &s->teams[t].u);
        if (d)
            FAIL("team %s: %s units drifted", s->team_names.names[t], d);
        if (!quota_within(&s->teams[t].q, &tu[t]) && !s->teams[t].over_ok)
            FAIL("team %s: above its limit", s->team_names.names[t]);
    }
    for (uint32_t u = 0; u < nu; u++) {
        const struct suser *us = &s->users[u];
        if (uu[u] != us->used_units || ur[u] != us->running ||
            cp[u] != us->cpu_pending)
            FAIL("user %s: usage drifted", s->user_names.names[u]);
        if (!quota_user_within(us) && !us->over_ok)
            FAIL("user %s: above a limit", s->user_names.names[u]);
    }
    rc = 0;
out:
    free(pu);
    free(tu);
    free(uu);
    free(ur);
    free(cp);
    return rc;
}

/* Queues: every pending job once, in (LAS level, submit, id) order. */
static int check_queues(const struct sched *s, struct sh_error *err)
{
    int rc = -1;
    uint32_t seen = 0;
    uint32_t nq = s->cfg.policy == SCHED_POLICY_FIFO
                      ? 1
                      : s->project_names.n * SCHED_NQUEUES;
    for (uint32_t qi = 0; qi < nq; qi++) {
        uint32_t qc = qi % SCHED_NQUEUES;
        const struct squeue *q =
            s->cfg.policy == SCHED_POLICY_FIFO
                ? &s->fifo
                : &s->projects[qi / SCHED_NQUEUES]
                       .queues[qc / SCHED_CLASSES][qc % SCHED_CLASSES];
        uint32_t c = 0, prev = SCHED_NONE;
        for (uint32_t j = q->head; j != SCHED_NONE; j = s->jobs[j].next) {
            const struct sjob *x = &s->jobs[j];
            if (x->state != SCHED_JOB_PENDING || x->prev != prev)
                FAIL("queue link broken at job %llu",
                     (unsigned long long)x->id);
            if (s->cfg.policy != SCHED_POLICY_FIFO &&
                (x->project != qi / SCHED_NQUEUES ||
                 x->prio != qc / SCHED_CLASSES ||
                 sched_job_class(x) != qc % SCHED_CLASSES ||
                 x->lb != sched_job_lb(s, x)))
                FAIL("job %llu in the wrong queue", (unsigned long long)x->id);
            if (prev != SCHED_NONE && !q->unsorted) {
                const struct sjob *y = &s->jobs[prev];
                if (y->las_lvl > x->las_lvl ||
                    (y->las_lvl == x->las_lvl &&
                     (y->submit > x->submit ||
                      (y->submit == x->submit && y->id > x->id))))
                    FAIL("queue out of order at job %llu",
                         (unsigned long long)x->id);
            }
            prev = j;
            c++;
        }
        if (c != q->count || prev != q->tail)
            FAIL("queue count or tail wrong");
        if (s->cfg.policy != SCHED_POLICY_FIFO &&
            ((s->projects[qi / SCHED_NQUEUES].qmask >> qc) & 1) != (c > 0))
            FAIL("queue mask of project %s wrong",
                 s->project_names.names[qi / SCHED_NQUEUES]);
        seen += c;
    }
    if (seen != s->npending)
        FAIL("%u jobs in queues, %u pending", seen, s->npending);
    rc = 0;
out:
    return rc;
}

void sched_each_running_node(const struct sched *s,
                             void (*fn)(const struct sched *s, uint32_t node,
                                        const struct sjob *x, bool cpu,
                                        void *arg),
                             void *arg)
{
    const uint32_t count[2] = {s->nrunning, s->ncpu_running};
    const uint32_t *list[2] = {s->running, s->cpu_running};
    for (int l = 0; l < 2; l++) {
        for (uint32_t i = 0; i < count[l]; i++) {
            const struct sjob *x = &s->jobs[list[l][i]];
            for (int k = 0; k < x->nplace; k++) {
                bool seen = false;
                for (int e = 0; e < k && !seen; e++)
                    seen = x->place[e].node == x->place[k].node;
                if (!seen && x->place[k].node < s->node_names.n)
                    fn(s, x->place[k].node, x, l == 1, arg);
            }
        }
    }
}

/* check_room's sums: CPUs at [node], memory at [nodes + node]. */
static void add_room(const struct sched *s, uint32_t node, const struct sjob *x,
                     bool cpu, void *arg)
{
    uint64_t *sum = arg;
    (void)cpu;
    sum[node] += x->host_cpus;
    sum[s->node_names.n + node] += x->host_mem;
}

/* Host CPUs and memory: each node's counts are the sum of the shares of
 * the jobs running there (each job once per node), and within the node's
 * figures unless a description lowered them under what runs (over_ok). */
static int check_room(const struct sched *s, struct sh_error *err)
{
    uint32_t nn = s->node_names.n;
    int rc = -1;
    uint64_t *sum = calloc((size_t)nn * 2 + 1, sizeof(*sum));
    if (!sum)
        FAIL("out of memory");
    sched_each_running_node(s, add_room, sum);
    for (uint32_t n = 0; n < nn; n++) {
        const struct snode *nd = &s->nodes[n];
        if (sum[n] != nd->cpus_used || sum[nn + n] != nd->mem_used)
            FAIL("node %s: jobs hold %llu CPUs and %llu MiB, kept %u and %u",
                 s->node_names.names[n], (unsigned long long)sum[n],
                 (unsigned long long)sum[nn + n], nd->cpus_used, nd->mem_used);
        if (!node_room_sane(nd))
            FAIL("node %s over-committed: %u/%u CPUs, %u/%u MiB",
                 s->node_names.names[n], nd->cpus_used, nd->cpus, nd->mem_used,
                 nd->mem_mib);
    }
    rc = 0;
out:
    free(sum);
    return rc;
}

int sched_check_invariants(const struct sched *s, struct sh_error *err)
{
    if (check_jobs(s, err) < 0 || cpu_check(s, err) < 0 ||
        check_room(s, err) < 0 || check_gpus(s, err) < 0 ||
        check_index(s, err) < 0 || check_usage(s, err) < 0 ||
        check_queues(s, err) < 0 || node_check_models(s, err) < 0)
        return -1;
    return 0;
}
