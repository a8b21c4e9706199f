/* SPDX-License-Identifier: Apache-2.0 */
/* The volume table (see volumes.h). A jansson object keyed by name holds
 * each volume's canonical record, the same JSON the store keeps. */
#include "shoald/volumes.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/model/volume.h"
#include "shoald/secrets.h"
#include "store/store.h"

struct volumes {
    json_t *table; /* name -> record */
};

struct volumes *volumes_create(struct sh_error *err)
{
    struct volumes *v = calloc(1, sizeof(*v));
    if (v)
        v->table = json_object();
    if (!v || !v->table) {
        free(v);
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    return v;
}

void volumes_destroy(struct volumes *v)
{
    if (v) {
        json_decref(v->table);
        free(v);
    }
}

static int load_one(const char *key, const json_t *rec, void *arg,
                    struct sh_error *err)
{
    json_t *table = arg;
    if (volume_record_check(rec, err) < 0 || strcmp(key, volume_name(rec)) != 0)
        return sh_error_prefix(err, "stored volume '%s': ", key);
    if (json_object_set(table, key, (json_t *)rec) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

int volumes_load(struct volumes *v, struct store *st, struct sh_error *err)
{
    json_t *fresh = json_object();
    if (!fresh)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    if (store_load_objects(st, "volume", load_one, fresh, err) < 0) {
        json_decref(fresh);
        return -1;
    }
    json_decref(v->table);
    v->table = fresh;
    return 0;
}

int volumes_count(const struct volumes *v)
{
    return (int)json_object_size(v->table);
}

const json_t *volumes_get(const struct volumes *v, const char *name)
{
    return json_object_get(v->table, name);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *volumes_list(const struct volumes *v)
{
    size_t n = json_object_size(v->table);
    const char **names = calloc(n ? n : 1, sizeof(*names));
    json_t *out = json_array();
    if (!names || !out) {
        free(names);
        json_decref(out);
        return NULL;
    }
    size_t i = 0;
    const char *key;
    json_t *rec;
    json_object_foreach (v->table, key, rec)
        names[i++] = key;
    qsort(names, n, sizeof(*names), name_cmp);
    for (i = 0; i < n; i++)
        json_array_append(out, json_object_get(v->table, names[i]));
    free(names);
    return out;
}

int volumes_add(struct volumes *v, struct store_batch *batch, json_t *rec,
                struct sh_error *err)
{
    const char *name = volume_name(rec);
    if (json_object_get(v->table, name))
        return sh_errorf(err, SH_ECONFLICT, "volume %s already exists", name);
    if (json_object_size(v->table) >= VOLUMES_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "the cluster has %d volumes, the limit", VOLUMES_MAX);
    if (store_batch_put(batch, "volume", name, rec) < 0 ||
        json_object_set(v->table, name, rec) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

int volumes_delete(struct volumes *v, struct store_batch *batch,
                   const char *name, struct sh_error *err)
{
    if (!json_object_get(v->table, name))
        return sh_errorf(err, SH_ENOTFOUND, "volume %s does not exist", name);
    if (store_batch_del(batch, "volume", name) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    json_object_del(v->table, name);
    return 0;
}

int volumes_owned_by(const struct volumes *v, const char *project,
                     const char **first)
{
    int n = 0;
    const char *key;
    json_t *rec;
    json_object_foreach (v->table, key, rec) {
        const char *owner = volume_project(rec);
        if (owner && strcmp(owner, project) == 0 && n++ == 0 && first)
            *first = key;
    }
    return n;
}

int volumes_check_job(const struct volumes *v, const struct job_spec *spec,
                      struct sh_error *err)
{
    for (int i = 0; i < spec->nvolumes; i++) {
        const char *name = spec->volumes[i].name;
        const json_t *rec = json_object_get(v->table, name);
        if (!rec)
            return sh_errorf(err, SH_EINVAL,
                             "volume %s does not exist (shoal volume list "
                             "shows the volumes you may use)",
                             name);
        const char *owner = volume_project(rec);
        if (owner && strcmp(owner, spec->project) != 0)
            return sh_errorf(err, SH_EFORBIDDEN,
                             "volume %s belongs to project %s; jobs of "
                             "project %s may not mount it",
                             name, owner, spec->project);
    }
    return 0;
}

const char *volumes_using_secret(const struct volumes *v, const char *project,
                                 const char *secret)
{
    const char *key;
    json_t *rec;
    json_object_foreach (v->table, key, rec) {
        const char *s = volume_secret(rec);
        const char *p = volume_project(rec);
        /* A cluster-wide secret: any volume naming it (one of a project
         * without its own of that name uses it). */
        if (s && strcmp(s, secret) == 0 &&
            (!project || (p && strcmp(p, project) == 0)))
            return key;
    }
    return NULL;
}

static json_t *mount_error(const struct job_volume *jv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static json_t *mount_error(const struct job_volume *jv, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return json_pack("{s:s, s:s, s:s}", "name", jv->name, "path", jv->path,
                     "error", msg);
}

/* One node-level mount per volume version: "<name>.<created_ms>". */
static void set_stage(const json_t *rec, json_t *m)
{
    char stage[JOB_IDENT_MAX + 32];
    snprintf(stage, sizeof(stage), "%s.%lld", volume_name(rec),
             (long long)json_integer_value(json_object_get(rec, "created_ms")));
    json_object_set_new(m, "stage", json_string(stage));
}

static json_t *s3_mount(const struct secrets *secrets,
                        const struct job_volume *jv, const json_t *rec,
                        json_t *m)
{
    const json_t *s3 = json_object_get(rec, "s3");
    struct sh_error err;
    const json_t *sec =
        secrets_resolve(secrets, volume_project(rec), volume_secret(rec));
    json_t *creds = secrets_open(
        secrets, json_string_value(json_object_get(sec, "project")),
        volume_secret(rec), &err);
    const char *ak = json_string_value(json_object_get(creds, "access_key"));
    const char *sk = json_string_value(json_object_get(creds, "secret_key"));
    if (!creds || !ak || !sk) {
        json_decref(creds);
        json_decref(m);
        return mount_error(jv, "volume %s: %s", jv->name,
                           creds ? "its secret lacks access_key or secret_key"
                                 : err.msg);
    }
    set_stage(rec, m);
    static const char *const copy[] = {"endpoint", "bucket", "prefix",
                                       "region"};
    for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++) {
        json_t *f = json_object_get(s3, copy[i]);
        if (f)
            json_object_set(m, copy[i], f);
    }
    json_object_set_new(
        m, "cache", json_boolean(json_is_true(json_object_get(s3, "cache"))));
    json_object_set_new(m, "access_key", json_string(ak));
    json_object_set_new(m, "secret_key", json_string(sk));
    json_decref(creds);
    return m;
}

/* The plugin's socket, the volume's id and context, as csi.proto names
 * them (the agent's csi.c makes the calls). */
static void csi_mount_entry(const json_t *rec, json_t *m)
{
    const json_t *csi = json_object_get(rec, "csi");
    set_stage(rec, m);
    const char *key;
    json_t *v;
    json_object_foreach ((json_t *)csi, key, v)
        json_object_set(m, key, v);
}

static void nfs_mount_entry(const json_t *rec, json_t *m)
{
    const json_t *nfs = json_object_get(rec, "nfs");
    set_stage(rec, m);
    json_object_set(m, "server", json_object_get(nfs, "server"));
    json_object_set(m, "export", json_object_get(nfs, "export"));
    const json_t *o = json_object_get(nfs, "options");
    json_object_set_new(m, "options",
                        o ? json_incref((json_t *)o) : json_string("vers=4.1"));
}

json_t *volumes_mounts(const struct volumes *v, const struct secrets *secrets,
                       const struct job_spec *spec)
{
    json_t *out = json_array();
    for (int i = 0; out && i < spec->nvolumes; i++) {
        const struct job_volume *jv = &spec->volumes[i];
        const json_t *rec = json_object_get(v->table, jv->name);
        if (!rec) {
            json_array_append_new(
                out, mount_error(jv, "volume %s no longer exists", jv->name));
            continue;
        }
        enum volume_kind kind = volume_kind(rec);
        json_t *m = json_pack("{s:s, s:s, s:s, s:b}", "name", jv->name, "kind",
                              volume_kind_name(kind), "path", jv->path,
                              "readonly", jv->readonly || volume_readonly(rec));
        if (m && kind == VOLUME_HOST)
            json_object_set(
                m, "source",
                json_object_get(json_object_get(rec, "host"), "path"));
        else if (m && kind == VOLUME_S3)
            m = s3_mount(secrets, jv, rec, m);
        else if (m && kind == VOLUME_NFS)
            nfs_mount_entry(rec, m);
        else if (m && kind == VOLUME_CSI)
            csi_mount_entry(rec, m);
        json_array_append_new(out, m);
    }
    return out;
}
