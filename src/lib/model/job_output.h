/* SPDX-License-Identifier: Apache-2.0 */
/* Output file patterns (--output / --error, Slurm's -o / -e): the checks
 * and the expansion of %j and %J (job id; Shoal has no steps here), %A (array job id; the job id outside
 * an array), %a (array task index; 0 outside an array), %x (job name),
 * %u (user), %N (node) and %% into a path. The agent expands them per node
 * and the job's tasks open the file as the job's user; the CLI expands
 * them to say where output went. No I/O here.
 */
#ifndef SHOAL_MODEL_JOB_OUTPUT_H
#define SHOAL_MODEL_JOB_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/util/error.h"

/* What the escapes stand for. Strings borrowed; name may be NULL. */
struct job_output_vars {
    uint64_t id;
    uint64_t array_id; /* 0: not an array task */
    int array_task;
    const char *name;
    const char *user;
    const char *node;
};

/* A pattern (field names it in errors): 1..JOB_PATH_MAX printable bytes,
 * only the escapes above. SH_EINVAL naming an unknown escape. */
int job_output_check(const char *field, const char *pattern,
                     struct sh_error *err);

/* Expand a checked pattern into buf. A '/' in a substituted name becomes
 * '_' (a name never adds directories). -1 when the result does not fit. */
int job_output_expand(const char *pattern, const struct job_output_vars *v,
                      char *buf, size_t size);

#endif
