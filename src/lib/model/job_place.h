/* SPDX-License-Identifier: Apache-2.0 */
/* Where a job may run, as a user restricts it: a node list (--nodelist:
 * exactly these nodes), nodes it must not use (--exclude) and a constraint
 * on node labels (--constraint). This module checks the texts and answers
 * whether one node qualifies; the engine (src/sched) and the controller's
 * CPU-job placement both ask it, so they agree. It keeps no state.
 *
 * Constraint grammar (Slurm's common forms, nothing more):
 *   expr := and ('|' and)*      '|' binds weaker than '&'
 *   and  := term ('&' term)*
 *   term := NAME | KEY=VALUE    NAME: a label of that key (any value),
 *                               KEY=VALUE: that label with that value
 * Parentheses, brackets, counts (*N) and commas are refused by name.
 */
#ifndef SHOAL_MODEL_JOB_PLACE_H
#define SHOAL_MODEL_JOB_PLACE_H

#include <stdbool.h>

#include "lib/model/node.h"
#include "lib/util/error.h"

#define JOB_NODELIST_TEXT_MAX 8192 /* bytes of a node list */
#define JOB_CONSTRAINT_MAX 512     /* bytes of a constraint */

/* A comma-separated list of node names (field names it in errors): every
 * name valid, none twice, at most JOB_NODES_MAX. *count gets how many
 * (count may be NULL). SH_EINVAL naming the bad entry. */
int job_nodelist_check(const char *field, const char *list, int *count,
                       struct sh_error *err);

/* Whether name is one of list's names (list NULL: false). */
bool job_nodelist_has(const char *list, const char *name);

/* Check a constraint's syntax. SH_EINVAL naming what is not supported. */
int job_constraint_check(const char *expr, struct sh_error *err);

/* Whether labels (n entries, borrowed) satisfy expr (a checked one). */
bool job_constraint_match(const char *expr, const struct node_label *labels,
                          int n);

/* Whether a node (name and labels) qualifies for the wishes: in nodelist
 * when given, not in exclude, matching constraint when given. Any of the
 * three may be NULL (no wish). */
bool job_place_allows(const char *nodelist, const char *exclude,
                      const char *constraint, const char *node,
                      const struct node_label *labels, int n);

#endif
