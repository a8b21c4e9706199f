/* SPDX-License-Identifier: Apache-2.0 */
/* The controller's table of nodes, by name, iterated in name order. Node
 * records (name, address, labels, GPUs, drain flag) are durable; liveness
 * (alive, last heartbeat) is runtime state that survives a reload. */
#ifndef SHOAL_SHOALD_NODETAB_H
#define SHOAL_SHOALD_NODETAB_H

#include <jansson.h>

#include "lib/model/node.h"

struct nodetab;
struct jobtab;
struct job;
struct api_req;

/* What the controller knows about a node only while it runs: never stored,
 * kept across a reload of the table. */
struct node_rt {
    uint64_t generation;  /* bumps when the node's desired work changes */
    struct api_req *poll; /* the agent's held work request, or NULL */
    uint64_t *jobs;       /* jobs with a part on this node not yet done */
    int njobs;
    int jobs_cap;
    int stale;              /* runs the agent reported that we do not want */
    bool wake;              /* answer the held poll after wake_batch's commit */
    uint64_t wake_batch;    /* the batch of its last change (commit.h) */
    int64_t last_sample_ms; /* when the last GPU samples arrived */
};

struct nodetab *nodetab_create(void);
void nodetab_destroy(struct nodetab *t);

/* Add a node; takes ownership. -1 when the name exists or memory is short
 * (the node is then not taken). */
int nodetab_add(struct nodetab *t, struct node *n);
struct node *nodetab_get(const struct nodetab *t, const char *name);
/* Remove and destroy a node (its held poll must be answered first). */
void nodetab_remove(struct nodetab *t, const char *name);
int nodetab_count(const struct nodetab *t);

/* The runtime record of a node (never NULL for a node in the table). */
struct node_rt *nodetab_rt(const struct nodetab *t, const char *name);

/* Add or remove a job from a node's active list (idempotent). */
int node_rt_add_job(struct node_rt *rt, uint64_t id);
void node_rt_remove_job(struct node_rt *rt, uint64_t id);

/* Move runtime records from old to t for nodes present in both. */
void nodetab_take_runtime(struct nodetab *t, struct nodetab *old);

/* Iterate in name order: start with NULL. */
struct node *nodetab_next(const struct nodetab *t, const struct node *prev);

/* Every node gets one heartbeat timeout from now_ms to be heard from
 * (a controller that starts, or leads again); revive: each counts as alive
 * meanwhile. */
void nodetab_grace(const struct nodetab *t, int64_t now_ms, bool revive);

/* Node n stopped answering (why, for the log): it is dead until it
 * registers again. */
void nodetab_node_down(struct node *n, const char *why);

/* The walk over what holds node n's GPUs: fn is called for each GPU (or
 * slice) of each part not yet done that a job of jobs has on n, in the
 * order of n's job list and of the part's GPUs: the job, the part's index
 * in job->alloc, the GPU's index in n->gpus and the slice (-1: the whole
 * GPU). A GPU whose slices a part holds comes once per slice; one that
 * several jobs hold once per holder. For the node views, the metrics and
 * slicing. */
typedef void (*nodetab_gpu_part_f)(const struct job *job, int part, int gpu,
                                   int slice, void *arg);
void nodetab_each_gpu_part(const struct nodetab *t, const struct jobtab *jobs,
                           const struct node *n, nodetab_gpu_part_f fn,
                           void *arg);

#endif
