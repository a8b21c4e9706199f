/* SPDX-License-Identifier: Apache-2.0 */
/* The durable store behind the controller. The controller owns all state in
 * memory and writes every accepted change here before it answers; the store
 * is what survives a crash, and what the controller loads at startup.
 *
 * Writes go in batches: the controller collects the changes of one loop
 * iteration in a struct store_batch and commits them in one transaction
 * (group commit). A batch either lands whole or not at all.
 *
 * Backends implement struct store_ops (store_sqlite.c today; PostgreSQL
 * through libpq later). The interface is deliberately record-shaped: jobs
 * with a few indexed columns plus their JSON record, and generic objects
 * (kind, key, JSON record) for nodes, users, tokens, teams, projects and
 * settings, so a backend needs only a handful of statements.
 *
 * Not thread-safe: one thread uses a store at a time.
 */
#ifndef SHOAL_STORE_STORE_H
#define SHOAL_STORE_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/util/error.h"

struct store;
struct store_batch;

/* Indexed columns of a job row; the record holds everything. */
struct store_job_row {
    uint64_t id;
    const char *state;
    const char *user;
    const char *project;
    int64_t submit_ms;
    int64_t start_ms;
    int64_t end_ms;
    double gpu_seconds; /* GPU-time used so far, in GPUs x seconds */
};

/* Open (creating when absent) the store named by url: "sqlite:PATH" or a
 * plain path for SQLite. Returns NULL with err filled (SH_EUNAVAILABLE when
 * the database cannot be opened, SH_EINVAL for an unknown scheme). */
struct store *store_open(const char *url, struct sh_error *err);

/* Close and free; NULL-safe. Uncommitted work is discarded. */
void store_close(struct store *st);

/* ---- batches ---- */

struct store_batch *store_batch_create(void);
void store_batch_destroy(struct store_batch *b);
/* Number of operations waiting in b. */
int store_batch_count(const struct store_batch *b);
/* Drop all operations (after a commit, or to give up). */
void store_batch_reset(struct store_batch *b);

/* Insert or replace a job row. row's strings and rec are borrowed for the
 * call (rec is serialised now). -1 on out of memory. */
int store_batch_put_job(struct store_batch *b, const struct store_job_row *row,
                        const json_t *rec);

/* Insert or replace the object (kind, key). Borrowed for the call. */
int store_batch_put(struct store_batch *b, const char *kind, const char *key,
                    const json_t *rec);

/* Delete the object (kind, key); deleting an absent object is not an error. */
int store_batch_del(struct store_batch *b, const char *kind, const char *key);

/* Commit b in one durable transaction (fsync before it returns). On success
 * b is reset; on failure nothing of b is stored, b is left as it was, and
 * err says why (SH_EUNAVAILABLE for I/O errors, disk full, busy). */
int store_commit(struct store *st, struct store_batch *b, struct sh_error *err);

/* ---- commits without waiting (PostgreSQL) ----
 * A backend on a database server can send a batch and let the caller go on
 * while the server writes it: the controller then collects the next batch
 * during the round trip and the flush instead of sleeping through them. At
 * most one commit is under way; it ends with store_commit_finish. Reads
 * made meanwhile wait for it first, so they see its changes. A backend that
 * cannot (SQLite) commits at once, as store_commit does. */

/* Start committing b. Returns 1 when the commit is under way (b is reset and
 * may collect the next batch at once; store_commit_finish tells how it
 * ended), 0 when it is already durable (b reset), -1 when it failed (err;
 * b left as it was). No other commit may be under way. */
int store_commit_start(struct store *st, struct store_batch *b,
                       struct sh_error *err);

/* How the commit under way ended: 0 durable, -1 failed (err, as
 * store_commit), 1 not known yet (only when wait is false). Returns 0 when
 * none is under way. */
int store_commit_finish(struct store *st, bool wait, struct sh_error *err);

