/* SPDX-License-Identifier: Apache-2.0 */
/* Holds and dependencies of pending jobs (gate.h). */
#include "shoald/gate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job_array.h"
#include "lib/model/job_deps.h"
#include "lib/util/clock.h"
#include "shoald/jobtab.h"
#include "shoald/policy.h"

/* singleton: an earlier job of the same user and name that has not
 * ended. */
static const struct job *singleton_blocker(const struct jobtab *jobs,
                                           const struct job *job)
{
    for (const struct job *o = jobtab_next(jobs, NULL); o;
         o = jobtab_next(jobs, o)) {
        if (o->id < job->id && !job_state_is_terminal(o->state) &&
            o->spec.name && strcmp(o->spec.name, job->spec.name) == 0 &&
            strcmp(o->spec.user, job->spec.user) == 0)
            return o;
    }
    return NULL;
}

/* What a dependency's status was judged on: the job that decided it
 * (waited for, or ended the wrong way) and, for a whole array, how many
 * tasks it has and how many are still to end. */
struct dep_view {
    bool found;
    uint64_t id;
    enum job_state state;
    int tasks;
    int waiting;
};

/* A dependency's status: on its job, on one task of an array (ID_N), or
 * on every task of the array its id names (Slurm's meaning). An array's
 * tasks have consecutive ids from the array's. */
static enum job_dep_status dep_status(const struct jobtab *jobs,
                                      struct store *store,
                                      const struct job_dep *dep,
                                      struct dep_view *v)
{
    memset(v, 0, sizeof(*v));
    enum job_dep_status acc = JOB_DEP_MET;
    bool decided = false, decided_never = false;
    for (uint64_t id = dep->job; id < dep->job + JOB_ARRAY_TASKS_MAX; id++) {
        bool owned;
        struct sh_error err;
        struct job *t = jobtab_find(jobs, store, id, &owned, &err);
        bool in_array = t && t->array_id == dep->job;
        if (!t || (id > dep->job && !in_array) ||
            (dep->task >= 0 && !in_array)) {
            if (owned)
                job_destroy(t);
            break;
        }
        bool counts = dep->task < 0 || t->array_task == dep->task;
        enum job_dep_status one =
            job_dep_eval(dep->kind, t->state, t->spec.requeue);
        if (counts) {
            acc = job_dep_fold(dep->kind, acc, one, v->tasks == 0);
            v->tasks++;
            v->waiting += one == JOB_DEP_WAIT;
            /* Tell the first task that can never meet it, else the first
             * that waits: an array that can never meet afterok names the
             * task that failed, not one still running before it. */
            bool never =
                one == JOB_DEP_NEVER && dep->kind != JOB_DEP_AFTERNOTOK;
            if ((never && !decided_never) ||
                (!decided && one == JOB_DEP_WAIT)) {
                v->found = true;
                v->id = t->id;
                v->state = t->state;
                decided = true;
                decided_never = never;
            }
            if (!v->found) {
                v->found = true;
                v->id = t->id;
                v->state = t->state;
            }
        }
        bool whole_array = in_array && dep->task < 0;
        if (owned)
            job_destroy(t);
        if (!whole_array && (counts || dep->task < 0))
            break;
    }
    if (v->tasks == 0)
        return JOB_DEP_NEVER; /* gone, or no such task */
    return acc;
}

