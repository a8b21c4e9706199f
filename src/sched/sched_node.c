/* SPDX-License-Identifier: Apache-2.0 */
/* Nodes, GPUs and slices in the engine, and the availability indexes kept
 * beside them: per GPU model, one bitset of up nodes per count of free whole
 * GPUs (so best-fit is "the first node in the smallest row >= G"), and per
 * slice profile, the bitset of up nodes with a free slice of it. Holding and
 * releasing GPUs for jobs goes through here so the indexes never drift.
 *
 * A node's derived fields (whole, free, per-profile free counts) are always
 * recomputed from its GPUs by node_derive(); callers take the node out of
 * the indexes, change GPUs, derive, and put it back.
 */
#include "sched/sched_int.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ bitset sizes */

/* A copy of rows (nrows x old_words) widened to words per row. */
static uint64_t *rows_widen(const uint64_t *rows, uint32_t nrows,
                            uint32_t old_words, uint32_t words)
{
    uint64_t *n = calloc((size_t)nrows * words, sizeof(uint64_t));
    if (!n)
        return NULL;
    for (uint32_t r = 0; r < nrows; r++)
        memcpy(n + (size_t)r * words, rows + (size_t)r * old_words,
               old_words * sizeof(uint64_t));
    return n;
}

int sched_ensure_words(struct sched *s, uint32_t nnodes)
{
    uint32_t words = (nnodes + 63) / 64;
    if (words <= s->nwords && s->nwords > 0)
        return 0;
    words = words < 4 ? 4 : words * 2; /* amortise */
    uint32_t old = s->nwords ? s->nwords : 1;
    uint32_t nm = s->model_names.n, np = s->profile_names.n;
    uint32_t ng = s->ngroup_bits, total = nm + np + ng, i = 0;
    /* Widen everything into new arrays; commit only when all worked. */
    uint64_t **fresh = calloc(total ? total : 1, sizeof(*fresh));
    if (!fresh)
        return -1;
    for (; i < total; i++) {
        const uint64_t *src = i < nm        ? s->models[i].by_free
                              : i < nm + np ? s->profiles[i - nm].nodes
                                            : s->group_bits[i - nm - np];
        uint32_t rows = i < nm ? SCHED_KMAX + 1 : 1;
        fresh[i] = rows_widen(
            src, rows, i < nm + np ? old : (s->nwords ? s->nwords : 1), words);
        if (!fresh[i])
            break;
    }
    if (i < total) {
        while (i-- > 0)
            free(fresh[i]);
        free(fresh);
        return -1;
    }
    for (i = 0; i < total; i++) {
        uint64_t **dst = i < nm        ? &s->models[i].by_free
                         : i < nm + np ? &s->profiles[i - nm].nodes
                                       : &s->group_bits[i - nm - np];
        free(*dst);
        *dst = fresh[i];
    }
    free(fresh);
    s->nwords = words;
    return 0;
}

/* Rows of a smaller width than nwords happen only for models/profiles
 * interned before the first node; sched_model_intern sizes them with
 * nwords, so every row has s->nwords words once nwords > 0. */
static uint64_t *model_row(const struct sched *s, uint16_t m, uint32_t k)
{
    return s->models[m].by_free + (size_t)k * s->nwords;
}

/* --------------------------------------------------------- indexes */

static void node_derive(struct sched *s, struct snode *nd)
{
    nd->whole = 0;
    nd->free = 0;
    for (int i = 0; i < nd->npf; i++)
        nd->pf[i].free = 0;
    for (int g = 0; g < nd->ngpus; g++) {
        struct sgpu *gp = &nd->gpus[g];
        uint64_t bit = UINT64_C(1) << g;
        if (gp->flags & SGPU_UNSCHED)
            continue;
        if (!(gp->flags & SGPU_SLICED)) {
            nd->whole |= bit;
            if (gp->job == SCHED_NONE)
                nd->free |= bit;
            continue;
        }
        for (int k = 0; k < gp->nslices; k++) {
            if (gp->slices[k].job != SCHED_NONE)
                continue;
            for (int i = 0; i < nd->npf; i++) {
                if (nd->pf[i].profile == gp->slices[k].profile ||
                    (gp->slices[k].kind == GPU_SLICE_SHARED &&
                     nd->pf[i].profile == s->shared_any))
                    nd->pf[i].free++;
            }
        }
    }
}

