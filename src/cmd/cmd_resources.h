/* SPDX-License-Identifier: Apache-2.0 */
/* The request forms of host CPUs and memory on `shoal submit` and in
 * #SHOAL/#SBATCH lines (--cpus-per-task, --cpus-per-gpu, --mem-per-gpu,
 * --mem-per-cpu), resolved to the per-node amounts the API takes (cpus,
 * mem). The forms wait in the request under their own keys (CMD_RES_*)
 * until cmd_resources_resolve() turns them into cpus and mem.
 */
#ifndef SHOAL_CMD_CMD_RESOURCES_H
#define SHOAL_CMD_CMD_RESOURCES_H

#include <jansson.h>

#include "lib/util/error.h"

#define CMD_RES_CPUS_PER_TASK "cpus_per_task"
#define CMD_RES_CPUS_PER_GPU "cpus_per_gpu"
#define CMD_RES_MEM_PER_GPU "mem_per_gpu"
#define CMD_RES_MEM_PER_CPU "mem_per_cpu"

/* The command line's forms win over a script's: where cli gives a CPU
 * (memory) form, drop every CPU (memory) form from job. */
void cmd_resources_prefer(json_t *job, const json_t *cli);

/* Turn the forms in job into cpus and mem per node: CPUs per task x
 * tasks per node (tasks_per_node, default 1); per GPU x GPUs per node
 * (gpus, or 1 for a slice); memory per CPU x the CPUs per node. Two forms
 * of one resource, a per-GPU form without GPUs per node (none, or
 * gpus_total) and --mem-per-cpu without a CPU count are refused. 0, or -1
 * with err naming the options. */
int cmd_resources_resolve(json_t *job, struct sh_error *err);

#endif
