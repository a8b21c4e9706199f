/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the /v1/jobs handlers of shoald/api_jobs.c as a user meets them,
 * called through the request stand-in (api_harness.h) on a whole
 * controller state (state_fixture.h), without HTTP: a submission answers
 * 201 with the new id and is durable; a bad one (unknown field, gpus out
 * of range, malformed JSON, a field over its size limit) answers 4xx with
 * a message that names the fault, and changes nothing; GET shows a job to
 * those who may see it and 404 to everyone else; cancel and PATCH work on
 * one's own jobs and answer 403 on another user's; hold and release
 * each work once; a running job's time limit may only go down, unless a
 * cluster admin raises it; a listing holds only the jobs the caller may
 * see.
 *
 * Users: admin (cluster admin), bob and carol (members of the default
 * project), eve (a user of no project). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/model/job_json.h"
#include "lib/util/clock.h"
#include "shoald/api_handlers.h"
#include "shoald/auth.h"
#include "shoald/engine.h"
#include "shoald/commit.h"
#include "shoald/jobtab.h"
#include "shoald/nodes.h"
#include "shoald/state.h"
#include "shoald/tenancy.h"
#include "store/store.h"
#include "api_harness.h"
#include "state_fixture.h"

static char dir[64];
static struct shoald d;

static const struct api_caller admin = {
    .role = API_USER, .user = "admin", .admin = true};
static const struct api_caller bob = {.role = API_USER, .user = "bob"};
static const struct api_caller carol = {.role = API_USER, .user = "carol"};
static const struct api_caller eve = {.role = API_USER, .user = "eve"};

/* Every request of a test, freed by teardown. */
static struct api_req *reqs[32];
static int nreqs;

static void add_user(const char *name, bool member)
{
    struct sh_error err = {0};
    struct store_batch *b = shoald_batch(&d);
    cr_assert_eq(
        auth_user_create(d.auth, b, name, false, clock_wall_ms(), &err), 0,
        "%s", err.msg);
    if (member)
        cr_assert_eq(tenancy_member_set(d.tenancy, b, TENANCY_DEFAULT_PROJECT,
                                        name, TENANCY_ROLE_MEMBER, &err),
                     0, "%s", err.msg);
}

static void setup(void)
{
    struct sh_error err = {0};
    state_fixture_open(&d, dir, sizeof(dir), "shoal-api-jobs-test");
    add_user("bob", true);
    add_user("carol", true);
    add_user("eve", false);
    cr_assert_eq(commit_flush(d.commit, &err), 0, "%s", err.msg);
}

static void teardown(void)
{
    for (int i = 0; i < nreqs; i++)
        api_harness_req_destroy(reqs[i]);
    nreqs = 0;
    state_fixture_close(&d, dir);
}

TestSuite(api_jobs, .init = setup, .fini = teardown);

/* Call handler h as who with the job id param (or NULL) and body (or
 * NULL), and the query argument query_key=query_value when query_key is
 * given. The handler must answer. The request lives until teardown. */
static struct api_req *call_q(api_handler_f h, const struct api_caller *who,
                              const char *param, const char *body,
                              const char *query_key, const char *query_value)
{
    cr_assert_lt(nreqs, (int)(sizeof(reqs) / sizeof(reqs[0])));
    struct api_req *req =
        api_harness_req_create(who, param, NULL, body, body ? strlen(body) : 0);
    cr_assert_not_null(req);
    reqs[nreqs++] = req;
    if (query_key)
        cr_assert_eq(api_harness_set_query(req, query_key, query_value), 0);
    h(&d, req);
    cr_assert(api_replied(req), "the handler answered");
    cr_assert_not(api_harness_held(req));
    return req;
}

static struct api_req *call(api_handler_f h, const struct api_caller *who,
                            const char *param, const char *body)
{
    return call_q(h, who, param, body, NULL, NULL);
}

