/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the controller's in-memory job table (shoald/jobtab.c): lookup,
 * iteration in id order (and removal while iterating), the next job id
 * (never lowered, taken monotonically), counts per state, and eviction of
 * finished jobs, which must keep every job that still matters: active
 * ones, finished ones still releasing GPUs, preempted or node-failed ones
 * that will be requeued, and recently finished ones. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job.h"
#include "shoald/jobtab.h"

#define T0 1767312000000LL /* 2026-01-02, ms */

static struct jobtab *table_new(void)
{
    struct jobtab *t = jobtab_create();
    cr_assert_not_null(t);
    return t;
}

/* A job in state st that ended at end_ms (terminal states only). */
static struct job *job_new(uint64_t id, enum job_state st, int64_t end_ms)
{
    struct job_spec spec;
    job_spec_init(&spec);
    struct job *j = job_create(id, &spec, T0);
    cr_assert_not_null(j);
    j->state = st;
    if (st != JOB_PENDING)
        j->start_ms = T0;
    if (job_state_is_terminal(st))
        j->end_ms = end_ms;
    return j;
}

static void add(struct jobtab *t, uint64_t id, enum job_state st,
                int64_t end_ms)
{
    cr_assert_eq(jobtab_add(t, job_new(id, st, end_ms)), 0);
}

/* The ids in iteration order, as "1,2,5". */
static void ids(const struct jobtab *t, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (struct job *j = jobtab_next(t, NULL); j; j = jobtab_next(t, j))
        o += (size_t)snprintf(buf + o, size - o, "%s%llu", o ? "," : "",
                              (unsigned long long)j->id);
}

Test(jobtab, empty_table_has_no_jobs_and_starts_ids_at_one)
{
    struct jobtab *t = table_new();
    cr_assert_eq(jobtab_count(t), 0);
    cr_assert_null(jobtab_next(t, NULL));
    cr_assert_null(jobtab_get(t, 1));
    cr_assert_eq(jobtab_next_id(t), 1);
    jobtab_destroy(t);
    jobtab_destroy(NULL);
}

Test(jobtab, get_finds_each_added_job)
{
    struct jobtab *t = table_new();
    struct job *a = job_new(3, JOB_PENDING, 0);
    struct job *b = job_new(8, JOB_RUNNING, 0);
    cr_assert_eq(jobtab_add(t, a), 0);
    cr_assert_eq(jobtab_add(t, b), 0);
    cr_assert_eq(jobtab_get(t, 3), a);
    cr_assert_eq(jobtab_get(t, 8), b);
    cr_assert_null(jobtab_get(t, 4));
    cr_assert_eq(jobtab_count(t), 2);
    jobtab_destroy(t); /* frees both jobs (ASan checks) */
}

Test(jobtab, iteration_is_in_id_order)
{
    struct jobtab *t = table_new();
    uint64_t want[] = {1, 2, 5, 9, 10, 1000};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        add(t, want[i], JOB_PENDING, 0);
    char buf[128];
    ids(t, buf, sizeof(buf));
    cr_assert_str_eq(buf, "1,2,5,9,10,1000");
    jobtab_destroy(t);
}

Test(jobtab, many_jobs_iterate_in_id_order)
{
    struct jobtab *t = table_new();
    for (uint64_t id = 1; id <= 5000; id += 3)
        add(t, id, JOB_PENDING, 0);
    uint64_t prev = 0;
    int n = 0;
    for (struct job *j = jobtab_next(t, NULL); j; j = jobtab_next(t, j)) {
        cr_assert_gt(j->id, prev);
        prev = j->id;
        n++;
    }
    cr_assert_eq(n, jobtab_count(t));
    cr_assert_eq(n, 1667);
    jobtab_destroy(t);
}

