/* SPDX-License-Identifier: Apache-2.0 */
/* Accounting and idle GPUs. From the agents' heartbeats it keeps, per
 * running job, the time-weighted GPU utilization of its GPUs, and flags a
 * job idle when all its GPUs stay under a threshold for a set time; the
 * job's project policy then says what follows:
 *   none     nothing
 *   warn     the job shows as idle in `shoal queue` and `shoal show`
 *   cancel   the job is cancelled
 *   preempt  the job is preempted (requeued if it asked) when other jobs
 *            wait for GPUs
 * It also answers usage reports (`shoal usage`): GPU-hours, jobs, wait and
 * utilization per user, project, team or GPU model over a time window, from
 * the store's job history. A slice counts as its share of a GPU.
 */
#ifndef SHOAL_SHOALD_ACCT_H
#define SHOAL_SHOALD_ACCT_H

#include <jansson.h>

#include "lib/model/job.h"
#include "lib/model/node.h"
#include "shoald/auth.h"
#include "shoald/shoald.h"

enum acct_idle_policy {
    ACCT_IDLE_NONE = 0,
    ACCT_IDLE_WARN,
    ACCT_IDLE_CANCEL,
    ACCT_IDLE_PREEMPT,
};

const char *acct_idle_policy_name(enum acct_idle_policy p);
int acct_idle_policy_from_name(const char *name, enum acct_idle_policy *out);

/* Fresh GPU samples of node n arrived at now_ms: account them to the
 * node's running jobs and flag or clear idle ones. */
void acct_node_samples(struct shoald *d, struct node *n, int64_t now_ms);

/* A run of job ended on a node with its processes' CPU time and memory
 * peak (from the agent's cgroup). */
void acct_part_usage(struct job *job, uint64_t cpu_ns, uint64_t mem_peak);

/* What usage rows are keyed by. */
enum acct_usage_by {
    ACCT_BY_USER,
    ACCT_BY_PROJECT,
    ACCT_BY_TEAM,
    ACCT_BY_GPU_MODEL,
};

/* The usage report (`shoal usage`, GET /v1/usage): one row per key, sorted,
 * of the jobs caller may see (by the tenancy's roles) that ran in [from,
 * until) (until 0 = up to now_ms), from the store's job history; a running
 * job's GPU time comes from the live table jobs. A JSON array, or NULL and
 * err. */
json_t *acct_usage(struct store *store, const struct tenancy *tenancy,
                   const struct jobtab *jobs, const struct api_caller *caller,
                   enum acct_usage_by by, int64_t from, int64_t until,
                   int64_t now_ms, struct sh_error *err);

#endif
