/* SPDX-License-Identifier: Apache-2.0 */
/* Identity: users and their API tokens, node agents' tokens, and the cluster
 * join token. Tokens are random (libsodium), shown once, and stored only as
 * BLAKE2b hashes; a token names its kind, so an agent token cannot act as a
 * user and a user token cannot act as an agent.
 */
#ifndef SHOAL_SHOALD_AUTH_H
#define SHOAL_SHOALD_AUTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/util/error.h"
#include "shoald/api.h"

struct auth;
struct store;
struct store_batch;

/* "shoal_" + 43 characters of URL-safe base64 (32 random bytes). */
#define AUTH_TOKEN_LEN 49

enum auth_token_kind {
    AUTH_TOKEN_USER = 0,
    AUTH_TOKEN_AGENT,
    AUTH_TOKEN_JOIN,
};

struct auth_user_limits {
    int max_gpus;        /* running GPUs; 0 = no limit */
    int max_jobs;        /* running jobs; 0 = no limit */
    int64_t max_time_s;  /* longest time limit; 0 = no limit */
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

/* Revoke every token of kind for subject; returns how many. */
int auth_token_revoke_all(struct auth *a, struct store_batch *batch,
                          enum auth_token_kind kind, const char *subject);

#endif
