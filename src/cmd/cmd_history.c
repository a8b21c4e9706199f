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
    "Usage: shoal history [--since WHEN] [--until WHEN] [--user NAME]\n"
    "                     [--project NAME] [--state LIST] [--format COLS]\n"
    "                     [--attempts|-D] [--trace|--json]\n"
    "Jobs that ran and ended in a window (default: the last 30 days), like\n"
    "sacct. --state takes a comma list of completed, failed, cancelled,\n"
    "timeout, preempted, node_fail. --format picks the columns, in order:\n"
    "  id, name, user, project, state, exit, gpus, nodes, gpu_type,\n"
    "  submit, start, end, elapsed, wait, requeues, attempt, nodelist\n"
    "(default id,user,project,state,gpus,start,elapsed).\n"
    "--attempts (-D, sacct's --duplicates) prints a row per attempt of a\n"
    "requeued job, each with its own state, exit, start, end, elapsed and\n"
    "nodelist (default columns id,attempt,user,project,state,exit,start,\n"
    "end,elapsed,nodelist); a job keeps its last 32 attempts.\n"
    "--trace prints them in the trace format of `shoal sim`, to replay the\n"
    "real workload against another cluster shape:\n"
    "  shoal history --trace --since 30d > month.csv\n"
    "  shoal sim --cluster 8x8xH100-80GB --trace month.csv\n"
    "WHEN is a date (2026-11-01) or a duration back from now (7d, 12h).\n";

#define HISTORY_COLS_MAX 16

static const char *const columns[] = {
    "id",      "name",  "user",     "project", "state",    "exit",
    "gpus",    "nodes", "gpu_type", "submit",  "start",    "end",
    "elapsed", "wait",  "requeues", "attempt", "nodelist", NULL};

/* The columns of --format, checked; their count. */
static int parse_format(const char *text, int *cols)
{
    int n = 0;
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int i = 0; columns[i] && found < 0; i++) {
            if (strlen(columns[i]) == len && strncmp(columns[i], p, len) == 0)
                found = i;
        }
        if (found < 0)
            die("--format: unknown column '%.*s' (id, name, user, project, "
                "state, exit, gpus, nodes, gpu_type, submit, start, end, "
                "elapsed, wait, requeues, attempt, nodelist)",
                (int)len, p);
        if (n == HISTORY_COLS_MAX)
            die("--format: at most %d columns", HISTORY_COLS_MAX);
        cols[n++] = found;
        p += len + (p[len] == ',');
    }
    if (n == 0)
        die("--format needs at least one column");
    return n;
}

static void time_cell(long long ms, char *buf, size_t size)
{
    if (ms > 0)
        clock_format_local(ms, buf, size);
    else
        snprintf(buf, size, "-");
}

/* One cell of column c for job j into buf: of attempt a (an entry of its
 * "attempts") where a row is one attempt, else of the job (its last
 * attempt for attempt and nodelist). */
static const char *cell(const json_t *j, const json_t *a, int c, char *buf,
                        size_t size)
{
    const json_t *spec = json_object_get(j, "spec");
    const json_t *atts = json_object_get(j, "attempts");
    const json_t *last = json_array_get(atts, json_array_size(atts) - 1);
    const json_t *run = a ? a : j;
    long long sub = json_integer_value(json_object_get(j, "submit_ms"));
    long long s = json_integer_value(json_object_get(run, "start_ms"));
    long long e = json_integer_value(json_object_get(run, "end_ms"));
    const char *str;
    switch (c) {
    case 0:
        snprintf(buf, size, "%lld",
                 (long long)json_integer_value(json_object_get(j, "id")));
        return buf;
    case 1:
        str = json_string_value(json_object_get(spec, "name"));
        return str ? str : "-";
    case 2:
        return json_string_value(json_object_get(j, "user"));
    case 3:
        return json_string_value(json_object_get(j, "project"));
    case 4:
        return json_string_value(json_object_get(run, "state"));
    case 5:
        if (!json_is_integer(json_object_get(run, "exit_code")))
            return "-";
        snprintf(
            buf, size, "%lld",
            (long long)json_integer_value(json_object_get(run, "exit_code")));
        return buf;
    case 6:
        if (json_integer_value(json_object_get(spec, "gpus_total")))
            snprintf(buf, size, "%lld",
                     (long long)json_integer_value(
                         json_object_get(spec, "gpus_total")));
        else
            snprintf(
                buf, size, "%lld",
                (long long)(json_integer_value(json_object_get(spec, "nodes")) *
                            json_integer_value(json_object_get(spec, "gpus"))));
        return buf;
    case 7:
        snprintf(buf, size, "%lld",
                 (long long)json_integer_value(json_object_get(spec, "nodes")));
        return buf;
    case 8:
        str = json_string_value(json_object_get(spec, "gpu_type"));
        return str ? str : "-";
    case 9:
        time_cell(sub, buf, size);
        return buf;
    case 10:
        time_cell(s, buf, size);
        return buf;
    case 11:
        time_cell(e, buf, size);
        return buf;
    case 12:
        if (s <= 0)
            return "-";
        format_duration((e - s) / 1000, buf, size);
        return buf;
    case 13:
        /* A row per attempt: the wait is the first attempt's. */
        if (s <= 0 ||
            (a && json_integer_value(json_object_get(a, "attempt")) != 0))
            return "-";
        format_duration((s - sub) / 1000, buf, size);
        return buf;
    case 14:
        snprintf(buf, size, "%lld",
                 (long long)json_integer_value(json_object_get(j, "requeues")));
        return buf;
    case 15:
        if (!a && !last)
            return "-";
        snprintf(buf, size, "%lld",
                 (long long)json_integer_value(
                     json_object_get(a ? a : last, "attempt")));
        return buf;
    case 16: {
        size_t k, o = 0;
        const json_t *n;
        buf[0] = '\0';
        json_array_foreach (json_object_get(a ? a : last, "nodes"), k, n)
            o += (size_t)snprintf(buf + o, o < size ? size - o : 0, "%s%s",
                                  k ? "," : "", json_string_value(n));
        return o ? buf : "-";
    }
    }
    return "-";
}

