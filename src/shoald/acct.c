/* SPDX-License-Identifier: Apache-2.0 */
/* Accounting, idle GPUs and usage reports (see acct.h). */
#include "shoald/acct.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lib/util/log.h"
#include "lib/util/parse.h"
#include "sched/sched.h"
#include "shoald/jobs.h"
#include "shoald/jobtab.h"
#include "shoald/nodetab.h"
#include "shoald/policy.h"
#include "shoald/tenancy.h"
#include "store/store.h"

static const char *const policy_names[] = {"none", "warn", "cancel", "preempt"};

const char *acct_idle_policy_name(enum acct_idle_policy p)
{
    return (unsigned)p < 4 ? policy_names[p] : "none";
}

int acct_idle_policy_from_name(const char *name, enum acct_idle_policy *out)
{
    for (int i = 0; i < 4; i++) {
        if (name && strcmp(name, policy_names[i]) == 0) {
            *out = (enum acct_idle_policy)i;
            return 0;
        }
    }
    return -1;
}

/* The project's idle policy, else the controller's default. */
static enum acct_idle_policy policy_for(struct shoald *d, const char *project)
{
    enum acct_idle_policy p;
    const char *name =
        d->tenancy ? tenancy_idle_policy(d->tenancy, project) : NULL;
    if (name && acct_idle_policy_from_name(name, &p) == 0)
        return p;
    return d->cfg.idle_policy;
}

/* ---- samples and idle detection ---- */

/* The highest utilization among the job's GPUs on node n; -1 when any is
 * unknown (MIG slices report none) or the job holds no GPU there. */
static int job_max_util(const struct job *job, const struct node *n)
{
    int max = -1;
    for (int a = 0; a < job->nalloc; a++) {
        const struct job_alloc *al = &job->alloc[a];
        if (al->done || strcmp(al->node, n->name) != 0)
            continue;
        for (int g = 0; g < al->ngpus; g++) {
            int slice;
            const struct gpu_info *gi = node_find_gpu(n, al->gpus[g], &slice);
            if (!gi || gi->util_pct < 0)
                return -1;
            if (gi->util_pct > max)
                max = gi->util_pct;
        }
    }
    return max;
}

static bool others_wait(struct shoald *d)
{
    for (struct job *j = jobtab_next(d->jobs, NULL); j;
         j = jobtab_next(d->jobs, j)) {
        if (j->state == JOB_PENDING && job_spec_uses_gpus(&j->spec))
            return true;
    }
    return false;
}

/* An idle job: act on its project's policy. Called when it becomes idle
 * and on every sample after (a preemption waits for others to wait). */
static void apply_policy(struct shoald *d, struct job *job)
{
    char reason[JOB_REASON_MAX], dur[32];
    struct sh_error err;
    enum acct_idle_policy p = policy_for(d, job->spec.project);
    format_duration(d->cfg.idle_after_ms / 1000, dur, sizeof(dur));
    snprintf(reason, sizeof(reason), "idle: its GPUs stayed under %d%% for %s",
             d->cfg.idle_threshold_pct, dur);
    if (!job->idle) {
        if (p == ACCT_IDLE_NONE)
            return;
        job->idle = true;
        sh_log(LOG_NOTICE, "acct", "job=%llu is idle project=%s policy=%s",
               (unsigned long long)job->id, job->spec.project,
               acct_idle_policy_name(p));
        if (p != ACCT_IDLE_CANCEL) {
            job_set_reason(job, reason);
            jobs_persist(d, job, &err);
        }
    }
    if (p == ACCT_IDLE_CANCEL) {
        strncat(reason, " (project policy: cancel)",
                sizeof(reason) - strlen(reason) - 1);
        jobs_transition(d, job, JOB_CANCELLED, reason, &err);
    } else if (p == ACCT_IDLE_PREEMPT && others_wait(d)) {
        strncat(reason, " while others wait (project policy: preempt)",
                sizeof(reason) - strlen(reason) - 1);
        jobs_transition(d, job, JOB_PREEMPTED, reason, &err);
    }
}

