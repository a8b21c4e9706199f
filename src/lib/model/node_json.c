/* SPDX-License-Identifier: Apache-2.0 */
/* JSON codecs for nodes and GPUs (see node_json.h). */
#include "lib/model/node_json.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/util/clock.h"
#include "lib/util/utf8.h"

static const char *slice_kind_name(enum gpu_slice_kind k)
{
    return k == GPU_SLICE_MIG ? "mig" : "shared";
}

json_t *gpu_to_json(const struct gpu_info *g)
{
    json_t *slices = json_array();
    if (!slices)
        return NULL;
    for (int i = 0; i < g->nslices; i++) {
        const struct gpu_slice *s = &g->slices[i];
        json_array_append_new(
            slices, json_pack("{s:s, s:s, s:s, s:I, s:i, s:i, s:[i, i]}",
                              "kind", slice_kind_name(s->kind), "profile",
                              s->profile, "uuid", s->uuid, "memory",
                              (json_int_t)s->mem_bytes, "gi", s->gi_id, "ci",
                              s->ci_id, "share", s->share_num, s->share_den));
    }
    /* "o" steals slices */
    json_t *o = json_pack(
        "{s:i, s:s, s:s, s:s, s:s, s:I, s:I, s:i, s:b, s:b, "
        "s:i, s:o}",
        "index", g->index, "uuid", g->uuid, "name", g->name, "model", g->model,
        "pci_bus_id", g->pci_bus_id, "memory", (json_int_t)g->mem_total,
        "memory_used", (json_int_t)g->mem_used, "utilization", g->util_pct,
        "mig_capable", g->mig_capable, "mig_enabled", g->mig_enabled,
        "nvlink_group", g->nvlink_group, "slices", slices);
    if (o && g->preset[0])
        json_object_set_new(o, "preset", json_string(g->preset));
    return o;
}

static int copy_str(char *dst, size_t size, const char *src, const char *field,
                    struct sh_error *err)
{
    if (!src)
        return sh_errorf(err, SH_EINVAL, "gpu %s is missing", field);
    size_t n = strlen(src);
    if (n >= size)
        return sh_errorf(err, SH_EINVAL, "gpu %s is longer than %zu bytes",
                         field, size - 1);
    memcpy(dst, src, n + 1);
    return 0;
}

static int slice_from_json(const json_t *o, struct gpu_slice *s,
                           struct sh_error *err)
{
    const char *kind, *profile, *uuid;
    json_int_t mem;
    json_error_t jerr;
    memset(s, 0, sizeof(*s));
    if (json_unpack_ex((json_t *)o, &jerr, JSON_STRICT,
                       "{s:s, s:s, s:s, s:I, s:i, s:i, s:[ii]}", "kind", &kind,
                       "profile", &profile, "uuid", &uuid, "memory", &mem, "gi",
                       &s->gi_id, "ci", &s->ci_id, "share", &s->share_num,
                       &s->share_den) < 0)
        return sh_errorf(err, SH_EINVAL, "gpu slice: %s", jerr.text);
    if (strcmp(kind, "mig") == 0)
        s->kind = GPU_SLICE_MIG;
    else if (strcmp(kind, "shared") == 0)
        s->kind = GPU_SLICE_SHARED;
    else
        return sh_errorf(err, SH_EINVAL,
                         "gpu slice kind must be mig or shared");
    if (s->share_num < 1 || s->share_den < s->share_num || s->share_den > 64 ||
        mem < 0)
        return sh_errorf(err, SH_EINVAL,
                         "gpu slice share or memory is invalid");
    s->mem_bytes = (uint64_t)mem;
    if (copy_str(s->profile, sizeof(s->profile), profile, "slice profile",
                 err) < 0 ||
        copy_str(s->uuid, sizeof(s->uuid), uuid, "slice uuid", err) < 0)
        return -1;
    return 0;
}

