/* SPDX-License-Identifier: Apache-2.0 */
/* In-memory job table (see jobtab.h): a uthash keyed by id whose
 * application order is the id order, and a second one by the owner and
 * Idempotency-Key of the jobs submitted with one. */
#include "shoald/jobtab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lib/model/job_json.h"
#include "store/store.h"

struct job_entry {
    uint64_t id;
    struct job *job;
    bool counted; /* counted in its user's pending jobs */
    UT_hash_handle hh;
    /* "user/key" when the job has an idempotency key, in by_key. */
    char idem[JOB_IDENT_MAX + 1 + JOB_IDEM_KEY_MAX + 1];
    UT_hash_handle hk;
};

/* A user's pending jobs (the per-user cap at submission). */
struct user_pending {
    char *user;
    int n;
    UT_hash_handle hh;
};

struct jobtab {
    struct job_entry *by_id;
    struct job_entry *by_key;
    struct user_pending *pending;
    uint64_t next_id;
};

/* Count e in its user's pending jobs, or not, as its state says. */
static void count_pending(struct jobtab *t, struct job_entry *e, bool pending)
{
    const char *user = e->job->spec.user ? e->job->spec.user : "";
    if (e->counted == pending)
        return;
    struct user_pending *u;
    HASH_FIND_STR(t->pending, user, u);
    if (!u && pending) {
        u = calloc(1, sizeof(*u));
        if (!u || !(u->user = strdup(user))) {
            free(u);
            return; /* out of memory: not counted (the cap is lenient) */
        }
        HASH_ADD_KEYPTR(hh, t->pending, u->user, strlen(u->user), u);
    }
    if (!u)
        return;
    u->n += pending ? 1 : -1;
    e->counted = pending;
    if (u->n <= 0) {
        HASH_DEL(t->pending, u);
        free(u->user);
        free(u);
    }
}

int jobtab_user_pending(const struct jobtab *t, const char *user)
{
    struct user_pending *u;
    HASH_FIND_STR(t->pending, user, u);
    return u ? u->n : 0;
}

static void idem_name(char *buf, size_t size, const char *user, const char *key)
{
    snprintf(buf, size, "%s/%s", user ? user : "", key);
}

struct jobtab *jobtab_create(void)
{
    struct jobtab *t = calloc(1, sizeof(*t));
    if (t)
        t->next_id = 1;
    return t;
}

void jobtab_destroy(struct jobtab *t)
{
    if (!t)
        return;
    struct job_entry *e, *tmp;
    HASH_CLEAR(hk, t->by_key);
    HASH_ITER (hh, t->by_id, e, tmp) {
        HASH_DEL(t->by_id, e);
        job_destroy(e->job);
        free(e);
    }
    struct user_pending *u, *ut;
    HASH_ITER (hh, t->pending, u, ut) {
        HASH_DEL(t->pending, u);
        free(u->user);
        free(u);
    }
    free(t);
}

int jobtab_add(struct jobtab *t, struct job *job)
{
    struct job_entry *e = calloc(1, sizeof(*e));
    if (!e)
        return -1;
    e->id = job->id;
    e->job = job;
    HASH_ADD(hh, t->by_id, id, sizeof(e->id), e);
    if (job->idem_key) {
        idem_name(e->idem, sizeof(e->idem), job->spec.user, job->idem_key);
        HASH_ADD_KEYPTR(hk, t->by_key, e->idem, strlen(e->idem), e);
    }
    count_pending(t, e, job->state == JOB_PENDING);
    if (job->id >= t->next_id)
        t->next_id = job->id + 1;
    return 0;
}

static struct job_entry *find(const struct jobtab *t, uint64_t id)
{
    struct job_entry *e;
    HASH_FIND(hh, t->by_id, &id, sizeof(id), e);
    return e;
}

struct job *jobtab_get(const struct jobtab *t, uint64_t id)
{
    struct job_entry *e = find(t, id);
    return e ? e->job : NULL;
}