/* The answer's field as an integer / a string (NULL when absent). */
static json_int_t answer_int(struct api_req *req, const char *key)
{
    json_t *v = json_object_get(api_harness_answer(req), key);
    cr_assert(json_is_integer(v), "answer has %s: %s", key,
              api_harness_answer_text(req));
    return json_integer_value(v);
}

static const char *answer_str(struct api_req *req, const char *key)
{
    return json_string_value(json_object_get(api_harness_answer(req), key));
}

/* Assert an error answer with status and a message containing want. */
static void assert_refused(struct api_req *req, int status, const char *want)
{
    const char *msg = api_harness_error_message(req);
    cr_assert_eq(api_harness_status(req), status, "answered %d: %s",
                 api_harness_status(req), api_harness_answer_text(req));
    cr_assert_not_null(msg, "an error body: %s", api_harness_answer_text(req));
    cr_assert_not_null(strstr(msg, want), "message '%s' says '%s'", msg, want);
}

/* Submit body as who and return the job it made (borrowed from the table). */
static struct job *submit_ok(const struct api_caller *who, const char *body)
{
    struct api_req *req = call(api_jobs_submit, who, NULL, body);
    cr_assert_eq(api_harness_status(req), 201, "%s",
                 api_harness_answer_text(req));
    struct job *job = jobtab_get(d.jobs, (uint64_t)answer_int(req, "id"));
    cr_assert_not_null(job, "the answered id is in the table");
    return job;
}

/* A submission with an Idempotency-Key header. */
static struct api_req *submit_keyed(const struct api_caller *who,
                                    const char *body, const char *key)
{
    cr_assert_lt(nreqs, (int)(sizeof(reqs) / sizeof(reqs[0])));
    struct api_req *req =
        api_harness_req_create(who, NULL, NULL, body, strlen(body));
    cr_assert_not_null(req);
    reqs[nreqs++] = req;
    cr_assert_eq(api_harness_set_header(req, "Idempotency-Key", key), 0);
    api_jobs_submit(&d, req);
    cr_assert(api_replied(req), "the handler answered");
    return req;
}

/* What a refused request must leave as it was. */
struct snapshot {
    int jobs;
    uint64_t next_id;
    int batch;
};

static struct snapshot snap(void)
{
    return (struct snapshot){jobtab_count(d.jobs), jobtab_next_id(d.jobs),
                             store_batch_count(shoald_batch(&d))};
}

static void assert_unchanged(struct snapshot before)
{
    struct snapshot now = snap();
    cr_assert_eq(now.jobs, before.jobs, "no job was added");
    cr_assert_eq(now.next_id, before.next_id, "no id was used up");
    cr_assert_eq(now.batch, before.batch, "nothing was written");
}

static void id_text(const struct job *job, char *buf, size_t size)
{
    snprintf(buf, size, "%llu", (unsigned long long)job->id);
}

Test(api_jobs, submit_answers_201_with_the_new_id_and_is_durable)
{
    struct sh_error err = {0};
    struct api_req *req =
        call(api_jobs_submit, &bob, NULL,
             "{\"command\": [\"python\", \"train.py\"], \"gpus\": 2, "
             "\"name\": \"train\", \"time_limit\": \"1h\"}");
    cr_assert_eq(api_harness_status(req), 201, "%s",
                 api_harness_answer_text(req));
    json_int_t id = answer_int(req, "id");
    cr_assert_gt(id, 0);
    cr_assert_str_eq(answer_str(req, "state"), "pending");
    cr_assert_str_eq(answer_str(req, "user"), "bob");
    cr_assert_str_eq(answer_str(req, "project"), TENANCY_DEFAULT_PROJECT,
                     "bob's default project");
    cr_assert_not_null(answer_str(req, "submit_time"));

    cr_assert_eq(commit_flush(d.commit, &err), 0, "%s", err.msg);
    cr_assert_eq(state_reload(&d, &err), 0, "%s", err.msg);
    const struct job *job = jobtab_get(d.jobs, (uint64_t)id);
    cr_assert_not_null(job, "the job is in the store");
    cr_assert_eq(job->state, JOB_PENDING);
    cr_assert_str_eq(job->spec.name, "train");
    cr_assert_eq(job->spec.gpus_per_node, 2);
    cr_assert_eq(job->spec.time_limit, 3600);
    cr_assert_str_eq(job->spec.argv[1], "train.py");

    struct job *next = submit_ok(&bob, "{\"command\": [\"true\"]}");
    cr_assert_gt(next->id, (uint64_t)id, "ids go up");
}

