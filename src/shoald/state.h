/* SPDX-License-Identifier: Apache-2.0 */
/* Loading the controller's state from the store at startup, initialising a
 * new cluster (first admin, tokens), and reloading everything after a failed
 * commit so memory never holds a change the store refused. */
#ifndef SHOAL_SHOALD_STATE_H
#define SHOAL_SHOALD_STATE_H

#include "shoald/shoald.h"

/* Load users, tokens, nodes and jobs. */
int state_load(struct shoald *d, struct sh_error *err);

/* Reload after a failed commit: the commit_reload_f, d a struct shoald.
 * Keeps runtime facts (which nodes are alive, held agent requests). */
int state_reload(void *d, struct sh_error *err);

/* On a store without users: create the first admin user and the join
 * token, commit, and write <state>/admin.token and <state>/join.token
 * (mode 0600). Also finishes an initialisation a crash interrupted. */
int state_init_cluster(struct shoald *d, struct sh_error *err);

/* Write text to <state_dir>/name atomically (temp file, fsync, rename). */
int state_write_file(const char *state_dir, const char *name, const char *text,
                     int mode, struct sh_error *err);

#endif
