/* SPDX-License-Identifier: Apache-2.0 */
/* A store that wraps another and starts failing its commits from the Nth one
 * on, like a disk that filled up. Tests use it (URL "fault:N:PATH") to prove
 * that a change whose commit failed is refused and changes nothing. Reads
 * pass through. */
#include <stdlib.h>
#include <string.h>

#include "lib/util/parse.h"
#include "store/store_impl.h"

struct store_fault {
    struct store base; /* must be first */
    struct store *inner;
    int64_t fail_at; /* 1-based commit number from which commits fail */
    int64_t commits;
};

static void fault_close(struct store *st)
{
    struct store_fault *f = (struct store_fault *)st;
    store_close(f->inner);
    free(f);
}

static int fault_commit(struct store *st, const struct store_batch *b,
                        struct sh_error *err)
{
    struct store_fault *f = (struct store_fault *)st;
    f->commits++;
    if (f->commits >= f->fail_at)
        return sh_errorf(err, SH_EUNAVAILABLE,
                         "store: injected failure of commit %lld",
                         (long long)f->commits);
    return f->inner->ops->commit(f->inner, b, err);
}

#define PASS(name, ...)                                                        \
    struct store_fault *f = (struct store_fault *)st;                          \
    return f->inner->ops->name(f->inner, __VA_ARGS__)

static int fault_load_jobs(struct store *st, int64_t since_ms, store_job_f cb,
                           void *arg, struct sh_error *err)
{
    PASS(load_jobs, since_ms, cb, arg, err);
}

static int fault_get_job(struct store *st, uint64_t id, store_job_f cb,
                         void *arg, struct sh_error *err)
{
    PASS(get_job, id, cb, arg, err);
}

static int fault_scan_jobs(struct store *st, int64_t from_ms, int64_t until_ms,
                           store_job_f cb, void *arg, struct sh_error *err)
{
    PASS(scan_jobs, from_ms, until_ms, cb, arg, err);
}

static int fault_load_objects(struct store *st, const char *kind,
                              store_object_f cb, void *arg,
                              struct sh_error *err)
{
    PASS(load_objects, kind, cb, arg, err);
}

static int fault_max_job_id(struct store *st, uint64_t *out,
                            struct sh_error *err)
{
    PASS(max_job_id, out, err);
}

static int fault_prune_jobs(struct store *st, int64_t before_ms, int max,
                            int *pruned, struct sh_error *err)
{
    PASS(prune_jobs, before_ms, max, pruned, err);
}

static int fault_count_jobs(struct store *st, uint64_t *out,
                            struct sh_error *err)
{
    PASS(count_jobs, out, err);
}

static int fault_backup(struct store *st, const char *path,
                        struct sh_error *err)
{
    struct store_fault *f = (struct store_fault *)st;
    return store_backup(f->inner, path, err);
}

static int fault_leader_try(struct store *st, const char *my_url,
                            uint64_t *epoch, char *leader_url,
                            size_t leader_url_size, struct sh_error *err)
{
    struct store_fault *f = (struct store_fault *)st;
    return store_leader_try(f->inner, my_url, epoch, leader_url,
                            leader_url_size, err);
}

static int fault_leader_check(struct store *st, struct sh_error *err)
{
    struct store_fault *f = (struct store_fault *)st;
    return store_leader_check(f->inner, err);
}

static const struct store_ops fault_ops = {
    .name = "fault",
    .close = fault_close,
    .commit = fault_commit,
    .load_jobs = fault_load_jobs,
    .get_job = fault_get_job,
    .scan_jobs = fault_scan_jobs,
    .load_objects = fault_load_objects,
    .max_job_id = fault_max_job_id,
    .backup = fault_backup,
    .prune_jobs = fault_prune_jobs,
    .count_jobs = fault_count_jobs,
};

/* The fault store leads exactly when the store it wraps does. */
static const struct store_ops fault_leader_ops = {
    .name = "fault",
    .close = fault_close,
    .commit = fault_commit,
    .load_jobs = fault_load_jobs,
    .get_job = fault_get_job,
    .scan_jobs = fault_scan_jobs,
    .load_objects = fault_load_objects,
    .max_job_id = fault_max_job_id,
    .backup = fault_backup,
    .prune_jobs = fault_prune_jobs,
    .count_jobs = fault_count_jobs,
    .leader_try = fault_leader_try,
    .leader_check = fault_leader_check,
};

struct store *store_fault_open(const char *spec, struct sh_error *err)
{
    const char *colon = strchr(spec, ':');
    char num[24];
    if (!colon || (size_t)(colon - spec) >= sizeof(num)) {
        sh_errorf(err, SH_EINVAL, "store: fault URL must be fault:N:URL");
        return NULL;
    }
    memcpy(num, spec, (size_t)(colon - spec));
    num[colon - spec] = '\0';
    int64_t n;
    if (parse_int64("fault commit number", num, 1, INT64_MAX, &n, err) < 0)
        return NULL;
    struct store_fault *f = calloc(1, sizeof(*f));
    if (!f) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    f->base.ops = &fault_ops;
    f->fail_at = n;
    f->inner = store_open(colon + 1, err);
    if (!f->inner) {
        free(f);
        return NULL;
    }
    if (store_has_leadership(f->inner))
        f->base.ops = &fault_leader_ops;
    return &f->base;
}