void acct_node_samples(struct shoald *d, struct node *n, int64_t now_ms)
{
    struct node_rt *rt = nodetab_rt(d->nodes, n->name);
    int64_t dt = rt->last_sample_ms ? now_ms - rt->last_sample_ms : 0;
    /* A gap longer than a few heartbeats is not evidence of anything. */
    if (dt > 60000)
        dt = 0;
    rt->last_sample_ms = now_ms;
    /* Work on a copy: a policy may end jobs and edit the list. */
    int count = rt->njobs;
    uint64_t ids[256];
    if (count > 256)
        count = 256;
    if (count > 0)
        memcpy(ids, rt->jobs, (size_t)count * sizeof(uint64_t));
    for (int i = 0; i < count; i++) {
        struct job *job = jobtab_get(d->jobs, ids[i]);
        if (!job || job->state != JOB_RUNNING ||
            !job_spec_uses_gpus(&job->spec))
            continue;
        int util = job_max_util(job, n);
        if (util < 0)
            continue;
        job->util_sum += (double)util * (double)dt;
        job->util_ms += dt;
        if (util >= d->cfg.idle_threshold_pct) {
            job->idle_since_ms = 0;
            if (job->idle) {
                struct sh_error err;
                job->idle = false;
                job_set_reason(job, NULL);
                jobs_persist(d, job, &err);
            }
            continue;
        }
        if (!job->idle_since_ms)
            job->idle_since_ms = now_ms;
        else if (now_ms - job->idle_since_ms >= d->cfg.idle_after_ms)
            apply_policy(d, job);
    }
}

void acct_part_usage(struct job *job, uint64_t cpu_ns, uint64_t mem_peak)
{
    job->cpu_ns += cpu_ns;
    if (mem_peak > job->mem_peak)
        job->mem_peak = mem_peak;
}

/* ---- usage reports ---- */

struct usage_row {
    char key[128];
    double gpu_s;      /* GPU-seconds in the window */
    double util_gpu_s; /* GPU-seconds with known utilization */
    double util_sum;   /* utilization % x GPU-seconds */
    double cpu_s;      /* allocated CPU-seconds */
    double mem_gib_s;  /* allocated memory GiB-seconds */
    int64_t jobs;
    double wait_s; /* summed queueing delay of the jobs counted */
    UT_hash_handle hh;
};

struct usage_scan {
    const struct tenancy *tenancy;
    const struct jobtab *jobs;
    const struct api_caller *caller;
    enum acct_usage_by by;
    int64_t from, until, now;
    struct usage_row *rows;
};

static const char *row_key(struct usage_scan *u, const json_t *rec,
                           const json_t *spec)
{
    const char *project = json_string_value(json_object_get(spec, "project"));
    switch (u->by) {
    case ACCT_BY_USER:
        return json_string_value(json_object_get(spec, "user"));
    case ACCT_BY_PROJECT:
        return project;
    case ACCT_BY_TEAM: {
        const struct tenancy_project *p =
            project && u->tenancy ? tenancy_project_get(u->tenancy, project)
                                  : NULL;
        return p ? p->team : "(none)";
    }
    default: {
        const char *m = json_string_value(json_object_get(rec, "gpu_model"));
        return m ? m : "(no GPU)";
    }
    }
}

