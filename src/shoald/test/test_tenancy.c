/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: tenancy.c: names and quota validation, team pools (a project's
 * guarantees never exceed its team's), membership, refusals that change
 * nothing, and what is written to the store reading back the same
 * (including a load that replaces everything). Invariants are checked
 * after every step. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/model/job.h"
#include "shoald/tenancy.h"
#include "store/store.h"

static struct tenancy *t;
static struct store_batch *b;
static struct sh_error err;

static void check(void)
{
    struct sh_error e;
    cr_assert(tenancy_check_invariants(t, &e), "invariant: %s", e.msg);
}

static void setup(void)
{
    t = tenancy_create(&err);
    b = store_batch_create();
    cr_assert_not_null(t);
    cr_assert_not_null(b);
}

static void teardown(void)
{
    check();
    tenancy_destroy(t);
    store_batch_destroy(b);
}

TestSuite(tenancy, .init = setup, .fini = teardown);

#define ANY(g, l)                                                              \
    {                                                                          \
        NULL, (g), (l)                                                         \
    }
#define MODEL(m, g, l)                                                         \
    {                                                                          \
        (m), (g), (l)                                                          \
    }
#define NONE TENANCY_UNLIMITED

static void team(const char *name, const struct tenancy_quota *q, int n)
{
    cr_assert_eq(tenancy_team_create(t, b, name, q, n, 1000, &err), 0, "%s",
                 err.msg);
    check();
}

static void project(const char *name, const char *tm,
                    const struct tenancy_quota *q, int n)
{
    cr_assert_eq(tenancy_project_create(t, b, name, tm, q, n, 1000, &err), 0,
                 "%s", err.msg);
    check();
}

/* Expect a refusal with code and a message holding each of words (NULL
 * ended), and the batch untouched. */
static void refused(int rc, enum sh_errc code, const char *const *words)
{
    cr_assert_eq(rc, -1);
    cr_expect_eq(err.code, code, "code %d: %s", err.code, err.msg);
    for (int i = 0; words && words[i]; i++)
        cr_expect(strstr(err.msg, words[i]) != NULL, "'%s' not in: %s",
                  words[i], err.msg);
    check();
}

Test(tenancy, quota_entries_are_validated_with_the_field_named)
{
    struct {
        struct tenancy_quota q[3];
        int n;
        const char *word;
    } cases[] = {
        {{ANY(-1, NONE)}, 1, "guaranteed"},
        {{ANY(1000001, NONE)}, 1, "guaranteed"},
        {{ANY(0, 1000001)}, 1, "limit"},
        {{ANY(0, -7)}, 1, "limit"},
        {{ANY(8, 4)}, 1, "below the guaranteed 8"},
        {{ANY(1, NONE), ANY(2, NONE)}, 2, "two quota entries"},
        {{MODEL("H100", 1, NONE), MODEL("H100", 1, 4)}, 2, "two quota"},
        {{MODEL("bad model", 1, NONE)}, 1, "gpu_model"},
        {{MODEL("", 1, NONE)}, 1, "gpu_model"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_expect_eq(
            tenancy_quotas_validate(cases[i].q, cases[i].n, "team x", &err), -1,
            "case %zu accepted", i);
        cr_expect(strstr(err.msg, cases[i].word) != NULL, "case %zu: %s", i,
                  err.msg);
        cr_expect(strstr(err.msg, "team x") != NULL, "%s", err.msg);
    }
    struct tenancy_quota ok[] = {ANY(8, 16), MODEL("H100-80GB", 4, NONE),
                                 MODEL("A100", 0, 0)};
    cr_expect_eq(tenancy_quotas_validate(ok, 3, "team x", &err), 0, "%s",
                 err.msg);
    struct tenancy_quota many[TENANCY_QUOTAS_MAX + 1];
    cr_expect_eq(
        tenancy_quotas_validate(many, TENANCY_QUOTAS_MAX + 1, "x", &err), -1);
}

Test(tenancy, names_are_checked)
{
    char long_name[JOB_IDENT_MAX + 2];
    memset(long_name, 'a', JOB_IDENT_MAX + 1);
    long_name[JOB_IDENT_MAX + 1] = '\0';
    const char *bad[] = {"",          "-lead",   ".hidden",
                         "has space", "slash/y", long_name};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_expect_eq(tenancy_team_create(t, b, bad[i], NULL, 0, 1, &err), -1,
                     "team '%s' accepted", bad[i]);
        cr_expect_eq(err.code, SH_EINVAL);
    }
    cr_expect_eq(tenancy_team_create(t, b, NULL, NULL, 0, 1, &err), -1);
    cr_expect_eq(tenancy_team_count(t), 0);
    cr_expect_eq(store_batch_count(b), 0);
}

Test(tenancy, teams_and_projects_are_created_listed_in_order_and_deleted)
{
    team("zeta", NULL, 0);
    team("alpha", NULL, 0);
    project("p2", "zeta", NULL, 0);
    project("p1", "zeta", NULL, 0);
    const struct tenancy_team *tm = tenancy_team_next(t, NULL);
    cr_assert_str_eq(tm->name, "alpha");
    cr_assert_str_eq(tenancy_team_next(t, tm)->name, "zeta");
    cr_assert_null(tenancy_team_next(t, tenancy_team_next(t, tm)));
    cr_assert_eq(tenancy_team_get(t, "zeta")->nprojects, 2);
    const struct tenancy_project *p = tenancy_project_next(t, NULL);
    cr_assert_str_eq(p->name, "p1");
    cr_assert_str_eq(p->team, "zeta");
    cr_assert(tenancy_project_exists(t, "p2"));
    cr_assert_not(tenancy_project_exists(t, "p3"));

    const char *holds[] = {"zeta", "2 project", NULL};
    refused(tenancy_team_delete(t, b, "zeta", &err), SH_ECONFLICT, holds);
    const char *exists[] = {"already exists", NULL};
    refused(tenancy_team_create(t, b, "zeta", NULL, 0, 1, &err), SH_ECONFLICT,
            exists);
    refused(tenancy_project_create(t, b, "p1", "alpha", NULL, 0, 1, &err),
            SH_ECONFLICT, exists);
    const char *noteam[] = {"team nope does not exist", NULL};
    refused(tenancy_project_create(t, b, "p9", "nope", NULL, 0, 1, &err),
            SH_ENOTFOUND, noteam);

    cr_assert_eq(tenancy_project_delete(t, b, "p1", &err), 0);
    cr_assert_eq(tenancy_project_delete(t, b, "p2", &err), 0);
    check();
    cr_assert_eq(tenancy_team_delete(t, b, "zeta", &err), 0, "%s", err.msg);
    cr_assert_eq(tenancy_team_count(t), 1);
    cr_assert_eq(tenancy_project_count(t), 0);
    const char *gone[] = {"does not exist", NULL};
    refused(tenancy_team_delete(t, b, "zeta", &err), SH_ENOTFOUND, gone);
}

Test(tenancy, project_guarantees_never_exceed_the_team_pool)
{
    struct tenancy_quota tq[] = {ANY(10, 20), MODEL("H100", 4, 8)};
    team("research", tq, 2);
    struct tenancy_quota six[] = {ANY(6, NONE)};
    project("vision", "research", six, 1);
    /* 6 + 5 > 10: refused naming both numbers. */
    struct tenancy_quota five[] = {ANY(5, NONE)};
    const char *words[] = {"nlp", "5", "10", "6", NULL};
    refused(tenancy_project_create(t, b, "nlp", "research", five, 1, 1, &err),
            SH_EINVAL, words);
    cr_assert_not(tenancy_project_exists(t, "nlp"));
    struct tenancy_quota four[] = {ANY(4, NONE)};
    project("nlp", "research", four, 1);
    /* H100 guarantees count against the team's H100 entry. */
    struct tenancy_quota h5[] = {ANY(6, NONE), MODEL("H100", 5, NONE)};
    const char *hw[] = {"H100", "5", "4", NULL};
    refused(tenancy_project_set_quotas(t, b, "vision", h5, 2, &err), SH_EINVAL,
            hw);
    cr_assert_eq(tenancy_project_get(t, "vision")->nquotas, 1);
    struct tenancy_quota h4[] = {ANY(6, NONE), MODEL("H100", 4, NONE)};
    cr_assert_eq(tenancy_project_set_quotas(t, b, "vision", h4, 2, &err), 0,
                 "%s", err.msg);
    /* A model the team has no entry for counts against "any". */
    struct tenancy_quota a1[] = {ANY(4, NONE), MODEL("A100", 1, NONE)};
    const char *aw[] = {"any model", NULL};
    refused(tenancy_project_set_quotas(t, b, "nlp", a1, 2, &err), SH_EINVAL,
            aw);
    check();
}

Test(tenancy, a_team_cannot_shrink_below_its_projects)
{
    struct tenancy_quota tq[] = {ANY(10, NONE)};
    team("research", tq, 1);
    struct tenancy_quota eight[] = {ANY(8, NONE)};
    project("vision", "research", eight, 1);
    struct tenancy_quota seven[] = {ANY(7, NONE)};
    const char *words[] = {"research", "7", "8", NULL};
    refused(tenancy_team_set_quotas(t, b, "research", seven, 1, &err),
            SH_ECONFLICT, words);
    cr_assert_eq(tenancy_team_get(t, "research")->quotas[0].guaranteed, 10);
    const char *none[] = {"no quota", "vision", NULL};
    refused(tenancy_team_set_quotas(t, b, "research", NULL, 0, &err),
            SH_ECONFLICT, none);
    cr_assert_eq(tenancy_team_set_quotas(t, b, "research", eight, 1, &err), 0);
    /* A team without quotas gives projects nothing to guarantee. */
    team("empty", NULL, 0);
    const char *zero[] = {"team empty guarantees 0", NULL};
    refused(tenancy_project_create(t, b, "p", "empty", eight, 1, 1, &err),
            SH_EINVAL, zero);
    /* Limits alone need no team pool. */
    struct tenancy_quota lim[] = {ANY(0, 100)};
    project("p", "empty", lim, 1);
}

Test(tenancy, moving_a_project_checks_the_new_team)
{
    struct tenancy_quota big[] = {ANY(10, NONE)};
    struct tenancy_quota small[] = {ANY(2, NONE)};
    team("big", big, 1);
    team("small", small, 1);
    struct tenancy_quota five[] = {ANY(5, NONE)};
    project("vision", "big", five, 1);
    const char *words[] = {"small", "5", "2", NULL};
    refused(tenancy_project_set_team(t, b, "vision", "small", &err), SH_EINVAL,
            words);
    cr_assert_str_eq(tenancy_project_get(t, "vision")->team, "big");
    struct tenancy_quota two[] = {ANY(2, NONE)};
    cr_assert_eq(tenancy_project_set_quotas(t, b, "vision", two, 1, &err), 0);
    cr_assert_eq(tenancy_project_set_team(t, b, "vision", "small", &err), 0,
                 "%s", err.msg);
    check();
    cr_assert_eq(tenancy_team_get(t, "big")->nprojects, 0);
    cr_assert_eq(tenancy_team_get(t, "small")->nprojects, 1);
    cr_assert_eq(tenancy_team_delete(t, b, "big", &err), 0);
}

Test(tenancy, quota_changes_apply_to_one_entry)
{
    struct tenancy_quota cur[] = {ANY(4, 8), MODEL("H100", 2, NONE)};
    struct tenancy_quota out[TENANCY_QUOTAS_MAX];
    int n;
    struct tenancy_quota_change chg = {NULL, false, 0, true, 12, false};
    cr_assert_eq(tenancy_quota_apply(cur, 2, &chg, out, &n, &err), 0);
    cr_assert_eq(n, 2);
    cr_assert_null(out[0].model);
    cr_assert_eq(out[0].guaranteed, 4); /* kept */
    cr_assert_eq(out[0].limit, 12);
    struct tenancy_quota_change add = {"A100", true, 1, false, 0, false};
    cr_assert_eq(tenancy_quota_apply(cur, 2, &add, out, &n, &err), 0);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(out[2].model, "A100");
    cr_assert_eq(out[2].guaranteed, 1);
    cr_assert_eq(out[2].limit, TENANCY_UNLIMITED);
    struct tenancy_quota_change rm = {"H100", false, 0, false, 0, true};
    cr_assert_eq(tenancy_quota_apply(cur, 2, &rm, out, &n, &err), 0);
    cr_assert_eq(n, 1);
    cr_assert_null(out[0].model);
    struct tenancy_quota_change rm2 = {"V100", false, 0, false, 0, true};
    cr_assert_eq(tenancy_quota_apply(cur, 2, &rm2, out, &n, &err), -1);
    cr_assert_eq(err.code, SH_ENOTFOUND);
}

Test(tenancy, quotas_read_back_from_json_strictly)
{
    struct tenancy_quota q[TENANCY_QUOTAS_MAX];
    int n;
    json_t *ok = json_loads("[{\"gpu_model\":null,\"guaranteed\":4,"
                            "\"limit\":null},{\"gpu_model\":\"H100\","
                            "\"guaranteed\":2,\"limit\":6}]",
                            0, NULL);
    cr_assert_eq(tenancy_quotas_from_json(ok, q, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(n, 2);
    cr_assert_null(q[0].model);
    cr_assert_eq(q[0].limit, TENANCY_UNLIMITED);
    cr_assert_str_eq(q[1].model, "H100");
    json_t *back = tenancy_quotas_to_json(q, n);
    cr_assert(json_equal(back, ok));
    json_decref(back);
    json_decref(ok);
    const char *bad[] = {
        "{}",
        "[1]",
        "[{\"guaranteed\":\"4\"}]",
        "[{\"guaranteed\":1.5}]",
        "[{\"limit\":-1}]",
        "[{\"limit\":true}]",
        "[{\"gpu_model\":7}]",
        "[{\"colour\":\"red\"}]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *v = json_loads(bad[i], 0, NULL);
        cr_assert_not_null(v, "%s", bad[i]);
        cr_expect_eq(tenancy_quotas_from_json(v, q, &n, &err), -1,
                     "accepted %s", bad[i]);
        cr_expect_eq(err.code, SH_EINVAL);
        json_decref(v);
    }
}

Test(tenancy, members_have_one_role_each)
{
    team("research", NULL, 0);
    project("vision", "research", NULL, 0);
    cr_assert_eq(tenancy_role(t, "vision", "alice"), TENANCY_ROLE_NONE);
    cr_assert_eq(
        tenancy_member_set(t, b, "vision", "alice", TENANCY_ROLE_VIEWER, &err),
        0);
    cr_assert_eq(
        tenancy_member_set(t, b, "vision", "bob", TENANCY_ROLE_ADMIN, &err), 0);
    cr_assert_eq(
        tenancy_member_set(t, b, "vision", "alice", TENANCY_ROLE_MEMBER, &err),
        0);
    check();
    cr_assert_eq(tenancy_role(t, "vision", "alice"), TENANCY_ROLE_MEMBER);
    cr_assert_eq(tenancy_project_get(t, "vision")->nmembers, 2);
    const struct tenancy_member *m = tenancy_member_next(t, "vision", NULL);
    cr_assert_str_eq(m->user, "alice");
    cr_assert_str_eq(tenancy_member_next(t, "vision", m)->user, "bob");
    refused(
        tenancy_member_set(t, b, "vision", "carol", TENANCY_ROLE_NONE, &err),
        SH_EINVAL, NULL);
    refused(
        tenancy_member_set(t, b, "nope", "carol", TENANCY_ROLE_MEMBER, &err),
        SH_ENOTFOUND, NULL);
    refused(tenancy_member_set(t, b, "vision", "bad name", TENANCY_ROLE_MEMBER,
                               &err),
            SH_EINVAL, NULL);
    const char *notm[] = {"carol is not a member", NULL};
    refused(tenancy_member_remove(t, b, "vision", "carol", &err), SH_ENOTFOUND,
            notm);
    cr_assert_eq(tenancy_member_remove(t, b, "vision", "alice", &err), 0);
    cr_assert_eq(tenancy_role(t, "vision", "alice"), TENANCY_ROLE_NONE);
    cr_assert_eq(tenancy_user_forget(t, b, "bob", &err), 0);
    cr_assert_eq(tenancy_project_get(t, "vision")->nmembers, 0);
}

Test(tenancy, role_names_round_trip)
{
    enum tenancy_role r;
    for (int i = 0; i <= TENANCY_ROLE_ADMIN; i++) {
        cr_assert_eq(
            tenancy_role_from_name(tenancy_role_name((enum tenancy_role)i), &r),
            0);
        cr_assert_eq((int)r, i);
    }
    cr_assert_eq(tenancy_role_from_name("owner", &r), -1);
    cr_assert_eq(tenancy_role_from_name(NULL, &r), -1);
}

/* ---- through a real store ---- */

static char dir[64];
static char path[128];

static struct store *open_store(void)
{
    snprintf(dir, sizeof(dir), "/tmp/shoal-tenancy-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/state.db", dir);
    struct store *st = store_open(path, &err);
    cr_assert_not_null(st, "%s", err.msg);
    return st;
}

static void close_store(struct store *st)
{
    char cmd[128];
    store_close(st);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(tenancy, what_is_stored_loads_back_the_same)
{
    struct store *st = open_store();
    cr_assert_eq(tenancy_init_defaults(t, b, 5, &err), 0);
    struct tenancy_quota tq[] = {ANY(16, 32), MODEL("H100-80GB", 8, NONE)};
    team("research", tq, 2);
    struct tenancy_quota pq[] = {MODEL("H100-80GB", 8, 12), ANY(4, NONE)};
    project("vision", "research", pq, 2);
    cr_assert_eq(
        tenancy_member_set(t, b, "vision", "alice", TENANCY_ROLE_ADMIN, &err),
        0);
    cr_assert_eq(
        tenancy_member_set(t, b, "default", "alice", TENANCY_ROLE_MEMBER, &err),
        0);
    cr_assert_eq(store_commit(st, b, &err), 0, "%s", err.msg);

    struct tenancy *t2 = tenancy_create(&err);
    /* Something in memory that the store does not hold is replaced. */
    struct store_batch *junk = store_batch_create();
    cr_assert_eq(tenancy_team_create(t2, junk, "stale", NULL, 0, 1, &err), 0);
    cr_assert_eq(tenancy_load(t2, st, &err), 0, "%s", err.msg);
    cr_assert(tenancy_check_invariants(t2, &err), "%s", err.msg);
    cr_assert_null(tenancy_team_get(t2, "stale"));
    cr_assert_eq(tenancy_team_count(t2), 2);
    cr_assert_eq(tenancy_project_count(t2), 2);
    const struct tenancy_project *p = tenancy_project_get(t2, "vision");
    cr_assert_str_eq(p->team, "research");
    cr_assert_eq(p->nquotas, 2);
    cr_assert_null(p->quotas[0].model); /* "any" sorts first */
    cr_assert_eq(p->quotas[0].guaranteed, 4);
    cr_assert_str_eq(p->quotas[1].model, "H100-80GB");
    cr_assert_eq(p->quotas[1].limit, 12);
    cr_assert_eq(p->created_ms, 1000);
    cr_assert_eq(tenancy_role(t2, "vision", "alice"), TENANCY_ROLE_ADMIN);
    cr_assert_eq(tenancy_role(t2, "default", "alice"), TENANCY_ROLE_MEMBER);
    cr_assert_eq(tenancy_team_get(t2, "research")->nprojects, 1);

    /* Deleting a project deletes its memberships in the store too. */
    cr_assert_eq(tenancy_project_delete(t, b, "vision", &err), 0);
    cr_assert_eq(store_commit(st, b, &err), 0);
    cr_assert_eq(tenancy_load(t2, st, &err), 0, "%s", err.msg);
    cr_assert_not(tenancy_project_exists(t2, "vision"));
    cr_assert_eq(tenancy_role(t2, "vision", "alice"), TENANCY_ROLE_NONE);
    cr_assert_eq(tenancy_team_get(t2, "research")->nprojects, 0);

    store_batch_destroy(junk);
    tenancy_destroy(t2);
    close_store(st);
}

Test(tenancy, a_failed_load_keeps_the_tables)
{
    struct store *st = open_store();
    team("research", NULL, 0);
    cr_assert_eq(store_commit(st, b, &err), 0);
    /* A project whose team is not stored: a broken store. */
    json_t *rec = json_pack("{s:s, s:I, s:[]}", "team", "ghost", "created_ms",
                            (json_int_t)1, "quotas");
    cr_assert_eq(store_batch_put(b, "project", "orphan", rec), 0);
    json_decref(rec);
    cr_assert_eq(store_commit(st, b, &err), 0);
    team("kept", NULL, 0);
    cr_assert_eq(tenancy_load(t, st, &err), -1);
    cr_assert(strstr(err.msg, "ghost") != NULL, "%s", err.msg);
    cr_assert_not_null(tenancy_team_get(t, "kept"));
    store_batch_reset(b);
    close_store(st);
}

Test(tenancy, defaults_are_created_once)
{
    cr_assert_eq(tenancy_init_defaults(t, b, 1, &err), 0);
    cr_assert_eq(tenancy_init_defaults(t, b, 2, &err), 0);
    cr_assert_eq(tenancy_team_count(t), 1);
    cr_assert_str_eq(tenancy_project_get(t, TENANCY_DEFAULT_PROJECT)->team,
                     TENANCY_DEFAULT_TEAM);
}
