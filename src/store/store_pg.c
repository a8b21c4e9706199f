/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL backend of the store (libpq). The same tables as SQLite: jobs
 * (indexed columns and the JSON record) and objects (kind, key, record),
 * created and migrated by shoald under a schema version.
 *
 * A commit is one implicit transaction sent in pipeline mode: the fencing
 * check, then at most one multi-row statement per kind of operation (the
 * rows travel as arrays and are spread out by unnest), then the Sync that
 * commits it. A batch of a thousand changes is one round trip, and the
 * answer comes after PostgreSQL has flushed the commit to disk
 * (synchronous_commit is set on for the session). The controller does not
 * wait for it (store_commit_start): it watches the socket and collects the
 * results as they come (commit_read); a read in between waits for them
 * first and keeps the outcome for store_commit_finish.
 *
 * Leadership: a session-level advisory lock held on a connection of its own,
 * and an epoch in shoal_leader that the new leader raises. Every commit
 * first takes a share lock on the leader row and checks the epoch is still
 * ours, so a deposed leader's late commit fails ("fenced") and the new
 * leader's epoch update waits for a commit already under way.
 *
 * A broken connection fails the call with SH_EUNAVAILABLE; the next call
 * reconnects (at most every RECONNECT_MAX_MS while the server stays away). */
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/util/clock.h"
#include "lib/util/log.h"
#include "lib/util/strbuf.h"
#include "store/store_impl.h"

#define SCHEMA_VERSION 2 /* as store_sqlite.c's */
/* The advisory lock keys ("shoal" in ASCII, and one more for migrations).
 * Advisory locks are per database, so clusters in separate databases of
 * one server do not meet. */
#define LEADER_LOCK_KEY "495874384236"
#define SCHEMA_LOCK_KEY "495874384237"
#define RECONNECT_MIN_MS 100
#define RECONNECT_MAX_MS 2000
#define FENCED_SQLSTATE "SH001"

struct store_pg {
    struct store base; /* must be first */
    char *url;
    PGconn *conn;   /* data: reads and commits */
    PGconn *lock;   /* leadership: holds the advisory lock, NULL when none */
    uint64_t epoch; /* ours while leader, else 0 */
    bool fenced;    /* leadership was asked for: commits need the epoch */
    int64_t retry_at_ms;
    int64_t backoff_ms;
    /* Array parameters of a commit, reused: 0-8 the jobs, 9-11 the objects
     * put, 12-13 the objects deleted. */
    struct strbuf arr[14];
    /* The commit under way (store_commit_start): sent, its results read as
     * they come; ended once the Sync's result came or the connection
     * failed, until store_commit_finish hands the outcome over. */
    enum { COMMIT_NONE, COMMIT_SENT, COMMIT_ENDED } commit;
    int commit_left; /* statements whose results are to come */
    int commit_rc;   /* 0, or -1 with commit_err */
    struct sh_error commit_err;
};

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS shoal_schema (version integer NOT NULL);"
    "CREATE TABLE IF NOT EXISTS jobs ("
    "  id bigint PRIMARY KEY,"
    "  state text NOT NULL,"
    "  \"user\" text NOT NULL,"
    "  project text NOT NULL,"
    "  submit_ms bigint NOT NULL,"
    "  start_ms bigint NOT NULL,"
    "  end_ms bigint NOT NULL,"
    "  gpu_seconds double precision NOT NULL,"
    "  record json NOT NULL);"
    "CREATE INDEX IF NOT EXISTS jobs_end ON jobs(end_ms);"
    /* 2: usage and history scan jobs by start time (store_sqlite.c). */
    "CREATE INDEX IF NOT EXISTS jobs_start ON jobs(start_ms);"
    "CREATE TABLE IF NOT EXISTS objects ("
    "  kind text NOT NULL, key text NOT NULL, record json NOT NULL,"
    "  PRIMARY KEY (kind, key));"
    "CREATE TABLE IF NOT EXISTS shoal_leader ("
    "  id integer PRIMARY KEY CHECK (id = 1),"
    "  epoch bigint NOT NULL, url text NOT NULL);"
    "INSERT INTO shoal_leader VALUES (1, 0, '') ON CONFLICT DO NOTHING;"
    /* The leader's lease: renewed with every check (databases made before
     * it get the column here). */
    "ALTER TABLE shoal_leader ADD COLUMN IF NOT EXISTS renewed timestamptz "
    "  NOT NULL DEFAULT now();"
    /* Raises SH001 unless epoch e is the current one; the share lock makes
     * a new leader's epoch update wait for the commit that checked. */
    "CREATE OR REPLACE FUNCTION shoal_fence(e bigint) RETURNS void "
    "LANGUAGE plpgsql AS $$ BEGIN "
    "  PERFORM 1 FROM shoal_leader WHERE id = 1 AND epoch = e FOR SHARE;"
    "  IF NOT FOUND THEN RAISE EXCEPTION 'fenced: another controller leads' "
    "    USING ERRCODE = '" FENCED_SQLSTATE "'; END IF; END $$;";

