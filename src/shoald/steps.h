/* SPDX-License-Identifier: Apache-2.0 */
/* Job steps (Slurm's srun inside a batch job), as the controller relays
 * them between agents. A step is asked by the agent of the job's first node
 * (where the batch script runs srun), for the job's current attempt; each
 * node of the step has a part (its first rank and task count) that its
 * agent starts in the job's run there and reports when its tasks ended.
 * The first node's part is started by srun itself; its end is reported
 * too, so the step's state and exit (the highest of its parts, as srun
 * gives it) are known here. Steps live in memory only: a controller
 * restart forgets them (srun then fails the step as lost).
 * doc/design/agent.md, "Steps". */
#ifndef SHOAL_SHOALD_STEPS_H
#define SHOAL_SHOALD_STEPS_H

#include <jansson.h>
#include <stdint.h>

#include "lib/util/error.h"
#include "shoald/shoald.h"

struct job;
struct steps;

/* The most steps a job attempt keeps (ended ones are dropped first). */
#define STEPS_PER_JOB_MAX 512

/* touch wakes a node's long-poll for work that changed (cluster.c's
 * cluster_node_touch: passed in, so the work list may call steps_work). */
typedef void (*steps_touch_f)(struct shoald *d, const char *node);
struct steps *steps_create(steps_touch_f touch, struct sh_error *err);
/* NULL-safe. */
void steps_destroy(struct steps *s);

/* Node `node` (the job's first node) asks for a step of job (borrowed):
 * body {"attempt": A, "argv": [...], "env": [...], "cwd": "/x"|null,
 * "label": bool, "kill_on_bad_exit": bool, "ntasks": N,
 * "parts": [{"node": "n1", "first": 0, "ntasks": 2}, ...]}. The step gets
 * the job's next number in *step; the other parts' nodes are woken. 0, or
 * -1 with err (not the first node, not this attempt, a node outside the
 * allocation, ...). */
int steps_add(struct shoald *d, const struct job *job, const char *node,
              const json_t *body, int *step, struct sh_error *err);

/* Node `node` reports that its part of the step ended with exit (srun's
 * code: the highest task exit, 128+N for a signal). 0, or -1 with err. */
int steps_part_done(struct shoald *d, const struct job *job, const char *node,
                    int attempt, int step, int exit_code, struct sh_error *err);

/* A node of the step asks to end it (--kill-on-bad-exit: one of its tasks
 * failed): every part still running is told "cancel". 0, or -1 with
 * err. */
int steps_cancel(struct shoald *d, const struct job *job, const char *node,
                 int attempt, int step, struct sh_error *err);

/* Add to a work entry (borrowed job, its part on that node) the steps that
 * node must run ("steps": [...], parts not yet ended), and on the first
 * node the steps whose other parts all ended ("steps_done": [{"step": k,
 * "exit": e}]). */
void steps_work(struct shoald *d, const struct job *job, int part,
                json_t *entry);

/* The job's steps for `shoal show` ([{"step", "state", "exit", "nodes",
 * "ntasks", "command"}]), or NULL when it has none. New reference. */
json_t *steps_job_json(struct shoald *d, const struct job *job);

#endif
