/* SPDX-License-Identifier: Apache-2.0 */
/* shoal: the command-line client. Dispatches `shoal VERB ...` to
 * cmd_<verb>() in cmd_<verb>.c. It talks only to the REST API. */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_sim.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"up", cmd_up, "start a local cluster in the foreground"},
    {"submit", cmd_submit, "submit a job (options, or a #SHOAL script)"},
    {"queue", cmd_queue, "list pending and running jobs, with reasons"},
    {"show", cmd_show, "show one job"},
    {"cancel", cmd_cancel, "cancel jobs"},
    {"hold", cmd_hold, "keep pending jobs from starting"},
    {"release", cmd_release, "let held jobs start"},
    {"update", cmd_update, "change a pending job, or a running one's limit"},
    {"requeue", cmd_requeue, "put jobs back in the queue (running: stopped)"},
    {"logs", cmd_logs, "print a job's output (-f to follow)"},
    {"nodes", cmd_nodes, "list nodes and their GPUs"},
    {"node", cmd_node, "drain, resume, rekey or delete a node; join tokens"},
    {"history", cmd_history, "jobs that ran; --trace for shoal sim"},
    {"sim", cmd_sim, "replay a job trace against a cluster shape"},
    {"slice", cmd_slice, "GPU slices from presets: presets, apply, show"},
    {"usage", cmd_usage,
     "GPU-hours, jobs, waits and utilization per user, "
     "project, team or GPU model"},
    {"team", cmd_team, "create, list, change and delete teams"},
    {"project", cmd_project, "projects: quotas, members and roles"},
    {"user", cmd_user, "users, tokens, limits, default projects"},
    {"volume", cmd_volume, "storage jobs mount by name: create, list, show"},
    {"partition", cmd_partition, "partitions jobs name with -p (admins)"},
    {"qos", cmd_qos, "QOS jobs name with --qos: priority, limits (admins)"},
    {"secret", cmd_secret, "credentials volumes use, stored sealed"},
    {"admin", cmd_admin, "operate the controller: backup"},
    {NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fputs("Usage: shoal COMMAND [options]\n"
          "Shoal: run GPU servers as one shared pool.\n\nCommands:\n",
          out);
    for (const struct command *c = commands; c->name; c++)
        fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fputs("\nEvery command takes --help; listings take --json.\n"
          "The controller is found through SHOAL_URL and SHOAL_TOKEN, else\n"
          "~/.config/shoal/config (written by `shoal up`).\n",
          out);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("shoal %s\n", SHOAL_VERSION);
        return 0;
    }
    for (const struct command *c = commands; c->name; c++) {
        if (strcmp(argv[1], c->name) == 0)
            return c->run(argc - 1, argv + 1);
    }
    fprintf(stderr, "shoal: unknown command '%s' (see shoal --help)\n",
            argv[1]);
    return 2;
}
