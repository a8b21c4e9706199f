/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal update JOB`: change a pending job's time limit, priority, GPUs,
 * nodes, GPUs in all, name or GPU model, or lower a running job's time limit (raising
 * it, or removing it, is for cluster admins). PATCH /v1/jobs/ID. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "cmd/cmd.h"
#include "cmd/cmd_opts.h"
#include "lib/util/parse.h"

static const char usage[] =
    "Usage: shoal update JOB [options]\n"
    "Change a pending job (it is scheduled anew), or lower the time limit\n"
    "of a running one (cluster admins may also raise it). Who may cancel\n"
    "a job may update it.\n"
    "\n"
    "  -t, --time DUR         time limit: 90s, 30m, 2h, 1d, HH:MM:SS\n"
    "      --priority CLASS   high, normal or low\n"
    "  -g, --gpus N           GPUs per node\n"
    "  -N, --nodes N          nodes\n"
    "      --gpus-total N     N GPUs in all, Shoal picks nodes x GPUs (not\n"
    "                         with --gpus or --nodes; replaces the job's)\n"
    "  -n, --name NAME        job name\n"
    "      --gpu-type MODEL   GPU model, e.g. H100-80GB\n";

int cmd_update(int argc, char **argv)
{
    struct cmd_flag flags[] = {
        {"time", true, NULL, false},       {"priority", true, NULL, false},
        {"gpus", true, NULL, false},       {"nodes", true, NULL, false},
        {"name", true, NULL, false},       {"gpu-type", true, NULL, false},
        {"gpus-total", true, NULL, false}, {NULL, false, NULL, false},
    };
    const char *pos[1];
    int npos = cmd_opts_collect("update", usage, flags, argc, argv, pos, 1);
    if (npos != 1)
        die("which job? (shoal update JOB [options]; see shoal update "
            "--help)");
    const char *id = cmd_job_ref(pos[0]);
    json_t *body = json_object();
    struct sh_error err;
    if (flags[0].set) {
        int64_t secs;
        if (parse_duration("--time", flags[0].value, &secs, &err) < 0)
            die("%s", err.msg);
        json_object_set_new(body, "time_limit", json_integer(secs));
    }
    if (flags[1].set)
        json_object_set_new(body, "priority", json_string(flags[1].value));
    if (flags[2].set)
        json_object_set_new(
            body, "gpus",
            json_integer(cmd_parse_int("--gpus", flags[2].value, 0, 64)));
    if (flags[3].set)
        json_object_set_new(
            body, "nodes",
            json_integer(cmd_parse_int("--nodes", flags[3].value, 1, 1024)));
    if (flags[4].set)
        json_object_set_new(body, "name", json_string(flags[4].value));
    if (flags[5].set)
        json_object_set_new(body, "gpu_type", json_string(flags[5].value));
    if (flags[6].set) {
        if (flags[2].set || flags[3].set)
            die("--gpus-total lets Shoal pick the nodes and the GPUs per "
                "node: not with %s",
                flags[2].set ? "--gpus" : "--nodes");
        json_object_set_new(body, "gpus_total",
                            json_integer(cmd_parse_int(
                                "--gpus-total", flags[6].value, 1, 65536)));
    }
    if (json_object_size(body) == 0)
        die("nothing to change: give --time, --priority, --gpus, --nodes, "
            "--gpus-total, --name or --gpu-type");
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%s", id);
    struct client *c = cmd_connect();
    json_t *out = NULL;
    int rc = client_call(c, "PATCH", path, body, &out, NULL, &err);
    json_decref(body);
    client_destroy(c);
    if (rc < 0)
        die("%s", err.msg);
    json_decref(out);
    printf("updated job %s\n", id);
    return 0;
}
