/* SPDX-License-Identifier: Apache-2.0 */
/* What one run executes, computed from the controller's work entry: the
 * command (or the batch script), the environment of the contract
 * (ARCHITECTURE.md, "inside a job"), the user, the working directory and
 * the ranks. Pure: no I/O, so the contract is unit-tested. The result is the
 * launch description the shim reads: sent in the fork server's request
 * (forkserver.h), or launch.json in the run's folder without it. */
#ifndef SHOAL_AGENT_LAUNCH_H
#define SHOAL_AGENT_LAUNCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/model/gpu.h"
#include "lib/util/error.h"

struct launch_ctx {
    const char *node;       /* this node's name */
    const char *run_dir;    /* the run's folder (the script goes there) */
    const char *stages_dir; /* node-level mounts of volumes (stage.h) */
    bool as_root;           /* the agent runs as root: switch to the user */
    const char *cg_parent;  /* cgroup parent, NULL without cgroups */
    const struct gpu_info *gpus; /* this node's GPUs (for time-slices) */
    int ngpus;
    bool mps;                       /* MPS fences time-slices on this node */
    long long min_uid;              /* the shim refuses users below it ... */
    const char *const *allow_users; /* ... except these */
    int nallow_users;
    /* Runs in an image (container.h): */
    const char *image_cache_dir;
    uint64_t image_cache_size; /* bytes; 0 = no limit */
    uint64_t image_max_size;   /* an image's unpacked bytes; 0 = no limit */
    uint64_t image_max_files;  /* its unpacked entries; 0 = no limit */
    bool image_tls_verify;
    const json_t *container_devices; /* this run's GPUs + control devices */
    const json_t *container_libs;    /* the driver's libraries */
    /* Steps (steps.h); NULL: none on this node. */
    const char *step_socket;  /* SHOAL_STEP_SOCKET */
    const char *step_bin_dir; /* srun and scontrol: first on PATH */
    const char *step_program; /* shoal-step, the step server of a batch
                                 job's other nodes */
};

/* Build the launch description from a work entry (see api_agent.c):
 *   {"argv": [...], "env": ["K=V", ...], "workdir": "/x"|null,
 *    "user": "alice"|null, "tasks": N, "node_rank": r, "world_size": W,
 *    "script": "<text>"|null, "cgroup_parent": ..., "cgroup_key": ...,
 *    "min_uid": N, "allow_users": ["name", ...],
 *    "mounts": [...] (the work entry's, see mounts.h; absent when none),
 *    "stages_dir": "/..." (with mounts),
 *    "container": {...} (a job with an image: see container.h)}
 * The per-task variables RANK and LOCAL_RANK are added by the shim for each
 * task from node_rank and tasks. New reference, or NULL with err. work is
 * borrowed. */
json_t *launch_from_work(const json_t *work, const struct launch_ctx *ctx,
                         struct sh_error *err);

/* The cgroup key of a run: "job-<id>-<attempt>". */
void launch_cgroup_key(uint64_t id, int attempt, char *buf, size_t size);

/* ---- the stop deadline (SHOAL_PREEMPT_DEADLINE, SHOAL_PREEMPT_GRACE) ----
 * Every job gets SHOAL_PREEMPT_GRACE (the grace, seconds, between SIGTERM
 * and SIGKILL) and SHOAL_PREEMPT_DEADLINE, the path of the file
 * LAUNCH_DEADLINE_FILE in its run folder. The file does not exist while
 * the run runs; when the agent stops the run (preemption, cancel, time
 * limit), it creates it atomically, root's and read-only to the job,
 * BEFORE the SIGTERM, holding the Unix second of the SIGKILL on one line
 * ("1764640000\n"). */
#define LAUNCH_DEADLINE_FILE "preempt-deadline"
#define LAUNCH_DEFAULT_GRACE_S 10

/* The grace of a work entry (borrowed): its "grace_s" when an integer of 0
 * or more, else LAUNCH_DEFAULT_GRACE_S. */
int launch_grace_s(const json_t *work);

/* When a stop asked at now_ms (Unix ms) with grace_s seconds ends in
 * SIGKILL: now_ms + grace_s, rounded up to a whole second, so the second
 * the job reads is the moment of the SIGKILL and the job never gets less
 * than its grace. */
int64_t launch_kill_at_ms(int64_t now_ms, int grace_s);

/* The deadline file's text for a SIGKILL at kill_at_ms: the Unix second
 * (rounded down) and a newline, into buf. The length, or -1 when size is
 * too small. */
int launch_deadline_text(int64_t kill_at_ms, char *buf, size_t size);

#endif
