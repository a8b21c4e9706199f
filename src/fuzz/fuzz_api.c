/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in for the request side of shoald/api.c and a small controller,
 * for the fuzz targets of API handlers (see fuzz_api.h). */
#include "fuzz/fuzz_api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "lib/util/clock.h"
#include "shoald/auth.h"
#include "shoald/commit.h"
#include "shoald/jobtab.h"
#include "shoald/tenancy.h"
#include "store/store.h"

struct api_req {
    struct api_caller caller;
    const char *params[2];
    const char *body; /* borrowed from the fuzzer */
    size_t len;
    json_t *json;
    bool replied;
    int status;
    void *user_data;
};

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
    (void)req;
    (void)key;
    return NULL;
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

void api_reply_json(struct api_req *req, int status, json_t *body)
{
    /* Encode it as api.c does, so a broken view shows here too. */
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    req->replied = true;
    req->status = text ? status : 500;
    free(text);
    json_decref(body);
}

void api_reply_text(struct api_req *req, int status, const char *ctype,
                    char *body, size_t len)
{
    (void)ctype;
    (void)len;
    free(body);
    req->replied = true;
    req->status = status;
}

void api_reply_error(struct api_req *req, const struct sh_error *err)
{
    static const int status[] = {
        [SH_EINVAL] = 400,    [SH_EUNAUTH] = 401,      [SH_EFORBIDDEN] = 403,
        [SH_EQUOTA] = 403,    [SH_ENOTFOUND] = 404,    [SH_ECONFLICT] = 409,
        [SH_ETOOLARGE] = 413, [SH_EUNAVAILABLE] = 503,
    };
    unsigned code = (unsigned)err->code;
    req->replied = true;
    req->status = 500; /* also for SH_OK: no error given */
    if (code < sizeof(status) / sizeof(status[0]) && status[code])
        req->status = status[code];
}

int api_errorf(struct api_req *req, enum sh_errc code, const char *fmt, ...)
{
    struct sh_error err;
    va_list ap;
    err.code = code;
    va_start(ap, fmt);
    vsnprintf(err.msg, sizeof(err.msg), fmt, ap);
    va_end(ap);
    api_reply_error(req, &err);
    return -1;
}

bool api_replied(const struct api_req *req)
{
    return req->replied;
}

void api_hold(struct api_req *req)
{
    (void)req;
}

void api_release(struct api_req *req)
{
    (void)req;
}

void api_set_user_data(struct api_req *req, void *data)
{
    req->user_data = data;
}

void *api_get_user_data(const struct api_req *req)
{
    return req->user_data;
}

/* ---- the controller ---- */

static int seed(struct shoald *d, struct sh_error *err)
{
    static const struct tenancy_quota team_q[] = {
        {NULL, 8, 16},
        {"H100-80GB", 4, 8},
    };
    static const struct tenancy_quota project_q[] = {{NULL, 2, 8}};
    struct store_batch *b = commit_batch(d->commit);
    int64_t now = clock_wall_ms();
    char token[AUTH_TOKEN_LEN + 1];
    if (tenancy_init_defaults(d->tenancy, b, now, err) < 0 ||
        auth_user_create(d->auth, b, "alice", true, now, err) < 0 ||
        auth_token_issue(d->auth, b, AUTH_TOKEN_USER, "alice", now, 0, token,
                         err) < 0 ||
        auth_user_create(d->auth, b, "bob", false, now, err) < 0 ||
        tenancy_member_set(d->tenancy, b, TENANCY_DEFAULT_PROJECT, "bob",
                           TENANCY_ROLE_MEMBER, err) < 0 ||
        tenancy_team_create(d->tenancy, b, "vision", team_q, 2, now, err) < 0 ||
        tenancy_project_create(d->tenancy, b, "detect", "vision", project_q, 1,
                               now, err) < 0 ||
        tenancy_member_set(d->tenancy, b, "detect", "bob", TENANCY_ROLE_ADMIN,
                           err) < 0 ||
        auth_user_set_default_project(d->auth, b, "bob", "detect", err) < 0)
        return -1;
    return 0;
}

struct shoald *fuzz_shoald_create(void)
{
    struct sh_error err = {0};
    struct shoald *d = calloc(1, sizeof(*d));
    if (!d)
        fuzz_fail("out of memory");
    d->commit = commit_create(NULL, NULL, NULL, NULL, &err);
    d->auth = d->commit ? auth_create(&err) : NULL;
    d->tenancy = d->auth ? tenancy_create(&err) : NULL;
    d->jobs = jobtab_create();
    if (!d->commit || !d->auth || !d->tenancy || !d->jobs || seed(d, &err) < 0)
        fuzz_fail("cannot build the controller: %s", err.msg);
    return d;
}

void fuzz_shoald_destroy(struct shoald *d)
{
    if (!d)
        return;
    jobtab_destroy(d->jobs);
    tenancy_destroy(d->tenancy);
    auth_destroy(d->auth);
    commit_destroy(d->commit);
    free(d);
}

void fuzz_api_call(struct shoald *d, api_handler_f h, const char *name,
                   const char *p0, const char *p1, const uint8_t *body,
                   size_t size)
{
    struct api_req req = {
        .caller = {.role = API_USER, .user = "alice", .admin = true},
        .params = {p0, p1},
        .body = (const char *)body,
        .len = size,
    };
    struct sh_error err = {0};
    int before = store_batch_count(commit_batch(d->commit));
    h(d, &req);
    json_decref(req.json);
    if (!req.replied)
        fuzz_fail("%s did not answer", name);
    if (!tenancy_check_invariants(d->tenancy, &err))
        fuzz_fail("%s (answered %d) broke the tenancy: %s", name, req.status,
                  err.msg);
    if (req.status >= 400 &&
        store_batch_count(commit_batch(d->commit)) != before)
        fuzz_fail("%s refused the request (%d) but changed the batch", name,
                  req.status);
}
