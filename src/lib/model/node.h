/* SPDX-License-Identifier: Apache-2.0 */
/* The node: one GPU server as the controller knows it.
 *
 * Node lifecycle. The state users see is derived from two facts, so it can
 * never disagree with them: whether the agent is alive (heartbeats arrive)
 * and whether an admin asked to drain it.
 *
 *               agent heartbeats stop (node_mark_down)
 *      UP ──────────────────────────────────────────────▶ DOWN
 *      │ ▲ ◀────────────────────────────────────────────── │
 *      │ │      agent registers again (node_mark_up)
 *      │ │ resume                                           drain/resume
 *      ▼ │                                                  only flip the flag
 *   DRAINING ── last job ends ──▶ DRAINED
 *
 *   alive  drain  jobs   state
 *   no     any    any    down
 *   yes    no     any    up
 *   yes    yes    >0     draining
 *   yes    yes    0      drained
 */
#ifndef SHOAL_MODEL_NODE_H
#define SHOAL_MODEL_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/model/gpu.h"
#include "lib/util/error.h"

#define NODE_LABELS_MAX 32
#define NODE_ADDR_MAX 256
/* Why a node is drained (an admin's --reason, or the controller's). */
#define NODE_REASON_MAX 256

enum node_state {
    NODE_UP = 0,
    NODE_DOWN,
    NODE_DRAINING,
    NODE_DRAINED,
    NODE_STATE_COUNT,
};

struct node_label {
    char *key;
    char *value;
};

struct node {
    char *name;    /* unique, job_ident_valid() */
    char *address; /* where jobs on it reach each other (IP/host) */
    struct node_label *labels;
    int nlabels;
    int cpus;
    uint64_t mem; /* bytes */
    struct gpu_info *gpus;
    int ngpus;
    bool mps;   /* CUDA MPS can run there (fences time-slices) */
    bool alive; /* heartbeats arrive */
    bool drain; /* an admin asked to drain it */
    char drain_reason[NODE_REASON_MAX]; /* "" when none given */
    int running; /* jobs placed on it (kept by the controller) */
    int64_t last_heartbeat_ms;
    int64_t registered_ms;
};

enum node_state node_state(const struct node *n);
const char *node_state_name(enum node_state s);

/* The value of a label, or NULL. Borrowed from n. */
const char *node_label_get(const struct node *n, const char *key);

/* Find a GPU by UUID (a whole GPU or one of its slices). Returns the GPU and
 * sets *slice to the slice index or -1 for the whole GPU; NULL when absent. */
const struct gpu_info *node_find_gpu(const struct node *n, const char *uuid,
                                     int *slice);

struct node *node_create(const char *name);
void node_destroy(struct node *n);

/* Replace labels / GPUs; takes ownership of the arrays. */
void node_set_labels(struct node *n, struct node_label *labels, int nlabels);
void node_set_gpus(struct node *n, struct gpu_info *gpus, int ngpus);
int node_set_address(struct node *n, const char *address);

void node_labels_free(struct node_label *labels, int n);

#endif