static const char put_jobs_sql[] =
    "INSERT INTO jobs (id, state, \"user\", project, submit_ms, start_ms, "
    "end_ms, gpu_seconds, record) "
    "SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], "
    "$5::bigint[], $6::bigint[], $7::bigint[], $8::float8[], $9::json[]) "
    "ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, "
    "\"user\" = EXCLUDED.\"user\", project = EXCLUDED.project, "
    "submit_ms = EXCLUDED.submit_ms, start_ms = EXCLUDED.start_ms, "
    "end_ms = EXCLUDED.end_ms, gpu_seconds = EXCLUDED.gpu_seconds, "
    "record = EXCLUDED.record";

static const char put_objs_sql[] =
    "INSERT INTO objects (kind, key, record) "
    "SELECT * FROM unnest($1::text[], $2::text[], $3::json[]) "
    "ON CONFLICT (kind, key) DO UPDATE SET record = EXCLUDED.record";

static const char del_objs_sql[] =
    "DELETE FROM objects o USING unnest($1::text[], $2::text[]) AS d(kind, "
    "key) WHERE o.kind = d.kind AND o.key = d.key";

#define JOB_COLUMNS                                                            \
    "SELECT id, state, \"user\", project, submit_ms, start_ms, end_ms, "       \
    "gpu_seconds, record FROM jobs "

/* Whether a failed statement means the server or the link is the problem
 * (retry later) rather than the statement. */
static bool transient_sqlstate(const char *st)
{
    if (!st)
        return true; /* no SQLSTATE: libpq's own error, the connection */
    return strncmp(st, "08", 2) == 0 || strncmp(st, "53", 2) == 0 ||
           strncmp(st, "57", 2) == 0 || strncmp(st, "58", 2) == 0 ||
           strncmp(st, "40", 2) == 0 || strncmp(st, "55", 2) == 0;
}

/* Drop the connection and its messages' trailing newline. */
static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
        s[--n] = '\0';
}

static void drop_conn(PGconn **c)
{
    if (*c)
        PQfinish(*c);
    *c = NULL;
}

/* A connection that broke is dropped, to be made again on the next call. */
static void drop_if_broken(PGconn **c)
{
    if (*c && PQstatus(*c) != CONNECTION_OK)
        drop_conn(c);
}

/* Fill err from a failed result (NULL: from the connection) and return -1.
 * The caller drops a connection that broke (drop_if_broken). */
static int pg_fail(struct store_pg *s, PGconn **conn, const PGresult *res,
                   struct sh_error *err, const char *what)
{
    char msg[512];
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *text =
        res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!text)
        text = *conn ? PQerrorMessage(*conn) : "not connected";
    snprintf(msg, sizeof(msg), "%s", text);
    chomp(msg);
    enum sh_errc code = SH_EINTERNAL;
    if (state && strcmp(state, FENCED_SQLSTATE) == 0) {
        code = SH_ECONFLICT;
        s->epoch = 0;
    } else if (transient_sqlstate(state) || !*conn ||
               PQstatus(*conn) != CONNECTION_OK) {
        code = SH_EUNAVAILABLE;
    }
    return sh_errorf(err, code, "store: %s: %s", what, msg);
}

/* The server's notices and warnings go to our log, not to stderr. */
static void on_notice(void *arg, const char *message)
{
    (void)arg;
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", message);
    chomp(msg);
    sh_log(LOG_WARNING, "store", "database: %s", msg);
}

/* Open a connection to the store's database with our session settings.
 * Defaults come before the URL, so settings in the URL win. */
static PGconn *pg_connect(const char *url, struct sh_error *err)
{
    const char *const keys[] = {"connect_timeout",
                                "keepalives_idle",
                                "keepalives_interval",
                                "keepalives_count",
                                "tcp_user_timeout",
                                "application_name",
                                "dbname",
                                "client_encoding",
                                "options",
                                NULL};
    const char *const vals[] = {"5",
                                "5",
                                "2",
                                "3",
                                "15000",
                                "shoald",
                                url,
                                "UTF8",
                                "-c synchronous_commit=on "
                                "-c client_min_messages=warning",
                                NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s",
                 c ? PQerrorMessage(c) : "out of memory");
        chomp(msg);
        /* Not the URL: it may hold a password. */
        sh_errorf(err, SH_EUNAVAILABLE,
                  "store: cannot connect to the database: %s", msg);
        if (c)
            PQfinish(c);
        return NULL;
    }
    PQsetNoticeProcessor(c, on_notice, NULL);
    return c;
}

/* Run one statement without parameters; 0 or -1. */
static int exec_simple(struct store_pg *s, PGconn **conn, const char *sql,
                       struct sh_error *err, const char *what)
{
    PGresult *r = PQexec(*conn, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        pg_fail(s, conn, r, err, what);
        PQclear(r);
        drop_if_broken(conn);
        return -1;
    }
    PQclear(r);
    return 0;
}

static int prepare_data(struct store_pg *s, struct sh_error *err)
{
    static const struct {
        const char *name;
        const char *sql;
    } stmts[] = {
        {"fence", "SELECT shoal_fence($1::bigint)"},
        {"put_jobs", put_jobs_sql},
        {"put_objs", put_objs_sql},
        {"del_objs", del_objs_sql},
    };
    for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
        PGresult *r = PQprepare(s->conn, stmts[i].name, stmts[i].sql, 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            pg_fail(s, &s->conn, r, err, "prepare");
            PQclear(r);
            drop_if_broken(&s->conn);
            return -1;
        }
        PQclear(r);
    }
    return 0;
}

