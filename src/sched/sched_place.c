/* SPDX-License-Identifier: Apache-2.0 */
/* Placement: where a job would go now, without changing anything.
 *
 *  - One node when the job fits on one: best fit, the node with the fewest
 *    free GPUs that still holds it (rows of the free-count index, smallest
 *    first), so whole nodes stay free for large jobs.
 *  - Gangs of N nodes x G GPUs: all or nothing; within one topology group
 *    when some group has N eligible nodes (the group with the fewest such
 *    nodes, best fit again), else across the fewest groups.
 *  - Within a node: GPUs of one NVLink group when one group can hold them
 *    (the smallest such group), else the fewest groups.
 *  - Reserved GPUs (backfill) are usable only by jobs that end before the
 *    reservation starts.
 *  - Slices: the matching free slice on the most used GPU; never a GPU of
 *    another project when the GPU is unfenced.
 * Whole-GPU jobs only see unsliced GPUs and slice jobs only sliced ones.
 */
#include "sched/sched_int.h"

#include "lib/util/parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t model_mask_for(const struct sched *s, const struct sjob *j)
{
    uint64_t mask = 0;
    uint64_t mem = (uint64_t)j->mem_mib * 1024 * 1024;
    for (uint32_t m = 0; m < s->model_names.n; m++) {
        if (j->models && !((j->models >> m) & 1))
            continue;
        if (s->models[m].nnodes == 0)
            continue;
        if (j->kind == SJOB_WHOLE && mem > 0 && s->models[m].mem < mem)
            continue;
        mask |= UINT64_C(1) << m;
    }
    return mask;
}

bool job_shape(const struct sched *s, const struct sjob *j, uint16_t m,
               uint32_t *nodes, uint32_t *gpn)
{
    if (j->kind != SJOB_WHOLE) {
        *nodes = 1;
        *gpn = 1;
        return true;
    }
    if (j->nodes >= 1) {
        *nodes = j->nodes;
        *gpn = j->gpus;
        return true;
    }
    uint32_t total = j->gpus;
    uint32_t per = (uint32_t)s->models[m].maxper;
    if (per == 0)
        return false;
    uint32_t n = (total + per - 1) / per;
    while (total % n)
        n++;
    if (n > JOB_NODES_MAX)
        return false;
    *nodes = n;
    *gpn = total / n;
    return true;
}

static uint64_t node_model_mask(const struct snode *nd, uint16_t m)
{
    for (int i = 0; i < nd->nmodels; i++) {
        if (nd->models[i].model == m)
            return nd->models[i].mask;
    }
    return 0;
}

uint64_t node_usable(const struct sched *s, const struct snode *nd, uint16_t m,
                     int64_t end, uint32_t self)
{
    if (self != SCHED_NONE &&
        !sched_node_ok(s, &s->jobs[self], (uint32_t)(nd - s->nodes)))
        return 0;
    uint64_t u = nd->free & node_model_mask(nd, m);
    if (nd->resv_epoch != s->epoch || end < 0)
        return u;
    for (uint64_t b = u; b; b &= b - 1) {
        int g = __builtin_ctzll(b);
        const struct sgpu *gp = &nd->gpus[g];
        if (gp->resv_epoch == s->epoch && end > gp->resv_time &&
            resv_live(s, gp, self))
            u &= ~(UINT64_C(1) << g);
    }
    return u;
}

bool node_room(const struct sched *s, const struct snode *nd,
               const struct sjob *j, int64_t end)
{
    if (j->host_cpus == 0 && j->host_mem == 0)
        return true;
    if (!node_room_now(nd, j))
        return false;
    if (end < 0 || nd->resv_epoch != s->epoch)
        return true;
    /* Reservations on the node that start before j would end: their CPUs
     * and memory stay free (each reserving job once). */
    uint32_t self = (uint32_t)(j - s->jobs), seen[SCHED_KMAX];
    int nseen = 0;
    uint64_t cpus = (uint64_t)nd->cpus_used + j->host_cpus;
    uint64_t mem = (uint64_t)nd->mem_used + j->host_mem;
    for (int g = 0; g < nd->ngpus; g++) {
        const struct sgpu *gp = &nd->gpus[g];
        if (gp->resv_epoch != s->epoch || end <= gp->resv_time ||
            !resv_live(s, gp, self))
            continue;
        bool dup = false;
        for (int k = 0; k < nseen && !dup; k++)
            dup = seen[k] == gp->resv_job;
        if (dup)
            continue;
        seen[nseen++] = gp->resv_job;
        cpus += s->jobs[gp->resv_job].host_cpus;
        mem += s->jobs[gp->resv_job].host_mem;
    }
    return (nd->cpus == 0 || cpus <= nd->cpus) &&
           (nd->mem_mib == 0 || mem <= nd->mem_mib);
}

