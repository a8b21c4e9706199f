/* SPDX-License-Identifier: Apache-2.0 */
/* What a store backend implements, and the batch layout they all read.
 * Only store.c, the backends and a test's fake backend
 * (src/shoald/test/test_commit.c) include this file. */
#ifndef SHOAL_STORE_STORE_IMPL_H
#define SHOAL_STORE_STORE_IMPL_H

#include "store/store.h"

enum store_op_kind {
    STORE_OP_PUT_JOB,
    STORE_OP_PUT,
    STORE_OP_DEL,
};

/* One operation of a batch, with the record already serialised so the batch
 * does not depend on the objects it came from. */
struct store_op {
    enum store_op_kind kind;
    struct store_job_row row; /* PUT_JOB; strings point into strings below */
    char *objkind;            /* PUT, DEL */
    char *key;                /* PUT, DEL */
    char *text;               /* serialised record (PUT_JOB, PUT) */
    char *strings;            /* owned storage for row's strings */
};

struct store_batch {
    struct store_op *ops;
    int n;
    int cap;
};

struct store_ops {
    const char *name;
    void (*close)(struct store *st);
    int (*commit)(struct store *st, const struct store_batch *b,
                  struct sh_error *err);
    /* Commits without waiting (store.h); NULL when the backend commits
     * only synchronously. */
    int (*commit_start)(struct store *st, const struct store_batch *b,
                        struct sh_error *err);
    int (*commit_finish)(struct store *st, bool wait, struct sh_error *err);
    int (*commit_fd)(const struct store *st);
    int (*load_jobs)(struct store *st, int64_t since_ms, store_job_f cb,
                     void *arg, struct sh_error *err);
    int (*get_job)(struct store *st, uint64_t id, store_job_f cb, void *arg,
                   struct sh_error *err);
    int (*scan_jobs)(struct store *st, int64_t from_ms, int64_t until_ms,
                     store_job_f cb, void *arg, struct sh_error *err);
    int (*load_objects)(struct store *st, const char *kind, store_object_f cb,
                        void *arg, struct sh_error *err);
    int (*max_job_id)(struct store *st, uint64_t *out, struct sh_error *err);
    /* A consistent copy into the empty file path (store.h); NULL in a
     * backend without one. */
    int (*backup)(struct store *st, const char *path, struct sh_error *err);
    int (*prune_jobs)(struct store *st, int64_t before_ms, int max, int *pruned,
                      struct sh_error *err);
    int (*count_jobs)(struct store *st, uint64_t *out, struct sh_error *err);
    /* Leadership; NULL in a backend without it (one controller per
     * database, always leader). */
    int (*leader_try)(struct store *st, const char *my_url, uint64_t *epoch,
                      char *leader_url, size_t leader_url_size,
                      struct sh_error *err);
    int (*leader_check)(struct store *st, struct sh_error *err);
};

/* Every backend's object starts with this header. */
struct store {
    const struct store_ops *ops;
    /* Leadership: how long a leader that renews nothing keeps it before a
     * follower may take it over (store_set_leader_lease). */
    int64_t leader_lease_ms;
};

struct store *store_sqlite_open(const char *path, struct sh_error *err);

/* url: a libpq connection URI (postgresql:// or postgres://). Built only
 * when libpq was found (SHOAL_HAVE_POSTGRESQL). */
struct store *store_pg_open(const char *url, struct sh_error *err);

/* "N:URL": the store at URL whose Nth commit (counting from 1) and every
 * commit after it fails, as a full disk would. For fault-injection tests. */
struct store *store_fault_open(const char *spec, struct sh_error *err);

#endif
