/* SPDX-License-Identifier: Apache-2.0 */
/* The agent side of the API. Agents open every connection:
 *   POST /v1/agent/register   join (with the join token) or come back (with
 *                             the node's own token); reports resources, GPUs
 *                             and the runs it still has
 *   POST /v1/agent/heartbeat  liveness, GPU samples, running runs, events
 *                             (a run ended with its exit status)
 *   GET  /v1/agent/work       long-poll for the node's desired work: the runs
 *                             it must run or stop; answered at once when the
 *                             agent's generation is old, else held
 *   POST /v1/agent/logs       a chunk of a run's stdout or stderr (raw body)
 * A run is (job id, attempt): a requeued job is a new attempt, so an agent
 * never starts an old attempt again and stops any attempt not wanted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/loop/loop.h"
#include "lib/model/job.h"
#include "lib/model/node_json.h"
#include "lib/util/log.h"
#include "lib/util/parse.h"
#include "lib/util/utf8.h"
#include "shoald/acct.h"
#include "shoald/api_handlers.h"
#include "shoald/auth.h"
#include "shoald/engine.h"
#include "shoald/commit.h"
#include "shoald/jobs.h"
#include "shoald/jobtab.h"
#include "shoald/logs.h"
#include "shoald/nodes.h"
#include "shoald/nodetab.h"
#include "shoald/nodework.h"
#include "shoald/slices.h"
#include "store/store.h"

#define WORK_WAIT_MAX_S 60
#define AGENT_RUNS_MAX 4096

/* ---- register ---- */

static int parse_register(json_t *body, struct nodes_reg *r,
                          struct sh_error *err)
{
    json_error_t jerr;
    memset(r, 0, sizeof(*r));
    if (json_unpack_ex(body, &jerr, JSON_STRICT,
                       "{s:s, s?s, s:i, s:I, s?o, s:o, s?o, s?s, s?b}", "name",
                       &r->name, "address", &r->address, "cpus", &r->cpus,
                       "memory", &r->mem, "labels", &r->labels, "gpus",
                       &r->gpus, "running", &r->running, "version", &r->version,
                       "mps", &r->mps) < 0)
        return sh_errorf(err, SH_EINVAL, "register: %s", jerr.text);
    if (!job_ident_valid(r->name))
        return sh_errorf(err, SH_EINVAL,
                         "node name '%.*s' must be 1..%d letters, digits, '.', "
                         "'_' or '-'",
                         UTF8_CUT(r->name, 64), JOB_IDENT_MAX);
    if (r->cpus < 0 || r->cpus > 100000 || r->mem < 0)
        return sh_errorf(err, SH_EINVAL, "cpus or memory out of range");
    if (r->address &&
        (strlen(r->address) == 0 || strlen(r->address) >= NODE_ADDR_MAX))
        return sh_errorf(err, SH_EINVAL, "address is empty or too long");
    return 0;
}

void api_agent_register(struct shoald *d, struct api_req *req)
{
    json_t *body = api_body(req);
    struct sh_error err;
    struct nodes_reg r;
    if (!body)
        return;
    if (parse_register(body, &r, &err) < 0)
        goto fail;
    const struct api_caller *c = api_caller(req);
    if (c->role == API_AGENT && strcmp(c->node, r.name) != 0) {
        api_errorf(req, SH_EFORBIDDEN, "this token belongs to node %s, not %s",
                   c->node, r.name);
        return;
    }
    char token[AUTH_TOKEN_LEN + 1] = "";
    struct node *n;
    if (nodes_register(d, &r, api_peer(req),
                       c->role == API_JOIN ? c->token_id : NULL, token, &n,
                       &err) < 0)
        goto fail;
    json_t *ans =
        json_pack("{s:s, s:o, s:i, s:s}", "node", n->name, "work",
                  cluster_node_work(d, n), "heartbeat_timeout_s",
                  d->cfg.heartbeat_timeout_s, "cluster_id", d->cluster_id);
    if (token[0])
        json_object_set_new(ans, "token", json_string(token));
    api_reply_json(req, 200, ans);
    return;
fail:
    api_reply_error(req, &err);
}

/* ---- heartbeat ---- */