enum gate_state gate_of(const struct jobtab *jobs, struct store *store,
                        int64_t now_ms, const struct job *job, char *why,
                        size_t size)
{
    if (job->state != JOB_PENDING)
        return GATE_OPEN;
    if (job->held) {
        snprintf(why, size, "held: waits for shoal release %llu",
                 (unsigned long long)job->id);
        return GATE_HELD;
    }
    enum gate_state g = GATE_OPEN;
    for (int i = 0; i < job->spec.ndeps; i++) {
        const struct job_dep *dep = &job->spec.deps[i];
        const char *kind = job_dep_kind_name(dep->kind);
        if (dep->kind == JOB_DEP_SINGLETON) {
            const struct job *o =
                job->spec.name ? singleton_blocker(jobs, job) : NULL;
            if (o && g == GATE_OPEN) {
                snprintf(why, size,
                         "dependency: singleton: waiting for job %llu (%s, "
                         "same name)",
                         (unsigned long long)o->id, job_state_name(o->state));
                g = GATE_WAIT;
            }
            continue;
        }
        struct dep_view v;
        enum job_dep_status st = dep_status(jobs, store, dep, &v);
        char target[48];
        if (dep->task >= 0)
            snprintf(target, sizeof(target), "%llu_%d",
                     (unsigned long long)dep->job, dep->task);
        else
            snprintf(target, sizeof(target), "%llu",
                     (unsigned long long)dep->job);
        if (st == JOB_DEP_NEVER) {
            if (v.found && v.tasks > 1)
                snprintf(why, size,
                         "dependency: job %llu (a task of array %llu) ended "
                         "%s, so %s:%s can never be met",
                         (unsigned long long)v.id, (unsigned long long)dep->job,
                         job_state_name(v.state), kind, target);
            else if (v.found)
                snprintf(why, size,
                         "dependency: job %llu ended %s, so %s:%s can "
                         "never be met",
                         (unsigned long long)v.id, job_state_name(v.state),
                         kind, target);
            else
                snprintf(why, size,
                         "dependency: job %s is gone, so %s:%s can "
                         "never be met",
                         target, kind, target);
            g = GATE_NEVER;
        } else if (st == JOB_DEP_WAIT && g == GATE_OPEN) {
            if (v.tasks > 1)
                snprintf(why, size,
                         "dependency: waiting for array %llu (%d of %d "
                         "tasks to end; task %llu %s)",
                         (unsigned long long)dep->job, v.waiting, v.tasks,
                         (unsigned long long)v.id, job_state_name(v.state));
            else
                snprintf(why, size, "dependency: waiting for job %llu (%s)",
                         (unsigned long long)v.id, job_state_name(v.state));
            g = GATE_WAIT;
        }
        if (g == GATE_NEVER)
            break;
    }
    /* A QOS's GPUs per user: its running jobs in the QOS, and those
     * waiting ahead of it (lower ids, no dependency, not held), leave
     * room for this one, or it waits (Slurm's QOSMaxGRESPerUser). */
    if (g == GATE_OPEN && job->spec.qos && job->spec.qos_max_gpus) {
        int used = 0;
        for (const struct job *o = jobtab_next(jobs, NULL); o;
             o = jobtab_next(jobs, o)) {
            if (o == job || !o->spec.qos ||
                strcmp(o->spec.qos, job->spec.qos) != 0 ||
                strcmp(o->spec.user, job->spec.user) != 0)
                continue;
            if (o->state == JOB_RUNNING ||
                (o->state == JOB_PENDING && o->id < job->id && !o->held &&
                 o->spec.ndeps == 0))
                used += job_spec_total_gpus(&o->spec);
        }
        if (used + job_spec_total_gpus(&job->spec) > job->spec.qos_max_gpus) {
            snprintf(why, size,
                     "qos %s: user %s has %d of its %d GPUs per user in "
                     "use or ahead",
                     job->spec.qos, job->spec.user, used,
                     job->spec.qos_max_gpus);
            g = GATE_WAIT;
        }
    }
    /* --begin: not eligible before its time (the liveness timer wakes
     * the gate: engine.c keeps the earliest begin of the gated jobs). */
    if (g == GATE_OPEN && job->spec.begin_ms > now_ms) {
        char at[32];
        clock_format_iso(job->spec.begin_ms, at, sizeof(at));
        snprintf(why, size, "begin: eligible at %s", at);
        g = GATE_WAIT;
    }
    return g;
}

int gate_check_submit(const struct jobtab *jobs, struct store *store,
                      const struct tenancy *tenancy,
                      const struct api_caller *caller,
                      const struct job_spec *spec, struct sh_error *err)
{
    for (int i = 0; i < spec->ndeps; i++) {
        const struct job_dep *dep = &spec->deps[i];
        if (dep->kind == JOB_DEP_SINGLETON) {
            if (!spec->name)
                return sh_errorf(err, SH_EINVAL,
                                 "dependency: singleton needs a job name "
                                 "(--name): it waits for earlier jobs of "
                                 "the same user and name");
            continue;
        }
        bool owned;
        struct sh_error ferr;
        struct job *t = jobtab_find(jobs, store, dep->job, &owned, &ferr);
        bool visible = t && policy_can_view(tenancy, caller, t);
        bool array = t && t->array_id == dep->job;
        if (owned)
            job_destroy(t);
        if (!visible)
            return sh_errorf(err, SH_EINVAL, "dependency: job %llu not found",
                             (unsigned long long)dep->job);
        if (dep->task >= 0 && !array)
            return sh_errorf(err, SH_EINVAL,
                             "dependency: job %llu is not an array, so it "
                             "has no task %d",
                             (unsigned long long)dep->job, dep->task);
        struct dep_view v;
        if (dep->task >= 0 && (dep_status(jobs, store, dep, &v), !v.tasks))
            return sh_errorf(err, SH_EINVAL,
                             "dependency: array %llu has no task %d",
                             (unsigned long long)dep->job, dep->task);
    }
    return 0;
}
