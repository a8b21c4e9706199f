/* SPDX-License-Identifier: Apache-2.0 */
/* Job operations of the controller (see jobs.h). */
#include "shoald/jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job_array.h"
#include "lib/model/job_json.h"
#include "lib/model/node.h"
#include "lib/util/log.h"
#include "lib/util/utf8.h"
#include "shoald/auth.h"
#include "shoald/engine.h"
#include "shoald/gate.h"
#include "shoald/jobtab.h"
#include "shoald/jobwhere.h"
#include "shoald/resources.h"
#include "shoald/logs.h"
#include "shoald/nodetab.h"
#include "shoald/notify.h"
#include "shoald/partitions.h"
#include "shoald/policy.h"
#include "shoald/volumes.h"
#include "store/store.h"

#define DEFAULT_PROJECT "default"

static void job_action(struct shoald *d, struct job *job, enum job_state from);

static int load_job(const struct store_job_row *row, const json_t *rec,
                    void *arg, struct sh_error *err)
{
    struct jobtab *t = arg;
    struct job *job = job_from_record(rec, err);
    if (!job)
        return sh_error_prefix(err, "job %llu: ", (unsigned long long)row->id);
    if (jobtab_add(t, job) < 0) {
        job_destroy(job);
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    return 0;
}

int jobs_load(struct shoald *d, struct sh_error *err)
{
    struct jobtab *t = jobtab_create();
    if (!t)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    int64_t since = shoald_now_ms(d) - d->cfg.keep_finished_ms;
    uint64_t max_id = 0;
    if (store_load_jobs(d->store, since, load_job, t, err) < 0 ||
        store_max_job_id(d->store, &max_id, err) < 0) {
        jobtab_destroy(t);
        return -1;
    }
    jobtab_raise_next_id(t, max_id + 1);
    if (d->jobs)
        jobtab_raise_next_id(t, jobtab_next_id(d->jobs));
    jobtab_destroy(d->jobs);
    d->jobs = t;
    return 0;
}

double jobs_gpu_seconds(const struct shoald *d, const struct job *job,
                        int64_t now_ms)
{
    (void)d;
    return job_gpu_seconds(job, now_ms);
}

int jobs_persist(struct shoald *d, const struct job *job, struct sh_error *err)
{
    struct store_job_row row = {
        .id = job->id,
        .state = job_state_name(job->state),
        .user = job->spec.user,
        .project = job->spec.project,
        .submit_ms = job->submit_ms,
        .start_ms = job->start_ms,
        .end_ms = job->end_ms,
        .gpu_seconds = jobs_gpu_seconds(d, job, shoald_now_ms(d)),
    };
    json_t *rec = job_to_record(job);
    int rc = rec ? store_batch_put_job(shoald_batch(d), &row, rec) : -1;
    json_decref(rec);
    if (rc < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

/* The submission's dependencies name jobs the caller may see (gate.h). */
static int check_deps(struct shoald *d, const struct api_caller *caller,
                      const struct job_spec *spec, struct sh_error *err)
{
    return gate_check_submit(d->jobs, d->store, d->tenancy, caller, spec, err);
}

/* Fill user and project from the caller and the defaults, and check the
 * caller's right to use them. */
static int resolve_owner(struct shoald *d, const struct api_caller *caller,
                         struct job_spec *spec, struct sh_error *err)
{
    if (spec->user && strcmp(spec->user, caller->user) != 0) {
        if (!caller->admin)
            return sh_errorf(err, SH_EFORBIDDEN,
                             "only cluster admins may submit for another user");
        if (!auth_user_get(d->auth, spec->user))
            return sh_errorf(err, SH_ENOTFOUND, "user %s does not exist",
                             spec->user);
    }
    if (!spec->user) {
        spec->user = strdup(caller->user);
        if (!spec->user)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    if (!spec->project) {
        const struct auth_user *u = auth_user_get(d->auth, spec->user);
        const char *p =
            (u && u->default_project) ? u->default_project : DEFAULT_PROJECT;
        spec->project = strdup(p);
        if (!spec->project)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    if (policy_can_submit(d->tenancy, caller, spec->project, err) < 0)
        return -1;
    return policy_can_prioritize(d->tenancy, caller, spec->project,
                                 spec->priority, err);
}

/* The per-user cap on pending jobs: n more for user must fit. */
static int check_pending_cap(struct shoald *d, const char *user, int n,
                             struct sh_error *err)
{
    const struct auth_user *u = auth_user_get(d->auth, user);
    int cap = u && u->limits.max_pending ? u->limits.max_pending
                                         : d->cfg.max_pending_per_user;
    if (cap <= 0)
        return 0;
    int have = jobtab_user_pending(d->jobs, user);
    if ((int64_t)have + n <= cap)
        return 0;
    return sh_errorf(err, SH_ETOOLARGE,
                     "%s has %d pending job(s) and may have at most %d "
                     "(array tasks count one each); this submission adds %d. "
                     "Wait for some to start, or ask an admin to raise "
                     "max_pending (shoal user set-limits --max-pending)",
                     user, have, cap, n);
}

/* An array: one job per task, ids in task order, the first's id the
 * array's. All or nothing: a failure takes back the tasks made so far.
 * Takes spec. */
static int submit_array(struct shoald *d, struct job_spec *spec,
                        const char *idem_key, struct job **out,
                        struct sh_error *err)
{
    struct job_array a;
    int64_t now = shoald_now_ms(d);
    uint64_t first = 0;
    int made = 0;
    if (job_array_parse(spec->array, &a, err) < 0) {
        job_spec_fini(spec);
        return -1;
    }
    if (check_pending_cap(d, spec->user, a.n, err) < 0) {
        job_array_fini(&a);
        job_spec_fini(spec);
        return -1;
    }
    for (; made < a.n; made++) {
        struct job_spec ts;
        if (job_spec_copy(&ts, spec) < 0) {
            sh_errorf(err, SH_EINTERNAL, "out of memory");
            goto undo;
        }
        uint64_t id = jobtab_take_id(d->jobs);
        struct job *job = job_create(id, &ts, now);
        /* The array is found again by its first task. */
        if (job && made == 0 && idem_key &&
            !(job->idem_key = strdup(idem_key))) {
            job_destroy(job);
            job = NULL;
        }
        if (!job || jobtab_add(d->jobs, job) < 0) {
            job_destroy(job);
            job_spec_fini(&ts);
            sh_errorf(err, SH_EINTERNAL, "out of memory");
            goto undo;
        }
        if (!first)
            first = id;
        job->held = job->spec.hold;
        job->array_id = first;
        job->array_task = a.idx[made];
        job->array_max = a.max_running;
        if (jobs_persist(d, job, err) < 0) {
            jobtab_remove(d->jobs, id);
            goto undo;
        }
        cluster_job_added(d, job);
    }
    job_array_fini(&a);
    job_spec_fini(spec);
    *out = jobtab_get(d->jobs, first);
    sh_debug("jobs", "submitted array=%llu tasks=%d", (unsigned long long)first,
             made);
    return 0;
undo:
    /* The batch will not commit (or memory ran out): forget the tasks. */
    for (int i = 0; i < made; i++) {
        struct job *job = jobtab_get(d->jobs, first + (uint64_t)i);
        if (job) {
            job->state = JOB_CANCELLED;
            job_action(d, job, JOB_PENDING);
            jobtab_remove(d->jobs, first + (uint64_t)i);
        }
    }
    job_array_fini(&a);
    job_spec_fini(spec);
    return -1;
}

int jobs_submit(struct shoald *d, const struct api_caller *caller,
                const json_t *body, const char *idem_key, struct job **out,
                struct sh_error *err)
{
    struct job_spec spec;
    job_spec_init(&spec);
    if (idem_key && !job_idem_key_valid(idem_key))
        return sh_errorf(err, SH_EINVAL,
                         "Idempotency-Key must be 1..%d of A-Z a-z 0-9 - _ "
                         ". :",
                         JOB_IDEM_KEY_MAX);
    if (job_spec_from_json(body, &spec, err) < 0)
        return -1;
    if (partitions_apply_qos(d->partitions, &spec, err) < 0 ||
        resolve_owner(d, caller, &spec, err) < 0)
        goto error;
    /* The same submission again (a client that did not hear the answer):
     * the job it made, not a second one. */
    struct job *seen =
        idem_key ? jobtab_find_idem(d->jobs, spec.user, idem_key) : NULL;
    if (seen) {
        job_spec_fini(&spec);
        *out = seen;
        return 1;
    }
    if (job_spec_validate(&spec, err) < 0 ||
        partitions_apply_partition(d->partitions, &spec, err) < 0)
        goto error;
    /* A job that asks no CPUs or memory gets its share (resources.h). */
    resources_defaults(d, &spec);
    if (check_deps(d, caller, &spec, err) < 0 ||
        volumes_check_job(d->volumes, &spec, err) < 0 ||
        resources_check(d, &spec, err) < 0 ||
        jobwhere_check(d->nodes, &spec, err) < 0 ||
        notify_check_submit(d->cfg.mail_program, &spec, err) < 0 ||
        cluster_check_submit(d, &spec, err) < 0)
        goto error;
    if (spec.array)
        return submit_array(d, &spec, idem_key, out, err);
    if (check_pending_cap(d, spec.user, 1, err) < 0)
        goto error;
    uint64_t id = jobtab_take_id(d->jobs);
    struct job *job = job_create(id, &spec, shoald_now_ms(d));
    if (job && idem_key && !(job->idem_key = strdup(idem_key))) {
        job_destroy(job);
        job = NULL;
    }
    if (!job) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        goto error;
    }
    job->held = job->spec.hold;
    if (jobtab_add(d->jobs, job) < 0) {
        job_destroy(job);
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        goto error;
    }
    if (jobs_persist(d, job, err) < 0) {
        jobtab_remove(d->jobs, id);
        return -1;
    }
    cluster_job_added(d, job);
    sh_debug("jobs", "submitted job=%llu user=%s project=%s",
             (unsigned long long)id, job->spec.user, job->spec.project);
    *out = job;
    return 0;
error:
    job_spec_fini(&spec);
    return -1;
}

/* ---- the lifecycle: post the event, update the state, act on it ---- */

/* Every part of an ended job is gone: its GPUs go back to the engine, and
 * the job goes back to pending when a requeue is due (a new attempt),
 * else it settles as it ended. */
static void job_released(struct shoald *d, struct job *job)
{
    cluster_job_free(d, job);
    job->releasing = false;
    if (jobs_requeue_due(job)) {
        struct sh_error err;
        if (jobs_transition(d, job, JOB_PENDING, NULL, &err) < 0)
            sh_log(LOG_ERR, "jobs", "job %llu: requeue: %s",
                   (unsigned long long)job->id, err.msg);
        /* After the requeue: followers go on with the next attempt. */
        logs_job_changed(d->logs, job->id);
        return; /* jobs_transition persisted and re-added it */
    }
    logs_job_changed(d->logs, job->id); /* followers see the end */
    jobs_persist(d, job, NULL);
    shoald_schedule_soon(d);
}

/* The one action of each state, run after every transition (from is the
 * state the job left). Each is idempotent: it makes the cluster's view
 * match the job's state, whatever was done before. */
static void job_action(struct shoald *d, struct job *job, enum job_state from)
{
    if (!d->cluster)
        return; /* loading: the cluster is built from the table later */
    cluster_job_changed(d);
    switch (job->state) {
    case JOB_PENDING:
        /* Requeued (a new attempt): back to the gate and the engine. */
        if (from != JOB_PENDING)
            cluster_job_added(d, job);
        break;
    case JOB_RUNNING:
        /* Placed by the engine's start (engine.c start_job): nothing
         * more to do. */
        break;
    case JOB_COMPLETED:
    case JOB_FAILED:
    case JOB_CANCELLED:
    case JOB_TIMEOUT:
    case JOB_PREEMPTED:
    case JOB_NODE_FAIL:
    case JOB_STATE_COUNT:
        /* Out of the engine; its nodes stop what still runs. Its GPUs
         * stay held until its processes are gone (jobs_part_done). */
        cluster_job_ended(d, job, from);
        if (from == JOB_RUNNING && !job->releasing)
            job_released(d, job);
        break;
    }
    shoald_schedule_soon(d);
}

int jobs_transition(struct shoald *d, struct job *job, enum job_state to,
                    const char *reason, struct sh_error *err)
{
    if (job_transition_check(job, to, err) < 0)
        return -1;
    enum job_state from = job->state;
    job_transition(job, to, shoald_now_ms(d), NULL);
    jobtab_state_changed(d->jobs, job);
    if (reason)
        job_set_reason(job, reason);
    if (jobs_persist(d, job, err) < 0)
        return -1;
    job_action(d, job, from);
    if (d->cluster) /* not while loading: those changes were told */
        notify_transition(d->cfg.mail_program, job, from);
    return 0;
}

int jobs_part_done(struct shoald *d, struct job *job, const char *node,
                   int exit_code, int exit_signal, const char *reason,
                   struct sh_error *err)
{
    int news = cluster_part_gone(d, job, node, exit_code, exit_signal, err);
    if (news <= 0)
        return news;
    if (job->state == JOB_RUNNING) {
        char why[JOB_REASON_MAX];
        enum job_state to = jobs_exit_state(job, node, exit_code, exit_signal,
                                            reason, why, sizeof(why));
        if (to != JOB_RUNNING) {
            job->exit_code = exit_code;
            job->exit_signal = exit_signal;
            if (jobs_transition(d, job, to, why[0] ? why : NULL, err) < 0)
                return -1;
            return 0;
        }
        return jobs_persist(d, job, err);
    }
    if (job->releasing && !job_parts_active(job))
        job_released(d, job);
    else
        jobs_persist(d, job, err);
    return 0;
}

void jobs_node_down(struct shoald *d, struct node *n, const char *why)
{
    struct node_rt *rt = nodetab_rt(d->nodes, n->name);
    nodetab_node_down(n, why);
    /* Work on its copy: jobs_part_done edits the list. */
    int count = rt->njobs;
    uint64_t *ids = count ? malloc((size_t)count * sizeof(uint64_t)) : NULL;
    if (count && !ids)
        return;
    if (count)
        memcpy(ids, rt->jobs, (size_t)count * sizeof(uint64_t));
    for (int i = 0; i < count; i++) {
        struct job *job = jobtab_get(d->jobs, ids[i]);
        if (!job)
            continue;
        struct sh_error err;
        if (job->state == JOB_RUNNING) {
            char reason[JOB_REASON_MAX];
            snprintf(reason, sizeof(reason), "node %s failed: %s", n->name,
                     why);
            jobs_transition(d, job, JOB_NODE_FAIL, reason, &err);
        }
        if (jobs_part_done(d, job, n->name, -1, 0, "lost", &err) < 0)
            sh_log(LOG_ERR, "jobs", "%s", err.msg);
    }
    free(ids);
    cluster_node_changed(d, n);
}

enum job_state jobs_exit_state(const struct job *job, const char *node,
                               int exit_code, int exit_signal,
                               const char *reason, char *why, size_t size)
{
    enum job_state to = JOB_RUNNING;
    why[0] = '\0';
    if (reason && strcmp(reason, "timeout") == 0) {
        to = JOB_TIMEOUT;
        snprintf(why, size, "time limit reached on %s", node);
    } else if (reason && strcmp(reason, "lost") == 0) {
        to = JOB_NODE_FAIL;
        snprintf(why, size, "its processes on %s were lost", node);
    } else if (exit_signal) {
        to = JOB_FAILED;
        snprintf(why, size, "killed by signal %d on %s", exit_signal, node);
    } else if (exit_code != 0) {
        to = JOB_FAILED;
        snprintf(why, size, "exited with %d on %s", exit_code, node);
    } else if (!job_parts_active(job) ||
               (job->spec.batch && job->nalloc > 0 &&
                strcmp(job->alloc[0].node, node) == 0)) {
        /* A batch job ends with its script (on its first node): the other
         * nodes only held their share for its steps. */
        to = JOB_COMPLETED;
    }
    return to;
}

bool jobs_requeue_due(const struct job *job)
{
    return ((job->state == JOB_PREEMPTED || job->state == JOB_NODE_FAIL) &&
            job->spec.requeue) ||
           job->requeue_asked;
}

int jobs_cancel(struct shoald *d, const struct api_caller *caller,
                struct job *job, struct sh_error *err)
{
    if (policy_can_cancel(d->tenancy, caller, job, err) < 0)
        return -1;
    if (job_state_is_terminal(job->state))
        return sh_errorf(err, SH_ECONFLICT, "job %llu is already %s",
                         (unsigned long long)job->id,
                         job_state_name(job->state));
    char reason[128];
    snprintf(reason, sizeof(reason), "cancelled by %s", caller->user);
    return jobs_transition(d, job, JOB_CANCELLED, reason, err);
}

int jobs_cancel_array(struct shoald *d, const struct api_caller *caller,
                      uint64_t array, int *n, struct sh_error *err)
{
    *n = 0;
    for (uint64_t id = array; id < array + JOB_ARRAY_TASKS_MAX; id++) {
        struct job *job = jobtab_get(d->jobs, id);
        if (!job) {
            if (id >= jobtab_next_id(d->jobs))
                break;
            continue; /* ended and gone from memory */
        }
        if (job->array_id != array)
            break;
        if (job_state_is_terminal(job->state))
            continue;
        if (jobs_cancel(d, caller, job, err) < 0)
            return -1;
        (*n)++;
    }
    return 0;
}

int jobs_hold(struct shoald *d, const struct api_caller *caller,
              struct job *job, struct sh_error *err)
{
    if (policy_can_cancel(d->tenancy, caller, job, err) < 0)
        return -1;
    if (job->state != JOB_PENDING)
        return sh_errorf(
            err, SH_ECONFLICT, "job %llu is %s: only pending jobs can be held",
            (unsigned long long)job->id, job_state_name(job->state));
    if (job->held)
        return sh_errorf(err, SH_ECONFLICT, "job %llu is already held",
                         (unsigned long long)job->id);
    job->held = true;
    if (jobs_persist(d, job, err) < 0) {
        job->held = false;
        return -1;
    }
    cluster_job_hold(d, job);
    return 0;
}

int jobs_release(struct shoald *d, const struct api_caller *caller,
                 struct job *job, struct sh_error *err)
{
    if (policy_can_cancel(d->tenancy, caller, job, err) < 0)
        return -1;
    if (job->state != JOB_PENDING || !job->held)
        return sh_errorf(err, SH_ECONFLICT, "job %llu is not held",
                         (unsigned long long)job->id);
    job->held = false;
    if (jobs_persist(d, job, err) < 0) {
        job->held = true;
        return -1;
    }
    cluster_job_release(d, job);
    return 0;
}

int jobs_requeue(struct shoald *d, const struct api_caller *caller,
                 struct job *job, struct sh_error *err)
{
    if (policy_can_cancel(d->tenancy, caller, job, err) < 0)
        return -1;
    if (job->state == JOB_PENDING)
        return sh_errorf(err, SH_ECONFLICT, "job %llu is already pending",
                         (unsigned long long)job->id);
    char reason[128];
    snprintf(reason, sizeof(reason), "requeued by %s", caller->user);
    job->requeue_asked = true;
    if (job->state == JOB_RUNNING)
        /* Stopped like a preemption; back to the queue once its
         * processes are gone (job_released). */
        return jobs_transition(d, job, JOB_PREEMPTED, reason, err);
    if (job->releasing)
        return jobs_persist(d, job, err); /* requeued once released */
    return jobs_transition(d, job, JOB_PENDING, reason, err);
}

/* The fields `shoal update` may change, and the spec they give: the
 * current spec with them laid over, checked as a submission is. */
static const char *const update_fields[] = {"time_limit", "priority",   "gpus",
                                            "nodes",      "gpus_total", "name",
                                            "gpu_type",   NULL};

/* A new shape replaces the old one's kind: gpus_total drops the job's
 * gpus and nodes, gpus (with or without nodes) its gpus_total. What
 * gpus_total cannot go with is refused naming the option, as at submit. */
static int reshape(const struct job *job, const json_t *body, json_t *spec,
                   struct sh_error *err)
{
    bool total = json_object_get(body, "gpus_total") != NULL;
    bool fixed =
        json_object_get(body, "gpus") || json_object_get(body, "nodes");
    const json_t *n = json_object_get(body, "gpus_total");
    if (total && (!json_is_integer(n) || json_integer_value(n) < 1 ||
                  json_integer_value(n) > JOB_GPUS_TOTAL_MAX))
        return sh_errorf(err, SH_EINVAL, "gpus_total must be 1..%d",
                         JOB_GPUS_TOTAL_MAX);
    if (total && fixed)
        return sh_errorf(err, SH_EINVAL,
                         "gpus_total (--gpus-total) lets Shoal pick the nodes "
                         "and the GPUs per node: not with %s",
                         json_object_get(body, "gpus") ? "gpus (--gpus)"
                                                       : "nodes (--nodes)");
    if (total && job->spec.nodelist)
        return sh_errorf(err, SH_EINVAL,
                         "job %llu has a node list (--nodelist %s): "
                         "gpus_total (--gpus-total) lets Shoal pick the "
                         "nodes, not with it",
                         (unsigned long long)job->id, job->spec.nodelist);
    if (total && job->spec.slice)
        return sh_errorf(err, SH_EINVAL,
                         "job %llu asks for a slice (--slice %s): "
                         "gpus_total (--gpus-total) is whole GPUs",
                         (unsigned long long)job->id, job->spec.slice);
    if (total) {
        json_object_del(spec, "gpus");
        json_object_del(spec, "nodes");
    } else if (fixed && job->spec.gpus_total) {
        if (!json_object_get(body, "gpus"))
            return sh_errorf(err, SH_EINVAL,
                             "job %llu asks for %d GPUs in all "
                             "(--gpus-total): give gpus (--gpus) per node "
                             "to fix its shape",
                             (unsigned long long)job->id, job->spec.gpus_total);
        json_object_del(spec, "gpus_total");
        if (!json_object_get(body, "nodes"))
            json_object_del(spec, "nodes"); /* 1 unless given */
    }
    return 0;
}

static int updated_spec(const struct job *job, const json_t *body,
                        struct job_spec *out, struct sh_error *err)
{
    if (!json_is_object(body) || json_object_size(body) == 0)
        return sh_errorf(err, SH_EINVAL,
                         "give what to change: time_limit, priority, gpus, "
                         "nodes, gpus_total, name or gpu_type");
    const char *key;
    json_t *v;
    json_object_foreach ((json_t *)body, key, v) {
        bool ok = false;
        for (int i = 0; update_fields[i] && !ok; i++)
            ok = strcmp(key, update_fields[i]) == 0;
        if (!ok)
            return sh_errorf(err, SH_EINVAL,
                             "'%.*s' cannot be updated (time_limit, priority, "
                             "gpus, nodes, gpus_total, name or gpu_type can)",
                             UTF8_CUT(key, 64));
    }
    json_t *spec = job_spec_to_json(&job->spec);
    json_t *clean = json_object();
    if (!spec || !clean) {
        json_decref(spec);
        json_decref(clean);
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    json_object_foreach (spec, key, v) {
        if (!json_is_null(v))
            json_object_set(clean, key, v);
    }
    if (reshape(job, body, clean, err) < 0) {
        json_decref(spec);
        json_decref(clean);
        return -1;
    }
    json_object_update(clean, (json_t *)body);
    job_spec_init(out);
    int rc = job_spec_from_json(clean, out, err);
    json_decref(spec);
    json_decref(clean);
    return rc;
}

int jobs_update(struct shoald *d, const struct api_caller *caller,
                struct job *job, const json_t *body, struct sh_error *err)
{
    if (policy_can_cancel(d->tenancy, caller, job, err) < 0)
        return -1;
    if (job->state != JOB_PENDING && job->state != JOB_RUNNING)
        return sh_errorf(err, SH_ECONFLICT,
                         "job %llu is %s: only pending or running jobs can "
                         "be updated",
                         (unsigned long long)job->id,
                         job_state_name(job->state));
    struct job_spec spec;
    if (updated_spec(job, body, &spec, err) < 0)
        return -1;
    if (job->state == JOB_RUNNING) {
        const char *key;
        json_t *v;
        json_object_foreach ((json_t *)body, key, v) {
            if (strcmp(key, "time_limit") != 0) {
                job_spec_fini(&spec);
                return sh_errorf(err, SH_ECONFLICT,
                                 "job %llu is running: only its time limit "
                                 "can change",
                                 (unsigned long long)job->id);
            }
        }
        int64_t old = job->spec.time_limit, now = spec.time_limit;
        bool lower = now > 0 && (old == 0 || now <= old);
        job_spec_fini(&spec);
        if (!lower && !caller->admin)
            return sh_errorf(err, SH_EFORBIDDEN,
                             "only a cluster admin may raise or remove a "
                             "running job's time limit");
        job->spec.time_limit = now;
        if (jobs_persist(d, job, err) < 0) {
            job->spec.time_limit = old;
            return -1;
        }
        cluster_job_updated(d, job); /* its agents learn the new limit */
        return 0;
    }
    if ((spec.priority != job->spec.priority &&
         policy_can_prioritize(d->tenancy, caller, spec.project, spec.priority,
                               err) < 0) ||
        check_deps(d, caller, &spec, err) < 0 ||
        jobwhere_check(d->nodes, &spec, err) < 0 ||
        cluster_check_submit(d, &spec, err) < 0) {
        job_spec_fini(&spec);
        return -1;
    }
    struct job_spec old = job->spec;
    job->spec = spec;
    if (jobs_persist(d, job, err) < 0) {
        job->spec = old;
        job_spec_fini(&spec);
        return -1;
    }
    job_spec_fini(&old);
    cluster_job_updated(d, job); /* the engine sees it anew */
    return 0;
}

struct job *jobs_find(struct shoald *d, uint64_t id, bool *owned,
                      struct sh_error *err)
{
    return jobtab_find(d->jobs, d->store, id, owned, err);
}

int jobs_part_exited(struct shoald *d, struct job *job, const char *node,
                     int exit_code, int exit_signal, const char *reason,
                     const char *error, struct sh_error *err)
{
    if (jobs_progress_reason(job->reason))
        job_set_reason(job, NULL); /* the end says its own */
    if (jobs_part_done(d, job, node, exit_code, exit_signal, reason, err) < 0)
        return -1;
    /* A run that could not start says why: that is the job's reason. */
    if (error && *error && job->state == JOB_FAILED) {
        char why[JOB_REASON_MAX];
        snprintf(why, sizeof(why), "%s on %s", error, node);
        job_set_reason(job, why);
        return jobs_persist(d, job, err);
    }
    return 0;
}

int jobs_scan_stored(struct shoald *d, int64_t from_ms, store_job_f fn,
                     void *arg, struct sh_error *err)
{
    return store_scan_jobs(d->store, from_ms, 0, fn, arg, err);
}

/* ---- what a job's nodes report of its runs ---- */

/* A reason that only says what a node does before the job starts (the
 * notes of runs_alive_json): shown while it lasts, never the end's. */
bool jobs_progress_reason(const char *reason)
{
    static const char *const notes[] = {"resolving image", "pulling image",
                                        "unpacking image", NULL};
    for (int i = 0; reason && notes[i]; i++) {
        if (strncmp(reason, notes[i], strlen(notes[i])) == 0)
            return true;
    }
    return false;
}

void jobs_note_progress(struct job *job, const char *node, const char *note)
{
    if (note && jobs_progress_reason(note) && strlen(note) < 100) {
        char why[JOB_REASON_MAX];
        snprintf(why, sizeof(why), "%s on %s", note, node);
        if (!job->reason || strcmp(job->reason, why) != 0)
            job_set_reason(job, why);
    } else if (!note && jobs_progress_reason(job->reason)) {
        char suffix[JOB_IDENT_MAX + 8];
        snprintf(suffix, sizeof(suffix), " on %s", node);
        size_t n = strlen(job->reason), k = strlen(suffix);
        if (n > k && strcmp(job->reason + n - k, suffix) == 0)
            job_set_reason(job, NULL);
    }
}

void jobs_part_reported(struct job *job, const char *node, bool reported)
{
    for (int a = 0; a < job->nalloc; a++) {
        if (strcmp(job->alloc[a].node, node) == 0)
            job->alloc[a].reported = reported;
    }
}

int jobs_set_image_digest(struct shoald *d, struct job *job, const char *digest,
                          struct sh_error *err)
{
    job->image_digest = strdup(digest);
    if (!job->image_digest)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return jobs_persist(d, job, err);
}
