/* SPDX-License-Identifier: Apache-2.0 */
/* Making and unmaking a whole controller context (struct shoald), and the
 * one place where its call-backs are wired: the lower modules call up only
 * through these, each set here and nowhere else:
 *   d->job_transition      the engine posts a job's new state to jobs.c
 *   d->wake_agent          the engine answers an agent's held work poll
 *                          (the HTTP layer's api_agent_answer_poll)
 *   struct slices_hooks    slicing tells the engine of changed nodes
 *   commit reload          a failed commit reloads memory (state_reload)
 *   commit fenced          a fenced commit deposes the leader (ha_fenced)
 * scripts/check-imports.py checks that no module calls up otherwise.
 * Used by main.c and by the unit tests' fixture (test/state_fixture.c). */
#ifndef SHOAL_SHOALD_SHOALD_SETUP_H
#define SHOAL_SHOALD_SHOALD_SETUP_H

#include "shoald/shoald.h"

/* From d->cfg (store_url set): the loop, the store (a controller starting
 * again as a follower waits for it), the tables, the group commit, and
 * every call-back wired. The state is not loaded: the leader does that
 * (ha.c). On error, what was made is left for shoald_destroy. */
int shoald_create(struct shoald *d, struct sh_error *err);

/* Free everything in d that is not NULL but the HTTP server (d->api, the
 * program's: destroy it first) and the leadership (ha_finish). */
void shoald_destroy(struct shoald *d);

#endif
