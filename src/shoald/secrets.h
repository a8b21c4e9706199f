/* SPDX-License-Identifier: Apache-2.0 */
/* Secrets: named sets of KEY=VALUE pairs (an S3 volume's access_key and
 * secret_key, say) that a project's admins store and the controller hands
 * only to the agents that mount them. Values are encrypted at rest with
 * libsodium's secretbox under a key kept in <state>/secrets.key (0600,
 * made on first start), so the database and its backups never hold them in
 * clear. No API answer and no log line carries a value: listings show the
 * names of the keys only.
 *
 * Stored as objects of kind "secret":
 *   {"name", "project": P|null, "keys": ["access_key", ...],
 *    "nonce": base64, "box": base64, "created_ms", "created_by"}
 */
#ifndef SHOAL_SHOALD_SECRETS_H
#define SHOAL_SHOALD_SECRETS_H

#include <jansson.h>
#include <stdint.h>

#include "lib/util/error.h"

#define SECRETS_MAX 10000
#define SECRET_ENTRIES_MAX 16
#define SECRET_VALUE_MAX 4096

struct secrets;
struct store;
struct store_batch;

/* Read (or make, the first time) <state_dir>/secrets.key. */
struct secrets *secrets_create(const char *state_dir, struct sh_error *err);
void secrets_destroy(struct secrets *s); /* NULL-safe */

int secrets_load(struct secrets *s, struct store *st, struct sh_error *err);

/* Secret names are per project (project NULL: the cluster-wide ones): the
 * same name in two projects is two secrets, and one project's names never
 * collide with another's. */

/* A secret's record without its values (name, project, keys, created_*),
 * NULL when unknown. Borrowed until the next change. */
const json_t *secrets_get(const struct secrets *s, const char *project,
                          const char *name);
/* Every record in name order, without values. New reference. */
json_t *secrets_list(const struct secrets *s);

/* Store a new secret. data is an object of 1..SECRET_ENTRIES_MAX string
 * values (up to SECRET_VALUE_MAX bytes, no NUL) under names valid as
 * identifiers. SH_EINVAL for bad input, SH_ECONFLICT when the name is
 * taken in that project (or among the cluster-wide ones). Borrowed
 * arguments. */
int secrets_add(struct secrets *s, struct store_batch *batch, const char *name,
                const char *project, const json_t *data, const char *created_by,
                int64_t now_ms, struct sh_error *err);
/* The secret a name means to project: the project's own, else the
 * cluster-wide one of that name; NULL when neither. Borrowed. */
const json_t *secrets_resolve(const struct secrets *s, const char *project,
                              const char *name);

int secrets_delete(struct secrets *s, struct store_batch *batch,
                   const char *project, const char *name, struct sh_error *err);

/* The values of a secret, decrypted: a new object, NULL with err when the
 * secret is unknown or cannot be opened (the key file changed). */
json_t *secrets_open(const struct secrets *s, const char *project,
                     const char *name, struct sh_error *err);

/* The credentials for registry host (host[:port]) a job of project pulls
 * with: a secret of the project, else of the whole cluster, whose values
 * are registry=HOST, username and password. A new object {secret,
 * registry, username, password}, NULL when none. */
json_t *secrets_registry_auth(const struct secrets *s, const char *project,
                              const char *host);

#endif
