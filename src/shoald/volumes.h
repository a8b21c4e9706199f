/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster's volumes (see lib/model/volume.h for a volume's fields): an
 * in-memory table owned by the controller's loop, mirrored in the store as
 * objects of kind "volume". Every change is validated whole, added to the
 * open batch and made in memory in the same call.
 *
 * Also the rule for using one: a job may mount a volume of its own project
 * or a cluster-wide one, and nothing else; and what the agent is told to
 * mount for a job (volumes_mounts). Who may create and delete volumes is
 * the API's business (api_volumes.c). */
#ifndef SHOAL_SHOALD_VOLUMES_H
#define SHOAL_SHOALD_VOLUMES_H

#include <jansson.h>

#include "lib/util/error.h"

struct volumes;
struct store;
struct store_batch;
struct job_spec;
struct secrets;

/* NULL with SH_EINTERNAL on out of memory. */
struct volumes *volumes_create(struct sh_error *err);
void volumes_destroy(struct volumes *v); /* NULL-safe */

/* Replace the table with what the store holds; unchanged on failure. */
int volumes_load(struct volumes *v, struct store *st, struct sh_error *err);

int volumes_count(const struct volumes *v);
/* A volume's record, NULL when unknown. Borrowed until the next change. */
const json_t *volumes_get(const struct volumes *v, const char *name);
/* Every record in name order, as a new JSON array (records shared). */
json_t *volumes_list(const struct volumes *v);

/* Add a checked record (volume_from_request). SH_ECONFLICT when the name
 * is taken, SH_ETOOLARGE past VOLUMES_MAX. rec is borrowed. */
int volumes_add(struct volumes *v, struct store_batch *batch, json_t *rec,
                struct sh_error *err);
/* SH_ENOTFOUND when unknown. The caller checks that no job uses it. */
int volumes_delete(struct volumes *v, struct store_batch *batch,
                   const char *name, struct sh_error *err);

/* How many volumes project owns; *first (when not NULL) gets one of
 * their names (borrowed). */
int volumes_owned_by(const struct volumes *v, const char *project,
                     const char **first);

/* May a job of spec->project mount each of its volumes? SH_EINVAL for an
 * unknown volume, SH_EFORBIDDEN for another project's. */
int volumes_check_job(const struct volumes *v, const struct job_spec *spec,
                      struct sh_error *err);

/* The first volume that may use secret (project's; NULL: a cluster-wide
 * one, which any volume naming it may), or NULL. */
const char *volumes_using_secret(const struct volumes *v, const char *project,
                                 const char *secret);

/* What the agent mounts for a job, in the job's order (see
 * agent/mounts.h): {"name", "kind", "path", "readonly"} and per kind
 *   host  "source": the host path
 *   s3    "stage": "<name>.<created_ms>" (one node-level mount per volume
 *         version), "endpoint", "bucket", "prefix"?, "region"?, "cache",
 *         "access_key", "secret_key" (opened from the secret)
 * A volume that cannot be given (deleted meanwhile, its secret unopenable)
 * is {"name", "path", "error": reason}, so the agent fails the run with
 * the reason. New reference. */
json_t *volumes_mounts(const struct volumes *v, const struct secrets *secrets,
                       const struct job_spec *spec);

#endif
