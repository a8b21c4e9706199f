/* SPDX-License-Identifier: Apache-2.0 */
/* GPU slicing plans (see slices.h). */
#include "shoald/slices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lib/model/preset.h"
#include "lib/util/clock.h"
#include "lib/util/log.h"
#include "lib/util/utf8.h"
#include "shoald/jobtab.h"
#include "shoald/nodetab.h"
#include "store/store.h"

enum plan_state {
    PLAN_WAITING = 0,
    PLAN_APPLYING,
    PLAN_APPLIED,
    PLAN_FAILED,
};

static const char *const state_names[] = {"waiting", "applying", "applied",
                                          "failed"};

struct plan {
    char key[JOB_IDENT_MAX + 16]; /* "<node>/<gpu>" */
    char node[JOB_IDENT_MAX + 1];
    int gpu;
    char preset[PRESET_NAME_MAX];
    enum plan_state state;
    char reason[256];
    int64_t requested_ms;
    int64_t changed_ms;
    UT_hash_handle hh;
};

struct slices {
    struct plan *plans;
    struct slices_hooks hooks; /* the cluster's, slices_attach */
};

void slices_attach(struct slices *s, const struct slices_hooks *hooks)
{
    s->hooks = *hooks;
}

static void node_changed(struct shoald *d, struct node *n, bool touch)
{
    const struct slices_hooks *h = &d->slices->hooks;
    if (h->node_changed)
        h->node_changed(d, n);
    if (touch && h->node_touch)
        h->node_touch(d, n->name);
}

struct slices *slices_create(struct sh_error *err)
{
    struct slices *s = calloc(1, sizeof(*s));
    if (!s)
        sh_errorf(err, SH_EINTERNAL, "out of memory");
    return s;
}

static void clear(struct slices *s)
{
    struct plan *p, *tmp;
    HASH_ITER (hh, s->plans, p, tmp) {
        HASH_DEL(s->plans, p);
        free(p);
    }
}

void slices_destroy(struct slices *s)
{
    if (!s)
        return;
    clear(s);
    free(s);
}

static struct plan *plan_get(const struct slices *s, const char *node, int gpu)
{
    char key[JOB_IDENT_MAX + 16];
    struct plan *p;
    snprintf(key, sizeof(key), "%s/%d", node, gpu);
    HASH_FIND_STR(s->plans, key, p);
    return p;
}

static void plan_save(struct shoald *d, const struct plan *p)
{
    json_t *rec = json_pack("{s:s, s:i, s:s, s:s, s:s, s:I, s:I}", "node",
                            p->node, "gpu", p->gpu, "preset", p->preset,
                            "state", state_names[p->state], "reason", p->reason,
                            "requested_ms", (json_int_t)p->requested_ms,
                            "changed_ms", (json_int_t)p->changed_ms);
    if (!rec || store_batch_put(shoald_batch(d), "slice", p->key, rec) < 0)
        sh_log(LOG_ERR, "slices", "cannot record the plan of %s", p->key);
    json_decref(rec);
}

static void plan_set(struct shoald *d, struct plan *p, enum plan_state st,
                     const char *reason)
{
    p->state = st;
    p->changed_ms = shoald_now_ms(d);
    if (reason)
        snprintf(p->reason, sizeof(p->reason), "%s", reason);
    plan_save(d, p);
}