/* Lowest n set bits of x. */
static uint64_t low_bits(uint64_t x, uint32_t n)
{
    uint64_t r = 0;
    while (n-- > 0 && x) {
        uint64_t b = x & -x;
        r |= b;
        x &= x - 1;
    }
    return r;
}

uint64_t nvl_pick(const struct snode *nd, uint64_t usable, uint32_t g)
{
    int best = -1, best_c = 0;
    for (int i = 0; i < nd->nnvl; i++) {
        int c = sched_popcount64(usable & nd->nvl[i]);
        if ((uint32_t)c >= g && (best < 0 || c < best_c)) {
            best = i;
            best_c = c;
        }
    }
    if (best >= 0)
        return low_bits(usable & nd->nvl[best], g);
    /* No group holds them: take the fullest groups first. */
    uint64_t pick = 0, used_groups = 0;
    while ((uint32_t)sched_popcount64(pick) < g) {
        int gi = -1, gc = 0;
        for (int i = 0; i < nd->nnvl; i++) {
            int c = sched_popcount64(usable & nd->nvl[i]);
            if (!((used_groups >> i) & 1) && c > gc) {
                gi = i;
                gc = c;
            }
        }
        if (gi < 0)
            break;
        used_groups |= UINT64_C(1) << gi;
        pick |= low_bits(usable & nd->nvl[gi],
                         g - (uint32_t)sched_popcount64(pick));
    }
    return pick;
}

static const uint64_t *row(const struct sched *s, uint16_t m, uint32_t k)
{
    return s->models[m].by_free + (size_t)k * s->nwords;
}

/* Best-fit single node for g GPUs of model m: the smallest row with a
 * usable node. Returns the node or SCHED_NONE; *kout = its row. */
static uint32_t single_node(struct sched *s, const struct sjob *j, uint16_t m,
                            uint32_t g, uint32_t k, int64_t end, uint32_t self,
                            uint64_t *usable)
{
    if (s->models[m].cnt[k] == 0)
        return SCHED_NONE;
    const uint64_t *r = row(s, m, k);
    for (uint32_t w = 0; w < s->nwords; w++) {
        for (uint64_t b = r[w]; b; b &= b - 1) {
            uint32_t n = w * 64 + (uint32_t)__builtin_ctzll(b);
            uint64_t u = node_usable(s, &s->nodes[n], m, end, self);
            if ((uint32_t)sched_popcount64(u) < g)
                continue;
            if (!node_room(s, &s->nodes[n], j, end)) {
                s->room_short = true;
                continue;
            }
            *usable = u;
            return n;
        }
    }
    return SCHED_NONE;
}

bool gang_choose(struct sched *s, const uint32_t *elig, const uint64_t *usable,
                 uint32_t ne, uint32_t nn, uint32_t g, struct sfound *f)
{
    uint32_t ngroups = s->group_names.n + 1; /* last: no group */
    uint32_t *per_group = calloc(ngroups, sizeof(*per_group));
    uint8_t *taken = calloc(ne ? ne : 1, 1);
    bool ok = false;
    if (!per_group || !taken || ne < nn)
        goto out;
    for (uint32_t i = 0; i < ne; i++) {
        uint32_t gr = s->nodes[elig[i]].group;
        per_group[gr == SCHED_NONE ? ngroups - 1 : gr]++;
    }
    /* The group with the fewest eligible nodes that still holds the job. */
    uint32_t best = SCHED_NONE;
    for (uint32_t gr = 0; gr < ngroups; gr++) {
        if (per_group[gr] >= nn &&
            (best == SCHED_NONE || per_group[gr] < per_group[best]))
            best = gr;
    }
    f->nnodes = 0;
    while ((uint32_t)f->nnodes < nn) {
        uint32_t take = best;
        if (take == SCHED_NONE) {
            /* Spread: the group with the most eligible nodes left. */
            for (uint32_t gr = 0; gr < ngroups; gr++) {
                if (per_group[gr] > 0 &&
                    (take == SCHED_NONE || per_group[gr] > per_group[take]))
                    take = gr;
            }
        }
        for (uint32_t i = 0; i < ne && (uint32_t)f->nnodes < nn; i++) {
            uint32_t n = elig[i];
            uint32_t gr = s->nodes[n].group;
            if (taken[i] || (gr == SCHED_NONE ? ngroups - 1 : gr) != take)
                continue;
            f->nodes[f->nnodes] = n;
            f->masks[f->nnodes++] = nvl_pick(&s->nodes[n], usable[i], g);
            taken[i] = 1;
        }
        per_group[take] = 0;
        best = SCHED_NONE;
    }
    ok = true;
out:
    free(per_group);
    free(taken);
    return ok;
}

