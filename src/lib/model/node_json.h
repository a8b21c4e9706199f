/* SPDX-License-Identifier: Apache-2.0 */
/* JSON codecs for nodes and GPUs: the record the controller stores, the view
 * users get (`shoal nodes --json`), and the GPU list agents report. */
#ifndef SHOAL_MODEL_NODE_JSON_H
#define SHOAL_MODEL_NODE_JSON_H

#include <jansson.h>

#include "lib/model/node.h"

/* A GPU with its slices. New reference or NULL. */
json_t *gpu_to_json(const struct gpu_info *g);
/* Parse a GPU as gpu_to_json writes it; every field is checked. */
int gpu_from_json(const json_t *o, struct gpu_info *g, struct sh_error *err);

/* An array of GPUs and its inverse (at most GPU_PER_NODE_MAX). */
json_t *gpus_to_json(const struct gpu_info *gpus, int n);
int gpus_from_json(const json_t *arr, struct gpu_info **gpus, int *n,
                   struct sh_error *err);

/* Labels as a {"key": "value"} object and its inverse. */
json_t *labels_to_json(const struct node_label *labels, int n);
int labels_from_json(const json_t *o, struct node_label **labels, int *n,
                     struct sh_error *err);

/* The user's view of a node: name, address, state, labels, resources,
 * GPUs, running jobs and last heartbeat. */
json_t *node_to_json(const struct node *n);

/* The durable record (no liveness) and its inverse. */
json_t *node_to_record(const struct node *n);
struct node *node_from_record(const json_t *rec, struct sh_error *err);

#endif
