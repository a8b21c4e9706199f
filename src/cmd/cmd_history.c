/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal history`: jobs that ran and ended, for people, as JSON, or as a
 * trace for `shoal sim` (--trace: the simulator's CSV format). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_opts.h"
#include "lib/util/clock.h"
#include "lib/util/parse.h"

static const char history_usage[] =
    "Usage: shoal history [--since WHEN] [--until WHEN] [--trace|--json]\n"
    "Jobs that ran and ended in a window (default: the last 30 days).\n"
    "--trace prints them in the trace format of `shoal sim`, to replay the\n"
    "real workload against another cluster shape:\n"
    "  shoal history --trace --since 30d > month.csv\n"
    "  shoal sim --cluster 8x8xH100-80GB --trace month.csv\n"
    "WHEN is a date (2026-11-01) or a duration back from now (7d, 12h).\n";

int cmd_history(int argc, char **argv)
{
    static const struct option opts[] = {
        {"since", required_argument, NULL, 's'},
        {"until", required_argument, NULL, 'u'},
        {"trace", no_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    const char *since = NULL, *until = NULL;
    bool trace = false, json_out = false;
    int c;
    struct cmd_opts p;
    cmd_opts_init(&p, "history", history_usage, opts, NULL, false, argc, argv);
    while ((c = cmd_opts_next(&p)) != -1) {
        switch (c) {
        case 's':
            since = p.arg;
            break;
        case 'u':
            until = p.arg;
            break;
        case 't':
            trace = true;
            break;
        case 'j':
            json_out = true;
            break;
        default: /* CMD_OPT_ARG */
            cmd_opts_fail(&p, "unexpected argument '%s'", p.arg);
        }
    }
    if (trace && json_out)
        die("--trace and --json exclude each other");
    char path[512], enc[128];
    int n = snprintf(path, sizeof(path), "/v1/history?format=%s",
                     trace ? "trace" : "json");
    if (since) {
        client_urlencode(since, enc, sizeof(enc));
        n += snprintf(path + n, sizeof(path) - (size_t)n, "&since=%s", enc);
    }
    if (until) {
        client_urlencode(until, enc, sizeof(enc));
        snprintf(path + n, sizeof(path) - (size_t)n, "&until=%s", enc);
    }
    struct client *cl = cmd_connect();
    client_set_timeout(cl, 120000);
    if (trace) {
        char *out = NULL;
        size_t len = 0;
        struct sh_error err;
        if (client_call_raw(cl, "GET", path, NULL, 0, &out, &len, NULL, &err) <
            0)
            die("%s", err.msg);
        fwrite(out, 1, len, stdout);
        free(out);
        client_destroy(cl);
        return 0;
    }
    json_t *ans = cmd_call(cl, "GET", path, NULL);
    json_t *jobs = json_object_get(ans, "jobs");
    if (json_out) {
        cmd_print_json(json_incref(jobs));
    } else {
        static const char *const hdr[] = {"ID",   "USER",  "PROJECT", "STATE",
                                          "GPUS", "START", "RUNTIME"};
        struct table *t = table_create(7, hdr);
        size_t i;
        json_t *j;
        json_array_foreach (jobs, i, j) {
            const json_t *spec = json_object_get(j, "spec");
            char id[24], gpus[24], start[32], rt[32];
            snprintf(id, sizeof(id), "%lld",
                     (long long)json_integer_value(json_object_get(j, "id")));
            snprintf(
                gpus, sizeof(gpus), "%lld",
                (long long)(json_integer_value(json_object_get(spec, "nodes")) *
                            json_integer_value(json_object_get(spec, "gpus"))));
            long long s = json_integer_value(json_object_get(j, "start_ms"));
            long long e = json_integer_value(json_object_get(j, "end_ms"));
            clock_format_local(s, start, sizeof(start));
            format_duration((e - s) / 1000, rt, sizeof(rt));
            const char *row[] = {
                id,
                json_string_value(json_object_get(j, "user")),
                json_string_value(json_object_get(j, "project")),
                json_string_value(json_object_get(j, "state")),
                gpus,
                start,
                rt};
            table_add(t, row);
        }
        table_print(t);
        table_destroy(t);
    }
    json_decref(ans);
    client_destroy(cl);
    return 0;
}
