/* SPDX-License-Identifier: Apache-2.0 */
/* Where a submitted job may run, judged at submission as Slurm does: every
 * node its --nodelist names exists, and some node satisfies its
 * --constraint. A job that could never start is refused with the valid
 * names instead of pending for ever. Nothing is judged while the cluster
 * knows no node yet. */
#ifndef SHOAL_SHOALD_JOBWHERE_H
#define SHOAL_SHOALD_JOBWHERE_H

#include "lib/util/error.h"

struct nodetab;
struct job_spec;

/* SH_EINVAL naming the unknown nodes (and the known ones), or the
 * constraint no node has (and the labels nodes have). */
int jobwhere_check(const struct nodetab *nodes, const struct job_spec *spec,
                   struct sh_error *err);

#endif