void node_index_remove(struct sched *s, uint32_t n)
{
    struct snode *nd = &s->nodes[n];
    if (!nd->indexed)
        return;
    nd->indexed = false;
    for (int i = 0; i < nd->nmodels; i++) {
        struct snode_model *nm = &nd->models[i];
        struct smodel *md = &s->models[nm->model];
        if (nm->k > 0) {
            bits_clear(model_row(s, nm->model, nm->k), n);
            md->cnt[nm->k]--;
            md->free_gpus -= nm->k;
            s->free_whole -= nm->k;
        }
        nm->k = 0;
    }
    for (int i = 0; i < nd->npf; i++) {
        struct sprofile *pr = &s->profiles[nd->pf[i].profile];
        if (nd->pf[i].free > 0)
            bits_clear(pr->nodes, n);
        pr->free -= nd->pf[i].free;
        if (nd->pf[i].profile != s->shared_any)
            s->free_slices -= nd->pf[i].free;
    }
    for (int g = 0; g < nd->ngpus; g++) {
        const struct sgpu *gp = &nd->gpus[g];
        if (!(gp->flags & SGPU_UNSCHED))
            s->total_units -= SCHED_UNITS_PER_GPU;
    }
}

void node_index_add(struct sched *s, uint32_t n)
{
    struct snode *nd = &s->nodes[n];
    if (nd->indexed || !nd->present || nd->state != SCHED_NODE_UP)
        return;
    node_derive(s, nd);
    nd->indexed = true;
    for (int i = 0; i < nd->nmodels; i++) {
        struct snode_model *nm = &nd->models[i];
        struct smodel *md = &s->models[nm->model];
        int k = sched_popcount64(nd->free & nm->mask);
        nm->k = (uint8_t)k;
        if (k > 0) {
            bits_set(model_row(s, nm->model, (uint32_t)k), n);
            md->cnt[k]++;
            md->free_gpus += k;
            s->free_whole += k;
        }
    }
    for (int i = 0; i < nd->npf; i++) {
        struct sprofile *pr = &s->profiles[nd->pf[i].profile];
        if (nd->pf[i].free > 0)
            bits_set(pr->nodes, n);
        pr->free += nd->pf[i].free;
        if (nd->pf[i].profile != s->shared_any)
            s->free_slices += nd->pf[i].free;
    }
    for (int g = 0; g < nd->ngpus; g++) {
        const struct sgpu *gp = &nd->gpus[g];
        if (!(gp->flags & SGPU_UNSCHED))
            s->total_units += SCHED_UNITS_PER_GPU;
    }
}

void node_free_changed(struct sched *s, uint32_t n)
{
    node_index_remove(s, n);
    node_derive(s, &s->nodes[n]);
    node_index_add(s, n);
}

/* ---------------------------------------------------- hold / release */

static int place_check(const struct sched *s, uint32_t j,
                       const struct splace *p)
{
    const struct snode *nd = &s->nodes[p->node];
    if (!nd->present || p->gpu >= nd->ngpus)
        return -1;
    const struct sgpu *gp = &nd->gpus[p->gpu];
    if (p->slice < 0)
        return (gp->flags & SGPU_SLICED) || gp->job != SCHED_NONE ? -1 : 0;
    if (!(gp->flags & SGPU_SLICED) || p->slice >= gp->nslices ||
        gp->slices[p->slice].job != SCHED_NONE)
        return -1;
    if ((gp->flags & SGPU_UNFENCED) && gp->fence_count > 0 &&
        gp->fence_project != s->jobs[j].project)
        return -1;
    return 0;
}

static void place_set(struct sched *s, uint32_t j, const struct splace *p,
                      bool hold)
{
    struct snode *nd = &s->nodes[p->node];
    struct sgpu *gp = &nd->gpus[p->gpu];
    uint32_t who = hold ? j : SCHED_NONE;
    if (p->slice < 0) {
        gp->job = who;
    } else {
        gp->slices[p->slice].job = who;
        uint16_t bit = (uint16_t)(1u << p->slice);
        if (hold) {
            gp->slice_free &= (uint16_t)~bit;
            gp->fence_count++;
            gp->fence_project = s->jobs[j].project;
        } else {
            gp->slice_free |= bit;
            if (--gp->fence_count == 0)
                gp->fence_project = SCHED_NONE;
        }
    }
    if (hold)
        nd->nheld++;
    else
        nd->nheld--;
}

static uint32_t place_units(const struct sched *s, const struct splace *p)
{
    const struct sgpu *gp = &s->nodes[p->node].gpus[p->gpu];
    return p->slice < 0 ? SCHED_UNITS_PER_GPU : gp->slices[p->slice].units;
}

/* Whether place i is the first of its node in p (a job's running-job
 * count on a node, snode.njobs, counts it once). */
static bool first_on_node(const struct splace *p, int i)
{
    if (i > 0 && p[i - 1].node == p[i].node)
        return false;
    for (int k = 0; k < i; k++) {
        if (p[k].node == p[i].node)
            return false;
    }
    return true;
}

void node_room_take(struct snode *nd, const struct sjob *j, int sign)
{
    if (sign > 0) {
        nd->cpus_used += j->host_cpus;
        nd->mem_used += j->host_mem;
        return;
    }
    nd->cpus_used -= j->host_cpus;
    nd->mem_used -= j->host_mem;
    nd->over_ok = false;
    nd->over_ok = !node_room_sane(nd);
}