/* Gang placement on model m: N nodes with G usable GPUs each, eligible
 * nodes in best-fit order (fewest free first). */
static bool gang_nodes(struct sched *s, uint16_t m, uint32_t nn, uint32_t g,
                       int64_t end, uint32_t self, struct sfound *f)
{
    uint32_t *elig = s->scratch2;
    uint64_t *usable = malloc(sizeof(*usable) * (s->node_names.n + 1));
    uint32_t ne = 0;
    if (!usable)
        return false;
    for (uint32_t k = g; k <= (uint32_t)s->models[m].maxper; k++) {
        if (s->models[m].cnt[k] == 0)
            continue;
        const uint64_t *r = row(s, m, k);
        for (uint32_t w = 0; w < s->nwords; w++) {
            for (uint64_t b = r[w]; b; b &= b - 1) {
                uint32_t n = w * 64 + (uint32_t)__builtin_ctzll(b);
                uint64_t u = node_usable(s, &s->nodes[n], m, end, self);
                if ((uint32_t)sched_popcount64(u) < g)
                    continue;
                if (self != SCHED_NONE &&
                    !node_room(s, &s->nodes[n], &s->jobs[self], end)) {
                    s->room_short = true;
                    continue;
                }
                usable[ne] = u;
                elig[ne++] = n;
            }
        }
    }
    bool ok = ne >= nn && gang_choose(s, elig, usable, ne, nn, g, f);
    free(usable);
    return ok;
}

bool place_whole(struct sched *s, const struct sjob *j, uint64_t mask,
                 int64_t end, bool ignore_resv, struct sfound *f)
{
    uint32_t self = (uint32_t)(j - s->jobs);
    int64_t e = ignore_resv ? -1 : end;
    uint32_t kmax = 0;
    f->slice_gpu = -1;
    f->slice = -1;
    /* One node, across models: smallest row first, then model id. */
    for (uint64_t b = mask; b; b &= b - 1) {
        uint16_t m = (uint16_t)__builtin_ctzll(b);
        if ((uint32_t)s->models[m].maxper > kmax)
            kmax = (uint32_t)s->models[m].maxper;
    }
    uint32_t gmin = j->nodes >= 1 ? j->gpus : j->gpus;
    for (uint32_t k = gmin; k <= kmax && j->nodes <= 1; k++) {
        for (uint64_t b = mask; b; b &= b - 1) {
            uint16_t m = (uint16_t)__builtin_ctzll(b);
            uint32_t nn, g;
            uint64_t u;
            if (!job_shape(s, j, m, &nn, &g) || nn != 1 || k < g ||
                k > (uint32_t)s->models[m].maxper)
                continue;
            uint32_t n = single_node(s, j, m, g, k, e, self, &u);
            if (n == SCHED_NONE)
                continue;
            f->model = m;
            f->nnodes = 1;
            f->nodes[0] = n;
            f->masks[0] = nvl_pick(&s->nodes[n], u, g);
            return true;
        }
    }
    for (uint64_t b = mask; b; b &= b - 1) {
        uint16_t m = (uint16_t)__builtin_ctzll(b);
        uint32_t nn, g;
        if (!job_shape(s, j, m, &nn, &g) || nn < 2)
            continue;
        if ((uint64_t)s->models[m].free_gpus < (uint64_t)nn * g)
            continue;
        if (gang_nodes(s, m, nn, g, e, self, f)) {
            f->model = m;
            return true;
        }
    }
    return false;
}

