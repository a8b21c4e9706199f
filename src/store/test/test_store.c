/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the store keeps what was committed, across close and reopen, and a
 * failed commit stores nothing of its batch. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"

static char dir[] = "/tmp/shoal-store-test-XXXXXX";
static char path[256];

static void setup(void)
{
    strcpy(dir, "/tmp/shoal-store-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/state.db", dir);
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(store, .init = setup, .fini = teardown);

static void put_job(struct store_batch *b, uint64_t id, const char *state,
                    int64_t end_ms)
{
    struct store_job_row row = {
        .id = id,
        .state = state,
        .user = "alice",
        .project = "vision",
        .submit_ms = 1000,
        .start_ms = 0,
        .end_ms = end_ms,
    };
    json_t *rec = json_pack("{s:I, s:s}", "id", (json_int_t)id, "state", state);
    cr_assert_eq(store_batch_put_job(b, &row, rec), 0);
    json_decref(rec);
}

static int count_job(const struct store_job_row *row, const json_t *rec,
                     void *arg, struct sh_error *err)
{
    (void)err;
    int *n = arg;
    cr_assert_eq(json_integer_value(json_object_get(rec, "id")),
                 (json_int_t)row->id);
    (*n)++;
    return 0;
}

Test(store, committed_jobs_survive_reopen)
{
    struct sh_error err;
    struct store *st = store_open(path, &err);
    cr_assert_not_null(st, "%s", err.msg);
    struct store_batch *b = store_batch_create();
    put_job(b, 1, "pending", 0);
    put_job(b, 2, "completed", 5000);
    cr_assert_eq(store_commit(st, b, &err), 0, "%s", err.msg);
    cr_assert_eq(store_batch_count(b), 0);
    store_close(st);

    st = store_open(path, &err);
    cr_assert_not_null(st);
    int n = 0;
    cr_assert_eq(store_load_jobs(st, 0, count_job, &n, &err), 0);
    cr_assert_eq(n, 2);
    n = 0;
    /* Finished before 'since' are left out; unfinished ones always load. */
    cr_assert_eq(store_load_jobs(st, 6000, count_job, &n, &err), 0);
    cr_assert_eq(n, 1);
    uint64_t max;
    cr_assert_eq(store_max_job_id(st, &max, &err), 0);
    cr_assert_eq(max, 2);
    n = 0;
    cr_assert_eq(store_get_job(st, 2, count_job, &n, &err), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(store_get_job(st, 99, count_job, &n, &err), -1);
    cr_assert_eq(err.code, SH_ENOTFOUND);
    store_batch_destroy(b);
    store_close(st);
}

static int collect_key(const char *key, const json_t *rec, void *arg,
                       struct sh_error *err)
{
    (void)rec;
    (void)err;
    char *out = arg;
    strcat(out, key);
    strcat(out, ",");
    return 0;
}

Test(store, objects_put_replace_and_delete)
{
    struct sh_error err;
    struct store *st = store_open(path, &err);
    cr_assert_not_null(st);
    struct store_batch *b = store_batch_create();
    json_t *rec = json_pack("{s:i}", "v", 1);
    store_batch_put(b, "node", "n2", rec);
    store_batch_put(b, "node", "n1", rec);
    store_batch_put(b, "user", "alice", rec);
    cr_assert_eq(store_commit(st, b, &err), 0);
    store_batch_put(b, "node", "n1", rec);
    store_batch_del(b, "node", "n2");
    store_batch_del(b, "node", "absent");
    cr_assert_eq(store_commit(st, b, &err), 0);
    char keys[64] = "";
    cr_assert_eq(store_load_objects(st, "node", collect_key, keys, &err), 0);
    cr_assert_str_eq(keys, "n1,");
    json_decref(rec);
    store_batch_destroy(b);
    store_close(st);
}

Test(store, failed_commit_stores_nothing_of_its_batch)
{
    struct sh_error err;
    char url[300];
    snprintf(url, sizeof(url), "fault:2:%s", path);
    struct store *st = store_open(url, &err);
    cr_assert_not_null(st, "%s", err.msg);
    struct store_batch *b = store_batch_create();
    put_job(b, 1, "pending", 0);
    cr_assert_eq(store_commit(st, b, &err), 0);
    put_job(b, 2, "pending", 0);
    put_job(b, 3, "pending", 0);
    cr_assert_eq(store_commit(st, b, &err), -1);
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    cr_assert_eq(store_batch_count(b), 2, "a failed batch is kept as it was");
    store_close(st);

    st = store_open(path, &err);
    int n = 0;
    cr_assert_eq(store_load_jobs(st, 0, count_job, &n, &err), 0);
    cr_assert_eq(n, 1);
    store_batch_destroy(b);
    store_close(st);
}

Test(store, rejects_unknown_url_schemes)
{
    struct sh_error err;
    cr_assert_null(store_open("mysql://x", &err));
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert_null(store_open("fault:x:/tmp/a", &err));
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert_null(store_open("/nonexistent-dir/x/state.db", &err));
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
}

Test(store, sqlite_is_always_leader_at_epoch_one)
{
    struct sh_error err;
    struct store *st = store_open(path, &err);
    cr_assert_not_null(st, "%s", err.msg);
    cr_assert(!store_has_leadership(st));
    uint64_t epoch = 0;
    char leader[64] = "x";
    cr_assert_eq(
        store_leader_try(st, "http://me", &epoch, leader, sizeof(leader), &err),
        1);
    cr_assert_eq(epoch, 1);
    cr_assert_str_eq(leader, "");
    cr_assert_eq(store_leader_check(st, &err), 0);
    store_close(st);
}
