/* SPDX-License-Identifier: Apache-2.0 */
/* Tenants: teams, the projects they hold, who belongs to each project with
 * which role, and the GPU quotas of teams and projects. In-memory tables
 * owned by the controller's loop, mirrored in the store as objects of kinds
 * "team", "project" and "member". Every change is validated whole, then
 * added to the open batch and made in memory in the same call.
 *
 * Not here: users and tokens (auth.c), who may do what (policy.c), usage
 * accounting, and enforcing quotas (the scheduling engine, fed by engine.c
 * through the read interface below).
 *
 * Quotas. A team and a project each hold up to TENANCY_QUOTAS_MAX entries,
 * one per GPU model plus one for "any" model, in whole GPUs:
 *   guaranteed  GPUs it is always entitled to (0..TENANCY_GPUS_MAX);
 *   limit       how far it may grow by borrowing idle GPUs (guaranteed ..
 *               TENANCY_GPUS_MAX), or TENANCY_UNLIMITED.
 * A team's guarantee is a pool that its projects' guarantees are carved
 * from: for each entry of the team (its model, or "any"), the guarantees of
 * the team's projects that fall in it (the project entry of the same model,
 * or, when the team has no entry for that model, any project entry that is
 * then counted against the team's "any" entry) add up to at most the team's
 * guarantee. A project entry no team entry covers may only guarantee 0.
 */
#ifndef SHOAL_SHOALD_TENANCY_H
#define SHOAL_SHOALD_TENANCY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/util/error.h"
#include "shoald/shoald.h"

struct tenancy;
struct store;
struct store_batch;

/* The largest GPU amount of a guarantee or a limit. */
#define TENANCY_GPUS_MAX INT64_C(1000000)
/* A limit that does not limit. */
#define TENANCY_UNLIMITED INT64_C(-1)
/* Quota entries per team or project (the engine's SCHED_QUOTAS_MAX). */
#define TENANCY_QUOTAS_MAX 16
/* Deliberate bounds on the tables, so a script gone wrong cannot exhaust
 * the controller's memory. */
#define TENANCY_TEAMS_MAX 10000
#define TENANCY_PROJECTS_MAX 100000
#define TENANCY_MEMBERS_MAX 100000 /* per project */
/* The team and project every new cluster starts with; every user is a
 * member of the project unless an admin removes them. */
#define TENANCY_DEFAULT_TEAM "default"
#define TENANCY_DEFAULT_PROJECT "default"

/* A user's role in one project, ordered: each role may do what the ones
 * before it may. */
enum tenancy_role {
    TENANCY_ROLE_NONE = 0, /* not a member */
    TENANCY_ROLE_VIEWER,   /* sees the project's jobs and logs */
    TENANCY_ROLE_MEMBER,   /* also submits, and cancels own jobs */
    TENANCY_ROLE_ADMIN,    /* also cancels any job, manages members */
};

/* One quota entry. model NULL = any GPU model. */
struct tenancy_quota {
    const char *model;
    int64_t guaranteed;
    int64_t limit; /* TENANCY_UNLIMITED = none */
};

/* A team as the read interface shows it. Every pointer is borrowed from the
 * tenancy until its next change (or tenancy_load). */
struct tenancy_team {
    const char *name;
    int64_t created_ms;
    const struct tenancy_quota *quotas;
    int nquotas;
    int nprojects;
};

/* A project as the read interface shows it; borrowed like a team. */
struct tenancy_project {
    const char *name;
    const char *team;
    const char *idle_policy; /* none|warn|cancel|preempt; NULL = default */
    int64_t created_ms;
    const struct tenancy_quota *quotas;
    int nquotas;
    int nmembers;
};

/* One membership; borrowed like a team. */
struct tenancy_member {
    const char *project;
    const char *user;
    enum tenancy_role role;
};

/* ---- lifecycle ---- */

