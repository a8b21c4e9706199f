/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the store keeps what was committed, across close and reopen, and a
 * failed commit stores nothing of its batch. The SQLite backend here; the
 * cases every backend shares are in store_cases.h. */
#define STORE_SUITE store
#include "store_cases.h"

#include <unistd.h>

static char dir[] = "/tmp/shoal-store-test-XXXXXX";
static char path[256];

const char *store_test_url(void)
{
    return path;
}

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

Test(store, rejects_unknown_url_schemes)
{
    struct sh_error err;
    cr_assert_null(store_open("mysql://x", &err));
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert_null(store_open("fault:x:/tmp/a", &err));
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert_null(store_open("/nonexistent-dir/x/state.db", &err));
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    /* A mistyped scheme does not print the rest, which may hold a
     * password. */
    cr_assert_null(store_open("postgresq://u:secret@db/x", &err));
    cr_assert(strstr(err.msg, "'postgresq://'") && !strstr(err.msg, "secret"),
              "%s", err.msg);
}

Test(store, refuses_a_password_in_the_database_url)
{
    static const char *const with[] = {
        "postgresql://shoal:secret@db/shoal", "postgres://shoal:@db:5432/shoal",
        "postgresql://db/shoal?sslmode=require&password=secret",
        "postgresql://db/shoal?password=secret"};
    for (size_t i = 0; i < sizeof(with) / sizeof(with[0]); i++) {
        struct sh_error err;
        cr_assert_null(store_open(with[i], &err), "%s", with[i]);
        cr_assert_eq(err.code, SH_EINVAL);
        cr_assert(strstr(err.msg, "~/.pgpass") && !strstr(err.msg, "secret"),
                  "%s", err.msg);
    }
}

Test(store, sqlite_is_always_leader_at_epoch_one)
{
    struct sh_error err;
    struct store *st = open_store();
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