/* Make sure the data connection is up, reconnecting when it was lost, but
 * not more often than the backoff allows. */
static int ensure_conn(struct store_pg *s, struct sh_error *err)
{
    if (s->conn && PQstatus(s->conn) == CONNECTION_OK)
        return 0;
    drop_conn(&s->conn);
    int64_t now = clock_mono_ms();
    if (now < s->retry_at_ms)
        return sh_errorf(err, SH_EUNAVAILABLE,
                         "store: the database is unreachable; retrying in "
                         "%" PRId64 " ms",
                         s->retry_at_ms - now);
    s->conn = pg_connect(s->url, err);
    if (!s->conn || prepare_data(s, err) < 0) {
        drop_conn(&s->conn);
        s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 : RECONNECT_MIN_MS;
        if (s->backoff_ms > RECONNECT_MAX_MS)
            s->backoff_ms = RECONNECT_MAX_MS;
        s->retry_at_ms = clock_mono_ms() + s->backoff_ms;
        return -1;
    }
    s->backoff_ms = 0;
    s->retry_at_ms = 0;
    return 0;
}

static void pg_close(struct store *st)
{
    struct store_pg *s = (struct store_pg *)st;
    /* A commit under way ends as the server decides; we wait for nothing. */
    drop_conn(&s->conn);
    drop_conn(&s->lock);
    for (size_t i = 0; i < sizeof(s->arr) / sizeof(s->arr[0]); i++)
        strbuf_fini(&s->arr[i]);
    free(s->url);
    free(s);
}

/* ---- commit ---- */

enum {
    ARR_JOBS = 0,  /* 9 arrays: the columns of jobs */
    ARR_PUTS = 9,  /* 3: kind, key, record */
    ARR_DELS = 12, /* 2: kind, key */
    ARR_N = 14,
};

/* Array literals {a,b}: the buffers hold "{" until the first element. */
static int arr_sep(struct strbuf *sb)
{
    return strbuf_append(sb, sb->len > 1 ? "," : "", sb->len > 1 ? 1 : 0);
}

/* A quoted element, with quotes and backslashes escaped. */
static int arr_text(struct strbuf *sb, const char *v)
{
    if (arr_sep(sb) < 0 || strbuf_append(sb, "\"", 1) < 0)
        return -1;
    const char *p = v;
    while (*p) {
        size_t run = strcspn(p, "\"\\");
        if (run && strbuf_append(sb, p, run) < 0)
            return -1;
        p += run;
        if (*p) {
            char esc[2] = {'\\', *p};
            if (strbuf_append(sb, esc, 2) < 0)
                return -1;
            p++;
        }
    }
    return strbuf_append(sb, "\"", 1);
}

static int arr_int(struct strbuf *sb, int64_t v)
{
    return arr_sep(sb) < 0 ? -1 : strbuf_appendf(sb, "%" PRId64, v);
}

static int arr_double(struct strbuf *sb, double v)
{
    return arr_sep(sb) < 0 ? -1 : strbuf_appendf(sb, "%.17g", v);
}

/* An operation is superseded when a later one in the batch touches the
 * same row: only the last one per row is sent, since one multi-row
 * statement may not change a row twice. Sorting by row, then position,
 * puts each row's last operation at the end of its run. */
struct op_ref {
    const struct store_op *op;
    int pos;
};

static int ref_cmp(const void *a, const void *b)
{
    const struct op_ref *x = a, *y = b;
    bool xj = x->op->kind == STORE_OP_PUT_JOB;
    bool yj = y->op->kind == STORE_OP_PUT_JOB;
    if (xj != yj)
        return xj ? -1 : 1;
    if (xj) {
        if (x->op->row.id != y->op->row.id)
            return x->op->row.id < y->op->row.id ? -1 : 1;
    } else {
        int c = strcmp(x->op->objkind, y->op->objkind);
        if (c == 0)
            c = strcmp(x->op->key, y->op->key);
        if (c)
            return c;
    }
    return x->pos - y->pos;
}

static bool same_row(const struct store_op *a, const struct store_op *b)
{
    if ((a->kind == STORE_OP_PUT_JOB) != (b->kind == STORE_OP_PUT_JOB))
        return false;
    if (a->kind == STORE_OP_PUT_JOB)
        return a->row.id == b->row.id;
    return strcmp(a->objkind, b->objkind) == 0 && strcmp(a->key, b->key) == 0;
}

