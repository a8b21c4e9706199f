/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/jobs: submit, list (filters: state, user, project), show, cancel,
 * hold and release. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job_array.h"
#include "lib/model/job_json.h"
#include "lib/util/clock.h"
#include "lib/util/parse.h"
#include "lib/util/strbuf.h"
#include "lib/util/utf8.h"
#include "shoald/api_handlers.h"
#include "shoald/engine.h"
#include "shoald/jobs.h"
#include "shoald/logs.h"
#include "shoald/jobtab.h"
#include "shoald/policy.h"
#include "shoald/steps.h"

/* A listing's page: by default, and the most one request may ask. */
#define LIST_LIMIT_DEFAULT 5000
#define LIST_LIMIT_MAX 10000

/* Hide the values of the environment object at key of job JSON o. */
static void hide_values(json_t *o, const char *key)
{
    json_t *env = json_object_get(o, key);
    const char *name;
    json_t *v;
    json_object_foreach (env, name, v)
        json_object_set_new(env, name, json_string(JOB_ENV_HIDDEN));
}

/* The job's JSON as caller may see it: the values of its environment only
 * for its owner and cluster admins (policy_can_see_env). Takes o. */
static json_t *env_for(struct api_req *req, const struct job *job, json_t *o)
{
    if (o && !policy_can_see_env(api_caller(req), job)) {
        hide_values(o, "env");
        hide_values(o, "container_env");
    }
    return o;
}

/* The user's view of a job, with a pending job's reason and estimated
 * start taken from the scheduling engine at the moment of asking, and its
 * steps. */
static json_t *job_view(struct shoald *d, struct api_req *req,
                        const struct job *job)
{
    json_t *o = env_for(req, job, job_to_json(job));
    json_t *steps = o ? steps_job_json(d, job) : NULL;
    if (steps)
        json_object_set_new(o, "steps", steps);
    if (o && job->state == JOB_PENDING) {
        char reason[JOB_REASON_MAX];
        int64_t est;
        cluster_job_reason(d, job, reason, sizeof(reason), &est);
        if (reason[0])
            json_object_set_new(o, "reason", json_string(reason));
        if (est > 0) {
            char iso[32];
            clock_format_iso(est, iso, sizeof(iso));
            json_object_set_new(o, "estimated_start", json_string(iso));
        } else {
            const char *note = cluster_job_estimate_note(d, job);
            if (note[0])
                json_object_set_new(o, "estimate", json_string(note));
        }
    }
    return o;
}

void api_jobs_submit(struct shoald *d, struct api_req *req)
{
    json_t *body = api_body(req);
    if (!body)
        return;
    struct sh_error err;
    struct job *job;
    int rc = jobs_submit(d, api_caller(req), body,
                         api_header(req, "Idempotency-Key"), &job, &err);
    if (rc < 0) {
        api_reply_error(req, &err);
        return;
    }
    /* A short acknowledgement: the whole job is one GET away, and at tens
     * of thousands of submissions a second the full view is a sixth of the
     * controller's work. */
    char iso[32];
    clock_format_iso(job->submit_ms, iso, sizeof(iso));
    json_t *ack =
        json_pack("{s:I, s:s, s:s, s:s, s:s}", "id", (json_int_t)job->id,
                  "state", job_state_name(job->state), "user", job->spec.user,
                  "project", job->spec.project, "submit_time", iso);
    if (ack && job->array_id) {
        struct job_array a;
        if (job_array_parse(job->spec.array, &a, &err) == 0) {
            json_object_set_new(ack, "array_id",
                                json_integer((json_int_t)job->array_id));
            json_object_set_new(ack, "tasks", json_integer(a.n));
            job_array_fini(&a);
        }
    }
    /* A retried submission (its Idempotency-Key seen): the first job, 200
     * instead of 201, answered once what it depends on is durable. */
    api_reply_json(req, rc == 1 ? 200 : 201, ack);
}

/* Parse "pending,running" (or "active") into a state mask. */
static int parse_states(const char *s, unsigned *mask, struct sh_error *err)
{
    *mask = 0;
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        char tok[32];
        enum job_state st;
        if (n >= sizeof(tok))
            return sh_errorf(err, SH_EINVAL, "state '%.*s' is unknown",
                             UTF8_CUT(s, 32));
        memcpy(tok, s, n);
        tok[n] = '\0';
        if (strcmp(tok, "active") == 0) {
            *mask |= (1u << JOB_PENDING) | (1u << JOB_RUNNING);
        } else if (job_state_from_name(tok, &st) == 0) {
            *mask |= 1u << st;
        } else {
            return sh_errorf(err, SH_EINVAL,
                             "state '%s' is unknown; use pending, running, "
                             "completed, failed, cancelled, preempted, "
                             "timeout, node_fail or active",
                             tok);
        }
        s += n + (comma ? 1 : 0);
    }
    if (*mask == 0)
        return sh_errorf(err, SH_EINVAL, "state filter is empty");
    return 0;
}

