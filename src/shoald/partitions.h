/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster's partitions and QOS (see lib/model/partition.h for their
 * records): in-memory tables owned by the controller's loop, mirrored in
 * the store as objects of kind "partition" and "qos". Every change is
 * validated whole, added to the open batch and made in memory in the same
 * call.
 *
 * Also what they mean for a job at submission (partitions_apply): the
 * partition (the one named, else the default one when there is one)
 * restricts the job's nodes (its selector is ANDed into the job's
 * constraint), gives its default time limit and caps it, and may be kept
 * for some projects; the QOS gives the job its priority class and caps
 * its time limit. Who may create and delete them is the API's business
 * (api_partitions.c: cluster admins). */
#ifndef SHOAL_SHOALD_PARTITIONS_H
#define SHOAL_SHOALD_PARTITIONS_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/util/error.h"

struct partitions;
struct jobtab;
struct store;
struct store_batch;
struct job_spec;

/* The two kinds of record the table holds. */
enum partitions_kind { PARTITIONS_PARTITION = 0, PARTITIONS_QOS };

struct partitions *partitions_create(struct sh_error *err);
void partitions_destroy(struct partitions *p); /* NULL-safe */

/* Replace the tables with what the store holds; unchanged on failure. */
int partitions_load(struct partitions *p, struct store *st,
                    struct sh_error *err);

/* A record, NULL when unknown. Borrowed until the next change. */
const json_t *partitions_get(const struct partitions *p,
                             enum partitions_kind kind, const char *name);
/* Every record of a kind in name order, as a new JSON array. */
json_t *partitions_list(const struct partitions *p, enum partitions_kind kind);

/* Add a checked record (partition_from_request, qos_from_request).
 * SH_ECONFLICT when the name is taken or (a partition) another is the
 * default; SH_ETOOLARGE past the limit. rec is borrowed. */
int partitions_add(struct partitions *p, struct store_batch *batch,
                   enum partitions_kind kind, json_t *rec,
                   struct sh_error *err);
/* SH_ENOTFOUND when unknown. The caller checks that no job uses it. */
int partitions_delete(struct partitions *p, struct store_batch *batch,
                      enum partitions_kind kind, const char *name,
                      struct sh_error *err);

/* QOS into a new submission (before its owner and priority rights are
 * checked, so a QOS's class passes the same checks as --priority):
 * unknown names are refused listing the valid ones. */
int partitions_apply_qos(const struct partitions *p, struct job_spec *spec,
                         struct sh_error *err);

/* The partition into a new submission whose project is known: its name
 * (the default one when none is given), nodes, time limits and projects.
 * SH_EINVAL for an unknown name (listing the valid ones), SH_EFORBIDDEN
 * for a project the partition is not for, SH_EQUOTA for a time limit past
 * the partition's or the QOS's. */
int partitions_apply_partition(const struct partitions *p,
                               struct job_spec *spec, struct sh_error *err);

/* How many pending or running jobs name a partition or QOS (for
 * delete); the first one's id in *first. */
int partitions_users(const struct jobtab *jobs, enum partitions_kind kind,
                     const char *name, unsigned long long *first);

#endif
