/* SPDX-License-Identifier: Apache-2.0 */
/* Permission rules (see policy.h). The whole table:
 *
 *   action            cluster admin  project role needed   owner
 *   submit            yes            member or admin       -
 *   view job, logs    yes            viewer or more        yes (own job)
 *   cancel job        yes            admin                 yes (own job)
 *   view project      yes            viewer or more        -
 *   manage members    yes            admin                 -
 *   view user         yes            -                     yes (self)
 *   revoke tokens     yes            -                     yes (self)
 *   administer        yes            -                     -
 *
 * A user who leaves a project may still see and cancel the jobs they
 * submitted there: those are theirs. Agent and join tokens are never users
 * (api.c refuses them on user routes); every function here refuses them
 * again, so a mistake in a route table cannot open a hole.
 */
#include "shoald/policy.h"

#include <string.h>

#include "lib/util/utf8.h"

struct rule {
    const char *name;           /* for messages */
    enum tenancy_role min_role; /* NONE: no project role grants it */
    bool owner_ok;              /* the owner may */
};

static const struct rule rules[POLICY_ACTION_COUNT] = {
    [POLICY_SUBMIT] = {"submit jobs to", TENANCY_ROLE_MEMBER, false},
    [POLICY_VIEW_JOB] = {"see jobs of", TENANCY_ROLE_VIEWER, true},
    [POLICY_CANCEL_JOB] = {"cancel jobs of", TENANCY_ROLE_ADMIN, true},
    [POLICY_VIEW_PROJECT] = {"see", TENANCY_ROLE_VIEWER, false},
    [POLICY_MANAGE_MEMBERS] = {"manage the members of", TENANCY_ROLE_ADMIN,
                               false},
    [POLICY_VIEW_USER] = {"see", TENANCY_ROLE_NONE, true},
    [POLICY_REVOKE_TOKENS] = {"revoke the tokens of", TENANCY_ROLE_NONE, true},
    [POLICY_ADMINISTER] = {"administer", TENANCY_ROLE_NONE, false},
    [POLICY_HIGH_PRIORITY] = {"give high priority to jobs of",
                              TENANCY_ROLE_ADMIN, false},
};

bool policy_allows(enum policy_action action, const struct policy_subject *s)
{
    if ((unsigned)action >= POLICY_ACTION_COUNT)
        return false;
    const struct rule *r = &rules[action];
    if (s->cluster_admin)
        return true;
    if (r->owner_ok && s->owner)
        return true;
    return r->min_role != TENANCY_ROLE_NONE && s->role >= r->min_role;
}

const char *policy_action_name(enum policy_action action)
{
    if ((unsigned)action >= POLICY_ACTION_COUNT)
        return "?";
    return rules[action].name;
}

static bool is_user(const struct api_caller *caller)
{
    return caller && caller->role == API_USER && caller->user;
}

enum tenancy_role policy_role(const struct tenancy *t,
                              const struct api_caller *caller,
                              const char *project)
{
    if (!is_user(caller) || !t || !project)
        return TENANCY_ROLE_NONE;
    return tenancy_role(t, project, caller->user);
}

static struct policy_subject subject_of(const struct tenancy *t,
                                        const struct api_caller *caller,
                                        const char *project, bool owner)
{
    struct policy_subject s = {
        .cluster_admin = is_user(caller) && caller->admin,
        .role = policy_role(t, caller, project),
        .owner = is_user(caller) && owner,
    };
    return s;
}

static bool owns_job(const struct api_caller *caller, const struct job *job)
{
    return is_user(caller) && job->spec.user &&
           strcmp(caller->user, job->spec.user) == 0;
}

/* The common refusal for project actions: says what role would do. */
static int refuse_project(const struct api_caller *caller,
                          enum policy_action action, enum tenancy_role role,
                          const char *project, struct sh_error *err)
{
    const struct rule *r = &rules[action];
    if (role == TENANCY_ROLE_NONE)
        return sh_errorf(err, SH_EFORBIDDEN,
                         "%s is not a member of project %s, so may not %s it; "
                         "a project admin or cluster admin can add you",
                         caller->user, project, r->name);
    return sh_errorf(err, SH_EFORBIDDEN,
                     "%s is a %s of project %s; it takes the %s role to %s it",
                     caller->user, tenancy_role_name(role), project,
                     tenancy_role_name(r->min_role), r->name);
}

/* Check a project action on an existing project. */
static int check_project(const struct tenancy *t,
                         const struct api_caller *caller,
                         enum policy_action action, const char *project,
                         struct sh_error *err)
{
    if (!is_user(caller))
        return sh_errorf(err, SH_EFORBIDDEN,
                         "only users may %s a project; this token is not a "
                         "user's",
                         rules[action].name);
    if (!project || !t || !tenancy_project_exists(t, project))
        return sh_errorf(err, SH_ENOTFOUND, "project %.*s does not exist",
                         UTF8_CUT(project ? project : "", 64));
    struct policy_subject s = subject_of(t, caller, project, false);
    if (policy_allows(action, &s))
        return 0;
    return refuse_project(caller, action, s.role, project, err);
}

