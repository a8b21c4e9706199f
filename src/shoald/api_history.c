/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/history: jobs that ran and ended in a time window, from the store, as
 * JSON or as a trace in the simulator's CSV format (doc/design/sim.md), so
 * an operator can replay the real workload against another cluster shape
 * with `shoal sim`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/model/job_json.h"
#include "lib/util/clock.h"
#include "lib/util/parse.h"
#include "lib/util/strbuf.h"
#include "lib/util/utf8.h"
#include "shoald/api_handlers.h"
#include "shoald/jobs.h"
#include "shoald/policy.h"
#include "store/store.h"

#define HISTORY_MAX_BYTES (256u << 20)
/* JSON answers come in pages (?limit=N&after=ID, "more": how many further
 * jobs match) so one request cannot build a huge tree. */
#define HISTORY_PAGE_DEFAULT 1000
#define HISTORY_PAGE_MAX 5000

struct history {
    struct shoald *d;
    const struct api_caller *caller;
    int64_t from, until;
    const char *user, *project; /* filters; NULL = any */
    unsigned states;            /* bit per enum job_state; 0 = any */
    bool trace;
    int64_t limit, after; /* JSON: the page */
    int64_t n, more;      /* JSON: jobs in the page, matching jobs beyond */
    struct strbuf csv;
    json_t *jobs;
    bool too_big;
};

static bool ran_and_ended(const char *state)
{
    return strcmp(state, "completed") == 0 || strcmp(state, "failed") == 0 ||
           strcmp(state, "timeout") == 0 || strcmp(state, "preempted") == 0 ||
           strcmp(state, "node_fail") == 0 || strcmp(state, "cancelled") == 0;
}

/* Every attempt of an ended job with its own times, as GET /v1/jobs/ID
 * gives them (an empty list if the record does not read). */
static json_t *history_attempts(const json_t *rec)
{
    struct sh_error err;
    struct job *job = job_from_record(rec, &err);
    json_t *arr = job ? job_attempts_to_json(job) : json_array();
    job_destroy(job);
    return arr;
}

static int history_job(const struct store_job_row *row, const json_t *rec,
                       void *arg, struct sh_error *err)
{
    struct history *h = arg;
    (void)err;
    if (!row->end_ms || row->end_ms < h->from ||
        (h->until && row->end_ms >= h->until) || !ran_and_ended(row->state))
        return 0;
    enum job_state st;
    if ((h->user && strcmp(row->user, h->user) != 0) ||
        (h->project && strcmp(row->project, h->project) != 0) ||
        (h->states && (job_state_from_name(row->state, &st) < 0 ||
                       !(h->states & (1u << st)))))
        return 0;
    if (!policy_can_view_stored(h->d->tenancy, h->caller, row->user,
                                row->project))
        return 0;
    const json_t *spec = json_object_get(rec, "spec");
    if (!h->trace && (int64_t)row->id <= h->after)
        return 0;
    if (!h->trace && h->n >= h->limit) {
        h->more++;
        return 0;
    }
    if (!h->trace) {
        h->n++;
        /* The environment's values: for the owner and cluster admins. */
        json_t *shown = json_deep_copy(spec);
        if (shown && !policy_can_see_env_stored(h->caller, row->user)) {
            static const char *const keys[] = {"env", "container_env"};
            for (int k = 0; k < 2; k++) {
                json_t *env = json_object_get(shown, keys[k]);
                const char *name;
                json_t *v;
                json_object_foreach (env, name, v)
                    json_object_set_new(env, name, json_string(JOB_ENV_HIDDEN));
            }
        }
        json_t *o = json_pack(
            "{s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:f, s:o?, s:O, s:O}", "id",
            (json_int_t)row->id, "state", row->state, "user", row->user,
            "project", row->project, "submit_ms", (json_int_t)row->submit_ms,
            "start_ms", (json_int_t)row->start_ms, "end_ms",
            (json_int_t)row->end_ms, "gpu_seconds", row->gpu_seconds, "spec",
            shown, "exit_code", json_object_get(rec, "exit_code"), "requeues",
            json_object_get(rec, "requeues"));
        json_object_set_new(o, "attempts", history_attempts(rec));
        json_array_append_new(h->jobs, o);
        return 0;
    }
    int64_t nodes = json_integer_value(json_object_get(spec, "nodes"));
    int64_t gpus = json_integer_value(json_object_get(spec, "gpus"));
    int64_t total = json_integer_value(json_object_get(spec, "gpus_total"));
    /* gpus_total: the trace's empty nodes, the engine picks them. */
    char nodes_s[24] = "";
    if (!total)
        snprintf(nodes_s, sizeof(nodes_s), "%lld", (long long)nodes);
    const char *gpu_type = json_string_value(json_object_get(spec, "gpu_type"));
    const char *slice = json_string_value(json_object_get(spec, "slice"));
    int64_t limit = json_integer_value(json_object_get(spec, "time_limit"));
    char lim[32] = "";
    if (limit > 0)
        snprintf(lim, sizeof(lim), "%lld", (long long)limit);
    if (strbuf_appendf(&h->csv, "%llu,%.3f,%.3f,%lld,%s,%s,%s,%s,%s,%s,%s\n",
                       (unsigned long long)row->id,
                       (double)row->submit_ms / 1000.0,
                       (double)(row->end_ms - row->start_ms) / 1000.0,
                       (long long)(total ? total : nodes * gpus), nodes_s,
                       row->user, row->project, gpu_type ? gpu_type : "",
                       json_string_value(json_object_get(spec, "priority")),
                       lim, slice ? slice : "") < 0)
        h->too_big = true;
    return 0;
}

