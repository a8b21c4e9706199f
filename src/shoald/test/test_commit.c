/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: group commit (shoald/commit.c) over a real SQLite store. What a
 * waiting request sees: its callback runs only after the flush, with
 * ok = true once the batch is durable (readable from the store), also when
 * the batch was empty; a failed commit (the "fault:N:PATH" store) reloads
 * memory, answers every waiter with ok = false, stores nothing and leaves
 * an empty batch for the next iteration. The batches' numbers (what the
 * agents' wake-up checks). And the counters /metrics shows.
 * The commit is made over the store alone (no loop: SQLite commits at once).
 * A fake store that commits as PostgreSQL does (under way until the test
 * ends it, durable or failed) shows what a change made while a commit is
 * under way waits for. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shoald/commit.h"
#include "store/store.h"
#include "store/store_impl.h" /* the asynchronous fake store below */

struct fx {
    char dir[64];
    char db[128];
    struct store *store;
    struct commit *commit;
    int reloads;
    int reload_rc;
    bool reload_dirties; /* the reload leaves a change in the batch */
};

/* The reload gets the fixture as its argument. */
static int reload(void *arg, struct sh_error *err)
{
    struct fx *f = arg;
    f->reloads++;
    if (f->reload_dirties)
        store_batch_del(commit_batch(f->commit), "node", "ghost");
    if (f->reload_rc < 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "reload refused");
    return 0;
}

/* Open a store ("" = plain SQLite, else a prefix such as "fault:2:") on a
 * fresh temporary file and a commit over it. */
static void fx_open(struct fx *f, const char *prefix)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/shoal-commit-test-XXXXXX");
    cr_assert_not_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof(f->db), "%s/state.db", f->dir);
    char url[200];
    snprintf(url, sizeof(url), "%s%s", prefix, f->db);
    struct sh_error err = {0};
    f->store = store_open(url, &err);
    cr_assert_not_null(f->store, "%s: %s", url, err.msg);
    f->commit = commit_create(f->store, NULL, reload, f, &err);
    cr_assert_not_null(f->commit, "%s", err.msg);
}

static void fx_close(struct fx *f)
{
    commit_destroy(f->commit);
    store_close(f->store);
    const char *suffix[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
        char p[160];
        snprintf(p, sizeof(p), "%s%s", f->db, suffix[i]);
        unlink(p);
    }
    cr_assert_eq(rmdir(f->dir), 0, "%s left files behind", f->dir);
}

/* Flush, keeping the reason of a failure for the log line commit.c
 * writes. */
static int flush(struct fx *f)
{
    struct sh_error err = {0};
    return commit_flush(f->commit, &err);
}

static void put_node(struct fx *f, const char *name)
{
    json_t *rec = json_pack("{s:s}", "name", name);
    cr_assert_eq(store_batch_put(commit_batch(f->commit), "node", name, rec),
                 0);
    json_decref(rec);
}

static int count_object(const char *key, const json_t *rec, void *arg,
                        struct sh_error *err)
{
    (void)key;
    (void)rec;
    (void)err;
    (*(int *)arg)++;
    return 0;
}

/* Nodes in the store itself (what survives a restart). */
static int stored_nodes(struct fx *f)
{
    int n = 0;
    struct sh_error err = {0};
    cr_assert_eq(store_load_objects(f->store, "node", count_object, &n, &err),
                 0, "%s", err.msg);
    return n;
}

/* A waiting request: records each call. */
struct waiter {
    int calls;
    bool ok;
    int order;          /* when it ran, across waiters */
    int stored_at_call; /* nodes in the store when it ran */
    struct fx *fx;
};

static int call_seq;

static void done(bool ok, void *arg)
{
    struct waiter *w = arg;
    w->calls++;
    w->ok = ok;
    w->order = ++call_seq;
    if (w->fx)
        w->stored_at_call = stored_nodes(w->fx);
}

