/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal nodes` and `shoal node drain|resume NODE`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_format.h"
#include "cmd/cmd_opts.h"
#include "lib/util/parse.h"

static const char nodes_usage[] =
    "Usage: shoal nodes [--json | --format FMT [--noheader]]\n"
    "List nodes with their state, GPUs (free/total), model and labels.\n"
    "--json prints an array of nodes, each with its gpus and their uuid.\n"
    "--format is sinfo's -o: a line per node of %[.][WIDTH]X fields: %N\n"
    "name, %T state, %t sinfo's state (idle, mix, alloc, drng, drain,\n"
    "down), %a up/down, %G gres (gpu:MODEL:N), %c CPUs, %m memory (MB),\n"
    "%f labels, %g GPUs free/total, %j running jobs.\n";

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
        char g[48], model[64] = "-", cpus[16], mem[16], jobs[16], labels[256];
        long long busy = json_integer_value(json_object_get(n, "gpus_busy"));
        snprintf(g, sizeof(g), "%lld/%zu",
                 (long long)json_array_size(gpus) - busy,
                 json_array_size(gpus));
        if (json_array_size(gpus))
            snprintf(model, sizeof(model), "%s",
                     str(json_array_get(gpus, 0), "model"));
        snprintf(cpus, sizeof(cpus), "%lld",
                 (long long)json_integer_value(json_object_get(n, "cpus")));
        format_size((uint64_t)json_integer_value(json_object_get(n, "memory")),
                    mem, sizeof(mem));
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
                               {"format", true, NULL, false},
                               {"noheader", false, NULL, false},
                               {NULL, false, NULL, false}};
    cmd_opts_collect("nodes", nodes_usage, flags, argc, argv, NULL, 0);
    bool json_out = flags[0].set;
    struct sh_error err;
    if (flags[1].set && nodes_format_check(flags[1].value, &err) < 0)
        die("%s", err.msg);
    struct client *c = cmd_connect();
    json_t *ans = cmd_call(c, "GET", "/v1/nodes", NULL);
    json_t *nodes = json_object_get(ans, "nodes");
    if (json_out) {
        cmd_print_json(json_incref(nodes));
    } else if (flags[1].set) {
        struct strbuf line;
        strbuf_init(&line, 1 << 20);
        if (!flags[2].set) {
            nodes_format_header(flags[1].value, &line);
            puts(strbuf_str(&line));
        }
        size_t i;
        json_t *n;
        json_array_foreach (nodes, i, n) {
            strbuf_reset(&line);
            nodes_format_row(flags[1].value, n, &line);
            puts(strbuf_str(&line));
        }
        strbuf_fini(&line);
    } else {
        print_nodes(nodes);
    }
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
