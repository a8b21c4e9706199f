/* SPDX-License-Identifier: Apache-2.0 */
/* Node state derivation and ownership helpers (see node.h). */
#include "lib/model/node.h"

#include <stdlib.h>
#include <string.h>

static const char *const node_state_names[NODE_STATE_COUNT] = {
    [NODE_UP] = "up",
    [NODE_DOWN] = "down",
    [NODE_DRAINING] = "draining",
    [NODE_DRAINED] = "drained",
};

enum node_state node_state(const struct node *n)
{
    if (!n->alive)
        return NODE_DOWN;
    if (!n->drain)
        return NODE_UP;
    return n->running > 0 ? NODE_DRAINING : NODE_DRAINED;
}

const char *node_state_name(enum node_state s)
{
    return (unsigned)s < NODE_STATE_COUNT ? node_state_names[s] : "unknown";
}

const char *node_label_get(const struct node *n, const char *key)
{
    for (int i = 0; i < n->nlabels; i++) {
        if (strcmp(n->labels[i].key, key) == 0)
            return n->labels[i].value;
    }
    return NULL;
}

const struct gpu_info *node_find_gpu(const struct node *n, const char *uuid,
                                     int *slice)
{
    for (int i = 0; i < n->ngpus; i++) {
        const struct gpu_info *g = &n->gpus[i];
        for (int s = 0; s < g->nslices; s++) {
            /* Shared slices carry the GPU's own UUID: match them only by
             * the whole-GPU rule below. */
            if (g->slices[s].kind == GPU_SLICE_MIG &&
                strcmp(g->slices[s].uuid, uuid) == 0) {
                *slice = s;
                return g;
            }
        }
        if (strcmp(g->uuid, uuid) == 0) {
            *slice = -1;
            return g;
        }
    }
    return NULL;
}

struct node *node_create(const char *name)
{
    struct node *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    n->name = strdup(name);
    if (!n->name) {
        node_destroy(n);
        return NULL;
    }
    return n;
}

void node_labels_free(struct node_label *labels, int n)
{
    for (int i = 0; i < n; i++) {
        free(labels[i].key);
        free(labels[i].value);
    }
    free(labels);
}

void node_destroy(struct node *n)
{
    if (!n)
        return;
    free(n->name);
    free(n->address);
    node_labels_free(n->labels, n->nlabels);
    free(n->gpus);
    free(n);
}

void node_set_labels(struct node *n, struct node_label *labels, int nlabels)
{
    node_labels_free(n->labels, n->nlabels);
    n->labels = labels;
    n->nlabels = nlabels;
}

void node_set_gpus(struct node *n, struct gpu_info *gpus, int ngpus)
{
    free(n->gpus);
    n->gpus = gpus;
    n->ngpus = ngpus;
}

int node_set_address(struct node *n, const char *address)
{
    char *copy = strdup(address);
    if (!copy)
        return -1;
    free(n->address);
    n->address = copy;
    return 0;
}
