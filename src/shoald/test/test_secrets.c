/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: secrets.c: values sealed at rest (the store never holds them in
 * clear), opened again with the same key, refused with another key,
 * listings without values, and bad input refused with the reason. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shoald/secrets.h"
#include "store/store.h"

static char dir[64];
static struct sh_error err;

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/shoal-secrets-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(secrets, .init = setup, .fini = teardown);

static json_t *data(const char *ak, const char *sk)
{
    return json_pack("{s:s, s:s}", "access_key", ak, "secret_key", sk);
}

/* Does the file hold needle anywhere? */
static bool file_holds(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    return memmem(buf, n, needle, strlen(needle)) != NULL;
}

Test(secrets, sealed_in_the_store_and_opened_again)
{
    struct secrets *s = secrets_create(dir, &err);
    cr_assert_not_null(s, "%s", err.msg);
    char key[128], db[128];
    snprintf(key, sizeof(key), "%s/secrets.key", dir);
    snprintf(db, sizeof(db), "%s/state.db", dir);
    struct stat st;
    cr_assert_eq(stat(key, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    struct store *store = store_open(db, &err);
    cr_assert_not_null(store, "%s", err.msg);
    struct store_batch *b = store_batch_create();
    json_t *d = data("AKID", "very-secret-value-123");
    cr_assert_eq(secrets_add(s, b, "cred", "vision", d, "alice", 7, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(store_commit(store, b, &err), 0, "%s", err.msg);
    store_close(store);
    cr_assert(!file_holds(db, "very-secret-value-123"));

    /* Listings: names of keys, never values. */
    json_t *list = secrets_list(s);
    char *text = json_dumps(list, 0);
    cr_assert(strstr(text, "secret_key"));
    cr_assert(!strstr(text, "very-secret-value"));
    free(text);
    json_decref(list);

    /* A new controller on the same state opens it. */
    struct secrets *s2 = secrets_create(dir, &err);
    store = store_open(db, &err);
    cr_assert_eq(secrets_load(s2, store, &err), 0, "%s", err.msg);
    json_t *open = secrets_open(s2, "vision", "cred", &err);
    cr_assert_not_null(open, "%s", err.msg);
    cr_assert(json_equal(open, d));
    json_decref(open);

    /* Another key cannot open it. */
    remove(key);
    struct secrets *s3 = secrets_create(dir, &err);
    cr_assert_eq(secrets_load(s3, store, &err), 0);
    cr_assert_null(secrets_open(s3, "vision", "cred", &err));
    cr_assert(strstr(err.msg, "cannot be opened"), "%s", err.msg);

    store_close(store);
    store_batch_destroy(b);
    json_decref(d);
    secrets_destroy(s);
    secrets_destroy(s2);
    secrets_destroy(s3);
}

Test(secrets, bad_input_is_refused_and_changes_nothing)
{
    struct secrets *s = secrets_create(dir, &err);
    struct store_batch *b = store_batch_create();
    json_t *ok = data("a", "b");
    json_t *empty = json_object();
    json_t *nonstr = json_pack("{s:i}", "k", 1);
    json_t *badkey = json_pack("{s:s}", "a b", "v");
    cr_assert_eq(secrets_add(s, b, "bad name", NULL, ok, "u", 1, &err), -1);
    cr_assert_eq(secrets_add(s, b, "x", NULL, empty, "u", 1, &err), -1);
    cr_assert_eq(secrets_add(s, b, "x", NULL, nonstr, "u", 1, &err), -1);
    cr_assert_eq(secrets_add(s, b, "x", NULL, badkey, "u", 1, &err), -1);
    cr_assert(strstr(err.msg, "secret key"), "%s", err.msg);
    cr_assert_eq(store_batch_count(b), 0);
    cr_assert_eq(secrets_add(s, b, "x", NULL, ok, "u", 1, &err), 0);
    cr_assert_eq(secrets_add(s, b, "x", NULL, ok, "u", 1, &err), -1);
    cr_assert_eq(err.code, SH_ECONFLICT);
    /* Names are per project: another project's "x" is another secret. */
    cr_assert_eq(secrets_add(s, b, "x", "vision", ok, "u", 1, &err), 0, "%s",
                 err.msg);
    cr_assert_not_null(secrets_get(s, "vision", "x"));
    cr_assert_eq(secrets_resolve(s, "nlp", "x"), secrets_get(s, NULL, "x"));
    cr_assert_eq(secrets_resolve(s, "vision", "x"),
                 secrets_get(s, "vision", "x"));
    cr_assert_eq(secrets_delete(s, b, NULL, "nope", &err), -1);
    cr_assert_eq(err.code, SH_ENOTFOUND);
    cr_assert_eq(secrets_delete(s, b, "nlp", "x", &err), -1);
    cr_assert_eq(secrets_delete(s, b, NULL, "x", &err), 0);
    cr_assert_null(secrets_get(s, NULL, "x"));
    cr_assert_not_null(secrets_get(s, "vision", "x"));
    json_decref(ok);
    json_decref(empty);
    json_decref(nonstr);
    json_decref(badkey);
    store_batch_destroy(b);
    secrets_destroy(s);
}

Test(secrets, registry_credentials_are_the_projects_then_the_clusters)
{
    struct secrets *s = secrets_create(dir, &err);
    struct store_batch *b = store_batch_create();
    json_t *reg = json_pack("{s:s, s:s, s:s}", "registry", "r.example:5000",
                            "username", "u", "password", "p1");
    json_t *cl = json_pack("{s:s, s:s, s:s}", "registry", "r.example:5000",
                           "username", "c", "password", "pc");
    json_t *other = json_pack("{s:s, s:s, s:s}", "registry", "r.example:5000",
                              "username", "o", "password", "po");
    cr_assert_eq(secrets_add(s, b, "a-other", "other", other, "u", 1, &err), 0);
    cr_assert_eq(secrets_add(s, b, "b-cluster", NULL, cl, "u", 1, &err), 0);
    cr_assert_eq(secrets_add(s, b, "c-vision", "vision", reg, "u", 1, &err), 0);
    /* The project's own first. */
    json_t *a = secrets_registry_auth(s, "vision", "r.example:5000");
    cr_assert_not_null(a);
    cr_assert_str_eq(json_string_value(json_object_get(a, "secret")),
                     "c-vision");
    cr_assert_str_eq(json_string_value(json_object_get(a, "password")), "p1");
    json_decref(a);
    /* A project without one gets the cluster's, never another project's. */
    a = secrets_registry_auth(s, "nlp", "r.example:5000");
    cr_assert_not_null(a);
    cr_assert_str_eq(json_string_value(json_object_get(a, "username")), "c");
    json_decref(a);
    /* Another registry: none. */
    cr_assert_null(secrets_registry_auth(s, "vision", "r.example"));
    json_decref(reg);
    json_decref(cl);
    json_decref(other);
    store_batch_destroy(b);
    secrets_destroy(s);
}

/* A secret stored under its bare name, as before names were per project:
 * found in its project, and deleted by the key it is stored under. */
Test(secrets, a_record_stored_under_its_bare_name_loads_and_deletes)
{
    struct secrets *s = secrets_create(dir, &err);
    char db[128];
    snprintf(db, sizeof(db), "%s/state.db", dir);
    struct store *store = store_open(db, &err);
    cr_assert_not_null(store, "%s", err.msg);
    struct store_batch *b = store_batch_create();
    json_t *rec =
        json_pack("{s:s, s:s, s:[s], s:s, s:s, s:I, s:s}", "name", "old",
                  "project", "vision", "keys", "k", "nonce", "AAAA", "box",
                  "AAAA", "created_ms", (json_int_t)1, "created_by", "u");
    cr_assert_eq(store_batch_put(b, "secret", "old", rec), 0);
    cr_assert_eq(store_commit(store, b, &err), 0, "%s", err.msg);
    store_batch_destroy(b);
    cr_assert_eq(secrets_load(s, store, &err), 0, "%s", err.msg);
    cr_assert_not_null(secrets_get(s, "vision", "old"));
    cr_assert_null(secrets_get(s, NULL, "old"));
    b = store_batch_create();
    cr_assert_eq(secrets_delete(s, b, "vision", "old", &err), 0, "%s", err.msg);
    cr_assert_eq(store_commit(store, b, &err), 0, "%s", err.msg);
    store_batch_destroy(b);
    cr_assert_eq(secrets_load(s, store, &err), 0, "%s", err.msg);
    cr_assert_null(secrets_get(s, "vision", "old"), "gone from the store");
    json_decref(rec);
    store_close(store);
    secrets_destroy(s);
}