Test(api_jobs, an_unknown_field_is_refused_by_name_and_changes_nothing)
{
    struct snapshot before = snap();
    struct api_req *req = call(api_jobs_submit, &bob, NULL,
                               "{\"command\": [\"true\"], \"gpu\": 1}");
    assert_refused(req, 400, "unknown field 'gpu'");
    json_t *error = json_object_get(api_harness_answer(req), "error");
    cr_assert_str_eq(json_string_value(json_object_get(error, "code")),
                     "invalid");
    assert_unchanged(before);
}

Test(api_jobs, gpus_out_of_range_are_refused_with_the_range)
{
    struct snapshot before = snap();
    assert_refused(call(api_jobs_submit, &bob, NULL,
                        "{\"command\": [\"true\"], \"gpus\": 65}"),
                   400, "gpus must be 0..64, got 65");
    assert_refused(call(api_jobs_submit, &bob, NULL,
                        "{\"command\": [\"true\"], \"gpus\": -1}"),
                   400, "gpus must be 0..64, got -1");
    assert_refused(call(api_jobs_submit, &bob, NULL,
                        "{\"command\": [\"true\"], \"gpus\": \"two\"}"),
                   400, "gpus must be a whole number");
    assert_unchanged(before);
}

Test(api_jobs, malformed_json_is_refused_with_where_and_changes_nothing)
{
    struct snapshot before = snap();
    assert_refused(call(api_jobs_submit, &bob, NULL, "{\"command\": [\"true\""),
                   400, "malformed JSON at line 1");
    assert_refused(call(api_jobs_submit, &bob, NULL, NULL), 400,
                   "the request needs a JSON body");
    assert_refused(call(api_jobs_submit, &bob, NULL,
                        "{\"command\": [\"true\"], \"nodes\": 1, "
                        "\"nodes\": 2}"),
                   400, "duplicate object key");
    assert_refused(call(api_jobs_submit, &bob, NULL, "[\"true\"]"), 400,
                   "a job must be a JSON object");
    assert_refused(call(api_jobs_submit, &bob, NULL, "{\"gpus\": 1}"), 400,
                   "command (or script) is required");
    assert_unchanged(before);
}

/* The limit on a whole request body is api.c's (413 before any handler
 * runs); the handler holds each field to its own limit. */
Test(api_jobs, a_field_over_its_size_limit_is_413_and_changes_nothing)
{
    struct snapshot before = snap();
    size_t n = JOB_SCRIPT_MAX + 1;
    char *body = malloc(n + 64);
    cr_assert_not_null(body);
    int head = snprintf(body, n + 64, "{\"script\": \"");
    memset(body + head, 'x', n);
    strcpy(body + head + n, "\"}");
    struct api_req *req = call(api_jobs_submit, &bob, NULL, body);
    free(body);
    char want[80];
    snprintf(want, sizeof(want), "script is %zu bytes, the limit is %d", n,
             JOB_SCRIPT_MAX);
    assert_refused(req, 413, want);
    assert_unchanged(before);
}

