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
 * at a time without following links, with the job user's rights (a child
 * that became the user walks it, so an error tells only what the user
 * could see: another user's 0700 home answers "Permission denied"
 * whatever it holds). A missing folder is made by the user where the
 * user may make it; elsewhere (/srv, /data, another user's folder) the
 * rest of the path is made on a tmpfs laid over the deepest existing
 * folder in the job's mount namespace only, mirroring that folder's
 * entries by bind mounts, so nothing is made on the node and nothing is
 * left after the job. The folders made there are new (a name that
 * appears meanwhile fails the job; it is never bound over) and root's. The mount lands on the folder that walk opened. Every
 * volume is mounted nosuid,nodev, and a run with volumes gets
 * no_new_privs, so no setuid program in the job can be fooled by what a
 * volume holds. Needs root (the agent runs as root to switch users). */
#ifndef SHOAL_AGENT_MOUNTS_H
#define SHOAL_AGENT_MOUNTS_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "agent/user_open.h"

/* Whose rights make the mount points: creds (NULL: this process's own,
 * when the job runs as the agent's user), scratch (a folder of the
 * agent's, the run folder, where a tmpfs is filled before it moves into
 * place). What is made in the job's view stays root's, 0755. */
struct mount_user {
    const struct user_creds *creds;
    const char *scratch;
};

/* Mount the stages mounts need (in the node's namespace, under
 * stages_dir), enter a new mount namespace and bind every entry of mounts
 * (an array; NULL or empty does nothing). 0, or -1 with why (a sentence naming
 * the volume, for the job's reason) filled. On failure the namespace may hold
 * some of the mounts: the caller must not start the job. */
int mounts_enter(const json_t *mounts, const char *stages_dir,
                 const char *run_key, const struct mount_user *mu, char *why,
                 size_t size);

#endif
