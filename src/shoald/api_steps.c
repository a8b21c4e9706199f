/* SPDX-License-Identifier: Apache-2.0 */
/* The agents' side of job steps (steps.h):
 *   POST /v1/agent/jobs/{id}/steps             the job's first node asks
 *                                              for a step; answers its
 *                                              number
 *   POST /v1/agent/jobs/{id}/steps/{step}/done  a node's part of a step
 *                                              ended: {"attempt", "exit"}
 *   POST /v1/agent/jobs/{id}/steps/{step}/cancel  a part's task failed
 *                                              under --kill-on-bad-exit:
 *                                              the other parts are ended
 * Only a node that runs a part of the job's current attempt is heard
 * (the first node alone may ask for steps). */
#include <stdio.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/util/parse.h"
#include "shoald/api_handlers.h"
#include "shoald/jobtab.h"
#include "shoald/steps.h"

/* The running job of the path whose current attempt has a part on the
 * calling node; NULL after an answer. */
static struct job *caller_job(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    int64_t id;
    if (parse_int64("job id", api_param(req, 0), 1, INT64_MAX, &id, &err) < 0) {
        api_reply_error(req, &err);
        return NULL;
    }
    struct job *job = jobtab_get(d->jobs, (uint64_t)id);
    const char *node = api_caller(req)->node;
    for (int a = 0; job && a < job->nalloc; a++) {
        if (strcmp(job->alloc[a].node, node) == 0)
            return job;
    }
    api_errorf(req, SH_EFORBIDDEN, "job %lld does not run on node %s",
               (long long)id, node);
    return NULL;
}

void api_agent_step_add(struct shoald *d, struct api_req *req)
{
    json_t *body = api_body(req);
    if (!body)
        return;
    struct job *job = caller_job(d, req);
    if (!job)
        return;
    struct sh_error err;
    int step;
    if (steps_add(d, job, api_caller(req)->node, body, &step, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 201, json_pack("{s:i}", "step", step));
}

void api_agent_step_cancel(struct shoald *d, struct api_req *req)
{
    json_t *body = api_body(req);
    if (!body)
        return;
    struct job *job = caller_job(d, req);
    if (!job)
        return;
    struct sh_error err;
    int64_t step;
    int attempt;
    json_error_t jerr;
    if (parse_int64("step", api_param(req, 1), 0, INT32_MAX, &step, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    if (json_unpack_ex(body, &jerr, JSON_STRICT, "{s:i}", "attempt", &attempt) <
        0) {
        api_errorf(req, SH_EINVAL, "step cancel: %s", jerr.text);
        return;
    }
    if (steps_cancel(d, job, api_caller(req)->node, attempt, (int)step, &err) <
        0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 200, json_object());
}

void api_agent_step_done(struct shoald *d, struct api_req *req)
{
    json_t *body = api_body(req);
    if (!body)
        return;
    struct job *job = caller_job(d, req);
    if (!job)
        return;
    struct sh_error err;
    int64_t step;
    int attempt, code;
    json_error_t jerr;
    if (parse_int64("step", api_param(req, 1), 0, INT32_MAX, &step, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    if (json_unpack_ex(body, &jerr, JSON_STRICT, "{s:i, s:i}", "attempt",
                       &attempt, "exit", &code) < 0) {
        api_errorf(req, SH_EINVAL, "step done: %s", jerr.text);
        return;
    }
    if (steps_part_done(d, job, api_caller(req)->node, attempt, (int)step, code,
                        &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 200, json_object());
}