int node_hold(struct sched *s, uint32_t j, const struct splace *p, int np)
{
    int i;
    for (i = 0; i < np; i++) {
        if (place_check(s, j, &p[i]) < 0)
            break;
        node_index_remove(s, p[i].node);
        place_set(s, j, &p[i], true);
    }
    if (i < np) {
        while (i-- > 0)
            place_set(s, j, &p[i], false);
        for (int k = 0; k < np; k++)
            node_index_add(s, p[k].node);
        return -1;
    }
    struct sjob *job = &s->jobs[j];
    uint32_t units = 0;
    for (i = 0; i < np; i++) {
        units += place_units(s, &p[i]);
        node_derive(s, &s->nodes[p[i].node]);
    }
    for (i = 0; i < np; i++)
        node_index_add(s, p[i].node);
    job->place = (struct splace *)p;
    job->nplace = (uint16_t)np;
    job->units = units;
    job->run_model = s->nodes[p[0].node].gpus[p[0].gpu].model;
    for (i = 0; i < np && job->excl; i++) {
        if (s->nodes[p[i].node].excl == SCHED_NONE)
            s->nodes[p[i].node].excl = j;
    }
    for (i = 0; i < np; i++) {
        if (!first_on_node(p, i))
            continue;
        s->nodes[p[i].node].njobs++;
        node_room_take(&s->nodes[p[i].node], job, +1);
    }
    return 0;
}

void node_release(struct sched *s, uint32_t j)
{
    struct sjob *job = &s->jobs[j];
    for (int i = 0; i < job->nplace; i++) {
        node_index_remove(s, job->place[i].node);
        place_set(s, j, &job->place[i], false);
    }
    for (int i = 0; i < job->nplace; i++)
        node_derive(s, &s->nodes[job->place[i].node]);
    for (int i = 0; i < job->nplace; i++) {
        struct snode *nd = &s->nodes[job->place[i].node];
        node_index_add(s, job->place[i].node);
        node_excl_drop(s, job->place[i].node, j);
        if (first_on_node(job->place, i)) {
            nd->njobs--;
            node_room_take(nd, job, -1);
        }
        nd->shared = nd->shared && nd->njobs > 0;
    }
}

void node_excl_drop(struct sched *s, uint32_t n, uint32_t j)
{
    struct snode *nd = &s->nodes[n];
    if (nd->excl != j)
        return;
    nd->excl = SCHED_NONE;
    if (!nd->shared)
        return;
    const uint32_t count[2] = {s->nrunning, s->ncpu_running};
    const uint32_t *list[2] = {s->running, s->cpu_running};
    for (int l = 0; l < 2; l++) {
        for (uint32_t i = 0; i < count[l]; i++) {
            const struct sjob *x = &s->jobs[list[l][i]];
            if (list[l][i] == j || !x->excl)
                continue;
            for (int k = 0; k < x->nplace; k++) {
                if (x->place[k].node == n) {
                    nd->excl = list[l][i];
                    return;
                }
            }
        }
    }
}

void node_mark_shared(struct sched *s, uint32_t j)
{
    const struct sjob *job = &s->jobs[j];
    for (int i = 0; i < job->nplace; i++) {
        struct snode *nd = &s->nodes[job->place[i].node];
        if ((nd->excl != SCHED_NONE && nd->excl != j) ||
            (job->excl && nd->njobs > 1))
            nd->shared = true;
        if (!node_room_sane(nd))
            nd->over_ok = true; /* recovered beyond its CPUs or memory */
    }
}

/* ------------------------------------------------ model/profile totals */

static void node_totals(struct sched *s, uint32_t n, int sign)
{
    struct snode *nd = &s->nodes[n];
    for (int i = 0; i < nd->nmodels; i++) {
        struct smodel *md = &s->models[nd->models[i].model];
        md->nnodes = (uint32_t)((int64_t)md->nnodes + sign);
    }
    for (int g = 0; g < nd->ngpus; g++) {
        const struct sgpu *gp = &nd->gpus[g];
        for (int k = 0; k < gp->nslices; k++) {
            s->profiles[gp->slices[k].profile].nexist += (uint32_t)sign;
            if (gp->slices[k].kind == GPU_SLICE_SHARED)
                s->profiles[s->shared_any].nexist += (uint32_t)sign;
        }
    }
}

/* Fold one present node into per-model and per-profile figures (largest
 * node, nodes with at least k GPUs, largest memory, smallest slice, largest
 * share), in node order: GPUs, then their slices. */