bool place_slice(struct sched *s, const struct sjob *j, uint16_t profile,
                 uint64_t mask, struct sfound *f)
{
    const struct sprofile *pr = &s->profiles[profile];
    uint64_t mem = (uint64_t)j->mem_mib * 1024 * 1024;
    int best_score = 99;
    if (pr->free == 0)
        return false;
    f->slice_gpu = -1;
    for (uint32_t w = 0; w < s->nwords && best_score > 1; w++) {
        for (uint64_t b = pr->nodes[w]; b && best_score > 1; b &= b - 1) {
            uint32_t n = w * 64 + (uint32_t)__builtin_ctzll(b);
            const struct snode *nd = &s->nodes[n];
            if (!sched_node_ok(s, j, n))
                continue;
            if (!node_room_now(nd, j)) {
                s->room_short = true;
                continue;
            }
            for (int g = 0; g < nd->ngpus && best_score > 1; g++) {
                const struct sgpu *gp = &nd->gpus[g];
                if (!gpu_serves_slices(gp, mask) || gp->slice_free == 0 ||
                    gpu_fenced_off(gp, j->project))
                    continue;
                int score = sched_popcount64(gp->slice_free);
                if (score >= best_score)
                    continue;
                for (int k = 0; k < gp->nslices; k++) {
                    const struct sslice *sl = &gp->slices[k];
                    if (!((gp->slice_free >> k) & 1) || sl->mem < mem)
                        continue;
                    if (!slice_is(s, sl, profile))
                        continue;
                    best_score = score;
                    f->model = gp->model;
                    f->nnodes = 1;
                    f->nodes[0] = n;
                    f->masks[0] = 0;
                    f->slice_gpu = g;
                    f->slice = k;
                    break;
                }
            }
        }
    }
    return f->slice_gpu >= 0;
}

int place_slice_fenced(const struct sched *s, const struct sjob *j,
                       uint16_t profile, uint64_t mask, uint32_t *projects,
                       int max)
{
    const struct sprofile *pr = &s->profiles[profile];
    uint64_t mem = (uint64_t)j->mem_mib * 1024 * 1024;
    int n = 0;
    if (pr->free == 0)
        return 0;
    /* The same GPUs and slices as place_slice(), fence aside. */
    for (uint32_t w = 0; w < s->nwords; w++) {
        for (uint64_t b = pr->nodes[w]; b; b &= b - 1) {
            const struct snode *nd = &s->nodes[w * 64 + __builtin_ctzll(b)];
            for (int g = 0; g < nd->ngpus; g++) {
                const struct sgpu *gp = &nd->gpus[g];
                if (!gpu_serves_slices(gp, mask) || gp->slice_free == 0)
                    continue;
                bool fits = false;
                for (int k = 0; k < gp->nslices && !fits; k++) {
                    const struct sslice *sl = &gp->slices[k];
                    fits = ((gp->slice_free >> k) & 1) && sl->mem >= mem &&
                           slice_is(s, sl, profile);
                }
                if (!fits)
                    continue;
                if (!gpu_fenced_off(gp, j->project))
                    return 0; /* a usable slice: not the fence */
                bool seen = false;
                for (int i = 0; i < n && i < max && !seen; i++)
                    seen = projects[i] == gp->fence_project;
                if (seen)
                    continue;
                if (n < max)
                    projects[n] = gp->fence_project;
                if (n <= max)
                    n++;
            }
        }
    }
    return n;
}

/* ------------------------------------------------------ memory options */

static int memopt_cmp(const void *a, const void *b, void *arg)
{
    const struct sched *s = arg;
    const struct sopt *x = a, *y = b;
    uint64_t mx = x->kind == SJOB_SLICE
                      ? s->profiles[x->profile].mem_min
                      : s->models[__builtin_ctzll(x->mask)].mem;
    uint64_t my = y->kind == SJOB_SLICE
                      ? s->profiles[y->profile].mem_min
                      : s->models[__builtin_ctzll(y->mask)].mem;
    if (mx != my)
        return mx < my ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind == SJOB_SLICE ? -1 : 1;
    if (x->kind == SJOB_SLICE)
        return x->profile < y->profile ? -1 : x->profile > y->profile;
    return x->mask < y->mask ? -1 : x->mask > y->mask;
}

/* All the ways a flexible memory job could be placed, smallest memory
 * first: each slice profile (but the "shared" wildcard), each model. */
