/* SPDX-License-Identifier: Apache-2.0 */
/* Partition and QOS records (partition.h). */
#include "lib/model/partition.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/model/job_place.h"
#include "lib/util/utf8.h"

#define DURATION_MAX (366LL * 86400)

static int get_name(const json_t *req, const char *what, const char **out,
                    struct sh_error *err)
{
    const char *name = json_string_value(json_object_get(req, "name"));
    if (!name || !job_ident_valid(name))
        return sh_errorf(err, SH_EINVAL,
                         "%s name must be 1..%d characters of letters, "
                         "digits, '.', '_' or '-'",
                         what, JOB_IDENT_MAX);
    *out = name;
    return 0;
}

/* An optional duration field, in seconds: 1 s .. 366 days. */
static int get_time(const json_t *req, const char *field, json_t *rec,
                    struct sh_error *err)
{
    const json_t *v = json_object_get(req, field);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 1 ||
        json_integer_value(v) > DURATION_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "%s must be seconds, 1 .. %lld (366 days)", field,
                         DURATION_MAX);
    json_object_set_new(rec, field, json_integer(json_integer_value(v)));
    return 0;
}

/* Only the fields named may be in the request. */
static int only(const json_t *req, const char *const *fields,
                struct sh_error *err)
{
    const char *key;
    json_t *v;
    if (!json_is_object(req))
        return sh_errorf(err, SH_EINVAL, "the request must be an object");
    json_object_foreach ((json_t *)req, key, v) {
        bool known = false;
        for (int i = 0; fields[i] && !known; i++)
            known = strcmp(fields[i], key) == 0;
        if (!known)
            return sh_errorf(err, SH_EINVAL, "unknown field '%.*s'",
                             UTF8_CUT(key, 64));
    }
    return 0;
}

json_t *partition_from_request(const json_t *req, int64_t now_ms,
                               struct sh_error *err)
{
    static const char *const fields[] = {"name",     "nodes",    "default_time",
                                         "max_time", "projects", "default",
                                         NULL};
    const char *name;
    if (only(req, fields, err) < 0 || get_name(req, "partition", &name, err))
        return NULL;
    const char *nodes = json_string_value(json_object_get(req, "nodes"));
    if (!nodes || !*nodes) {
        sh_errorf(err, SH_EINVAL,
                  "nodes: which nodes the partition holds: all, or a "
                  "constraint on node labels (a100, rack=r1, a&b, a|b)");
        return NULL;
    }
    if (strcmp(nodes, "all") != 0 && (strlen(nodes) > JOB_CONSTRAINT_MAX ||
                                      job_constraint_check(nodes, err) < 0)) {
        if (strlen(nodes) > JOB_CONSTRAINT_MAX)
            sh_errorf(err, SH_EINVAL, "nodes: at most %d bytes",
                      JOB_CONSTRAINT_MAX);
        sh_error_prefix(err, "nodes: ");
        return NULL;
    }
    const json_t *def = json_object_get(req, "default");
    if (def && !json_is_boolean(def)) {
        sh_errorf(err, SH_EINVAL, "default must be true or false");
        return NULL;
    }
    json_t *rec = json_pack("{s:s, s:s, s:b, s:I}", "name", name, "nodes",
                            nodes, "default", json_is_true(def), "created_ms",
                            (json_int_t)now_ms);
    if (!rec) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    if (get_time(req, "default_time", rec, err) < 0 ||
        get_time(req, "max_time", rec, err) < 0)
        goto fail;
    json_int_t dt = json_integer_value(json_object_get(rec, "default_time"));
    json_int_t mt = json_integer_value(json_object_get(rec, "max_time"));
    if (dt && mt && dt > mt) {
        sh_errorf(err, SH_EINVAL, "default_time is longer than max_time");
        goto fail;
    }
    const json_t *projects = json_object_get(req, "projects");
    if (projects && !json_is_null(projects)) {
        if (!json_is_array(projects) || json_array_size(projects) == 0 ||
            json_array_size(projects) > PARTITION_PROJECTS_MAX) {
            sh_errorf(err, SH_EINVAL,
                      "projects must be a list of 1..%d project names",
                      PARTITION_PROJECTS_MAX);
            goto fail;
        }
        size_t i;
        json_t *p;
        json_array_foreach (projects, i, p) {
            if (!json_is_string(p) || !job_ident_valid(json_string_value(p))) {
                sh_errorf(err, SH_EINVAL,
                          "projects: entry %zu is not a "
                          "project name",
                          i + 1);
                goto fail;
            }
        }
        json_object_set_new(rec, "projects", json_deep_copy(projects));
    }
    return rec;
fail:
    json_decref(rec);
    return NULL;
}

