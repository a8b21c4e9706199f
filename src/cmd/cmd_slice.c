/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal slice presets|apply|show`: GPU slicing from presets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_opts.h"
#include "lib/model/gpu.h"

static const char slice_usage[] =
    "Usage: shoal slice presets [--gpu-model M] [--json]\n"
    "       shoal slice apply NODE[:GPU,...] PRESET\n"
    "       shoal slice show [--json]\n"
    "Split GPUs into slices from presets: MIG layouts (all-1g.10gb,\n"
    "all-3g.40gb, all-balanced, all-disabled, ...) or time-slices (shared-2,\n"
    "shared-4, shared-8). A GPU with running jobs is re-sliced when they\n"
    "end; no new job lands on it meanwhile. `apply` needs a cluster admin.\n";

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* "7x1g.10gb" from a slice list. */
static void summarize(const json_t *slices, char *buf, size_t size)
{
    size_t o = 0, i = 0;
    buf[0] = '\0';
    if (json_array_size(slices) == 0) {
        snprintf(buf, size, "whole");
        return;
    }
    while (i < json_array_size(slices)) {
        const char *p = str(json_array_get(slices, i), "profile");
        size_t j = i;
        while (j < json_array_size(slices) &&
               strcmp(str(json_array_get(slices, j), "profile"), p) == 0)
            j++;
        o += (size_t)snprintf(buf + o, o < size ? size - o : 0, "%s%zux%s",
                              o ? "," : "", j - i, p);
        i = j;
    }
}

static int presets(int argc, char **argv)
{
    struct cmd_flag flags[] = {{"json", false, NULL, false},
                               {"gpu-model", true, NULL, false},
                               {NULL, false, NULL, false}};
    cmd_opts_collect("slice presets", slice_usage, flags, argc - 1, argv + 1,
                     NULL, 0);
    bool json_out = flags[0].set;
    const char *model = flags[1].value;
    char path[200] = "/v1/slices/presets";
    if (model) {
        char enc[128];
        client_urlencode(model, enc, sizeof(enc));
        snprintf(path, sizeof(path), "/v1/slices/presets?gpu_model=%s", enc);
    }
    struct client *c = cmd_connect();
    json_t *ans = cmd_call(c, "GET", path, NULL);
    json_t *list = json_object_get(ans, "presets");
    if (json_out) {
        cmd_print_json(json_incref(list));
    } else {
        static const char *const hdr[] = {"MODEL", "PRESET", "MIG", "SLICES"};
        struct table *t = table_create(4, hdr);
        size_t i;
        json_t *p;
        json_array_foreach (list, i, p) {
            char sl[256];
            summarize(json_object_get(p, "slices"), sl, sizeof(sl));
            const char *row[] = {
                str(p, "model"), str(p, "name"),
                json_is_true(json_object_get(p, "mig")) ? "on" : "off", sl};
            table_add(t, row);
        }
        table_print(t);
        table_destroy(t);
    }
    json_decref(ans);
    client_destroy(c);
    return 0;
}

static int apply(int argc, char **argv)
{
    const char *pos[2];
    if (cmd_opts_collect("slice apply", slice_usage, NULL, argc - 1, argv + 1,
                         pos, 2) != 2)
        die("usage: shoal slice apply NODE[:GPU,...] PRESET");
    const char *where = pos[0], *preset = pos[1];
    char node[128];
    json_t *gpus = NULL;
    const char *colon = strchr(where, ':');
    size_t n = colon ? (size_t)(colon - where) : strlen(where);
    if (n == 0 || n >= sizeof(node))
        die("'%s' is not NODE or NODE:GPU,...", where);
    memcpy(node, where, n);
    node[n] = '\0';
    if (colon) {
        gpus = json_array();
        const char *p = colon + 1;
        while (*p) {
            const char *comma = strchr(p, ',');
            char num[16];
            size_t k = comma ? (size_t)(comma - p) : strlen(p);
            if (k == 0 || k >= sizeof(num))
                die("'%s': GPUs must be indexes like 0,1,2", where);
            memcpy(num, p, k);
            num[k] = '\0';
            json_array_append_new(
                gpus, json_integer(
                          cmd_parse_int("GPU", num, 0, GPU_PER_NODE_MAX - 1)));
            p += k + (comma ? 1 : 0);
        }
    }
    json_t *body = json_pack("{s:s, s:s}", "node", node, "preset", preset);
    if (gpus)
        json_object_set_new(body, "gpus", gpus);
    struct client *c = cmd_connect();
    json_t *ans = cmd_call(c, "POST", "/v1/slices/apply", body);
    size_t i;
    json_t *g;
    json_array_foreach (json_object_get(ans, "gpus"), i, g) {
        const json_t *plan = json_object_get(g, "plan");
        if (!json_is_object(plan) || strcmp(str(plan, "preset"), preset))
            continue;
        const char *waiting = str(plan, "waiting");
        printf("%s gpu %lld: %s %s%s%s\n", node,
               (long long)json_integer_value(json_object_get(g, "gpu")), preset,
               str(plan, "state"), waiting ? " (" : "", waiting ? waiting : "");
        if (waiting)
            printf(")\n");
    }
    json_decref(ans);
    json_decref(body);
    client_destroy(c);
    return 0;
}

static int show(int argc, char **argv)
{
    struct cmd_flag flags[] = {{"json", false, NULL, false},
                               {NULL, false, NULL, false}};
    cmd_opts_collect("slice show", slice_usage, flags, argc - 1, argv + 1, NULL,
                     0);
    bool json_out = flags[0].set;
    struct client *c = cmd_connect();
    json_t *ans = cmd_call(c, "GET", "/v1/slices", NULL);
    json_t *gpus = json_object_get(ans, "gpus");
    if (json_out) {
        cmd_print_json(json_incref(gpus));
    } else {
        static const char *const hdr[] = {"NODE",   "GPU",  "MODEL", "PRESET",
                                          "SLICES", "JOBS", "PLAN"};
        struct table *t = table_create(7, hdr);
        size_t i;
        json_t *g;
        json_array_foreach (gpus, i, g) {
            char idx[16], sl[256], jobs[16], plan[400] = "-";
            snprintf(idx, sizeof(idx), "%lld",
                     (long long)json_integer_value(json_object_get(g, "gpu")));
            summarize(json_object_get(g, "slices"), sl, sizeof(sl));
            if (json_is_true(json_object_get(g, "unfenced")))
                strncat(sl, " (unfenced)", sizeof(sl) - strlen(sl) - 1);
            snprintf(jobs, sizeof(jobs), "%lld",
                     (long long)json_integer_value(json_object_get(g, "jobs")));
            const json_t *p = json_object_get(g, "plan");
            if (json_is_object(p)) {
                const char *w = str(p, "waiting");
                snprintf(plan, sizeof(plan), "%s %s: %s", str(p, "preset"),
                         str(p, "state"), w ? w : str(p, "reason"));
            }
            const char *row[] = {
                str(g, "node"), idx, str(g, "model"), str(g, "preset"), sl,
                jobs,           plan};
            table_add(t, row);
        }
        table_print(t);
        table_destroy(t);
    }
    json_decref(ans);
    client_destroy(c);
    return 0;
}

int cmd_slice(int argc, char **argv)
{
    const char *sub = cmd_opts_subcommand("slice", slice_usage, argc, argv);
    if (strcmp(sub, "presets") == 0)
        return presets(argc, argv);
    if (strcmp(sub, "apply") == 0)
        return apply(argc, argv);
    if (strcmp(sub, "show") == 0)
        return show(argc, argv);
    cmd_opts_unknown_subcommand("slice", sub);
}