static int load_plan(const char *key, const json_t *rec, void *arg,
                     struct sh_error *err)
{
    struct slices *s = arg;
    const char *node, *preset, *state, *reason;
    int gpu;
    json_int_t req = 0, chg = 0;
    if (json_unpack((json_t *)rec, "{s:s, s:i, s:s, s:s, s:s, s:I, s:I}",
                    "node", &node, "gpu", &gpu, "preset", &preset, "state",
                    &state, "reason", &reason, "requested_ms", &req,
                    "changed_ms", &chg) < 0)
        return sh_errorf(err, SH_EINTERNAL, "slice plan %.*s: bad record",
                         UTF8_CUT(key, 64));
    struct plan *p = calloc(1, sizeof(*p));
    if (!p)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    snprintf(p->key, sizeof(p->key), "%s", key);
    snprintf(p->node, sizeof(p->node), "%s", node);
    snprintf(p->preset, sizeof(p->preset), "%s", preset);
    snprintf(p->reason, sizeof(p->reason), "%s", reason);
    p->gpu = gpu;
    p->requested_ms = req;
    p->changed_ms = chg;
    for (int i = 0; i < 4; i++) {
        if (strcmp(state, state_names[i]) == 0)
            p->state = (enum plan_state)i;
    }
    HASH_ADD_STR(s->plans, key, p);
    return 0;
}

int slices_load(struct slices *s, struct store *st, struct sh_error *err)
{
    clear(s);
    if (store_load_objects(st, "slice", load_plan, s, err) < 0) {
        clear(s);
        return -1;
    }
    return 0;
}

/* Jobs holding the GPU (whole or any of its slices): each part counts
 * once, at its first GPU entry there. */
struct gpu_jobs_count {
    int gpu, count;
    const struct job *last_job; /* the last part counted */
    int last_part;
};

static void count_gpu_job(const struct job *job, int part, int gpu, int slice,
                          void *arg)
{
    struct gpu_jobs_count *c = arg;
    (void)slice;
    if (gpu != c->gpu || (job == c->last_job && part == c->last_part))
        return;
    c->count++;
    c->last_job = job;
    c->last_part = part;
}

static int gpu_jobs(const struct shoald *d, const struct node *n, int gpu)
{
    struct gpu_jobs_count c = {.gpu = gpu, .last_part = -1};
    nodetab_each_gpu_part(d->nodes, d->jobs, n, count_gpu_job, &c);
    return c.count;
}

static int check_gpu(const struct gpu_info *g, int pos, const char *preset,
                     struct sh_error *err)
{
    struct preset_layout layout;
    struct sh_error e;
    if (preset_expand(g->model, preset, &layout, &e) < 0 ||
        preset_validate(&layout, &e) < 0)
        return sh_errorf(err, e.code == SH_ENOTFOUND ? SH_EINVAL : e.code,
                         "gpu %d (%s): %s", pos, g->model, e.msg);
    if (layout.mig && !g->mig_capable)
        return sh_errorf(err, SH_EINVAL,
                         "gpu %d (%s) is not MIG capable; use a shared-N "
                         "preset",
                         pos, g->model);
    return 0;
}

int slices_request(struct shoald *d, const char *node, const int *gpus,
                   int ngpus, const char *preset, const char *why,
                   struct sh_error *err)
{
    struct node *n = nodetab_get(d->nodes, node);
    if (!n)
        return sh_errorf(err, SH_ENOTFOUND, "node %.*s not found",
                         UTF8_CUT(node, 64));
    int all[GPU_PER_NODE_MAX];
    if (!gpus || ngpus == 0) {
        for (int i = 0; i < n->ngpus; i++)
            all[i] = i;
        gpus = all;
        ngpus = n->ngpus;
    }
    if (ngpus == 0)
        return sh_errorf(err, SH_EINVAL, "node %s has no GPU", node);
    for (int i = 0; i < ngpus; i++) {
        if (gpus[i] < 0 || gpus[i] >= n->ngpus)
            return sh_errorf(err, SH_EINVAL,
                             "node %s has no GPU %d (it has 0..%d)", node,
                             gpus[i], n->ngpus - 1);
        if (check_gpu(&n->gpus[gpus[i]], gpus[i], preset, err) < 0)
            return -1;
    }
    int64_t now = shoald_now_ms(d);
    for (int i = 0; i < ngpus; i++) {
        struct plan *p = plan_get(d->slices, node, gpus[i]);
        if (!p) {
            p = calloc(1, sizeof(*p));
            if (!p)
                return sh_errorf(err, SH_EINTERNAL, "out of memory");
            snprintf(p->key, sizeof(p->key), "%s/%d", node, gpus[i]);
            snprintf(p->node, sizeof(p->node), "%s", node);
            p->gpu = gpus[i];
            HASH_ADD_STR(d->slices->plans, key, p);
        }
        snprintf(p->preset, sizeof(p->preset), "%s", preset);
        p->requested_ms = now;
        const struct gpu_info *g = &n->gpus[gpus[i]];
        if (strcmp(g->preset, preset) == 0)
            plan_set(d, p, PLAN_APPLIED, why);
        else
            plan_set(d, p, PLAN_WAITING, why);
        sh_log(LOG_NOTICE, "slices", "node=%s gpu=%d preset=%s: %s", node,
               gpus[i], preset, why);
    }
    node_changed(d, n, true);
    return 0;
}

