/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal logs [-f] [--attempt N] JOB`: print a job's output (stdout and
 * stderr as the agent captured them, interleaved in arrival order) of one
 * attempt, the latest by default; -f keeps following until the job ends,
 * into the next attempt when the job is requeued meanwhile. Agents push
 * output to the controller, so logs are there even for nodes behind NAT. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/cmd_opts.h"
#include "lib/model/job_output.h"

static const char logs_usage[] =
    "Usage: shoal logs [-f] [--stream out|err] [--attempt N] JOB\n"
    "Print a job's output. -f follows it until the job ends, and exits\n"
    "with its status: 0 when it completed, 1 (with how it ended) else.\n"
    "Each attempt of a requeued or preempted job keeps its own output.\n"
    "A job submitted with --output/--error wrote there instead: logs says\n"
    "where (every attempt appends to those files).\n"
    "  --stream out|err   only stdout or only stderr (default: both)\n"
    "  --attempt N        attempt N's output (from 0, as `shoal show`\n"
    "                     counts; default: the latest)\n";

/* Where --output / --error sent the job's output (its tasks wrote those
 * files on their nodes, not to the log kept here): said on stderr. */
static void tell_output_files(const json_t *j)
{
    static const char *const keys[2] = {"output", "error"};
    const json_t *place = json_object_get(j, "placement");
    const char *node =
        json_string_value(json_object_get(json_array_get(place, 0), "node"));
    for (int i = 0; i < 2; i++) {
        const char *pattern = json_string_value(json_object_get(j, keys[i]));
        char path[4200];
        if (!pattern)
            continue;
        struct job_output_vars v = {
            .id = (uint64_t)json_integer_value(json_object_get(j, "id")),
            .array_id =
                (uint64_t)json_integer_value(json_object_get(j, "array_id")),
            .array_task =
                (int)json_integer_value(json_object_get(j, "array_task")),
            .name = json_string_value(json_object_get(j, "name")),
            .user = json_string_value(json_object_get(j, "user")),
            .node = node,
        };
        if (job_output_expand(pattern, &v, path, sizeof(path)) < 0)
            continue;
        fprintf(stderr, "shoal: the job's %s went to %s%s%s%s\n",
                i == 0 ? (json_object_get(j, "error") ? "stdout"
                                                      : "stdout and stderr")
                       : "stderr",
                path, node ? " on " : "", node ? node : "",
                json_array_size(place) > 1 ? " (and its other nodes)" : "");
    }
}

/* logs -f ends with the job's status: 0 when it completed, else 1 with
 * how it ended. */
static int follow_status(const json_t *j)
{
    const char *state = json_string_value(json_object_get(j, "state"));
    const char *reason = json_string_value(json_object_get(j, "reason"));
    const json_t *ec = json_object_get(j, "exit_code");
    if (state && strcmp(state, "completed") == 0)
        return 0;
    if (!state || strcmp(state, "pending") == 0 ||
        strcmp(state, "running") == 0)
        return 0; /* requeued while we followed: not an end */
    fprintf(stderr, "shoal: job %lld %s",
            (long long)json_integer_value(json_object_get(j, "id")), state);
    if (json_is_integer(ec))
        fprintf(stderr, " (exit %lld)", (long long)json_integer_value(ec));
    if (reason && *reason)
        fprintf(stderr, ": %s", reason);
    fputc('\n', stderr);
    return 1;
}

int cmd_logs(int argc, char **argv)
{
    static const struct option opts[] = {
        {"follow", no_argument, NULL, 'f'},
        {"stream", required_argument, NULL, 's'},
        {"attempt", required_argument, NULL, 'a'},
        {NULL, 0, NULL, 0},
    };
    bool follow = false;
    const char *stream = "all";
    const char *job = NULL;
    long long attempt = -1;
    int c;
    struct cmd_opts p;
    cmd_opts_init(&p, "logs", logs_usage, opts, "f", false, argc, argv);
    while ((c = cmd_opts_next(&p)) != -1) {
        switch (c) {
        case 'f':
            follow = true;
            break;
        case 's':
            if (strcmp(p.arg, "out") && strcmp(p.arg, "err"))
                die("--stream must be out or err");
            stream = p.arg;
            break;
        case 'a':
            attempt = cmd_parse_int("--attempt", p.arg, 0, INT32_MAX);
            break;
        default: /* CMD_OPT_ARG: the job */
            if (job)
                die("which job? (shoal logs [-f] JOB)");
            job = p.arg;
        }
    }
    if (!job)
        die("which job? (shoal logs [-f] JOB)");
    const char *id = cmd_job_ref(job);
    struct client *cl = cmd_connect();
    /* A follow may wait up to the server's long-poll time per call. */
    client_set_timeout(cl, 60000);
    char jpath[96];
    snprintf(jpath, sizeof(jpath), "/v1/jobs/%s", id);
    json_t *j = cmd_call(cl, "GET", jpath, NULL);
    /* Read one attempt, pinned so that offsets stay in one file; a job
     * with --output keeps none per attempt (the controller says so when
     * one is asked for). */
    bool pinned = attempt >= 0 || !json_is_string(json_object_get(j, "output"));
    bool chosen = attempt >= 0;
    if (attempt < 0)
        attempt = json_integer_value(json_object_get(j, "attempt"));
    json_decref(j);
    long long offset = 0;
    for (;;) {
        char path[200], att[40] = "";
        if (pinned)
            snprintf(att, sizeof(att), "&attempt=%lld", attempt);
        snprintf(path, sizeof(path),
                 "/v1/jobs/%s/logs?offset=%lld&stream=%s%s%s", id, offset,
                 stream, att, follow ? "&wait=20" : "");
        json_t *ans = cmd_call(cl, "GET", path, NULL);
        const char *data = json_string_value(json_object_get(ans, "data"));
        size_t len = json_string_length(json_object_get(ans, "data"));
        if (data && len)
            fwrite(data, 1, len, stdout);
        fflush(stdout);
        offset = (long long)json_integer_value(json_object_get(ans, "offset"));
        bool done = json_is_true(json_object_get(ans, "eof"));
        bool more = json_is_true(json_object_get(ans, "more"));
        long long attempts =
            (long long)json_integer_value(json_object_get(ans, "attempts"));
        json_decref(ans);
        if (more)
            continue; /* a page of a long log: fetch the rest now */
        if (follow && done && pinned && !chosen && attempts > attempt + 1) {
            /* Requeued while we followed: go on with the next attempt. */
            attempt++;
            offset = 0;
            fflush(stdout);
            fprintf(stderr, "shoal: job %s was requeued: attempt %lld\n", id,
                    attempt);
            continue;
        }
        if (!follow || done)
            break;
    }
    j = cmd_call(cl, "GET", jpath, NULL);
    tell_output_files(j);
    int rc = follow ? follow_status(j) : 0;
    json_decref(j);
    client_destroy(cl);
    return rc;
}