/* An empty tenancy. NULL with SH_EINTERNAL on out of memory. */
struct tenancy *tenancy_create(struct sh_error *err);
/* Free everything; NULL-safe, preserves errno. */
void tenancy_destroy(struct tenancy *t);

/* Replace every table with what the store holds (used at startup and after
 * a failed commit). On failure the tables are left as they were. st is
 * borrowed for the call. */
int tenancy_load(struct tenancy *t, struct store *st, struct sh_error *err);

/* Check the invariants (names, quota ranges, team pools, counts); for the
 * unit tests. Returns false and fills err on the first broken one. */
bool tenancy_check_invariants(const struct tenancy *t, struct sh_error *err);

/* ---- read interface (for the API, the policy and the scheduler bridge) ----
 * Iteration is in name order: start with NULL, NULL after the last. */

const struct tenancy_team *tenancy_team_next(const struct tenancy *t,
                                             const struct tenancy_team *prev);
const struct tenancy_team *tenancy_team_get(const struct tenancy *t,
                                            const char *name);
int tenancy_team_count(const struct tenancy *t);

const struct tenancy_project *
tenancy_project_next(const struct tenancy *t,
                     const struct tenancy_project *prev);
const struct tenancy_project *tenancy_project_get(const struct tenancy *t,
                                                  const char *name);
bool tenancy_project_exists(const struct tenancy *t, const char *name);
int tenancy_project_count(const struct tenancy *t);

/* A user's role in a project; TENANCY_ROLE_NONE when either is unknown. */
enum tenancy_role tenancy_role(const struct tenancy *t, const char *project,
                               const char *user);

/* The members of one project in user name order (start with NULL). */
const struct tenancy_member *
tenancy_member_next(const struct tenancy *t, const char *project,
                    const struct tenancy_member *prev);

/* "none", "viewer", "member", "admin", and back (-1 when unknown). */
const char *tenancy_role_name(enum tenancy_role role);
int tenancy_role_from_name(const char *name, enum tenancy_role *out);

/* ---- quota helpers (pure) ---- */

/* Check a list of entries: models valid and distinct, at most
 * TENANCY_QUOTAS_MAX, 0 <= guaranteed <= limit <= TENANCY_GPUS_MAX (or no
 * limit). what names the owner in messages ("project vision"). */
int tenancy_quotas_validate(const struct tenancy_quota *q, int n,
                            const char *what, struct sh_error *err);

/* One change to one entry of a list (the CLI's set-quota). */
struct tenancy_quota_change {
    const char *model; /* NULL = the "any" entry */
    bool set_guaranteed;
    int64_t guaranteed;
    bool set_limit;
    int64_t limit; /* TENANCY_UNLIMITED = none */
    bool remove;   /* drop the entry instead */
};

/* Apply chg to the n entries of cur into out (room for TENANCY_QUOTAS_MAX;
 * out's model pointers borrow from cur and chg). A new entry starts at
 * guaranteed 0 and no limit. *nout is the new count. The result is not
 * validated here. SH_ENOTFOUND when removing an absent entry, SH_EINVAL
 * when the list is full. */
int tenancy_quota_apply(const struct tenancy_quota *cur, int n,
                        const struct tenancy_quota_change *chg,
                        struct tenancy_quota *out, int *nout,
                        struct sh_error *err);

/* The entries as a JSON array of {"gpu_model": M|null, "guaranteed": N,
 * "limit": N|null}, the form of the API and of the store. New reference. */
json_t *tenancy_quotas_to_json(const struct tenancy_quota *q, int n);

/* Parse that form strictly (unknown fields, wrong types and too many
 * entries are SH_EINVAL) into out (room for TENANCY_QUOTAS_MAX); ranges are
 * checked by tenancy_quotas_validate(). out's strings borrow from v. */
int tenancy_quotas_from_json(const json_t *v, struct tenancy_quota *out, int *n,
                             struct sh_error *err);