static void node_fold(const struct sched *s, const struct snode *nd,
                      struct smodel *models, struct sprofile *profiles)
{
    uint64_t can_be_whole = node_can_be_whole(s, nd);
    for (int i = 0; i < nd->nmodels; i++) {
        struct smodel *md = &models[nd->models[i].model];
        int c = sched_popcount64(nd->models[i].mask & can_be_whole);
        if (c > md->maxper)
            md->maxper = c;
        for (int k = 1; k <= c; k++)
            md->atleast[k]++;
    }
    for (int g = 0; g < nd->ngpus; g++) {
        const struct sgpu *gp = &nd->gpus[g];
        struct smodel *md = &models[gp->model];
        if (gp->mem > md->mem)
            md->mem = gp->mem;
        if (((can_be_whole >> g) & 1) && gp->mem > md->fit_mem)
            md->fit_mem = gp->mem;
        for (int k = 0; k < gp->nslices; k++) {
            const struct sslice *sl = &gp->slices[k];
            if (sl->mem > md->fit_mem)
                md->fit_mem = sl->mem;
            uint16_t ids[2] = {sl->profile, s->shared_any};
            int nids = sl->kind == GPU_SLICE_SHARED ? 2 : 1;
            for (int x = 0; x < nids; x++) {
                struct sprofile *pr = &profiles[ids[x]];
                if (pr->mem_min == 0 || sl->mem < pr->mem_min)
                    pr->mem_min = sl->mem;
                if (sl->units > pr->units_max)
                    pr->units_max = sl->units;
            }
        }
    }
}

/* The folded figures of every present node, from zero. */
static void figures_count(const struct sched *s, struct smodel *models,
                          struct sprofile *profiles)
{
    for (uint32_t m = 0; m < s->model_names.n; m++) {
        models[m].maxper = 0;
        models[m].mem = 0;
        models[m].fit_mem = 0;
        memset(models[m].atleast, 0, sizeof(models[m].atleast));
    }
    for (uint32_t p = 0; p < s->profile_names.n; p++) {
        profiles[p].mem_min = 0;
        profiles[p].units_max = 0;
    }
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        if (s->nodes[n].present)
            node_fold(s, &s->nodes[n], models, profiles);
    }
}

/* Recompute the per-model and per-profile figures that cannot be kept
 * incrementally (largest node, smallest slice): O(nodes). Only for a node
 * that changed its layout or went away (node_models_update). */
void node_recount_models(struct sched *s)
{
    figures_count(s, s->models, s->profiles);
    s->memopts_dirty = true;
}

int node_check_models(const struct sched *s, struct sh_error *err)
{
    uint32_t nm = s->model_names.n, np = s->profile_names.n;
    struct smodel *models = malloc(sizeof(*models) * (nm ? nm : 1));
    struct sprofile *profiles = malloc(sizeof(*profiles) * (np ? np : 1));
    int rc = -1;
    if (!models || !profiles) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        goto out;
    }
    memcpy(models, s->models, sizeof(*models) * nm);
    memcpy(profiles, s->profiles, sizeof(*profiles) * np);
    figures_count(s, models, profiles);
    for (uint32_t m = 0; m < nm; m++) {
        const struct smodel *a = &models[m], *b = &s->models[m];
        if (a->maxper != b->maxper || a->mem != b->mem ||
            a->fit_mem != b->fit_mem ||
            memcmp(a->atleast, b->atleast, sizeof(a->atleast)) != 0) {
            sh_errorf(err, SH_EINTERNAL,
                      "model %s: largest node %d, memory %llu or node "
                      "counts stale (recount: %d, %llu)",
                      s->model_names.names[m], b->maxper,
                      (unsigned long long)b->mem, a->maxper,
                      (unsigned long long)a->mem);
            goto out;
        }
    }
    for (uint32_t p = 0; p < np; p++) {
        const struct sprofile *a = &profiles[p], *b = &s->profiles[p];
        if (a->mem_min != b->mem_min || a->units_max != b->units_max) {
            sh_errorf(err, SH_EINTERNAL,
                      "profile %s: smallest memory %llu or largest share "
                      "%lld stale (recount: %llu, %lld)",
                      s->profile_names.names[p], (unsigned long long)b->mem_min,
                      (long long)b->units_max, (unsigned long long)a->mem_min,
                      (long long)a->units_max);
            goto out;
        }
    }
    rc = 0;
out:
    free(models);
    free(profiles);
    return rc;
}

/* Whether two layouts of a node give the recount the same figures: the
 * same models with the same GPU counts, the same GPU memory and the same
 * slices, in the same order. */
static bool node_layout_same(const struct snode *a, const struct snode *b)
{
    if (a->nmodels != b->nmodels || a->ngpus != b->ngpus)
        return false;
    for (int i = 0; i < a->nmodels; i++) {
        if (a->models[i].model != b->models[i].model ||
            sched_popcount64(a->models[i].mask) !=
                sched_popcount64(b->models[i].mask))
            return false;
    }
    for (int g = 0; g < a->ngpus; g++) {
        const struct sgpu *x = &a->gpus[g], *y = &b->gpus[g];
        if (x->model != y->model || x->mem != y->mem ||
            x->nslices != y->nslices)
            return false;
        for (int k = 0; k < x->nslices; k++) {
            const struct sslice *p = &x->slices[k], *q = &y->slices[k];
            if (p->profile != q->profile || p->kind != q->kind ||
                p->mem != q->mem || p->units != q->units)
                return false;
        }
    }
    return true;
}