bool slices_gpu_blocked(const struct shoald *d, const char *node, int gpu)
{
    const struct plan *p = d->slices ? plan_get(d->slices, node, gpu) : NULL;
    return p && (p->state == PLAN_WAITING || p->state == PLAN_APPLYING);
}

json_t *slices_node_work(struct shoald *d, const struct node *n)
{
    json_t *arr = json_array();
    for (int g = 0; g < n->ngpus; g++) {
        struct plan *p = plan_get(d->slices, n->name, g);
        if (!p || (p->state != PLAN_WAITING && p->state != PLAN_APPLYING))
            continue;
        if (gpu_jobs(d, n, g) > 0)
            continue;
        if (p->state == PLAN_WAITING)
            plan_set(d, p, PLAN_APPLYING, NULL);
        json_array_append_new(arr,
                              json_pack("{s:i, s:s, s:s}", "gpu", g, "uuid",
                                        n->gpus[g].uuid, "preset", p->preset));
    }
    return arr;
}

void slices_node_reported(struct shoald *d, const struct node *n)
{
    for (int g = 0; g < n->ngpus; g++) {
        struct plan *p = plan_get(d->slices, n->name, g);
        if (p && (p->state == PLAN_WAITING || p->state == PLAN_APPLYING) &&
            strcmp(n->gpus[g].preset, p->preset) == 0) {
            plan_set(d, p, PLAN_APPLIED, NULL);
            sh_log(LOG_NOTICE, "slices",
                   "node=%s gpu=%d now has %s with %d "
                   "slice(s)",
                   n->name, g, p->preset, n->gpus[g].nslices);
        }
    }
}

void slices_failed(struct shoald *d, const char *node, int gpu,
                   const char *preset, const char *error)
{
    struct plan *p = plan_get(d->slices, node, gpu);
    if (!p || strcmp(p->preset, preset) != 0 || p->state == PLAN_FAILED)
        return;
    char why[256];
    snprintf(why, sizeof(why), "%s", error);
    plan_set(d, p, PLAN_FAILED, why);
    sh_log(LOG_WARNING, "slices", "node=%s gpu=%d preset=%s failed: %s", node,
           gpu, preset, error);
    struct node *n = nodetab_get(d->nodes, node);
    if (n)
        node_changed(d, n, false);
}

static json_t *plan_view(const struct shoald *d, const struct node *n, int g)
{
    const struct plan *p = plan_get(d->slices, n->name, g);
    if (!p)
        return json_null();
    char req[32];
    clock_format_iso(p->requested_ms, req, sizeof(req));
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:s}", "preset", p->preset, "state",
                  state_names[p->state], "reason", p->reason, "requested", req);
    int jobs = gpu_jobs(d, n, g);
    if (o && p->state == PLAN_WAITING && jobs > 0) {
        char w[96];
        snprintf(w, sizeof(w), "waits for %d running job%s to end", jobs,
                 jobs > 1 ? "s" : "");
        json_object_set_new(o, "waiting", json_string(w));
    }
    return o;
}