/* The node of an agent caller, alive; else an answer is set and NULL. */
static struct node *caller_node(struct shoald *d, struct api_req *req)
{
    struct node *n = nodetab_get(d->nodes, api_caller(req)->node);
    if (!n) {
        api_errorf(req, SH_ENOTFOUND, "node %s is not known; register again",
                   api_caller(req)->node);
        return NULL;
    }
    if (!n->alive) {
        api_errorf(req, SH_ECONFLICT,
                   "node %s was declared down; register again", n->name);
        return NULL;
    }
    return n;
}

static int apply_event(struct shoald *d, struct node *n, const json_t *ev,
                       struct sh_error *err)
{
    json_int_t id, attempt, cpu_ns = 0, mem_peak = 0;
    const char *what, *reason = NULL, *error = NULL, *digest = NULL;
    int code = -1, sig = 0;
    if (json_unpack(
            (json_t *)ev, "{s:I, s:I, s:s, s?i, s?i, s?s, s?s, s?I, s?I, s?s}",
            "id", &id, "attempt", &attempt, "event", &what, "exit_code", &code,
            "signal", &sig, "reason", &reason, "error", &error, "cpu_ns",
            &cpu_ns, "mem_peak", &mem_peak, "digest", &digest) < 0 ||
        cpu_ns < 0 || mem_peak < 0)
        return sh_errorf(err, SH_EINVAL,
                         "an event needs id, attempt and event");
    if (strcmp(what, "exited") != 0 && strcmp(what, "started") != 0)
        return sh_errorf(err, SH_EINVAL, "event must be started or exited");
    if (strcmp(what, "started") == 0)
        return 0;
    const struct nodes_run_exit e = {
        .id = id,
        .attempt = attempt,
        .exit_code = code,
        .exit_signal = sig,
        .reason = reason,
        .error = error,
        .cpu_ns = (uint64_t)cpu_ns,
        .mem_peak = (uint64_t)mem_peak,
        .digest = digest,
    };
    return nodes_run_exited(d, n, &e, err);
}

void api_agent_heartbeat(struct shoald *d, struct api_req *req)
{
    json_t *body = api_body(req);
    struct sh_error err;
    if (!body)
        return;
    struct node *n = caller_node(d, req);
    if (!n)
        return;
    json_t *gpus = NULL, *running = NULL, *events = NULL, *serr = NULL;
    json_error_t jerr;
    if (json_unpack_ex(body, &jerr, JSON_STRICT, "{s?o, s?o, s?o, s?o}", "gpus",
                       &gpus, "running", &running, "events", &events,
                       "slice_errors", &serr) < 0) {
        api_errorf(req, SH_EINVAL, "heartbeat: %s", jerr.text);
        return;
    }
    int stale;
    if (nodes_count_stale(d, n->name, running, &stale, &err) < 0 ||
        nodes_gpu_samples(n, gpus, &err) < 0)
        goto fail;
    if (events &&
        (!json_is_array(events) || json_array_size(events) > AGENT_RUNS_MAX)) {
        api_errorf(req, SH_EINVAL, "events must be an array");
        return;
    }
    size_t i;
    json_t *ev;
    json_array_foreach (events, i, ev) {
        if (apply_event(d, n, ev, &err) < 0 && err.code == SH_EINVAL)
            goto fail;
    }
    size_t k;
    json_t *se;
    json_array_foreach (serr, k, se) {
        int gpu;
        const char *preset, *error;
        if (json_unpack(se, "{s:i, s:s, s:s}", "gpu", &gpu, "preset", &preset,
                        "error", &error) == 0)
            slices_failed(d, n->name, gpu, preset, error);
    }
    nodes_heartbeat(d, n, gpus != NULL, stale);
    struct node_rt *rt = nodetab_rt(d->nodes, n->name);
    api_reply_json(
        req, 200, json_pack("{s:I}", "generation", (json_int_t)rt->generation));
    return;
fail:
    api_reply_error(req, &err);
}

/* ---- work (long-poll) ---- */

struct poll_hold {
    int64_t deadline_ms;
    char node[JOB_IDENT_MAX + 1];
};

