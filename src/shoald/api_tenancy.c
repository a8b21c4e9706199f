/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/teams, /v1/projects (with their quotas and members) and /v1/users
 * (with their tokens and limits): the REST face of tenancy.c and auth.c.
 *
 * Each handler checks permissions through policy.c (routes marked
 * API_ACCESS_ADMIN are checked by api.c), validates the whole body strictly
 * (unknown fields, types, ranges, names), then changes the store batch and
 * memory through tenancy.c/auth.c, tells the scheduler bridge
 * (cluster_tenants_changed), and answers. Every check comes before the
 * first change, so a refused request changes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/util/clock.h"
#include "lib/util/parse.h"
#include "lib/util/utf8.h"
#include "shoald/acct.h"
#include "shoald/api_handlers.h"
#include "shoald/auth.h"
#include "shoald/engine.h"
#include "shoald/jobtab.h"
#include "shoald/policy.h"
#include "shoald/tenancy.h"
#include "shoald/volumes.h"

/* ---- body helpers ---- */

/* body must be an object whose keys are all in allowed (NULL-ended). */
static int fields_check(const json_t *body, const char *const *allowed,
                        struct sh_error *err)
{
    const char *key;
    const json_t *v;
    if (!json_is_object(body))
        return sh_errorf(err, SH_EINVAL, "the body must be a JSON object");
    json_object_foreach ((json_t *)body, key, v) {
        bool ok = false;
        for (int i = 0; allowed[i]; i++)
            ok = ok || strcmp(key, allowed[i]) == 0;
        if (!ok) {
            char list[256] = "";
            size_t o = 0;
            for (int i = 0; allowed[i] && o < sizeof(list); i++)
                o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s",
                                      i ? ", " : "", allowed[i]);
            return sh_errorf(err, SH_EINVAL, "unknown field '%.*s' (known: %s)",
                             UTF8_CUT(key, 64), list);
        }
    }
    return 0;
}

/* A name field: absent leaves *out unchanged (unless required). */
static int get_name(const json_t *body, const char *key, bool required,
                    const char **out, struct sh_error *err)
{
    const json_t *v = json_object_get(body, key);
    if (!v) {
        if (required)
            return sh_errorf(err, SH_EINVAL, "%s is required", key);
        return 0;
    }
    if (!json_is_string(v) || !job_ident_valid(json_string_value(v)))
        return sh_errorf(err, SH_EINVAL,
                         "%s must be a name of 1..%d letters, digits, '.', '_' "
                         "or '-', not starting with '.' or '-'",
                         key, JOB_IDENT_MAX);
    *out = json_string_value(v);
    return 0;
}

