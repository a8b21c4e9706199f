/* SPDX-License-Identifier: Apache-2.0 */
/* The store's behaviour that every backend must share, written once and
 * included by each backend's test driver. The driver defines STORE_SUITE
 * (the Criterion suite, whose .init makes an empty store) and
 * store_test_url() (the URL of that store). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

const char *store_test_url(void);

static struct store *open_store(void)
{
    struct sh_error err;
    struct store *st = store_open(store_test_url(), &err);
    cr_assert_not_null(st, "%s", err.msg);
    return st;
}

static void put_job(struct store_batch *b, uint64_t id, const char *state,
                    int64_t end_ms)
{
    struct store_job_row row = {
        .id = id,
        .state = state,
        .user = "alice",
        .project = "vision",
        .submit_ms = 1000,
        .start_ms = end_ms ? 2000 : 0,
        .end_ms = end_ms,
        .gpu_seconds = 1.5,
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

/* The state of each job loaded, as "id:state," */
static int collect_job(const struct store_job_row *row, const json_t *rec,
                       void *arg, struct sh_error *err)
{
    (void)err;
    char *out = arg;
    cr_assert_str_eq(json_string_value(json_object_get(rec, "state")),
                     row->state);
    sprintf(out + strlen(out), "%llu:%s,", (unsigned long long)row->id,
            row->state);
    return 0;
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

Test(STORE_SUITE, committed_jobs_survive_reopen)
{
    struct sh_error err;
    struct store *st = open_store();
    struct store_batch *b = store_batch_create();
    put_job(b, 1, "pending", 0);
    put_job(b, 2, "completed", 5000);
    cr_assert_eq(store_commit(st, b, &err), 0, "%s", err.msg);
    cr_assert_eq(store_batch_count(b), 0);
    store_close(st);

    st = open_store();
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

struct captured {
    struct store_job_row row;
    char user[64], project[64], note[64];
};

static int capture(const struct store_job_row *r, const json_t *j, void *arg,
                   struct sh_error *e)
{
    (void)e;
    struct captured *got = arg;
    got->row = *r;
    snprintf(got->user, sizeof(got->user), "%s", r->user);
    snprintf(got->project, sizeof(got->project), "%s", r->project);
    snprintf(got->note, sizeof(got->note), "%s",
             json_string_value(json_object_get(j, "note")));
    return 0;
}

Test(STORE_SUITE, job_rows_keep_every_column)
{
    struct sh_error err;
    struct store *st = open_store();
    struct store_batch *b = store_batch_create();
    struct store_job_row row = {
        .id = 7,
        .state = "running",
        .user = "o'brien \"bob\"",
        .project = "p\\q,{r}",
        .submit_ms = 1700000000123,
        .start_ms = 1700000000456,
        .end_ms = 0,
        .gpu_seconds = 12.25,
    };
    json_t *rec = json_pack("{s:I, s:s, s:s}", "id", (json_int_t)7, "state",
                            "running", "note", "quote \" backslash \\ é");
    cr_assert_eq(store_batch_put_job(b, &row, rec), 0);
    cr_assert_eq(store_commit(st, b, &err), 0, "%s", err.msg);
    store_close(st);

    st = open_store();
    struct captured got;
    memset(&got, 0, sizeof(got));
    cr_assert_eq(store_get_job(st, 7, capture, &got, &err), 0, "%s", err.msg);
    cr_assert_eq(got.row.id, 7);
    cr_assert_str_eq(got.user, row.user);
    cr_assert_str_eq(got.project, row.project);
    cr_assert_eq(got.row.submit_ms, row.submit_ms);
    cr_assert_eq(got.row.start_ms, row.start_ms);
    cr_assert_eq(got.row.end_ms, 0);
    cr_assert_eq(got.row.gpu_seconds, 12.25);
    cr_assert_str_eq(got.note, "quote \" backslash \\ é");
    json_decref(rec);
    store_batch_destroy(b);
    store_close(st);
}

Test(STORE_SUITE, last_change_of_a_row_in_a_batch_wins)
{
    struct sh_error err;
    struct store *st = open_store();
    struct store_batch *b = store_batch_create();
    json_t *rec = json_pack("{s:i}", "v", 1);
    put_job(b, 1, "pending", 0);
    put_job(b, 1, "running", 0);
    put_job(b, 1, "completed", 9000);
    store_batch_put(b, "node", "a", rec);
    store_batch_del(b, "node", "a");
    store_batch_del(b, "node", "b");
    store_batch_put(b, "node", "b", rec);
    cr_assert_eq(store_commit(st, b, &err), 0, "%s", err.msg);
    char out[256] = "";
    cr_assert_eq(store_load_jobs(st, 0, collect_job, out, &err), 0);
    cr_assert_str_eq(out, "1:completed,");
    char keys[64] = "";
    cr_assert_eq(store_load_objects(st, "node", collect_key, keys, &err), 0);
    cr_assert_str_eq(keys, "b,");
    json_decref(rec);
    store_batch_destroy(b);
    store_close(st);
}

Test(STORE_SUITE, scan_finds_jobs_overlapping_the_window)
{
    struct sh_error err;
    struct store *st = open_store();
    struct store_batch *b = store_batch_create();
    put_job(b, 1, "pending", 0);      /* never started: not in any window */
    put_job(b, 2, "completed", 3000); /* ran 2000..3000 */
    put_job(b, 3, "completed", 9000); /* ran 2000..9000 */
    cr_assert_eq(store_commit(st, b, &err), 0, "%s", err.msg);
    char out[256] = "";
    cr_assert_eq(store_scan_jobs(st, 5000, 0, collect_job, out, &err), 0);
    cr_assert_str_eq(out, "3:completed,");
    out[0] = '\0';
    cr_assert_eq(store_scan_jobs(st, 0, 2500, collect_job, out, &err), 0);
    cr_assert_str_eq(out, "2:completed,3:completed,");
    out[0] = '\0';
    cr_assert_eq(store_scan_jobs(st, 0, 1500, collect_job, out, &err), 0);
    cr_assert_str_eq(out, "");
    store_batch_destroy(b);
    store_close(st);
}

Test(STORE_SUITE, objects_put_replace_and_delete)
{
    struct sh_error err;
    struct store *st = open_store();
    struct store_batch *b = store_batch_create();
    json_t *rec = json_pack("{s:i}", "v", 1);
    store_batch_put(b, "node", "n2", rec);
    store_batch_put(b, "node", "n1", rec);
    store_batch_put(b, "node", "N0", rec);
    store_batch_put(b, "user", "alice", rec);
    cr_assert_eq(store_commit(st, b, &err), 0);
    store_batch_put(b, "node", "n1", rec);
    store_batch_del(b, "node", "n2");
    store_batch_del(b, "node", "absent");
    cr_assert_eq(store_commit(st, b, &err), 0);
    char keys[64] = "";
    /* Byte order: upper case before lower case. */
    cr_assert_eq(store_load_objects(st, "node", collect_key, keys, &err), 0);
    cr_assert_str_eq(keys, "N0,n1,");
    json_decref(rec);
    store_batch_destroy(b);
    store_close(st);
}

Test(STORE_SUITE, failed_commit_stores_nothing_of_its_batch)
{
    struct sh_error err;
    char url[600];
    snprintf(url, sizeof(url), "fault:2:%s", store_test_url());
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

    st = open_store();
    int n = 0;
    cr_assert_eq(store_load_jobs(st, 0, count_job, &n, &err), 0);
    cr_assert_eq(n, 1);
    store_batch_destroy(b);
    store_close(st);
}

Test(STORE_SUITE, a_large_batch_lands_whole)
{
    struct sh_error err;
    struct store *st = open_store();
    struct store_batch *b = store_batch_create();
    for (uint64_t id = 1; id <= 2000; id++)
        put_job(b, id, "pending", 0);
    cr_assert_eq(store_commit(st, b, &err), 0, "%s", err.msg);
    int n = 0;
    cr_assert_eq(store_load_jobs(st, 0, count_job, &n, &err), 0);
    cr_assert_eq(n, 2000);
    uint64_t max;
    cr_assert_eq(store_max_job_id(st, &max, &err), 0);
    cr_assert_eq(max, 2000);
    store_batch_destroy(b);
    store_close(st);
}
