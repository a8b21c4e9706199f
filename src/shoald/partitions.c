/* SPDX-License-Identifier: Apache-2.0 */
/* The partition and QOS tables and their rules for jobs (partitions.h).
 * A jansson object per kind, keyed by name, holds each canonical record,
 * the same JSON the store keeps. */
#include "shoald/partitions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/model/job_place.h"
#include "lib/model/partition.h"
#include "lib/util/parse.h"
#include "lib/util/strbuf.h"
#include "lib/util/utf8.h"
#include "shoald/jobtab.h"
#include "store/store.h"

struct partitions {
    json_t *table[2]; /* name -> record, per kind */
};

static const char *const kind_name[] = {"partition", "qos"};

struct partitions *partitions_create(struct sh_error *err)
{
    struct partitions *p = calloc(1, sizeof(*p));
    if (p) {
        p->table[0] = json_object();
        p->table[1] = json_object();
    }
    if (!p || !p->table[0] || !p->table[1]) {
        partitions_destroy(p);
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    return p;
}

void partitions_destroy(struct partitions *p)
{
    if (p) {
        json_decref(p->table[0]);
        json_decref(p->table[1]);
        free(p);
    }
}

struct load_ctx {
    json_t *table;
    enum partitions_kind kind;
};

static int load_one(const char *key, const json_t *rec, void *arg,
                    struct sh_error *err)
{
    struct load_ctx *c = arg;
    int rc = c->kind == PARTITIONS_QOS ? qos_record_check(rec, err)
                                       : partition_record_check(rec, err);
    const char *name = json_string_value(json_object_get(rec, "name"));
    if (rc < 0 || !name || strcmp(key, name) != 0)
        return sh_error_prefix(err, "stored %s '%s': ", kind_name[c->kind],
                               key);
    if (json_object_set(c->table, key, (json_t *)rec) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

int partitions_load(struct partitions *p, struct store *st,
                    struct sh_error *err)
{
    json_t *fresh[2] = {json_object(), json_object()};
    for (int k = 0; k < 2; k++) {
        struct load_ctx c = {fresh[k], (enum partitions_kind)k};
        if (!fresh[k] ||
            store_load_objects(st, kind_name[k], load_one, &c, err) < 0) {
            json_decref(fresh[0]);
            json_decref(fresh[1]);
            return fresh[k] ? -1
                            : sh_errorf(err, SH_EINTERNAL, "out of memory");
        }
    }
    for (int k = 0; k < 2; k++) {
        json_decref(p->table[k]);
        p->table[k] = fresh[k];
    }
    return 0;
}

const json_t *partitions_get(const struct partitions *p,
                             enum partitions_kind kind, const char *name)
{
    return json_object_get(p->table[kind], name);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *partitions_list(const struct partitions *p, enum partitions_kind kind)
{
    size_t n = json_object_size(p->table[kind]);
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
    json_object_foreach (p->table[kind], key, rec)
        names[i++] = key;
    qsort(names, n, sizeof(*names), name_cmp);
    for (i = 0; i < n; i++)
        json_array_append(out, json_object_get(p->table[kind], names[i]));
    free(names);
    return out;
}

/* The default partition's name, or NULL. */
static const char *default_partition(const struct partitions *p)
{
    const char *key;
    json_t *rec;
    json_object_foreach (p->table[PARTITIONS_PARTITION], key, rec)
        if (json_is_true(json_object_get(rec, "default")))
            return key;
    return NULL;
}

int partitions_add(struct partitions *p, struct store_batch *batch,
                   enum partitions_kind kind, json_t *rec, struct sh_error *err)
{
    const char *name = json_string_value(json_object_get(rec, "name"));
    json_t *t = p->table[kind];
    if (json_object_get(t, name))
        return sh_errorf(err, SH_ECONFLICT, "%s %s already exists",
                         kind_name[kind], name);
    if (json_object_size(t) >=
        (size_t)(kind == PARTITIONS_QOS ? QOS_MAX : PARTITIONS_MAX))
        return sh_errorf(err, SH_ETOOLARGE, "the cluster has %zu %s, the limit",
                         json_object_size(t),
                         kind == PARTITIONS_QOS ? "QOS" : "partitions");
    const char *def = default_partition(p);
    if (kind == PARTITIONS_PARTITION && def &&
        json_is_true(json_object_get(rec, "default")))
        return sh_errorf(err, SH_ECONFLICT,
                         "partition %s is the default already: one "
                         "partition may be the default",
                         def);
    if (store_batch_put(batch, kind_name[kind], name, rec) < 0 ||
        json_object_set(t, name, rec) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

int partitions_delete(struct partitions *p, struct store_batch *batch,
                      enum partitions_kind kind, const char *name,
                      struct sh_error *err)
{
    if (!json_object_get(p->table[kind], name))
        return sh_errorf(err, SH_ENOTFOUND, "%s %.*s does not exist",
                         kind_name[kind], UTF8_CUT(name, 64));
    if (store_batch_del(batch, kind_name[kind], name) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    json_object_del(p->table[kind], name);
    return 0;
}

/* "a, b, c" (the valid names) or a hint when there are none. */
static void valid_names(const struct partitions *p, enum partitions_kind kind,
                        char *buf, size_t size)
{
    json_t *all = partitions_list(p, kind);
    size_t used = 0, i;
    json_t *rec;
    buf[0] = '\0';
    json_array_foreach (all, i, rec) {
        int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                         json_string_value(json_object_get(rec, "name")));
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
    if (!json_array_size(all))
        snprintf(buf, size,
                 "none are defined: a cluster admin creates them "
                 "with shoal %s create",
                 kind_name[kind]);
    json_decref(all);
}

/* A time limit past max (a QOS's or a partition's). */
static int cap_time(struct job_spec *spec, const json_t *rec, const char *what,
                    struct sh_error *err)
{
    int64_t max = json_integer_value(json_object_get(rec, "max_time"));
    if (!max)
        return 0;
    if (!spec->time_limit) {
        spec->time_limit = max; /* Slurm: the job gets the limit */
        return 0;
    }
    if (spec->time_limit > max) {
        char lim[32];
        format_duration(max, lim, sizeof(lim));
        return sh_errorf(
            err, SH_EQUOTA, "%s %s allows a time limit of at most %s (--time)",
            what, json_string_value(json_object_get(rec, "name")), lim);
    }
    return 0;
}

int partitions_apply_qos(const struct partitions *p, struct job_spec *spec,
                         struct sh_error *err)
{
    if (!spec->qos && !p)
        return 0;
    if (!p)
        return sh_errorf(err, SH_EINVAL, "qos %.*s does not exist",
                         UTF8_CUT(spec->qos, 64));
    if (!spec->qos) {
        spec->qos_max_gpus = 0; /* the QOS's, never the request's */
        return 0;
    }
    const json_t *rec = json_object_get(p->table[PARTITIONS_QOS], spec->qos);
    if (!rec) {
        char names[1024];
        valid_names(p, PARTITIONS_QOS, names, sizeof(names));
        return sh_errorf(err, SH_EINVAL, "qos %.*s does not exist (%s)",
                         UTF8_CUT(spec->qos, 64), names);
    }
    job_priority_from_name(json_string_value(json_object_get(rec, "priority")),
                           &spec->priority);
    spec->qos_max_gpus =
        (int)json_integer_value(json_object_get(rec, "max_gpus_per_user"));
    if (spec->qos_max_gpus && job_spec_total_gpus(spec) > spec->qos_max_gpus)
        return sh_errorf(err, SH_EQUOTA,
                         "qos %s allows a user %d GPUs at once; the job "
                         "asks for %d",
                         spec->qos, spec->qos_max_gpus,
                         job_spec_total_gpus(spec));
    return 0;
}

int partitions_apply_partition(const struct partitions *p,
                               struct job_spec *spec, struct sh_error *err)
{
    if (!p) /* a controller without the table (tests): none defined */
        return spec->partition
                   ? sh_errorf(err, SH_EINVAL, "partition %.*s does not exist",
                               UTF8_CUT(spec->partition, 64))
                   : 0;
    const char *name = spec->partition ? spec->partition : default_partition(p);
    if (!name)
        return spec->qos
                   ? cap_time(spec,
                              partitions_get(p, PARTITIONS_QOS, spec->qos),
                              "qos", err)
                   : 0;
    const json_t *rec = json_object_get(p->table[PARTITIONS_PARTITION], name);
    if (!rec) {
        char names[1024];
        valid_names(p, PARTITIONS_PARTITION, names, sizeof(names));
        return sh_errorf(err, SH_EINVAL,
                         "partition %.*s does not exist (the partitions: %s)",
                         UTF8_CUT(name, 64), names);
    }
    const json_t *projects = json_object_get(rec, "projects");
    if (projects && spec->project) {
        bool member = false;
        size_t i;
        json_t *v;
        json_array_foreach (projects, i, v)
            member |= strcmp(json_string_value(v), spec->project) == 0;
        if (!member)
            return sh_errorf(err, SH_EFORBIDDEN,
                             "partition %s is not open to project %s "
                             "(--account/-A names the project)",
                             name, spec->project);
    }
    if (!spec->time_limit && json_object_get(rec, "default_time"))
        spec->time_limit =
            json_integer_value(json_object_get(rec, "default_time"));
    if (cap_time(spec, rec, "partition", err) < 0)
        return -1;
    if (spec->qos &&
        cap_time(spec, partitions_get(p, PARTITIONS_QOS, spec->qos), "qos",
                 err) < 0)
        return -1;
    const char *sel = partition_selector(rec);
    if (sel) {
        char both[JOB_CONSTRAINT_MAX + 1];
        if (partition_and_constraint(spec->constraint, sel, both,
                                     sizeof(both)) < 0)
            return sh_errorf(err, SH_EINVAL,
                             "--constraint with partition %s's nodes (%s) "
                             "is longer than %d bytes",
                             name, sel, JOB_CONSTRAINT_MAX);
        char *c = strdup(both);
        if (!c)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
        free(spec->constraint);
        spec->constraint = c;
    }
    if (!spec->partition && !(spec->partition = strdup(name)))
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

int partitions_users(const struct jobtab *jobs, enum partitions_kind kind,
                     const char *name, unsigned long long *first)
{
    int n = 0;
    for (const struct job *j = jobtab_next(jobs, NULL); j;
         j = jobtab_next(jobs, j)) {
        const char *v =
            kind == PARTITIONS_QOS ? j->spec.qos : j->spec.partition;
        if (job_state_is_terminal(j->state) || !v || strcmp(v, name) != 0)
            continue;
        if (n++ == 0)
            *first = j->id;
    }
    return n;
}
