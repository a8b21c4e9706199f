/* SPDX-License-Identifier: Apache-2.0 */
/* SQLite backend of the store: one database file in WAL mode with
 * synchronous=FULL, so a committed batch survives a crash of the process
 * and of the machine. Statements are prepared once and reused. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/util/log.h"
#include "store/store_impl.h"

/* The schema's version, kept in meta.schema_version. Version 1 is the
 * tables of `schema` below; each later version is a step of `migrations`
 * on top of them. A release that changes the schema adds a step and
 * raises this: a controller opening an older store copies the file first
 * (<file>.schema-<old version>, which an older shoald still opens) and
 * runs the missing steps in one transaction; a newer store is refused. */
#define SCHEMA_VERSION 2

struct migration {
    int to;          /* the version the step makes */
    const char *sql; /* what it runs */
};

static const struct migration migrations[] = {
    /* 2: usage and history read jobs by start time over a window
     * (store_scan_jobs); retention deletes them by end time (jobs_end). */
    {2, "CREATE INDEX IF NOT EXISTS jobs_start ON jobs(start_ms);"},
};

struct store_sqlite {
    struct store base; /* must be first */
    sqlite3 *db;
    sqlite3_stmt *put_job;
    sqlite3_stmt *put_obj;
    sqlite3_stmt *del_obj;
    sqlite3_stmt *begin;
    sqlite3_stmt *commit;
    sqlite3_stmt *rollback;
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS meta ("
    "  key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS jobs ("
    "  id INTEGER PRIMARY KEY,"
    "  state TEXT NOT NULL,"
    "  user TEXT NOT NULL,"
    "  project TEXT NOT NULL,"
    "  submit_ms INTEGER NOT NULL,"
    "  start_ms INTEGER NOT NULL,"
    "  end_ms INTEGER NOT NULL,"
    "  gpu_seconds REAL NOT NULL,"
    "  record TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS jobs_end ON jobs(end_ms);"
    "CREATE TABLE IF NOT EXISTS objects ("
    "  kind TEXT NOT NULL, key TEXT NOT NULL, record TEXT NOT NULL,"
    "  PRIMARY KEY (kind, key));";

static int db_error(struct store_sqlite *s, struct sh_error *err,
                    const char *what)
{
    int code = sqlite3_errcode(s->db);
    enum sh_errc ec = SH_EUNAVAILABLE;
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB ||
        code == SQLITE_MISUSE || code == SQLITE_ERROR)
        ec = SH_EINTERNAL;
    return sh_errorf(err, ec, "store: %s: %s", what, sqlite3_errmsg(s->db));
}

static void sqlite_close(struct store *st)
{
    struct store_sqlite *s = (struct store_sqlite *)st;
    sqlite3_finalize(s->put_job);
    sqlite3_finalize(s->put_obj);
    sqlite3_finalize(s->del_obj);
    sqlite3_finalize(s->begin);
    sqlite3_finalize(s->commit);
    sqlite3_finalize(s->rollback);
    sqlite3_close(s->db);
    free(s);
}

static int run_op(struct store_sqlite *s, const struct store_op *op)
{
    sqlite3_stmt *st;
    switch (op->kind) {
    case STORE_OP_PUT_JOB:
        st = s->put_job;
        sqlite3_bind_int64(st, 1, (sqlite3_int64)op->row.id);
        sqlite3_bind_text(st, 2, op->row.state, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, op->row.user, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, op->row.project, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, op->row.submit_ms);
        sqlite3_bind_int64(st, 6, op->row.start_ms);
        sqlite3_bind_int64(st, 7, op->row.end_ms);
        sqlite3_bind_double(st, 8, op->row.gpu_seconds);
        sqlite3_bind_text(st, 9, op->text, -1, SQLITE_STATIC);
        break;
    case STORE_OP_PUT:
        st = s->put_obj;
        sqlite3_bind_text(st, 1, op->objkind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, op->key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, op->text, -1, SQLITE_STATIC);
        break;
    default:
        st = s->del_obj;
        sqlite3_bind_text(st, 1, op->objkind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, op->key, -1, SQLITE_STATIC);
        break;
    }
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int step_once(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int sqlite_commit(struct store *st, const struct store_batch *b,
                         struct sh_error *err)
{
    struct store_sqlite *s = (struct store_sqlite *)st;
    if (step_once(s->begin) < 0)
        return db_error(s, err, "begin");
    for (int i = 0; i < b->n; i++) {
        if (run_op(s, &b->ops[i]) < 0) {
            db_error(s, err, "write");
            step_once(s->rollback);
            return -1;
        }
    }
    if (step_once(s->commit) < 0) {
        db_error(s, err, "commit");
        step_once(s->rollback);
        return -1;
    }
    return 0;
}

static int prepare(struct store_sqlite *s, const char *sql, sqlite3_stmt **out,
                   struct sh_error *err)
{
    if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, out,
                           NULL) != SQLITE_OK)
        return db_error(s, err, "prepare");
    return 0;
}

/* Run a job query whose columns are the row then the record. */
static int job_query(struct store_sqlite *s, sqlite3_stmt *q, store_job_f cb,
                     void *arg, int *count, struct sh_error *err)
{
    int rc;
    int n = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct store_job_row row = {
            .id = (uint64_t)sqlite3_column_int64(q, 0),
            .state = (const char *)sqlite3_column_text(q, 1),
            .user = (const char *)sqlite3_column_text(q, 2),
            .project = (const char *)sqlite3_column_text(q, 3),
            .submit_ms = sqlite3_column_int64(q, 4),
            .start_ms = sqlite3_column_int64(q, 5),
            .end_ms = sqlite3_column_int64(q, 6),
            .gpu_seconds = sqlite3_column_double(q, 7),
        };
        json_error_t jerr;
        json_t *rec =
            json_loads((const char *)sqlite3_column_text(q, 8), 0, &jerr);
        if (!rec) {
            sqlite3_finalize(q);
            return sh_errorf(err, SH_EINTERNAL,
                             "store: job %" PRIu64 " has a bad record: %s",
                             row.id, jerr.text);
        }
        int cbrc = cb(&row, rec, arg, err);
        json_decref(rec);
        n++;
        if (cbrc < 0) {
            sqlite3_finalize(q);
            return -1;
        }
    }
    if (rc != SQLITE_DONE) {
        db_error(s, err, "read jobs");
        sqlite3_finalize(q);
        return -1;
    }
    sqlite3_finalize(q);
    if (count)
        *count = n;
    return 0;
}