json_t *slices_view(struct shoald *d)
{
    json_t *arr = json_array();
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n)) {
        for (int g = 0; g < n->ngpus; g++) {
            const struct gpu_info *gi = &n->gpus[g];
            json_t *sl = json_array();
            for (int s = 0; s < gi->nslices; s++)
                json_array_append_new(
                    sl,
                    json_pack(
                        "{s:s, s:s, s:s, s:I, s:[i, i]}", "kind",
                        gi->slices[s].kind == GPU_SLICE_MIG ? "mig" : "shared",
                        "profile", gi->slices[s].profile, "uuid",
                        gi->slices[s].uuid, "memory",
                        (json_int_t)gi->slices[s].mem_bytes, "share",
                        gi->slices[s].share_num, gi->slices[s].share_den));
            /* "o" steals sl and the plan */
            json_array_append_new(
                arr, json_pack("{s:s, s:i, s:s, s:s, s:b, s:s, s:o, s:i, "
                               "s:o, s:b}",
                               "node", n->name, "gpu", g, "uuid", gi->uuid,
                               "model", gi->model, "mig", gi->mig_enabled,
                               "preset", gi->preset[0] ? gi->preset : "-",
                               "slices", sl, "jobs", gpu_jobs(d, n, g), "plan",
                               plan_view(d, n, g), "unfenced",
                               gi->nslices > 0 &&
                                   gi->slices[0].kind == GPU_SLICE_SHARED &&
                                   !n->mps));
        }
    }
    return arr;
}

/* ---- re-slicing on demand ----
 *
 * A waiting job (a whole-GPU one on any number of nodes, --gpus-total in
 * the shape the engine gives it, or a slice job on one node) gets a GPU re-sliced for it only when nothing serves it now
 * and nothing underway will: for a slice job, no free slice of its profile
 * (any time-slice for "shared") with its memory on a GPU of its model that
 * it may use (not an unfenced GPU another project holds); for a whole-GPU
 * job, no node with enough free whole GPUs. Then an idle GPU that no plan
 * touched for reslice_hold_ms is changed: a whole one sliced (else an idle
 * one of another layout re-sliced), or for a whole-GPU job an idle sliced
 * one made whole, on a node where that makes the job fit. The engine must
 * also say the job waits for resources (not for quota, a limit or a
 * reservation). One change per tick. */

/* What holds one GPU of a node, from the jobs placed there. */
struct gpu_use {
    int jobs;            /* jobs on the GPU or any of its slices */
    uint32_t held;       /* MIG slices held, one bit per slice */
    const char *project; /* the first holder's project */
    bool projects;       /* holders of more than one project */
};

struct node_use_walk {
    struct gpu_use *use;
    const struct job *job; /* the part being walked */
    int part;
    int last; /* its last GPU counted, -1 none */
};

static void use_gpu(const struct job *job, int part, int gpu, int slice,
                    void *arg)
{
    struct node_use_walk *w = arg;
    if (job != w->job || part != w->part) {
        w->job = job;
        w->part = part;
        w->last = -1;
    }
    struct gpu_use *u = &w->use[gpu];
    if (slice >= 0)
        u->held |= 1u << slice;
    if (gpu == w->last)
        return;
    w->last = gpu;
    const char *pr = job->spec.project ? job->spec.project : "";
    if (u->jobs++ == 0)
        u->project = pr;
    else if (strcmp(u->project, pr) != 0)
        u->projects = true;
}

static void node_use(const struct shoald *d, const struct node *n,
                     struct gpu_use *use)
{
    memset(use, 0, sizeof(*use) * (size_t)n->ngpus);
    struct node_use_walk w = {.use = use, .part = -1, .last = -1};
    nodetab_each_gpu_part(d->nodes, d->jobs, n, use_gpu, &w);
}