/* After node n was set: bring the per-model and per-profile figures up to
 * date. A new node that comes last is folded in and a node that kept its
 * layout changes nothing (the controller re-sets nodes on every state
 * change); anything else recounts. */
static void node_models_update(struct sched *s, uint32_t n, bool was_present,
                               bool same_layout)
{
    if (!was_present && n + 1 == s->node_names.n)
        node_fold(s, &s->nodes[n], s->models, s->profiles);
    else if (!was_present || !same_layout)
        node_recount_models(s);
    s->memopts_dirty = true;
}

/* ----------------------------------------------------------- node set */

static int desc_validate(const struct sched *s, const struct sched_node_desc *d,
                         struct sh_error *err)
{
    if (!d->name || !*d->name ||
        strnlen(d->name, SCHED_NAME_MAX + 1) > SCHED_NAME_MAX)
        return sh_errorf(err, SH_EINVAL, "node name must be 1..%d bytes",
                         SCHED_NAME_MAX);
    if (d->group &&
        (!*d->group || strnlen(d->group, SCHED_NAME_MAX + 1) > SCHED_NAME_MAX))
        return sh_errorf(err, SH_EINVAL,
                         "node %s: group must be 1..%d "
                         "bytes",
                         d->name, SCHED_NAME_MAX);
    if (d->cpus < 0 || d->mem / (1024 * 1024) >= UINT32_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "node %s: cpus must be >= 0 and memory under 4 PiB",
                         d->name);
    if ((unsigned)d->state > SCHED_NODE_DRAINED)
        return sh_errorf(err, SH_EINVAL, "node %s: bad state", d->name);
    if (d->nlabels < 0 || d->nlabels > NODE_LABELS_MAX ||
        (d->nlabels > 0 && !d->labels))
        return sh_errorf(err, SH_EINVAL, "node %s: labels must be 0..%d",
                         d->name, NODE_LABELS_MAX);
    if (d->ngpus < 0 || d->ngpus > GPU_PER_NODE_MAX ||
        (d->ngpus > 0 && !d->gpus))
        return sh_errorf(err, SH_EINVAL, "node %s: gpus must be 0..%d", d->name,
                         GPU_PER_NODE_MAX);
    int new_models = 0, new_profiles = 0;
    for (int g = 0; g < d->ngpus; g++) {
        const struct sched_gpu_desc *gd = &d->gpus[g];
        if (!gd->model || !*gd->model ||
            strnlen(gd->model, SCHED_NAME_MAX + 1) > SCHED_NAME_MAX)
            return sh_errorf(err, SH_EINVAL,
                             "node %s gpu %d: model must "
                             "be 1..%d bytes",
                             d->name, g, SCHED_NAME_MAX);
        if (strtab_find(&s->model_names, gd->model) == SCHED_NONE)
            new_models++;
        if (gd->nslices < 0 || gd->nslices > GPU_SLICES_MAX ||
            (gd->nslices > 0 && !gd->slices))
            return sh_errorf(err, SH_EINVAL,
                             "node %s gpu %d: slices must "
                             "be 0..%d",
                             d->name, g, GPU_SLICES_MAX);
        for (int k = 0; k < gd->nslices; k++) {
            const struct gpu_slice *sl = &gd->slices[k];
            if (!sl->profile[0] ||
                strnlen(sl->profile, GPU_PROFILE_MAX) >= GPU_PROFILE_MAX)
                return sh_errorf(err, SH_EINVAL,
                                 "node %s gpu %d slice %d: "
                                 "no profile",
                                 d->name, g, k);
            if (sl->kind != GPU_SLICE_MIG && sl->kind != GPU_SLICE_SHARED)
                return sh_errorf(err, SH_EINVAL,
                                 "node %s gpu %d slice %d: "
                                 "bad kind",
                                 d->name, g, k);
            if (sl->share_num < 1 || sl->share_den < 1 ||
                sl->share_num > sl->share_den ||
                (SCHED_UNITS_PER_GPU * sl->share_num) % sl->share_den)
                return sh_errorf(err, SH_EINVAL,
                                 "node %s gpu %d slice %d: "
                                 "share %d/%d must be a whole number of "
                                 "1/%d GPU",
                                 d->name, g, k, sl->share_num, sl->share_den,
                                 SCHED_UNITS_PER_GPU);
            if (strtab_find(&s->profile_names, sl->profile) == SCHED_NONE)
                new_profiles++;
        }
    }
    if (s->model_names.n + (uint32_t)new_models > SCHED_MODELS_MAX)
        return sh_errorf(err, SH_ETOOLARGE, "at most %d GPU models",
                         SCHED_MODELS_MAX);
    if (s->profile_names.n + (uint32_t)new_profiles > SCHED_PROFILES_MAX)
        return sh_errorf(err, SH_ETOOLARGE, "at most %d slice profiles",
                         SCHED_PROFILES_MAX);
    return 0;
}

