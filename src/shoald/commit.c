/* SPDX-License-Identifier: Apache-2.0 */
/* Group commit (see commit.h). */
#include "shoald/commit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "lib/loop/loop.h"
#include "lib/util/clock.h"
#include "lib/util/log.h"
#include "store/store.h"

struct commit_waiter {
    commit_done_f cb;
    void *arg;
};

struct waiters {
    struct commit_waiter *w;
    int n;
    int cap;
};

struct commit {
    struct store *store;
    struct loop *loop;
    struct store_batch *batch;
    commit_reload_f reload;
    void *reload_arg;
    commit_fenced_f fenced;
    void *fenced_arg;
    struct waiters open;   /* wait for the open batch */
    struct waiters flying; /* wait for the commit under way */
    bool under_way;        /* a commit was sent and has not ended */
    uint64_t opened;       /* the open batch's number (commit_open_batch) */
    bool memory_lost;      /* commit_memory_lost */
    int fd;                /* dup of the store's descriptor we watch, or -1 */
    int flying_ops;
    int64_t flying_t0_us;
    struct commit_stats stats;
};

struct commit *commit_create(struct store *store, struct loop *loop,
                             commit_reload_f reload, void *reload_arg,
                             struct sh_error *err)
{
    struct commit *c = calloc(1, sizeof(*c));
    if (!c)
        goto oom;
    c->store = store;
    c->loop = loop;
    c->reload = reload;
    c->reload_arg = reload_arg;
    c->fd = -1;
    c->batch = store_batch_create();
    if (!c->batch)
        goto oom;
    return c;
oom:
    commit_destroy(c);
    sh_errorf(err, SH_EINTERNAL, "out of memory");
    return NULL;
}

void commit_on_fenced(struct commit *c, commit_fenced_f fn, void *arg)
{
    c->fenced = fn;
    c->fenced_arg = arg;
}

static void unwatch(struct commit *c)
{
    if (c->fd < 0)
        return;
    loop_del_fd(c->loop, c->fd);
    close(c->fd);
    c->fd = -1;
}

void commit_destroy(struct commit *c)
{
    if (!c)
        return;
    unwatch(c);
    store_batch_destroy(c->batch);
    free(c->open.w);
    free(c->flying.w);
    free(c);
}

struct store_batch *commit_batch(struct commit *c)
{
    return c->batch;
}

bool commit_dirty(const struct commit *c)
{
    return store_batch_count(c->batch) > 0 || c->under_way;
}

bool commit_pending(const struct commit *c)
{
    if (c->under_way)
        /* The commit's end may be known already (a read waited for it):
         * nothing would wake the loop for it. */
        return store_commit_fd(c->store) < 0;
    return store_batch_count(c->batch) > 0 || c->open.n > 0;
}

static int waiters_add(struct waiters *l, commit_done_f cb, void *arg)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        struct commit_waiter *w = realloc(l->w, (size_t)cap * sizeof(*w));
        if (!w)
            return -1;
        l->w = w;
        l->cap = cap;
    }
    l->w[l->n].cb = cb;
    l->w[l->n].arg = arg;
    l->n++;
    return 0;
}

int commit_after(struct commit *c, commit_done_f cb, void *arg)
{
    /* With nothing open, what the caller depends on is at most the commit
     * under way. */
    if (store_batch_count(c->batch) == 0 && c->under_way)
        return waiters_add(&c->flying, cb, arg);
    return waiters_add(&c->open, cb, arg);
}

static void run_waiters(struct commit *c, struct waiters *l, bool ok)
{
    /* Callbacks may register new waiters for the next batch: take the
     * current list first. */
    struct waiters w = *l;
    *l = (struct waiters){0};
    for (int i = 0; i < w.n; i++)
        w.w[i].cb(ok, w.w[i].arg);
    free(w.w);
}

/* A commit failed: memory holds its changes and those of the open batch
 * made on top of them; both are gone. open_lost: the commit was under way
 * while an open batch was built on it (that batch is lost with it and its
 * number ends here); false when the failed batch was the open one (its
 * number ended when it was sent). */