static void add_query(char *path, size_t size, int *n, const char *key,
                      const char *value)
{
    char enc[256];
    if (!value)
        return;
    client_urlencode(value, enc, sizeof(enc));
    *n += snprintf(path + *n, size - (size_t)*n, "&%s=%s", key, enc);
}

int cmd_history(int argc, char **argv)
{
    static const struct option opts[] = {
        {"since", required_argument, NULL, 's'},
        {"until", required_argument, NULL, 'u'},
        {"user", required_argument, NULL, 'U'},
        {"project", required_argument, NULL, 'P'},
        {"state", required_argument, NULL, 'S'},
        {"format", required_argument, NULL, 'f'},
        {"trace", no_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        {"attempts", no_argument, NULL, 'D'},
        {"duplicates", no_argument, NULL, 'D'},
        {NULL, 0, NULL, 0},
    };
    const char *since = NULL, *until = NULL, *user = NULL, *project = NULL,
               *state = NULL,
               *format = "id,user,project,state,gpus,start,"
                         "elapsed";
    bool trace = false, json_out = false, per_attempt = false,
         formatted = false;
    int c;
    struct cmd_opts p;
    cmd_opts_init(&p, "history", history_usage, opts, "D", false, argc, argv);
    while ((c = cmd_opts_next(&p)) != -1) {
        switch (c) {
        case 's':
            since = p.arg;
            break;
        case 'u':
            until = p.arg;
            break;
        case 'U':
            user = p.arg;
            break;
        case 'P':
            project = p.arg;
            break;
        case 'S':
            state = p.arg;
            break;
        case 'f':
            format = p.arg;
            formatted = true;
            break;
        case 'D':
            per_attempt = true;
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
    if (per_attempt && trace)
        die("--attempts and --trace exclude each other (a trace has one row "
            "per job)");
    if (per_attempt && !formatted)
        format = "id,attempt,user,project,state,exit,start,end,elapsed,"
                 "nodelist";
    int cols[HISTORY_COLS_MAX];
    int ncols = parse_format(format, cols);
    char path[2048];
    int n = snprintf(path, sizeof(path), "/v1/history?format=%s",
                     trace ? "trace" : "json");
    add_query(path, sizeof(path), &n, "since", since);
    add_query(path, sizeof(path), &n, "until", until);
    add_query(path, sizeof(path), &n, "user", user);
    add_query(path, sizeof(path), &n, "project", project);
    add_query(path, sizeof(path), &n, "state", state);
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
    /* Page after page (the controller answers at most 5000 at once). */
    json_t *ans = json_object(), *jobs = json_array();
    json_object_set_new(ans, "jobs", jobs);
    long long after = 0;
    for (;;) {
        char page[2200];
        snprintf(page, sizeof(page), "%s&limit=5000&after=%lld", path, after);
        json_t *part = cmd_call(cl, "GET", page, NULL);
        json_t *pj = json_object_get(part, "jobs");
        size_t np = json_array_size(pj);
        if (np)
            after = json_integer_value(
                json_object_get(json_array_get(pj, np - 1), "id"));
        json_array_extend(jobs, pj);
        long long more = json_integer_value(json_object_get(part, "more"));
        json_decref(part);
        if (!np || more <= 0)
            break;
    }
    if (json_out) {
        cmd_print_json(json_incref(jobs));
    } else {
        const char *hdr[HISTORY_COLS_MAX];
        char up[HISTORY_COLS_MAX][16];
        for (int k = 0; k < ncols; k++) {
            snprintf(up[k], sizeof(up[k]), "%s", columns[cols[k]]);
            for (char *q = up[k]; *q; q++)
                *q = (char)(*q >= 'a' && *q <= 'z' ? *q - 32 : *q);
            hdr[k] = up[k];
        }
        struct table *t = table_create(ncols, hdr);
        size_t i;
        json_t *j;
        json_array_foreach (jobs, i, j) {
            char bufs[HISTORY_COLS_MAX][256];
            const char *row[HISTORY_COLS_MAX];
            const json_t *atts = json_object_get(j, "attempts");
            size_t rows = per_attempt ? json_array_size(atts) : 1;
            for (size_t r = 0; r < rows; r++) {
                const json_t *a = per_attempt ? json_array_get(atts, r) : NULL;
                for (int k = 0; k < ncols; k++)
                    row[k] = cell(j, a, cols[k], bufs[k], sizeof(bufs[k]));
                table_add(t, row);
            }
        }
        table_print(t);
        table_destroy(t);
    }
    json_decref(ans);
    client_destroy(cl);
    return 0;
}
