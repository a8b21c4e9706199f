/* SPDX-License-Identifier: Apache-2.0 */
/* GPU device nodes and which of them a job may open. A job's GPUs are
 * named to CUDA by CUDA_VISIBLE_DEVICES, which a job can change at will;
 * the fence is its devices cgroup (cgroup.h, cgroup_job_deny_devices),
 * which forbids the device nodes of every GPU of the node that the job was
 * not given (/dev/nvidiaN, N from NVML's minor number). nvidiactl,
 * nvidia-uvm and the MIG capability devices stay open: every CUDA program
 * needs them, and a MIG slice's isolation comes from its GPU instance.
 *
 * Simulated GPUs (simgpu) have no device nodes: with a simulation folder
 * the agent makes one character device per GPU there, DIR/nvidiaN, with a
 * major number that no driver of this host uses (so opening it reaches no
 * driver: ENXIO where allowed, EPERM where the cgroup forbids it), which
 * lets tests check the fence without GPUs. */
#ifndef SHOAL_AGENT_DEVICES_H
#define SHOAL_AGENT_DEVICES_H

#include <jansson.h>
#include <stdbool.h>

#include "agent/cgroup.h"
#include "lib/model/gpu.h"

/* The device node of one GPU of the node. */
struct gpu_device {
    char uuid[GPU_UUID_MAX];
    char path[300];
    struct cgroup_device dev;
};

struct gpu_devices {
    struct gpu_device dev[GPU_PER_NODE_MAX];
    int n;
};

/* Find the device node of each GPU (sim_dir NULL: /dev/nvidiaN; else
 * sim_dir/nvidiaN, made when missing). GPUs without a known minor number
 * or node are left out and logged. */
void gpu_devices_find(struct gpu_devices *d, const struct gpu_info *gpus,
                      int ngpus, const char *sim_dir);

/* The devices a run with the GPUs `work_gpus` (a JSON array of GPU or slice
 * UUIDs) must not open: those of every other GPU. Returns how many were
 * put in out (at most max). */
int gpu_devices_denied(const struct gpu_devices *d, const struct gpu_info *gpus,
                       int ngpus, const json_t *work_gpus,
                       struct cgroup_device *out, int max);

/* The device nodes of the GPUs a run was given, as a container sees them:
 * [{"path": "/dev/nvidiaN", "major", "minor"}] (container.h). New
 * reference. */
json_t *gpu_devices_container(const struct gpu_devices *d,
                              const struct gpu_info *gpus, int ngpus,
                              const json_t *work_gpus);

#endif
