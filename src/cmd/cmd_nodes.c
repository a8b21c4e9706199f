/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal nodes` and `shoal node drain|resume NODE`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_opts.h"
#include "lib/util/parse.h"

static const char nodes_usage[] =
    "Usage: shoal nodes [--json]\n"
    "List nodes with their state, GPUs (free/total), model, CPUs and memory\n"
    "(allocated to running jobs/what jobs may have) and labels.\n"
    "--json prints an array of nodes, each with its gpus and their uuid,\n"
    "cpus, memory, cpus_allocated and memory_allocated.\n";

static const char node_usage[] =
    "Usage: shoal node drain NODE [--reason TEXT]\n"
    "       shoal node resume NODE\n"
    "Drain a node (running jobs finish, no new ones start) or resume it.\n";

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static void print_nodes(const json_t *nodes)
{
    static const char *const hdr[] = {"NAME", "STATE",  "GPUS", "MODEL",
                                      "CPUS", "MEMORY", "JOBS", "LABELS"};
    struct table *t = table_create(8, hdr);
    size_t i;
    json_t *n;
    json_array_foreach (nodes, i, n) {
        json_t *gpus = json_object_get(n, "gpus");
        char g[48], model[64] = "-", cpus[32], mem[40], jobs[16], labels[256];
        long long busy = json_integer_value(json_object_get(n, "gpus_busy"));
        snprintf(g, sizeof(g), "%lld/%zu",
                 (long long)json_array_size(gpus) - busy,
                 json_array_size(gpus));
        if (json_array_size(gpus))
            snprintf(model, sizeof(model), "%s",
                     str(json_array_get(gpus, 0), "model"));
        /* Allocated to running jobs / what jobs may have. */
        char ma[16], mt[16];
        snprintf(
            cpus, sizeof(cpus), "%lld/%lld",
            (long long)json_integer_value(json_object_get(n, "cpus_allocated")),
            (long long)json_integer_value(json_object_get(n, "cpus")));
        format_size((uint64_t)json_integer_value(
                        json_object_get(n, "memory_allocated")),
                    ma, sizeof(ma));
        format_size((uint64_t)json_integer_value(json_object_get(n, "memory")),
                    mt, sizeof(mt));
        snprintf(mem, sizeof(mem), "%s/%s", ma, mt);
        snprintf(
            jobs, sizeof(jobs), "%lld",
            (long long)json_integer_value(json_object_get(n, "running_jobs")));
        size_t o = 0;
        const char *key;
        json_t *v;
        labels[0] = '\0';
        json_object_foreach (json_object_get(n, "labels"), key, v) {
            const char *val = json_string_value(v);
            if (o >= sizeof(labels))
                break;
            /* A bare label (a feature) shows as its name. */
            o += (size_t)snprintf(labels + o, sizeof(labels) - o, "%s%s%s%s",
                                  o ? "," : "", key, val && *val ? "=" : "",
                                  val ? val : "");
        }
        const char *row[] = {
            str(n, "name"), str(n, "state"),         g, model, cpus, mem,
            jobs,           labels[0] ? labels : "-"};
        table_add(t, row);
    }
    table_print(t);
    table_destroy(t);
}

int cmd_nodes(int argc, char **argv)
{
    struct cmd_flag flags[] = {{"json", false, NULL, false},
                               {NULL, false, NULL, false}};
    cmd_opts_collect("nodes", nodes_usage, flags, argc, argv, NULL, 0);
    bool json_out = flags[0].set;
    struct client *c = cmd_connect();
    json_t *ans = cmd_call(c, "GET", "/v1/nodes", NULL);
    json_t *nodes = json_object_get(ans, "nodes");
    if (json_out)
        cmd_print_json(json_incref(nodes));
    else
        print_nodes(nodes);
    json_decref(ans);
    client_destroy(c);
    return 0;
}

int cmd_node(int argc, char **argv)
{
    const char *verb = cmd_opts_subcommand("node", node_usage, argc, argv);
    if (strcmp(verb, "drain") != 0 && strcmp(verb, "resume") != 0)
        cmd_opts_unknown_subcommand("node", verb);
    struct cmd_flag flags[] = {{"reason", true, NULL, false},
                               {NULL, false, NULL, false}};
    const char *pos[2];
    int npos =
        cmd_opts_collect("node", node_usage, flags, argc - 1, argv + 1, pos, 2);
    if (npos > 1)
        die("one node at a time");
    if (npos == 0)
        die("which node?");
    const char *reason = flags[0].value;
    if (reason && strcmp(verb, "resume") == 0)
        die("--reason goes with drain, not resume");
    const char *name = pos[0];
    char enc[200], path[300];
    client_urlencode(name, enc, sizeof(enc));
    snprintf(path, sizeof(path), "/v1/nodes/%s/%s", enc, verb);
    json_t *body = reason ? json_pack("{s:s}", "reason", reason) : NULL;
    struct client *c = cmd_connect();
    json_t *n = cmd_call(c, "POST", path, body);
    printf("node %s is %s\n", name, str(n, "state"));
    json_decref(n);
    json_decref(body);
    client_destroy(c);
    return 0;
}