int gpu_from_json(const json_t *o, struct gpu_info *g, struct sh_error *err)
{
    const char *uuid, *name, *model, *pci, *preset = NULL;
    json_int_t mem, used;
    int mig_capable, mig_enabled;
    json_t *slices;
    json_error_t jerr;
    memset(g, 0, sizeof(*g));
    if (json_unpack_ex(
            (json_t *)o, &jerr, JSON_STRICT,
            "{s:i, s:s, s:s, s:s, s:s, s:I, s:I, s:i, s:b, s:b, s:i, "
            "s:o, s?s}",
            "index", &g->index, "uuid", &uuid, "name", &name, "model", &model,
            "pci_bus_id", &pci, "memory", &mem, "memory_used", &used,
            "utilization", &g->util_pct, "mig_capable", &mig_capable,
            "mig_enabled", &mig_enabled, "nvlink_group", &g->nvlink_group,
            "slices", &slices, "preset", &preset) < 0)
        return sh_errorf(err, SH_EINVAL, "gpu: %s", jerr.text);
    if (g->index < 0 || g->index >= GPU_PER_NODE_MAX || mem < 0 || used < 0 ||
        g->util_pct < -1 || g->util_pct > 100)
        return sh_errorf(err, SH_EINVAL,
                         "gpu index, memory or utilization out of range");
    g->mem_total = (uint64_t)mem;
    g->mem_used = (uint64_t)used;
    g->mig_capable = mig_capable;
    g->mig_enabled = mig_enabled;
    if (preset &&
        copy_str(g->preset, sizeof(g->preset), preset, "preset", err) < 0)
        return -1;
    if (copy_str(g->uuid, sizeof(g->uuid), uuid, "uuid", err) < 0 ||
        copy_str(g->name, sizeof(g->name), name, "name", err) < 0 ||
        copy_str(g->model, sizeof(g->model), model, "model", err) < 0 ||
        copy_str(g->pci_bus_id, sizeof(g->pci_bus_id), pci, "pci_bus_id", err) <
            0)
        return -1;
    if (!job_ident_valid(g->model) || !g->uuid[0])
        return sh_errorf(err, SH_EINVAL, "gpu %d: model or uuid is not valid",
                         g->index);
    if (!json_is_array(slices) || json_array_size(slices) > GPU_SLICES_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "gpu slices must be an array of at "
                         "most %d",
                         GPU_SLICES_MAX);
    for (size_t i = 0; i < json_array_size(slices); i++) {
        if (slice_from_json(json_array_get(slices, i), &g->slices[i], err) < 0)
            return -1;
        g->nslices++;
    }
    return 0;
}

json_t *gpus_to_json(const struct gpu_info *gpus, int n)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++)
        json_array_append_new(arr, gpu_to_json(&gpus[i]));
    return arr;
}

int gpus_from_json(const json_t *arr, struct gpu_info **out, int *nout,
                   struct sh_error *err)
{
    if (!json_is_array(arr) || json_array_size(arr) > GPU_PER_NODE_MAX)
        return sh_errorf(err, SH_EINVAL, "gpus must be an array of at most %d",
                         GPU_PER_NODE_MAX);
    size_t n = json_array_size(arr);
    struct gpu_info *gpus = calloc(n ? n : 1, sizeof(*gpus));
    if (!gpus)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (gpu_from_json(json_array_get(arr, i), &gpus[i], err) < 0) {
            free(gpus);
            return -1;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(gpus[i].uuid, gpus[j].uuid) == 0) {
                sh_errorf(err, SH_EINVAL, "gpu %s is listed twice",
                          gpus[i].uuid);
                free(gpus);
                return -1;
            }
        }
    }
    *out = gpus;
    *nout = (int)n;
    return 0;
}

json_t *labels_to_json(const struct node_label *labels, int n)
{
    json_t *o = json_object();
    for (int i = 0; o && i < n; i++)
        json_object_set_new(o, labels[i].key, json_string(labels[i].value));
    return o;
}