static int add_op(struct strbuf *arr, const struct store_op *op, int *counts)
{
    int rc = 0;
    switch (op->kind) {
    case STORE_OP_PUT_JOB: {
        struct strbuf *a = &arr[ARR_JOBS];
        rc |= arr_int(&a[0], (int64_t)op->row.id);
        rc |= arr_text(&a[1], op->row.state);
        rc |= arr_text(&a[2], op->row.user);
        rc |= arr_text(&a[3], op->row.project);
        rc |= arr_int(&a[4], op->row.submit_ms);
        rc |= arr_int(&a[5], op->row.start_ms);
        rc |= arr_int(&a[6], op->row.end_ms);
        rc |= arr_double(&a[7], op->row.gpu_seconds);
        rc |= arr_text(&a[8], op->text);
        counts[0]++;
        break;
    }
    case STORE_OP_PUT:
        rc |= arr_text(&arr[ARR_PUTS], op->objkind);
        rc |= arr_text(&arr[ARR_PUTS + 1], op->key);
        rc |= arr_text(&arr[ARR_PUTS + 2], op->text);
        counts[1]++;
        break;
    default:
        rc |= arr_text(&arr[ARR_DELS], op->objkind);
        rc |= arr_text(&arr[ARR_DELS + 1], op->key);
        counts[2]++;
        break;
    }
    return rc ? -1 : 0;
}

/* Fill the array parameters from the batch; counts: jobs, puts, deletes. */
static int build_arrays(struct store_pg *s, const struct store_batch *b,
                        int counts[3])
{
    struct op_ref *refs = malloc((size_t)b->n * sizeof(*refs));
    if (!refs)
        return -1;
    for (int i = 0; i < b->n; i++) {
        refs[i].op = &b->ops[i];
        refs[i].pos = i;
    }
    qsort(refs, (size_t)b->n, sizeof(*refs), ref_cmp);
    int rc = 0;
    for (int i = 0; i < ARR_N; i++) {
        strbuf_reset(&s->arr[i]);
        rc |= strbuf_append(&s->arr[i], "{", 1);
    }
    counts[0] = counts[1] = counts[2] = 0;
    for (int i = 0; i < b->n && rc == 0; i++)
        if (i + 1 == b->n || !same_row(refs[i].op, refs[i + 1].op))
            rc = add_op(s->arr, refs[i].op, counts);
    for (int i = 0; i < ARR_N; i++)
        rc |= strbuf_append(&s->arr[i], "}", 1);
    free(refs);
    return rc ? -1 : 0;
}

/* The commit under way failed (the first error is kept); a connection
 * out of step with the server is dropped, to start afresh next time. */
static void commit_failed(struct store_pg *s, const PGresult *r, bool drop)
{
    if (s->commit_rc == 0)
        s->commit_rc = pg_fail(s, &s->conn, r, &s->commit_err, "commit");
    if (drop)
        drop_conn(&s->conn);
}

/* Read the results of the commit under way: one or more per statement, a
 * NULL after each statement's, then the Sync's, which says the transaction
 * ended (committed unless a statement failed). Returns 1 when more is to
 * come (only when wait is false), else 0 and the commit has ended
 * (s->commit_rc says how). */
static int commit_read(struct store_pg *s, bool wait)
{
    while (s->commit == COMMIT_SENT) {
        if (!s->conn) {
            commit_failed(s, NULL, false);
            break;
        }
        if (!wait) {
            if (!PQconsumeInput(s->conn)) {
                commit_failed(s, NULL, true);
                break;
            }
            if (PQisBusy(s->conn))
                return 1;
        }
        PGresult *r = PQgetResult(s->conn);
        if (!r) {
            if (s->commit_left > 0 && PQstatus(s->conn) == CONNECTION_OK) {
                s->commit_left--;
                continue;
            }
            commit_failed(s, NULL, true);
            break;
        }
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            if (s->commit_left != 0 || !PQexitPipelineMode(s->conn))
                commit_failed(s, NULL, true);
            break;
        }
        if (st == PGRES_FATAL_ERROR)
            commit_failed(s, r, false);
        PQclear(r);
    }
    s->commit = COMMIT_ENDED;
    return 0;
}

/* Wait for the end of the commit under way, keeping its outcome for
 * store_commit_finish: before anything else uses the connection. */
static void commit_settle(struct store_pg *s)
{
    if (s->commit == COMMIT_SENT)
        commit_read(s, true);
}

static int pg_commit_finish(struct store *st, bool wait, struct sh_error *err)
{
    struct store_pg *s = (struct store_pg *)st;
    if (s->commit == COMMIT_NONE)
        return 0;
    if (commit_read(s, wait) == 1)
        return 1;
    s->commit = COMMIT_NONE;
    if (s->commit_rc < 0) {
        if (err)
            *err = s->commit_err;
        return -1;
    }
    return 0;
}

static int pg_commit_fd(const struct store *st)
{
    const struct store_pg *s = (const struct store_pg *)st;
    return s->commit == COMMIT_SENT && s->conn ? PQsocket(s->conn) : -1;
}

/* Send the commit of b in one pipeline: the fencing check, a statement per
 * kind of operation, and the Sync that commits. Its results are read by
 * commit_read. */
