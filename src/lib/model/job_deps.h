/* SPDX-License-Identifier: Apache-2.0 */
/* Job dependencies, as Slurm users write them: "afterok:12:13,afterany:14,
 * afternotok:15,singleton", "afterok:12_3" for task 3 of array 12. This module parses and prints the list and
 * says, from a target job's state, whether one dependency is met, still
 * waits, or can never be met. It does no I/O; the controller finds the
 * targets and acts (shoald/engine.c).
 */
#ifndef SHOAL_MODEL_JOB_DEPS_H
#define SHOAL_MODEL_JOB_DEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/model/job.h"
#include "lib/util/error.h"

#define JOB_DEPS_MAX 64        /* dependencies of one job */
#define JOB_DEPS_TEXT_MAX 2048 /* bytes of the written form */

enum job_dep_kind {
    JOB_DEP_AFTEROK = 0, /* the target completed (exit 0) */
    JOB_DEP_AFTERANY,    /* the target ended, however */
    JOB_DEP_AFTERNOTOK,  /* the target ended other than completed */
    JOB_DEP_SINGLETON,   /* no earlier job of the same user and name is
                            unfinished (job is 0) */
};

struct job_dep {
    enum job_dep_kind kind;
    uint64_t job; /* the target; 0 for singleton. An array's id (its first
                     task's) names the whole array: every task must meet
                     it, as in Slurm */
    int task;     /* "ID_N": task N of array ID only; -1 when not given */
};

enum job_dep_status {
    JOB_DEP_WAIT = 0, /* not yet */
    JOB_DEP_MET,
    JOB_DEP_NEVER, /* the target ended the wrong way */
};

/* Parse text into a new array (*out, *n; free()). SH_EINVAL naming the
 * item: unknown kinds, ids that are not positive integers, Slurm forms
 * Shoal does not have ("after:", "aftercorr:", "?" for any-of), more than
 * JOB_DEPS_MAX. An empty text is an error too. */
int job_deps_parse(const char *text, struct job_dep **out, int *n,
                   struct sh_error *err);

/* The canonical text ("afterok:12:13,singleton") into buf; returns buf. */
const char *job_deps_format(const struct job_dep *d, int n, char *buf,
                            size_t size);

const char *job_dep_kind_name(enum job_dep_kind k);

/* Whether dependency kind (not singleton) on a target in state `state`
 * (requeue: the target goes back to the queue after a preemption or node
 * failure, so those states are not its end) is met. */
enum job_dep_status job_dep_eval(enum job_dep_kind kind, enum job_state state,
                                 bool requeue);

/* A dependency on a whole array, from each task's own status folded in
 * turn (start from JOB_DEP_MET with first true): afterok and afterany are
 * met when every task's is, never once one's is never; afternotok is met
 * once every task ended and one failed, never when all completed. */
enum job_dep_status job_dep_fold(enum job_dep_kind kind,
                                 enum job_dep_status acc,
                                 enum job_dep_status one, bool first);

#endif