int labels_from_json(const json_t *o, struct node_label **out, int *nout,
                     struct sh_error *err)
{
    if (!json_is_object(o) || json_object_size(o) > NODE_LABELS_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "labels must be an object of at most %d strings",
                         NODE_LABELS_MAX);
    size_t n = json_object_size(o);
    struct node_label *labels = calloc(n ? n : 1, sizeof(*labels));
    if (!labels)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    int i = 0;
    const char *key;
    json_t *v;
    json_object_foreach ((json_t *)o, key, v) {
        if (!job_ident_valid(key) || !json_is_string(v) ||
            json_string_length(v) > JOB_IDENT_MAX) {
            node_labels_free(labels, i);
            return sh_errorf(err, SH_EINVAL,
                             "label %.*s must be a name with a short string "
                             "value",
                             UTF8_CUT(key, 64));
        }
        labels[i].key = strdup(key);
        labels[i].value = strdup(json_string_value(v));
        i++;
        if (!labels[i - 1].key || !labels[i - 1].value) {
            node_labels_free(labels, i);
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
        }
    }
    *out = labels;
    *nout = i;
    return 0;
}

json_t *node_to_record(const struct node *n)
{
    /* "o" steals the labels and gpus */
    json_t *o = json_pack(
        "{s:s, s:s?, s:o, s:i, s:I, s:o, s:b, s:I, s:b}", "name", n->name,
        "address", n->address, "labels", labels_to_json(n->labels, n->nlabels),
        "cpus", n->cpus, "memory", (json_int_t)n->mem, "gpus",
        gpus_to_json(n->gpus, n->ngpus), "drain", n->drain, "registered_ms",
        (json_int_t)n->registered_ms, "mps", n->mps);
    if (o && n->drain_reason[0])
        json_object_set_new(o, "drain_reason", json_string(n->drain_reason));
    return o;
}

struct node *node_from_record(const json_t *rec, struct sh_error *err)
{
    const char *name, *address = NULL, *reason = NULL;
    json_t *labels, *gpus;
    int cpus, drain, mps = 0;
    json_int_t mem, registered;
    json_error_t jerr;
    if (json_unpack_ex((json_t *)rec, &jerr, 0,
                       "{s:s, s?s, s:o, s:i, s:I, s:o, s:b, s:I, s?b, s?s}",
                       "name", &name, "address", &address, "labels", &labels,
                       "cpus", &cpus, "memory", &mem, "gpus", &gpus, "drain",
                       &drain, "registered_ms", &registered, "mps", &mps,
                       "drain_reason", &reason) < 0) {
        sh_errorf(err, SH_EINVAL, "node record: %s", jerr.text);
        return NULL;
    }
    struct node *n = node_create(name);
    if (!n) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    n->cpus = cpus;
    n->mem = (uint64_t)mem;
    n->drain = drain;
    if (reason)
        snprintf(n->drain_reason, sizeof(n->drain_reason), "%s", reason);
    n->mps = mps;
    n->registered_ms = registered;
    if ((address && node_set_address(n, address) < 0) ||
        labels_from_json(labels, &n->labels, &n->nlabels, err) < 0 ||
        gpus_from_json(gpus, &n->gpus, &n->ngpus, err) < 0) {
        node_destroy(n);
        return NULL;
    }
    return n;
}

json_t *node_to_json(const struct node *n)
{
    char hb[32];
    clock_format_iso(n->last_heartbeat_ms, hb, sizeof(hb));
    json_t *o = node_to_record(n);
    if (!o)
        return NULL;
    json_object_del(o, "registered_ms");
    json_object_set_new(o, "state",
                        json_string(node_state_name(node_state(n))));
    json_object_set_new(o, "running_jobs", json_integer(n->running));
    json_object_set_new(o, "last_heartbeat",
                        n->last_heartbeat_ms ? json_string(hb) : json_null());
    return o;
}
