/* SPDX-License-Identifier: Apache-2.0 */
/* Node-level mounts ("stages") that jobs' volumes are bound from: an S3
 * bucket (s3fs) or an NFS export (the kernel client where the node has
 * one, else shoal-nfs-fuse over libnfs) is mounted once per node, however
 * many jobs of the node use it, and unmounted when the last of them has
 * ended.
 *
 * A stage lives in <state>/stages/<stage>/ (root's, 0700): "mnt" (the
 * mount point), "lock" (flock: one shim mounts while others wait),
 * "passwd" (the credentials, 0600, for s3fs), "log" (what s3fs said) and
 * "cache" (when the volume caches). <stage> is "<volume>.<created_ms>":
 * a volume deleted and made again gets a new stage.
 *
 * The reference count is not stored: a stage is in use while a run that is
 * not over names it in its work entry, which the agent knows from its runs
 * folder, also after a restart (it re-adopts runs). So the count survives
 * an agent restart by construction, and stage_release_unused() is called
 * whenever a run ends and when the agent starts. */
#ifndef SHOAL_AGENT_STAGE_H
#define SHOAL_AGENT_STAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Make sure the stage of mount m (an s3 or nfs entry, see mounts.h) is
 * mounted and working; source gets the folder to bind from. Blocks up to
 * about 20 s while the mount starts. 0, or -1 with why. */
int stage_acquire(const char *stages_dir, const json_t *m, char *source,
                  size_t size, char *why, size_t wsize);

/* Unmount and remove every stage under stages_dir that in_use (an array of
 * stage names) does not name. A stage being mounted right now is left
 * alone. Returns how many were released. */
int stage_release_unused(const char *stages_dir, const json_t *in_use);

/* A CSI volume's publish target for one run:
 * <stages_dir>/<stage>/publish/<run_key>. The caller creates it. */
void stage_csi_target(const char *stages_dir, const json_t *m,
                      const char *run_key, char *buf, size_t size);

/* Ask the plugin to unpublish a run's CSI volumes (its work entry's
 * mounts) and remove their targets. Called when the run has ended. */
void stage_csi_unpublish_run(const char *stages_dir, const json_t *mounts,
                             const char *run_key);

/* Is dir a mount point (of a working, hung or dead mount)? Read from the
 * mount table: nothing of the mount itself is touched, so a hung server
 * cannot block the caller. */
bool stage_is_mountpoint(const char *dir);

#endif