Test(commit, callback_runs_after_the_flush_once_the_change_is_durable)
{
    struct fx f;
    fx_open(&f, "");
    struct waiter w = {.fx = &f};
    put_node(&f, "gpu01");
    cr_assert_eq(commit_after(f.commit, done, &w), 0);
    cr_assert(commit_dirty(f.commit));
    cr_assert(commit_pending(f.commit));
    cr_assert_eq(w.calls, 0, "nothing is answered before the flush");
    cr_assert_eq(stored_nodes(&f), 0);
    struct sh_error err = {0};
    cr_assert_eq(commit_flush(f.commit, &err), 0, "%s", err.msg);
    cr_assert_eq(w.calls, 1);
    cr_assert(w.ok);
    cr_assert_eq(w.stored_at_call, 1, "the change was in the store first");
    cr_assert_not(commit_dirty(f.commit));
    cr_assert_not(commit_pending(f.commit));
    cr_assert_eq(commit_flush(f.commit, &err), 0);
    cr_assert_eq(w.calls, 1, "a callback runs once");
    fx_close(&f);
}

Test(commit, empty_batch_still_runs_waiting_callbacks)
{
    struct fx f;
    fx_open(&f, "");
    struct waiter w = {0};
    cr_assert_eq(commit_after(f.commit, done, &w), 0);
    cr_assert_not(commit_dirty(f.commit));
    cr_assert(commit_pending(f.commit), "a waiter alone keeps it pending");
    cr_assert_eq(flush(&f), 0);
    cr_assert_eq(w.calls, 1);
    cr_assert(w.ok);
    struct commit_stats st;
    commit_get_stats(f.commit, &st);
    cr_assert_eq(st.commits, 0, "nothing was written");
    cr_assert_not(commit_pending(f.commit));
    fx_close(&f);
}

Test(commit, callbacks_run_in_the_order_they_were_registered)
{
    struct fx f;
    fx_open(&f, "");
    struct waiter w[100];
    memset(w, 0, sizeof(w));
    call_seq = 0;
    put_node(&f, "gpu01");
    for (int i = 0; i < 100; i++) /* past the first allocation of 64 */
        cr_assert_eq(commit_after(f.commit, done, &w[i]), 0);
    cr_assert_eq(flush(&f), 0);
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(w[i].calls, 1, "waiter %d", i);
        cr_assert_eq(w[i].order, i + 1, "waiter %d", i);
    }
    fx_close(&f);
}

/* A callback that registers another waiter (answering one request starts
 * another change). */
struct chain {
    struct waiter *next;
    struct commit *c;
    int calls;
};

static void done_then_wait(bool ok, void *arg)
{
    struct chain *ch = arg;
    (void)ok;
    ch->calls++;
    commit_after(ch->c, done, ch->next);
}

Test(commit, waiter_added_by_a_callback_waits_for_the_next_flush)
{
    struct fx f;
    fx_open(&f, "");
    struct waiter later = {0};
    struct chain ch = {.next = &later, .c = f.commit};
    cr_assert_eq(commit_after(f.commit, done_then_wait, &ch), 0);
    cr_assert_eq(flush(&f), 0);
    cr_assert_eq(ch.calls, 1);
    cr_assert_eq(later.calls, 0, "it waits for its own batch");
    cr_assert(commit_pending(f.commit));
    cr_assert_eq(flush(&f), 0);
    cr_assert_eq(later.calls, 1);
    cr_assert(later.ok);
    fx_close(&f);
}

/* Seen from a callback: the batch it waited for has ended. */
struct batch_seen {
    struct commit *c;
    uint64_t open_at_call;
    uint64_t ended_at_call;
};

static void note_batches(bool ok, void *arg)
{
    struct batch_seen *b = arg;
    (void)ok;
    b->open_at_call = commit_open_batch(b->c);
    b->ended_at_call = commit_ended_batches(b->c);
}

Test(commit, batches_are_numbered_and_end_in_order)
{
    struct fx f;
    fx_open(&f, "");
    uint64_t first = commit_open_batch(f.commit);
    cr_assert_eq(commit_ended_batches(f.commit), first, "none under way");
    put_node(&f, "gpu01");
    struct batch_seen b = {.c = f.commit};
    cr_assert_eq(commit_after(f.commit, note_batches, &b), 0);
    cr_assert_eq(commit_open_batch(f.commit), first, "a change numbers none");
    cr_assert_eq(flush(&f), 0);
    cr_assert_gt(b.ended_at_call, first, "its batch had ended");
    cr_assert_eq(b.open_at_call, b.ended_at_call);
    cr_assert_eq(commit_open_batch(f.commit), first + 1);
    cr_assert_eq(flush(&f), 0);
    cr_assert_eq(commit_open_batch(f.commit), first + 2,
                 "an empty batch ends too");
    fx_close(&f);
}

/* The "fault:1:" store fails the first commit: the open batch is lost with
 * it and a later one is numbered after it. */
