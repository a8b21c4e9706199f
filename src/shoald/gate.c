/* SPDX-License-Identifier: Apache-2.0 */
/* Holds and dependencies of pending jobs (gate.h). */
#include "shoald/gate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        bool owned;
        struct sh_error err;
        struct job *t = jobtab_find(jobs, store, dep->job, &owned, &err);
        enum job_dep_status st =
            t ? job_dep_eval(dep->kind, t->state, t->spec.requeue)
              : JOB_DEP_NEVER;
        if (st == JOB_DEP_NEVER) {
            if (t)
                snprintf(why, size,
                         "dependency: job %llu ended %s, so %s:%llu can "
                         "never be met",
                         (unsigned long long)dep->job, job_state_name(t->state),
                         kind, (unsigned long long)dep->job);
            else
                snprintf(why, size,
                         "dependency: job %llu is gone, so %s:%llu can "
                         "never be met",
                         (unsigned long long)dep->job, kind,
                         (unsigned long long)dep->job);
            g = GATE_NEVER;
        } else if (st == JOB_DEP_WAIT && g == GATE_OPEN) {
            snprintf(why, size, "dependency: waiting for job %llu (%s)",
                     (unsigned long long)dep->job, job_state_name(t->state));
            g = GATE_WAIT;
        }
        if (owned)
            job_destroy(t);
        if (g == GATE_NEVER)
            break;
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
        if (owned)
            job_destroy(t);
        if (!visible)
            return sh_errorf(err, SH_EINVAL, "dependency: job %llu not found",
                             (unsigned long long)dep->job);
    }
    return 0;
}
