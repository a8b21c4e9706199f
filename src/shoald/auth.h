/* SPDX-License-Identifier: Apache-2.0 */
/* Identity: users and their API tokens, node agents' tokens, and the cluster
 * join token. Tokens are random (libsodium), shown once, and stored only as
 * BLAKE2b hashes; a token names its kind, so an agent token cannot act as a
 * user and a user token cannot act as an agent. A token may expire; an
 * expired token is refused like an unknown one. Each token has a short id
 * (the first hex digits of its hash) so it can be listed and revoked
 * without ever showing the token again.
 *
 * Users carry the cluster admin flag, per-user limits and a default
 * project. Project roles are not here: see tenancy.h. Who may call which
 * function is decided by policy.c and the handlers, not here.
 */
#ifndef SHOAL_SHOALD_AUTH_H
#define SHOAL_SHOALD_AUTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/util/error.h"

struct auth;
struct store;
struct store_batch;

/* Who is calling, from the bearer token. */
enum api_role {
    API_ANON = 0, /* no token */
    API_USER,     /* a user token */
    API_AGENT,    /* a node agent's token */
    API_JOIN,     /* the cluster join token (agents registering) */
};

struct api_caller {
    enum api_role role;
    const char *user;     /* API_USER: the user name; borrowed from auth */
    bool admin;           /* API_USER: cluster admin */
    const char *node;     /* API_AGENT: the node name; borrowed from auth */
    const char *token_id; /* API_JOIN: the join token's id; borrowed */
};

/* "shoal_" + 43 characters of URL-safe base64 (32 random bytes). */
#define AUTH_TOKEN_LEN 49
/* A token's id: the first hex digits of its hash. */
#define AUTH_TOKEN_ID_LEN 12
/* Deliberate bounds of the per-user limits (0 = no limit). */
#define AUTH_MAX_GPUS_MAX 1000000
#define AUTH_MAX_JOBS_MAX 1000000
#define AUTH_MAX_PENDING_MAX 10000000
/* The most users a cluster may have, so a runaway script cannot exhaust
 * the controller's memory. */
#define AUTH_USERS_MAX 100000
/* The most user tokens one user may hold at once. */
#define AUTH_TOKENS_PER_SUBJECT_MAX 100
/* The subject of the cluster's default join token (state/join.token) and
 * of the join tokens an admin creates (shoal node token create). */
#define AUTH_JOIN_DEFAULT "cluster"
#define AUTH_JOIN_CREATED "enroll"
/* The most created join tokens at once, and the most uses of one. */
#define AUTH_JOIN_TOKENS_MAX 1000
#define AUTH_JOIN_USES_MAX 100000

enum auth_token_kind {
    AUTH_TOKEN_USER = 0,
    AUTH_TOKEN_AGENT,
    AUTH_TOKEN_JOIN,
};

struct auth_user_limits {
    int max_gpus;       /* running GPUs; 0 = no limit */
    int max_jobs;       /* running jobs; 0 = no limit */
    int64_t max_time_s; /* longest time limit; 0 = no limit */
    int max_pending;    /* pending jobs (array tasks each); 0 = the
                           cluster's --max-pending-per-user */
};

struct auth_user {
    const char *name;
    bool admin;
    int64_t created_ms;
    struct auth_user_limits limits;
    const char *default_project; /* NULL until set */
};

struct auth *auth_create(struct sh_error *err);
void auth_destroy(struct auth *a);

/* Replace everything in memory with what the store holds. */
int auth_load(struct auth *a, struct store *st, struct sh_error *err);

/* Resolve a bearer token to a caller (role API_ANON when unknown, revoked or
 * expired). caller's strings are borrowed from a until the next change. */
void auth_identify(struct auth *a, const char *token, int64_t now_ms,
                   struct api_caller *caller);

/* Whether any user exists (a cluster is initialised). */
bool auth_initialised(const struct auth *a);

/* Create a user. Fails with SH_ECONFLICT when it exists, SH_EINVAL for a bad
 * name. The change is added to batch and made in memory. */
int auth_user_create(struct auth *a, struct store_batch *batch,
                     const char *name, bool admin, int64_t now_ms,
                     struct sh_error *err);

/* Look up a user; NULL when absent. Borrowed until the next change. */
const struct auth_user *auth_user_get(const struct auth *a, const char *name);

/* Issue a new token of kind for subject (a user name or a node name) with an
 * optional expiry (0 = never). The token text is written to out (shown once,
 * never stored). */
int auth_token_issue(struct auth *a, struct store_batch *batch,
                     enum auth_token_kind kind, const char *subject,
                     int64_t now_ms, int64_t expires_ms,
                     char out[AUTH_TOKEN_LEN + 1], struct sh_error *err);

