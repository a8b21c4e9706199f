/* SPDX-License-Identifier: Apache-2.0 */
/* Private to simgpu (simgpu.c, simgpu_config.c, simgpu_mig.c): the
 * simulated GPUs, their MIG instances and the library state. NVML's API is
 * global by design (nvmlInit_v2 takes no context), so simgpu keeps one
 * process-wide state, `sim`, behind one mutex: the deliberate exception to
 * "no global mutable state", confined to this library.
 */
#ifndef SHOAL_SIMGPU_H
#define SHOAL_SIMGPU_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "lib/gpu/nvml.h"
#include "lib/model/gpu.h"
#include "lib/model/preset.h"

#define SIM_EXPORT __attribute__((visibility("default")))
#define SIM_MAGIC 0x51d6f00du
#define SIM_GIS 14 /* GPU instance ids 0..13, one per placement */
#define SIM_CIS 8  /* compute instances per GPU instance */
#define SIM_FAILS_MAX 32
#define SIM_CONFIG_MAX (1 << 20) /* bytes */
#define SIM_SM_PER_SLICE 16

/* Handle objects. NVML hands out pointers to these; each starts with a
 * magic number so a stale or foreign handle is refused, not followed. */
struct nvmlDevice_st {
    unsigned int magic;
    int gpu; /* index in sim.gpus */
    int gi;  /* -1 for the whole GPU, else the GPU instance id */
    int ci;  /* compute instance id of a MIG device */
};

struct nvmlGpuInstance_st {
    unsigned int magic;
    int gpu;
    int gi;
};

struct nvmlComputeInstance_st {
    unsigned int magic;
    int gpu;
    int gi;
    int ci;
};

struct sim_ci {
    bool used;
    unsigned int profile; /* compute profile id (= NVML profile index) */
    unsigned int slices;
    char uuid[GPU_UUID_MAX];
    struct nvmlComputeInstance_st h;
    struct nvmlDevice_st dev; /* the MIG device of this instance */
};

struct sim_gi {
    bool used;
    const struct preset_profile *prof;
    unsigned int start; /* first memory slice */
    struct nvmlGpuInstance_st h;
    struct sim_ci ci[SIM_CIS];
};

/* Values a test may change while the library runs (re-read from the
 * config file when it changes). */
struct sim_live {
    unsigned int util; /* percent */
    unsigned long long mem_used_mib;
};

/* One simulated GPU as the config describes it. */
struct sim_spec {
    char model[GPU_MODEL_MAX];
    char name[GPU_NAME_MAX];
    char uuid[GPU_UUID_MAX];
    unsigned long long mem_mib;
    bool mig_capable;
    int numa, pci_switch, bridge;
    int nvl_group; /* -1: no NVLink */
    struct sim_live live;
};

struct sim_fail {
    char fn[64]; /* NVML function name */
    int gpu;     /* only calls about this GPU; -1 any */
    int after;   /* calls that succeed first */
    int count;   /* failures then; -1 forever */
    nvmlReturn_t error;
    int calls, failed;
};

struct sim_config {
    int ngpu;
    struct sim_spec gpus[GPU_PER_NODE_MAX];
    int nfails;
    struct sim_fail fails[SIM_FAILS_MAX];
};

struct sim_gpu {
    struct sim_spec spec;
    const struct preset_model *pm; /* MIG profiles; NULL without MIG */
    int nvl_size;                  /* GPUs in its NVLink group */
    int nvl_peer;                  /* the other GPU of a 2-GPU group */
    unsigned int mig_mode;
    unsigned int gen; /* MIG UUID generation counter */
    struct nvmlDevice_st h;
    struct sim_gi gi[SIM_GIS];
};

struct sim_state {
    pthread_mutex_t lock;
    int refs; /* nvmlInit_v2 calls not shut down */
    char config_path[4096];
    char state_path[4200];
    struct stat config_st;   /* the config file as last read */
    int last_util, last_mem; /* sweep detection, see sim_poll */
    int ngpu;
    struct sim_gpu *gpus;
    int nfails;
    struct sim_fail fails[SIM_FAILS_MAX];
    char detail[256]; /* why the last nvmlInit_v2 failed */
    nvmlReturn_t detail_rc;
};

extern struct sim_state sim;

/* simgpu_config.c */
/* Parse the config file at path into *cfg. Returns 0, or an NVML error with
 * a message in why. */
nvmlReturn_t sim_config_load(const char *path, struct sim_config *cfg,
                             char *why, size_t whylen);
/* Name <-> NVML return code ("NVML_ERROR_IN_USE"); -1 when unknown. */
int sim_return_from_name(const char *name);
void sim_uuid(const char *prefix, const char *salt, unsigned int n, char *buf,
              size_t size);

/* Every NVML function: lock, check init and fault injection, run the body
 * with rc, unlock, return rc. */
#define SIM_BEGIN(fn, gpu_index)                                               \
    nvmlReturn_t rc;                                                           \
    pthread_mutex_lock(&sim.lock);                                             \
    rc = sim_enter(fn, gpu_index);                                             \
    if (rc != NVML_SUCCESS)                                                    \
        goto out;
#define SIM_END                                                                \
    out:                                                                       \
    pthread_mutex_unlock(&sim.lock);                                           \
    return rc;

/* The GPU index a handle refers to, for fault rules; -1 when invalid. */
static inline int sim_dev_gpu(nvmlDevice_t dev)
{
    return dev && dev->magic == SIM_MAGIC ? dev->gpu : -1;
}

/* simgpu.c */
/* Check the library is initialised, apply fault injection for fn about
 * gpu (-1: none), return NVML_SUCCESS to go on. Lock held. */
nvmlReturn_t sim_enter(const char *fn, int gpu);
/* The GPU of a whole-GPU handle, or NULL. Lock held. */
struct sim_gpu *sim_gpu_of(nvmlDevice_t dev);

/* simgpu_mig.c */
void sim_state_load(void);
void sim_state_save(void);
/* A MIG device handle's instance, or NULL. Lock held. */
struct sim_ci *sim_mig_ci(nvmlDevice_t dev, struct sim_gi **gi);

#endif
