/* SPDX-License-Identifier: Apache-2.0 */
/* Who may do what: every permission check of the API is made here, in one
 * place, so the rules can be read together and tested together.
 *
 * Two layers. policy_allows() is the rule table itself, a pure function of
 * (action, cluster admin?, role in the project, owner?), which the unit
 * tests walk role by role. The policy_can_*() functions look up the facts
 * for one caller and one object (the caller's role in the job's project,
 * whether the job is theirs) and give an error a person understands.
 *
 * Routes marked API_ACCESS_ADMIN (nodes, teams, quotas, users, presets)
 * are checked by api.c before a handler runs; the rule table lists them as
 * POLICY_ADMINISTER so the whole picture is here.
 */
#ifndef SHOAL_SHOALD_POLICY_H
#define SHOAL_SHOALD_POLICY_H

#include <stdbool.h>

#include "lib/model/job.h"
#include "shoald/auth.h"
#include "shoald/tenancy.h"

enum policy_action {
    POLICY_SUBMIT = 0,     /* submit a job to the project */
    POLICY_VIEW_JOB,       /* see a job, its logs */
    POLICY_CANCEL_JOB,     /* cancel a job */
    POLICY_VIEW_PROJECT,   /* see a project, its quotas and members */
    POLICY_MANAGE_MEMBERS, /* add, change, remove a project's members */
    POLICY_VIEW_USER,      /* see a user's record, limits and tokens */
    POLICY_REVOKE_TOKENS,  /* revoke a user's tokens */
    POLICY_ADMINISTER,     /* nodes, teams, projects, quotas, users */
    POLICY_HIGH_PRIORITY,  /* give a job of the project a priority above
                              normal */
    POLICY_ACTION_COUNT,
};

/* The facts about one caller and one object. */
struct policy_subject {
    bool cluster_admin;     /* the caller is a cluster admin */
    enum tenancy_role role; /* the caller's role in the object's project */
    bool owner;             /* the object is the caller's own (its job, its
                               own user record) */
};

/* The rule table: may a caller with these facts do action? Pure. */
bool policy_allows(enum policy_action action, const struct policy_subject *s);

/* The action's name for messages ("submit", "cancel jobs in"). */
const char *policy_action_name(enum policy_action action);

/* May caller submit to project? SH_ENOTFOUND when the project does not
 * exist, SH_EFORBIDDEN for non-members and viewers (and non-users). All
 * arguments borrowed for the call. */
int policy_can_submit(const struct tenancy *t, const struct api_caller *caller,
                      const char *project, struct sh_error *err);

/* May caller give a job of project priority prio? Normal and low: anyone
 * who may submit; above normal: the project's admins and cluster admins
 * (SH_EFORBIDDEN naming the rule). */
int policy_can_prioritize(const struct tenancy *t,
                          const struct api_caller *caller, const char *project,
                          enum job_priority prio, struct sh_error *err);

/* May caller see the values of the job's environment (env,
 * container_env)? Its owner and cluster admins; others who may see the
 * job see the names only. */
bool policy_can_see_env(const struct api_caller *caller, const struct job *job);
/* The same for a job known only by its owner (a row of the history). */
bool policy_can_see_env_stored(const struct api_caller *caller,
                               const char *user);

/* May caller see this job (show, list, logs)? Own jobs, jobs of projects
 * where the caller holds any role, and every job for cluster admins. */
bool policy_can_view(const struct tenancy *t, const struct api_caller *caller,
                     const struct job *job);

/* policy_can_view for a job of user and project known only by its row in
 * the store (the history). */
bool policy_can_view_stored(const struct tenancy *t,
                            const struct api_caller *caller, const char *user,
                            const char *project);

/* May caller cancel this job? Own jobs, any job of a project the caller
 * administers, every job for cluster admins. SH_EFORBIDDEN otherwise. */
int policy_can_cancel(const struct tenancy *t, const struct api_caller *caller,
                      const struct job *job, struct sh_error *err);

/* May caller see project (its quotas and members)? SH_ENOTFOUND when it
 * does not exist, SH_EFORBIDDEN for non-members. */
int policy_can_view_project(const struct tenancy *t,
                            const struct api_caller *caller,
                            const char *project, struct sh_error *err);

/* May caller add, change or remove members of project? Cluster admins and
 * the project's admins. SH_ENOTFOUND / SH_EFORBIDDEN. */
int policy_can_manage_members(const struct tenancy *t,
                              const struct api_caller *caller,
                              const char *project, struct sh_error *err);

/* May caller see user's record, limits and token list? The user and
 * cluster admins. SH_EFORBIDDEN. */
int policy_can_view_user(const struct api_caller *caller, const char *user,
                         struct sh_error *err);

/* May caller revoke user's tokens? The user and cluster admins. */
int policy_can_revoke_tokens(const struct api_caller *caller, const char *user,
                             struct sh_error *err);

/* The caller's role in project (TENANCY_ROLE_NONE for non-users). */
enum tenancy_role policy_role(const struct tenancy *t,
                              const struct api_caller *caller,
                              const char *project);

#endif
