/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the PostgreSQL backend keeps the store's contract (the shared cases
 * of store_cases.h), and its leadership: one leader per database, a new
 * leader fences the old one's commits, a lost connection fails a commit
 * with SH_EUNAVAILABLE and the store reconnects by itself. And commits that
 * do not wait (store_commit_start): they land, a read made meanwhile waits
 * for them and sees them, and a fenced or broken one fails as store_commit
 * would.
 * Runs when SHOAL_TEST_PG_URL names a server (scripts/pg-test.sh starts
 * one); each test gets a database of its own. Skipped otherwise. */
#define STORE_SUITE store_pg
#include "store_cases.h"

#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

static char url[512];
static char dbname[64];

const char *store_test_url(void)
{
    return url;
}

/* The admin URL with its database name replaced by db. */
static void url_with_db(const char *admin, const char *db, char *out,
                        size_t size)
{
    const char *host = strstr(admin, "://");
    host = host ? host + 3 : admin;
    const char *slash = strchr(host, '/');
    const char *query = strchr(host, '?');
    if (!slash || (query && query < slash))
        slash = query ? query : host + strlen(host);
    snprintf(out, size, "%.*s/%s%s", (int)(slash - admin), admin, db,
             query ? query : "");
}

/* Run sql on the admin database; the test fails when it fails. */
static void admin_exec(const char *sql)
{
    PGconn *c = PQconnectdb(getenv("SHOAL_TEST_PG_URL"));
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql,
              PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
}

/* Run sql in the test's database. */
static void test_db_exec(const char *sql)
{
    PGconn *c = PQconnectdb(url);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql,
              PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
}

static void setup(void)
{
    const char *admin = getenv("SHOAL_TEST_PG_URL");
    if (!admin || !*admin)
        cr_skip_test("SHOAL_TEST_PG_URL is not set (scripts/pg-test.sh "
                     "start gives one)");
    static int seq;
    snprintf(dbname, sizeof(dbname), "shoal_unit_%d_%d", (int)getpid(), ++seq);
    char sql[128];
    snprintf(sql, sizeof(sql), "CREATE DATABASE %s", dbname);
    admin_exec(sql);
    url_with_db(admin, dbname, url, sizeof(url));
}

static void teardown(void)
{
    if (!dbname[0])
        return;
    char sql[128];
    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)",
             dbname);
    admin_exec(sql);
    dbname[0] = '\0';
}

TestSuite(store_pg, .init = setup, .fini = teardown);

/* Ends (and waits for the end of) every session of the test's database
 * holding an advisory lock (the leader's lock session), as a network cut or
 * a crashed process would. */
static void kill_lock_sessions(void)
{
    test_db_exec("SELECT pg_terminate_backend(pid, 10000) FROM pg_locks "
                 "WHERE locktype = 'advisory' AND pid <> pg_backend_pid()");
}

/* Ends every other session of the test's database. */
static void kill_all_sessions(void)
{
    test_db_exec(
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
        "WHERE datname = current_database() "
        "AND pid <> pg_backend_pid()");
}

static int commit_one(struct store *st, uint64_t id, struct sh_error *err)
{
    struct store_batch *b = store_batch_create();
    put_job(b, id, "pending", 0);
    int rc = store_commit(st, b, err);
    store_batch_destroy(b);
    return rc;
}