json_t *qos_from_request(const json_t *req, int64_t now_ms,
                         struct sh_error *err)
{
    static const char *const fields[] = {"name", "priority", "max_time",
                                         "max_gpus_per_user", NULL};
    const char *name;
    if (only(req, fields, err) < 0 || get_name(req, "qos", &name, err))
        return NULL;
    const char *prio = json_string_value(json_object_get(req, "priority"));
    enum job_priority p;
    if (!prio || job_priority_from_name(prio, &p) < 0) {
        sh_errorf(err, SH_EINVAL, "priority must be high, normal or low");
        return NULL;
    }
    json_t *rec = json_pack("{s:s, s:s, s:I}", "name", name, "priority", prio,
                            "created_ms", (json_int_t)now_ms);
    if (!rec) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    if (get_time(req, "max_time", rec, err) < 0) {
        json_decref(rec);
        return NULL;
    }
    const json_t *g = json_object_get(req, "max_gpus_per_user");
    if (g && !json_is_null(g)) {
        if (!json_is_integer(g) || json_integer_value(g) < 1 ||
            json_integer_value(g) > JOB_GPUS_TOTAL_MAX) {
            sh_errorf(err, SH_EINVAL, "max_gpus_per_user must be 1..%d",
                      JOB_GPUS_TOTAL_MAX);
            json_decref(rec);
            return NULL;
        }
        json_object_set_new(rec, "max_gpus_per_user",
                            json_integer(json_integer_value(g)));
    }
    return rec;
}

/* The record less created_ms, through the request check, must come back
 * the same. */
static int recheck(const json_t *rec, bool qos, struct sh_error *err)
{
    json_t *req = json_deep_copy(rec);
    if (!req)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    json_t *created = json_object_get(rec, "created_ms");
    json_object_del(req, "created_ms");
    json_t *again =
        qos ? qos_from_request(req, json_integer_value(created), err)
            : partition_from_request(req, json_integer_value(created), err);
    bool same = again && json_is_integer(created) && json_equal(again, rec);
    json_decref(req);
    json_decref(again);
    if (!same && err->code == SH_OK)
        return sh_errorf(err, SH_EINVAL, "not a canonical record");
    return same ? 0 : -1;
}

int partition_record_check(const json_t *rec, struct sh_error *err)
{
    sh_error_clear(err);
    return recheck(rec, false, err);
}

int qos_record_check(const json_t *rec, struct sh_error *err)
{
    sh_error_clear(err);
    return recheck(rec, true, err);
}

const char *partition_selector(const json_t *rec)
{
    const char *nodes = json_string_value(json_object_get(rec, "nodes"));
    return nodes && strcmp(nodes, "all") != 0 ? nodes : NULL;
}

int partition_and_constraint(const char *constraint, const char *selector,
                             char *buf, size_t size)
{
    const char *one = constraint ? constraint : selector;
    if (!constraint || !selector)
        return one ? (snprintf(buf, size, "%s", one) < (int)size ? 0 : -1)
                   : (buf[0] = '\0', 0);
    size_t used = 0;
    buf[0] = '\0';
    for (const char *a = constraint;;) {
        size_t alen = strcspn(a, "|");
        for (const char *b = selector;;) {
            size_t blen = strcspn(b, "|");
            int n = snprintf(buf + used, size - used, "%s%.*s&%.*s",
                             used ? "|" : "", (int)alen, a, (int)blen, b);
            if (n < 0 || (size_t)n >= size - used)
                return -1;
            used += (size_t)n;
            if (!b[blen])
                break;
            b += blen + 1;
        }
        if (!a[alen])
            break;
        a += alen + 1;
    }
    return 0;
}