/* A node that takes new jobs (the engine's view: up, no stray runs). */
static bool node_open(const struct shoald *d, const struct node *n)
{
    struct node_rt *rt = nodetab_rt(d->nodes, n->name);
    return node_state(n) == NODE_UP && !(rt && rt->stale > 0);
}

/* The job's gpu_type allows the GPU's model: no constraint, the model, or
 * a set of models separated by '|' that holds it. */
static bool type_ok(const struct job *job, const struct gpu_info *g)
{
    const char *t = job->spec.gpu_type;
    size_t len = strlen(g->model);
    while (t) {
        const char *bar = strchr(t, '|');
        size_t n = bar ? (size_t)(bar - t) : strlen(t);
        if (n == len && strncmp(t, g->model, len) == 0)
            return true;
        t = bar ? bar + 1 : NULL;
    }
    return !job->spec.gpu_type;
}

/* A slice or layout slice matches the job's slice profile (NULL: any, for
 * a job asking only for memory) with its memory. */
static bool slice_fits(const struct job *job, enum gpu_slice_kind kind,
                       const char *profile, uint64_t mem)
{
    const char *want = job->spec.slice;
    if (mem < job->spec.gpu_mem)
        return false;
    if (!want)
        return true;
    if (strcmp(want, "shared") == 0)
        return kind == GPU_SLICE_SHARED;
    return strcmp(want, profile) == 0;
}

/* A free slice of GPU g that the job may take now. */
static bool slice_free(const struct node *n, int g, const struct gpu_use *u,
                       const struct job *job)
{
    const struct gpu_info *gi = &n->gpus[g];
    if (gi->nslices == 0)
        return false;
    if (gi->slices[0].kind == GPU_SLICE_SHARED) {
        const char *pr = job->spec.project ? job->spec.project : "";
        /* Time-slices without MPS serve one project at a time. */
        if (!n->mps && u->jobs > 0 &&
            (u->projects || strcmp(u->project, pr) != 0))
            return false;
        return u->jobs < gi->nslices &&
               slice_fits(job, GPU_SLICE_SHARED, gi->slices[0].profile,
                          gi->slices[0].mem_bytes);
    }
    for (int k = 0; k < gi->nslices; k++) {
        const struct gpu_slice *sl = &gi->slices[k];
        if (!((u->held >> k) & 1) &&
            slice_fits(job, sl->kind, sl->profile, sl->mem_bytes))
            return true;
    }
    return false;
}

static bool whole_free(const struct gpu_info *gi, const struct gpu_use *u,
                       const struct job *job)
{
    return gi->nslices == 0 && !gi->mig_enabled && u->jobs == 0 &&
           gi->mem_total >= job->spec.gpu_mem;
}

static bool plan_underway(const struct plan *p)
{
    return p && (p->state == PLAN_WAITING || p->state == PLAN_APPLYING);
}

/* A GPU no job holds, on a node that takes jobs, that no plan changes
 * now or changed in the last reslice_hold_ms. */
static bool gpu_free_for_change(const struct shoald *d, const struct node *n,
                                const struct gpu_use *u, int g, int64_t now)
{
    const struct plan *p = plan_get(d->slices, n->name, g);
    if (plan_underway(p) || (p && now - p->changed_ms < d->cfg.reslice_hold_ms))
        return false;
    return node_open(d, n) && u->jobs == 0;
}

/* A plan underway on GPU g gives the job what it asks for: a slice that
 * fits (slice jobs) or a whole GPU (whole-GPU jobs; either for memory
 * jobs). */
static bool plan_serves(const struct plan *p, const struct gpu_info *gi,
                        const struct job *job, bool slices, bool whole)
{
    struct preset_layout layout;
    struct sh_error err;
    if (!plan_underway(p) ||
        preset_expand(gi->model, p->preset, &layout, &err) < 0)
        return false;
    if (layout.nslices == 0)
        return whole && !layout.mig && gi->mem_total >= job->spec.gpu_mem;
    for (int k = 0; slices && k < layout.nslices; k++) {
        const struct preset_slice *sl = &layout.slices[k];
        if (slice_fits(job, sl->kind, sl->profile, sl->mem_bytes))
            return true;
    }
    return false;
}

