/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/volumes: the REST face of volumes.c.
 *
 * Who may do what. A volume is seen by cluster admins, and by the members
 * (any role) of its project; a cluster-wide volume by everyone. A project's
 * admins create and delete its volumes, cluster admins any; a host volume
 * (a path on every node) and a cluster-wide volume need a cluster admin.
 * A volume that pending or running jobs use cannot be deleted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/csi/csi.h"
#include "lib/model/job.h"
#include "lib/model/volume.h"
#include "lib/util/log.h"
#include "lib/util/utf8.h"
#include "shoald/api_handlers.h"
#include "shoald/jobtab.h"
#include "shoald/secrets.h"
#include "shoald/tenancy.h"
#include "shoald/volumes.h"

static bool may_see(struct shoald *d, const struct api_caller *c,
                    const json_t *rec)
{
    const char *project = volume_project(rec);
    return c->admin || !project ||
           tenancy_role(d->tenancy, project, c->user) >= TENANCY_ROLE_VIEWER;
}

/* 0, or SH_EFORBIDDEN saying who may. */
static int may_manage(struct shoald *d, const struct api_caller *c,
                      const json_t *rec, struct sh_error *err)
{
    const char *project = volume_project(rec);
    if (c->admin)
        return 0;
    if (volume_kind(rec) == VOLUME_HOST)
        return sh_errorf(err, SH_EFORBIDDEN,
                         "host volumes expose a node's own files: only a "
                         "cluster admin may create or delete them");
    if (volume_kind(rec) == VOLUME_CSI)
        return sh_errorf(err, SH_EFORBIDDEN,
                         "csi volumes make the nodes' agents call a plugin "
                         "socket: only a cluster admin may create or delete "
                         "them");
    if (!project)
        return sh_errorf(err, SH_EFORBIDDEN,
                         "cluster-wide volumes need a cluster admin");
    if (tenancy_role(d->tenancy, project, c->user) < TENANCY_ROLE_ADMIN)
        return sh_errorf(err, SH_EFORBIDDEN,
                         "only project %s's admins or a cluster admin may "
                         "manage its volumes",
                         project);
    return 0;
}

/* Pending and running jobs that mount the volume; *first gets one id. */
static int active_users(struct shoald *d, const char *name, uint64_t *first)
{
    int n = 0;
    for (const struct job *j = jobtab_next(d->jobs, NULL); j;
         j = jobtab_next(d->jobs, j)) {
        if (job_state_is_terminal(j->state))
            continue;
        for (int i = 0; i < j->spec.nvolumes; i++) {
            if (strcmp(j->spec.volumes[i].name, name) == 0) {
                if (n++ == 0)
                    *first = j->id;
                break;
            }
        }
    }
    return n;
}

static json_t *view(struct shoald *d, const json_t *rec)
{
    uint64_t first = 0;
    json_t *v = json_deep_copy(rec);
    if (v)
        json_object_set_new(
            v, "active_jobs",
            json_integer(active_users(d, volume_name(rec), &first)));
    return v;
}

/* The volume named in the path, if the caller may see it (else 404, so
 * names of other projects' volumes do not leak). */
static const json_t *path_volume(struct shoald *d, struct api_req *req)
{
    const json_t *rec = volumes_get(d->volumes, api_param(req, 0));
    if (!rec || !may_see(d, api_caller(req), rec)) {
        api_errorf(req, SH_ENOTFOUND, "volume %.*s does not exist",
                   UTF8_CUT(api_param(req, 0), 64));
        return NULL;
    }
    return rec;
}

void api_volumes_list(struct shoald *d, struct api_req *req)
{
    const char *project = api_query(req, "project");
    json_t *all = volumes_list(d->volumes);
    json_t *out = json_array();
    size_t i;
    json_t *rec;
    json_array_foreach (all, i, rec) {
        const char *owner = volume_project(rec);
        if (!may_see(d, api_caller(req), rec) ||
            (project && (!owner || strcmp(owner, project) != 0)))
            continue;
        json_array_append_new(out, view(d, rec));
    }
    json_decref(all);
    api_reply_json(req, 200, json_pack("{s:o}", "volumes", out));
}

void api_volumes_show(struct shoald *d, struct api_req *req)
{
    const json_t *rec = path_volume(d, req);
    if (rec)
        api_reply_json(req, 200, view(d, rec));
}

/* An s3 volume's secret: it exists, holds the credentials, and belongs to
 * the volume's project (a cluster-wide one: for cluster admins only). */
