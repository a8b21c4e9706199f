/* SPDX-License-Identifier: Apache-2.0 */
/* Which of the submitter's environment variables travel with a job, as
 * Slurm's --export says:
 *   ALL (the default)   every variable of the submitter, PATH included
 *   NONE (or NIL)       none (the job gets the node's default PATH)
 *   [ALL,]A,B=v         A with its current value and B=v; without ALL,
 *                       only these
 * Never sent: SHOAL_TOKEN (the submitter's credential; naming it is an
 * error). Left out of ALL: the variables that describe the submitter's
 * own job or session and that the job gets afresh (SHOAL_*, SLURM_*,
 * CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, the distributed
 * launchers' MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK/LOCAL_RANK/NODE_RANK/
 * LOCAL_WORLD_SIZE, PWD, OLDPWD) and exported shell functions (their
 * names are not variable names). */
#ifndef SHOAL_CMD_EXPORT_H
#define SHOAL_CMD_EXPORT_H

#include <jansson.h>

#include "lib/util/error.h"

/* The most bytes (names and values) an exported environment may hold. */
#define EXPORT_BYTES_MAX (256 * 1024)

/* Check an --export value. SH_EINVAL naming the bad item. */
int export_check(const char *spec, struct sh_error *err);

/* Add the variables spec (NULL: ALL) exports from environ to env (a JSON
 * object NAME -> value); entries env already has (--env) are kept. SH_EINVAL
 * or SH_ETOOLARGE saying what to do (past JOB_ENV_MAX entries, a value
 * past JOB_ENV_VALUE_MAX, EXPORT_BYTES_MAX in all); env is then unchanged. */
int export_env(json_t *env, const char *spec, char *const *environ,
               struct sh_error *err);

#endif
