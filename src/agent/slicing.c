/* SPDX-License-Identifier: Apache-2.0 */
/* Applying slicing presets on this node (see slicing.h). */
#include "agent/slicing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/gpu.h"
#include "agent/link.h"
#include "agent/runs.h"
#include "lib/util/file.h"
#include "lib/util/log.h"

static void layouts_path(const struct agent *a, char *buf, size_t size)
{
    snprintf(buf, size, "%s/layouts.json", a->cfg.state_dir);
}

static json_t *layouts_load(const struct agent *a)
{
    char path[PATH_MAX];
    layouts_path(a, path, sizeof(path));
    json_t *o = json_load_file(path, 0, NULL);
    return json_is_object(o) ? o : (json_decref(o), json_object());
}

static void layouts_save(const struct agent *a, const json_t *o)
{
    char path[PATH_MAX];
    struct sh_error err;
    layouts_path(a, path, sizeof(path));
    char *text = json_dumps(o, JSON_COMPACT);
    if (!text ||
        file_write_atomic(path, text, strlen(text), 0644, true, &err) < 0)
        sh_log(LOG_ERR, "slicing", "cannot save %s: %s", path,
               text ? err.msg : "out of memory");
    free(text);
}

void slicing_restore(struct agent *a)
{
    json_t *map = layouts_load(a);
    for (int i = 0; i < a->ngpus; i++) {
        struct gpu_info *g = &a->gpus[i];
        const char *preset = json_string_value(json_object_get(map, g->uuid));
        g->preset[0] = '\0';
        if (!preset)
            continue;
        int n = 0;
        if (sscanf(preset, "shared-%d", &n) == 1) {
            if (!g->mig_enabled && gpu_set_shared(g, n, NULL) == 0)
                snprintf(g->preset, sizeof(g->preset), "%s", preset);
        } else if (strcmp(preset, "all-disabled") == 0) {
            if (!g->mig_enabled)
                snprintf(g->preset, sizeof(g->preset), "%s", preset);
        } else if (g->mig_enabled) {
            /* MIG layouts live in the driver; the name is ours. */
            snprintf(g->preset, sizeof(g->preset), "%s", preset);
        }
    }
    json_decref(map);
}

static void add_error(struct agent *a, int gpu, const char *preset,
                      const char *error)
{
    if (!a->slice_errors)
        a->slice_errors = json_array();
    json_array_append_new(a->slice_errors,
                          json_pack("{s:i, s:s, s:s}", "gpu", gpu, "preset",
                                    preset, "error", error));
    link_heartbeat_soon(a->link);
}

json_t *slicing_take_errors(struct agent *a)
{
    json_t *e = a->slice_errors ? a->slice_errors : json_array();
    a->slice_errors = NULL;
    return e;
}

static bool apply_one(struct agent *a, json_t *map, int idx, const char *uuid,
                      const char *preset)
{
    struct sh_error err;
    if (idx < 0 || idx >= a->ngpus || strcmp(a->gpus[idx].uuid, uuid) != 0) {
        add_error(a, idx, preset, "no such GPU on this node");
        return false;
    }
    struct gpu_info *g = &a->gpus[idx];
    if (strcmp(g->preset, preset) == 0)
        return true; /* already there: the registration tells */
    if (runs_gpu_in_use(a->runs, g)) {
        sh_debug("slicing", "gpu %d busy; %s later", idx, preset);
        return false;
    }
    if (!a->gpu) {
        add_error(a, idx, preset, "this node has no GPU backend (NVML)");
        return false;
    }
    if (gpu_apply_preset(a->gpu, g, preset, &err) < 0) {
        sh_log(LOG_WARNING, "slicing", "gpu %d: %s failed: %s", idx, preset,
               err.msg);
        add_error(a, idx, preset, err.msg);
        return false;
    }
    snprintf(g->preset, sizeof(g->preset), "%s", preset);
    json_object_set_new(map, g->uuid, json_string(preset));
    sh_log(LOG_NOTICE, "slicing", "gpu %d now %s with %d slice(s)", idx, preset,
           g->nslices);
    return true;
}

bool slicing_apply(struct agent *a, const json_t *slices)
{
    bool changed = false;
    if (!json_is_array(slices) || json_array_size(slices) == 0)
        return false;
    json_t *map = layouts_load(a);
    size_t i;
    json_t *s;
    json_array_foreach (slices, i, s) {
        int gpu = (int)json_integer_value(json_object_get(s, "gpu"));
        const char *uuid = json_string_value(json_object_get(s, "uuid"));
        const char *preset = json_string_value(json_object_get(s, "preset"));
        if (!uuid || !preset)
            continue;
        changed |= apply_one(a, map, gpu, uuid, preset);
    }
    layouts_save(a, map);
    json_decref(map);
    return changed;
}

void work_apply(struct agent *a, const json_t *work)
{
    runs_reconcile(a->runs, work);
    if (slicing_apply(a, json_object_get(work, "slices"))) {
        struct sh_error err;
        /* Report the new slices: a registration carries every GPU. */
        if (link_register(a->link, &err) < 0)
            sh_log(LOG_WARNING, "slicing", "reporting new slices: %s", err.msg);
    }
}
