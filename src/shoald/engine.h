/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster: binds jobs to nodes. It keeps the scheduling engine (sched/)
 * told of every change, asks it for decisions before the loop sleeps, turns
 * start decisions into placements, and keeps each node's desired work (what
 * its agent must run or stop) from which the agent API answers. jobs.c and
 * api_agent.c call into it; it never answers API requests itself, and it
 * never decides a job's state: starts, preemptions and dependencies that
 * can never be met are posted to the job lifecycle (d->job_transition,
 * which jobs.c registers).
 *
 * A job's GPUs on a node are held from its start until that node's agent
 * confirms the processes are gone (cluster_part_gone), or the node is
 * declared down. Only then does the engine see them free.
 */
#ifndef SHOAL_SHOALD_ENGINE_H
#define SHOAL_SHOALD_ENGINE_H

#include <jansson.h>

#include "lib/model/job.h"
#include "lib/model/node.h"
#include "shoald/shoald.h"

struct histogram;

/* Create the cluster context (d->cluster) once d's tables are loaded: the
 * engine is built from them. */
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

/* The cluster's part of the job lifecycle (jobs.c owns the states and
 * calls these from its action for each state). */
/* A job changed state: a gated job's dependency may be met now. */
void cluster_job_changed(struct shoald *d);
/* A job ended (from is its previous state): out of the engine's queue, its
 * array place freed, and the nodes still running a part are told to stop
 * it. Its GPUs stay held until cluster_job_free(). */
void cluster_job_ended(struct shoald *d, struct job *job, enum job_state from);
/* Every part of an ended job is gone: the engine sees its GPUs free, and
 * the service it had counts for the LAS policy when it is requeued. */
void cluster_job_free(struct shoald *d, struct job *job);
/* A node's agent reports that its part of job (this attempt) ended with
 * exit_code/exit_signal: the part is marked done and the node's hold on
 * it dropped. 1 when it was news, 0 for a repeated report, -1 (SH_ENOTFOUND)
 * when the job has no part on node. What state the job goes to is
 * jobs_part_done()'s decision. */
int cluster_part_gone(struct shoald *d, struct job *job, const char *node,
                      int exit_code, int exit_signal, struct sh_error *err);

/* A node registered, changed its GPUs or labels, or came back: tell the
 * engine. The node must be in d->nodes. */
void cluster_node_changed(struct shoald *d, struct node *n);

/* Forget a down node without jobs: out of the engine and the table. */
void cluster_node_removed(struct shoald *d, const char *name);

/* The sum of the GPU shares a job holds (1 per whole GPU, the slice's
 * share per slice). */
double cluster_slice_share_sum(const struct shoald *d, const struct job *job);

/* Why a pending job waits and when it may start, from the engine: reason
 * text into buf, estimated start (epoch ms, 0 unknown) into *est. */
/* A pending job is held: out of the engine until released
 * (cluster_job_release() lets its gate be looked at again). */
void cluster_job_hold(struct shoald *d, struct job *job);
void cluster_job_release(struct shoald *d, struct job *job);
/* A job's spec changed (shoal update): a pending one is scheduled anew, a
 * running one's agents hear of it (its time limit). */
void cluster_job_updated(struct shoald *d, struct job *job);

void cluster_job_reason(struct shoald *d, const struct job *job, char *buf,
                        size_t size, int64_t *est);
/* The kind of a pending job's reason, one word for counting and graphs:
 * "held", "dependency", "array", or the engine's (sched_wait_name():
 * "new", "quota", "limit", "resources", "reservation", "priority",
 * "preemption"); "" for a job that is not pending. Static string. */
const char *cluster_job_wait_kind(struct shoald *d, const struct job *job);
/* Every scheduling pass's duration (engine and applying its decisions),
 * in seconds. Borrowed; NULL before the cluster exists. */
const struct histogram *cluster_pass_histogram(const struct shoald *d);
/* After cluster_job_reason(): "no estimate: ..." when the job has no
 * estimated start, else "". */
const char *cluster_job_estimate_note(struct shoald *d, const struct job *job);

/* A duty of shoald_cron (main.c): finished jobs leave memory after --keep-finished (once a minute); a pass
 * is asked for when the engine's full pass is due or a gated job's --begin
 * came. */
void cluster_tick(struct shoald *d, int64_t now);

/* Run a scheduling pass when one was asked for; called before the loop
 * sleeps, after the group commit of what came before (main.c) and before
 * the one of the starts it decides. */
void cluster_before_sleep(struct shoald *d);
/* True when cluster_before_sleep has work: a pass was asked for, the
 * engine is to be rebuilt or gated jobs are to be looked at again. */
bool cluster_pass_due(const struct shoald *d);

#endif