static void failed(struct commit *c, int ops, bool open_lost,
                   struct sh_error *err)
{
    c->stats.failures++;
    store_batch_reset(c->batch);
    if (open_lost)
        c->opened++;
    c->memory_lost = true;
    if (err->code == SH_ECONFLICT) {
        /* Fenced: another controller leads. Nothing is reloaded or
         * committed any more; the process stops (ha.c). */
        sh_log(LOG_ERR, "commit", "commit of %d changes refused: %s", ops,
               err->msg);
        if (c->fenced)
            c->fenced(c->fenced_arg, err->msg);
    } else {
        sh_log(LOG_ERR, "commit", "commit of %d changes failed: %s; reloading",
               ops, err->msg);
        struct sh_error rerr;
        if (c->reload(c->reload_arg, &rerr) < 0)
            sh_log(LOG_CRIT, "commit",
                   "reload after a failed commit failed: %s", rerr.msg);
        else
            c->memory_lost = false;
        /* The reload may itself have queued nothing durable; drop it. */
        store_batch_reset(c->batch);
    }
    run_waiters(c, &c->flying, false);
    run_waiters(c, &c->open, false);
}

static void committed(struct commit *c, int ops, int64_t t0_us)
{
    c->stats.total_us += (uint64_t)(clock_mono_us() - t0_us);
    c->stats.commits++;
    c->stats.ops += (uint64_t)ops;
    if ((uint64_t)ops > c->stats.max_batch)
        c->stats.max_batch = (uint64_t)ops;
}

/* Collect the end of the commit under way. Returns 1 while it has not
 * ended (only when wait is false), 0 when it was durable, -1 when it failed
 * (the waiters have run). */
static int land(struct commit *c, bool wait, struct sh_error *err)
{
    if (!c->under_way)
        return 0;
    int rc = store_commit_finish(c->store, wait, err);
    if (rc == 1)
        return 1;
    unwatch(c);
    c->under_way = false;
    if (rc < 0) {
        c->stats.total_us += (uint64_t)(clock_mono_us() - c->flying_t0_us);
        failed(c, c->flying_ops, true, err);
        return -1;
    }
    committed(c, c->flying_ops, c->flying_t0_us);
    run_waiters(c, &c->flying, true);
    return 0;
}

static void on_store_ready(struct loop *loop, int fd, uint32_t events,
                           void *arg)
{
    struct commit *c = arg;
    struct sh_error err;
    (void)loop;
    (void)fd;
    (void)events;
    land(c, false, &err); /* failures are logged and answered */
}

int commit_start(struct commit *c, struct sh_error *err)
{
    if (c->under_way && land(c, false, err) != 0)
        return c->under_way ? 0 : -1;
    int ops = store_batch_count(c->batch);
    c->opened++; /* the open batch ends here: sent, or empty */
    if (ops == 0) {
        if (c->open.n)
            run_waiters(c, &c->open, true);
        return 0;
    }
    int64_t t0 = clock_mono_us();
    int rc = store_commit_start(c->store, c->batch, err);
    if (rc < 0) {
        c->stats.total_us += (uint64_t)(clock_mono_us() - t0);
        failed(c, ops, false, err);
        return -1;
    }
    if (rc == 0) {
        committed(c, ops, t0);
        run_waiters(c, &c->open, true);
        return 0;
    }
    /* Under way: the open batch's waiters now wait for it, and the loop
     * wakes when the store answers. */
    c->under_way = true;
    c->flying_ops = ops;
    c->flying_t0_us = t0;
    struct waiters w = c->flying;
    c->flying = c->open;
    c->open = w;
    int sfd = store_commit_fd(c->store);
    if (sfd >= 0) {
        c->fd = fcntl(sfd, F_DUPFD_CLOEXEC, 0);
        struct sh_error werr;
        if (c->fd >= 0 && loop_add_fd(c->loop, c->fd, EPOLLIN, on_store_ready,
                                      c, &werr) < 0) {
            close(c->fd);
            c->fd = -1;
        }
        if (c->fd < 0) /* cannot watch it: wait for it here */
            land(c, true, err);
    }
    return 0;
}

int commit_flush(struct commit *c, struct sh_error *err)
{
    if (land(c, true, err) < 0)
        return -1;
    int ops = store_batch_count(c->batch);
    c->opened++;
    if (ops == 0) {
        if (c->open.n)
            run_waiters(c, &c->open, true);
        return 0;
    }
    int64_t t0 = clock_mono_us();
    int rc = store_commit(c->store, c->batch, err);
    if (rc < 0) {
        c->stats.total_us += (uint64_t)(clock_mono_us() - t0);
        failed(c, ops, false, err);
        return -1;
    }
    committed(c, ops, t0);
    run_waiters(c, &c->open, true);
    return 0;
}

uint64_t commit_open_batch(const struct commit *c)
{
    return c->opened;
}

uint64_t commit_ended_batches(const struct commit *c)
{
    return c->under_way ? c->opened - 1 : c->opened;
}

bool commit_memory_lost(const struct commit *c)
{
    return c->memory_lost;
}

void commit_get_stats(const struct commit *c, struct commit_stats *out)
{
    *out = c->stats;
}