/* A running job's GPU or slice must survive the new description. */
static int held_check(const struct sched *s, uint32_t n,
                      const struct sched_node_desc *d, struct sh_error *err)
{
    const struct snode *nd = &s->nodes[n];
    for (int g = 0; g < nd->ngpus; g++) {
        const struct sgpu *gp = &nd->gpus[g];
        bool held = gp->job != SCHED_NONE || gp->fence_count > 0;
        if (!held)
            continue;
        if (g >= d->ngpus)
            return sh_errorf(err, SH_ECONFLICT,
                             "node %s: GPU %d is in use "
                             "and cannot go away",
                             d->name, g);
        const struct sched_gpu_desc *gd = &d->gpus[g];
        if (strcmp(s->model_names.names[gp->model], gd->model) != 0 ||
            (gp->job != SCHED_NONE && gd->nslices > 0) ||
            (gp->fence_count > 0 && gd->nslices == 0))
            return sh_errorf(err, SH_ECONFLICT,
                             "node %s: GPU %d is in use "
                             "and cannot change model or slicing",
                             d->name, g);
        for (int k = 0; k < gp->nslices; k++) {
            const struct sslice *sl = &gp->slices[k];
            if (sl->job == SCHED_NONE)
                continue;
            if (k >= gd->nslices ||
                strcmp(s->profile_names.names[sl->profile],
                       gd->slices[k].profile) != 0 ||
                (SCHED_UNITS_PER_GPU * gd->slices[k].share_num /
                 gd->slices[k].share_den) != (int)sl->units)
                return sh_errorf(err, SH_ECONFLICT,
                                 "node %s: GPU %d slice "
                                 "%d is in use and cannot change",
                                 d->name, g, k);
        }
    }
    return 0;
}

static void gpus_free(struct sgpu *gpus, int n)
{
    for (int g = 0; g < n; g++)
        free(gpus[g].slices);
    free(gpus);
}

/* Build the engine's GPU array for d, keeping holders from old. */
static int gpus_build(struct sched *s, const struct sched_node_desc *d,
                      const struct snode *old, struct sgpu **out)
{
    struct sgpu *gpus =
        calloc(d->ngpus > 0 ? (size_t)d->ngpus : 1, sizeof(*gpus));
    if (!gpus)
        return -1;
    for (int g = 0; g < d->ngpus; g++) {
        const struct sched_gpu_desc *gd = &d->gpus[g];
        struct sgpu *gp = &gpus[g];
        const struct sgpu *og = old && g < old->ngpus ? &old->gpus[g] : NULL;
        if (sched_model_intern(s, gd->model, &gp->model) < 0)
            goto fail;
        gp->nvl = (int16_t)(gd->nvlink_group < 0 ? -1 : gd->nvlink_group);
        gp->mem = gd->mem_bytes;
        gp->flags = (uint8_t)((gd->nslices > 0 ? SGPU_SLICED : 0) |
                              (gd->unfenced ? SGPU_UNFENCED : 0) |
                              (gd->unschedulable ? SGPU_UNSCHED : 0));
        gp->job = og ? og->job : SCHED_NONE;
        gp->fence_project = og ? og->fence_project : SCHED_NONE;
        gp->fence_count = og ? og->fence_count : 0;
        gp->resv_job = SCHED_NONE;
        gp->nslices = (uint8_t)gd->nslices;
        if (gd->nslices == 0)
            continue;
        gp->slices = calloc((size_t)gd->nslices, sizeof(*gp->slices));
        if (!gp->slices)
            goto fail;
        for (int k = 0; k < gd->nslices; k++) {
            const struct gpu_slice *sl = &gd->slices[k];
            struct sslice *ss = &gp->slices[k];
            if (sched_profile_intern(s, sl->profile, &ss->profile) < 0)
                goto fail;
            ss->kind = (uint8_t)sl->kind;
            ss->units =
                (uint32_t)(SCHED_UNITS_PER_GPU * sl->share_num / sl->share_den);
            ss->mem = sl->mem_bytes;
            ss->job = og && k < og->nslices ? og->slices[k].job : SCHED_NONE;
            if (ss->job == SCHED_NONE)
                gp->slice_free |= (uint16_t)(1u << k);
        }
    }
    *out = gpus;
    return 0;
fail:
    gpus_free(gpus, d->ngpus);
    return -1;
}