/* Revoke every token of kind for subject; returns how many, or -1 on out
 * of memory (then some may be revoked already: the batch must not commit,
 * which the caller ensures by failing the request). */
int auth_token_revoke_all(struct auth *a, struct store_batch *batch,
                          enum auth_token_kind kind, const char *subject);

/* ---- listing and changing users ---- */

/* Iterate users in name order: start with NULL, NULL after the last.
 * Borrowed until the next change. */
const struct auth_user *auth_user_next(const struct auth *a,
                                       const struct auth_user *prev);
int auth_user_count(const struct auth *a);

/* Delete a user and all its tokens. SH_ENOTFOUND. The caller checks jobs,
 * memberships and that an admin remains (auth_admin_remains). Pointers to
 * the user's strings (an api_caller's user) dangle afterwards. */
int auth_user_delete(struct auth *a, struct store_batch *batch,
                     const char *name, struct sh_error *err);

/* Make a user a cluster admin or not. SH_ENOTFOUND. */
int auth_user_set_admin(struct auth *a, struct store_batch *batch,
                        const char *name, bool admin, struct sh_error *err);

/* Replace a user's limits. SH_ENOTFOUND; SH_EINVAL out of range
 * (max_gpus 0..AUTH_MAX_GPUS_MAX, max_jobs 0..AUTH_MAX_JOBS_MAX, max_time_s
 * 0..366 days; 0 = no limit). lim is borrowed for the call. */
int auth_user_set_limits(struct auth *a, struct store_batch *batch,
                         const char *name, const struct auth_user_limits *lim,
                         struct sh_error *err);

/* Set (project a valid name) or clear (NULL) a user's default project.
 * Whether the project exists is the caller's check. */
int auth_user_set_default_project(struct auth *a, struct store_batch *batch,
                                  const char *name, const char *project,
                                  struct sh_error *err);

/* Clear the default project of every user whose default is project (when
 * the project is deleted); returns how many, -1 on out of memory. */
int auth_users_forget_project(struct auth *a, struct store_batch *batch,
                              const char *project, struct sh_error *err);

/* Whether some cluster admin would still hold a valid (unexpired) user
 * token if user lost its admin role or its tokens: all of them when
 * token_id is NULL, else only that one. user NULL: as things are. Guards
 * against locking every admin out of the cluster. */
bool auth_admin_remains(const struct auth *a, int64_t now_ms, const char *user,
                        const char *token_id);

/* ---- listing and revoking single tokens ---- */

struct auth_token_info {
    char id[AUTH_TOKEN_ID_LEN + 1];
    enum auth_token_kind kind;
    const char *subject;
    int64_t created_ms;
    int64_t expires_ms; /* 0 = never */
    int max_uses;       /* join tokens: registrations allowed; 0 = any */
    int uses;           /* join tokens: registrations made */
};

/* Issue a join token that enrolls new nodes (subject AUTH_JOIN_CREATED),
 * valid until expires_ms (0 = never) for max_uses registrations (0 = no
 * limit). SH_EINVAL out of range, SH_ETOOLARGE past AUTH_JOIN_TOKENS_MAX. */
int auth_join_issue(struct auth *a, struct store_batch *batch, int64_t now_ms,
                    int64_t expires_ms, int max_uses,
                    char out[AUTH_TOKEN_LEN + 1], struct sh_error *err);

/* A node enrolled with the join token of id: count the use; a token used
 * up is deleted. */
int auth_join_used(struct auth *a, struct store_batch *batch, const char *id,
                   struct sh_error *err);

/* Iterate every join token (default and created), in no particular order:
 * start with NULL. Borrowed until the next change. */
const struct auth_token_info *
auth_join_next(const struct auth *a, const struct auth_token_info *prev);

/* Iterate the tokens of kind for subject (in no particular order): start
 * with NULL. Borrowed until the next change. */
const struct auth_token_info *
auth_token_next(const struct auth *a, enum auth_token_kind kind,
                const char *subject, const struct auth_token_info *prev);

/* Revoke one token of kind for subject by its id. SH_ENOTFOUND. */
int auth_token_revoke(struct auth *a, struct store_batch *batch,
                      enum auth_token_kind kind, const char *subject,
                      const char *id, struct sh_error *err);

/* The stored facts of a token given its text (just issued); NULL when
 * unknown. Borrowed until the next change. */
const struct auth_token_info *auth_token_info_of(const struct auth *a,
                                                 const char *token);

/* How many tokens of kind subject holds (expired ones included). */
int auth_token_count(const struct auth *a, enum auth_token_kind kind,
                     const char *subject);

#endif
