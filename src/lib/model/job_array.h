/* SPDX-License-Identifier: Apache-2.0 */
/* Job arrays as Slurm users write them: "0-99", "0-99:2", "1,3,5-7",
 * each with an optional "%8" (at most 8 tasks running or queued at once).
 * This module parses that text into the task indices. No I/O; the
 * controller makes one job per task (shoald/jobs.c).
 */
#ifndef SHOAL_MODEL_JOB_ARRAY_H
#define SHOAL_MODEL_JOB_ARRAY_H

#include "lib/util/error.h"

#define JOB_ARRAY_TASKS_MAX 10000   /* tasks of one array */
#define JOB_ARRAY_INDEX_MAX 9999999 /* largest task index */
#define JOB_ARRAY_TEXT_MAX 1024     /* bytes of the written form */

struct job_array {
    int *idx; /* task indices, ascending, each once */
    int n;
    int max_running; /* the %M; 0 = no limit */
};

/* Parse text; a->idx is malloc'ed (job_array_fini()). SH_EINVAL naming
 * the part that is wrong. */
int job_array_parse(const char *text, struct job_array *a,
                    struct sh_error *err);
void job_array_fini(struct job_array *a);

#endif