static int pg_commit_start(struct store *st, const struct store_batch *b,
                           struct sh_error *err)
{
    struct store_pg *s = (struct store_pg *)st;
    if (s->commit != COMMIT_NONE)
        return sh_errorf(err, SH_EINTERNAL,
                         "store: a commit is already under way");
    if (s->fenced && s->epoch == 0)
        return sh_errorf(err, SH_ECONFLICT,
                         "store: not the leader; commits are refused");
    if (ensure_conn(s, err) < 0)
        return -1;
    int counts[3];
    if (build_arrays(s, b, counts) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    const char *p[9];
    char epoch[24];
    int nsent = 0;
    bool ok = PQenterPipelineMode(s->conn);
    if (ok && s->fenced) {
        snprintf(epoch, sizeof(epoch), "%" PRIu64, s->epoch);
        p[0] = epoch;
        ok = PQsendQueryPrepared(s->conn, "fence", 1, p, NULL, NULL, 0);
        nsent++;
    }
    if (ok && counts[0]) {
        for (int i = 0; i < 9; i++)
            p[i] = strbuf_str(&s->arr[ARR_JOBS + i]);
        ok = PQsendQueryPrepared(s->conn, "put_jobs", 9, p, NULL, NULL, 0);
        nsent++;
    }
    if (ok && counts[1]) {
        for (int i = 0; i < 3; i++)
            p[i] = strbuf_str(&s->arr[ARR_PUTS + i]);
        ok = PQsendQueryPrepared(s->conn, "put_objs", 3, p, NULL, NULL, 0);
        nsent++;
    }
    if (ok && counts[2]) {
        for (int i = 0; i < 2; i++)
            p[i] = strbuf_str(&s->arr[ARR_DELS + i]);
        ok = PQsendQueryPrepared(s->conn, "del_objs", 2, p, NULL, NULL, 0);
        nsent++;
    }
    if (ok)
        ok = PQpipelineSync(s->conn);
    if (!ok) {
        pg_fail(s, &s->conn, NULL, err, "commit");
        drop_conn(&s->conn);
        return -1;
    }
    s->commit = COMMIT_SENT;
    s->commit_left = nsent;
    s->commit_rc = 0;
    return 0;
}

static int pg_commit(struct store *st, const struct store_batch *b,
                     struct sh_error *err)
{
    if (pg_commit_start(st, b, err) < 0)
        return -1;
    return pg_commit_finish(st, true, err);
}

/* ---- reads ---- */

typedef int (*row_f)(struct store_pg *s, PGresult *r, void *arg,
                     struct sh_error *err);

/* Run a query in single-row mode, calling fn for every row. The results
 * are drained even after fn failed, so the connection stays usable. */
static int query_rows(struct store_pg *s, const char *sql, int nparams,
                      const char *const *params, row_f fn, void *arg,
                      int *count, struct sh_error *err)
{
    commit_settle(s);
    if (ensure_conn(s, err) < 0)
        return -1;
    if (!PQsendQueryParams(s->conn, sql, nparams, NULL, params, NULL, NULL,
                           0)) {
        pg_fail(s, &s->conn, NULL, err, "read");
        drop_if_broken(&s->conn);
        return -1;
    }
    PQsetSingleRowMode(s->conn);
    int rc = 0, n = 0;
    PGresult *r;
    while ((r = PQgetResult(s->conn)) != NULL) {
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_SINGLE_TUPLE && rc == 0) {
            n++;
            rc = fn(s, r, arg, err);
        } else if (st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK &&
                   rc == 0) {
            rc = pg_fail(s, &s->conn, r, err, "read");
        }
        PQclear(r);
    }
    drop_if_broken(&s->conn);
    if (count)
        *count = n;
    return rc;
}

struct job_cb {
    store_job_f cb;
    void *arg;
};

static int job_row(struct store_pg *s, PGresult *r, void *arg,
                   struct sh_error *err)
{
    (void)s;
    struct job_cb *jc = arg;
    struct store_job_row row = {
        .id = strtoull(PQgetvalue(r, 0, 0), NULL, 10),
        .state = PQgetvalue(r, 0, 1),
        .user = PQgetvalue(r, 0, 2),
        .project = PQgetvalue(r, 0, 3),
        .submit_ms = strtoll(PQgetvalue(r, 0, 4), NULL, 10),
        .start_ms = strtoll(PQgetvalue(r, 0, 5), NULL, 10),
        .end_ms = strtoll(PQgetvalue(r, 0, 6), NULL, 10),
        .gpu_seconds = strtod(PQgetvalue(r, 0, 7), NULL),
    };
    json_error_t jerr;
    json_t *rec = json_loads(PQgetvalue(r, 0, 8), 0, &jerr);
    if (!rec)
        return sh_errorf(err, SH_EINTERNAL,
                         "store: job %" PRIu64 " has a bad record: %s", row.id,
                         jerr.text);
    int rc = jc->cb(&row, rec, jc->arg, err);
    json_decref(rec);
    return rc < 0 ? -1 : 0;
}

static int pg_load_jobs(struct store *st, int64_t since_ms, store_job_f cb,
                        void *arg, struct sh_error *err)
{
    struct store_pg *s = (struct store_pg *)st;
    char since[24];
    snprintf(since, sizeof(since), "%" PRId64, since_ms);
    const char *p[] = {since};
    struct job_cb jc = {cb, arg};
    return query_rows(s,
                      JOB_COLUMNS "WHERE end_ms = 0 OR end_ms >= $1::bigint "
                                  "ORDER BY id",
                      1, p, job_row, &jc, NULL, err);
}

