/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the permission rules of policy.c. First the rule table itself,
 * walked as a table (action x who -> allowed?), then the policy_can_*()
 * functions on a real tenancy (projects and roles) with callers of every
 * kind: cluster admin, project admin, member, viewer, non-member, an agent
 * token and an anonymous caller. */
#include <criterion/criterion.h>
#include <string.h>

#include "shoald/policy.h"
#include "shoald/tenancy.h"
#include "store/store.h"

/* ---- the rule table ---- */

enum who {
    CLUSTER_ADMIN = 0,
    PROJECT_ADMIN,
    MEMBER,
    VIEWER,
    NON_MEMBER,
    OWNER_NON_MEMBER, /* owns the object but holds no role (left the project) */
    OWNER_VIEWER,     /* owns the object, now a viewer */
    WHO_COUNT,
};

static const char *const who_names[WHO_COUNT] = {
    "cluster admin", "project admin",   "member",         "viewer",
    "non-member",    "owner (no role)", "owner (viewer)",
};

static struct policy_subject subject(enum who w)
{
    struct policy_subject s = {false, TENANCY_ROLE_NONE, false};
    switch (w) {
    case CLUSTER_ADMIN:
        s.cluster_admin = true;
        break;
    case PROJECT_ADMIN:
        s.role = TENANCY_ROLE_ADMIN;
        break;
    case MEMBER:
        s.role = TENANCY_ROLE_MEMBER;
        break;
    case VIEWER:
        s.role = TENANCY_ROLE_VIEWER;
        break;
    case NON_MEMBER:
        break;
    case OWNER_NON_MEMBER:
        s.owner = true;
        break;
    case OWNER_VIEWER:
        s.owner = true;
        s.role = TENANCY_ROLE_VIEWER;
        break;
    default:
        break;
    }
    return s;
}

/* 1 = allowed. Columns in enum who order. */
static const int expected[POLICY_ACTION_COUNT][WHO_COUNT] = {
    /*                     cadm padm mem view non own-n own-v */
    [POLICY_SUBMIT] = {1, 1, 1, 0, 0, 0, 0},
    [POLICY_VIEW_JOB] = {1, 1, 1, 1, 0, 1, 1},
    [POLICY_CANCEL_JOB] = {1, 1, 0, 0, 0, 1, 1},
    [POLICY_VIEW_PROJECT] = {1, 1, 1, 1, 0, 0, 1},
    [POLICY_MANAGE_MEMBERS] = {1, 1, 0, 0, 0, 0, 0},
    [POLICY_VIEW_USER] = {1, 0, 0, 0, 0, 1, 1},
    [POLICY_REVOKE_TOKENS] = {1, 0, 0, 0, 0, 1, 1},
    [POLICY_ADMINISTER] = {1, 0, 0, 0, 0, 0, 0},
    [POLICY_HIGH_PRIORITY] = {1, 1, 0, 0, 0, 0, 0},
};

Test(policy_table, every_action_for_every_kind_of_caller)
{
    for (int a = 0; a < POLICY_ACTION_COUNT; a++) {
        for (int w = 0; w < WHO_COUNT; w++) {
            struct policy_subject s = subject((enum who)w);
            bool got = policy_allows((enum policy_action)a, &s);
            cr_expect_eq(got, expected[a][w] == 1,
                         "%s may %s: expected %s, got %s", who_names[w],
                         policy_action_name((enum policy_action)a),
                         expected[a][w] ? "allowed" : "refused",
                         got ? "allowed" : "refused");
        }
    }
}

Test(policy_table, unknown_actions_are_refused_even_for_admins)
{
    struct policy_subject s = subject(CLUSTER_ADMIN);
    cr_assert_not(policy_allows(POLICY_ACTION_COUNT, &s));
    cr_assert_not(policy_allows((enum policy_action) - 1, &s));
}

/* ---- the functions, on a real tenancy ---- */

static struct tenancy *tenancy;
static struct store_batch *batch;

static void setup(void)
{
    struct sh_error err;
    tenancy = tenancy_create(&err);
    batch = store_batch_create();
    cr_assert_not_null(tenancy);
    cr_assert_not_null(batch);
    cr_assert_eq(
        tenancy_team_create(tenancy, batch, "research", NULL, 0, 1, &err), 0,
        "%s", err.msg);
    const char *projects[] = {"vision", "nlp"};
    for (int i = 0; i < 2; i++)
        cr_assert_eq(tenancy_project_create(tenancy, batch, projects[i],
                                            "research", NULL, 0, 1, &err),
                     0, "%s", err.msg);
    struct {
        const char *user;
        enum tenancy_role role;
    } members[] = {
        {"padmin", TENANCY_ROLE_ADMIN},
        {"alice", TENANCY_ROLE_MEMBER},
        {"bob", TENANCY_ROLE_MEMBER},
        {"victor", TENANCY_ROLE_VIEWER},
    };
    for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++)
        cr_assert_eq(tenancy_member_set(tenancy, batch, "vision",
                                        members[i].user, members[i].role, &err),
                     0, "%s", err.msg);
    /* carol belongs to nlp only. */
    cr_assert_eq(tenancy_member_set(tenancy, batch, "nlp", "carol",
                                    TENANCY_ROLE_MEMBER, &err),
                 0);
}