/* Whether re-slicing serves a waiting job: one asking for whole GPUs
 * (GPUs per node, or --gpus-total), or for a slice on one node. */
static bool reslice_serves(const struct job *job)
{
    if (job->spec.gpus_total > 0)
        return true;
    return job->spec.gpus_per_node > 0 &&
           (!job->spec.slice || job->spec.nodes == 1);
}

/* A job asking for memory only, which the engine places on a slice or a
 * whole GPU (see engine.c). */
static bool memory_job(const struct job *job)
{
    return !job->spec.slice && job->spec.gpu_mem > 0 &&
           job->spec.gpus_per_node == 1 && job->spec.nodes == 1;
}

/* The preset that gives GPU gi a slice for the job; false when none does.
 */
static bool slice_preset(const struct gpu_info *gi, const struct job *job,
                         char *preset, size_t size)
{
    const char *want = job->spec.slice;
    uint64_t mem = job->spec.gpu_mem;
    if (strncmp(want, "shared", 6) == 0) {
        /* "shared": four shares, fewer when the job needs more memory;
         * "shared/N": N shares. */
        int n = 4;
        if (want[6] == '/') {
            if (sscanf(want + 7, "%d", &n) != 1)
                return false;
        } else if (mem > 0 && gi->mem_total / mem < 4) {
            n = (int)(gi->mem_total / mem);
        }
        if (n < 2 || n > PRESET_SHARED_MAX || gi->mem_total / (uint64_t)n < mem)
            return false;
        snprintf(preset, size, "shared-%d", n);
        return true;
    }
    const struct preset_profile *pf =
        gi->mig_capable ? preset_profile_find(gi->model, want) : NULL;
    if (!pf || pf->mem_mib * 1024 * 1024 < mem)
        return false;
    snprintf(preset, size, "all-%s", want);
    return true;
}

/* What re-slicing can do for one kind of request, worked out once a tick. */
struct want {
    char key[JOB_IDENT_MAX * 3 + 64];
    bool done;               /* served, or nothing to change */
    const struct node *node; /* the GPU to change */
    int gpu;
    char preset[PRESET_NAME_MAX];
    UT_hash_handle hh;
};

/* The tick's view of the nodes: what holds each GPU. */
struct view {
    const struct node **nodes;
    struct gpu_use **use;
    int n;
};

static void want_key(const struct job *job, char *key, size_t size)
{
    const char *sl = job->spec.slice;
    /* Only time-slices depend on the project (the unfenced rule). */
    snprintf(key, size, "%s|%s|%llu|%d|%s", sl ? sl : "-",
             job->spec.gpu_type ? job->spec.gpu_type : "-",
             (unsigned long long)job->spec.gpu_mem,
             job->spec.gpus_total
                 ? -job->spec.gpus_total
                 : job->spec.nodes * 1000 + job->spec.gpus_per_node,
             sl && strncmp(sl, "shared", 6) == 0 && job->spec.project
                 ? job->spec.project
                 : "-");
}

