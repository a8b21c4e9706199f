/* SPDX-License-Identifier: Apache-2.0 */
/* Private to the NVML backend (gpu_nvml.c, gpu_mig.c): the loaded library,
 * its resolved functions and the device handles. Not for other modules:
 * they use gpu.h.
 */
#ifndef SHOAL_AGENT_GPU_NVML_H
#define SHOAL_AGENT_GPU_NVML_H

#include <stdbool.h>

#include "agent/gpu.h"
#include "lib/gpu/nvml.h"

/* Every NVML function the backend may call: X(name, required). A missing
 * required one fails gpu_backend_create(); a missing optional one leaves
 * its data unknown (read path) or fails the operation that needs it (MIG
 * changes) with SH_EUNAVAILABLE. */
#define GPU_NVML_FUNCS(X)                                                      \
    X(nvmlInit_v2, 1)                                                          \
    X(nvmlShutdown, 1)                                                         \
    X(nvmlErrorString, 0)                                                      \
    X(nvmlDeviceGetCount_v2, 1)                                                \
    X(nvmlDeviceGetHandleByIndex_v2, 1)                                        \
    X(nvmlDeviceGetUUID, 1)                                                    \
    X(nvmlDeviceGetName, 1)                                                    \
    X(nvmlDeviceGetMemoryInfo, 1)                                              \
    X(nvmlDeviceGetUtilizationRates, 0)                                        \
    X(nvmlDeviceGetPciInfo_v3, 0)                                              \
    X(nvmlDeviceGetMinorNumber, 0)                                             \
    X(nvmlDeviceGetTopologyCommonAncestor, 0)                                  \
    X(nvmlDeviceGetNvLinkState, 0)                                             \
    X(nvmlDeviceGetNvLinkRemotePciInfo_v2, 0)                                  \
    X(nvmlDeviceGetMigMode, 0)                                                 \
    X(nvmlDeviceGetMaxMigDeviceCount, 0)                                       \
    X(nvmlDeviceGetMigDeviceHandleByIndex, 0)                                  \
    X(nvmlDeviceGetGpuInstanceId, 0)                                           \
    X(nvmlDeviceGetComputeInstanceId, 0)                                       \
    X(nvmlDeviceGetAttributes_v2, 0)                                           \
    X(nvmlDeviceSetMigMode, 0)                                                 \
    X(nvmlDeviceGetGpuInstanceProfileInfo, 0)                                  \
    X(nvmlDeviceGetGpuInstancePossiblePlacements_v2, 0)                        \
    X(nvmlDeviceCreateGpuInstance, 0)                                          \
    X(nvmlDeviceCreateGpuInstanceWithPlacement, 0)                             \
    X(nvmlDeviceGetGpuInstances, 0)                                            \
    X(nvmlGpuInstanceGetInfo, 0)                                               \
    X(nvmlGpuInstanceDestroy, 0)                                               \
    X(nvmlGpuInstanceGetComputeInstanceProfileInfo, 0)                         \
    X(nvmlGpuInstanceCreateComputeInstance, 0)                                 \
    X(nvmlGpuInstanceGetComputeInstances, 0)                                   \
    X(nvmlComputeInstanceDestroy, 0)

struct gpu_nvml_funcs {
#define GPU_NVML_FIELD(name, required) __typeof__(name) *name;
    GPU_NVML_FUNCS(GPU_NVML_FIELD)
#undef GPU_NVML_FIELD
};

struct gpu_nvml {
    void *dl;         /* dlopen handle */
    char lib[4096];   /* the path it was loaded from */
    bool initialised; /* nvmlInit_v2 succeeded */
    struct gpu_nvml_funcs f;
    int ndev;
    nvmlDevice_t dev[GPU_PER_NODE_MAX];
    bool groups_known;           /* group[] is filled */
    int group[GPU_PER_NODE_MAX]; /* NVLink group per device, -1 alone */
};

extern const struct gpu_ops gpu_nvml_ops;

/* Load lib (NULL: the default) and initialise NVML; see gpu_backend_create
 * for the errors. The result is the ctx for gpu_nvml_ops. */
struct gpu_nvml *gpu_nvml_create(const char *lib, struct sh_error *err);

/* Fill err with "<what>: <NVML's message> (NVML error N)" and a code that
 * fits rc; returns -1. */
int gpu_nvml_fail(const struct gpu_nvml *n, struct sh_error *err,
                  nvmlReturn_t rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The apply_mig operation (gpu_mig.c). */
int gpu_nvml_apply_mig(void *ctx, int index, const struct preset_layout *layout,
                       struct sh_error *err);

/* Read the MIG slices present on a GPU in MIG mode into g (gpu_mig.c).
 * Best effort: slices the driver does not describe are left out. */
void gpu_nvml_read_slices(struct gpu_nvml *n, nvmlDevice_t dev,
                          struct gpu_info *g);

#endif
