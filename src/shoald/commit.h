/* SPDX-License-Identifier: Apache-2.0 */
/* Group commit. Every durable change of one loop iteration goes into one
 * open batch; just before the loop sleeps, commit_start() writes the batch
 * in one transaction and then runs the callbacks registered with
 * commit_after() (answering the waiting requests, waking agents). Nothing
 * that depends on a change leaves the process before the change is durable.
 *
 * On a database server (PostgreSQL) the commit does not block the loop: it
 * is sent, and the loop goes on serving requests into the next open batch
 * while the server writes it; the callbacks run when the server answers.
 * One commit is under way at a time, so the batches land in order, and a
 * batch that failed takes the open one (built on it) down with it. SQLite
 * commits at once, as before.
 */
#ifndef SHOAL_SHOALD_COMMIT_H
#define SHOAL_SHOALD_COMMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/util/error.h"

struct loop;
struct store;
struct store_batch;

struct commit;

/* Called after the batch it waited for: ok is true when the batch is
 * durable, false when the commit failed (memory has then been reloaded from
 * the store, so the change it waited for is gone). */
typedef void (*commit_done_f)(bool ok, void *arg);

/* Called when a commit failed, to rebuild memory from the store; arg is
 * the reload_arg given to commit_create. */
typedef int (*commit_reload_f)(void *arg, struct sh_error *err);

/* Commits go to store; loop watches a commit under way on a database
 * server (both borrowed, NULL only where nothing is ever committed). */
struct commit *commit_create(struct store *store, struct loop *loop,
                             commit_reload_f reload, void *reload_arg,
                             struct sh_error *err);

/* Called when a commit is refused as fenced: another controller leads; arg
 * is the one given to commit_on_fenced. */
typedef void (*commit_fenced_f)(void *arg, const char *why);
/* Who hears of a fenced commit (ha.c registers ha_fenced with its struct
 * shoald); none at first. */
void commit_on_fenced(struct commit *c, commit_fenced_f fn, void *arg);
void commit_destroy(struct commit *c);

/* The open batch. Borrowed. */
struct store_batch *commit_batch(struct commit *c);

/* True when a change is not durable yet: the open batch holds changes, or
 * a commit is under way. An answer must then wait (commit_after). */
bool commit_dirty(const struct commit *c);

/* True when commit_start has work now (changes or waiting callbacks are
 * open and no commit is under way, or the one under way has ended): the
 * loop must not sleep before calling it. */
bool commit_pending(const struct commit *c);

/* Run cb once every change made so far is durable (ok = true), or lost to a
 * failed commit (ok = false). arg is kept until then. When nothing is
 * waiting to be committed, cb runs at the next commit_start. */
int commit_after(struct commit *c, commit_done_f cb, void *arg);

/* The loop's call before it sleeps: collect the commit under way if it has
 * ended (running its callbacks), then, when none is under way, start
 * committing the open batch (or run its callbacks when it is empty).
 * Returns 0, or -1 when a commit failed (logged, the callbacks have run with
 * ok = false, memory reloaded). */
int commit_start(struct commit *c, struct sh_error *err);

/* Commit everything now and wait: the commit under way, then the open
 * batch, and run the callbacks. Returns 0, or -1 when a commit failed (err
 * says why; the callbacks have run with ok = false). */
int commit_flush(struct commit *c, struct sh_error *err);

/* Batches are numbered in the order they go out, from 0. A change made
 * now goes out in the open batch, numbered commit_open_batch(), or in an
 * earlier one. Every batch numbered below commit_ended_batches() has ended:
 * it is durable, or it failed and memory was reloaded from the store. A
 * callback of commit_after that acts on changes made after it was
 * registered (the agents' wake-up) checks their batch has ended. */
uint64_t commit_open_batch(const struct commit *c);
uint64_t commit_ended_batches(const struct commit *c);

/* True after a failed commit that left memory unlike the store: the
 * commit was fenced (nothing is reloaded) or the reload failed. A
 * successful reload clears it. */
bool commit_memory_lost(const struct commit *c);

/* Counters for /metrics and the benchmark. */
struct commit_stats {
    uint64_t commits;
    uint64_t ops;
    uint64_t failures;
    uint64_t max_batch;
    uint64_t total_us; /* time from sending a batch to its end */
};
void commit_get_stats(const struct commit *c, struct commit_stats *out);

#endif