Test(jobtab, remove_drops_the_job_and_keeps_the_order)
{
    struct jobtab *t = table_new();
    for (uint64_t id = 1; id <= 5; id++)
        add(t, id, JOB_PENDING, 0);
    jobtab_remove(t, 3);
    jobtab_remove(t, 1);
    jobtab_remove(t, 42); /* absent: nothing happens */
    cr_assert_null(jobtab_get(t, 3));
    cr_assert_eq(jobtab_count(t), 3);
    char buf[64];
    ids(t, buf, sizeof(buf));
    cr_assert_str_eq(buf, "2,4,5");
    jobtab_destroy(t);
}

Test(jobtab, jobs_can_be_removed_while_iterating)
{
    struct jobtab *t = table_new();
    for (uint64_t id = 1; id <= 10; id++)
        add(t, id, id % 2 ? JOB_COMPLETED : JOB_RUNNING, T0);
    struct job *next;
    for (struct job *j = jobtab_next(t, NULL); j; j = next) {
        next = jobtab_next(t, j); /* take the next before removing */
        if (j->state == JOB_COMPLETED)
            jobtab_remove(t, j->id);
    }
    char buf[64];
    ids(t, buf, sizeof(buf));
    cr_assert_str_eq(buf, "2,4,6,8,10");
    jobtab_destroy(t);
}

Test(jobtab, next_id_follows_the_largest_id_added)
{
    struct jobtab *t = table_new();
    add(t, 7, JOB_PENDING, 0);
    cr_assert_eq(jobtab_next_id(t), 8);
    add(t, 20, JOB_PENDING, 0);
    cr_assert_eq(jobtab_next_id(t), 21);
    jobtab_remove(t, 20);
    cr_assert_eq(jobtab_next_id(t), 21, "removing never gives an id back");
    jobtab_destroy(t);
}

Test(jobtab, next_id_is_never_lowered)
{
    struct jobtab *t = table_new();
    jobtab_raise_next_id(t, 100);
    cr_assert_eq(jobtab_next_id(t), 100);
    jobtab_raise_next_id(t, 50);
    cr_assert_eq(jobtab_next_id(t), 100);
    jobtab_raise_next_id(t, 0);
    cr_assert_eq(jobtab_next_id(t), 100);
    add(t, 60, JOB_COMPLETED, T0); /* an old job loaded from the store */
    cr_assert_eq(jobtab_next_id(t), 100);
    jobtab_raise_next_id(t, 101);
    cr_assert_eq(jobtab_next_id(t), 101);
    jobtab_destroy(t);
}

Test(jobtab, take_id_gives_increasing_ids_never_reused)
{
    struct jobtab *t = table_new();
    cr_assert_eq(jobtab_take_id(t), 1);
    cr_assert_eq(jobtab_take_id(t), 2);
    cr_assert_eq(jobtab_next_id(t), 3);
    add(t, 2, JOB_PENDING, 0);
    cr_assert_eq(jobtab_take_id(t), 3);
    jobtab_raise_next_id(t, 10);
    cr_assert_eq(jobtab_take_id(t), 10);
    jobtab_raise_next_id(t, 5);
    cr_assert_eq(jobtab_take_id(t), 11);
    uint64_t prev = 11;
    for (int i = 0; i < 100; i++) {
        uint64_t id = jobtab_take_id(t);
        cr_assert_eq(id, prev + 1);
        prev = id;
    }
    jobtab_destroy(t);
}

