/* SPDX-License-Identifier: Apache-2.0 */
/* Backend-independent part of the store: choosing the backend from the URL,
 * building batches, and dispatching through the operations table. */
#include "store/store_impl.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Whether a database URL carries a password (user:PASSWORD@host, or a
 * password= parameter): shoald's arguments are readable by every local
 * user, so the password belongs in ~/.pgpass, PGPASSFILE or PGPASSWORD. */
static bool url_has_password(const char *url)
{
    const char *auth = strstr(url, "://");
    if (!auth)
        return false;
    auth += 3;
    size_t n = strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', n);
    if (at && memchr(auth, ':', (size_t)(at - auth)))
        return true;
    const char *q = strchr(url, '?');
    return q && (strstr(q, "?password=") || strstr(q, "&password="));
}

struct store *store_open(const char *url, struct sh_error *err)
{
    if (!url || !*url) {
        sh_errorf(err, SH_EINVAL, "store: no database given");
        return NULL;
    }
    if (strncmp(url, "fault:", 6) == 0)
        return store_fault_open(url + 6, err);
    if (strncmp(url, "sqlite:", 7) == 0)
        return store_sqlite_open(url + 7, err);
    if (strncmp(url, "postgres://", 11) == 0 ||
        strncmp(url, "postgresql://", 13) == 0) {
        if (url_has_password(url)) {
            sh_errorf(err, SH_EINVAL,
                      "store: the database URL holds a password, which "
                      "every local user could read in shoald's arguments: "
                      "put it in ~/.pgpass, a file named by PGPASSFILE, or "
                      "PGPASSWORD, and leave it out of the URL");
            return NULL;
        }
#ifdef SHOAL_HAVE_POSTGRESQL
        return store_pg_open(url, err);
#else
        sh_errorf(err, SH_EINVAL,
                  "store: PostgreSQL is not built into this shoald (it was "
                  "built without libpq); use sqlite:PATH");
        return NULL;
#endif
    }
    const char *sep = strstr(url, "://");
    if (sep) {
        /* Only the scheme: the rest may hold a password. */
        int scheme = sep - url < 32 ? (int)(sep - url) : 32;
        sh_errorf(err, SH_EINVAL,
                  "store: unknown database URL scheme '%.*s://' (use "
                  "postgresql://..., sqlite:PATH or a path)",
                  scheme, url);
        return NULL;
    }
    return store_sqlite_open(url, err);
}

void store_close(struct store *st)
{
    if (st)
        st->ops->close(st);
}

struct store_batch *store_batch_create(void)
{
    return calloc(1, sizeof(struct store_batch));
}

static void op_free(struct store_op *op)
{
    free(op->objkind);
    free(op->key);
    free(op->text);
    free(op->strings);
}

void store_batch_reset(struct store_batch *b)
{
    for (int i = 0; i < b->n; i++)
        op_free(&b->ops[i]);
    b->n = 0;
}

void store_batch_destroy(struct store_batch *b)
{
    if (!b)
        return;
    store_batch_reset(b);
    free(b->ops);
    free(b);
}

int store_batch_count(const struct store_batch *b)
{
    return b->n;
}

static struct store_op *batch_push(struct store_batch *b)
{
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 64;
        struct store_op *ops = realloc(b->ops, (size_t)cap * sizeof(*ops));
        if (!ops)
            return NULL;
        b->ops = ops;
        b->cap = cap;
    }
    struct store_op *op = &b->ops[b->n];
    memset(op, 0, sizeof(*op));
    return op;
}

int store_batch_put_job(struct store_batch *b, const struct store_job_row *row,
                        const json_t *rec)
{
    struct store_op *op = batch_push(b);
    if (!op)
        return -1;
    size_t ls = strlen(row->state) + 1;
    size_t lu = strlen(row->user) + 1;
    size_t lp = strlen(row->project) + 1;
    op->kind = STORE_OP_PUT_JOB;
    op->strings = malloc(ls + lu + lp);
    op->text = json_dumps(rec, JSON_COMPACT);
    if (!op->strings || !op->text) {
        op_free(op);
        return -1;
    }
    op->row = *row;
    op->row.state = memcpy(op->strings, row->state, ls);
    op->row.user = memcpy(op->strings + ls, row->user, lu);
    op->row.project = memcpy(op->strings + ls + lu, row->project, lp);
    b->n++;
    return 0;
}