Test(api_jobs, show_returns_the_job_with_what_the_caller_may_do)
{
    struct job *job = submit_ok(&bob, "{\"command\": [\"true\"], \"gpus\": 1}");
    char id[24];
    id_text(job, id, sizeof(id));
    struct api_req *req = call(api_jobs_show, &bob, id, NULL);
    cr_assert_eq(api_harness_status(req), 200, "%s",
                 api_harness_answer_text(req));
    cr_assert_eq(answer_int(req, "id"), (json_int_t)job->id);
    cr_assert_str_eq(answer_str(req, "state"), "pending");
    cr_assert_str_eq(answer_str(req, "user"), "bob");
    cr_assert_eq(answer_int(req, "gpus"), 1);
    json_t *actions = json_object_get(api_harness_answer(req), "actions");
    cr_assert(json_is_true(json_object_get(actions, "cancel")), "own job");
    cr_assert(json_is_true(json_object_get(actions, "hold")));

    req = call(api_jobs_show, &carol, id, NULL);
    cr_assert_eq(api_harness_status(req), 200, "a member of its project");
    actions = json_object_get(api_harness_answer(req), "actions");
    cr_assert(json_is_false(json_object_get(actions, "cancel")),
              "carol may see bob's job but not cancel it");
}

Test(api_jobs, an_unknown_or_hidden_job_is_404_and_a_bad_id_400)
{
    struct job *job = submit_ok(&bob, "{\"command\": [\"true\"]}");
    char id[24], unknown[24];
    id_text(job, id, sizeof(id));
    snprintf(unknown, sizeof(unknown), "%llu",
             (unsigned long long)job->id + 1000);
    char want[64];
    snprintf(want, sizeof(want), "job %s not found", unknown);
    assert_refused(call(api_jobs_show, &bob, unknown, NULL), 404, want);
    snprintf(want, sizeof(want), "job %s not found", id);
    assert_refused(call(api_jobs_show, &eve, id, NULL), 404, want);
    assert_refused(call(api_jobs_show, &bob, "12abc", NULL), 400, "job id");
}

Test(api_jobs, cancel_a_pending_job_ends_it_once)
{
    struct job *job = submit_ok(&bob, "{\"command\": [\"true\"]}");
    char id[24];
    id_text(job, id, sizeof(id));
    assert_refused(call_q(api_jobs_cancel, &bob, id, NULL, "array", "maybe"),
                   400, "array must be true or false");
    cr_assert_eq(job->state, JOB_PENDING, "refused: still pending");
    int batch = store_batch_count(shoald_batch(&d));
    struct api_req *req = call(api_jobs_cancel, &bob, id, NULL);
    cr_assert_eq(api_harness_status(req), 200, "%s",
                 api_harness_answer_text(req));
    cr_assert_str_eq(answer_str(req, "state"), "cancelled");
    cr_assert_str_eq(answer_str(req, "reason"), "cancelled by bob");
    cr_assert_eq(job->state, JOB_CANCELLED);
    cr_assert_gt(store_batch_count(shoald_batch(&d)), batch, "written");

    char want[64];
    snprintf(want, sizeof(want), "job %s is already cancelled", id);
    assert_refused(call(api_jobs_cancel, &bob, id, NULL), 409, want);
}

Test(api_jobs, another_users_job_is_403_to_cancel_or_update_and_unchanged)
{
    struct job *job = submit_ok(&bob, "{\"command\": [\"true\"]}");
    char id[24];
    id_text(job, id, sizeof(id));
    struct snapshot before = snap();
    assert_refused(call(api_jobs_cancel, &carol, id, NULL), 403,
                   "belongs to bob; you may cancel only your own jobs");
    assert_refused(call(api_jobs_update, &carol, id, "{\"time_limit\": 60}"),
                   403, "belongs to bob");
    assert_refused(call(api_jobs_hold, &carol, id, NULL), 403,
                   "belongs to bob");
    assert_refused(call(api_jobs_cancel, &eve, id, NULL), 404, "not found");
    assert_unchanged(before);
    cr_assert_eq(job->state, JOB_PENDING);
    cr_assert_eq(job->spec.time_limit, 0);
    cr_assert_not(job->held);

    struct api_req *req = call(api_jobs_cancel, &admin, id, NULL);
    cr_assert_eq(api_harness_status(req), 200, "a cluster admin may");
    cr_assert_eq(job->state, JOB_CANCELLED);
}