Test(commit, failed_batch_ends_too)
{
    struct fx f;
    fx_open(&f, "fault:1:");
    uint64_t first = commit_open_batch(f.commit);
    put_node(&f, "gpu01");
    struct batch_seen b = {.c = f.commit};
    cr_assert_eq(commit_after(f.commit, note_batches, &b), 0);
    cr_assert_eq(flush(&f), -1);
    cr_assert_gt(b.ended_at_call, first);
    cr_assert_eq(commit_ended_batches(f.commit), commit_open_batch(f.commit));
    fx_close(&f);
}

Test(commit, failed_commit_reloads_and_answers_every_waiter_not_ok)
{
    struct fx f;
    fx_open(&f, "fault:1:");
    struct waiter a = {0};
    struct waiter b = {0};
    put_node(&f, "gpu01");
    put_node(&f, "gpu02");
    cr_assert_eq(commit_after(f.commit, done, &a), 0);
    cr_assert_eq(commit_after(f.commit, done, &b), 0);
    struct sh_error err = {0};
    cr_assert_eq(commit_flush(f.commit, &err), -1);
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    cr_assert(strstr(err.msg, "injected") != NULL, "%s", err.msg);
    cr_assert_eq(f.reloads, 1, "memory is rebuilt from the store");
    cr_assert_eq(a.calls, 1);
    cr_assert_eq(b.calls, 1);
    cr_assert_not(a.ok);
    cr_assert_not(b.ok);
    cr_assert_eq(stored_nodes(&f), 0, "nothing of the batch was stored");
    cr_assert_not(commit_dirty(f.commit), "the failed batch is dropped");
    cr_assert_not(commit_pending(f.commit));
    fx_close(&f);
}

Test(commit, changes_queued_by_the_reload_are_dropped)
{
    struct fx f;
    fx_open(&f, "fault:1:");
    f.reload_dirties = true;
    put_node(&f, "gpu01");
    cr_assert_eq(flush(&f), -1);
    cr_assert_eq(f.reloads, 1);
    cr_assert_not(commit_dirty(f.commit));
    fx_close(&f);
}

Test(commit, failed_reload_still_answers_the_waiters)
{
    struct fx f;
    fx_open(&f, "fault:1:");
    f.reload_rc = -1;
    struct waiter w = {0};
    put_node(&f, "gpu01");
    cr_assert_eq(commit_after(f.commit, done, &w), 0);
    cr_assert_eq(flush(&f), -1);
    cr_assert_eq(f.reloads, 1);
    cr_assert_eq(w.calls, 1);
    cr_assert_not(w.ok);
    fx_close(&f);
}

Test(commit, commit_after_a_failure_starts_from_an_empty_batch)
{
    struct fx f;
    fx_open(&f, "fault:2:"); /* the first commit lands, later ones fail */
    struct waiter w1 = {.fx = &f};
    struct waiter w2 = {.fx = &f};
    put_node(&f, "gpu01");
    cr_assert_eq(commit_after(f.commit, done, &w1), 0);
    cr_assert_eq(flush(&f), 0);
    cr_assert(w1.ok);
    cr_assert_eq(w1.stored_at_call, 1);
    put_node(&f, "gpu02");
    put_node(&f, "gpu03");
    cr_assert_eq(commit_after(f.commit, done, &w2), 0);
    cr_assert_eq(flush(&f), -1);
    cr_assert_not(w2.ok);
    cr_assert_eq(w2.stored_at_call, 1, "only the first batch is stored");
    /* A waiter with nothing to write is still answered (ok) even though
     * the store now fails every commit. */
    struct waiter w3 = {0};
    cr_assert_eq(commit_after(f.commit, done, &w3), 0);
    cr_assert_eq(flush(&f), 0);
    cr_assert(w3.ok);
    cr_assert_eq(f.reloads, 1);
    fx_close(&f);
}