static void teardown(void)
{
    struct sh_error err;
    cr_assert(tenancy_check_invariants(tenancy, &err), "%s", err.msg);
    tenancy_destroy(tenancy);
    store_batch_destroy(batch);
}

TestSuite(policy, .init = setup, .fini = teardown);

static struct api_caller user(const char *name, bool admin)
{
    struct api_caller c = {API_USER, name, admin, NULL, NULL};
    return c;
}

static struct job job_of(const char *owner, const char *project)
{
    struct job j;
    memset(&j, 0, sizeof(j));
    j.id = 7;
    j.spec.user = (char *)owner;
    j.spec.project = (char *)project;
    return j;
}

Test(policy, submit_needs_member_or_admin_role)
{
    struct sh_error err;
    struct {
        const char *user;
        bool admin;
        const char *project;
        int rc;
        enum sh_errc code;
    } cases[] = {
        {"root", true, "vision", 0, SH_OK},
        {"root", true, "nlp", 0, SH_OK},
        {"padmin", false, "vision", 0, SH_OK},
        {"alice", false, "vision", 0, SH_OK},
        {"victor", false, "vision", -1, SH_EFORBIDDEN},
        {"carol", false, "vision", -1, SH_EFORBIDDEN},
        {"alice", false, "nlp", -1, SH_EFORBIDDEN},
        {"alice", false, "nowhere", -1, SH_ENOTFOUND},
        {"root", true, "nowhere", -1, SH_ENOTFOUND},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct api_caller c = user(cases[i].user, cases[i].admin);
        sh_error_clear(&err);
        int rc = policy_can_submit(tenancy, &c, cases[i].project, &err);
        cr_expect_eq(rc, cases[i].rc, "%s -> %s: rc %d (%s)", cases[i].user,
                     cases[i].project, rc, err.msg);
        if (rc < 0)
            cr_expect_eq(err.code, cases[i].code, "%s -> %s: code %d",
                         cases[i].user, cases[i].project, err.code);
    }
}

Test(policy, refusals_say_why)
{
    struct sh_error err;
    struct api_caller viewer = user("victor", false);
    struct api_caller stranger = user("carol", false);
    cr_assert_eq(policy_can_submit(tenancy, &viewer, "vision", &err), -1);
    cr_expect(strstr(err.msg, "viewer") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "member") != NULL, "%s", err.msg);
    cr_assert_eq(policy_can_submit(tenancy, &stranger, "vision", &err), -1);
    cr_expect(strstr(err.msg, "not a member of project vision") != NULL, "%s",
              err.msg);
}