int sched_memopts_build(struct sched *s)
{
    if (!s->memopts_dirty)
        return 0;
    size_t max = s->profile_names.n + s->model_names.n;
    struct sopt *o = calloc(max ? max : 1, sizeof(*o));
    uint64_t *mem = calloc(max ? max : 1, sizeof(*mem));
    int n = 0;
    if (!o || !mem) {
        free(o);
        free(mem);
        return -1;
    }
    for (uint32_t p = 0; p < s->profile_names.n; p++) {
        if (p == s->shared_any || s->profiles[p].nexist == 0)
            continue;
        o[n].kind = SJOB_SLICE;
        o[n].profile = (uint16_t)p;
        o[n].mask = ~UINT64_C(0);
        o[n++].units = s->profiles[p].units_max;
    }
    for (uint32_t m = 0; m < s->model_names.n; m++) {
        if (s->models[m].nnodes == 0)
            continue;
        o[n].kind = SJOB_WHOLE;
        o[n].profile = SCHED_NONE16;
        o[n].mask = UINT64_C(1) << m;
        o[n++].units = SCHED_UNITS_PER_GPU;
    }
    qsort_r(o, (size_t)n, sizeof(*o), memopt_cmp, s);
    for (int i = 0; i < n; i++)
        mem[i] = o[i].kind == SJOB_SLICE
                     ? s->profiles[o[i].profile].mem_min
                     : s->models[__builtin_ctzll(o[i].mask)].mem;
    free(s->memopts);
    free(s->memopt_mem);
    s->memopts = o;
    s->memopt_mem = mem;
    s->nmemopts = n;
    s->memopts_dirty = false;
    return 0;
}

/* ------------------------------------------------------- never fits */

static void list_names(const struct sched_strtab *t, const uint64_t *keep,
                       char *buf, size_t size)
{
    size_t off = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < t->n && off + 1 < size; i++) {
        if (keep && !((keep[0] >> i) & 1))
            continue;
        int w = snprintf(buf + off, size - off, "%s%s", off ? ", " : "",
                         t->names[i]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

static uint64_t model_total(const struct sched *s, uint16_t m)
{
    uint64_t total = 0;
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        const struct snode *nd = &s->nodes[n];
        if (!nd->present)
            continue;
        uint64_t can_be_whole = node_can_be_whole(s, nd);
        for (int i = 0; i < nd->nmodels; i++) {
            if (nd->models[i].model == m)
                total += (uint64_t)sched_popcount64(nd->models[i].mask &
                                                    can_be_whole);
        }
    }
    return total;
}

static bool fit_whole(const struct sched *s, const struct sjob *j,
                      struct sh_error *err)
{
    uint64_t present = 0;
    for (uint32_t m = 0; m < s->model_names.n; m++) {
        if (s->models[m].nnodes > 0)
            present |= UINT64_C(1) << m;
    }
    char names[160] = "";
    if (err)
        list_names(&s->model_names, &present, names, sizeof(names));
    if (j->models && !(present & j->models)) {
        char want[SCHED_MODELS_MAX * (SCHED_NAME_MAX + 1)];
        sched_models_str(s, j->models, want, sizeof(want));
        sh_errorf(err, SH_EINVAL,
                  "unknown GPU model '%s' (the cluster has "
                  "%s)",
                  want, present ? names : "no GPUs");
        return false;
    }
    uint64_t mask = model_mask_for(s, j);
    if (!mask) {
        if (present == 0)
            sh_errorf(err, SH_EINVAL, "the cluster has no GPUs");
        else
            sh_errorf(err, SH_EINVAL,
                      "no GPU model has %u MiB of memory "
                      "(the cluster has %s)",
                      j->mem_mib, names);
        return false;
    }
    int best_per = 0;
    uint32_t best_nodes = 0;
    uint16_t per_model = (uint16_t)__builtin_ctzll(mask), nodes_model = 0;
    for (uint64_t b = mask; b; b &= b - 1) {
        uint16_t m = (uint16_t)__builtin_ctzll(b);
        uint32_t nn, g;
        if (s->models[m].maxper > best_per) {
            best_per = s->models[m].maxper;
            per_model = m;
        }
        uint32_t have =
            j->gpus <= SCHED_KMAX ? s->models[m].atleast[j->gpus] : 0;
        if (have > best_nodes || b == mask) {
            best_nodes = have;
            nodes_model = m;
        }
        if (!job_shape(s, j, m, &nn, &g))
            continue;
        if ((int)g <= s->models[m].maxper && nn <= s->models[m].atleast[g])
            return true;
    }
    if (best_per == 0)
        sh_errorf(err, SH_EINVAL,
                  "needs whole GPUs but every %s GPU is sliced (a whole-GPU "
                  "job runs only on a GPU that is not)",
                  s->model_names.names[per_model]);
    else if (j->nodes >= 1 && (int)j->gpus > best_per)
        sh_errorf(err, SH_EINVAL,
                  "needs %u GPUs per node but the largest "
                  "node has %d %s",
                  j->gpus, best_per, s->model_names.names[per_model]);
    else if (j->nodes >= 1)
        sh_errorf(err, SH_EINVAL,
                  "needs %u nodes with %u %s GPUs but the "
                  "cluster has %u such nodes",
                  j->nodes, j->gpus, s->model_names.names[nodes_model],
                  best_nodes);
    else if (err)
        sh_errorf(err, SH_EINVAL,
                  "needs %u GPUs but the cluster has %llu "
                  "%s GPUs",
                  j->gpus, (unsigned long long)model_total(s, per_model),
                  s->model_names.names[per_model]);
    return false;
}

/* Whether some present node has the host CPUs and memory job j asks per
 * node (a node without figures has any amount). */
bool sched_fit_host(const struct sched *s, const struct sjob *j,
                    struct sh_error *err)
{
    uint32_t most_cpus = 0, most_mem = 0;
    bool any = false;
    if (j->host_cpus == 0 && j->host_mem == 0)
        return true;
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        const struct snode *nd = &s->nodes[n];
        if (!nd->present)
            continue;
        any = true;
        if ((nd->cpus == 0 || nd->cpus >= j->host_cpus) &&
            (nd->mem_mib == 0 || nd->mem_mib >= j->host_mem))
            return true;
        if (nd->mem_mib > most_mem)
            most_mem = nd->mem_mib;
        if (nd->cpus > most_cpus)
            most_cpus = nd->cpus;
    }
    if (!any)
        return true; /* no node to judge by: the GPU checks say so */
    char need[32], have[32];
    if (j->host_mem > most_mem) {
        format_size((uint64_t)j->host_mem << 20, need, sizeof(need));
        format_size((uint64_t)most_mem << 20, have, sizeof(have));
        sh_errorf(err, SH_EINVAL,
                  "needs %s memory on a node but the largest node has %s", need,
                  have);
    } else if (j->host_cpus > most_cpus) {
        sh_errorf(err, SH_EINVAL,
                  "needs %u CPUs on a node but the largest node has %u",
                  j->host_cpus, most_cpus);
    } else {
        format_size((uint64_t)j->host_mem << 20, need, sizeof(need));
        sh_errorf(err, SH_EINVAL,
                  "needs %u CPUs and %s memory on one node but no node "
                  "has both",
                  j->host_cpus, need);
    }
    return false;
}