/* Per-model masks, NVLink group masks and the profile list of a node. */
static int node_layout(struct sched *s, struct snode *nd)
{
    struct snode_model models[GPU_PER_NODE_MAX];
    uint64_t nvl[GPU_PER_NODE_MAX];
    int16_t nvl_id[GPU_PER_NODE_MAX];
    struct snode_pf pf[GPU_PER_NODE_MAX * GPU_SLICES_MAX + 1];
    int nm = 0, nn = 0, np = 0;
    for (int g = 0; g < nd->ngpus; g++) {
        const struct sgpu *gp = &nd->gpus[g];
        int i;
        for (i = 0; i < nm && models[i].model != gp->model; i++)
            ;
        if (i == nm) {
            models[nm].model = gp->model;
            models[nm].k = 0;
            models[nm++].mask = 0;
        }
        models[i].mask |= UINT64_C(1) << g;
        for (i = 0; gp->nvl >= 0 && i < nn && nvl_id[i] != gp->nvl; i++)
            ;
        if (gp->nvl < 0 || i == nn) {
            nvl_id[nn] = gp->nvl;
            nvl[nn++] = 0;
            i = nn - 1;
        }
        nvl[i] |= UINT64_C(1) << g;
        for (int k = 0; k < gp->nslices; k++) {
            uint16_t ids[2] = {gp->slices[k].profile, s->shared_any};
            int nids = gp->slices[k].kind == GPU_SLICE_SHARED ? 2 : 1;
            for (int x = 0; x < nids; x++) {
                for (i = 0; i < np && pf[i].profile != ids[x]; i++)
                    ;
                if (i == np) {
                    pf[np].profile = ids[x];
                    pf[np++].free = 0;
                }
            }
        }
    }
    struct snode_model *m2 = malloc(sizeof(*m2) * (size_t)(nm ? nm : 1));
    uint64_t *n2 = malloc(sizeof(*n2) * (size_t)(nn ? nn : 1));
    struct snode_pf *p2 = malloc(sizeof(*p2) * (size_t)(np ? np : 1));
    if (!m2 || !n2 || !p2) {
        free(m2);
        free(n2);
        free(p2);
        return -1;
    }
    memcpy(m2, models, sizeof(*m2) * (size_t)nm);
    memcpy(n2, nvl, sizeof(*n2) * (size_t)nn);
    memcpy(p2, pf, sizeof(*p2) * (size_t)np);
    free(nd->models);
    free(nd->nvl);
    free(nd->pf);
    nd->models = m2;
    nd->nmodels = (uint8_t)nm;
    nd->nvl = n2;
    nd->nnvl = (uint8_t)nn;
    nd->pf = p2;
    nd->npf = (uint8_t)np;
    return 0;
}

static int group_intern(struct sched *s, const char *name, uint32_t *id)
{
    uint32_t found = strtab_find(&s->group_names, name);
    if (found != SCHED_NONE) {
        *id = found;
        return 0;
    }
    uint64_t *bits = calloc(s->nwords, sizeof(uint64_t));
    void *p = s->group_bits;
    uint32_t cap = s->ngroup_bits;
    if (!bits || sched_grow(&p, &cap, s->group_names.n + 1,
                            sizeof(*s->group_bits)) < 0) {
        free(bits);
        return -1;
    }
    s->group_bits = p;
    if (strtab_intern(&s->group_names, name, id) < 0) {
        free(bits);
        return -1;
    }
    s->group_bits[*id] = bits;
    s->ngroup_bits = s->group_names.n;
    return 0;
}

/* Owned copies of a description's labels into *out (NULL for none). */
static int labels_copy(const struct sched_node_desc *d, struct node_label **out)
{
    *out = NULL;
    if (d->nlabels <= 0)
        return 0;
    struct node_label *l = calloc((size_t)d->nlabels, sizeof(*l));
    if (!l)
        return -1;
    for (int i = 0; i < d->nlabels; i++) {
        l[i].key = strdup(d->labels[i].key ? d->labels[i].key : "");
        l[i].value = strdup(d->labels[i].value ? d->labels[i].value : "");
        if (!l[i].key || !l[i].value) {
            node_labels_free(l, d->nlabels);
            return -1;
        }
    }
    *out = l;
    return 0;
}