int policy_can_submit(const struct tenancy *t, const struct api_caller *caller,
                      const char *project, struct sh_error *err)
{
    if (!is_user(caller))
        return sh_errorf(err, SH_EFORBIDDEN, "only users submit jobs");
    return check_project(t, caller, POLICY_SUBMIT, project, err);
}

int policy_can_prioritize(const struct tenancy *t,
                          const struct api_caller *caller, const char *project,
                          enum job_priority prio, struct sh_error *err)
{
    if (prio >= JOB_PRIO_NORMAL)
        return 0;
    if (!is_user(caller))
        return sh_errorf(err, SH_EFORBIDDEN, "only users set priorities");
    struct policy_subject s = subject_of(t, caller, project, false);
    if (policy_allows(POLICY_HIGH_PRIORITY, &s))
        return 0;
    return sh_errorf(err, SH_EFORBIDDEN,
                     "priority %s takes the admin role of project %s or a "
                     "cluster admin (%s is %s%s there); use normal or low",
                     job_priority_name(prio), project, caller->user,
                     s.role == TENANCY_ROLE_NONE ? "not a member" : "a ",
                     s.role == TENANCY_ROLE_NONE ? ""
                                                 : tenancy_role_name(s.role));
}

bool policy_can_see_env(const struct api_caller *caller, const struct job *job)
{
    return is_user(caller) && (caller->admin || owns_job(caller, job));
}

bool policy_can_see_env_stored(const struct api_caller *caller,
                               const char *user)
{
    return is_user(caller) &&
           (caller->admin || (user && strcmp(caller->user, user) == 0));
}

bool policy_can_view(const struct tenancy *t, const struct api_caller *caller,
                     const struct job *job)
{
    if (!is_user(caller))
        return false;
    struct policy_subject s =
        subject_of(t, caller, job->spec.project, owns_job(caller, job));
    return policy_allows(POLICY_VIEW_JOB, &s);
}

bool policy_can_view_stored(const struct tenancy *t,
                            const struct api_caller *caller, const char *user,
                            const char *project)
{
    struct job view;
    memset(&view, 0, sizeof(view));
    view.spec.user = (char *)user;
    view.spec.project = (char *)project;
    return policy_can_view(t, caller, &view);
}

int policy_can_cancel(const struct tenancy *t, const struct api_caller *caller,
                      const struct job *job, struct sh_error *err)
{
    if (!is_user(caller))
        return sh_errorf(err, SH_EFORBIDDEN, "only users cancel jobs");
    struct policy_subject s =
        subject_of(t, caller, job->spec.project, owns_job(caller, job));
    if (policy_allows(POLICY_CANCEL_JOB, &s))
        return 0;
    return sh_errorf(err, SH_EFORBIDDEN,
                     "job %llu belongs to %s; you may cancel only your own "
                     "jobs, or any job of a project you administer (you are "
                     "%s%s of project %s)",
                     (unsigned long long)job->id, job->spec.user,
                     s.role == TENANCY_ROLE_NONE ? "not a member" : "a ",
                     s.role == TENANCY_ROLE_NONE ? ""
                                                 : tenancy_role_name(s.role),
                     job->spec.project);
}

int policy_can_view_project(const struct tenancy *t,
                            const struct api_caller *caller,
                            const char *project, struct sh_error *err)
{
    return check_project(t, caller, POLICY_VIEW_PROJECT, project, err);
}

int policy_can_manage_members(const struct tenancy *t,
                              const struct api_caller *caller,
                              const char *project, struct sh_error *err)
{
    return check_project(t, caller, POLICY_MANAGE_MEMBERS, project, err);
}

static int check_self(const struct api_caller *caller,
                      enum policy_action action, const char *user,
                      struct sh_error *err)
{
    if (!is_user(caller))
        return sh_errorf(err, SH_EFORBIDDEN, "only users may %s users",
                         rules[action].name);
    struct policy_subject s = {
        .cluster_admin = caller->admin,
        .role = TENANCY_ROLE_NONE,
        .owner = user && strcmp(caller->user, user) == 0,
    };
    if (policy_allows(action, &s))
        return 0;
    return sh_errorf(err, SH_EFORBIDDEN,
                     "only %.*s and cluster admins may %s user %.*s",
                     UTF8_CUT(user ? user : "", 64), rules[action].name,
                     UTF8_CUT(user ? user : "", 64));
}

int policy_can_view_user(const struct api_caller *caller, const char *user,
                         struct sh_error *err)
{
    return check_self(caller, POLICY_VIEW_USER, user, err);
}

int policy_can_revoke_tokens(const struct api_caller *caller, const char *user,
                             struct sh_error *err)
{
    return check_self(caller, POLICY_REVOKE_TOKENS, user, err);
}
