/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/slices: the slicing presets per GPU model, applying a preset to GPUs
 * of a node (cluster admins), and every GPU with its slices and plan. */
#include <stdio.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/model/preset.h"
#include "lib/util/utf8.h"
#include "shoald/api_handlers.h"
#include "shoald/nodetab.h"
#include "shoald/slices.h"

/* Models whose presets are shown without --gpu-model: the built-in MIG
 * models and every model in the cluster. */
static const char *const builtin_models[] = {"A100-40GB", "A100-80GB",
                                             "H100-80GB", "H200-141GB"};

static json_t *layout_view(const struct preset_layout *l)
{
    json_t *sl = json_array();
    for (int i = 0; i < l->nslices; i++)
        json_array_append_new(sl, json_pack("{s:s, s:I, s:[i, i]}", "profile",
                                            l->slices[i].profile, "memory",
                                            (json_int_t)l->slices[i].mem_bytes,
                                            "share", l->slices[i].share_num,
                                            l->slices[i].share_den));
    return sl;
}

static json_t *model_presets(const char *model)
{
    char names[PRESET_LIST_MAX][PRESET_NAME_MAX];
    int n = preset_list(model, names, PRESET_LIST_MAX);
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        struct preset_layout l;
        if (preset_expand(model, names[i], &l, NULL) < 0)
            continue;
        /* "o" steals the slice list */
        json_array_append_new(arr, json_pack("{s:s, s:s, s:b, s:o}", "model",
                                             model, "name", names[i], "mig",
                                             l.mig, "slices", layout_view(&l)));
    }
    return arr;
}

void api_slices_presets(struct shoald *d, struct api_req *req)
{
    const char *model = api_query(req, "gpu_model");
    if (model) {
        if (!job_ident_valid(model)) {
            api_errorf(req, SH_EINVAL, "gpu_model '%.*s' is not a model name",
                       UTF8_CUT(model, 64));
            return;
        }
        api_reply_json(req, 200,
                       json_pack("{s:o}", "presets", model_presets(model)));
        return;
    }
    json_t *seen = json_object();
    json_t *all = json_array();
    for (size_t i = 0; i < sizeof(builtin_models) / sizeof(*builtin_models);
         i++)
        json_object_set_new(seen, builtin_models[i], json_true());
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n))
        for (int g = 0; g < n->ngpus; g++)
            json_object_set_new(seen, n->gpus[g].model, json_true());
    const char *key;
    json_t *v;
    json_object_foreach (seen, key, v) {
        json_t *mp = model_presets(key);
        json_array_extend(all, mp);
        json_decref(mp);
    }
    json_decref(seen);
    api_reply_json(req, 200, json_pack("{s:o}", "presets", all));
}

void api_slices_apply(struct shoald *d, struct api_req *req)
{
    json_t *body = api_body(req);
    if (!body)
        return;
    const char *node, *preset;
    json_t *gpus = NULL;
    json_error_t jerr;
    if (json_unpack_ex(body, &jerr, JSON_STRICT, "{s:s, s:s, s?o}", "node",
                       &node, "preset", &preset, "gpus", &gpus) < 0) {
        api_errorf(req, SH_EINVAL, "%s", jerr.text);
        return;
    }
    if (strlen(preset) >= PRESET_NAME_MAX) {
        api_errorf(req, SH_EINVAL, "preset name is too long");
        return;
    }
    int idx[GPU_PER_NODE_MAX];
    int n = 0;
    if (gpus) {
        if (!json_is_array(gpus) || json_array_size(gpus) == 0 ||
            json_array_size(gpus) > GPU_PER_NODE_MAX) {
            api_errorf(req, SH_EINVAL,
                       "gpus must be a non-empty array of GPU indexes");
            return;
        }
        size_t i;
        json_t *g;
        json_array_foreach (gpus, i, g) {
            if (!json_is_integer(g)) {
                api_errorf(req, SH_EINVAL, "gpus must hold whole numbers");
                return;
            }
            idx[n++] = (int)json_integer_value(g);
        }
    }
    char why[160];
    snprintf(why, sizeof(why), "requested by %s", api_caller(req)->user);
    struct sh_error err;
    if (slices_request(d, node, gpus ? idx : NULL, n, preset, why, &err) < 0) {
        api_reply_error(req, &err);
        return;
    }
    json_t *view = slices_view(d);
    json_t *mine = json_array();
    size_t i;
    json_t *e;
    json_array_foreach (view, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "node")), node) == 0)
            json_array_append(mine, e);
    }
    json_decref(view);
    api_reply_json(req, 200, json_pack("{s:o}", "gpus", mine));
}

void api_slices_show(struct shoald *d, struct api_req *req)
{
    api_reply_json(req, 200, json_pack("{s:o}", "gpus", slices_view(d)));
}
