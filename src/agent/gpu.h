/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's GPU layer: find the node's GPUs, sample their load, say how
 * they are connected, and apply slicing layouts (MIG, time-slicing).
 *
 * A backend is an operations table (struct gpu_ops) behind an opaque
 * struct gpu_backend. The one real backend is NVML loaded with dlopen
 * (gpu_nvml.c, gpu_mig.c): the same code drives NVIDIA's libnvidia-ml.so.1
 * and simgpu's libsimgpu.so, which differ only in the path given to
 * gpu_backend_create(). A new backend implements struct gpu_ops and hands
 * it to gpu_backend_create_ops().
 *
 * Not thread-safe: one thread (the agent's loop) uses a backend at a time.
 * Time-sliced ("shared-N") layouts need no driver state: the backend does
 * not remember them, so gpu_discover() reports only MIG slices and the
 * caller re-applies its shared layout (gpu_set_shared) after discovery.
 */
#ifndef SHOAL_AGENT_GPU_H
#define SHOAL_AGENT_GPU_H

#include <stdbool.h>

#include "lib/model/gpu.h"
#include "lib/model/preset.h"
#include "lib/util/error.h"

/* The library gpu_backend_create(NULL, ...) loads. */
#define GPU_NVML_DEFAULT_LIB "libnvidia-ml.so.1"

struct gpu_backend;

/* A GPU backend. ctx is the backend's own state, owned by the backend
 * object and freed by destroy. Each function fills err on failure and
 * returns -1; none keeps a pointer argument after it returns. */
struct gpu_ops {
    const char *name;
    void (*destroy)(void *ctx);
    /* Allocate and fill *gpus (caller frees with free(); NULL when none). */
    int (*discover)(void *ctx, struct gpu_info **gpus, int *ngpus,
                    struct sh_error *err);
    /* Refresh util_pct and mem_used of gpus[0..ngpus). */
    int (*sample)(void *ctx, struct gpu_info *gpus, int ngpus,
                  struct sh_error *err);
    int (*link_between)(void *ctx, int a, int b, enum gpu_link *out,
                        struct sh_error *err);
    /* Make GPU `index` match a validated layout's MIG part: MIG mode on
     * with exactly its instances, or MIG off (layout->mig false). Roll
     * back on failure. May be NULL: the backend cannot change MIG. */
    int (*apply_mig)(void *ctx, int index, const struct preset_layout *layout,
                     struct sh_error *err);
};

/* Load NVML from lib_path (NULL: GPU_NVML_DEFAULT_LIB, the system's NVIDIA
 * driver library) with dlopen, resolve its functions and initialise it.
 * lib_path is borrowed for the call. Returns the backend (destroy with
 * gpu_backend_destroy), or NULL with err:
 *   SH_EUNAVAILABLE  NVML cannot be used on this machine: the library is
 *                    missing, or it reports that no driver is loaded. A node
 *                    configured to join without GPUs treats this as "zero
 *                    GPUs"; the message says which case it is.
 *   SH_EINTERNAL     the library lacks a function Shoal needs, or NVML
 *                    failed to initialise; the message names the function
 *                    and NVML's own error string.
 */
struct gpu_backend *gpu_backend_create(const char *lib_path,
                                       struct sh_error *err);

/* Wrap a backend implementation. ops is kept (static storage); ctx is taken
 * over: on failure ops->destroy(ctx) has been called. */
struct gpu_backend *gpu_backend_create_ops(const struct gpu_ops *ops, void *ctx,
                                           struct sh_error *err);

/* Shut NVML down, unload the library and free everything. NULL-safe; keeps
 * errno. Handles and slices read before stay valid as plain data. */
void gpu_backend_destroy(struct gpu_backend *be);

/* The backend's name ("nvml"); borrowed from the backend. */
const char *gpu_backend_name(const struct gpu_backend *be);

/* Read every GPU of the node: index, UUID, vendor name, short model, memory,
 * PCI bus id, MIG capability and mode, the MIG slices present now, a first
 * utilization sample and the NVLink group (GPUs joined by NVLink directly or
 * through NVSwitch share a group: the smallest index among them; -1 alone).
 * On success *gpus is a new array of *ngpus entries (caller frees it with
 * free(); NULL when there are no GPUs). Optional data a GPU or driver does
 * not provide (utilization in MIG mode, PCI, NVLink, MIG slices it cannot
 * read) is left unknown rather than failing. Errors: SH_EINTERNAL or
 * SH_EUNAVAILABLE (GPU lost) naming the GPU and the NVML call. */
int gpu_discover(struct gpu_backend *be, struct gpu_info **gpus, int *ngpus,
                 struct sh_error *err);

/* Refresh util_pct (-1 when the GPU cannot say, e.g. in MIG mode) and
 * mem_used of gpus[0..ngpus), found by their index. Cheap: two NVML calls
 * per GPU. All or nothing: on failure gpus is unchanged. gpus is borrowed
 * for the call. */
int gpu_sample(struct gpu_backend *be, struct gpu_info *gpus, int ngpus,
               struct sh_error *err);

/* How GPUs a and b (NVML indexes) are connected: SELF, NVLINK when they
 * share an NVLink group, else the PCIe topology level (GPU_LINK_UNKNOWN when
 * the driver cannot say). SH_EINVAL for an index out of range. */
int gpu_link_between(struct gpu_backend *be, int a, int b, enum gpu_link *out,
                     struct sh_error *err);

/* Apply a layout to one GPU and refresh *gpu from the device.
 *   MIG layout     MIG mode on, existing instances replaced by the layout's
 *                  (nothing is touched when the GPU already has exactly
 *                  these instances, so re-applying after a restart keeps
 *                  running jobs' slices).
 *   all-disabled   MIG off (when it was on); no slices.
 *   shared-N       MIG off, then N time-slices carrying the GPU's UUID.
 * The layout must be for gpu->model and pass preset_validate. On a failure
 * the GPU is rolled back to its previous layout and err says which NVML call
 * failed and why, and whether the rollback worked; *gpu is then unchanged.
 * Errors: SH_EINVAL (invalid layout, wrong model, GPU not MIG capable),
 * SH_EUNAVAILABLE (the library lacks MIG functions; a mode change waits for
 * a GPU reset), SH_ECONFLICT (GPU in use / out of resources), SH_EFORBIDDEN
 * (no permission), SH_EINTERNAL. gpu is borrowed for the call. */
int gpu_apply_layout(struct gpu_backend *be, struct gpu_info *gpu,
                     const struct preset_layout *layout, struct sh_error *err);

/* preset_expand(gpu->model, preset) then gpu_apply_layout(). */
int gpu_apply_preset(struct gpu_backend *be, struct gpu_info *gpu,
                     const char *preset, struct sh_error *err);

/* Replace gpu's slices by n time-slices (n in 1..GPU_SLICES_MAX, else
 * SH_EINVAL) of kind GPU_SLICE_SHARED, profile "shared/n", the GPU's own
 * UUID, mem_total/n bytes and share 1/n. No driver call. Fails on a GPU in
 * MIG mode (SH_ECONFLICT). */
int gpu_set_shared(struct gpu_info *gpu, int n, struct sh_error *err);

/* True when nvidia-cuda-mps-control is an executable file in one of the
 * directories of path (a PATH-style list, borrowed; NULL: $PATH). MPS then
 * can run on this node; Shoal does not start it. */
bool gpu_mps_available(const char *path);

#endif
