/* SPDX-License-Identifier: Apache-2.0 */
/* The agent as a CSI container orchestrator, without Kubernetes (as Nomad
 * does it): it talks to a CSI node plugin over the plugin's unix socket
 * (gRPC, grpc.h; messages from csi/csi.proto) and asks it to stage a
 * volume once per node and to publish it once per run:
 *
 *   NodeGetCapabilities   does the plugin stage (STAGE_UNSTAGE_VOLUME)?
 *   NodeStageVolume       once per node and volume, at the staging path
 *   NodePublishVolume     per run, at a target path the shim binds into
 *                         the job's mount namespace
 *   NodeUnpublishVolume   when the run has ended
 *   NodeUnstageVolume     when the last run using it has ended
 *
 * A call is retried (3 times, backing off) only on UNAVAILABLE,
 * RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED; any other failure is final and
 * its gRPC status and message become the job's reason.
 *
 * m is the controller's mount entry for a csi volume (see mounts.h):
 *   {"name", "socket", "volume_id", "attributes": {...}, "fs_type"?,
 *    "mount_flags"?: [...], "readonly", ...} */
#ifndef SHOAL_AGENT_CSI_H
#define SHOAL_AGENT_CSI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Does the plugin want staging? -1 with why when it cannot be asked. */
int csi_stages(const json_t *m, char *why, size_t size);

int csi_stage(const json_t *m, const char *staging, char *why, size_t size);
int csi_unstage(const json_t *m, const char *staging, char *why, size_t size);
/* staging NULL when the plugin does not stage. */
int csi_publish(const json_t *m, const char *staging, const char *target,
                char *why, size_t size);
int csi_unpublish(const json_t *m, const char *target, char *why, size_t size);

/* Controller calls, on a controller plugin's socket (on the controller's
 * machine). CreateVolume: name is the idempotency key, capacity 0 when
 * unset, parameters an object of strings (NULL for none); on success
 * *volume_id (malloc'd) and *context (new object) are the plugin's. */
int csi_create_volume(const char *socket, const char *name, int64_t capacity,
                      bool readonly, const json_t *parameters, char **volume_id,
                      json_t **context, char *why, size_t size);
int csi_delete_volume(const char *socket, const char *volume_id, char *why,
                      size_t size);

/* Built with CSI support (protobuf-c and nghttp2 were found)? */
bool csi_available(void);

#endif
