/* SPDX-License-Identifier: Apache-2.0 */
/* The node agent's context. One loop thread owns it; a second thread only
 * long-polls the controller for work (link.c) and hands each answer over
 * through a mailbox. Its modules, one line each, are the table in
 * doc/design/agent.md ("Modules").
 */
#ifndef SHOAL_AGENT_AGENT_H
#define SHOAL_AGENT_AGENT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "agent/devices.h"
#include "lib/model/gpu.h"
#include "lib/model/node.h"
#include "lib/util/error.h"

struct loop;
struct client;
struct gpu_backend;
struct cgroup_ctx;
struct runs;
struct steps;
struct link;

#define AGENT_ALLOW_USERS_MAX 16

struct agent_config {
    const char *controller; /* URL, or URL,URL,... (HA) */
    char join_token[256];   /* "" when joining is not possible */
    const char *name;       /* node name */
    const char *address;    /* NULL: the address that reaches the
                               controller */
    const char *state_dir;
    const char *nvml_lib; /* NULL: libnvidia-ml.so.1 */
    bool allow_no_gpus;   /* join with zero GPUs when NVML is missing */
    struct node_label labels[NODE_LABELS_MAX];
    int nlabels;
    int cpus;     /* 0: detect */
    uint64_t mem; /* 0: detect */
    /* Kept for the system: jobs get what is offered less these. */
    int reserve_cpus;
    uint64_t reserve_mem;
    int64_t max_pids; /* pids.max of every job (0: none) */
    int heartbeat_ms;
    bool stop_jobs_on_exit;
    long long min_job_uid; /* jobs never run as a uid below, except: */
    const char *allow_job_users[AGENT_ALLOW_USERS_MAX];
    int nallow_job_users;
    const char *sim_device_dir;  /* NULL: GPU device nodes are /dev/nvidiaN */
    const char *image_cache_dir; /* NULL: <state>/images (image.h) */
    uint64_t image_cache_size;   /* bytes; 0 = no limit */
    uint64_t image_max_size;     /* an image's unpacked bytes; 0 = no limit */
    uint64_t image_max_files;    /* an image's unpacked entries; 0 = none */
    bool image_tls_insecure;     /* registries without TLS verification */
    char self_exe[PATH_MAX];     /* this program, to start shims */
};

struct agent {
    struct agent_config cfg;
    struct loop *loop;
    struct link *link;
    struct runs *runs;
    struct steps *steps;     /* srun's steps (steps.h); NULL: none */
    struct gpu_backend *gpu; /* NULL: no GPUs */
    struct gpu_info *gpus;
    int ngpus;
    struct gpu_devices gpu_devs; /* device nodes of the GPUs */
    struct cgroup_ctx *cg;       /* NULL: no enforcement (logged once) */
    char cluster_id[33]; /* the controller's; "" before the first join */
    char cg_parent[200]; /* "shoal/<cluster id>/<node>" */
    int cpus;
    uint64_t mem;
    char address[NODE_ADDR_MAX];
    bool mps;               /* nvidia-cuda-mps-control is installed */
    json_t *slice_errors;   /* slicing failures to report */
    json_t *container_libs; /* the driver's libraries (container.h) */
    char image_cache[PATH_MAX];
    int signal_fd; /* SIGINT, SIGTERM, SIGCHLD (main.c); -1 before */
    bool stopping;
};

/* The controller told its cluster id (registration): remember it in the
 * state folder and set up job cgroups if that waited for it (main.c). */
void agent_cluster_joined(struct agent *a, const char *id);

#endif