Test(api_jobs, update_sets_a_pending_jobs_time_limit_and_refuses_bad_input)
{
    struct job *job = submit_ok(&bob, "{\"command\": [\"true\"]}");
    char id[24];
    id_text(job, id, sizeof(id));
    struct api_req *req =
        call(api_jobs_update, &bob, id, "{\"time_limit\": \"2h\"}");
    cr_assert_eq(api_harness_status(req), 200, "%s",
                 api_harness_answer_text(req));
    cr_assert_eq(answer_int(req, "time_limit"), 7200);
    cr_assert_eq(job->spec.time_limit, 7200);

    struct snapshot before = snap();
    assert_refused(call(api_jobs_update, &bob, id, "{\"time_limit\": -5}"), 400,
                   "time_limit must be 0..");
    assert_refused(call(api_jobs_update, &bob, id, "{\"command\": [\"ls\"]}"),
                   400, "'command' cannot be updated");
    assert_refused(call(api_jobs_update, &bob, id, "{}"), 400,
                   "give what to change");
    assert_unchanged(before);
    cr_assert_eq(job->spec.time_limit, 7200);
    cr_assert_str_eq(job->spec.argv[0], "true");
}

Test(api_jobs, hold_and_release_a_pending_job_each_once)
{
    struct job *job = submit_ok(&bob, "{\"command\": [\"true\"]}");
    char id[24], want[64];
    id_text(job, id, sizeof(id));
    struct api_req *req = call(api_jobs_hold, &bob, id, NULL);
    cr_assert_eq(api_harness_status(req), 200, "%s",
                 api_harness_answer_text(req));
    cr_assert(json_is_true(json_object_get(api_harness_answer(req), "held")));
    cr_assert(job->held);
    snprintf(want, sizeof(want), "job %s is already held", id);
    assert_refused(call(api_jobs_hold, &bob, id, NULL), 409, want);

    req = call(api_jobs_release, &bob, id, NULL);
    cr_assert_eq(api_harness_status(req), 200, "%s",
                 api_harness_answer_text(req));
    cr_assert_not(job->held);
    snprintf(want, sizeof(want), "job %s is not held", id);
    assert_refused(call(api_jobs_release, &bob, id, NULL), 409, want);
}

/* A node without GPUs, so that a job without GPUs starts on a pass. */
static void add_node(const char *name)
{
    struct sh_error err = {0};
    char token[AUTH_TOKEN_LEN + 1];
    json_t *gpus = json_array();
    struct nodes_reg r = {
        .name = name, .cpus = 8, .mem = 1 << 30, .gpus = gpus};
    struct node *n = NULL;
    cr_assert_eq(nodes_register(&d, &r, "127.0.0.9", "test", token, &n, &err),
                 0, "%s", err.msg);
    json_decref(gpus);
}

Test(api_jobs, a_running_jobs_time_limit_goes_down_unless_an_admin_raises_it)
{
    add_node("n1");
    struct job *job =
        submit_ok(&bob, "{\"command\": [\"true\"], \"time_limit\": \"1h\"}");
    cluster_before_sleep(&d);
    cr_assert_eq(job->state, JOB_RUNNING);
    char id[24];
    id_text(job, id, sizeof(id));

    struct api_req *req =
        call(api_jobs_update, &bob, id, "{\"time_limit\": \"30m\"}");
    cr_assert_eq(api_harness_status(req), 200, "%s",
                 api_harness_answer_text(req));
    cr_assert_eq(job->spec.time_limit, 1800);
    assert_refused(call(api_jobs_update, &bob, id, "{\"time_limit\": \"2h\"}"),
                   403, "only a cluster admin may raise");
    assert_refused(call(api_jobs_update, &bob, id, "{\"gpus\": 0}"), 409,
                   "only its time limit can change");
    cr_assert_eq(job->spec.time_limit, 1800, "refused: unchanged");

    req = call(api_jobs_update, &admin, id, "{\"time_limit\": \"2h\"}");
    cr_assert_eq(api_harness_status(req), 200, "%s",
                 api_harness_answer_text(req));
    cr_assert_eq(job->spec.time_limit, 7200);
}