#define JOB_COLUMNS                                                            \
    "SELECT id, state, user, project, submit_ms, start_ms, end_ms, "           \
    "gpu_seconds, record FROM jobs "

static int sqlite_load_jobs(struct store *st, int64_t since_ms, store_job_f cb,
                            void *arg, struct sh_error *err)
{
    struct store_sqlite *s = (struct store_sqlite *)st;
    sqlite3_stmt *q;
    if (prepare(s, JOB_COLUMNS "WHERE end_ms = 0 OR end_ms >= ? ORDER BY id",
                &q, err) < 0)
        return -1;
    sqlite3_bind_int64(q, 1, since_ms);
    return job_query(s, q, cb, arg, NULL, err);
}

static int sqlite_get_job(struct store *st, uint64_t id, store_job_f cb,
                          void *arg, struct sh_error *err)
{
    struct store_sqlite *s = (struct store_sqlite *)st;
    sqlite3_stmt *q;
    int n = 0;
    if (prepare(s, JOB_COLUMNS "WHERE id = ?", &q, err) < 0)
        return -1;
    sqlite3_bind_int64(q, 1, (sqlite3_int64)id);
    if (job_query(s, q, cb, arg, &n, err) < 0)
        return -1;
    if (n == 0)
        return sh_errorf(err, SH_ENOTFOUND, "job %" PRIu64 " not found", id);
    return 0;
}

static int sqlite_scan_jobs(struct store *st, int64_t from_ms, int64_t until_ms,
                            store_job_f cb, void *arg, struct sh_error *err)
{
    struct store_sqlite *s = (struct store_sqlite *)st;
    sqlite3_stmt *q;
    if (prepare(s,
                JOB_COLUMNS "WHERE start_ms > 0 AND (end_ms = 0 OR end_ms >= ?)"
                            " AND (? = 0 OR start_ms < ?) ORDER BY id",
                &q, err) < 0)
        return -1;
    sqlite3_bind_int64(q, 1, from_ms);
    sqlite3_bind_int64(q, 2, until_ms);
    sqlite3_bind_int64(q, 3, until_ms);
    return job_query(s, q, cb, arg, NULL, err);
}