/* One job of a listing: job_view()'s text, written without the tree. */
static int list_write(struct shoald *d, struct api_req *req, struct strbuf *sb,
                      const struct job *job, int64_t now)
{
    char reason[JOB_REASON_MAX];
    struct job_view_extra x = {.hide_env =
                                   !policy_can_see_env(api_caller(req), job)};
    if (job->state == JOB_PENDING) {
        cluster_job_reason(d, job, reason, sizeof(reason), &x.est_start_ms);
        if (reason[0])
            x.reason = reason;
        if (x.est_start_ms <= 0)
            x.estimate = cluster_job_estimate_note(d, job);
    }
    return job_json_write(sb, job, &x, now);
}

static bool list_match(struct shoald *d, struct api_req *req,
                       const struct job *j, unsigned mask, const char *user,
                       const char *project)
{
    return (mask & (1u << j->state)) &&
           (!user || strcmp(user, j->spec.user) == 0) &&
           (!project || strcmp(project, j->spec.project) == 0) &&
           policy_can_view(d->tenancy, api_caller(req), j);
}

/* GET /v1/jobs: the matching jobs in id order, from the first after
 * `after`, at most `limit` of them, and in "more" how many further ones
 * match. The answer is written job by job: a pending job's reason and
 * estimate are worked out only for the jobs returned, and no tree of the
 * whole list is ever built. */
void api_jobs_list(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    unsigned mask = ~0u;
    const char *state = api_query(req, "state");
    const char *user = api_query(req, "user");
    const char *project = api_query(req, "project");
    const char *limit_s = api_query(req, "limit");
    const char *after_s = api_query(req, "after");
    int64_t limit = LIST_LIMIT_DEFAULT, after = 0;
    if (state && parse_states(state, &mask, &err) < 0)
        goto fail;
    if (limit_s &&
        parse_int64("limit", limit_s, 1, LIST_LIMIT_MAX, &limit, &err) < 0)
        goto fail;
    if (after_s &&
        parse_int64("after", after_s, 0, INT64_MAX, &after, &err) < 0)
        goto fail;
    if (user && strcmp(user, "me") == 0 && api_caller(req)->user)
        user = api_caller(req)->user;
    struct strbuf sb;
    strbuf_init(&sb, SIZE_MAX);
    int64_t n = 0, more = 0, now = clock_wall_ms();
    bool ok = strbuf_appends(&sb, "{\"jobs\":[") == 0;
    struct jobtab_walk w;
    for (struct job *j = jobtab_walk_from(d->jobs, (uint64_t)after, &w);
         j && ok; j = jobtab_walk_next(&w)) {
        if (!list_match(d, req, j, mask, user, project))
            continue;
        if (n == limit) {
            more++;
            continue;
        }
        ok = (n == 0 || strbuf_append(&sb, ",", 1) == 0) &&
             list_write(d, req, &sb, j, now) == 0;
        n++;
    }
    ok = ok && strbuf_appendf(&sb, "],\"more\":%lld}", (long long)more) == 0;
    if (!ok) {
        strbuf_fini(&sb);
        api_errorf(req, SH_EINTERNAL, "out of memory listing jobs");
        return;
    }
    size_t len = sb.len;
    api_reply_text(req, 200, "application/json", strbuf_take(&sb), len);
    return;
fail:
    api_reply_error(req, &err);
}

/* The job named by the first path parameter, or NULL with an answer set.
 * *owned says whether the caller must destroy it. */
/* "ID_TASK": the job of task TASK of array ID (tasks have ids in task
 * order from ID). 0 when there is none. */
