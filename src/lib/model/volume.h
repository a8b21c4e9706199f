/* SPDX-License-Identifier: Apache-2.0 */
/* Volumes: storage that jobs mount by name (`shoal submit -v NAME:/PATH`).
 * A volume is a controller object owned by one project (only that
 * project's jobs may mount it) or by the whole cluster (any project's
 * jobs). This module owns its fields, their limits and their canonical
 * JSON record, the form of the API and of the store:
 *
 *   {"name": "data", "kind": "host", "project": "vision"|null,
 *    "readonly": false, "host": {"path": "/srv/data"},
 *    "created_ms": N, "created_by": "alice"}
 *
 * Kinds:
 *   host  "host": {"path": "/srv/data"}: a folder present on every node,
 *         bound into the job.
 *   s3    "s3": {"endpoint": "https://s3.example.com", "bucket": "b",
 *         "prefix": "datasets/x"?, "region": "us-east-1"?, "secret": "name",
 *         "cache": false?}: an S3-compatible bucket (or a folder of it),
 *         mounted once per node with s3fs and bound into each job; the
 *         credentials are a secret's "access_key" and "secret_key"; readonly
 *         makes it a read-only dataset. "cache" keeps a node-local copy of
 *         what jobs read.
 * `nfs` and `csi` are known names that this version refuses with a clear
 * error until their drivers exist (an accepted volume always mounts or
 * fails the job with the reason; it is never silently ignored).
 *
 * It also owns the rule for where a job may mount a volume: an absolute
 * path, never "/" nor in the system's own folders (a volume bound over
 * /etc or /usr would feed a setuid program in the job whatever the volume
 * holds). Pure: no I/O. */
#ifndef SHOAL_MODEL_VOLUME_H
#define SHOAL_MODEL_VOLUME_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/util/error.h"

/* At most this many volumes in a cluster. */
#define VOLUMES_MAX 10000

enum volume_kind {
    VOLUME_HOST = 0,
    VOLUME_NFS,
    VOLUME_S3,
    VOLUME_CSI,
};

/* "host", "nfs", "s3", "csi"; and back (-1 with err for another name). */
const char *volume_kind_name(enum volume_kind k);
int volume_kind_from_name(const char *name, enum volume_kind *out,
                          struct sh_error *err);

/* Check a create request ({"name", "kind", "project"?, "readonly"?, and
 * "host" or "s3" as above}) and return the canonical record, with created_ms
 * and created_by set. Unknown fields, wrong types, bad names and paths are
 * SH_EINVAL; a kind this version cannot mount is SH_EINVAL naming it.
 * New reference, NULL with err. body is borrowed. */
json_t *volume_from_request(const json_t *body, const char *created_by,
                            int64_t now_ms, struct sh_error *err);

/* Check a record read back from the store the same way (a damaged record
 * is refused, not trusted). */
int volume_record_check(const json_t *rec, struct sh_error *err);

/* Accessors of a checked record. project NULL = cluster-wide. */
const char *volume_name(const json_t *rec);
const char *volume_project(const json_t *rec);
bool volume_readonly(const json_t *rec);
enum volume_kind volume_kind(const json_t *rec);
/* An s3 volume's secret name; NULL for other kinds. */
const char *volume_secret(const json_t *rec);

/* May a job mount a volume at path? 0, or SH_EINVAL naming the rule. */
int volume_mount_path_check(const char *path, struct sh_error *err);

#endif