static int sqlite_load_objects(struct store *st, const char *kind,
                               store_object_f cb, void *arg,
                               struct sh_error *err)
{
    struct store_sqlite *s = (struct store_sqlite *)st;
    sqlite3_stmt *q;
    if (prepare(s,
                "SELECT key, record FROM objects WHERE kind = ? ORDER BY key",
                &q, err) < 0)
        return -1;
    sqlite3_bind_text(q, 1, kind, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(q, 0);
        json_error_t jerr;
        json_t *rec =
            json_loads((const char *)sqlite3_column_text(q, 1), 0, &jerr);
        if (!rec) {
            sh_errorf(err, SH_EINTERNAL, "store: %s %.64s has a bad record: %s",
                      kind, key, jerr.text);
            sqlite3_finalize(q);
            return -1;
        }
        int cbrc = cb(key, rec, arg, err);
        json_decref(rec);
        if (cbrc < 0) {
            sqlite3_finalize(q);
            return -1;
        }
    }
    if (rc != SQLITE_DONE) {
        db_error(s, err, "read objects");
        sqlite3_finalize(q);
        return -1;
    }
    sqlite3_finalize(q);
    return 0;
}

static int sqlite_max_job_id(struct store *st, uint64_t *out,
                             struct sh_error *err)
{
    struct store_sqlite *s = (struct store_sqlite *)st;
    sqlite3_stmt *q;
    if (prepare(s, "SELECT COALESCE(MAX(id), 0) FROM jobs", &q, err) < 0)
        return -1;
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "read max id");
}

/* VACUUM INTO: a consistent snapshot of the committed state (a read
 * transaction) written as a compact database of its own. */
static int sqlite_backup(struct store *st, const char *path,
                         struct sh_error *err)
{
    struct store_sqlite *s = (struct store_sqlite *)st;
    char *sql = sqlite3_mprintf("VACUUM INTO '%q'", path);
    if (!sql)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    sqlite3_free(sql);
    if (rc != SQLITE_OK)
        return sh_errorf(err, SH_EUNAVAILABLE, "store: copy to %s: %s", path,
                         sqlite3_errmsg(s->db));
    return 0;
}

static int sqlite_prune_jobs(struct store *st, int64_t before_ms, int max,
                             int *pruned, struct sh_error *err)
{
    struct store_sqlite *s = (struct store_sqlite *)st;
    sqlite3_stmt *q;
    if (prepare(s,
                "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE "
                "end_ms > 0 AND end_ms < ? ORDER BY end_ms LIMIT ?)",
                &q, err) < 0)
        return -1;
    sqlite3_bind_int64(q, 1, before_ms);
    sqlite3_bind_int(q, 2, max);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return db_error(s, err, "prune jobs");
    *pruned = sqlite3_changes(s->db);
    return 0;
}

static int sqlite_count_jobs(struct store *st, uint64_t *out,
                             struct sh_error *err)
{
    struct store_sqlite *s = (struct store_sqlite *)st;
    sqlite3_stmt *q;
    if (prepare(s, "SELECT COUNT(*) FROM jobs", &q, err) < 0)
        return -1;
    int rc = sqlite3_step(q);
    *out = rc == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(q, 0) : 0;
    sqlite3_finalize(q);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "count jobs");
}

static const struct store_ops sqlite_ops = {
    .name = "sqlite",
    .close = sqlite_close,
    .commit = sqlite_commit,
    .load_jobs = sqlite_load_jobs,
    .get_job = sqlite_get_job,
    .scan_jobs = sqlite_scan_jobs,
    .load_objects = sqlite_load_objects,
    .max_job_id = sqlite_max_job_id,
    .backup = sqlite_backup,
    .prune_jobs = sqlite_prune_jobs,
    .count_jobs = sqlite_count_jobs,
};

static int schema_version(struct store_sqlite *s, int *version,
                          struct sh_error *err)
{
    sqlite3_stmt *q;
    if (prepare(s, "SELECT value FROM meta WHERE key = 'schema_version'", &q,
                err) < 0)
        return -1;
    *version = 0;
    if (sqlite3_step(q) == SQLITE_ROW)
        *version = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return 0;
}

/* A copy of the store before its migration, <path>.schema-<version> (with
 * the time after it when that exists): an operator who goes back to the
 * older release opens it instead. */
static int copy_before_migration(struct store_sqlite *s, const char *path,
                                 int version, char *copy, size_t size,
                                 struct sh_error *err)
{
    snprintf(copy, size, "%s.schema-%d", path, version);
    if (access(copy, F_OK) == 0)
        snprintf(copy, size, "%s.schema-%d.%lld", path, version,
                 (long long)time(NULL));
    char *sql = sqlite3_mprintf("VACUUM INTO '%q'", copy);
    if (!sql)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    sqlite3_free(sql);
    if (rc != SQLITE_OK)
        return db_error(s, err, "copy the store before its migration");
    return 0;
}

