/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal usage`: GPU-hours, jobs, average wait and GPU utilization per
 * user, project, team or GPU model over a time window. */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_opts.h"
#include "lib/util/parse.h"

static const char usage_usage[] =
    "Usage: shoal usage [--by user|project|team|gpu-model] [--since WHEN]\n"
    "                   [--until WHEN] [--json|--csv]\n"
    "Report use: GPU-hours (a slice counts as its share of a GPU), jobs\n"
    "started, average wait, average GPU utilization (how much of what was\n"
    "allocated was used), CPU-hours and memory GiB-hours (allocated).\n"
    "WHEN is a date (2026-11-01, 2026-11-01T08:00:00Z) or a duration back\n"
    "from now (7d, 12h). Default: --by project --since 30d. Users who are not\n"
    "cluster admins see only jobs they may see.\n";

static const char *by_header(const char *by)
{
    if (strcmp(by, "gpu-model") == 0)
        return "GPU-MODEL";
    if (strcmp(by, "user") == 0)
        return "USER";
    if (strcmp(by, "team") == 0)
        return "TEAM";
    return "PROJECT";
}

static double num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

int cmd_usage(int argc, char **argv)
{
    static const struct option opts[] = {
        {"by", required_argument, NULL, 'b'},
        {"since", required_argument, NULL, 's'},
        {"until", required_argument, NULL, 'u'},
        {"json", no_argument, NULL, 'j'},
        {"csv", no_argument, NULL, 'c'},
        {NULL, 0, NULL, 0},
    };
    const char *by = "project", *since = NULL, *until = NULL;
    bool json_out = false, csv = false;
    int c;
    struct cmd_opts p;
    cmd_opts_init(&p, "usage", usage_usage, opts, NULL, false, argc, argv);
    while ((c = cmd_opts_next(&p)) != -1) {
        switch (c) {
        case 'b':
            if (strcmp(p.arg, "user") && strcmp(p.arg, "project") &&
                strcmp(p.arg, "team") && strcmp(p.arg, "gpu-model"))
                die("--by must be user, project, team or gpu-model");
            by = p.arg;
            break;
        case 's':
            since = p.arg;
            break;
        case 'u':
            until = p.arg;
            break;
        case 'j':
            json_out = true;
            break;
        case 'c':
            csv = true;
            break;
        default: /* CMD_OPT_ARG */
            cmd_opts_fail(&p, "unexpected argument '%s'", p.arg);
        }
    }
    if (json_out && csv)
        die("--json and --csv exclude each other");
    char path[512], enc[128];
    int n = snprintf(path, sizeof(path), "/v1/usage?by=%s", by);
    if (since) {
        client_urlencode(since, enc, sizeof(enc));
        n += snprintf(path + n, sizeof(path) - (size_t)n, "&since=%s", enc);
    }
    if (until) {
        client_urlencode(until, enc, sizeof(enc));
        snprintf(path + n, sizeof(path) - (size_t)n, "&until=%s", enc);
    }
    struct client *cl = cmd_connect();
    json_t *ans = cmd_call(cl, "GET", path, NULL);
    json_t *rows = json_object_get(ans, "rows");
    size_t i;
    json_t *r;
    if (json_out) {
        cmd_print_json(json_incref(rows));
    } else if (csv) {
        printf("%s,gpu_hours,jobs,wait_avg_s,gpu_utilization,cpu_hours,"
               "mem_gib_hours\n",
               by);
        json_array_foreach (rows, i, r) {
            const json_t *u = json_object_get(r, "gpu_utilization");
            printf("%s,%.3f,%lld,%.0f,",
                   json_string_value(json_object_get(r, "key")),
                   num(r, "gpu_hours"),
                   (long long)json_integer_value(json_object_get(r, "jobs")),
                   num(r, "wait_avg_s"));
            if (json_is_number(u))
                printf("%.1f", json_number_value(u));
            printf(",%.3f,%.3f\n", num(r, "cpu_hours"),
                   num(r, "mem_gib_hours"));
        }
    } else {
        const char *hdr[] = {by_header(by),  "GPU-HOURS", "JOBS",
                             "AVG-WAIT",     "GPU-UTIL",  "CPU-HOURS",
                             "MEM-GIB-HOURS"};
        struct table *t = table_create(7, hdr);
        json_array_foreach (rows, i, r) {
            char gh[32], jobs[32], wait[32], util[32] = "-", ch[32], mh[32];
            snprintf(gh, sizeof(gh), "%.2f", num(r, "gpu_hours"));
            snprintf(jobs, sizeof(jobs), "%lld",
                     (long long)json_integer_value(json_object_get(r, "jobs")));
            format_duration((int64_t)num(r, "wait_avg_s"), wait, sizeof(wait));
            const json_t *u = json_object_get(r, "gpu_utilization");
            if (json_is_number(u))
                snprintf(util, sizeof(util), "%.0f%%", json_number_value(u));
            snprintf(ch, sizeof(ch), "%.2f", num(r, "cpu_hours"));
            snprintf(mh, sizeof(mh), "%.2f", num(r, "mem_gib_hours"));
            const char *row[] = {json_string_value(json_object_get(r, "key")),
                                 gh,
                                 jobs,
                                 wait,
                                 util,
                                 ch,
                                 mh};
            table_add(t, row);
        }
        printf("usage from %s to %s\n",
               json_string_value(json_object_get(ans, "since")),
               json_string_value(json_object_get(ans, "until")));
        table_print(t);
        table_destroy(t);
    }
    json_decref(ans);
    client_destroy(cl);
    return 0;
}
