/* SPDX-License-Identifier: Apache-2.0 */
/* Group commit (see commit.h). */
#include "shoald/commit.h"

#include <stdlib.h>

#include "lib/util/clock.h"
#include "lib/util/log.h"
#include "store/store.h"

struct commit_waiter {
    commit_done_f cb;
    void *arg;
};

struct commit {
    struct shoald *d;
    struct store_batch *batch;
    commit_reload_f reload;
    commit_fenced_f fenced;
    struct commit_waiter *waiters;
    int nwaiters;
    int cap;
    struct commit_stats stats;
};

struct commit *commit_create(struct shoald *d, commit_reload_f reload,
                             struct sh_error *err)
{
    struct commit *c = calloc(1, sizeof(*c));
    if (!c)
        goto oom;
    c->d = d;
    c->reload = reload;
    c->batch = store_batch_create();
    if (!c->batch)
        goto oom;
    return c;
oom:
    commit_destroy(c);
    sh_errorf(err, SH_EINTERNAL, "out of memory");
    return NULL;
}

void commit_on_fenced(struct commit *c, commit_fenced_f fn)
{
    c->fenced = fn;
}

void commit_destroy(struct commit *c)
{
    if (!c)
        return;
    store_batch_destroy(c->batch);
    free(c->waiters);
    free(c);
}

struct store_batch *commit_batch(struct commit *c)
{
    return c->batch;
}

bool commit_dirty(const struct commit *c)
{
    return store_batch_count(c->batch) > 0;
}

bool commit_pending(const struct commit *c)
{
    return store_batch_count(c->batch) > 0 || c->nwaiters > 0;
}

int commit_after(struct commit *c, commit_done_f cb, void *arg)
{
    if (c->nwaiters == c->cap) {
        int cap = c->cap ? c->cap * 2 : 64;
        struct commit_waiter *w = realloc(c->waiters, (size_t)cap * sizeof(*w));
        if (!w)
            return -1;
        c->waiters = w;
        c->cap = cap;
    }
    c->waiters[c->nwaiters].cb = cb;
    c->waiters[c->nwaiters].arg = arg;
    c->nwaiters++;
    return 0;
}

static void run_waiters(struct commit *c, bool ok)
{
    /* Callbacks may register new waiters for the next batch: take the
     * current list first. */
    int n = c->nwaiters;
    struct commit_waiter *w = c->waiters;
    c->waiters = NULL;
    c->nwaiters = 0;
    c->cap = 0;
    for (int i = 0; i < n; i++)
        w[i].cb(c->d, ok, w[i].arg);
    free(w);
}

int commit_flush(struct commit *c, struct sh_error *err)
{
    int ops = store_batch_count(c->batch);
    if (ops == 0) {
        if (c->nwaiters)
            run_waiters(c, true);
        return 0;
    }
    int64_t t0 = clock_mono_us();
    int rc = store_commit(c->d->store, c->batch, err);
    c->stats.total_us += (uint64_t)(clock_mono_us() - t0);
    if (rc == 0) {
        c->stats.commits++;
        c->stats.ops += (uint64_t)ops;
        if ((uint64_t)ops > c->stats.max_batch)
            c->stats.max_batch = (uint64_t)ops;
        run_waiters(c, true);
        return 0;
    }
    c->stats.failures++;
    if (err && err->code == SH_ECONFLICT) {
        /* Fenced: another controller leads. Nothing is reloaded or
         * committed any more; the process stops (ha.c). */
        sh_log(LOG_ERR, "commit", "commit of %d changes refused: %s", ops,
               err->msg);
        store_batch_reset(c->batch);
        if (c->fenced)
            c->fenced(c->d, err->msg);
        run_waiters(c, false);
        return -1;
    }
    sh_log(LOG_ERR, "commit", "commit of %d changes failed: %s; reloading", ops,
           err ? err->msg : "?");
    store_batch_reset(c->batch);
    struct sh_error rerr;
    if (c->reload(c->d, &rerr) < 0)
        sh_log(LOG_CRIT, "commit", "reload after a failed commit failed: %s",
               rerr.msg);
    /* The reload may itself have queued nothing durable; drop it. */
    store_batch_reset(c->batch);
    run_waiters(c, false);
    return -1;
}

void commit_get_stats(const struct commit *c, struct commit_stats *out)
{
    *out = c->stats;
}
