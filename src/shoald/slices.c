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
#include "shoald/cluster.h"
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
};

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

/* Jobs holding the GPU (whole or any of its slices). */
static int gpu_jobs(const struct shoald *d, const struct node *n, int gpu)
{
    struct node_rt *rt = nodetab_rt(d->nodes, n->name);
    int count = 0;
    for (int i = 0; rt && i < rt->njobs; i++) {
        const struct job *job = jobtab_get(d->jobs, rt->jobs[i]);
        for (int a = 0; job && a < job->nalloc; a++) {
            const struct job_alloc *al = &job->alloc[a];
            if (al->done || strcmp(al->node, n->name) != 0)
                continue;
            for (int g = 0; g < al->ngpus; g++) {
                int slice;
                const struct gpu_info *gi =
                    node_find_gpu(n, al->gpus[g], &slice);
                if (gi && gi - n->gpus == gpu) {
                    count++;
                    break;
                }
            }
        }
    }
    return count;
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
    cluster_node_changed(d, n);
    cluster_node_touch(d, node);
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
        cluster_node_changed(d, n);
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

/* ---- re-slicing on demand ---- */

static bool gpu_has_profile(const struct gpu_info *g, const char *profile)
{
    for (int s = 0; s < g->nslices; s++) {
        if (strcmp(g->slices[s].profile, profile) == 0 ||
            (strcmp(profile, "shared") == 0 &&
             g->slices[s].kind == GPU_SLICE_SHARED))
            return true;
    }
    return false;
}

/* A GPU no job holds and no plan touched lately. */
static bool gpu_free_for_change(const struct shoald *d, const struct node *n,
                                int g, int64_t now)
{
    const struct plan *p = plan_get(d->slices, n->name, g);
    if (p && (p->state == PLAN_WAITING || p->state == PLAN_APPLYING ||
              now - p->changed_ms < d->cfg.reslice_hold_ms))
        return false;
    return node_state(n) == NODE_UP && gpu_jobs(d, n, g) == 0;
}

/* Find a pending job of the wanted kind whose need nothing serves now. */
static void reslice_for(struct shoald *d, const struct job *job, int64_t now)
{
    char why[200], preset[PRESET_NAME_MAX];
    struct sh_error err;
    const char *want = job->spec.slice;
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n)) {
        for (int g = 0; g < n->ngpus; g++) {
            const struct gpu_info *gi = &n->gpus[g];
            if (!gpu_free_for_change(d, n, g, now) ||
                (job->spec.gpu_type && strcmp(job->spec.gpu_type, gi->model)))
                continue;
            if (want) {
                /* A whole GPU to slice for a slice job. */
                if (gi->nslices > 0)
                    continue;
                if (strcmp(want, "shared") == 0)
                    snprintf(preset, sizeof(preset), "shared-4");
                else if (gi->mig_capable &&
                         preset_profile_find(gi->model, want))
                    snprintf(preset, sizeof(preset), "all-%s", want);
                else
                    continue;
                snprintf(why, sizeof(why),
                         "re-sliced on demand: job %llu waits for a %s slice",
                         (unsigned long long)job->id, want);
            } else {
                /* A sliced GPU made whole for a whole-GPU job. */
                if (gi->nslices == 0)
                    continue;
                snprintf(preset, sizeof(preset), "all-disabled");
                snprintf(why, sizeof(why),
                         "made whole on demand: job %llu waits for whole GPUs",
                         (unsigned long long)job->id);
            }
            int one = g;
            if (slices_request(d, n->name, &one, 1, preset, why, &err) < 0)
                continue;
            return;
        }
    }
}

void slices_reslice_tick(struct shoald *d)
{
    if (!d->cfg.reslice_on_demand)
        return;
    int64_t now = shoald_now_ms(d);
    for (struct job *j = jobtab_next(d->jobs, NULL); j;
         j = jobtab_next(d->jobs, j)) {
        if (j->state != JOB_PENDING || j->spec.gpus_per_node == 0 ||
            j->spec.nodes != 1)
            continue;
        /* Served already by some GPU of the right kind? Then it waits for
         * other reasons (busy slices); re-slicing would not help it. */
        bool served = false;
        for (struct node *n = nodetab_next(d->nodes, NULL); n && !served;
             n = nodetab_next(d->nodes, n)) {
            for (int g = 0; g < n->ngpus && !served; g++) {
                const struct gpu_info *gi = &n->gpus[g];
                served = j->spec.slice ? gpu_has_profile(gi, j->spec.slice)
                                       : gi->nslices == 0;
            }
        }
        if (!served) {
            reslice_for(d, j, now);
            return; /* one change per tick */
        }
    }
}