static uint64_t array_task_id(struct shoald *d, uint64_t array, int64_t task)
{
    struct sh_error err;
    uint64_t lo = array, hi = array + JOB_ARRAY_TASKS_MAX - 1;
    while (lo <= hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        bool owned;
        struct job *j = jobs_find(d, mid, &owned, &err);
        bool beyond = !j || j->array_id != array;
        int64_t t = beyond ? -1 : j->array_task;
        if (owned)
            job_destroy(j);
        if (t == task)
            return mid;
        if (beyond || t > task)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return 0;
}

static struct job *path_job(struct shoald *d, struct api_req *req, bool *owned)
{
    struct sh_error err;
    int64_t id, task = -1;
    const char *param = api_param(req, 0);
    const char *us = strchr(param, '_');
    char head[24];
    if (us && (size_t)(us - param) < sizeof(head)) {
        /* ID_TASK: a task of an array, as Slurm writes it. */
        snprintf(head, sizeof(head), "%.*s", (int)(us - param), param);
        if (parse_int64("array id", head, 1, INT64_MAX, &id, &err) < 0 ||
            parse_int64("array task", us + 1, 0, JOB_ARRAY_INDEX_MAX, &task,
                        &err) < 0) {
            api_reply_error(req, &err);
            return NULL;
        }
        uint64_t tid = array_task_id(d, (uint64_t)id, task);
        if (!tid) {
            api_errorf(req, SH_ENOTFOUND, "job %lld_%lld not found",
                       (long long)id, (long long)task);
            return NULL;
        }
        id = (int64_t)tid;
    } else if (parse_int64("job id", param, 1, INT64_MAX, &id, &err) < 0) {
        api_reply_error(req, &err);
        return NULL;
    }
    struct job *job = jobs_find(d, (uint64_t)id, owned, &err);
    if (!job) {
        api_reply_error(req, &err);
        return NULL;
    }
    if (!policy_can_view(d->tenancy, api_caller(req), job)) {
        api_errorf(req, SH_ENOTFOUND, "job %lld not found", (long long)id);
        if (*owned)
            job_destroy(job);
        return NULL;
    }
    return job;
}

/* The job of the path if it is still in memory (every unfinished job
 * is); a finished one that left memory is answered 409 "job N is STATE:
 * why" (or "job N is already STATE" without why) and NULL returned. */
static struct job *live_job(struct shoald *d, struct api_req *req,
                            const char *why)
{
    bool owned;
    struct job *job = path_job(d, req, &owned);
    if (!job || !owned)
        return job;
    if (why)
        api_errorf(req, SH_ECONFLICT, "job %llu is %s: %s",
                   (unsigned long long)job->id, job_state_name(job->state),
                   why);
    else
        api_errorf(req, SH_ECONFLICT, "job %llu is already %s",
                   (unsigned long long)job->id, job_state_name(job->state));
    job_destroy(job);
    return NULL;
}

/* What the caller may do to the job now: {"cancel", "hold", "release",
 * "requeue"} as booleans, so the dashboard offers only those (the handlers
 * check again). A job that left memory (owned) takes no action. */
static json_t *job_actions(struct shoald *d, const struct api_caller *caller,
                           const struct job *job, bool owned)
{
    bool may = !owned && policy_can_cancel(d->tenancy, caller, job, NULL) == 0;
    bool pending = job->state == JOB_PENDING;
    return json_pack("{s:b, s:b, s:b, s:b}", "cancel",
                     may && !job_state_is_terminal(job->state), "hold",
                     may && pending && !job->held, "release",
                     may && pending && job->held, "requeue", may && !pending);
}

void api_jobs_show(struct shoald *d, struct api_req *req)
{
    bool owned;
    struct job *job = path_job(d, req, &owned);
    if (!job)
        return;
    json_t *o = job_view(d, req, job);
    if (o) /* "o" steals the actions */
        json_object_set_new(o, "actions",
                            job_actions(d, api_caller(req), job, owned));
    api_reply_json(req, 200, o);
    if (owned)
        job_destroy(job);
}

void api_jobs_cancel(struct shoald *d, struct api_req *req)
{
    struct job *job = live_job(d, req, NULL);
    if (!job)
        return;
    struct sh_error err;
    const char *array = api_query(req, "array");
    if (array && strcmp(array, "true") && strcmp(array, "false")) {
        api_errorf(req, SH_EINVAL, "array must be true or false");
        return;
    }
    if (array && strcmp(array, "true") == 0 && job->array_id) {
        /* The whole array: every task not ended yet. */
        int n = 0;
        if (jobs_cancel_array(d, api_caller(req), job->array_id, &n, &err) <
            0) {
            api_reply_error(req, &err);
            return;
        }
        api_reply_json(req, 200,
                       json_pack("{s:I, s:i}", "array_id",
                                 (json_int_t)job->array_id, "cancelled", n));
        return;
    }
    if (jobs_cancel(d, api_caller(req), job, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 200, env_for(req, job, job_to_json(job)));
}

/* POST /v1/jobs/{id}/hold and /release: keep a pending job out of
 * scheduling, or let it back in. */
static void hold_or_release(struct shoald *d, struct api_req *req, bool hold)
{
    struct job *job = live_job(
        d, req, hold ? "only pending jobs can be held" : "it is not held");
    if (!job)
        return;
    struct sh_error err;
    if ((hold ? jobs_hold : jobs_release)(d, api_caller(req), job, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 200, job_view(d, req, job));
}

/* PATCH /v1/jobs/{id}: shoal update. */
void api_jobs_update(struct shoald *d, struct api_req *req)
{
    json_t *body = api_body(req);
    if (!body)
        return;
    struct job *job =
        live_job(d, req, "only pending or running jobs can be updated");
    if (!job)
        return;
    struct sh_error err;
    if (jobs_update(d, api_caller(req), job, body, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 200, job_view(d, req, job));
}

/* POST /v1/jobs/{id}/requeue: shoal requeue. */
void api_jobs_requeue(struct shoald *d, struct api_req *req)
{
    struct job *job = live_job(d, req,
                               "it ended too long ago to be requeued (it is "
                               "only in the history now): submit it again");
    if (!job)
        return;
    struct sh_error err;
    if (jobs_requeue(d, api_caller(req), job, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 200, job_view(d, req, job));
}

void api_jobs_hold(struct shoald *d, struct api_req *req)
{
    hold_or_release(d, req, true);
}

void api_jobs_release(struct shoald *d, struct api_req *req)
{
    hold_or_release(d, req, false);
}

/* A held log read is answered (answer NULL: the job is gone). */
static void logs_woken(uint64_t job_id, json_t *answer, void *arg)
{
    struct api_req *req = arg;
    if (answer)
        api_reply_json(req, 200, answer);
    else
        api_errorf(req, SH_ENOTFOUND, "job %llu is gone",
                   (unsigned long long)job_id);
    api_release(req);
}

/* GET /v1/jobs/{id}/logs: ?offset=N&stream=all|out|err&wait=S (or tail=N
 * instead of offset)&attempt=A (default: the current attempt). Holds the
 * request up to S seconds when there is nothing new and the attempt may
 * still write. */
static void serve_logs(struct shoald *d, const struct job *job,
                       struct api_req *req)
{
    struct sh_error err;
    int64_t offset = 0, wait = 0, tail = 0;
    const char *s_off = api_query(req, "offset");
    const char *s_wait = api_query(req, "wait");
    const char *s_tail = api_query(req, "tail");
    const char *stream = api_query(req, "stream");
    const char *s_att = api_query(req, "attempt");
    int64_t attempt = -1;
    if (!stream)
        stream = "all";
    if ((s_att &&
         parse_int64("attempt", s_att, 0, INT32_MAX, &attempt, &err) < 0) ||
        (s_off &&
         parse_int64("offset", s_off, 0, INT64_MAX, &offset, &err) < 0) ||
        (s_wait &&
         parse_int64("wait", s_wait, 0, LOGS_WAIT_MAX_S, &wait, &err) < 0) ||
        (s_tail &&
         parse_int64("tail", s_tail, 1, LOGS_READ_MAX, &tail, &err) < 0)) {
        api_reply_error(req, &err);
        return;
    }
    if (s_off && s_tail) {
        api_errorf(req, SH_EINVAL, "give offset or tail, not both");
        return;
    }
    uint64_t start;
    json_t *ans = logs_read(d->logs, job, (int)attempt, stream,
                            (uint64_t)offset, (uint64_t)tail, &start, &err);
    if (!ans) {
        api_reply_error(req, &err);
        return;
    }
    bool nothing =
        (uint64_t)json_integer_value(json_object_get(ans, "offset")) == start;
    bool eof = json_is_true(json_object_get(ans, "eof"));
    if (wait == 0 || !nothing || eof) {
        api_reply_json(req, 200, ans);
        return;
    }
    json_decref(ans);
    if (logs_wait(d->logs, job, (int)attempt, stream, start,
                  shoald_now_ms(d) + wait * 1000, logs_woken, req, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    api_hold(req);
}

void api_jobs_logs(struct shoald *d, struct api_req *req)
{
    bool owned;
    struct job *job = path_job(d, req, &owned);
    if (!job)
        return;
    serve_logs(d, job, req);
    if (owned)
        job_destroy(job);
}