static int pg_get_job(struct store *st, uint64_t id, store_job_f cb, void *arg,
                      struct sh_error *err)
{
    struct store_pg *s = (struct store_pg *)st;
    char ids[24];
    snprintf(ids, sizeof(ids), "%" PRIu64, id);
    const char *p[] = {ids};
    struct job_cb jc = {cb, arg};
    int n = 0;
    if (query_rows(s, JOB_COLUMNS "WHERE id = $1::bigint", 1, p, job_row, &jc,
                   &n, err) < 0)
        return -1;
    if (n == 0)
        return sh_errorf(err, SH_ENOTFOUND, "job %" PRIu64 " not found", id);
    return 0;
}

static int pg_scan_jobs(struct store *st, int64_t from_ms, int64_t until_ms,
                        store_job_f cb, void *arg, struct sh_error *err)
{
    struct store_pg *s = (struct store_pg *)st;
    char from[24], until[24];
    snprintf(from, sizeof(from), "%" PRId64, from_ms);
    snprintf(until, sizeof(until), "%" PRId64, until_ms);
    const char *p[] = {from, until};
    struct job_cb jc = {cb, arg};
    return query_rows(s,
                      JOB_COLUMNS
                      "WHERE start_ms > 0 AND (end_ms = 0 OR end_ms >= "
                      "$1::bigint) AND ($2::bigint = 0 OR start_ms < "
                      "$2::bigint) ORDER BY id",
                      2, p, job_row, &jc, NULL, err);
}

struct object_cb {
    const char *kind;
    store_object_f cb;
    void *arg;
};

static int object_row(struct store_pg *s, PGresult *r, void *arg,
                      struct sh_error *err)
{
    (void)s;
    struct object_cb *oc = arg;
    const char *key = PQgetvalue(r, 0, 0);
    json_error_t jerr;
    json_t *rec = json_loads(PQgetvalue(r, 0, 1), 0, &jerr);
    if (!rec)
        return sh_errorf(err, SH_EINTERNAL,
                         "store: %s %.64s has a bad record: %s", oc->kind, key,
                         jerr.text);
    int rc = oc->cb(key, rec, oc->arg, err);
    json_decref(rec);
    return rc < 0 ? -1 : 0;
}

static int pg_load_objects(struct store *st, const char *kind,
                           store_object_f cb, void *arg, struct sh_error *err)
{
    struct store_pg *s = (struct store_pg *)st;
    const char *p[] = {kind};
    struct object_cb oc = {kind, cb, arg};
    /* COLLATE "C": byte order, as SQLite sorts, whatever the database's
     * locale. */
    return query_rows(s,
                      "SELECT key, record FROM objects WHERE kind = $1 "
                      "ORDER BY key COLLATE \"C\"",
                      1, p, object_row, &oc, NULL, err);
}

static int max_id_row(struct store_pg *s, PGresult *r, void *arg,
                      struct sh_error *err)
{
    (void)s;
    (void)err;
    *(uint64_t *)arg = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
    return 0;
}

static int pg_max_job_id(struct store *st, uint64_t *out, struct sh_error *err)
{
    struct store_pg *s = (struct store_pg *)st;
    *out = 0;
    return query_rows(s, "SELECT COALESCE(MAX(id), 0) FROM jobs", 0, NULL,
                      max_id_row, out, NULL, err);
}

/* Retention, between commits: one transaction, fenced as commits are. */
static int pg_prune_jobs(struct store *st, int64_t before_ms, int max,
                         int *pruned, struct sh_error *err)
{
    struct store_pg *s = (struct store_pg *)st;
    commit_settle(s);
    if (s->commit != COMMIT_NONE)
        return sh_errorf(err, SH_EUNAVAILABLE, "store: a commit is under way");
    if (s->fenced && s->epoch == 0)
        return sh_errorf(err, SH_ECONFLICT,
                         "store: not the leader; changes are refused");
    if (ensure_conn(s, err) < 0)
        return -1;
    char sql[300];
    if (exec_simple(s, &s->conn, "BEGIN", err, "prune jobs") < 0)
        return -1;
    if (s->fenced) {
        snprintf(sql, sizeof(sql), "SELECT shoal_fence(%" PRIu64 ")", s->epoch);
        if (exec_simple(s, &s->conn, sql, err, "prune jobs") < 0)
            goto fail;
    }
    snprintf(sql, sizeof(sql),
             "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE "
             "end_ms > 0 AND end_ms < %lld ORDER BY end_ms LIMIT %d)",
             (long long)before_ms, max);
    PGresult *r = PQexec(s->conn, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        pg_fail(s, &s->conn, r, err, "prune jobs");
        PQclear(r);
        goto fail;
    }
    *pruned = atoi(PQcmdTuples(r));
    PQclear(r);
    return exec_simple(s, &s->conn, "COMMIT", err, "prune jobs");
fail:
    if (s->conn)
        PQclear(PQexec(s->conn, "ROLLBACK"));
    *pruned = 0;
    return -1;
}

static int pg_count_jobs(struct store *st, uint64_t *out, struct sh_error *err)
{
    struct store_pg *s = (struct store_pg *)st;
    *out = 0;
    return query_rows(s, "SELECT COUNT(*) FROM jobs", 0, NULL, max_id_row, out,
                      NULL, err);
}

