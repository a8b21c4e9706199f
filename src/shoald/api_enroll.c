/* SPDX-License-Identifier: Apache-2.0 */
/* Node enrollment (cluster admins):
 *   GET    /v1/join-tokens                 the join tokens (never their text)
 *   POST   /v1/join-tokens                 create one {expires_in_s?, uses?}
 *   DELETE /v1/join-tokens/{id}            revoke one (the default included)
 *   POST   /v1/join-tokens/rotate-default  replace the cluster's default
 *                                          join token (state/join.token)
 *   POST   /v1/nodes/{name}/rekey          a new node token for an enrolled
 *                                          node; its old ones stop working
 * A join token only enrolls a node name that is not enrolled (nodes.c); an
 * enrolled node comes back with its own token, which only rekey re-issues. */
#include <string.h>

#include "lib/util/clock.h"
#include "lib/util/log.h"
#include "lib/util/parse.h"
#include "lib/util/utf8.h"
#include "shoald/api_handlers.h"
#include "shoald/auth.h"
#include "shoald/nodes.h"
#include "shoald/nodetab.h"
#include "shoald/state.h"

static json_t *iso_or_null(int64_t ms)
{
    if (ms <= 0)
        return json_null();
    char buf[40];
    clock_format_iso(ms, buf, sizeof(buf));
    return json_string(buf);
}

static json_t *join_view(const struct auth_token_info *t)
{
    bool dflt = strcmp(t->subject, AUTH_JOIN_DEFAULT) == 0;
    json_t *o =
        json_pack("{s:s, s:b, s:o, s:o, s:i}", "id", t->id, "default", dflt,
                  "created", iso_or_null(t->created_ms), "expires",
                  iso_or_null(t->expires_ms), "uses", t->uses);
    if (o)
        json_object_set_new(o, "max_uses",
                            t->max_uses ? json_integer(t->max_uses)
                                        : json_null());
    return o;
}

void api_join_tokens_list(struct shoald *d, struct api_req *req)
{
    json_t *arr = json_array();
    int64_t now = shoald_now_ms(d);
    for (const struct auth_token_info *t = auth_join_next(d->auth, NULL); t;
         t = auth_join_next(d->auth, t)) {
        if (t->expires_ms && t->expires_ms <= now)
            continue; /* expired: refused at register, not listed */
        json_array_append_new(arr, join_view(t));
    }
    api_reply_json(req, 200, json_pack("{s:o}", "tokens", arr));
}

void api_join_tokens_create(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    size_t len = 0;
    api_body_raw(req, &len);
    json_t *body = len ? api_body(req) : NULL;
    if (len && !body)
        return;
    json_int_t expires_s = 0;
    int uses = 0;
    json_error_t jerr;
    if (body && json_unpack_ex(body, &jerr, JSON_STRICT, "{s?I, s?i}",
                               "expires_in_s", &expires_s, "uses", &uses) < 0) {
        api_errorf(req, SH_EINVAL, "%s", jerr.text);
        return;
    }
    if (expires_s < 0 || expires_s > PARSE_DURATION_MAX) {
        api_errorf(req, SH_EINVAL,
                   "expires_in_s must be 1..%lld seconds (none: never)",
                   (long long)PARSE_DURATION_MAX);
        return;
    }
    if (body && json_object_get(body, "uses") && uses < 1) {
        api_errorf(req, SH_EINVAL, "uses must be 1..%d (none: no limit)",
                   AUTH_JOIN_USES_MAX);
        return;
    }
    int64_t now = shoald_now_ms(d);
    char token[AUTH_TOKEN_LEN + 1];
    if (auth_join_issue(d->auth, shoald_batch(d), now,
                        expires_s ? now + expires_s * 1000 : 0, uses, token,
                        &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    const struct auth_token_info *t = auth_token_info_of(d->auth, token);
    json_t *ans = join_view(t);
    json_object_set_new(ans, "token", json_string(token));
    sh_log(LOG_NOTICE, "nodes", "join token %s created by %s", t->id,
           api_caller(req)->user);
    api_reply_json(req, 201, ans);
}

void api_join_tokens_revoke(struct shoald *d, struct api_req *req)
{
    const char *id = api_param(req, 0);
    struct sh_error err;
    const struct auth_token_info *t;
    for (t = auth_join_next(d->auth, NULL); t; t = auth_join_next(d->auth, t)) {
        if (strcmp(t->id, id) == 0)
            break;
    }
    if (!t) {
        api_errorf(req, SH_ENOTFOUND, "no join token %.*s", UTF8_CUT(id, 16));
        return;
    }
    char subject[16];
    snprintf(subject, sizeof(subject), "%s", t->subject);
    if (auth_token_revoke(d->auth, shoald_batch(d), AUTH_TOKEN_JOIN, subject,
                          id, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    sh_log(LOG_NOTICE, "nodes", "join token %.*s revoked by %s",
           UTF8_CUT(id, 16), api_caller(req)->user);
    api_reply_json(req, 200,
                   json_pack("{s:s, s:s}", "id", id, "state", "revoked"));
}

void api_join_tokens_rotate_default(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    char token[AUTH_TOKEN_LEN + 2];
    if (auth_token_revoke_all(d->auth, shoald_batch(d), AUTH_TOKEN_JOIN,
                              AUTH_JOIN_DEFAULT) < 0 ||
        auth_token_issue(d->auth, shoald_batch(d), AUTH_TOKEN_JOIN,
                         AUTH_JOIN_DEFAULT, shoald_now_ms(d), 0, token,
                         &err) < 0) {
        api_errorf(req, SH_EINTERNAL, "out of memory");
        return;
    }
    const struct auth_token_info *t = auth_token_info_of(d->auth, token);
    json_t *ans = join_view(t);
    json_object_set_new(ans, "token", json_string(token));
    /* The controller's copy for local agents (shoal up); the old text in it
     * stops working with this answer. */
    strcat(token, "\n");
    if (state_write_file(d->cfg.state_dir, "join.token", token, 0600, &err) < 0)
        sh_log(LOG_ERR, "nodes", "cannot rewrite %s/join.token: %s",
               d->cfg.state_dir, err.msg);
    sh_log(LOG_NOTICE, "nodes", "default join token rotated by %s",
           api_caller(req)->user);
    api_reply_json(req, 200, ans);
}

void api_nodes_rekey(struct shoald *d, struct api_req *req)
{
    struct node *n = nodetab_get(d->nodes, api_param(req, 0));
    if (!n) {
        api_errorf(req, SH_ENOTFOUND, "node %.*s not found",
                   UTF8_CUT(api_param(req, 0), 64));
        return;
    }
    struct sh_error err;
    char token[AUTH_TOKEN_LEN + 1];
    if (nodes_rekey(d, n, api_caller(req)->user, token, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 200,
                   json_pack("{s:s, s:s}", "name", n->name, "token", token));
}
