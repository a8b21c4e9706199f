/* SPDX-License-Identifier: Apache-2.0 */
/* The controller's table of nodes, by name, iterated in name order. Node
 * records (name, address, labels, GPUs, drain flag) are durable; liveness
 * (alive, last heartbeat) is runtime state that survives a reload. */
#ifndef SHOAL_SHOALD_NODETAB_H
#define SHOAL_SHOALD_NODETAB_H

#include <jansson.h>

#include "lib/model/node.h"

struct nodetab;

struct nodetab *nodetab_create(void);
void nodetab_destroy(struct nodetab *t);

/* Add a node; takes ownership. -1 when the name exists or memory is short
 * (the node is then not taken). */
int nodetab_add(struct nodetab *t, struct node *n);
struct node *nodetab_get(const struct nodetab *t, const char *name);
int nodetab_count(const struct nodetab *t);

/* Iterate in name order: start with NULL. */
struct node *nodetab_next(const struct nodetab *t, const struct node *prev);

#endif