Test(policy, view_own_jobs_and_jobs_of_own_projects)
{
    struct {
        const char *caller;
        bool admin;
        const char *owner;
        const char *project;
        bool can;
    } cases[] = {
        {"root", true, "alice", "vision", true},
        {"alice", false, "alice", "vision", true},
        {"bob", false, "alice", "vision", true},    /* same project */
        {"victor", false, "alice", "vision", true}, /* viewers read */
        {"padmin", false, "alice", "vision", true},
        {"carol", false, "alice", "vision", false}, /* other project */
        {"alice", false, "carol", "nlp", false},
        {"carol", false, "carol", "nlp", true},
        /* a job left in a project the owner no longer belongs to */
        {"dave", false, "dave", "vision", true},
        {"dave", false, "alice", "vision", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct api_caller c = user(cases[i].caller, cases[i].admin);
        struct job j = job_of(cases[i].owner, cases[i].project);
        cr_expect_eq(policy_can_view(tenancy, &c, &j), cases[i].can,
                     "%s sees %s's job in %s: expected %d", cases[i].caller,
                     cases[i].owner, cases[i].project, cases[i].can);
    }
}

Test(policy, cancel_own_jobs_or_as_project_admin)
{
    struct sh_error err;
    struct {
        const char *caller;
        bool admin;
        const char *owner;
        const char *project;
        bool can;
    } cases[] = {
        {"root", true, "alice", "vision", true},
        {"alice", false, "alice", "vision", true},
        {"padmin", false, "alice", "vision", true},
        {"bob", false, "alice", "vision", false},
        {"victor", false, "alice", "vision", false},
        {"carol", false, "alice", "vision", false},
        {"padmin", false, "carol", "nlp", false},
        {"victor", false, "victor", "vision", true}, /* own job */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct api_caller c = user(cases[i].caller, cases[i].admin);
        struct job j = job_of(cases[i].owner, cases[i].project);
        int rc = policy_can_cancel(tenancy, &c, &j, &err);
        cr_expect_eq(rc == 0, cases[i].can,
                     "%s cancels %s's job in %s: expected %d (%s)",
                     cases[i].caller, cases[i].owner, cases[i].project,
                     cases[i].can, rc < 0 ? err.msg : "");
        if (rc < 0)
            cr_expect_eq(err.code, SH_EFORBIDDEN);
    }
}

Test(policy, agents_join_tokens_and_anonymous_callers_are_never_users)
{
    struct sh_error err;
    struct api_caller agent = {API_AGENT, NULL, false, "node1", NULL};
    struct api_caller join = {API_JOIN, NULL, false, NULL, "x"};
    struct api_caller anon = {API_ANON, NULL, false, NULL, NULL};
    /* Even a caller struct claiming admin is not a user without the role. */
    struct api_caller fake = {API_AGENT, "alice", true, "node1", NULL};
    const struct api_caller *callers[] = {&agent, &join, &anon, &fake};
    struct job j = job_of("alice", "vision");
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(policy_can_submit(tenancy, callers[i], "vision", &err),
                     -1);
        cr_expect_eq(err.code, SH_EFORBIDDEN);
        cr_expect_not(policy_can_view(tenancy, callers[i], &j));
        cr_expect_eq(policy_can_cancel(tenancy, callers[i], &j, &err), -1);
        cr_expect_eq(
            policy_can_view_project(tenancy, callers[i], "vision", &err), -1);
        cr_expect_eq(
            policy_can_manage_members(tenancy, callers[i], "vision", &err), -1);
        cr_expect_eq(policy_can_view_user(callers[i], "alice", &err), -1);
        cr_expect_eq(policy_can_revoke_tokens(callers[i], "alice", &err), -1);
    }
}

Test(policy, project_admins_manage_members_of_their_project_only)
{
    struct sh_error err;
    struct api_caller padmin = user("padmin", false);
    struct api_caller alice = user("alice", false);
    struct api_caller root = user("root", true);
    cr_expect_eq(policy_can_manage_members(tenancy, &padmin, "vision", &err),
                 0);
    cr_expect_eq(policy_can_manage_members(tenancy, &padmin, "nlp", &err), -1);
    cr_expect_eq(err.code, SH_EFORBIDDEN);
    cr_expect_eq(policy_can_manage_members(tenancy, &alice, "vision", &err),
                 -1);
    cr_expect(strstr(err.msg, "admin") != NULL, "%s", err.msg);
    cr_expect_eq(policy_can_manage_members(tenancy, &root, "nlp", &err), 0);
    cr_expect_eq(policy_can_manage_members(tenancy, &root, "nowhere", &err),
                 -1);
    cr_expect_eq(err.code, SH_ENOTFOUND);
}

Test(policy, users_see_themselves_admins_see_everyone)
{
    struct sh_error err;
    struct api_caller alice = user("alice", false);
    struct api_caller root = user("root", true);
    cr_expect_eq(policy_can_view_user(&alice, "alice", &err), 0);
    cr_expect_eq(policy_can_view_user(&alice, "bob", &err), -1);
    cr_expect_eq(err.code, SH_EFORBIDDEN);
    cr_expect_eq(policy_can_view_user(&root, "bob", &err), 0);
    cr_expect_eq(policy_can_revoke_tokens(&alice, "alice", &err), 0);
    cr_expect_eq(policy_can_revoke_tokens(&alice, "bob", &err), -1);
}

Test(policy, roles_follow_membership_changes)
{
    struct sh_error err;
    struct api_caller bob = user("bob", false);
    cr_assert_eq(policy_can_submit(tenancy, &bob, "vision", &err), 0);
    cr_assert_eq(tenancy_member_set(tenancy, batch, "vision", "bob",
                                    TENANCY_ROLE_VIEWER, &err),
                 0);
    cr_expect_eq(policy_can_submit(tenancy, &bob, "vision", &err), -1);
    cr_assert_eq(tenancy_member_remove(tenancy, batch, "vision", "bob", &err),
                 0);
    struct job j = job_of("alice", "vision");
    cr_expect_not(policy_can_view(tenancy, &bob, &j));
    cr_expect_eq(policy_role(tenancy, &bob, "vision"), TENANCY_ROLE_NONE);
}