/* A slice job: served, or the GPU to slice for it (a whole one first). */
static void want_slice(const struct shoald *d, const struct view *v,
                       const struct job *job, int64_t now, struct want *w)
{
    const struct node *other = NULL;
    int other_gpu = -1;
    char other_preset[PRESET_NAME_MAX] = "";
    for (int i = 0; i < v->n; i++) {
        const struct node *n = v->nodes[i];
        if (!node_open(d, n))
            continue;
        for (int g = 0; g < n->ngpus; g++) {
            const struct gpu_info *gi = &n->gpus[g];
            const struct plan *p = plan_get(d->slices, n->name, g);
            if (!type_ok(job, gi))
                continue;
            if (plan_underway(p)) {
                if (plan_serves(p, gi, job, true, false)) {
                    w->done = true;
                    return;
                }
                continue;
            }
            if (slice_free(n, g, &v->use[i][g], job)) {
                w->done = true;
                return;
            }
            char preset[PRESET_NAME_MAX];
            if (w->node || !gpu_free_for_change(d, n, &v->use[i][g], g, now) ||
                !slice_preset(gi, job, preset, sizeof(preset)))
                continue;
            if (gi->nslices == 0 && !gi->mig_enabled) {
                w->node = n;
                w->gpu = g;
                snprintf(w->preset, sizeof(w->preset), "%s", preset);
            } else if (!other) {
                other = n;
                other_gpu = g;
                snprintf(other_preset, sizeof(other_preset), "%s", preset);
            }
        }
    }
    if (!w->node && other) {
        w->node = other;
        w->gpu = other_gpu;
        snprintf(w->preset, sizeof(w->preset), "%s", other_preset);
    }
    w->done = !w->node;
}

/* The shape a whole-GPU job takes: *nodes nodes of *per GPUs. A
 * --gpus-total job's as the engine picks it (sched_place.c job_shape):
 * the fewest nodes, the same count on each, from the most GPUs of its
 * model a node has (sliced or not: made whole they count). *nodes 0 when
 * no node has one. */
static void whole_shape(const struct shoald *d, const struct view *v,
                        const struct job *job, int *nodes, int *per)
{
    *nodes = job->spec.nodes;
    *per = job->spec.gpus_per_node;
    int total = job->spec.gpus_total;
    if (total <= 0)
        return;
    int most = 0;
    for (int i = 0; i < v->n; i++) {
        const struct node *n = v->nodes[i];
        int here = 0;
        for (int g = 0; g < n->ngpus; g++)
            here += type_ok(job, &n->gpus[g]);
        if (node_open(d, n) && here > most)
            most = here;
    }
    *nodes = *per = 0;
    if (most == 0)
        return;
    int k = (total + most - 1) / most;
    while (total % k)
        k++;
    *nodes = k;
    *per = total / k;
}

/* A whole-GPU job (on its nodes: whole_shape), or a memory job (a free
 * slice with the memory serves it too): served when enough nodes hold
 * it, or an idle sliced GPU on a node where making it whole lets the job
 * fit there, when enough nodes can hold it so. One GPU per tick: a job
 * on several nodes gets them changed in turn (an underway change counts
 * as done). */
static void want_whole(const struct shoald *d, const struct view *v,
                       const struct job *job, int64_t now, struct want *w)
{
    bool mem_job = memory_job(job);
    int nodes, need;
    whole_shape(d, v, job, &nodes, &need);
    int served = 0, reachable = 0;
    w->node = NULL;
    for (int i = 0; i < v->n && nodes > 0; i++) {
        const struct node *n = v->nodes[i];
        int have = 0, change = -1, changeable = 0;
        if (!node_open(d, n))
            continue;
        for (int g = 0; g < n->ngpus; g++) {
            const struct gpu_info *gi = &n->gpus[g];
            const struct gpu_use *u = &v->use[i][g];
            const struct plan *p = plan_get(d->slices, n->name, g);
            if (!type_ok(job, gi))
                continue;
            if (plan_underway(p)) {
                have += plan_serves(p, gi, job, mem_job, true);
                continue;
            }
            if (whole_free(gi, u, job) ||
                (mem_job && slice_free(n, g, u, job))) {
                have++;
                continue;
            }
            if ((gi->nslices > 0 || gi->mig_enabled) &&
                gi->mem_total >= job->spec.gpu_mem &&
                gpu_free_for_change(d, n, u, g, now)) {
                changeable++;
                if (change < 0)
                    change = g;
            }
        }
        if (have >= need) {
            served++;
        } else if (change >= 0 && have + changeable >= need) {
            reachable++;
            if (!w->node) {
                w->node = n;
                w->gpu = change;
                snprintf(w->preset, sizeof(w->preset), "all-disabled");
            }
        }
    }
    if (served >= nodes || served + reachable < nodes)
        w->node = NULL; /* fits now, or a change would not make it fit */
    w->done = !w->node;
}

