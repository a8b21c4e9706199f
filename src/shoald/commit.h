/* SPDX-License-Identifier: Apache-2.0 */
/* Group commit. Every durable change of one loop iteration goes into one
 * open batch; just before the loop sleeps, commit_flush() writes the batch
 * in one transaction and then runs the callbacks registered with
 * commit_after() (answering the waiting requests, waking agents). Nothing
 * that depends on a change leaves the process before the change is durable.
 */
#ifndef SHOAL_SHOALD_COMMIT_H
#define SHOAL_SHOALD_COMMIT_H

#include <stdbool.h>

#include "shoald/shoald.h"

struct commit;

/* Called after the batch it waited for: ok is true when the batch is
 * durable, false when the commit failed (memory has then been reloaded from
 * the store, so the change it waited for is gone). */
typedef void (*commit_done_f)(struct shoald *d, bool ok, void *arg);

/* Called when a commit failed, to rebuild memory from the store. */
typedef int (*commit_reload_f)(struct shoald *d, struct sh_error *err);

struct commit *commit_create(struct shoald *d, commit_reload_f reload,
                             struct sh_error *err);

/* Called when a commit is refused as fenced: another controller leads. */
typedef void (*commit_fenced_f)(struct shoald *d, const char *why);
/* Who hears of a fenced commit (ha.c registers ha_fenced); none at first. */
void commit_on_fenced(struct commit *c, commit_fenced_f fn);
void commit_destroy(struct commit *c);

/* The open batch. Borrowed. */
struct store_batch *commit_batch(struct commit *c);

/* True when the open batch holds changes. */
bool commit_dirty(const struct commit *c);

/* True when changes or waiting callbacks are open: the loop must not
 * sleep before the next flush. */
bool commit_pending(const struct commit *c);

/* Run cb after the open batch commits or fails. arg is kept until then.
 * When the batch is empty at flush time, cb runs with ok = true. */
int commit_after(struct commit *c, commit_done_f cb, void *arg);

/* Commit the open batch and run the callbacks. Returns 0, or -1 when the
 * commit failed (err says why; the callbacks have run with ok = false). */
int commit_flush(struct commit *c, struct sh_error *err);

/* Counters for /metrics and the benchmark. */
struct commit_stats {
    uint64_t commits;
    uint64_t ops;
    uint64_t failures;
    uint64_t max_batch;
    uint64_t total_us; /* time spent in store_commit */
};
void commit_get_stats(const struct commit *c, struct commit_stats *out);

#endif
