/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster: binds jobs to nodes. It keeps the scheduling engine told of
 * every change, asks it for decisions before the loop sleeps, turns start
 * decisions into placements on nodes, and turns job changes into work for
 * the agents (start these processes, stop those). jobs.c calls into it at
 * each job event; it never answers API requests itself.
 */
#ifndef SHOAL_SHOALD_CLUSTER_H
#define SHOAL_SHOALD_CLUSTER_H

#include "lib/model/job.h"
#include "shoald/shoald.h"

/* Create the cluster context (d->cluster) once d's tables are loaded. */
int cluster_create(struct shoald *d, struct sh_error *err);
void cluster_destroy(struct shoald *d);

/* Memory was reloaded from the store: rebuild what depends on it. */
void cluster_reloaded(struct shoald *d);

/* Teams, projects, quotas or user limits changed: the scheduling engine is
 * told again before the next pass. */
void cluster_tenants_changed(struct shoald *d);

/* Checks at submission beyond the spec's own validation: user limits and
 * whether the job could ever fit the cluster. */
int cluster_check_submit(struct shoald *d, const struct job_spec *spec,
                         struct sh_error *err);

/* A job was added as pending. */
void cluster_job_added(struct shoald *d, struct job *job);

/* A job changed state (from is its previous state). */
void cluster_job_changed(struct shoald *d, struct job *job,
                         enum job_state from);

/* The sum of the GPU shares a job holds (1 per whole GPU, the slice's
 * share per slice). */
double cluster_slice_share_sum(const struct shoald *d, const struct job *job);

/* Run a scheduling pass when one was asked for; called before the loop
 * sleeps, before the group commit. */
void cluster_before_sleep(struct shoald *d);

#endif
