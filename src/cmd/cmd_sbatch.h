/* SPDX-License-Identifier: Apache-2.0 */
/* `#SBATCH` lines of a batch script, read with Slurm's meaning (see
 * cmd_sbatch.c for the options Shoal has and the errors for the rest). */
#ifndef SHOAL_CMD_SBATCH_H
#define SHOAL_CMD_SBATCH_H

#include <jansson.h>

#include "lib/util/error.h"

/* Counts Slurm gives per task or in total, set once the whole script is
 * read (Shoal's are per node). */
struct sbatch {
    long nodes, ntasks, tasks_per_node, cpus_per_task, gpus_total;
    long gpus_per_task;
    /* When set, every bad option of a line is reported here and the
     * line's other options still apply; else the first one ends it. */
    void (*report)(void *arg, const struct sh_error *err);
    void *report_arg;
};

void sbatch_init(struct sbatch *sb);

/* Apply the options of one #SBATCH line (split into words) to the job
 * request. SH_EINVAL naming the option ("#SBATCH --foo: ...") for one
 * Shoal does not have or a bad value (each one to sb->report when set:
 * then err holds the last). */
int sbatch_apply_words(json_t *job, char **words, int n, struct sbatch *sb,
                       struct sh_error *err);

/* After the last line: nodes, GPUs, tasks and CPUs per node. */
int sbatch_finish(json_t *job, const struct sbatch *sb, struct sh_error *err);

#endif