/* The engine says the job waits for GPUs or slices (or for a profile no
 * GPU has: "can never fit"), not for quota, a limit or a reservation. */
static bool waits_for_resources(struct shoald *d, const struct job *job)
{
    char reason[512] = "";
    int64_t est;
    if (d->slices->hooks.job_reason)
        d->slices->hooks.job_reason(d, job, reason, sizeof(reason), &est);
    return strncmp(reason, "resources:", 10) == 0;
}

static bool view_build(const struct shoald *d, struct view *v)
{
    size_t max = nodetab_count(d->nodes);
    v->n = 0;
    v->nodes = calloc(max ? max : 1, sizeof(*v->nodes));
    v->use = calloc(max ? max : 1, sizeof(*v->use));
    if (!v->nodes || !v->use)
        return false;
    for (const struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n)) {
        if ((size_t)v->n == max)
            break;
        v->use[v->n] =
            calloc(n->ngpus ? (size_t)n->ngpus : 1, sizeof(struct gpu_use));
        if (!v->use[v->n])
            return false;
        node_use(d, n, v->use[v->n]);
        v->nodes[v->n++] = n;
    }
    return true;
}

static void view_free(struct view *v)
{
    for (int i = 0; v->use && i < v->n; i++)
        free(v->use[i]);
    free(v->use);
    free(v->nodes);
}

/* Ask for the change; false when it was refused (logged). */
static bool reslice_for(struct shoald *d, const struct job *job,
                        const struct want *w)
{
    char why[200];
    struct sh_error err;
    if (strcmp(w->preset, "all-disabled") == 0)
        snprintf(why, sizeof(why),
                 "made whole on demand: job %llu waits for whole GPUs",
                 (unsigned long long)job->id);
    else
        snprintf(why, sizeof(why),
                 "re-sliced on demand: job %llu waits for a %s slice",
                 (unsigned long long)job->id, job->spec.slice);
    int one = w->gpu;
    if (slices_request(d, w->node->name, &one, 1, w->preset, why, &err) < 0) {
        sh_log(LOG_WARNING, "slices", "node=%s gpu=%d preset=%s: %s",
               w->node->name, w->gpu, w->preset, err.msg);
        return false;
    }
    return true;
}

void slices_reslice_tick(struct shoald *d)
{
    if (!d->cfg.reslice_on_demand)
        return;
    int64_t now = shoald_now_ms(d);
    struct view v = {0};
    struct want *wants = NULL, *w, *tmp;
    if (!view_build(d, &v))
        goto out;
    for (struct job *j = jobtab_next(d->jobs, NULL); j;
         j = jobtab_next(d->jobs, j)) {
        if (j->state != JOB_PENDING || !reslice_serves(j))
            continue;
        char key[sizeof(w->key)];
        want_key(j, key, sizeof(key));
        HASH_FIND_STR(wants, key, w);
        if (!w) {
            w = calloc(1, sizeof(*w));
            if (!w)
                goto out;
            snprintf(w->key, sizeof(w->key), "%s", key);
            HASH_ADD_STR(wants, key, w);
            if (j->spec.slice)
                want_slice(d, &v, j, now, w);
            else
                want_whole(d, &v, j, now, w);
        }
        if (w->done || !waits_for_resources(d, j))
            continue;
        if (reslice_for(d, j, w))
            break; /* one change per tick */
        w->done = true;
    }
out:
    HASH_ITER (hh, wants, w, tmp) {
        HASH_DEL(wants, w);
        free(w);
    }
    view_free(&v);
}