/* ---- leadership ---- */

/* Run sql with at most one parameter on the leadership connection and
 * return its one-row result, or NULL with err filled (and the connection
 * dropped: a session we are unsure of cannot hold the lock for us). */
static PGresult *lock_query(struct store_pg *s, const char *sql,
                            const char *param, struct sh_error *err)
{
    const char *p[] = {param};
    PGresult *r =
        PQexecParams(s->lock, sql, param ? 1 : 0, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        if (PQresultStatus(r) == PGRES_TUPLES_OK)
            sh_errorf(err, SH_EINTERNAL, "store: shoal_leader has no row");
        else
            pg_fail(s, &s->lock, r, err, "leadership");
        if (err->code == SH_EINTERNAL || err->code == SH_ECONFLICT)
            err->code = SH_EUNAVAILABLE;
        PQclear(r);
        drop_conn(&s->lock);
        s->epoch = 0;
        return NULL;
    }
    return r;
}

static int pg_leader_check(struct store *st, struct sh_error *err)
{
    struct store_pg *s = (struct store_pg *)st;
    if (s->epoch == 0)
        return sh_errorf(err, SH_ECONFLICT, "store: not the leader");
    if (!s->lock || PQstatus(s->lock) != CONNECTION_OK) {
        drop_conn(&s->lock);
        s->epoch = 0;
        return sh_errorf(err, SH_EUNAVAILABLE,
                         "store: the leadership session to the database was "
                         "lost");
    }
    /* The epoch, renewing the lease while it is ours. */
    char mine_text[24];
    snprintf(mine_text, sizeof(mine_text), "%" PRIu64, s->epoch);
    PGresult *r = lock_query(s,
                             "UPDATE shoal_leader SET renewed = CASE "
                             "WHEN epoch = $1::bigint THEN clock_timestamp() "
                             "ELSE renewed END WHERE id = 1 RETURNING epoch",
                             mine_text, err);
    if (!r)
        return -1;
    uint64_t now = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    if (now != s->epoch) {
        uint64_t mine = s->epoch;
        drop_conn(&s->lock);
        s->epoch = 0;
        return sh_errorf(err, SH_ECONFLICT,
                         "fenced: another controller leads (epoch %" PRIu64
                         ", ours was %" PRIu64 ")",
                         now, mine);
    }
    return 0;
}

/* The leader's URL into leader_url; 1 when its lease ran out (it renewed
 * nothing for the store's lease), 0 when it holds, -1 on error. */
static int leader_expired(struct store_pg *s, char *leader_url,
                          size_t leader_url_size, struct sh_error *err)
{
    char lease[32];
    snprintf(lease, sizeof(lease), "%.3f",
             (double)s->base.leader_lease_ms / 1000.0);
    PGresult *r = lock_query(s,
                             "SELECT url, clock_timestamp() - renewed > "
                             "make_interval(secs => $1::float8) "
                             "FROM shoal_leader WHERE id = 1",
                             lease, err);
    if (!r)
        return -1;
    if (leader_url && leader_url_size)
        snprintf(leader_url, leader_url_size, "%s", PQgetvalue(r, 0, 0));
    bool expired = PQgetvalue(r, 0, 1)[0] == 't';
    PQclear(r);
    return expired;
}

/* The leader's lease ran out: end its sessions (the one that holds the
 * advisory lock, and any inside a commit, which holds the leader row in
 * share mode) and take the lock. A stopped or cut-off leader's sessions
 * may stay open for ever (its kernel still answers TCP keepalives), so
 * the lease, not the session, bounds leadership; the epoch that the new
 * leader raises next fences anything the old one sends later. 1 when the
 * lock is ours, 0 when not (yet), -1 on error. */
static int take_over(struct store_pg *s, struct sh_error *err)
{
    sh_log(LOG_WARNING, "store",
           "the leader renewed nothing for %lld ms: ending its database "
           "sessions to take over",
           (long long)s->base.leader_lease_ms);
    PGresult *r = lock_query(
        s,
        "SELECT count(pg_terminate_backend(pid)) FROM pg_locks "
        "WHERE pid <> pg_backend_pid() AND database = (SELECT oid FROM "
        "pg_database WHERE datname = current_database()) AND ("
        "(locktype = 'advisory' AND granted AND classid::bigint = "
        "(" LEADER_LOCK_KEY "::bigint >> 32) AND objid::bigint = "
        "(" LEADER_LOCK_KEY "::bigint & 4294967295) AND objsubid = 1) OR "
        "(locktype = 'relation' AND relation = 'shoal_leader'::regclass))",
        NULL, err);
    if (!r)
        return -1;
    PQclear(r);
    /* The ended backends release their locks as they exit. */
    for (int i = 0; i < 20; i++) {
        r = lock_query(s, "SELECT pg_try_advisory_lock(" LEADER_LOCK_KEY ")",
                       NULL, err);
        if (!r)
            return -1;
        bool got = PQgetvalue(r, 0, 0)[0] == 't';
        PQclear(r);
        if (got)
            return 1;
        usleep(50000);
    }
    return 0;
}

