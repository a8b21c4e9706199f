/* SPDX-License-Identifier: Apache-2.0 */
/* Nodes: the domain of the controller's node records. An agent registers
 * its node (joining with the join token, or coming back with the node's own
 * token), keeps it alive with heartbeats, and an admin drains, resumes or
 * forgets it; a node silent for --heartbeat-timeout goes down (its running
 * jobs end as node_fail, jobs_node_down). This module owns the records
 * in d->nodes and their store writes ("node" records); the HTTP layer
 * (api_agent.c, api_nodes.c) only parses requests and writes answers, and
 * the engine's bridge (engine.c) and nodework.c keep the engine and the
 * nodes' work in step.
 */
#ifndef SHOAL_SHOALD_NODES_H
#define SHOAL_SHOALD_NODES_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/model/node.h"
#include "shoald/auth.h"
#include "shoald/shoald.h"

/* What an agent reports when it registers (borrowed strings and JSON). */
struct nodes_reg {
    const char *name;
    const char *address;
    int cpus;
    json_int_t mem;
    json_t *labels;
    json_t *gpus;
    json_t *running;
    const char *version;
    int mps;
};

/* Register node r (peer: the caller's address when r names none): its
 * record replaces the one of the same name (keeping the drain flag, the
 * first registration time and the runtime record), is added to the open
 * batch, and the node is alive as of now. join_id: the id of the join
 * token it enrolls with (NULL: it comes back with its own token); only a
 * name not enrolled may join (SH_ECONFLICT, saying how to rekey), the join
 * token's use is counted and token gets the node's new token (else token
 * is ""). *out is the table's node. Nothing changes on error (SH_EINVAL:
 * bad labels, GPUs or runs). */
int nodes_register(struct shoald *d, const struct nodes_reg *r,
                   const char *peer, const char *join_id,
                   char token[AUTH_TOKEN_LEN + 1], struct node **out,
                   struct sh_error *err);

/* Re-key node n on behalf of who (an admin): its agent tokens are revoked
 * and token gets a new one, for the operator to give its agent. */
int nodes_rekey(struct shoald *d, struct node *n, const char *who,
                char token[AUTH_TOKEN_LEN + 1], struct sh_error *err);

/* Validate the runs an agent reports (a JSON array of {id, attempt, note?};
 * NULL is none) and count those the node should not have into *stale; the
 * notes of wanted runs become their jobs' reasons ("pulling image on n1"). */
int nodes_count_stale(struct shoald *d, const char *node, const json_t *runs,
                      int *stale, struct sh_error *err);

/* Node reported the digest (unchecked, may be NULL) the image of run (id,
 * attempt) resolved to: the job keeps the first one its first node
 * reports, when valid (stored), and its other nodes get their work. */
void nodes_job_digest(struct shoald *d, const char *node, json_int_t id,
                      json_int_t attempt, const char *digest);

/* Node n's heartbeat arrived (after its samples and events were applied):
 * it is alive as of now, fresh GPU samples (samples) are accounted, and a
 * change in its count of stale runs is told to the engine. */
void nodes_heartbeat(struct shoald *d, struct node *n, bool samples, int stale);

/* shoald_cron: nodes without a heartbeat for --heartbeat-timeout go down. */
void nodes_check_heartbeats(struct shoald *d, int64_t now);

/* Drain (no new jobs; running ones finish) with reason (NULL: none) or
 * resume node n (its reason cleared) on behalf of who (for the log).
 * Nothing to do when it already is. A re-registration that reports other
 * GPUs than the node's record drains it with the controller's reason
 * (nodes_register) until an admin resumes it. */
int nodes_set_drain(struct shoald *d, struct node *n, bool drain,
                    const char *who, const char *reason, struct sh_error *err);

/* What a heartbeat reports, nodes.c applying it. */
/* True when node runs a part of the job's current attempt. */
bool nodes_job_on(const struct job *job, const char *node);
/* GPU samples (a JSON array of {index, utilization, memory_used}; NULL is
 * none) into node n's GPUs. */
int nodes_gpu_samples(struct node *n, const json_t *gpus, struct sh_error *err);
/* One run's end, as its agent reported it. */
struct nodes_run_exit {
    json_int_t id, attempt;
    int exit_code, exit_signal;
    const char *reason; /* "timeout", "cancelled", "lost" or NULL */
    const char *error;  /* why the run could not start, or NULL */
    uint64_t cpu_ns, mem_peak;
    const char *digest; /* the image digest its reference resolved to */
};
/* Node n's agent reports a run ended: an old attempt is ignored (0); a job
 * without a part on n is refused (SH_EFORBIDDEN); else its usage and image
 * digest are noted and the job's part ends (jobs_part_exited). */
int nodes_run_exited(struct shoald *d, struct node *n,
                     const struct nodes_run_exit *e, struct sh_error *err);

/* Forget node n (a down node without jobs; else SH_ECONFLICT): its record
 * and agent tokens are deleted and n is freed. */
int nodes_forget(struct shoald *d, struct node *n, const char *who,
                 struct sh_error *err);

#endif