Test(jobtab, counts_per_state)
{
    struct jobtab *t = table_new();
    add(t, 1, JOB_PENDING, 0);
    add(t, 2, JOB_PENDING, 0);
    add(t, 3, JOB_RUNNING, 0);
    add(t, 4, JOB_COMPLETED, T0);
    add(t, 5, JOB_FAILED, T0);
    add(t, 6, JOB_FAILED, T0);
    add(t, 7, JOB_FAILED, T0);
    add(t, 8, JOB_NODE_FAIL, T0);
    int counts[JOB_STATE_COUNT];
    for (int i = 0; i < JOB_STATE_COUNT; i++)
        counts[i] = 99; /* overwritten, not added to */
    jobtab_count_states(t, counts);
    cr_assert_eq(counts[JOB_PENDING], 2);
    cr_assert_eq(counts[JOB_RUNNING], 1);
    cr_assert_eq(counts[JOB_COMPLETED], 1);
    cr_assert_eq(counts[JOB_FAILED], 3);
    cr_assert_eq(counts[JOB_CANCELLED], 0);
    cr_assert_eq(counts[JOB_PREEMPTED], 0);
    cr_assert_eq(counts[JOB_TIMEOUT], 0);
    cr_assert_eq(counts[JOB_NODE_FAIL], 1);
    jobtab_remove(t, 5);
    jobtab_count_states(t, counts);
    cr_assert_eq(counts[JOB_FAILED], 2);
    cr_assert_eq(jobtab_count(t), 7);
    jobtab_destroy(t);
}

Test(jobtab, evict_drops_only_old_finished_jobs)
{
    struct jobtab *t = table_new();
    int64_t cutoff = T0 + 1000;
    add(t, 1, JOB_COMPLETED, T0);        /* old: goes */
    add(t, 2, JOB_FAILED, T0 + 999);     /* old: goes */
    add(t, 3, JOB_CANCELLED, T0);        /* old: goes */
    add(t, 4, JOB_TIMEOUT, T0);          /* old: goes */
    add(t, 5, JOB_COMPLETED, cutoff);    /* ended at the cutoff: stays */
    add(t, 6, JOB_COMPLETED, T0 + 5000); /* recent: stays */
    cr_assert_eq(jobtab_evict_finished(t, cutoff), 4);
    char buf[64];
    ids(t, buf, sizeof(buf));
    cr_assert_str_eq(buf, "5,6");
    cr_assert_eq(jobtab_evict_finished(t, cutoff), 0, "nothing more to drop");
    jobtab_destroy(t);
}

Test(jobtab, evict_keeps_active_jobs)
{
    struct jobtab *t = table_new();
    add(t, 1, JOB_PENDING, 0);
    add(t, 2, JOB_RUNNING, 0);
    cr_assert_eq(jobtab_evict_finished(t, T0 + 86400000LL), 0);
    cr_assert_eq(jobtab_count(t), 2);
    jobtab_destroy(t);
}

Test(jobtab, evict_keeps_finished_jobs_still_releasing_their_gpus)
{
    struct jobtab *t = table_new();
    struct job *j = job_new(1, JOB_CANCELLED, T0);
    j->releasing = true;
    cr_assert_eq(jobtab_add(t, j), 0);
    cr_assert_eq(jobtab_evict_finished(t, T0 + 86400000LL), 0);
    cr_assert_eq(jobtab_get(t, 1), j);
    j->releasing = false; /* the agent confirmed */
    cr_assert_eq(jobtab_evict_finished(t, T0 + 86400000LL), 1);
    cr_assert_null(jobtab_get(t, 1));
    jobtab_destroy(t);
}

Test(jobtab, evict_keeps_jobs_that_will_be_requeued)
{
    struct jobtab *t = table_new();
    struct job *a = job_new(1, JOB_PREEMPTED, T0);
    struct job *b = job_new(2, JOB_NODE_FAIL, T0);
    struct job *c = job_new(3, JOB_PREEMPTED, T0);
    struct job *d = job_new(4, JOB_NODE_FAIL, T0);
    a->spec.requeue = true;
    b->spec.requeue = true;
    c->spec.requeue = false;
    d->spec.requeue = false;
    cr_assert_eq(jobtab_add(t, a), 0);
    cr_assert_eq(jobtab_add(t, b), 0);
    cr_assert_eq(jobtab_add(t, c), 0);
    cr_assert_eq(jobtab_add(t, d), 0);
    cr_assert_eq(jobtab_evict_finished(t, T0 + 86400000LL), 2);
    char buf[64];
    ids(t, buf, sizeof(buf));
    cr_assert_str_eq(buf, "1,2", "only the requeue-able ones stay");
    jobtab_destroy(t);
}

