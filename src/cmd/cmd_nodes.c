/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal nodes`, `shoal node drain|resume|rekey|delete NODE` and the join
 * tokens that enroll nodes (`shoal node token create|list|revoke|
 * rotate-default`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_format.h"
#include "cmd/cmd_opts.h"
#include "lib/util/parse.h"

static const char nodes_usage[] =
    "Usage: shoal nodes [--json | --format FMT [--noheader]]\n"
    "List nodes with their state, GPUs (free/total), model, CPUs and memory\n"
    "(allocated to running jobs/what jobs may have) and labels.\n"
    "--json prints an array of nodes, each with its gpus and their uuid,\n"
    "cpus, memory, cpus_allocated and memory_allocated.\n"
    "--format is sinfo's -o: a line per node of %[.][WIDTH]X fields: %N\n"
    "name, %T state, %t sinfo's state (idle, mix, alloc, drng, drain,\n"
    "down), %a up/down, %G gres (gpu:MODEL:N), %c CPUs, %m memory (MB),\n"
    "%f labels, %g GPUs free/total, %j running jobs.\n";

static const char node_usage[] =
    "Usage: shoal node drain NODE [--reason TEXT]\n"
    "       shoal node resume NODE\n"
    "       shoal node rekey NODE\n"
    "       shoal node delete NODE\n"
    "       shoal node token create [--expires DURATION] [--uses N] "
    "[--json]\n"
    "       shoal node token list [--json]\n"
    "       shoal node token revoke ID\n"
    "       shoal node token rotate-default\n"
    "Drain a node (running jobs finish, no new ones start) or resume it.\n"
    "rekey prints a new token for an enrolled node (its old one stops\n"
    "working): write it to the file 'token' in the agent's state folder.\n"
    "delete forgets a down node without jobs (its name may join again).\n"
    "A join token enrolls only node names that are not enrolled yet.\n"
    "token create prints a new join token once (--expires 1h: valid that\n"
    "long; --uses N: for N nodes); list shows their ids, revoke ends one;\n"
    "rotate-default replaces the cluster's default join token (the one in\n"
    "the controller's state/join.token) and prints the new one.\n";

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

static void print_join_tokens(const json_t *tokens)
{
    static const char *const hdr[] = {"ID", "DEFAULT", "CREATED", "EXPIRES",
                                      "USES"};
    struct table *t = table_create(5, hdr);
    size_t i;
    json_t *k;
    json_array_foreach (tokens, i, k) {
        char uses[48];
        json_t *max = json_object_get(k, "max_uses");
        if (json_is_integer(max))
            snprintf(uses, sizeof(uses), "%lld/%lld",
                     (long long)json_integer_value(json_object_get(k, "uses")),
                     (long long)json_integer_value(max));
        else
            snprintf(uses, sizeof(uses), "%lld/-",
                     (long long)json_integer_value(json_object_get(k, "uses")));
        const char *exp = str(k, "expires");
        const char *row[] = {str(k, "id"),
                             json_is_true(json_object_get(k, "default")) ? "yes"
                                                                         : "no",
                             str(k, "created"), exp ? exp : "never", uses};
        table_add(t, row);
    }
    table_print(t);
    table_destroy(t);
}

/* shoal node token create|list|revoke|rotate-default */
static int node_token(int argc, char **argv)
{
    /* argv: node token VERB ... */
    if (argc < 3)
        die("node token: create, list, revoke ID or rotate-default?");
    const char *verb = argv[2];
    if (!strcmp(verb, "-h") || !strcmp(verb, "--help") ||
        !strcmp(verb, "help")) {
        fputs(node_usage, stdout);
        return 0;
    }
    if (strcmp(verb, "create") && strcmp(verb, "list") &&
        strcmp(verb, "revoke") && strcmp(verb, "rotate-default"))
        cmd_opts_unknown_subcommand("node token", verb);
    struct cmd_flag flags[] = {{"expires", true, NULL, false},
                               {"uses", true, NULL, false},
                               {"json", false, NULL, false},
                               {NULL, false, NULL, false}};
    const char *pos[2];
    int npos = cmd_opts_collect("node token", node_usage, flags, argc - 2,
                                argv + 2, pos, 2);
    bool create = strcmp(verb, "create") == 0;
    if ((flags[0].set || flags[1].set) && !create)
        die("--expires and --uses go with 'node token create'");
    if (flags[2].set && !create && strcmp(verb, "list") != 0)
        die("--json goes with 'node token create' and 'node token list'");
    struct client *c = cmd_connect();
    json_t *ans;
    if (create) {
        if (npos)
            die("node token create takes no arguments");
        json_t *body = json_object();
        if (flags[0].set) {
            int64_t s;
            struct sh_error err;
            if (parse_duration("--expires", flags[0].value, &s, &err) < 0)
                die("%s", err.msg);
            if (s < 1)
                die("--expires must be at least 1s");
            json_object_set_new(body, "expires_in_s", json_integer(s));
        }
        if (flags[1].set) {
            char *end;
            long n = strtol(flags[1].value, &end, 10);
            if (*end || end == flags[1].value || n < 1 || n > 100000)
                die("--uses must be a number 1..100000, not '%s'",
                    flags[1].value);
            json_object_set_new(body, "uses", json_integer(n));
        }
        ans = cmd_call(c, "POST", "/v1/join-tokens", body);
        json_decref(body);
        if (flags[2].set)
            cmd_print_json(json_incref(ans));
        else
            printf("%s\n", str(ans, "token"));
    } else if (strcmp(verb, "list") == 0) {
        if (npos)
            die("node token list takes no arguments");
        ans = cmd_call(c, "GET", "/v1/join-tokens", NULL);
        if (flags[2].set)
            cmd_print_json(json_incref(json_object_get(ans, "tokens")));
        else
            print_join_tokens(json_object_get(ans, "tokens"));
    } else if (strcmp(verb, "revoke") == 0) {
        if (npos != 1)
            die("which join token? (its ID from 'shoal node token list')");
        char enc[200], path[300];
        client_urlencode(pos[0], enc, sizeof(enc));
        snprintf(path, sizeof(path), "/v1/join-tokens/%s", enc);
        ans = cmd_call(c, "DELETE", path, NULL);
        printf("join token %s revoked\n", pos[0]);
    } else if (strcmp(verb, "rotate-default") == 0) {
        if (npos)
            die("node token rotate-default takes no arguments");
        ans = cmd_call(c, "POST", "/v1/join-tokens/rotate-default", NULL);
        printf("%s\n", str(ans, "token"));
    } else {
        cmd_opts_unknown_subcommand("node token", verb);
    }
    json_decref(ans);
    client_destroy(c);
    return 0;
}

int cmd_node(int argc, char **argv)
{
    const char *verb = cmd_opts_subcommand("node", node_usage, argc, argv);
    if (strcmp(verb, "token") == 0)
        return node_token(argc, argv);
    if (strcmp(verb, "drain") != 0 && strcmp(verb, "resume") != 0 &&
        strcmp(verb, "rekey") != 0 && strcmp(verb, "delete") != 0)
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
    if (reason && strcmp(verb, "drain") != 0)
        die("--reason goes with drain, not %s", verb);
    const char *name = pos[0];
    char enc[200], path[300];
    client_urlencode(name, enc, sizeof(enc));
    struct client *c = cmd_connect();
    if (strcmp(verb, "delete") == 0) {
        snprintf(path, sizeof(path), "/v1/nodes/%s", enc);
        json_decref(cmd_call(c, "DELETE", path, NULL));
        printf("node %s deleted\n", name);
        client_destroy(c);
        return 0;
    }
    snprintf(path, sizeof(path), "/v1/nodes/%s/%s", enc, verb);
    json_t *body = reason ? json_pack("{s:s}", "reason", reason) : NULL;
    json_t *n = cmd_call(c, "POST", path, body);
    if (strcmp(verb, "rekey") == 0)
        printf("%s\n", str(n, "token"));
    else
        printf("node %s is %s\n", name, str(n, "state"));
    json_decref(n);
    json_decref(body);
    client_destroy(c);
    return 0;
}
