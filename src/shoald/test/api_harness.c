/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in for the request side of shoald/api.c (api_harness.h). */
#include "api_harness.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shoald/commit.h"

struct api_query_arg {
    const char *key;
    const char *value;
};

struct api_req {
    struct api_caller caller;
    const char *params[2];
    struct api_query_arg query[API_HARNESS_QUERY_MAX];
    int nquery;
    struct api_query_arg header[API_HARNESS_QUERY_MAX];
    int nheader;
    const char *body; /* borrowed from the creator */
    size_t len;
    json_t *json;
    bool replied;
    bool held;
    int status;
    char *answer; /* the answer's body, NUL-terminated */
    json_t *answer_json;
    void *user_data;
};

struct api_req *api_harness_req_create(const struct api_caller *caller,
                                       const char *p0, const char *p1,
                                       const char *body, size_t len)
{
    struct api_req *req = calloc(1, sizeof(*req));
    if (!req)
        return NULL;
    req->caller = *caller;
    req->params[0] = p0;
    req->params[1] = p1;
    req->body = body;
    req->len = body ? len : 0;
    return req;
}

void api_harness_req_destroy(struct api_req *req)
{
    if (!req)
        return;
    json_decref(req->json);
    json_decref(req->answer_json);
    free(req->answer);
    free(req);
}

int api_harness_set_query(struct api_req *req, const char *key,
                          const char *value)
{
    if (req->nquery == API_HARNESS_QUERY_MAX)
        return -1;
    req->query[req->nquery].key = key;
    req->query[req->nquery].value = value;
    req->nquery++;
    return 0;
}

int api_harness_status(const struct api_req *req)
{
    return req->replied ? req->status : 0;
}

const char *api_harness_answer_text(const struct api_req *req)
{
    return req->replied ? req->answer : NULL;
}

json_t *api_harness_answer(struct api_req *req)
{
    if (!req->answer_json && req->answer)
        req->answer_json = json_loads(req->answer, 0, NULL);
    return req->answer_json;
}

const char *api_harness_error_message(struct api_req *req)
{
    json_t *error = json_object_get(api_harness_answer(req), "error");
    return json_string_value(json_object_get(error, "message"));
}

bool api_harness_held(const struct api_req *req)
{
    return req->held;
}

/* ---- the request side of api.h ---- */

const struct api_caller *api_caller(const struct api_req *req)
{
    return &req->caller;
}

const char *api_param(const struct api_req *req, int n)
{
    return n >= 0 && n < 2 ? req->params[n] : NULL;
}

const char *api_query(const struct api_req *req, const char *key)
{
    for (int i = 0; i < req->nquery; i++)
        if (strcmp(req->query[i].key, key) == 0)
            return req->query[i].value;
    return NULL;
}

const char *api_header(const struct api_req *req, const char *name)
{
    for (int i = 0; i < req->nheader; i++)
        if (strcasecmp(req->header[i].key, name) == 0)
            return req->header[i].value;
    return NULL;
}

int api_harness_set_header(struct api_req *req, const char *name,
                           const char *value)
{
    if (req->nheader == API_HARNESS_QUERY_MAX)
        return -1;
    req->header[req->nheader].key = name;
    req->header[req->nheader++].value = value;
    return 0;
}

const char *api_body_raw(const struct api_req *req, size_t *len)
{
    if (len)
        *len = req->len;
    return req->body;
}

const char *api_peer(const struct api_req *req)
{
    (void)req;
    return "127.0.0.1";
}

/* As api.c: JSON with duplicate keys refused; an answer when it is not. */
json_t *api_body(struct api_req *req)
{
    if (req->json)
        return req->json;
    if (req->len == 0) {
        api_errorf(req, SH_EINVAL, "the request needs a JSON body");
        return NULL;
    }
    json_error_t jerr;
    req->json = json_loadb(req->body, req->len, JSON_REJECT_DUPLICATES, &jerr);
    if (!req->json)
        api_errorf(req, SH_EINVAL, "malformed JSON at line %d column %d: %s",
                   jerr.line, jerr.column, jerr.text);
    return req->json;
}

/* As api.c: a later answer replaces an earlier one. Takes body. */
static void set_answer(struct api_req *req, int status, char *body)
{
    free(req->answer);
    json_decref(req->answer_json);
    req->answer_json = NULL;
    req->answer = body;
    req->status = status;
    req->replied = true;
}

void api_reply_json(struct api_req *req, int status, json_t *body)
{
    /* Encoded as api.c does, so a view that cannot be encoded shows here
     * too (api.c answers it 500). */
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    set_answer(req, text ? status : 500, text);
}

void api_reply_text(struct api_req *req, int status, const char *ctype,
                    char *body, size_t len)
{
    (void)ctype;
    char *text = malloc(len + 1);
    if (text) {
        if (len)
            memcpy(text, body, len);
        text[len] = '\0';
    }
    free(body);
    set_answer(req, text ? status : 500, text);
}

bool api_replied(const struct api_req *req)
{
    return req->replied;
}

void api_hold(struct api_req *req)
{
    req->held = true;
}

void api_release(struct api_req *req)
{
    req->held = false;
}

static struct commit *harness_commit;

void api_harness_set_commit(struct commit *c)
{
    harness_commit = c;
}

static void on_committed(bool ok, void *arg)
{
    struct api_req *req = arg;
    if (!ok)
        api_errorf(req, SH_EUNAVAILABLE,
                   "the change could not be stored durably; try again");
    req->held = false;
}

void api_release_durable(struct api_req *req)
{
    if (harness_commit && commit_after(harness_commit, on_committed, req) == 0)
        return;
    api_release(req);
}

void api_set_user_data(struct api_req *req, void *data)
{
    req->user_data = data;
}

void *api_get_user_data(const struct api_req *req)
{
    return req->user_data;
}
