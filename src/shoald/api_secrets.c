/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/secrets: the REST face of secrets.c. Values go in and never come
 * out: answers carry a secret's name, project and key names only.
 *
 * Who may do what, as for volumes: a project's admins manage its secrets,
 * cluster admins any and the cluster-wide ones; members of the project see
 * that they exist. A secret a volume uses cannot be deleted.
 */
#include <stdio.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/model/volume.h"
#include "lib/util/utf8.h"
#include "shoald/api_handlers.h"
#include "shoald/secrets.h"
#include "shoald/tenancy.h"
#include "shoald/volumes.h"

static const char *project_of(const json_t *rec)
{
    return json_string_value(json_object_get(rec, "project"));
}

static bool may_see(struct shoald *d, const struct api_caller *c,
                    const char *project)
{
    return c->admin || (project && tenancy_role(d->tenancy, project, c->user) >=
                                       TENANCY_ROLE_VIEWER);
}

static int may_manage(struct shoald *d, const struct api_caller *c,
                      const char *project, struct sh_error *err)
{
    if (c->admin)
        return 0;
    if (!project)
        return sh_errorf(err, SH_EFORBIDDEN,
                         "cluster-wide secrets need a cluster admin");
    if (tenancy_role(d->tenancy, project, c->user) < TENANCY_ROLE_ADMIN)
        return sh_errorf(err, SH_EFORBIDDEN,
                         "only project %s's admins or a cluster admin may "
                         "manage its secrets",
                         project);
    return 0;
}

/* The secret of the path's name the caller may see: in ?project=P (empty:
 * the cluster-wide one), else the only one of that name they see (names
 * are per project, so several projects may each have one: 409). */
static const json_t *path_secret(struct shoald *d, struct api_req *req)
{
    const char *name = api_param(req, 0);
    const char *project = api_query(req, "project");
    const struct api_caller *c = api_caller(req);
    if (project) {
        const json_t *rec =
            secrets_get(d->secrets, project[0] ? project : NULL, name);
        if (rec && may_see(d, c, project_of(rec)))
            return rec;
        api_errorf(req, SH_ENOTFOUND, "secret %.*s does not exist",
                   UTF8_CUT(name, 64));
        return NULL;
    }
    json_t *all = secrets_list(d->secrets);
    const json_t *found = NULL;
    int n = 0;
    size_t i;
    json_t *rec;
    json_array_foreach (all, i, rec) {
        const char *p = project_of(rec);
        if (strcmp(json_string_value(json_object_get(rec, "name")), name) ||
            !may_see(d, c, p))
            continue;
        if (!n++)
            found = secrets_get(d->secrets, p, name);
    }
    json_decref(all);
    if (n == 1)
        return found;
    if (n == 0)
        api_errorf(req, SH_ENOTFOUND, "secret %.*s does not exist",
                   UTF8_CUT(name, 64));
    else
        api_errorf(req, SH_ECONFLICT,
                   "%d secrets named %.*s are yours to see, in different "
                   "projects: name one (?project=P, or ?project= for the "
                   "cluster-wide one)",
                   n, UTF8_CUT(name, 64));
    return NULL;
}

/* The record without its sealed values. */
static json_t *view(const json_t *rec)
{
    json_t *v = json_pack("{s:O, s:O, s:O, s:O, s:O}", "name",
                          json_object_get(rec, "name"), "project",
                          json_object_get(rec, "project"), "keys",
                          json_object_get(rec, "keys"), "created_ms",
                          json_object_get(rec, "created_ms"), "created_by",
                          json_object_get(rec, "created_by"));
    return v;
}

void api_secrets_list(struct shoald *d, struct api_req *req)
{
    json_t *all = secrets_list(d->secrets);
    json_t *out = json_array();
    size_t i;
    json_t *rec;
    json_array_foreach (all, i, rec) {
        if (may_see(d, api_caller(req), project_of(rec)))
            json_array_append_new(out, view(rec));
    }
    json_decref(all);
    api_reply_json(req, 200, json_pack("{s:o}", "secrets", out));
}

void api_secrets_show(struct shoald *d, struct api_req *req)
{
    const json_t *rec = path_secret(d, req);
    if (rec)
        api_reply_json(req, 200, view(rec));
}

void api_secrets_create(struct shoald *d, struct api_req *req)
{
    const struct api_caller *c = api_caller(req);
    struct sh_error err;
    json_t *body = api_body(req);
    if (!body)
        return;
    const char *key;
    json_t *v;
    json_object_foreach (body, key, v) {
        if (strcmp(key, "name") && strcmp(key, "project") &&
            strcmp(key, "data"))
            return (void)api_errorf(req, SH_EINVAL,
                                    "unknown field '%.*s' (known: name, "
                                    "project, data)",
                                    UTF8_CUT(key, 64));
    }
    const char *name = json_string_value(json_object_get(body, "name"));
    const json_t *pj = json_object_get(body, "project");
    if (pj && !json_is_null(pj) && !json_is_string(pj))
        return (void)api_errorf(req, SH_EINVAL,
                                "project must be a project name or null");
    const char *project = json_string_value(pj);
    if (may_manage(d, c, project, &err) < 0 ||
        (project && !tenancy_project_exists(d->tenancy, project) &&
         sh_errorf(&err, SH_EINVAL, "project %s does not exist", project)) ||
        secrets_add(d->secrets, shoald_batch(d), name, project,
                    json_object_get(body, "data"), c->user, shoald_now_ms(d),
                    &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 201, view(secrets_get(d->secrets, project, name)));
}

void api_secrets_delete(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    const json_t *rec = path_secret(d, req);
    if (!rec)
        return;
    char name[JOB_IDENT_MAX + 1];
    snprintf(name, sizeof(name), "%s",
             json_string_value(json_object_get(rec, "name")));
    char project[JOB_IDENT_MAX + 1] = "";
    if (project_of(rec))
        snprintf(project, sizeof(project), "%s", project_of(rec));
    const char *p = project[0] ? project : NULL;
    const char *user = volumes_using_secret(d->volumes, p, name);
    if (may_manage(d, api_caller(req), project_of(rec), &err) < 0 ||
        (user && sh_errorf(&err, SH_ECONFLICT,
                           "secret %s is used by volume %s; delete the volume "
                           "first",
                           name, user)) ||
        secrets_delete(d->secrets, shoald_batch(d), p, name, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 200,
                   json_pack("{s:s, s:b}", "name", name, "deleted", 1));
}