bool static_fit(const struct sched *s, const struct sjob *j,
                struct sh_error *err)
{
    char names[160];
    if (!sched_fit_host(s, j, err))
        return false;
    if (j->kind == SJOB_WHOLE)
        return fit_whole(s, j, err);
    if (j->models && !(model_mask_for(s, j) & j->models)) {
        sched_models_str(s, j->models, names, sizeof(names));
        sh_errorf(err, SH_EINVAL, "unknown GPU model '%s'", names);
        return false;
    }
    if (j->kind == SJOB_SLICE) {
        if (s->profiles[j->profile].nexist > 0)
            return true;
        uint64_t have[4] = {0};
        for (uint32_t p = 0; p < s->profile_names.n && p < 64; p++) {
            if (s->profiles[p].nexist > 0 && p != s->shared_any)
                have[0] |= UINT64_C(1) << p;
        }
        list_names(&s->profile_names, have, names, sizeof(names));
        sh_errorf(err, SH_EINVAL,
                  "unknown slice profile '%s' (the cluster "
                  "has %s)",
                  s->profile_names.names[j->profile],
                  have[0] ? names : "no slices");
        return false;
    }
    uint64_t mem = (uint64_t)j->mem_mib * 1024 * 1024, most = 0;
    for (uint32_t m = 0; m < s->model_names.n; m++) {
        if (s->models[m].nnodes == 0)
            continue;
        if (j->models && !((j->models >> m) & 1))
            continue;
        if (s->models[m].fit_mem >= mem)
            return true;
        if (s->models[m].fit_mem > most)
            most = s->models[m].fit_mem;
    }
    sh_errorf(err, SH_EINVAL,
              "no GPU or slice has %u MiB of memory (the "
              "largest%s has %llu MiB)",
              j->mem_mib, s->cfg.reslice ? "" : " not sliced, or slice,",
              (unsigned long long)(most / (1024 * 1024)));
    return false;
}
