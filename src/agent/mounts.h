/* SPDX-License-Identifier: Apache-2.0 */
/* A run's volumes, mounted by the shim into a private mount namespace
 * before the job's tasks start: the job sees each volume at the path it
 * asked for, nobody else sees it, and the mounts vanish with the job's
 * last process.
 *
 * The launch description carries them (from the controller's work entry):
 *   "mounts": [{"name", "kind", "path", "readonly", "source"}, ...]
 * Drivers by kind: `host` binds "source", a folder on this node; `s3`
 * and `nfs` mount the bucket or export once per node (stage.h: s3fs; the
 * kernel NFS client or shoal-nfs-fuse) and bind that; `csi` asks the
 * volume's CSI node plugin to stage it once per node and to publish it for
 * this run (run_key, "<id>.<attempt>"), and binds what it published.
 * An entry with "error" fails the run with that reason (the controller
 * could not give the volume).
 *
 * What a job controls is hostile: the mount path is walked one component
 * at a time without following links and created (root's, 0755) where
 * missing, and the mount lands on the folder that walk opened. Every
 * volume is mounted nosuid,nodev, and a run with volumes gets
 * no_new_privs, so no setuid program in the job can be fooled by what a
 * volume holds. Needs root (the agent runs as root to switch users). */
#ifndef SHOAL_AGENT_MOUNTS_H
#define SHOAL_AGENT_MOUNTS_H

#include <jansson.h>
#include <stddef.h>

/* Mount the stages mounts need (in the node's namespace, under
 * stages_dir), enter a new mount namespace and bind every entry of mounts
 * (an array; NULL or empty does nothing). 0, or -1 with why (a sentence naming
 * the volume, for the job's reason) filled. On failure the namespace may hold
 * some of the mounts: the caller must not start the job. */
int mounts_enter(const json_t *mounts, const char *stages_dir,
                 const char *run_key, char *why, size_t size);

#endif
