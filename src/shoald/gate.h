/* SPDX-License-Identifier: Apache-2.0 */
/* What keeps a pending job out of scheduling before the engine ever sees
 * it: a hold (`shoal hold`, `submit --hold`), a dependency not yet met
 * (`--dependency afterok:12`) or a start time not yet reached
 * (`--begin now+1h`: "begin: eligible at 2026-12-02T10:00:00Z"). This module says whether a job's gate is
 * open, still closed (with the text `shoal queue` shows), or can never
 * open (a dependency that can never be met: the job is cancelled with that
 * reason), and checks dependencies at submission. engine.c keeps the
 * closed jobs aside and asks again whenever a job changes state.
 */
#ifndef SHOAL_SHOALD_GATE_H
#define SHOAL_SHOALD_GATE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/model/job.h"
#include "lib/util/error.h"
#include "shoald/auth.h"

struct jobtab;
struct store;
struct tenancy;

enum gate_state {
    GATE_OPEN = 0, /* the engine may schedule it */
    GATE_HELD,     /* held */
    GATE_WAIT,     /* a dependency is not met yet */
    GATE_NEVER,    /* a dependency can never be met */
};

/* The gate of a pending job; why gets the reason for anything but OPEN,
 * e.g. "dependency: waiting for job 12 (running)". Dependencies are looked
 * up in jobs, and in store for jobs no longer in memory; now_ms is the wall
 * clock the job's --begin is compared with. */
enum gate_state gate_of(const struct jobtab *jobs, struct store *store,
                        int64_t now_ms, const struct job *job, char *why,
                        size_t size);

/* A submission's dependencies: every job named exists and the caller may
 * see it (the same answer for both, so ids of hidden jobs do not leak);
 * singleton needs a job name. SH_EINVAL. */
int gate_check_submit(const struct jobtab *jobs, struct store *store,
                      const struct tenancy *tenancy,
                      const struct api_caller *caller,
                      const struct job_spec *spec, struct sh_error *err);

#endif
