/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal logs [-f] JOB`: print a job's output (stdout and stderr as the
 * agent captured them, interleaved in arrival order); -f keeps following
 * until the job ends. Agents push output to the controller, so logs are
 * there even for nodes behind NAT. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/cmd_opts.h"

static const char logs_usage[] =
    "Usage: shoal logs [-f] [--stream out|err] JOB\n"
    "Print a job's output. -f follows it until the job ends.\n"
    "  --stream out|err   only stdout or only stderr (default: both)\n";

int cmd_logs(int argc, char **argv)
{
    static const struct option opts[] = {
        {"follow", no_argument, NULL, 'f'},
        {"stream", required_argument, NULL, 's'},
        {NULL, 0, NULL, 0},
    };
    bool follow = false;
    const char *stream = "all";
    const char *job = NULL;
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
    long long offset = 0;
    for (;;) {
        char path[160];
        snprintf(path, sizeof(path), "/v1/jobs/%s/logs?offset=%lld&stream=%s%s",
                 id, offset, stream, follow ? "&wait=20" : "");
        json_t *ans = cmd_call(cl, "GET", path, NULL);
        const char *data = json_string_value(json_object_get(ans, "data"));
        size_t len = json_string_length(json_object_get(ans, "data"));
        if (data && len)
            fwrite(data, 1, len, stdout);
        fflush(stdout);
        offset = (long long)json_integer_value(json_object_get(ans, "offset"));
        bool done = json_is_true(json_object_get(ans, "eof"));
        bool more = json_is_true(json_object_get(ans, "more"));
        json_decref(ans);
        if (more)
            continue; /* a page of a long log: fetch the rest now */
        if (!follow || done)
            break;
    }
    client_destroy(cl);
    return 0;
}