static int usage_job(const struct store_job_row *row, const json_t *rec,
                     void *arg, struct sh_error *err)
{
    struct usage_scan *u = arg;
    (void)err;
    const json_t *spec = json_object_get(rec, "spec");
    struct job view;
    memset(&view, 0, sizeof(view));
    view.id = row->id;
    view.spec.user = (char *)json_string_value(json_object_get(spec, "user"));
    view.spec.project =
        (char *)json_string_value(json_object_get(spec, "project"));
    if (!view.spec.user || !view.spec.project ||
        !policy_can_view(u->tenancy, u->caller, &view))
        return 0;
    int64_t start = row->start_ms, end = row->end_ms ? row->end_ms : u->now;
    double total_gpu_s = row->gpu_seconds;
    if (!row->end_ms) {
        /* Running: its stored figure is from its start; count until now. */
        const struct job *live = jobtab_get(u->jobs, row->id);
        if (live)
            total_gpu_s = job_gpu_seconds(live, u->now);
    }
    int64_t lo = start > u->from ? start : u->from;
    int64_t hi = u->until && end > u->until ? u->until : end;
    if (hi <= lo)
        return 0;
    double run_s = (double)(end - start) / 1000.0;
    double frac = run_s > 0 ? (double)(hi - lo) / 1000.0 / run_s : 0;
    const char *key = row_key(u, rec, spec);
    struct usage_row *r;
    HASH_FIND_STR(u->rows, key, r);
    if (!r) {
        r = calloc(1, sizeof(*r));
        if (!r)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
        snprintf(r->key, sizeof(r->key), "%s", key);
        HASH_ADD_STR(u->rows, key, r);
    }
    double gpu_s = total_gpu_s * frac;
    double span_s = (double)(hi - lo) / 1000.0;
    r->gpu_s += gpu_s;
    r->cpu_s +=
        (double)json_integer_value(json_object_get(spec, "cpus")) * span_s;
    r->mem_gib_s += (double)json_integer_value(json_object_get(spec, "mem")) /
                    (1024.0 * 1024 * 1024) * span_s;
    double util_ms =
        (double)json_integer_value(json_object_get(rec, "util_ms"));
    if (util_ms > 0) {
        double avg =
            json_number_value(json_object_get(rec, "util_sum")) / util_ms;
        r->util_sum += avg * gpu_s;
        r->util_gpu_s += gpu_s;
    }
    /* A job counts (with its wait) in the window it started in. */
    if (start >= u->from && (!u->until || start < u->until)) {
        r->jobs++;
        r->wait_s += (double)(start - row->submit_ms) / 1000.0;
    }
    return 0;
}

static int by_key(const struct usage_row *a, const struct usage_row *b)
{
    return strcmp(a->key, b->key);
}

json_t *acct_usage(struct store *store, const struct tenancy *tenancy,
                   const struct jobtab *jobs, const struct api_caller *caller,
                   enum acct_usage_by by, int64_t from, int64_t until,
                   int64_t now, struct sh_error *err)
{
    struct usage_scan u = {.tenancy = tenancy, .jobs = jobs, .caller = caller};
    u.now = now;
    u.by = by;
    u.from = from;
    u.until = until;
    int rc = store_scan_jobs(store, u.from, u.until, usage_job, &u, err);
    HASH_SORT(u.rows, by_key);
    json_t *rows = json_array();
    struct usage_row *r, *tmp;
    HASH_ITER (hh, u.rows, r, tmp) {
        json_t *o = json_pack(
            "{s:s, s:f, s:f, s:I, s:f, s:f, s:f}", "key", r->key, "gpu_seconds",
            round(r->gpu_s * 1000) / 1000, "gpu_hours",
            round(r->gpu_s / 3600.0 * 1000) / 1000, "jobs", (json_int_t)r->jobs,
            "wait_avg_s", r->jobs ? round(r->wait_s / (double)r->jobs) : 0.0,
            "cpu_hours", round(r->cpu_s / 3600.0 * 1000) / 1000,
            "mem_gib_hours", round(r->mem_gib_s / 3600.0 * 1000) / 1000);
        json_object_set_new(
            o, "gpu_utilization",
            r->util_gpu_s > 0
                ? json_real(round(r->util_sum / r->util_gpu_s * 10) / 10)
                : json_null());
        json_array_append_new(rows, o);
        HASH_DEL(u.rows, r);
        free(r);
    }
    if (rc < 0) {
        json_decref(rows);
        return NULL;
    }
    return rows;
}