void jobtab_remove(struct jobtab *t, uint64_t id)
{
    struct job_entry *e = find(t, id);
    if (!e)
        return;
    count_pending(t, e, false);
    HASH_DEL(t->by_id, e);
    if (e->idem[0])
        HASH_DELETE(hk, t->by_key, e);
    job_destroy(e->job);
    free(e);
}

struct job *jobtab_find_idem(const struct jobtab *t, const char *user,
                             const char *key)
{
    char name[sizeof(((struct job_entry *)0)->idem)];
    struct job_entry *e;
    idem_name(name, sizeof(name), user, key);
    HASH_FIND(hk, t->by_key, name, strlen(name), e);
    return e ? e->job : NULL;
}

void jobtab_state_changed(struct jobtab *t, const struct job *job)
{
    struct job_entry *e = find(t, job->id);
    if (e && e->job == job)
        count_pending(t, e, job->state == JOB_PENDING);
}

int jobtab_count(const struct jobtab *t)
{
    return (int)HASH_COUNT(t->by_id);
}

void jobtab_count_states(const struct jobtab *t, int counts[JOB_STATE_COUNT])
{
    for (int i = 0; i < JOB_STATE_COUNT; i++)
        counts[i] = 0;
    for (struct job_entry *e = t->by_id; e; e = e->hh.next)
        counts[e->job->state]++;
}

struct job *jobtab_next(const struct jobtab *t, const struct job *prev)
{
    struct job_entry *e;
    if (!prev) {
        e = t->by_id;
    } else {
        e = find(t, prev->id);
        e = e ? e->hh.next : NULL;
    }
    return e ? e->job : NULL;
}

struct job *jobtab_walk_from(const struct jobtab *t, uint64_t after,
                             struct jobtab_walk *w)
{
    struct job_entry *e = after ? find(t, after) : NULL;
    if (e) {
        e = e->hh.next;
    } else {
        /* Gone (or never there): the first one with a greater id. */
        for (e = t->by_id; e && e->id <= after; e = e->hh.next)
            ;
    }
    w->entry = e;
    return e ? e->job : NULL;
}

struct job *jobtab_walk_next(struct jobtab_walk *w)
{
    struct job_entry *e = w->entry;
    e = e ? e->hh.next : NULL;
    w->entry = e;
    return e ? e->job : NULL;
}

uint64_t jobtab_next_id(const struct jobtab *t)
{
    return t->next_id;
}

void jobtab_raise_next_id(struct jobtab *t, uint64_t next)
{
    if (next > t->next_id)
        t->next_id = next;
}

uint64_t jobtab_take_id(struct jobtab *t)
{
    return t->next_id++;
}

int jobtab_evict_finished(struct jobtab *t, int64_t cutoff_ms)
{
    int n = 0;
    struct job_entry *e, *tmp;
    HASH_ITER (hh, t->by_id, e, tmp) {
        const struct job *j = e->job;
        if (job_state_is_terminal(j->state) && !j->releasing &&
            j->end_ms < cutoff_ms &&
            !((j->state == JOB_PREEMPTED || j->state == JOB_NODE_FAIL) &&
              j->spec.requeue)) {
            count_pending(t, e, false);
            HASH_DEL(t->by_id, e);
            job_destroy(e->job);
            free(e);
            n++;
        }
    }
    return n;
}

static int take_record(const struct store_job_row *row, const json_t *rec,
                       void *arg, struct sh_error *err)
{
    struct job **out = arg;
    (void)row;
    *out = job_from_record(rec, err);
    return *out ? 0 : -1;
}

struct job *jobtab_find(const struct jobtab *t, struct store *st, uint64_t id,
                        bool *owned, struct sh_error *err)
{
    *owned = false;
    struct job *job = jobtab_get(t, id);
    if (job)
        return job;
    if (id == 0 || id >= jobtab_next_id(t)) {
        sh_errorf(err, SH_ENOTFOUND, "job %llu not found",
                  (unsigned long long)id);
        return NULL;
    }
    if (store_get_job(st, id, take_record, &job, err) < 0)
        return NULL;
    *owned = true;
    return job;
}