static int check_secret(struct shoald *d, const struct api_caller *c,
                        const json_t *rec, struct sh_error *err)
{
    const char *name = volume_secret(rec);
    if (!name)
        return 0;
    const char *project = volume_project(rec);
    const json_t *sec = secrets_resolve(d->secrets, project, name);
    const char *owner = json_string_value(json_object_get(sec, "project"));
    if (!sec ||
        (owner && !c->admin &&
         tenancy_role(d->tenancy, owner, c->user) < TENANCY_ROLE_VIEWER))
        return sh_errorf(err, SH_EINVAL,
                         "secret %s does not exist (shoal secret create)",
                         name);
    if (owner ? !project || strcmp(owner, project) != 0 : !c->admin)
        return sh_errorf(err, SH_EFORBIDDEN,
                         "secret %s belongs to %s%s; volume %s belongs to "
                         "%s%s",
                         name, owner ? "project " : "the whole cluster",
                         owner ? owner : "", volume_name(rec),
                         project ? "project " : "the whole cluster",
                         project ? project : "");
    bool ak = false, sk = false;
    size_t i;
    json_t *k;
    json_array_foreach (json_object_get(sec, "keys"), i, k) {
        ak = ak || strcmp(json_string_value(k), "access_key") == 0;
        sk = sk || strcmp(json_string_value(k), "secret_key") == 0;
    }
    if (!ak || !sk)
        return sh_errorf(err, SH_EINVAL,
                         "secret %s must hold access_key and secret_key for "
                         "an s3 volume",
                         name);
    return 0;
}

/* A CSI volume with a controller plugin: the plugin makes it (named
 * "shoal-<volume>", so a retry after a failed commit finds the same one)
 * and gives its id and context, which the record keeps. Called last, once
 * everything else is checked. */
static int csi_provision(json_t *rec, struct sh_error *err)
{
    json_t *csi = json_object_get(rec, "csi");
    const json_t *ctrl = json_object_get(csi, "controller");
    if (!ctrl)
        return 0;
    char name[JOB_IDENT_MAX + 16], why[700];
    snprintf(name, sizeof(name), "shoal-%s", volume_name(rec));
    char *id = NULL;
    json_t *context = NULL;
    if (csi_create_volume(
            json_string_value(json_object_get(ctrl, "socket")), name,
            json_integer_value(json_object_get(ctrl, "capacity")),
            volume_readonly(rec), json_object_get(ctrl, "parameters"), &id,
            &context, why, sizeof(why)) < 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "%s", why);
    json_object_set_new(csi, "volume_id", json_string(id));
    json_t *attrs = json_object_get(csi, "attributes");
    if (!attrs) {
        attrs = json_object();
        json_object_set_new(csi, "attributes", attrs);
    }
    json_object_update(attrs, context);
    json_decref(context);
    free(id);
    return 0;
}

/* Undo csi_provision (the volume was not kept after all). */
static void csi_unprovision(const json_t *rec)
{
    const json_t *csi = json_object_get(rec, "csi");
    const json_t *ctrl = json_object_get(csi, "controller");
    const char *id = json_string_value(json_object_get(csi, "volume_id"));
    char why[700];
    if (ctrl && id &&
        csi_delete_volume(json_string_value(json_object_get(ctrl, "socket")),
                          id, why, sizeof(why)) < 0)
        sh_log(LOG_WARNING, "volumes", "%s", why);
}

void api_volumes_create(struct shoald *d, struct api_req *req)
{
    const struct api_caller *c = api_caller(req);
    struct sh_error err;
    json_t *body = api_body(req);
    if (!body)
        return;
    json_t *rec = volume_from_request(body, c->user, shoald_now_ms(d), &err);
    const char *project = rec ? volume_project(rec) : NULL;
    if (!rec || may_manage(d, c, rec, &err) < 0 ||
        (project && !tenancy_project_exists(d->tenancy, project) &&
         sh_errorf(&err, SH_EINVAL, "project %s does not exist", project)) ||
        check_secret(d, c, rec, &err) < 0 ||
        (volumes_get(d->volumes, volume_name(rec)) &&
         sh_errorf(&err, SH_ECONFLICT, "volume %s already exists",
                   volume_name(rec))) ||
        csi_provision(rec, &err) < 0) {
        json_decref(rec);
        api_reply_error(req, &err);
        return;
    }
    if (volumes_add(d->volumes, shoald_batch(d), rec, &err) < 0) {
        csi_unprovision(rec);
        json_decref(rec);
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 201, view(d, rec));
    json_decref(rec);
}

/* Before forgetting a CSI volume its controller plugin made: DeleteVolume.
 * Refused by the plugin, the volume stays (and says why). */
static int csi_deprovision(const json_t *rec, struct sh_error *err)
{
    const json_t *csi = json_object_get(rec, "csi");
    const json_t *ctrl = json_object_get(csi, "controller");
    char why[700];
    if (ctrl &&
        csi_delete_volume(json_string_value(json_object_get(ctrl, "socket")),
                          json_string_value(json_object_get(csi, "volume_id")),
                          why, sizeof(why)) < 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "%s; the volume is kept", why);
    return 0;
}

void api_volumes_delete(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    const json_t *rec = path_volume(d, req);
    if (!rec)
        return;
    char name[JOB_IDENT_MAX + 1];
    snprintf(name, sizeof(name), "%s", volume_name(rec));
    uint64_t first = 0;
    int n = active_users(d, name, &first);
    if (may_manage(d, api_caller(req), rec, &err) < 0 ||
        (n > 0 && sh_errorf(&err, SH_ECONFLICT,
                            "volume %s is used by %d pending or running "
                            "job(s) (e.g. job %llu); wait for them to end or "
                            "cancel them first",
                            name, n, (unsigned long long)first)) ||
        csi_deprovision(rec, &err) < 0 ||
        volumes_delete(d->volumes, shoald_batch(d), name, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 200,
                   json_pack("{s:s, s:b}", "name", name, "deleted", 1));
}
