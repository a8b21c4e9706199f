/* SPDX-License-Identifier: Apache-2.0 */
/* Host CPUs and memory of jobs at submission: the defaults a job that asks
 * none gets (a fair share of its node, never the whole node: shoald
 * --default-cpus-per-gpu, --default-mem-per-gpu, --default-cpus,
 * --default-mem-per-cpu), and the refusal of a request no node could ever
 * hold, naming the largest node's figures. The engine (src/sched) counts
 * the resolved amounts; the agent enforces them in the job's cgroup.
 */
#ifndef SHOAL_SHOALD_RESOURCES_H
#define SHOAL_SHOALD_RESOURCES_H

#include "lib/model/job.h"
#include "lib/util/error.h"

struct shoald;

/* Fill the spec's cpus and mem (per node) where it gives none, from the
 * controller's defaults or, where an admin set none, from the nodes: per
 * GPU the least a node has per GPU (its CPUs or memory over its GPUs; no
 * CPUs where a node has fewer CPUs than GPUs); a slice its part of a
 * GPU's memory (N/7 for a MIG "Ng.*" profile, 1/N for "shared/N", else
 * 1/8) and no CPUs; a job without GPUs --default-cpus (none
 * unless set) and per CPU (at least one) --default-mem-per-cpu or the
 * least memory a node has per CPU (per GPU, where it has more GPUs). */
void resources_defaults(const struct shoald *d, struct job_spec *spec);

/* 0, or -1 with SH_EINVAL when no registered node has the CPUs and memory
 * the spec asks per node ("needs 500G memory on a node but the largest
 * node has 23.6G"). No node registered: 0 (nothing to judge by). */
int resources_check(const struct shoald *d, const struct job_spec *spec,
                    struct sh_error *err);

/* The CPUs and memory the running jobs with a part on node name hold, for
 * the nodes view. */
void resources_node_allocated(const struct shoald *d, const char *name,
                              int *cpus, uint64_t *mem);

#endif
