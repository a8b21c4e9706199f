/* SPDX-License-Identifier: Apache-2.0 */
/* Job operations of the controller: submission, cancellation and every
 * state change, each made in memory and added to the open store batch in
 * the same step. The state machine itself lives in lib/model/job.c; this
 * module decides when to apply it and keeps the store in step.
 */
#ifndef SHOAL_SHOALD_JOBS_H
#define SHOAL_SHOALD_JOBS_H

#include <jansson.h>

#include "lib/model/job.h"
#include "shoald/auth.h"
#include "shoald/shoald.h"
#include "store/store.h"

/* Load active jobs and recently finished ones from the store into a fresh
 * table, replacing d->jobs. */
int jobs_load(struct shoald *d, struct sh_error *err);

/* Validate a submission from caller and accept it: a new pending job with
 * the next id, added to memory and to the batch: 0. With an idempotency
 * key (NULL: none) that the caller's user submitted before, while that job
 * is in memory: that job, nothing new, 1. *out is borrowed from the job
 * table. */
int jobs_submit(struct shoald *d, const struct api_caller *caller,
                const json_t *body, const char *idem_key, struct job **out,
                struct sh_error *err);

/* Cancel a job on behalf of caller (permission checked here). A pending job
 * is cancelled at once; a running one is cancelled now and its processes
 * are stopped by its agent (the GPUs stay held until they are gone). */
int jobs_cancel(struct shoald *d, const struct api_caller *caller,
                struct job *job, struct sh_error *err);

/* Cancel every task of an array that has not ended; *n counts them.
 * Stops at the first refusal (permission). */
int jobs_cancel_array(struct shoald *d, const struct api_caller *caller,
                      uint64_t array, int *n, struct sh_error *err);

/* Hold a pending job (kept out of scheduling) or release it, on behalf of
 * caller (who may cancel it). SH_ECONFLICT when it is not pending, already
 * held, or not held. */
int jobs_hold(struct shoald *d, const struct api_caller *caller,
              struct job *job, struct sh_error *err);
int jobs_release(struct shoald *d, const struct api_caller *caller,
                 struct job *job, struct sh_error *err);

/* shoal requeue: a running job is stopped and goes back to the queue
 * (same id, next attempt) once its processes are gone; an ended one goes
 * back at once. Who may cancel the job may requeue it. */
int jobs_requeue(struct shoald *d, const struct api_caller *caller,
                 struct job *job, struct sh_error *err);

/* Change a pending job's time_limit, priority, gpus, nodes, name or
 * gpu_type (checked as a submission is), or a running job's time limit
 * (lower only, unless caller is a cluster admin). Who may cancel the job
 * may update it. */
int jobs_update(struct shoald *d, const struct api_caller *caller,
                struct job *job, const json_t *body, struct sh_error *err);

/* The job lifecycle, after flux-core's job-manager: a transition is
 * posted, checked by the state machine (lib/model/job.c), recorded with
 * reason and added to the batch, then the one action of the new state
 * runs (jobs.c job_action): pending goes to the gate and the engine,
 * running was placed by the cluster, an ended job leaves the engine, its
 * nodes stop it, and once its processes are gone its GPUs are freed and it
 * is requeued when due (jobs_requeue_due). The cluster posts its starts,
 * preemptions and never-met dependencies through d->job_transition, which
 * jobs_load() sets to this function. */
int jobs_transition(struct shoald *d, struct job *job, enum job_state to,
                    const char *reason, struct sh_error *err);

/* The state a running job goes to when its part on node ended with
 * exit_code/exit_signal (reason from the agent: "timeout", "lost", or
 * NULL): TIMEOUT, NODE_FAIL, FAILED (a signal or a non-zero exit: the
 * first failing part ends the job), COMPLETED once every part ended with
 * 0 (a batch job: once its first node's part, the script, ended with 0),
 * else RUNNING (other parts still run). why gets the reason to show,
 * "" for none. The part must already be marked done. */
enum job_state jobs_exit_state(const struct job *job, const char *node,
                               int exit_code, int exit_signal,
                               const char *reason, char *why, size_t size);

/* A node's agent reports that its part of job (this attempt) ended with
 * exit_code/exit_signal; reason is "timeout", "cancelled", "lost" or NULL.
 * The part is marked done (cluster_part_gone); a running job goes to the
 * state jobs_exit_state() says, an ended one whose last part this was is
 * released. A repeated report changes nothing. */
int jobs_part_done(struct shoald *d, struct job *job, const char *node,
                   int exit_code, int exit_signal, const char *reason,
                   struct sh_error *err);

/* Node n stopped answering (why): it is marked down, its running jobs end
 * as node_fail and their parts there count as lost. */
void jobs_node_down(struct shoald *d, struct node *n, const char *why);

/* Whether an ended job goes back to pending once its GPUs are released:
 * preempted or lost with spec.requeue, or a user asked (`shoal requeue`). */
bool jobs_requeue_due(const struct job *job);

/* A node's agent reports its part of job ended (jobs_part_done), and the
 * job's reason follows: a reason that was the run's progress ("pulling
 * image on n1") is cleared, and error (a run that could not start says
 * why) becomes the reason of a job that failed. */
int jobs_part_exited(struct shoald *d, struct job *job, const char *node,
                     int exit_code, int exit_signal, const char *reason,
                     const char *error, struct sh_error *err);

/* What a running job's nodes report of its runs (nodes.c asks; these
 * write the job). */
/* A reason that only says what a node does before the job starts
 * ("pulling image ..."): shown while it lasts, never the end's. */
bool jobs_progress_reason(const char *reason);
/* Node's note on the job's run (NULL: none) becomes the job's reason
 * ("pulling image (1.2 GB / 3.4 GB) on n1"), in memory only; a note gone
 * clears the reason it had set. */
void jobs_note_progress(struct job *job, const char *node, const char *note);
/* The job's part on node was (or, reported false, is no longer) reported
 * by the node's agent: its work then goes without registry credentials. */
void jobs_part_reported(struct job *job, const char *node, bool reported);
/* The image digest the job's first node resolved its reference to: kept
 * in the job and stored. -1 (nothing changed) when out of memory, or when
 * the store write could not be added (the digest is kept). */
int jobs_set_image_digest(struct shoald *d, struct job *job, const char *digest,
                          struct sh_error *err);

/* Call fn for each job in the store (finished ones too) from from_ms on,
 * for the history: the store's scan (store_scan_jobs, no end) behind the
 * jobs module. */
int jobs_scan_stored(struct shoald *d, int64_t from_ms, store_job_f fn,
                     void *arg, struct sh_error *err);

/* Add the job's current record to the open batch. */
int jobs_persist(struct shoald *d, const struct job *job, struct sh_error *err);

/* Find a job in memory or, for old finished jobs, in the store (then the
 * job is returned as a new object the caller destroys: *owned is set). */
struct job *jobs_find(struct shoald *d, uint64_t id, bool *owned,
                      struct sh_error *err);

/* GPU-seconds a job has used until now_ms (slices count as their share). */
double jobs_gpu_seconds(const struct shoald *d, const struct job *job,
                        int64_t now_ms);

#endif
