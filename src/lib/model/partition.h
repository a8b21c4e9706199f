/* SPDX-License-Identifier: Apache-2.0 */
/* Partitions and QOS, as a cluster admin defines them for Slurm users'
 * `-p/--partition` and `--qos`. This module checks a request and makes the
 * canonical record the controller keeps (shoald/partitions.c) and the
 * store holds; it does no I/O.
 *
 * A partition record:
 *   {"name", "nodes": "all" | a constraint on node labels (job_place.h),
 *    "default_time"?: s, "max_time"?: s, "projects"?: [names],
 *    "default": bool, "created_ms"}
 * A QOS record:
 *   {"name", "priority": "high" | "normal" | "low", "max_time"?: s,
 *    "max_gpus_per_user"?: n, "created_ms"}
 */
#ifndef SHOAL_MODEL_PARTITION_H
#define SHOAL_MODEL_PARTITION_H

#include <jansson.h>
#include <stdint.h>

#include "lib/util/error.h"

#define PARTITIONS_MAX 64          /* partitions of a cluster */
#define QOS_MAX 64                 /* QOS of a cluster */
#define PARTITION_PROJECTS_MAX 256 /* projects one partition names */

/* A new canonical partition record from an API request, or NULL with
 * SH_EINVAL naming the field. */
json_t *partition_from_request(const json_t *req, int64_t now_ms,
                               struct sh_error *err);

/* A new canonical QOS record from an API request, or NULL with SH_EINVAL
 * naming the field. */
json_t *qos_from_request(const json_t *req, int64_t now_ms,
                         struct sh_error *err);

/* Whether a record the store gave back (kind "partition" or "qos") is a
 * canonical one. */
int partition_record_check(const json_t *rec, struct sh_error *err);
int qos_record_check(const json_t *rec, struct sh_error *err);

/* The partition's node selector as a constraint, or NULL for "all". */
const char *partition_selector(const json_t *rec);

/* constraint AND selector, in the constraint grammar (no parentheses:
 * each '|' branch of either gets the other's branches), into buf; -1 when
 * it does not fit. Either may be NULL. */
int partition_and_constraint(const char *constraint, const char *selector,
                             char *buf, size_t size);

#endif