/* Brings the store to SCHEMA_VERSION (see there). A new store (no version
 * yet, no jobs) is made at version 1 and stepped up without a copy. */
static int migrate(struct store_sqlite *s, const char *path,
                   struct sh_error *err)
{
    int version;
    if (schema_version(s, &version, err) < 0)
        return -1;
    if (version > SCHEMA_VERSION)
        return sh_errorf(err, SH_EINVAL,
                         "store: the database has schema version %d, newer "
                         "than this shoald understands (%d)",
                         version, SCHEMA_VERSION);
    if (version == SCHEMA_VERSION)
        return 0;
    char copy[4200] = "";
    if (version > 0 &&
        copy_before_migration(s, path, version, copy, sizeof(copy), err) < 0)
        return -1;
    int from = version;
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_error(s, err, "migrate the schema");
    if (version == 0)
        version = 1;
    for (size_t i = 0; i < sizeof(migrations) / sizeof(migrations[0]); i++) {
        if (migrations[i].to <= version)
            continue;
        if (sqlite3_exec(s->db, migrations[i].sql, NULL, NULL, NULL) !=
            SQLITE_OK)
            goto fail;
        version = migrations[i].to;
    }
    char *sql = sqlite3_mprintf(
        "INSERT OR REPLACE INTO meta VALUES ('schema_version', '%d')", version);
    int rc = sql ? sqlite3_exec(s->db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    if (rc != SQLITE_OK ||
        sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    if (from > 0)
        sh_log(LOG_NOTICE, "store",
               "migrated %s from schema version %d to %d (the old store is "
               "kept as %s)",
               path, from, version, copy);
    return 0;
fail:
    db_error(s, err, "migrate the schema");
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

/* The database and its -wal and -shm files hold every job's environment
 * and the users' token hashes: owner only. The file is made 0600 before
 * SQLite opens it (SQLite gives -wal and -shm the database's mode), and a
 * store made looser by an older shoald is tightened. */
static int private_files(const char *path, struct sh_error *err)
{
    if (strcmp(path, ":memory:") == 0 || strncmp(path, "file:", 5) == 0)
        return 0;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "store: cannot open %s: %s",
                         path, strerror(errno));
    int rc = fchmod(fd, 0600);
    close(fd);
    if (rc < 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "store: cannot chmod %s: %s",
                         path, strerror(errno));
    static const char *const sides[] = {"-wal", "-shm", "-journal"};
    for (int i = 0; i < 3; i++) {
        char side[4200];
        snprintf(side, sizeof(side), "%s%s", path, sides[i]);
        if (chmod(side, 0600) < 0 && errno != ENOENT)
            return sh_errorf(err, SH_EUNAVAILABLE, "store: cannot chmod %s: %s",
                             side, strerror(errno));
    }
    return 0;
}

struct store *store_sqlite_open(const char *path, struct sh_error *err)
{
    struct store_sqlite *s = calloc(1, sizeof(*s));
    if (!s) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    s->base.ops = &sqlite_ops;
    if (private_files(path, err) < 0)
        goto error;
    if (sqlite3_open_v2(path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                            SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        sh_errorf(err, SH_EUNAVAILABLE, "store: cannot open %s: %s", path,
                  s->db ? sqlite3_errmsg(s->db) : "out of memory");
        goto error;
    }
    sqlite3_busy_timeout(s->db, 5000);
    /* WAL: readers never block the writer. synchronous=FULL: the WAL is
     * fsynced at every commit, so an acknowledged change survives even a
     * power loss, not only a crash of shoald. */
    if (sqlite3_exec(s->db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                     "PRAGMA foreign_keys=ON;",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(s->db, schema, NULL, NULL, NULL) != SQLITE_OK) {
        db_error(s, err, path);
        goto error;
    }
    if (migrate(s, path, err) < 0 ||
        prepare(s,
                "INSERT OR REPLACE INTO jobs (id, state, user, project, "
                "submit_ms, start_ms, end_ms, gpu_seconds, record) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                &s->put_job, err) < 0 ||
        prepare(s, "INSERT OR REPLACE INTO objects VALUES (?, ?, ?)",
                &s->put_obj, err) < 0 ||
        prepare(s, "DELETE FROM objects WHERE kind = ? AND key = ?",
                &s->del_obj, err) < 0 ||
        prepare(s, "BEGIN IMMEDIATE", &s->begin, err) < 0 ||
        prepare(s, "COMMIT", &s->commit, err) < 0 ||
        prepare(s, "ROLLBACK", &s->rollback, err) < 0)
        goto error;
    return &s->base;
error:
    sqlite_close(&s->base);
    return NULL;
}
