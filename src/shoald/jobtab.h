/* SPDX-License-Identifier: Apache-2.0 */
/* The controller's in-memory table of jobs: every active job (pending,
 * running, or finished but still releasing its GPUs) and the recently
 * finished ones. Finished jobs older than the retention leave memory but
 * stay in the store. Iteration is in id order (jobs are added in id order).
 */
#ifndef SHOAL_SHOALD_JOBTAB_H
#define SHOAL_SHOALD_JOBTAB_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/model/job.h"

struct jobtab;
struct store;

struct jobtab *jobtab_create(void);
/* Destroy the table and every job in it. NULL-safe. */
void jobtab_destroy(struct jobtab *t);

/* Add a job; takes ownership. Ids must be added in increasing order so
 * iteration stays in id order (loading from the store and submitting both
 * do). -1 on out of memory (the job is then not taken). */
int jobtab_add(struct jobtab *t, struct job *job);

/* Find a job; NULL when not in memory. Borrowed. */
struct job *jobtab_get(const struct jobtab *t, uint64_t id);

/* Find a job in memory or, for old finished jobs, in the store st (then
 * the job is a new object the caller destroys: *owned is set).
 * SH_ENOTFOUND for an id never given. */
struct job *jobtab_find(const struct jobtab *t, struct store *st, uint64_t id,
                        bool *owned, struct sh_error *err);

/* Remove and destroy a job. */
void jobtab_remove(struct jobtab *t, uint64_t id);

/* The job in memory that user submitted with Idempotency-Key key (the
 * first task of an array), or NULL. Borrowed. */
struct job *jobtab_find_idem(const struct jobtab *t, const char *user,
                             const char *key);

/* Pending jobs of user (array tasks each), kept as jobs are added,
 * removed and change state (jobtab_state_changed). */
int jobtab_user_pending(const struct jobtab *t, const char *user);

/* Job (in the table) may have entered or left the pending state: its
 * user's count follows. */
void jobtab_state_changed(struct jobtab *t, const struct job *job);

/* Number of jobs in memory, and per state. */
int jobtab_count(const struct jobtab *t);
void jobtab_count_states(const struct jobtab *t, int counts[JOB_STATE_COUNT]);

/* Iterate in id order: start with NULL, returns NULL at the end. The
 * current job may be removed during iteration only through
 * jobtab_next()'s successor (take the next before removing). */
struct job *jobtab_next(const struct jobtab *t, const struct job *prev);

/* A walk in id order with no lookup per step, for long listings. Valid only
 * while no job is added to or removed from the table. */
struct jobtab_walk {
    struct job_entry *entry;
};
/* The first job whose id is greater than after (0: the first job); NULL
 * when none. */
struct job *jobtab_walk_from(const struct jobtab *t, uint64_t after,
                             struct jobtab_walk *w);
struct job *jobtab_walk_next(struct jobtab_walk *w);

/* The next id to give, and raising it (never lowers). */
uint64_t jobtab_next_id(const struct jobtab *t);
void jobtab_raise_next_id(struct jobtab *t, uint64_t next);
uint64_t jobtab_take_id(struct jobtab *t);

/* Drop finished, released jobs that ended before cutoff_ms. */
int jobtab_evict_finished(struct jobtab *t, int64_t cutoff_ms);

#endif