Test(commit, stats_count_commits_ops_and_failures)
{
    struct fx f;
    fx_open(&f, "fault:4:"); /* commits 1..3 land, the 4th fails */
    int sizes[] = {1, 3, 2};
    char name[32];
    int n = 0;
    for (int b = 0; b < 3; b++) {
        for (int i = 0; i < sizes[b]; i++) {
            snprintf(name, sizeof(name), "gpu%02d", n++);
            put_node(&f, name);
        }
        cr_assert_eq(flush(&f), 0);
        cr_assert_eq(flush(&f), 0, "empty: not counted");
    }
    struct commit_stats st;
    commit_get_stats(f.commit, &st);
    cr_assert_eq(st.commits, 3);
    cr_assert_eq(st.ops, 6);
    cr_assert_eq(st.max_batch, 3);
    cr_assert_eq(st.failures, 0);
    put_node(&f, "gpu99");
    cr_assert_eq(flush(&f), -1);
    commit_get_stats(f.commit, &st);
    cr_assert_eq(st.commits, 3, "a failed commit is not a commit");
    cr_assert_eq(st.ops, 6);
    cr_assert_eq(st.failures, 1);
    cr_assert_eq(stored_nodes(&f), 6);
    fx_close(&f);
}

/* ---- a store whose commits end when the test says ---- */

/* How the commit under way ends. */
enum fake_end {
    FAKE_PENDING, /* not yet */
    FAKE_DURABLE,
    FAKE_FAILED,
    FAKE_FENCED, /* another controller leads (SH_ECONFLICT) */
};

struct fake_store {
    struct store base; /* must be first */
    bool under_way;
    enum fake_end end;
    int sent; /* batches sent */
};

static void fake_close(struct store *st)
{
    free(st);
}

static int fake_ended(struct fake_store *fs, struct sh_error *err)
{
    if (fs->end == FAKE_FAILED)
        return sh_errorf(err, SH_EUNAVAILABLE, "fake: commit failed");
    if (fs->end == FAKE_FENCED)
        return sh_errorf(err, SH_ECONFLICT, "fake: fenced");
    return 0;
}

static int fake_commit(struct store *st, const struct store_batch *b,
                       struct sh_error *err)
{
    (void)b;
    return fake_ended((struct fake_store *)st, err);
}

static int fake_commit_start(struct store *st, const struct store_batch *b,
                             struct sh_error *err)
{
    struct fake_store *fs = (struct fake_store *)st;
    (void)b;
    (void)err;
    cr_assert_not(fs->under_way, "one commit under way at a time");
    fs->under_way = true;
    fs->end = FAKE_PENDING;
    fs->sent++;
    return 0;
}

static int fake_commit_finish(struct store *st, bool wait, struct sh_error *err)
{
    struct fake_store *fs = (struct fake_store *)st;
    if (!fs->under_way)
        return 0;
    cr_assert_not(wait && fs->end == FAKE_PENDING, "would wait forever");
    if (fs->end == FAKE_PENDING)
        return 1;
    fs->under_way = false;
    return fake_ended(fs, err) < 0 ? -1 : 0;
}

static const struct store_ops fake_ops = {
    .name = "fake",
    .close = fake_close,
    .commit = fake_commit,
    .commit_start = fake_commit_start,
    .commit_finish = fake_commit_finish,
};

static struct fake_store *fx_open_async(struct fx *f)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/shoal-commit-test-XXXXXX");
    cr_assert_not_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof(f->db), "%s/none.db", f->dir);
    struct fake_store *fs = calloc(1, sizeof(*fs));
    cr_assert_not_null(fs);
    fs->base.ops = &fake_ops;
    f->store = &fs->base;
    struct sh_error err = {0};
    f->commit = commit_create(f->store, NULL, reload, f, &err);
    cr_assert_not_null(f->commit, "%s", err.msg);
    return fs;
}

/* The loop's call before it sleeps (main.c before_sleep). */
static int start(struct fx *f)
{
    struct sh_error err = {0};
    return commit_start(f->commit, &err);
}

/* Batch N under way, a node touched in N+1 (the pass's start): what the
 * agents' wake-up checks (the touch's batch has not ended) holds until N+1
 * has ended, and an answer composed then (commit_after, as
 * api_agent_answer_poll does) is sent only once N+1 is durable. */