/* A file descriptor that turns readable when the commit under way may have
 * ended, for the caller's poll loop; -1 when none is under way or its end
 * is already known (call store_commit_finish). Owned by the store: watch a
 * dup() of it, as the store may close it in any later call. */
int store_commit_fd(const struct store *st);

/* ---- reads ---- */

/* Called once per row; rec is borrowed for the call. Return 0 to go on,
 * -1 to stop (the load then fails with the err the callback filled). */
typedef int (*store_job_f)(const struct store_job_row *row, const json_t *rec,
                           void *arg, struct sh_error *err);
typedef int (*store_object_f)(const char *key, const json_t *rec, void *arg,
                              struct sh_error *err);

/* Every job that is not finished, or finished at or after since_ms, in id
 * order. */
int store_load_jobs(struct store *st, int64_t since_ms, store_job_f cb,
                    void *arg, struct sh_error *err);

/* One job by id. Returns 0 and calls cb once, or -1 with SH_ENOTFOUND. */
int store_get_job(struct store *st, uint64_t id, store_job_f cb, void *arg,
                  struct sh_error *err);

/* Finished or running jobs overlapping [from_ms, until_ms) (for usage
 * reports and history export), in id order. until_ms 0 = no end. */
int store_scan_jobs(struct store *st, int64_t from_ms, int64_t until_ms,
                    store_job_f cb, void *arg, struct sh_error *err);

/* Every object of one kind, in key order. */
int store_load_objects(struct store *st, const char *kind, store_object_f cb,
                       void *arg, struct sh_error *err);

/* The largest job id ever stored, 0 when none. */
int store_max_job_id(struct store *st, uint64_t *out, struct sh_error *err);

/* Retention (--keep-history): delete at most max jobs that ended before
 * before_ms (the oldest first), outside any batch: called between commits
 * only (commit_dirty false), by the leader. *pruned: how many went. */
int store_prune_jobs(struct store *st, int64_t before_ms, int max, int *pruned,
                     struct sh_error *err);

/* How many jobs the store holds (the history kept). */
int store_count_jobs(struct store *st, uint64_t *out, struct sh_error *err);

/* The backend's name: "sqlite", "postgresql" (or "fault"). */
const char *store_backend(const struct store *st);

/* A consistent copy of the whole store, taken while it is in use, into
 * path, which must not exist or be an empty file (SQLite: VACUUM INTO; a
 * database of its own that shoald opens as it is). SH_EINVAL on a backend
 * without a file (PostgreSQL: pg_dump is its tool). */
int store_backup(struct store *st, const char *path, struct sh_error *err);

/* ---- leadership (HA; PostgreSQL only) ----
 * A store that supports it lets several controllers share one database with
 * exactly one leader. SQLite: always leader, epoch 1, nothing to check. */
bool store_has_leadership(const struct store *st);
/* Try to become leader, advertising my_url (the URL clients should use).
 * Returns 1 when this process is now leader (epoch set: every later commit
 * is refused with SH_ECONFLICT "fenced" once another leader took over), 0 when
 * another process leads (leader_url filled with its advertised URL, may be ""),
 * -1 on error (database unreachable: SH_EUNAVAILABLE). Non-blocking. */
int store_leader_try(struct store *st, const char *my_url, uint64_t *epoch,
                     char *leader_url, size_t leader_url_size,
                     struct sh_error *err);
/* For the leader: 0 while its leadership session is alive and its epoch is
 * current, renewing its lease; -1 when leadership is lost (SH_ECONFLICT)
 * or unknown (SH_EUNAVAILABLE). */
int store_leader_check(struct store *st, struct sh_error *err);
/* A leader renews its lease with every check; one whose lease is older
 * than lease_ms (a process stopped, or cut off from everything but its
 * idle database session) is taken over by the next follower that tries,
 * which ends the old leader's sessions first. Default
 * STORE_LEADER_LEASE_MS. */
#define STORE_LEADER_LEASE_MS 10000
void store_set_leader_lease(struct store *st, int64_t lease_ms);

#endif