int sched_node_set(struct sched *s, const struct sched_node_desc *d,
                   struct sh_error *err)
{
    uint32_t n =
        d && d->name ? strtab_find(&s->node_names, d->name) : SCHED_NONE;
    struct sgpu *gpus = NULL;
    struct node_label *labels = NULL;
    uint32_t group = SCHED_NONE;
    if (!d)
        return sh_errorf(err, SH_EINVAL, "no node description");
    if (desc_validate(s, d, err) < 0)
        return -1;
    bool known = n != SCHED_NONE && s->nodes[n].present;
    if (known && held_check(s, n, d, err) < 0)
        return -1;
    uint32_t count = n == SCHED_NONE ? s->node_names.n + 1 : s->node_names.n;
    void *np = s->nodes;
    if (sched_ensure_words(s, count) < 0 ||
        sched_grow(&np, &s->nodes_cap, count, sizeof(*s->nodes)) < 0)
        goto nomem;
    s->nodes = np;
    if (d->group && group_intern(s, d->group, &group) < 0)
        goto nomem;
    if (labels_copy(d, &labels) < 0)
        goto nomem;
    if (gpus_build(s, d, known ? &s->nodes[n] : NULL, &gpus) < 0)
        goto nomem;
    if (n == SCHED_NONE) {
        if (strtab_intern(&s->node_names, d->name, &n) < 0) {
            gpus_free(gpus, d->ngpus);
            goto nomem;
        }
        memset(&s->nodes[n], 0, sizeof(s->nodes[n]));
        s->nodes[n].group = SCHED_NONE;
        s->nodes[n].excl = SCHED_NONE;
    }
    struct snode *nd = &s->nodes[n];
    struct snode saved = *nd;
    node_index_remove(s, n);
    if (nd->present) {
        node_totals(s, n, -1);
        if (nd->group != SCHED_NONE)
            bits_clear(s->group_bits[nd->group], n);
    }
    nd->gpus = gpus;
    nd->ngpus = (uint8_t)d->ngpus;
    nd->models = NULL;
    nd->nvl = NULL;
    nd->pf = NULL;
    if (node_layout(s, nd) < 0) {
        /* Put the old node back exactly as it was. */
        *nd = saved;
        if (nd->present) {
            node_totals(s, n, +1);
            if (nd->group != SCHED_NONE)
                bits_set(s->group_bits[nd->group], n);
        }
        node_index_add(s, n);
        gpus_free(gpus, d->ngpus);
        goto nomem;
    }
    node_labels_free(nd->labels, nd->nlabels);
    nd->labels = labels;
    nd->nlabels = d->nlabels;
    labels = NULL;
    s->nodes_version++;
    bool same_layout = saved.present && node_layout_same(&saved, nd);
    if (saved.gpus)
        gpus_free(saved.gpus, saved.ngpus);
    free(saved.models);
    free(saved.nvl);
    free(saved.pf);
    nd->present = true;
    nd->state = (uint8_t)d->state;
    nd->group = group;
    nd->cpus = (uint32_t)d->cpus;
    nd->mem_mib = (uint32_t)(d->mem / (1024 * 1024));
    nd->over_ok = false;
    nd->over_ok = !node_room_sane(nd); /* lowered under what runs */
    if (group != SCHED_NONE)
        bits_set(s->group_bits[group], n);
    node_totals(s, n, +1);
    node_derive(s, nd);
    node_index_add(s, n);
    node_models_update(s, n, saved.present, same_layout);
    s->dirty = true;
    s->lb_stale = true;
    return 0;
nomem:
    node_labels_free(labels, d->nlabels);
    return sh_errorf(err, SH_EINTERNAL, "out of memory adding node %s",
                     d->name);
}

int sched_node_set_state(struct sched *s, const char *name,
                         enum sched_node_state state, struct sh_error *err)
{
    uint32_t n = name ? strtab_find(&s->node_names, name) : SCHED_NONE;
    if (n == SCHED_NONE || !s->nodes[n].present)
        return sh_errorf(err, SH_ENOTFOUND, "node %s is not known",
                         name ? name : "(null)");
    if ((unsigned)state > SCHED_NODE_DRAINED)
        return sh_errorf(err, SH_EINVAL, "node %s: bad state", name);
    node_index_remove(s, n);
    s->nodes[n].state = (uint8_t)state;
    node_index_add(s, n);
    s->dirty = true;
    s->node_states_version++;
    return 0;
}

int sched_node_remove(struct sched *s, const char *name, struct sh_error *err)
{
    uint32_t n = name ? strtab_find(&s->node_names, name) : SCHED_NONE;
    if (n == SCHED_NONE || !s->nodes[n].present)
        return sh_errorf(err, SH_ENOTFOUND, "node %s is not known",
                         name ? name : "(null)");
    struct snode *nd = &s->nodes[n];
    if (nd->ncpu > 0)
        return sh_errorf(err, SH_ECONFLICT,
                         "node %s: %u jobs without GPUs run on it", name,
                         nd->ncpu);
    if (nd->nheld > 0)
        return sh_errorf(err, SH_ECONFLICT,
                         "node %s: jobs hold %u GPUs or "
                         "slices on it",
                         name, nd->nheld);
    node_index_remove(s, n);
    node_totals(s, n, -1);
    if (nd->group != SCHED_NONE)
        bits_clear(s->group_bits[nd->group], n);
    gpus_free(nd->gpus, nd->ngpus);
    free(nd->models);
    free(nd->nvl);
    free(nd->pf);
    node_labels_free(nd->labels, nd->nlabels);
    memset(nd, 0, sizeof(*nd));
    nd->group = SCHED_NONE;
    nd->excl = SCHED_NONE;
    s->nodes_version++;
    node_recount_models(s);
    s->dirty = true;
    s->lb_stale = true;
    return 0;
}

void sched_gpu_desc_from_info(const struct gpu_info *info,
                              struct sched_gpu_desc *d)
{
    memset(d, 0, sizeof(*d));
    d->model = info->model;
    d->mem_bytes = info->mem_total;
    d->nvlink_group = info->nvlink_group;
    d->nslices = info->nslices;
    d->slices = info->nslices > 0 ? info->slices : NULL;
}