Test(api_jobs, list_shows_only_what_the_caller_may_see_and_checks_filters)
{
    struct job *pending = submit_ok(&bob, "{\"command\": [\"true\"]}");
    struct job *gone = submit_ok(&bob, "{\"command\": [\"true\"]}");
    char id[24];
    id_text(gone, id, sizeof(id));
    cr_assert_eq(api_harness_status(call(api_jobs_cancel, &bob, id, NULL)),
                 200);

    struct api_req *req =
        call_q(api_jobs_list, &carol, NULL, NULL, "state", "pending");
    cr_assert_eq(api_harness_status(req), 200, "%s",
                 api_harness_answer_text(req));
    json_t *jobs = json_object_get(api_harness_answer(req), "jobs");
    cr_assert_eq(json_array_size(jobs), 1, "%s", api_harness_answer_text(req));
    cr_assert_eq(
        json_integer_value(json_object_get(json_array_get(jobs, 0), "id")),
        (json_int_t)pending->id);

    req = call(api_jobs_list, &eve, NULL, NULL);
    jobs = json_object_get(api_harness_answer(req), "jobs");
    cr_assert_eq(json_array_size(jobs), 0, "eve sees no job of default");

    assert_refused(call_q(api_jobs_list, &bob, NULL, NULL, "state", "done"),
                   400, "state 'done' is unknown");
    assert_refused(call_q(api_jobs_list, &bob, NULL, NULL, "limit", "0"), 400,
                   "limit");
}

Test(api_jobs, a_retried_submission_with_its_key_gets_the_first_job)
{
    const char *body = "{\"command\": [\"true\"]}";
    struct api_req *a = submit_keyed(&bob, body, "k-1");
    cr_assert_eq(api_harness_status(a), 201, "%s", api_harness_answer_text(a));
    json_int_t id = answer_int(a, "id");
    struct snapshot before = snap();
    /* The same key again (the client never heard the answer): the same
     * job, 200, nothing new. */
    struct api_req *again = submit_keyed(&bob, body, "k-1");
    cr_assert_eq(api_harness_status(again), 200, "%s",
                 api_harness_answer_text(again));
    cr_assert_eq(answer_int(again, "id"), id);
    assert_unchanged(before);
    /* Keys are per user: carol's k-1 is a job of her own. */
    struct api_req *c = submit_keyed(&carol, body, "k-1");
    cr_assert_eq(api_harness_status(c), 201);
    cr_assert_neq(answer_int(c, "id"), id);
    /* The key is kept with the job, so a reload (a failover) knows it. */
    struct job *job = jobtab_get(d.jobs, (uint64_t)id);
    cr_assert_str_eq(job->idem_key, "k-1");
    json_t *rec = job_to_record(job);
    struct sh_error err = {0};
    struct job *back = job_from_record(rec, &err);
    cr_assert_not_null(back, "%s", err.msg);
    cr_assert_str_eq(back->idem_key, "k-1");
    job_destroy(back);
    json_decref(rec);
}

Test(api_jobs, a_bad_idempotency_key_is_refused_and_changes_nothing)
{
    struct snapshot before = snap();
    struct api_req *r =
        submit_keyed(&bob, "{\"command\": [\"true\"]}", "no spaces");
    assert_refused(r, 400, "Idempotency-Key must be 1..64");
    assert_unchanged(before);
}