void api_agent_work(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    struct node *n = caller_node(d, req);
    if (!n)
        return;
    int64_t gen = -1, wait = 0;
    const char *s_gen = api_query(req, "generation");
    const char *s_wait = api_query(req, "wait");
    if ((s_gen &&
         parse_int64("generation", s_gen, 0, INT64_MAX, &gen, &err) < 0) ||
        (s_wait &&
         parse_int64("wait", s_wait, 0, WORK_WAIT_MAX_S, &wait, &err) < 0)) {
        api_reply_error(req, &err);
        return;
    }
    struct node_rt *rt = nodetab_rt(d->nodes, n->name);
    if (wait == 0 || gen != (int64_t)rt->generation) {
        api_reply_json(req, 200, cluster_node_work(d, n));
        return;
    }
    struct poll_hold *h = calloc(1, sizeof(*h));
    if (!h) {
        api_errorf(req, SH_EINTERNAL, "out of memory");
        return;
    }
    /* A newer poll replaces an older one (the agent reconnected). */
    api_agent_answer_poll(d, n, NULL);
    h->deadline_ms = shoald_now_ms(d) + wait * 1000;
    snprintf(h->node, sizeof(h->node), "%s", n->name);
    api_set_user_data(req, h);
    rt->poll = req;
    api_hold(req);
}

void api_agent_answer_poll(struct shoald *d, const struct node *n,
                           const struct sh_error *err)
{
    struct node_rt *rt = nodetab_rt(d->nodes, n->name);
    if (!rt || !rt->poll)
        return;
    struct api_req *req = rt->poll;
    rt->poll = NULL;
    free(api_get_user_data(req));
    api_set_user_data(req, NULL);
    if (err) {
        api_reply_error(req, err);
        api_release(req);
        return;
    }
    api_reply_json(req, 200, cluster_node_work(d, n));
    /* The node's last change may not be durable yet (its batch is under
     * way or open, e.g. a start the pass just made): the answer, composed
     * now, waits for the batches open now, and a failed commit answers 503
     * instead. The wait is at most until the batch open now has ended. */
    if (d->commit && rt->wake_batch >= commit_ended_batches(d->commit))
        api_release_durable(req);
    else
        api_release(req);
}

/* Answer held polls whose time is up (and all of them at shutdown). */
void api_agent_expire_polls(struct shoald *d, bool all)
{
    int64_t now = shoald_now_ms(d);
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n)) {
        struct node_rt *rt = nodetab_rt(d->nodes, n->name);
        if (!rt->poll)
            continue;
        struct poll_hold *h = api_get_user_data(rt->poll);
        if (all || !h || h->deadline_ms <= now)
            api_agent_answer_poll(d, n, NULL);
    }
}

/* ---- logs ---- */

void api_agent_logs(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    struct node *n = caller_node(d, req);
    if (!n)
        return;
    int64_t id, attempt, offset;
    const char *stream = api_query(req, "stream");
    if (parse_int64("job", api_query(req, "job"), 1, INT64_MAX, &id, &err) <
            0 ||
        parse_int64("attempt", api_query(req, "attempt"), 0, INT32_MAX,
                    &attempt, &err) < 0 ||
        parse_int64("offset", api_query(req, "offset"), 0, INT64_MAX, &offset,
                    &err) < 0 ||
        !stream) {
        if (!stream)
            sh_errorf(&err, SH_EINVAL, "stream is required");
        goto fail;
    }
    struct job *job = jobtab_get(d->jobs, (uint64_t)id);
    if (!job || job_attempt(job) != attempt) {
        /* An old run's output: accepted and dropped (nothing is written),
         * so the agent moves on. */
        api_reply_json(req, 200, json_pack("{s:I}", "stored", (json_int_t)0));
        return;
    }
    /* A node writes only into the attempt it runs a part of. */
    if (!nodes_job_on(job, n->name)) {
        sh_errorf(&err, SH_EFORBIDDEN,
                  "node %s runs no part of job %llu attempt %lld", n->name,
                  (unsigned long long)job->id, (long long)attempt);
        goto fail;
    }
    size_t len;
    const char *data = api_body_raw(req, &len);
    uint64_t stored;
    if (logs_append(d->logs, job, n->name, stream, (uint64_t)offset, data, len,
                    &stored, &err) < 0)
        goto fail;
    api_reply_json(req, 200, json_pack("{s:I}", "stored", (json_int_t)stored));
    return;
fail:
    api_reply_error(req, &err);
}