Test(commit, change_made_while_a_commit_is_under_way_waits_for_its_batch)
{
    struct fx f;
    struct fake_store *fs = fx_open_async(&f);
    put_node(&f, "gpu01");
    cr_assert_eq(start(&f), 0);
    cr_assert(fs->under_way, "batch N is under way");
    put_node(&f, "gpu02"); /* the touch */
    uint64_t touched = commit_open_batch(f.commit);
    cr_assert_geq(touched, commit_ended_batches(f.commit), "not ended");
    struct waiter answer = {0};
    cr_assert_eq(commit_after(f.commit, done, &answer), 0);
    cr_assert_eq(start(&f), 0);
    cr_assert_eq(fs->sent, 1, "N+1 waits for N");
    fs->end = FAKE_DURABLE;
    cr_assert_eq(start(&f), 0); /* N lands, N+1 is sent */
    cr_assert_eq(fs->sent, 2);
    cr_assert_eq(answer.calls, 0, "N ended, not N+1");
    cr_assert_geq(touched, commit_ended_batches(f.commit), "not ended");
    fs->end = FAKE_DURABLE;
    cr_assert_eq(start(&f), 0);
    cr_assert_eq(answer.calls, 1);
    cr_assert(answer.ok);
    cr_assert_lt(touched, commit_ended_batches(f.commit), "N+1 ended");
    cr_assert_not(commit_memory_lost(f.commit));
    fx_close(&f);
}

/* The same when N+1 fails: the answer is told ok = false (503), memory
 * was reloaded. */
Test(commit, change_whose_batch_fails_is_answered_not_ok)
{
    struct fx f;
    struct fake_store *fs = fx_open_async(&f);
    put_node(&f, "gpu01");
    cr_assert_eq(start(&f), 0);
    put_node(&f, "gpu02");
    uint64_t touched = commit_open_batch(f.commit);
    struct waiter answer = {0};
    cr_assert_eq(commit_after(f.commit, done, &answer), 0);
    fs->end = FAKE_DURABLE;
    cr_assert_eq(start(&f), 0);
    cr_assert_eq(answer.calls, 0);
    fs->end = FAKE_FAILED;
    cr_assert_eq(start(&f), -1);
    cr_assert_eq(answer.calls, 1);
    cr_assert_not(answer.ok);
    cr_assert_eq(f.reloads, 1);
    cr_assert_lt(touched, commit_ended_batches(f.commit));
    cr_assert_not(commit_memory_lost(f.commit), "memory was reloaded");
    fx_close(&f);
}

/* N fails while N+1 is open on top of it: both are lost, a change of N+1
 * is numbered below the next open batch, every waiter hears ok = false.
 * Memory is lost when the reload fails, and when the commit was fenced
 * (nothing is reloaded then); a later good reload clears it. */
Test(commit, failed_commit_under_way_loses_the_open_batch)
{
    struct fx f;
    struct fake_store *fs = fx_open_async(&f);
    put_node(&f, "gpu01");
    cr_assert_eq(start(&f), 0);
    put_node(&f, "gpu02");
    uint64_t touched = commit_open_batch(f.commit);
    struct waiter answer = {0};
    cr_assert_eq(commit_after(f.commit, done, &answer), 0);
    f.reload_rc = -1;
    fs->end = FAKE_FAILED;
    cr_assert_eq(start(&f), -1);
    cr_assert_eq(fs->sent, 1, "N+1 was never sent");
    cr_assert_eq(answer.calls, 1);
    cr_assert_not(answer.ok);
    cr_assert_lt(touched, commit_ended_batches(f.commit));
    cr_assert_eq(commit_ended_batches(f.commit), commit_open_batch(f.commit));
    cr_assert(commit_memory_lost(f.commit), "the reload failed");
    f.reload_rc = 0;
    put_node(&f, "gpu03");
    cr_assert_eq(start(&f), 0);
    fs->end = FAKE_FAILED;
    cr_assert_eq(start(&f), -1);
    cr_assert_not(commit_memory_lost(f.commit), "reloaded");
    put_node(&f, "gpu04");
    cr_assert_eq(start(&f), 0);
    fs->end = FAKE_FENCED;
    cr_assert_eq(start(&f), -1);
    cr_assert_eq(f.reloads, 2, "a fenced commit reloads nothing");
    cr_assert(commit_memory_lost(f.commit), "fenced");
    fx_close(&f);
}

/* A batch that fails at once (SQLite) ends one number: the batch opened
 * after it is the next one. */
Test(commit, synchronous_failure_numbers_one_batch)
{
    struct fx f;
    fx_open(&f, "fault:1:");
    uint64_t first = commit_open_batch(f.commit);
    put_node(&f, "gpu01");
    cr_assert_eq(flush(&f), -1);
    cr_assert_eq(commit_open_batch(f.commit), first + 1);
    cr_assert_eq(commit_ended_batches(f.commit), first + 1);
    fx_close(&f);
}
