/* SPDX-License-Identifier: Apache-2.0 */
/* One node's part of a job step (srun): its tasks started with their
 * ranks, output labelled when asked, waited for. Run by srun for the
 * part on its own node and by `shoal-step --serve` for the parts of the
 * other nodes; both already run inside the job (its user, cgroup,
 * devices, namespaces), so the tasks are the job's too. */
#ifndef SHOAL_AGENT_STEP_TASKS_H
#define SHOAL_AGENT_STEP_TASKS_H

#include <stdbool.h>

#define STEP_TASKS_MAX 1024

struct step_part {
    char **argv;     /* the command, NULL-terminated */
    char **env;      /* the step's environment, NULL-terminated */
    const char *cwd; /* NULL: the current folder */
    int step;        /* SLURM_STEP_ID */
    int first;       /* the rank of its first task */
    int ntasks;      /* its tasks on this node */
    int node_index;  /* this node among the step's nodes */
    int step_tasks;  /* the step's tasks on every node */
    int step_nodes;
    int gpus_per_task; /* 0: every task sees the node's GPUs */
    bool label;        /* prefix each line with the task's rank */
    bool kill_on_bad_exit;
    /* While the tasks run: when watch_fd (-1: none) is readable,
     * cancelled(arg) says whether the step was cancelled (1: its tasks
     * are killed), nothing yet (0) or that watch_fd has nothing more to
     * say (-1). */
    int watch_fd;
    int (*cancelled)(void *arg);
    void *arg;
};

/* Run the part; the highest exit of its tasks, 128+N for a task killed by
 * signal N (as srun reports), 127 when a task could not start. */
int step_part_run(const struct step_part *p);

/* value of KEY in env, or NULL. */
const char *step_env_get(char **env, const char *key);

#endif