Test(jobtab, evict_drops_failed_and_cancelled_jobs_even_with_requeue)
{
    /* requeue only brings back preempted and node-failed jobs: a failed
     * or cancelled job with requeue set is finished for good. */
    struct jobtab *t = table_new();
    struct job *a = job_new(1, JOB_FAILED, T0);
    struct job *b = job_new(2, JOB_CANCELLED, T0);
    a->spec.requeue = true;
    b->spec.requeue = true;
    cr_assert_eq(jobtab_add(t, a), 0);
    cr_assert_eq(jobtab_add(t, b), 0);
    cr_assert_eq(jobtab_evict_finished(t, T0 + 1), 2);
    cr_assert_eq(jobtab_count(t), 0);
    jobtab_destroy(t);
}

Test(jobtab, next_id_survives_eviction)
{
    struct jobtab *t = table_new();
    add(t, 41, JOB_COMPLETED, T0);
    cr_assert_eq(jobtab_evict_finished(t, T0 + 1), 1);
    cr_assert_eq(jobtab_take_id(t), 42, "an evicted job's id is not reused");
    jobtab_destroy(t);
}

/* A listing's pages: the walk starts after an id, present or gone. */
Test(jobtab, walk_starts_after_an_id_whether_or_not_it_is_there)
{
    struct jobtab *t = table_new();
    for (uint64_t id = 1; id <= 6; id++)
        add(t, id, JOB_PENDING, 0);
    jobtab_remove(t, 3);
    struct jobtab_walk w;
    char buf[64];
    size_t o = 0;
    for (struct job *j = jobtab_walk_from(t, 0, &w); j;
         j = jobtab_walk_next(&w))
        o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%llu", o ? "," : "",
                              (unsigned long long)j->id);
    cr_assert_str_eq(buf, "1,2,4,5,6");
    cr_assert_eq(jobtab_walk_from(t, 2, &w)->id, 4);
    cr_assert_eq(jobtab_walk_from(t, 3, &w)->id, 4); /* 3 is gone */
    cr_assert_eq(jobtab_walk_next(&w)->id, 5);
    cr_assert_null(jobtab_walk_from(t, 6, &w));
    cr_assert_null(jobtab_walk_from(t, 100, &w));
    jobtab_destroy(t);
}

/* The per-user count of pending jobs follows adds, state changes and
 * removals (the pending cap at submission reads it). */
Test(jobtab, pending_jobs_are_counted_per_user)
{
    struct jobtab *t = table_new();
    for (uint64_t id = 1; id <= 4; id++) {
        struct job *j = job_new(id, JOB_PENDING, 0);
        j->spec.user = strdup(id <= 3 ? "bob" : "carol");
        cr_assert_eq(jobtab_add(t, j), 0);
    }
    struct job *done = job_new(5, JOB_COMPLETED, T0);
    done->spec.user = strdup("bob");
    cr_assert_eq(jobtab_add(t, done), 0);
    cr_assert_eq(jobtab_user_pending(t, "bob"), 3);
    cr_assert_eq(jobtab_user_pending(t, "carol"), 1);
    cr_assert_eq(jobtab_user_pending(t, "dave"), 0);
    struct job *j = jobtab_get(t, 1);
    j->state = JOB_RUNNING;
    jobtab_state_changed(t, j);
    jobtab_state_changed(t, j); /* twice: counted once */
    cr_assert_eq(jobtab_user_pending(t, "bob"), 2);
    j->state = JOB_PENDING; /* requeued */
    jobtab_state_changed(t, j);
    cr_assert_eq(jobtab_user_pending(t, "bob"), 3);
    jobtab_remove(t, 2);
    cr_assert_eq(jobtab_user_pending(t, "bob"), 2);
    jobtab_remove(t, 4);
    cr_assert_eq(jobtab_user_pending(t, "carol"), 0);
    jobtab_destroy(t);
}
