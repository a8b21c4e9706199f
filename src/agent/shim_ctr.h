/* SPDX-License-Identifier: Apache-2.0 */
/* The shim's side of a run in an image: make the image's bundle ready
 * (image.h), lay a per-run overlay over its rootfs, write the OCI config
 * (container.h) and give the crun command line of each task. Each task
 * is `crun run` of a container of its own (shoal-KEY-T) over the same
 * rootfs, /dev/shm and IPC namespace (the node's, as for a bare job), so
 * the ranks of a node share the image's files and shared memory as if in
 * one container, and no task depends on another still running. crun runs
 * with --cgroup-manager=disabled, from the process the shim already moved
 * into the job's cgroup. Runs in the shim's own mount namespace (the
 * overlay vanishes with it). */
#ifndef SHOAL_AGENT_SHIM_CTR_H
#define SHOAL_AGENT_SHIM_CTR_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "agent/container.h"

struct shim_ctr;

/* Pull and unpack launch's "container" image, mount the run's rootfs.
 * dirfd is the run folder (progress and image.json are written there).
 * NULL with why (the job's reason) on failure. */
struct shim_ctr *shim_ctr_prepare(const json_t *launch, const char *run_dir,
                                  int dirfd, const char *id, char *why,
                                  size_t size);

/* Open each container mount's source as the job's user (uid, gid, groups)
 * and bind what was opened onto a root-only path of the run, which crun
 * then gets: a source the user cannot reach fails the run (why), and a
 * link swapped in after the check changes nothing. 0 or -1. */
int shim_ctr_check_mounts(struct shim_ctr *c, uid_t uid, gid_t gid,
                          const gid_t *groups, int ngroups, char *why,
                          size_t size);

/* The command line that starts task t with proc (its env holds the task's
 * ranks): NULL-terminated, owned by c until the next call. */
char **shim_ctr_task_argv(struct shim_ctr *c, int t,
                          const struct container_proc *proc, char *why,
                          size_t size);

/* Remove the container's state and release the image. NULL-safe. */
void shim_ctr_destroy(struct shim_ctr *c);

#endif