int store_batch_put(struct store_batch *b, const char *kind, const char *key,
                    const json_t *rec)
{
    struct store_op *op = batch_push(b);
    if (!op)
        return -1;
    op->kind = STORE_OP_PUT;
    op->objkind = strdup(kind);
    op->key = strdup(key);
    op->text = json_dumps(rec, JSON_COMPACT);
    if (!op->objkind || !op->key || !op->text) {
        op_free(op);
        return -1;
    }
    b->n++;
    return 0;
}

int store_batch_del(struct store_batch *b, const char *kind, const char *key)
{
    struct store_op *op = batch_push(b);
    if (!op)
        return -1;
    op->kind = STORE_OP_DEL;
    op->objkind = strdup(kind);
    op->key = strdup(key);
    if (!op->objkind || !op->key) {
        op_free(op);
        return -1;
    }
    b->n++;
    return 0;
}

int store_commit(struct store *st, struct store_batch *b, struct sh_error *err)
{
    if (b->n == 0)
        return 0;
    if (st->ops->commit(st, b, err) < 0)
        return -1;
    store_batch_reset(b);
    return 0;
}

int store_commit_start(struct store *st, struct store_batch *b,
                       struct sh_error *err)
{
    if (b->n == 0)
        return 0;
    if (!st->ops->commit_start)
        return store_commit(st, b, err);
    if (st->ops->commit_start(st, b, err) < 0)
        return -1;
    store_batch_reset(b);
    return 1;
}

int store_commit_finish(struct store *st, bool wait, struct sh_error *err)
{
    if (!st->ops->commit_finish)
        return 0;
    return st->ops->commit_finish(st, wait, err);
}

int store_commit_fd(const struct store *st)
{
    return st->ops->commit_fd ? st->ops->commit_fd(st) : -1;
}

int store_load_jobs(struct store *st, int64_t since_ms, store_job_f cb,
                    void *arg, struct sh_error *err)
{
    return st->ops->load_jobs(st, since_ms, cb, arg, err);
}

int store_get_job(struct store *st, uint64_t id, store_job_f cb, void *arg,
                  struct sh_error *err)
{
    return st->ops->get_job(st, id, cb, arg, err);
}

int store_scan_jobs(struct store *st, int64_t from_ms, int64_t until_ms,
                    store_job_f cb, void *arg, struct sh_error *err)
{
    return st->ops->scan_jobs(st, from_ms, until_ms, cb, arg, err);
}

int store_load_objects(struct store *st, const char *kind, store_object_f cb,
                       void *arg, struct sh_error *err)
{
    return st->ops->load_objects(st, kind, cb, arg, err);
}

int store_max_job_id(struct store *st, uint64_t *out, struct sh_error *err)
{
    return st->ops->max_job_id(st, out, err);
}

const char *store_backend(const struct store *st)
{
    return st->ops->name;
}

int store_prune_jobs(struct store *st, int64_t before_ms, int max, int *pruned,
                     struct sh_error *err)
{
    *pruned = 0;
    return st->ops->prune_jobs(st, before_ms, max, pruned, err);
}

int store_count_jobs(struct store *st, uint64_t *out, struct sh_error *err)
{
    return st->ops->count_jobs(st, out, err);
}

int store_backup(struct store *st, const char *path, struct sh_error *err)
{
    if (!st->ops->backup)
        return sh_errorf(err, SH_EINVAL,
                         "the %s store has no file to copy: use its own "
                         "backup tool",
                         st->ops->name);
    return st->ops->backup(st, path, err);
}

bool store_has_leadership(const struct store *st)
{
    return st->ops->leader_try != NULL;
}

int store_leader_try(struct store *st, const char *my_url, uint64_t *epoch,
                     char *leader_url, size_t leader_url_size,
                     struct sh_error *err)
{
    if (!st->ops->leader_try) {
        *epoch = 1;
        if (leader_url && leader_url_size)
            leader_url[0] = '\0';
        return 1;
    }
    return st->ops->leader_try(st, my_url, epoch, leader_url, leader_url_size,
                               err);
}

void store_set_leader_lease(struct store *st, int64_t lease_ms)
{
    if (lease_ms > 0)
        st->leader_lease_ms = lease_ms;
}

int store_leader_check(struct store *st, struct sh_error *err)
{
    if (!st->ops->leader_check)
        return 0;
    return st->ops->leader_check(st, err);
}