Test(store_pg, one_leader_and_a_new_leader_fences_the_old)
{
    struct sh_error err;
    struct store *a = open_store();
    struct store *b = open_store();
    cr_assert(store_has_leadership(a));
    uint64_t ea = 0, eb = 0;
    char leader[128];
    cr_assert_eq(
        store_leader_try(a, "http://a:6817", &ea, leader, sizeof(leader), &err),
        1, "%s", err.msg);
    cr_assert_gt(ea, 0);
    cr_assert_eq(store_leader_check(a, &err), 0, "%s", err.msg);
    /* Asking again while leading keeps the epoch. */
    uint64_t again = 0;
    cr_assert_eq(store_leader_try(a, "http://a:6817", &again, leader,
                                  sizeof(leader), &err),
                 1);
    cr_assert_eq(again, ea);

    cr_assert_eq(
        store_leader_try(b, "http://b:6817", &eb, leader, sizeof(leader), &err),
        0, "%s", err.msg);
    cr_assert_str_eq(leader, "http://a:6817");
    cr_assert_eq(commit_one(a, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(commit_one(b, 2, &err), -1, "a follower never commits");
    cr_assert_eq(err.code, SH_ECONFLICT);

    /* The leader's lock session ends (its data session lives on). */
    kill_lock_sessions();
    cr_assert_eq(
        store_leader_try(b, "http://b:6817", &eb, leader, sizeof(leader), &err),
        1, "%s", err.msg);
    cr_assert_gt(eb, ea);
    cr_assert_eq(commit_one(b, 3, &err), 0, "%s", err.msg);

    /* The deposed leader's late commit is refused, and nothing of it lands. */
    cr_assert_eq(commit_one(a, 4, &err), -1);
    cr_assert_eq(err.code, SH_ECONFLICT);
    cr_assert(strstr(err.msg, "fenced") || strstr(err.msg, "not the leader"),
              "%s", err.msg);
    cr_assert_eq(store_leader_check(a, &err), -1);
    /* Asking again while the new leader holds the lock: a follower. */
    cr_assert_eq(
        store_leader_try(a, "http://a:6817", &ea, leader, sizeof(leader), &err),
        0, "%s", err.msg);
    cr_assert_str_eq(leader, "http://b:6817");

    char out[256] = "";
    cr_assert_eq(store_load_jobs(b, 0, collect_job, out, &err), 0);
    cr_assert_str_eq(out, "1:pending,3:pending,");
    store_close(a);
    store_close(b);
}

Test(store_pg, fencing_holds_even_before_the_old_leader_notices)
{
    struct sh_error err;
    struct store *a = open_store();
    struct store *b = open_store();
    uint64_t ea, eb;
    char leader[64];
    cr_assert_eq(
        store_leader_try(a, "http://a", &ea, leader, sizeof(leader), &err), 1);
    kill_lock_sessions();
    cr_assert_eq(
        store_leader_try(b, "http://b", &eb, leader, sizeof(leader), &err), 1,
        "%s", err.msg);
    /* a never called store_leader_check: its commit carries epoch ea, and
     * the database refuses it. */
    cr_assert_eq(commit_one(a, 1, &err), -1);
    cr_assert_eq(err.code, SH_ECONFLICT);
    cr_assert(strstr(err.msg, "fenced"), "%s", err.msg);
    int n = 0;
    cr_assert_eq(store_load_jobs(b, 0, count_job, &n, &err), 0);
    cr_assert_eq(n, 0);
    store_close(a);
    store_close(b);
}

Test(store_pg, closing_the_leader_lets_another_lead)
{
    struct sh_error err;
    struct store *a = open_store();
    struct store *b = open_store();
    uint64_t ea, eb;
    char leader[64];
    cr_assert_eq(
        store_leader_try(a, "http://a", &ea, leader, sizeof(leader), &err), 1);
    store_close(a);
    cr_assert_eq(
        store_leader_try(b, "http://b", &eb, leader, sizeof(leader), &err), 1,
        "%s", err.msg);
    cr_assert_eq(eb, ea + 1);
    store_close(b);
}

Test(store_pg, a_lost_connection_fails_the_commit_then_reconnects)
{
    struct sh_error err;
    struct store *st = open_store();
    uint64_t epoch;
    char leader[64];
    cr_assert_eq(
        store_leader_try(st, "http://a", &epoch, leader, sizeof(leader), &err),
        1);
    cr_assert_eq(commit_one(st, 1, &err), 0, "%s", err.msg);
    kill_all_sessions();
    cr_assert_eq(commit_one(st, 2, &err), -1);
    cr_assert_eq(err.code, SH_EUNAVAILABLE, "%s", err.msg);
    /* The lock session went too: leadership is lost, not assumed. */
    cr_assert_eq(store_leader_check(st, &err), -1);
    /* Reconnects by itself (after a short backoff) and leads again. */
    int rc = -1;
    for (int i = 0; i < 100 && rc != 1; i++) {
        rc = store_leader_try(st, "http://a", &epoch, leader, sizeof(leader),
                              &err);
        if (rc != 1)
            usleep(50000);
    }
    cr_assert_eq(rc, 1, "%s", err.msg);
    rc = -1;
    for (int i = 0; i < 100 && rc < 0; i++) {
        rc = commit_one(st, 2, &err);
        if (rc < 0) {
            cr_assert_eq(err.code, SH_EUNAVAILABLE, "%s", err.msg);
            usleep(50000);
        }
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    int n = 0;
    cr_assert_eq(store_load_jobs(st, 0, count_job, &n, &err), 0);
    cr_assert_eq(n, 2);
    store_close(st);
}

Test(store_pg, refuses_a_schema_newer_than_it_knows)
{
    struct sh_error err;
    store_close(open_store());
    test_db_exec("UPDATE shoal_schema SET version = 99");
    cr_assert_null(store_open(url, &err));
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert(strstr(err.msg, "schema version 99"), "%s", err.msg);
}

Test(store_pg, an_unreachable_server_is_unavailable)
{
    struct sh_error err;
    /* Port 1 on loopback: nothing listens there. */
    cr_assert_null(store_open("postgresql://shoal@127.0.0.1:1/x", &err));
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
}

/* Start committing job id without waiting; the batch is handed over. */
static int start_one(struct store *st, uint64_t id, struct sh_error *err)
{
    struct store_batch *b = store_batch_create();
    put_job(b, id, "pending", 0);
    int rc = store_commit_start(st, b, err);
    if (rc == 1)
        cr_assert_eq(store_batch_count(b), 0, "the batch is free at once");
    store_batch_destroy(b);
    return rc;
}

/* Wait for the commit under way the way the controller's loop does: poll
 * its descriptor, then ask without waiting. */
static int land_polling(struct store *st, struct sh_error *err)
{
    for (int i = 0; i < 500; i++) {
        int fd = store_commit_fd(st);
        if (fd >= 0) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            poll(&p, 1, 20);
        }
        int rc = store_commit_finish(st, false, err);
        if (rc != 1)
            return rc;
    }
    cr_assert_fail("the commit did not end within 10 s");
    return -1;
}

Test(store_pg, a_commit_under_way_lands_and_reads_wait_for_it)
{
    struct sh_error err;
    struct store *st = open_store();
    cr_assert_eq(store_commit_fd(st), -1, "nothing under way");
    cr_assert_eq(store_commit_finish(st, false, &err), 0);
    cr_assert_eq(start_one(st, 1, &err), 1, "%s", err.msg);
    cr_assert_geq(store_commit_fd(st), 0);
    cr_assert_eq(start_one(st, 2, &err), -1, "one commit at a time");
    cr_assert_eq(land_polling(st, &err), 0, "%s", err.msg);
    cr_assert_eq(store_commit_fd(st), -1);

    /* A read while a commit is under way sees it; its end is kept. */
    cr_assert_eq(start_one(st, 3, &err), 1, "%s", err.msg);
    char out[256] = "";
    cr_assert_eq(store_load_jobs(st, 0, collect_job, out, &err), 0, "%s",
                 err.msg);
    cr_assert_str_eq(out, "1:pending,3:pending,");
    cr_assert_eq(store_commit_fd(st), -1, "its end is known");
    cr_assert_eq(store_commit_finish(st, false, &err), 0, "%s", err.msg);
    cr_assert_eq(store_commit_finish(st, false, &err), 0, "none any more");

    /* A synchronous commit works between them, and on reopening all is
     * there. */
    cr_assert_eq(commit_one(st, 4, &err), 0, "%s", err.msg);
    store_close(st);
    st = open_store();
    out[0] = '\0';
    cr_assert_eq(store_load_jobs(st, 0, collect_job, out, &err), 0);
    cr_assert_str_eq(out, "1:pending,3:pending,4:pending,");
    store_close(st);
}

Test(store_pg, a_fenced_commit_under_way_fails_and_stores_nothing)
{
    struct sh_error err;
    struct store *a = open_store();
    struct store *b = open_store();
    uint64_t ea, eb;
    char leader[64];
    cr_assert_eq(
        store_leader_try(a, "http://a", &ea, leader, sizeof(leader), &err), 1);
    kill_lock_sessions();
    cr_assert_eq(
        store_leader_try(b, "http://b", &eb, leader, sizeof(leader), &err), 1,
        "%s", err.msg);
    /* a does not know yet: it sends, and the database refuses. */
    cr_assert_eq(start_one(a, 1, &err), 1, "%s", err.msg);
    cr_assert_eq(land_polling(a, &err), -1);
    cr_assert_eq(err.code, SH_ECONFLICT, "%s", err.msg);
    cr_assert(strstr(err.msg, "fenced"), "%s", err.msg);
    int n = 0;
    cr_assert_eq(store_load_jobs(b, 0, count_job, &n, &err), 0);
    cr_assert_eq(n, 0);
    /* The connection stays usable: the next commit is refused at once. */
    cr_assert_eq(start_one(a, 2, &err), -1);
    cr_assert_eq(err.code, SH_ECONFLICT);
    store_close(a);
    store_close(b);
}

Test(store_pg,
     a_commit_under_way_whose_connection_ends_fails_then_the_next_lands)
{
    struct sh_error err;
    struct store *st = open_store();
    cr_assert_eq(commit_one(st, 1, &err), 0, "%s", err.msg);
    /* Another session holds the jobs table, so the commit waits on the
     * server until its session is ended. */
    PGconn *locker = PQconnectdb(url);
    cr_assert_eq(PQstatus(locker), CONNECTION_OK);
    PQclear(PQexec(locker, "BEGIN; LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE"));
    cr_assert_eq(start_one(st, 2, &err), 1, "%s", err.msg);
    cr_assert_eq(store_commit_finish(st, false, &err), 1, "still waiting");
    kill_all_sessions();
    PQfinish(locker);
    cr_assert_eq(land_polling(st, &err), -1);
    cr_assert_eq(err.code, SH_EUNAVAILABLE, "%s", err.msg);
    /* Reconnects by itself (after a short backoff). */
    int rc = -1;
    for (int i = 0; i < 100 && rc < 0; i++) {
        rc = start_one(st, 3, &err);
        if (rc < 0) {
            cr_assert_eq(err.code, SH_EUNAVAILABLE, "%s", err.msg);
            usleep(50000);
        }
    }
    cr_assert_eq(rc, 1, "%s", err.msg);
    cr_assert_eq(land_polling(st, &err), 0, "%s", err.msg);
    char out[256] = "";
    cr_assert_eq(store_load_jobs(st, 0, collect_job, out, &err), 0);
    cr_assert_str_eq(out, "1:pending,3:pending,");
    store_close(st);
}
