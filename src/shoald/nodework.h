/* SPDX-License-Identifier: Apache-2.0 */
/* Each node's desired work: what its agent must run or stop, and its
 * slicing plans, answered to the agent's long poll (GET /v1/agent/work).
 * A change to a node's work bumps its generation (cluster_node_touch);
 * its held poll is answered once the batch holding the change is durable
 * (through d->wake_agent, the HTTP layer's, wired by shoald_create). The
 * engine, nodes.c and slicing (through its hook) touch nodes. */
#ifndef SHOAL_SHOALD_NODEWORK_H
#define SHOAL_SHOALD_NODEWORK_H

#include <jansson.h>

#include "lib/model/node.h"
#include "shoald/shoald.h"

/* The node's desired work for its agent (a new reference). */
json_t *cluster_node_work(struct shoald *d, const struct node *n);

/* Bump a node's generation so its agent's held poll is answered after the
 * next commit. */
void cluster_node_touch(struct shoald *d, const char *node);

/* Answer node n's held work poll now, with its work or with err when not
 * NULL (d->wake_agent, from the HTTP layer; nothing when unset). */
void nodework_wake(struct shoald *d, const struct node *n,
                   const struct sh_error *err);

#endif