void api_history(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    struct history h = {.d = d, .caller = api_caller(req)};
    int64_t now = shoald_now_ms(d);
    const char *since = api_query(req, "since");
    const char *until = api_query(req, "until");
    const char *format = api_query(req, "format");
    h.from = now - INT64_C(30) * 24 * 3600 * 1000;
    if ((since && clock_parse_when("since", since, now, &h.from, &err) < 0) ||
        (until && clock_parse_when("until", until, now, &h.until, &err) < 0)) {
        api_reply_error(req, &err);
        return;
    }
    h.user = api_query(req, "user");
    h.project = api_query(req, "project");
    if ((h.user && !job_ident_valid(h.user)) ||
        (h.project && !job_ident_valid(h.project))) {
        api_errorf(req, SH_EINVAL, "user and project must be names");
        return;
    }
    const char *states = api_query(req, "state");
    for (const char *p = states; p && *p;) {
        size_t len = strcspn(p, ",");
        char name[24];
        enum job_state st;
        snprintf(name, sizeof(name), "%.*s", (int)(len < 23 ? len : 23), p);
        if (len >= sizeof(name) || job_state_from_name(name, &st) < 0 ||
            !ran_and_ended(name)) {
            api_errorf(req, SH_EINVAL,
                       "state '%.*s' is not one a job ends in (completed, "
                       "failed, cancelled, timeout, preempted, node_fail)",
                       UTF8_CUT(name, 24));
            return;
        }
        h.states |= 1u << st;
        p += len + (p[len] == ',');
    }
    if (format && strcmp(format, "trace") && strcmp(format, "json")) {
        api_errorf(req, SH_EINVAL, "format must be json or trace");
        return;
    }
    h.trace = format && strcmp(format, "trace") == 0;
    h.limit = HISTORY_PAGE_DEFAULT;
    const char *limit_s = api_query(req, "limit");
    const char *after_s = api_query(req, "after");
    if ((limit_s || after_s) && h.trace) {
        api_errorf(req, SH_EINVAL,
                   "limit and after page the JSON format; a trace comes whole");
        return;
    }
    if ((limit_s && parse_int64("limit", limit_s, 1, HISTORY_PAGE_MAX, &h.limit,
                                &err) < 0) ||
        (after_s &&
         parse_int64("after", after_s, 0, INT64_MAX, &h.after, &err) < 0)) {
        api_reply_error(req, &err);
        return;
    }
    strbuf_init(&h.csv, HISTORY_MAX_BYTES);
    h.jobs = json_array();
    strbuf_appends(&h.csv, "id,submit,duration,gpus,nodes,user,project,"
                           "gpu_type,priority,time_limit,slice\n");
    /* Jobs that ran and ended in the window. */
    int rc = jobs_scan_stored(d, h.from, history_job, &h, &err);
    if (rc < 0 || h.too_big) {
        if (h.too_big)
            sh_errorf(&err, SH_ETOOLARGE,
                      "the history is larger than %u MiB: ask for a shorter "
                      "window",
                      HISTORY_MAX_BYTES >> 20);
        api_reply_error(req, &err);
    } else if (h.trace) {
        size_t len = h.csv.len;
        api_reply_text(req, 200, "text/csv", strbuf_take(&h.csv), len);
    } else {
        api_reply_json(req, 200,
                       json_pack("{s:O, s:I}", "jobs", h.jobs, "more",
                                 (json_int_t)h.more));
    }
    strbuf_fini(&h.csv);
    json_decref(h.jobs);
}
