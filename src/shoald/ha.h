/* SPDX-License-Identifier: Apache-2.0 */
/* Controller high availability (doc/design/ha.md). Several shoald share one
 * database that supports leadership (PostgreSQL); exactly one leads. The
 * leader loads the state and serves; a follower loads nothing, answers
 * /v1/health with its role and every other call with a follower answer
 * naming the leader, and tries to lead once a second. A leader checks its
 * leadership once a second; when it is lost (or a commit is refused as
 * fenced) it stops at once without committing anything more and starts
 * again as a follower (it executes itself anew: no state survives). When
 * it is unknown (the database session ended) the leader waits: it serves
 * and decides nothing, tries to lead again each second and reloads the
 * whole state when it does, or steps down as above when another leads.
 *
 * With a store without leadership (SQLite) the controller is always leader.
 */
#ifndef SHOAL_SHOALD_HA_H
#define SHOAL_SHOALD_HA_H

#include <stdbool.h>

#include "shoald/shoald.h"

/* Exit status of a leader that lost its leadership and could not start
 * again as a follower. */
#define HA_EXIT_DEPOSED 3

/* Set in the environment of a deposed leader starting again: it waits for
 * the database instead of giving up when it cannot open the store. */
#define HA_RESTART_ENV "SHOALD_HA_RESTART"

/* Become leader (load the state, serve) or follower. Needs d->store,
 * d->loop and d->api; d->url is the default advertised URL and port the
 * API's bound port (a deposed leader starts again on it). */
int ha_start(struct shoald *d, int port, int argc, char **argv,
             struct sh_error *err);

/* True when this controller holds the state and serves the API. */
bool ha_serving(const struct shoald *d);

/* True once leadership was lost: nothing may be committed any more. */
bool ha_deposed(const struct shoald *d);

/* The role for /v1/health: "leader", "follower", "waiting" (a leader
 * whose database session ended, serving nothing until it leads again) or
 * "deposed" (stopping); and the leader's URL
 * ("" when unknown). */
const char *ha_role(const struct shoald *d);
const char *ha_leader_url(const struct shoald *d);

/* A commit was refused as fenced: another controller leads. Stops the
 * loop; ha_finish then starts this process again as a follower. The
 * commit_fenced_f, arg a struct shoald. */
void ha_fenced(void *arg, const char *why);

/* After teardown (the store closed): frees what ha_start made; a deposed
 * leader executes itself again (it comes back as a follower) and returns
 * only when that failed, with HA_EXIT_DEPOSED. Otherwise returns rc. */
int ha_finish(struct shoald *d, int rc);

#endif