/* ---- changes ----
 * Each validates everything first (nothing changes on failure), then adds
 * its store writes to batch and changes memory. Strings and arrays are
 * borrowed for the call; the tenancy keeps copies. Names must satisfy
 * job_ident_valid(). Users are not checked here: the caller checks them
 * against auth. */

/* SH_ECONFLICT when it exists. */
int tenancy_team_create(struct tenancy *t, struct store_batch *batch,
                        const char *name, const struct tenancy_quota *q, int n,
                        int64_t now_ms, struct sh_error *err);
/* SH_ENOTFOUND; SH_ECONFLICT while the team holds projects. */
int tenancy_team_delete(struct tenancy *t, struct store_batch *batch,
                        const char *name, struct sh_error *err);
/* Replace the team's entries. SH_ECONFLICT when its projects' guarantees
 * would no longer fit. */
int tenancy_team_set_quotas(struct tenancy *t, struct store_batch *batch,
                            const char *name, const struct tenancy_quota *q,
                            int n, struct sh_error *err);

/* SH_ECONFLICT when it exists; SH_ENOTFOUND for an unknown team; SH_EINVAL
 * when its guarantees do not fit the team's (the message names both). */
int tenancy_project_create(struct tenancy *t, struct store_batch *batch,
                           const char *name, const char *team,
                           const struct tenancy_quota *q, int n, int64_t now_ms,
                           struct sh_error *err);
/* Delete a project and its memberships. The caller checks its jobs. */
int tenancy_project_delete(struct tenancy *t, struct store_batch *batch,
                           const char *name, struct sh_error *err);
/* Replace the project's entries; SH_EINVAL when they do not fit the team. */
int tenancy_project_set_quotas(struct tenancy *t, struct store_batch *batch,
                               const char *name, const struct tenancy_quota *q,
                               int n, struct sh_error *err);
/* Move a project to another team; SH_EINVAL when its guarantees do not fit
 * there. */
/* The idle-GPU policy of a project ("none", "warn", "cancel", "preempt";
 * NULL = the controller's default). SH_EINVAL for another name. */
int tenancy_project_set_idle_policy(struct tenancy *t,
                                    struct store_batch *batch, const char *name,
                                    const char *policy, struct sh_error *err);

/* A project's idle policy, or NULL (default, or no such project). */
const char *tenancy_idle_policy(const struct tenancy *t, const char *project);

int tenancy_project_set_team(struct tenancy *t, struct store_batch *batch,
                             const char *name, const char *team,
                             struct sh_error *err);

/* Give user role in project (adding or changing the membership). role must
 * not be TENANCY_ROLE_NONE. */
int tenancy_member_set(struct tenancy *t, struct store_batch *batch,
                       const char *project, const char *user,
                       enum tenancy_role role, struct sh_error *err);
/* SH_ENOTFOUND when user is not a member. */
int tenancy_member_remove(struct tenancy *t, struct store_batch *batch,
                          const char *project, const char *user,
                          struct sh_error *err);
/* Remove every membership of user (when the user is deleted). */
int tenancy_user_forget(struct tenancy *t, struct store_batch *batch,
                        const char *user, struct sh_error *err);

/* The rules of deleting across tables (DELETE /v1/projects/NAME and
 * /v1/users/NAME), these two taking the whole controller: a project
 * without pending or running jobs and without volumes leaves the tenancy
 * and every user's default; a user without such jobs, and not the last
 * admin with a valid token, leaves its projects and the users. Refused
 * with SH_ECONFLICT (saying why), else both changes join the open batch. */
int tenancy_project_remove(struct shoald *d, const char *name,
                           struct sh_error *err);
int tenancy_user_remove(struct shoald *d, const char *name,
                        struct sh_error *err);

/* For a new cluster: the team and project "default" (no quotas). */
int tenancy_init_defaults(struct tenancy *t, struct store_batch *batch,
                          int64_t now_ms, struct sh_error *err);

#endif
