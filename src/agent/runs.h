/* SPDX-License-Identifier: Apache-2.0 */
/* The runs of this node. A run is one attempt of a job on this node; its
 * folder <state>/runs/<id>.<attempt>/ holds what the controller asked
 * (work.json), what the shim executes (launch.json, only when the fork
 * server does not pass it in its request: forkserver.h), the output (stdout,
 * stderr), the shim's verdict (status.json) and the agent's own notes
 * (run.json: start, stop requests, what was reported and sent). So an agent
 * that restarts finds every run again, adopts the ones still running and
 * reports the ones that ended meanwhile.
 *
 * Run lifecycle (agent side):
 *
 *   reconcile: wanted, unknown        shim exits (pidfd)       heartbeat ack
 *   ─────────────────────▶ RUNNING ───────────────────▶ EXITED ───────────▶
 *                            │ ▲                          (reported)  folder
 *     not wanted / stop /    │ │                                      removed
 *     time limit: SIGTERM    ▼ │                                      after
 *                          STOPPING ── grace over: SIGKILL            a while
 *
 * Before the SIGTERM the agent writes the SIGKILL's Unix second to the
 * run's deadline file (launch.h, SHOAL_PREEMPT_DEADLINE), so the job can
 * checkpoint in time.
 *
 * A run is never started twice: an exited run stays known (its folder is
 * kept) long after the controller acknowledged it.
 */
#ifndef SHOAL_AGENT_RUNS_H
#define SHOAL_AGENT_RUNS_H

#include <jansson.h>
#include <stdbool.h>

#include "agent/agent.h"

/* Load the runs found in <state>/runs, adopting live shims. */
struct runs *runs_create(struct agent *a, struct sh_error *err);
void runs_destroy(struct runs *r);

/* Apply the controller's desired work ({"generation", "jobs": [...]}):
 * start wanted runs not yet known, stop runs asked to stop or not wanted. */
void runs_reconcile(struct runs *r, const json_t *work);

/* [{"id", "attempt", "note"?}] of the runs whose processes may still be
 * alive; "note" says what a run does before its job starts ("pulling image
 * (1.2 GB / 3.4 GB)"). */
json_t *runs_alive_json(struct runs *r);

/* The work entry (borrowed) of the live run that process pid belongs to:
 * the run whose shim is pid's parent, grandparent, ... (the job's tasks
 * and what they start; a process that left the tree, reparented to init
 * by a double fork, belongs to none). NULL when pid is in no live run. */
const json_t *runs_work_of_pid(struct runs *r, pid_t pid);

/* Exit events not yet acknowledged by the controller. Each call returns the
 * same events until runs_events_acked() with the count returned. */
json_t *runs_events_json(struct runs *r, int *count);
void runs_events_acked(struct runs *r, const json_t *events);

/* True when an exit happened that the controller has not heard of. */
bool runs_have_events(const struct runs *r);

/* Periodic work: time limits, SIGKILL after the grace period, pushing
 * output to the controller, removing old run folders. */
void runs_tick(struct runs *r);

/* Stop every run (SIGTERM, SIGKILL after grace) and wait for them, at
 * most grace_ms. For `--stop-jobs-on-exit`. */
void runs_stop_all(struct runs *r, int grace_ms);

/* True when a live run uses GPU g (whole, or one of its slices). */
bool runs_gpu_in_use(const struct runs *r, const struct gpu_info *g);

/* The number of runs with live processes. */
int runs_alive_count(const struct runs *r);

#endif