static int get_bool(const json_t *body, const char *key, bool *out,
                    struct sh_error *err)
{
    const json_t *v = json_object_get(body, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return sh_errorf(err, SH_EINVAL, "%s must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

/* An integer in [min, max], or null (then *is_null). Absent: *present
 * false. */
static int get_int(const json_t *body, const char *key, int64_t min,
                   int64_t max, bool allow_null, int64_t *out, bool *present,
                   bool *is_null, struct sh_error *err)
{
    const json_t *v = json_object_get(body, key);
    *present = v != NULL;
    if (is_null)
        *is_null = false;
    if (!v)
        return 0;
    if (allow_null && json_is_null(v)) {
        *is_null = true;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min ||
        json_integer_value(v) > max)
        return sh_errorf(
            err, SH_EINVAL, "%s must be a whole number %lld..%lld%s", key,
            (long long)min, (long long)max, allow_null ? " or null" : "");
    *out = json_integer_value(v);
    return 0;
}

/* The JSON body of a request that may come without one: an empty object
 * then. NULL with the answer set when the body is not JSON. The result is
 * borrowed until the request ends (*owned: the caller decrefs it). */
static json_t *body_or_empty(struct api_req *req, bool *owned)
{
    size_t len = 0;
    api_body_raw(req, &len);
    *owned = len == 0;
    return len == 0 ? json_object() : api_body(req);
}

/* ---- small helpers ---- */

static json_t *iso_or_null(int64_t ms)
{
    if (ms <= 0)
        return json_null();
    char buf[40];
    clock_format_iso(ms, buf, sizeof(buf));
    return json_string(buf);
}

static void changed(struct shoald *d)
{
    cluster_tenants_changed(d);
}

static bool is_admin(const struct api_req *req)
{
    const struct api_caller *c = api_caller(req);
    return c->role == API_USER && c->admin;
}

/* Whether the caller holds any role in a project of team. */
static bool sees_team(struct shoald *d, const struct api_req *req,
                      const char *team)
{
    if (is_admin(req))
        return true;
    for (const struct tenancy_project *p =
             tenancy_project_next(d->tenancy, NULL);
         p; p = tenancy_project_next(d->tenancy, p)) {
        if (strcmp(p->team, team) == 0 &&
            policy_role(d->tenancy, api_caller(req), p->name) !=
                TENANCY_ROLE_NONE)
            return true;
    }
    return false;
}

/* ---- quotas in bodies ---- */

/* The quotas of a create body: "quotas": [...], or the shorthand of one
 * entry ("guaranteed", "limit", "gpu_model"), or none. Strings borrow from
 * body. */
static int body_quotas(const json_t *body, struct tenancy_quota *q, int *n,
                       struct sh_error *err)
{
    static const char *const shorthand[] = {"gpu_model", "guaranteed", "limit"};
    const json_t *arr = json_object_get(body, "quotas");
    bool any_short = false;
    for (int i = 0; i < 3; i++)
        any_short = any_short || json_object_get(body, shorthand[i]);
    *n = 0;
    if (arr && any_short)
        return sh_errorf(err, SH_EINVAL,
                         "give either quotas or guaranteed/limit/gpu_model, "
                         "not both");
    if (arr)
        return tenancy_quotas_from_json(arr, q, n, err);
    if (!any_short)
        return 0;
    json_t *one = json_object();
    for (int i = 0; one && i < 3; i++) {
        json_t *v = json_object_get(body, shorthand[i]);
        if (v)
            json_object_set(one, shorthand[i], v); /* shares v with body */
    }
    json_t *wrap = one ? json_pack("[o]", one) : NULL; /* steals one */
    int rc = wrap ? tenancy_quotas_from_json(wrap, q, n, err)
                  : sh_errorf(err, SH_EINTERNAL, "out of memory");
    json_decref(wrap); /* the strings live on in body */
    return rc;
}

/* A PATCH .../quota body: one entry's change. Strings borrow from body. */
static int body_quota_change(const json_t *body,
                             struct tenancy_quota_change *chg,
                             struct sh_error *err)
{
    static const char *const allowed[] = {"gpu_model", "guaranteed", "limit",
                                          "remove", NULL};
    bool present, is_null;
    memset(chg, 0, sizeof(*chg));
    if (fields_check(body, allowed, err) < 0)
        return -1;
    const json_t *m = json_object_get(body, "gpu_model");
    if (m && !json_is_null(m)) {
        if (!json_is_string(m) || !job_ident_valid(json_string_value(m)))
            return sh_errorf(err, SH_EINVAL,
                             "gpu_model must be a GPU model name (1..%d "
                             "letters, digits, '.', '_' or '-') or null (any)",
                             JOB_IDENT_MAX);
        chg->model = json_string_value(m);
    }
    if (get_int(body, "guaranteed", 0, TENANCY_GPUS_MAX, false,
                &chg->guaranteed, &chg->set_guaranteed, NULL, err) < 0 ||
        get_int(body, "limit", 0, TENANCY_GPUS_MAX, true, &chg->limit,
                &chg->set_limit, &is_null, err) < 0 ||
        get_bool(body, "remove", &chg->remove, err) < 0)
        return -1;
    if (is_null)
        chg->limit = TENANCY_UNLIMITED;
    present = chg->set_guaranteed || chg->set_limit;
    if (chg->remove && present)
        return sh_errorf(err, SH_EINVAL, "remove takes no guaranteed or limit");
    if (!chg->remove && !present)
        return sh_errorf(err, SH_EINVAL,
                         "give guaranteed, limit (null for none) or remove");
    return 0;
}

/* ---- views ---- */

static json_t *team_view(struct shoald *d, const struct api_req *req,
                         const struct tenancy_team *t)
{
    json_t *projects = json_array();
    for (const struct tenancy_project *p =
             tenancy_project_next(d->tenancy, NULL);
         p && projects; p = tenancy_project_next(d->tenancy, p)) {
        if (strcmp(p->team, t->name) != 0)
            continue;
        if (!is_admin(req) && policy_role(d->tenancy, api_caller(req),
                                          p->name) == TENANCY_ROLE_NONE)
            continue;
        json_array_append_new(projects, json_string(p->name));
    }
    /* "o" steals each new value. */
    return json_pack("{s:s, s:o, s:o, s:i, s:o}", "name", t->name, "created",
                     iso_or_null(t->created_ms), "quotas",
                     tenancy_quotas_to_json(t->quotas, t->nquotas),
                     "project_count", t->nprojects, "projects", projects);
}

static json_t *members_view(struct shoald *d, const char *project)
{
    json_t *arr = json_array();
    for (const struct tenancy_member *m =
             tenancy_member_next(d->tenancy, project, NULL);
         m && arr; m = tenancy_member_next(d->tenancy, project, m))
        json_array_append_new(arr,
                              json_pack("{s:s, s:s}", "user", m->user, "role",
                                        tenancy_role_name(m->role)));
    return arr;
}

static json_t *project_view(struct shoald *d, const struct api_req *req,
                            const struct tenancy_project *p, bool members)
{
    enum tenancy_role role = policy_role(d->tenancy, api_caller(req), p->name);
    /* "o" steals each new value. */
    json_t *o =
        json_pack("{s:s, s:s, s:o, s:o, s:i, s:s}", "name", p->name, "team",
                  p->team, "created", iso_or_null(p->created_ms), "quotas",
                  tenancy_quotas_to_json(p->quotas, p->nquotas), "member_count",
                  p->nmembers, "role", tenancy_role_name(role));
    if (o)
        json_object_set_new(o, "idle_policy",
                            p->idle_policy ? json_string(p->idle_policy)
                                           : json_null());
    if (o && members)
        json_object_set_new(o, "members", members_view(d, p->name));
    return o;
}

static json_t *limits_view(const struct auth_user_limits *l)
{
    /* 0 means no limit; shown as null. "o" steals each new value. */
    return json_pack(
        "{s:o, s:o, s:o, s:o}", "max_gpus",
        l->max_gpus ? json_integer(l->max_gpus) : json_null(), "max_jobs",
        l->max_jobs ? json_integer(l->max_jobs) : json_null(), "max_time_s",
        l->max_time_s ? json_integer(l->max_time_s) : json_null(),
        "max_pending",
        l->max_pending ? json_integer(l->max_pending) : json_null());
}

static json_t *user_projects(struct shoald *d, const char *user)
{
    json_t *arr = json_array();
    for (const struct tenancy_project *p =
             tenancy_project_next(d->tenancy, NULL);
         p && arr; p = tenancy_project_next(d->tenancy, p)) {
        enum tenancy_role r = tenancy_role(d->tenancy, p->name, user);
        if (r != TENANCY_ROLE_NONE)
            json_array_append_new(arr,
                                  json_pack("{s:s, s:s}", "project", p->name,
                                            "role", tenancy_role_name(r)));
    }
    return arr;
}

/* A user's view; projects is stolen (NULL: computed here). */
static json_t *user_view(struct shoald *d, const struct auth_user *u,
                         json_t *projects)
{
    if (!projects)
        projects = user_projects(d, u->name);
    /* "o" steals each new value. */
    return json_pack("{s:s, s:b, s:o, s:s?, s:o, s:o, s:i}", "name", u->name,
                     "admin", u->admin, "created", iso_or_null(u->created_ms),
                     "default_project", u->default_project, "limits",
                     limits_view(&u->limits), "projects", projects,
                     "token_count",
                     auth_token_count(d->auth, AUTH_TOKEN_USER, u->name));
}

/* ---- teams ---- */

static const struct tenancy_team *path_team(struct shoald *d,
                                            struct api_req *req)
{
    const struct tenancy_team *t =
        tenancy_team_get(d->tenancy, api_param(req, 0));
    if (!t)
        api_errorf(req, SH_ENOTFOUND, "team %.*s does not exist",
                   UTF8_CUT(api_param(req, 0), 64));
    return t;
}

void api_teams_list(struct shoald *d, struct api_req *req)
{
    json_t *arr = json_array();
    for (const struct tenancy_team *t = tenancy_team_next(d->tenancy, NULL);
         t && arr; t = tenancy_team_next(d->tenancy, t)) {
        if (sees_team(d, req, t->name))
            json_array_append_new(arr, team_view(d, req, t));
    }
    api_reply_json(req, 200, json_pack("{s:o}", "teams", arr)); /* steals */
}

void api_teams_show(struct shoald *d, struct api_req *req)
{
    const struct tenancy_team *t = path_team(d, req);
    if (!t)
        return;
    if (!sees_team(d, req, t->name)) {
        api_errorf(req, SH_EFORBIDDEN,
                   "you may see only the teams of projects you belong to");
        return;
    }
    api_reply_json(req, 200, team_view(d, req, t));
}

void api_teams_create(struct shoald *d, struct api_req *req)
{
    static const char *const allowed[] = {"name",       "quotas", "gpu_model",
                                          "guaranteed", "limit",  NULL};
    struct tenancy_quota q[TENANCY_QUOTAS_MAX];
    int n = 0;
    const char *name = NULL;
    struct sh_error err;
    json_t *body = api_body(req);
    if (!body)
        return;
    if (fields_check(body, allowed, &err) < 0 ||
        get_name(body, "name", true, &name, &err) < 0 ||
        body_quotas(body, q, &n, &err) < 0 ||
        tenancy_team_create(d->tenancy, shoald_batch(d), name, q, n,
                            shoald_now_ms(d), &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    changed(d);
    api_reply_json(req, 201,
                   team_view(d, req, tenancy_team_get(d->tenancy, name)));
}

void api_teams_delete(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    const struct tenancy_team *t = path_team(d, req);
    if (!t)
        return;
    char name[JOB_IDENT_MAX + 1];
    snprintf(name, sizeof(name), "%s", t->name);
    if (tenancy_team_delete(d->tenancy, shoald_batch(d), name, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    changed(d);
    api_reply_json(req, 200,
                   json_pack("{s:s, s:b}", "name", name, "deleted", 1));
}

/* PUT (replace: {"quotas": [...]}) or PATCH (one entry) a quota list. */
static int quota_request(struct api_req *req, bool replace,
                         const struct tenancy_quota *cur, int ncur,
                         struct tenancy_quota *out, int *nout,
                         struct sh_error *err)
{
    static const char *const put_fields[] = {"quotas", NULL};
    json_t *body = api_body(req);
    if (!body)
        return -1;
    if (replace) {
        if (fields_check(body, put_fields, err) < 0)
            return api_errorf(req, err->code, "%s", err->msg);
        if (!json_object_get(body, "quotas"))
            return api_errorf(req, SH_EINVAL,
                              "quotas is required (an array; [] for none)");
        if (tenancy_quotas_from_json(json_object_get(body, "quotas"), out, nout,
                                     err) < 0)
            return api_errorf(req, err->code, "%s", err->msg);
        return 0;
    }
    struct tenancy_quota_change chg;
    if (body_quota_change(body, &chg, err) < 0 ||
        tenancy_quota_apply(cur, ncur, &chg, out, nout, err) < 0)
        return api_errorf(req, err->code, "%s", err->msg);
    return 0;
}

static void team_quota(struct shoald *d, struct api_req *req, bool replace)
{
    struct tenancy_quota q[TENANCY_QUOTAS_MAX];
    int n = 0;
    struct sh_error err;
    const struct tenancy_team *t = path_team(d, req);
    if (!t ||
        quota_request(req, replace, t->quotas, t->nquotas, q, &n, &err) < 0)
        return;
    char name[JOB_IDENT_MAX + 1];
    snprintf(name, sizeof(name), "%s", t->name);
    if (tenancy_team_set_quotas(d->tenancy, shoald_batch(d), name, q, n, &err) <
        0) {
        api_reply_error(req, &err);
        return;
    }
    changed(d);
    api_reply_json(req, 200,
                   team_view(d, req, tenancy_team_get(d->tenancy, name)));
}

void api_teams_quota_put(struct shoald *d, struct api_req *req)
{
    team_quota(d, req, true);
}

void api_teams_quota_patch(struct shoald *d, struct api_req *req)
{
    team_quota(d, req, false);
}

/* ---- projects ---- */

static const struct tenancy_project *path_project(struct shoald *d,
                                                  struct api_req *req)
{
    const struct tenancy_project *p =
        tenancy_project_get(d->tenancy, api_param(req, 0));
    if (!p)
        api_errorf(req, SH_ENOTFOUND, "project %.*s does not exist",
                   UTF8_CUT(api_param(req, 0), 64));
    return p;
}

void api_projects_list(struct shoald *d, struct api_req *req)
{
    const char *team = api_query(req, "team");
    json_t *arr = json_array();
    for (const struct tenancy_project *p =
             tenancy_project_next(d->tenancy, NULL);
         p && arr; p = tenancy_project_next(d->tenancy, p)) {
        if (team && strcmp(team, p->team) != 0)
            continue;
        if (!is_admin(req) && policy_role(d->tenancy, api_caller(req),
                                          p->name) == TENANCY_ROLE_NONE)
            continue;
        json_array_append_new(arr, project_view(d, req, p, false));
    }
    api_reply_json(req, 200, json_pack("{s:o}", "projects", arr)); /* steals */
}

void api_projects_show(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    const struct tenancy_project *p = path_project(d, req);
    if (!p)
        return;
    if (policy_can_view_project(d->tenancy, api_caller(req), p->name, &err) <
        0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 200, project_view(d, req, p, true));
}

void api_projects_create(struct shoald *d, struct api_req *req)
{
    static const char *const allowed[] = {
        "name", "team", "quotas", "gpu_model", "guaranteed", "limit", NULL};
    struct tenancy_quota q[TENANCY_QUOTAS_MAX];
    int n = 0;
    const char *name = NULL, *team = NULL;
    struct sh_error err;
    json_t *body = api_body(req);
    if (!body)
        return;
    if (fields_check(body, allowed, &err) < 0 ||
        get_name(body, "name", true, &name, &err) < 0 ||
        get_name(body, "team", true, &team, &err) < 0 ||
        body_quotas(body, q, &n, &err) < 0 ||
        tenancy_project_create(d->tenancy, shoald_batch(d), name, team, q, n,
                               shoald_now_ms(d), &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    changed(d);
    api_reply_json(
        req, 201,
        project_view(d, req, tenancy_project_get(d->tenancy, name), true));
}

void api_projects_update(struct shoald *d, struct api_req *req)
{
    static const char *const allowed[] = {"team", "idle_policy", NULL};
    const char *team = NULL;
    struct sh_error err;
    const struct tenancy_project *p = path_project(d, req);
    if (!p)
        return;
    char name[JOB_IDENT_MAX + 1];
    snprintf(name, sizeof(name), "%s", p->name);
    json_t *body = api_body(req);
    if (!body)
        return;
    json_t *idle = json_object_get(body, "idle_policy");
    enum acct_idle_policy ip;
    if (idle && !json_is_null(idle) &&
        (!json_is_string(idle) ||
         acct_idle_policy_from_name(json_string_value(idle), &ip) < 0)) {
        api_errorf(req, SH_EINVAL,
                   "idle_policy must be none, warn, cancel, preempt or null");
        return;
    }
    if (fields_check(body, allowed, &err) < 0 ||
        (json_object_get(body, "team") &&
         (get_name(body, "team", true, &team, &err) < 0 ||
          tenancy_project_set_team(d->tenancy, shoald_batch(d), name, team,
                                   &err) < 0)) ||
        (idle &&
         tenancy_project_set_idle_policy(d->tenancy, shoald_batch(d), name,
                                         json_string_value(idle), &err) < 0)) {
        api_reply_error(req, &err);
        return;
    }
    changed(d);
    api_reply_json(
        req, 200,
        project_view(d, req, tenancy_project_get(d->tenancy, name), true));
}

void api_projects_delete(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    const struct tenancy_project *p = path_project(d, req);
    if (!p)
        return;
    char name[JOB_IDENT_MAX + 1];
    snprintf(name, sizeof(name), "%s", p->name);
    if (tenancy_project_remove(d, name, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    changed(d);
    api_reply_json(req, 200,
                   json_pack("{s:s, s:b}", "name", name, "deleted", 1));
}

static void project_quota(struct shoald *d, struct api_req *req, bool replace)
{
    struct tenancy_quota q[TENANCY_QUOTAS_MAX];
    int n = 0;
    struct sh_error err;
    const struct tenancy_project *p = path_project(d, req);
    if (!p ||
        quota_request(req, replace, p->quotas, p->nquotas, q, &n, &err) < 0)
        return;
    char name[JOB_IDENT_MAX + 1];
    snprintf(name, sizeof(name), "%s", p->name);
    if (tenancy_project_set_quotas(d->tenancy, shoald_batch(d), name, q, n,
                                   &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    changed(d);
    api_reply_json(
        req, 200,
        project_view(d, req, tenancy_project_get(d->tenancy, name), true));
}

void api_projects_quota_put(struct shoald *d, struct api_req *req)
{
    project_quota(d, req, true);
}

void api_projects_quota_patch(struct shoald *d, struct api_req *req)
{
    project_quota(d, req, false);
}

void api_projects_members(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    const struct tenancy_project *p = path_project(d, req);
    if (!p)
        return;
    if (policy_can_view_project(d->tenancy, api_caller(req), p->name, &err) <
        0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 200,
                   json_pack("{s:s, s:o}", "project", p->name, "members",
                             members_view(d, p->name)));
}

void api_projects_member_set(struct shoald *d, struct api_req *req)
{
    static const char *const allowed[] = {"role", NULL};
    struct sh_error err;
    enum tenancy_role role;
    const char *project = api_param(req, 0), *user = api_param(req, 1);
    if (policy_can_manage_members(d->tenancy, api_caller(req), project, &err) <
        0) {
        api_reply_error(req, &err);
        return;
    }
    json_t *body = api_body(req);
    if (!body)
        return;
    if (fields_check(body, allowed, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    const char *r = json_string_value(json_object_get(body, "role"));
    if (!r || tenancy_role_from_name(r, &role) < 0 ||
        role == TENANCY_ROLE_NONE) {
        api_errorf(req, SH_EINVAL, "role must be admin, member or viewer");
        return;
    }
    if (!auth_user_get(d->auth, user)) {
        api_errorf(req, SH_ENOTFOUND, "user %.*s does not exist",
                   UTF8_CUT(user, 64));
        return;
    }
    enum tenancy_role old = tenancy_role(d->tenancy, project, user);
    if (tenancy_member_set(d->tenancy, shoald_batch(d), project, user, role,
                           &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    changed(d);
    api_reply_json(req, old == TENANCY_ROLE_NONE ? 201 : 200,
                   json_pack("{s:s, s:s, s:s}", "project", project, "user",
                             user, "role", tenancy_role_name(role)));
}

void api_projects_member_remove(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    const char *project = api_param(req, 0), *user = api_param(req, 1);
    if (policy_can_manage_members(d->tenancy, api_caller(req), project, &err) <
        0) {
        api_reply_error(req, &err);
        return;
    }
    if (tenancy_role(d->tenancy, project, user) == TENANCY_ROLE_NONE) {
        api_errorf(req, SH_ENOTFOUND,
                   "user %.*s is not a member of project "
                   "%.*s",
                   UTF8_CUT(user, 64), UTF8_CUT(project, 64));
        return;
    }
    const struct auth_user *u = auth_user_get(d->auth, user);
    /* A default project one cannot submit to is no default: clear it, so
     * the user's submissions fall back to the cluster's default. */
    if ((u && u->default_project && strcmp(u->default_project, project) == 0 &&
         auth_user_set_default_project(d->auth, shoald_batch(d), user, NULL,
                                       &err) < 0) ||
        tenancy_member_remove(d->tenancy, shoald_batch(d), project, user,
                              &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    changed(d);
    api_reply_json(req, 200,
                   json_pack("{s:s, s:s, s:b}", "project", project, "user",
                             user, "removed", 1));
}

/* ---- users ---- */

static const struct auth_user *path_user(struct shoald *d, struct api_req *req)
{
    const struct auth_user *u = auth_user_get(d->auth, api_param(req, 0));
    if (!u)
        api_errorf(req, SH_ENOTFOUND, "user %.*s does not exist",
                   UTF8_CUT(api_param(req, 0), 64));
    return u;
}

/* A user the caller may see (self or cluster admin), or NULL answered. */
static const struct auth_user *seen_user(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    if (policy_can_view_user(api_caller(req), api_param(req, 0), &err) < 0) {
        api_reply_error(req, &err);
        return NULL;
    }
    return path_user(d, req);
}

/* "expires_in_s" of a token request into an absolute expiry (0 = never). */
static int body_expiry(struct shoald *d, const json_t *body, int64_t *out,
                       struct sh_error *err)
{
    int64_t s = 0;
    bool present;
    *out = 0;
    if (get_int(body, "expires_in_s", 1, PARSE_DURATION_MAX, false, &s,
                &present, NULL, err) < 0)
        return -1;
    if (present)
        *out = shoald_now_ms(d) + s * 1000;
    return 0;
}

/* Check that user may get project as default: it exists and they may
 * submit there (or may be made a member). *add: make them a member. */
static int default_project_check(struct shoald *d, const char *user,
                                 const char *project, bool *add,
                                 struct sh_error *err)
{
    *add = false;
    if (!tenancy_project_exists(d->tenancy, project))
        return sh_errorf(err, SH_ENOTFOUND, "project %.*s does not exist",
                         UTF8_CUT(project, 64));
    enum tenancy_role r = tenancy_role(d->tenancy, project, user);
    if (r == TENANCY_ROLE_VIEWER)
        return sh_errorf(err, SH_ECONFLICT,
                         "%s is a viewer of project %s and could not submit "
                         "there; make them a member first",
                         user, project);
    *add = r == TENANCY_ROLE_NONE;
    return 0;
}

static json_t *token_view(const char *user, const char *token,
                          const struct auth_token_info *info)
{
    /* "o" steals the new value. */
    return json_pack("{s:s, s:s, s:s, s:o}", "user", user, "token", token,
                     "token_id", info ? info->id : "", "expires",
                     iso_or_null(info ? info->expires_ms : 0));
}

void api_users_list(struct shoald *d, struct api_req *req)
{
    /* Memberships by user in one pass over the projects. */
    json_t *by_user = json_object();
    for (const struct tenancy_project *p =
             tenancy_project_next(d->tenancy, NULL);
         p && by_user; p = tenancy_project_next(d->tenancy, p)) {
        for (const struct tenancy_member *m =
                 tenancy_member_next(d->tenancy, p->name, NULL);
             m; m = tenancy_member_next(d->tenancy, p->name, m)) {
            json_t *arr = json_object_get(by_user, m->user);
            if (!arr) {
                arr = json_array();
                json_object_set_new(by_user, m->user, arr);
            }
            json_array_append_new(arr, json_pack("{s:s, s:s}", "project",
                                                 p->name, "role",
                                                 tenancy_role_name(m->role)));
        }
    }
    json_t *arr = json_array();
    for (const struct auth_user *u = auth_user_next(d->auth, NULL); u && arr;
         u = auth_user_next(d->auth, u)) {
        json_t *projects = json_object_get(by_user, u->name);
        json_array_append_new(
            arr,
            user_view(d, u, projects ? json_incref(projects) : json_array()));
    }
    json_decref(by_user);
    api_reply_json(req, 200, json_pack("{s:o}", "users", arr)); /* steals */
}

void api_users_show(struct shoald *d, struct api_req *req)
{
    const struct auth_user *u = seen_user(d, req);
    if (u)
        api_reply_json(req, 200, user_view(d, u, NULL));
}

void api_users_create(struct shoald *d, struct api_req *req)
{
    static const char *const allowed[] = {"name", "admin", "default_project",
                                          "expires_in_s", NULL};
    const char *name = NULL, *project = NULL;
    bool admin = false, add = false;
    int64_t expires = 0, now = shoald_now_ms(d);
    char token[AUTH_TOKEN_LEN + 1];
    struct sh_error err;
    struct store_batch *b = shoald_batch(d);
    json_t *body = api_body(req);
    if (!body)
        return;
    if (fields_check(body, allowed, &err) < 0 ||
        get_name(body, "name", true, &name, &err) < 0 ||
        get_bool(body, "admin", &admin, &err) < 0 ||
        get_name(body, "default_project", false, &project, &err) < 0 ||
        body_expiry(d, body, &expires, &err) < 0)
        goto fail;
    if (auth_user_get(d->auth, name)) {
        sh_errorf(&err, SH_ECONFLICT, "user %s already exists", name);
        goto fail;
    }
    if (project && default_project_check(d, name, project, &add, &err) < 0)
        goto fail;
    /* Every user belongs to the cluster's default project while it
     * exists (see tenancy.h), and to their own default project. */
    if (auth_user_create(d->auth, b, name, admin, now, &err) < 0 ||
        (tenancy_project_exists(d->tenancy, TENANCY_DEFAULT_PROJECT) &&
         tenancy_member_set(d->tenancy, b, TENANCY_DEFAULT_PROJECT, name,
                            TENANCY_ROLE_MEMBER, &err) < 0) ||
        (project && add &&
         tenancy_member_set(d->tenancy, b, project, name, TENANCY_ROLE_MEMBER,
                            &err) < 0) ||
        (project &&
         auth_user_set_default_project(d->auth, b, name, project, &err) < 0) ||
        auth_token_issue(d->auth, b, AUTH_TOKEN_USER, name, now, expires, token,
                         &err) < 0)
        goto fail;
    changed(d);
    json_t *o = user_view(d, auth_user_get(d->auth, name), NULL);
    json_t *t = token_view(name, token, auth_token_info_of(d->auth, token));
    if (o && t)
        json_object_update(o, t);
    json_decref(t);
    api_reply_json(req, 201, o);
    return;
fail:
    api_reply_error(req, &err);
}

void api_users_update(struct shoald *d, struct api_req *req)
{
    static const char *const allowed[] = {"admin", "default_project", NULL};
    struct sh_error err;
    bool admin, add = false;
    const char *project = NULL;
    const struct auth_user *u = path_user(d, req);
    if (!u)
        return;
    char name[JOB_IDENT_MAX + 1];
    snprintf(name, sizeof(name), "%s", u->name);
    admin = u->admin;
    json_t *body = api_body(req);
    if (!body)
        return;
    const json_t *dp = json_object_get(body, "default_project");
    bool clear_dp = dp && json_is_null(dp);
    if (fields_check(body, allowed, &err) < 0 ||
        get_bool(body, "admin", &admin, &err) < 0 ||
        (!clear_dp &&
         get_name(body, "default_project", false, &project, &err) < 0))
        goto fail;
    if (project && default_project_check(d, name, project, &add, &err) < 0)
        goto fail;
    if (u->admin && !admin &&
        !auth_admin_remains(d->auth, shoald_now_ms(d), name, NULL)) {
        sh_errorf(&err, SH_ECONFLICT,
                  "%s is the last cluster admin with a valid token; make "
                  "another user an admin first",
                  name);
        goto fail;
    }
    struct store_batch *b = shoald_batch(d);
    if (auth_user_set_admin(d->auth, b, name, admin, &err) < 0 ||
        (add && tenancy_member_set(d->tenancy, b, project, name,
                                   TENANCY_ROLE_MEMBER, &err) < 0) ||
        ((project || clear_dp) &&
         auth_user_set_default_project(d->auth, b, name, project, &err) < 0))
        goto fail;
    changed(d);
    api_reply_json(req, 200, user_view(d, auth_user_get(d->auth, name), NULL));
    return;
fail:
    api_reply_error(req, &err);
}

void api_users_delete(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    const struct auth_user *u = path_user(d, req);
    if (!u)
        return;
    char name[JOB_IDENT_MAX + 1];
    snprintf(name, sizeof(name), "%s", u->name);
    /* After this the caller's name (if it was this user) dangles: the
     * answer below uses only the copy. */
    if (tenancy_user_remove(d, name, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    changed(d);
    api_reply_json(req, 200,
                   json_pack("{s:s, s:b}", "name", name, "deleted", 1));
}

void api_users_tokens_list(struct shoald *d, struct api_req *req)
{
    const struct auth_user *u = seen_user(d, req);
    if (!u)
        return;
    int64_t now = shoald_now_ms(d);
    json_t *arr = json_array();
    for (const struct auth_token_info *t =
             auth_token_next(d->auth, AUTH_TOKEN_USER, u->name, NULL);
         t && arr; t = auth_token_next(d->auth, AUTH_TOKEN_USER, u->name, t))
        /* "o" steals the new values. */
        json_array_append_new(
            arr, json_pack("{s:s, s:o, s:o, s:b}", "id", t->id, "created",
                           iso_or_null(t->created_ms), "expires",
                           iso_or_null(t->expires_ms), "expired",
                           t->expires_ms && t->expires_ms <= now));
    api_reply_json(req, 200,
                   json_pack("{s:s, s:o}", "user", u->name, "tokens",
                             arr)); /* steals arr */
}

void api_users_tokens_issue(struct shoald *d, struct api_req *req)
{
    static const char *const allowed[] = {"expires_in_s", NULL};
    struct sh_error err;
    int64_t expires = 0;
    char token[AUTH_TOKEN_LEN + 1];
    bool owned;
    const struct auth_user *u = path_user(d, req);
    if (!u)
        return;
    json_t *body = body_or_empty(req, &owned);
    if (!body)
        return;
    int rc = fields_check(body, allowed, &err) < 0 ||
                     body_expiry(d, body, &expires, &err) < 0 ||
                     auth_token_issue(d->auth, shoald_batch(d), AUTH_TOKEN_USER,
                                      u->name, shoald_now_ms(d), expires, token,
                                      &err) < 0
                 ? -1
                 : 0;
    if (owned)
        json_decref(body);
    if (rc < 0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(
        req, 201,
        token_view(u->name, token, auth_token_info_of(d->auth, token)));
}

void api_users_tokens_revoke_all(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    const struct auth_user *u = path_user(d, req);
    if (!u)
        return;
    if (policy_can_revoke_tokens(api_caller(req), u->name, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    char name[JOB_IDENT_MAX + 1];
    snprintf(name, sizeof(name), "%s", u->name);
    if (u->admin &&
        !auth_admin_remains(d->auth, shoald_now_ms(d), name, NULL)) {
        api_errorf(req, SH_ECONFLICT,
                   "%s is the last cluster admin with a valid token; revoking "
                   "its tokens would lock everyone out",
                   name);
        return;
    }
    int n =
        auth_token_revoke_all(d->auth, shoald_batch(d), AUTH_TOKEN_USER, name);
    if (n < 0) {
        api_errorf(req, SH_EINTERNAL, "out of memory");
        return;
    }
    api_reply_json(req, 200,
                   json_pack("{s:s, s:i}", "user", name, "revoked", n));
}

void api_users_tokens_revoke(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    const struct auth_user *u = path_user(d, req);
    const char *id = api_param(req, 1);
    if (!u)
        return;
    if (policy_can_revoke_tokens(api_caller(req), u->name, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    char name[JOB_IDENT_MAX + 1];
    snprintf(name, sizeof(name), "%s", u->name);
    if (u->admin && !auth_admin_remains(d->auth, shoald_now_ms(d), name, id)) {
        api_errorf(req, SH_ECONFLICT,
                   "token %.*s is the last valid token of a cluster admin; "
                   "revoking it would lock everyone out",
                   UTF8_CUT(id, 16));
        return;
    }
    if (auth_token_revoke(d->auth, shoald_batch(d), AUTH_TOKEN_USER, name, id,
                          &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(
        req, 200,
        json_pack("{s:s, s:s, s:i}", "user", name, "id", id, "revoked", 1));
}

void api_users_limits_show(struct shoald *d, struct api_req *req)
{
    const struct auth_user *u = seen_user(d, req);
    if (u)
        api_reply_json(req, 200,
                       json_pack("{s:s, s:o}", "user", u->name, "limits",
                                 limits_view(&u->limits)));
}

/* One limit field: absent keeps cur (PATCH) or clears it (PUT); null and 0
 * clear it. */
static int limit_field(const json_t *body, const char *key, int64_t max,
                       bool replace, int64_t *cur, struct sh_error *err)
{
    int64_t v = 0;
    bool present, is_null;
    if (get_int(body, key, 0, max, true, &v, &present, &is_null, err) < 0)
        return -1;
    if (present)
        *cur = is_null ? 0 : v;
    else if (replace)
        *cur = 0;
    return 0;
}

static void users_limits(struct shoald *d, struct api_req *req, bool replace)
{
    static const char *const allowed[] = {"max_gpus", "max_jobs", "max_time_s",
                                          "max_pending", NULL};
    struct sh_error err;
    const struct auth_user *u = path_user(d, req);
    if (!u)
        return;
    json_t *body = api_body(req);
    if (!body)
        return;
    int64_t gpus = u->limits.max_gpus, jobs = u->limits.max_jobs,
            time_s = u->limits.max_time_s, pending = u->limits.max_pending;
    if (fields_check(body, allowed, &err) < 0 ||
        limit_field(body, "max_gpus", AUTH_MAX_GPUS_MAX, replace, &gpus, &err) <
            0 ||
        limit_field(body, "max_jobs", AUTH_MAX_JOBS_MAX, replace, &jobs, &err) <
            0 ||
        limit_field(body, "max_time_s", PARSE_DURATION_MAX, replace, &time_s,
                    &err) < 0 ||
        limit_field(body, "max_pending", AUTH_MAX_PENDING_MAX, replace,
                    &pending, &err) < 0)
        goto fail;
    struct auth_user_limits lim = {.max_gpus = (int)gpus,
                                   .max_jobs = (int)jobs,
                                   .max_time_s = time_s,
                                   .max_pending = (int)pending};
    char name[JOB_IDENT_MAX + 1];
    snprintf(name, sizeof(name), "%s", u->name);
    if (auth_user_set_limits(d->auth, shoald_batch(d), name, &lim, &err) < 0)
        goto fail;
    changed(d);
    u = auth_user_get(d->auth, name);
    api_reply_json(req, 200,
                   json_pack("{s:s, s:o}", "user", name, "limits",
                             limits_view(&u->limits)));
    return;
fail:
    api_reply_error(req, &err);
}

void api_users_limits_put(struct shoald *d, struct api_req *req)
{
    users_limits(d, req, true);
}

void api_users_limits_patch(struct shoald *d, struct api_req *req)
{
    users_limits(d, req, false);
}