static int pg_leader_try(struct store *st, const char *my_url, uint64_t *epoch,
                         char *leader_url, size_t leader_url_size,
                         struct sh_error *err)
{
    struct store_pg *s = (struct store_pg *)st;
    s->fenced = true;
    if (leader_url && leader_url_size)
        leader_url[0] = '\0';
    if (s->epoch) {
        struct sh_error cerr;
        if (pg_leader_check(st, &cerr) == 0) {
            *epoch = s->epoch;
            return 1;
        }
    }
    /* A session kept from an earlier call may have died unnoticed: one
     * more try on a new one. */
    PGresult *r = NULL;
    for (int tries = s->lock ? 2 : 1; tries > 0 && !r; tries--) {
        if (!s->lock) {
            s->lock = pg_connect(s->url, err);
            if (!s->lock)
                return -1;
        }
        r = lock_query(s, "SELECT pg_try_advisory_lock(" LEADER_LOCK_KEY ")",
                       NULL, err);
    }
    if (!r)
        return -1;
    bool got = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (!got) {
        int expired = leader_expired(s, leader_url, leader_url_size, err);
        if (expired <= 0)
            return expired; /* it leads (0), or the database is gone */
        int took = take_over(s, err);
        if (took <= 0)
            return took;
    }
    /* Waits for a commit of the deposed leader that is under way: it holds
     * the row in share mode (shoal_fence). */
    r = lock_query(s,
                   "UPDATE shoal_leader SET epoch = epoch + 1, url = $1, "
                   "renewed = clock_timestamp() WHERE id = 1 RETURNING epoch",
                   my_url ? my_url : "", err);
    if (!r)
        return -1;
    s->epoch = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    *epoch = s->epoch;
    return 1;
}

static const struct store_ops pg_ops = {
    .name = "postgresql",
    .close = pg_close,
    .commit = pg_commit,
    .commit_start = pg_commit_start,
    .commit_finish = pg_commit_finish,
    .commit_fd = pg_commit_fd,
    .load_jobs = pg_load_jobs,
    .get_job = pg_get_job,
    .scan_jobs = pg_scan_jobs,
    .load_objects = pg_load_objects,
    .max_job_id = pg_max_job_id,
    .prune_jobs = pg_prune_jobs,
    .count_jobs = pg_count_jobs,
    .leader_try = pg_leader_try,
    .leader_check = pg_leader_check,
};

/* ---- opening ---- */

static int version_row(struct store_pg *s, PGresult *r, void *arg,
                       struct sh_error *err)
{
    (void)s;
    (void)err;
    *(int *)arg = atoi(PQgetvalue(r, 0, 0));
    return 0;
}

/* Create the schema or bring it to SCHEMA_VERSION, in one transaction
 * under an advisory lock, so controllers starting together do not race. */
static int migrate(struct store_pg *s, struct sh_error *err)
{
    if (exec_simple(s, &s->conn,
                    "BEGIN; SELECT pg_advisory_xact_lock(" SCHEMA_LOCK_KEY ")",
                    err, "schema") < 0)
        return -1;
    int version = 0;
    if (exec_simple(s, &s->conn,
                    "CREATE TABLE IF NOT EXISTS shoal_schema "
                    "(version integer NOT NULL)",
                    err, "schema") < 0 ||
        query_rows(s, "SELECT COALESCE(MAX(version), 0) FROM shoal_schema", 0,
                   NULL, version_row, &version, NULL, err) < 0)
        goto fail;
    if (version > SCHEMA_VERSION) {
        sh_errorf(err, SH_EINVAL,
                  "store: the database has schema version %d, newer than "
                  "this shoald understands (%d)",
                  version, SCHEMA_VERSION);
        goto fail;
    }
    if (version < SCHEMA_VERSION) {
        /* Every step is in schema_sql, idempotent (IF NOT EXISTS): running
         * it brings any older version up. pg_dump is the copy to keep
         * before an upgrade (doc/ops.md). */
        char sql[sizeof(schema_sql) + 128];
        snprintf(sql, sizeof(sql),
                 "%sDELETE FROM shoal_schema; "
                 "INSERT INTO shoal_schema VALUES (%d)",
                 schema_sql, SCHEMA_VERSION);
        if (exec_simple(s, &s->conn, sql, err, "schema") < 0)
            goto fail;
    }
    return exec_simple(s, &s->conn, "COMMIT", err, "schema");
fail:
    if (s->conn)
        PQclear(PQexec(s->conn, "ROLLBACK"));
    return -1;
}

struct store *store_pg_open(const char *url, struct sh_error *err)
{
    struct store_pg *s = calloc(1, sizeof(*s));
    if (!s || !(s->url = strdup(url))) {
        free(s);
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    s->base.ops = &pg_ops;
    s->base.leader_lease_ms = STORE_LEADER_LEASE_MS;
    for (int i = 0; i < ARR_N; i++)
        strbuf_init(&s->arr[i], (size_t)1 << 30);
    s->conn = pg_connect(url, err);
    if (!s->conn || migrate(s, err) < 0 || prepare_data(s, err) < 0) {
        pg_close(&s->base);
        return NULL;
    }
    return &s->base;
}
