/* SPDX-License-Identifier: Apache-2.0 */
/* simgpu: a stand-in for NVIDIA's libnvidia-ml.so.1 on machines without
 * GPUs. It defines exactly the NVML functions Shoal's agent calls (declared
 * in src/lib/gpu/nvml.h, so the signatures are checked), with NVML's return
 * codes, over GPUs described by a JSON file. It is not a general NVML
 * emulator: functions the agent does not call are absent, as from an old
 * driver.
 *
 * Config: the file named by $SIMGPU_CONFIG, read at nvmlInit_v2.
 *
 *   Compact form (what `shoal up` writes):
 *     {"count": 8, "model": "H100-80GB", "uuid_prefix": "node1"}
 *   Full form (every key optional; a per-GPU key overrides the top level,
 *   and top-level util / mem_used_mib / name / memory_mib / mig / model /
 *   uuid may also be lists with one value per GPU):
 *     {
 *       "uuid_prefix": "node1",    seed of the GPU UUIDs (default "simgpu")
 *       "count": 2,                GPUs, 0..64 (default 1, or len(gpus))
 *       "model": "A100-80GB",      short model (default H100-80GB)
 *       "util": 35,                GPU utilization percent
 *       "mem_used_mib": 1024,      memory in use
 *       "nvlink": "all",           "all" | "pairs" | "none" | [[0,1],[2,3]]
 *                                  (default: all for SXM models, else none)
 *       "numa_nodes": 2,           GPUs split evenly over NUMA nodes
 *       "gpus_per_switch": 2,      consecutive GPUs behind one PCIe switch
 *       "gpus": [{"model": ..., "name": "NVIDIA ...", "memory_mib": 81559,
 *                 "uuid": "GPU-...", "mig": true, "util": 0,
 *                 "mem_used_mib": 0, "numa": 0, "switch": 0, "bridge": 0}],
 *       "fail": {"nvmlDeviceCreateGpuInstanceWithPlacement":
 *                {"after": 2, "count": 1, "gpu": 0,
 *                 "error": "NVML_ERROR_INSUFFICIENT_RESOURCES"}}
 *     }
 *   Known models (vendor name, memory, MIG profiles): A100-40GB, A100-80GB,
 *   H100-80GB, H200-141GB (MIG capable), V100-16GB, V100-32GB, A10-24GB,
 *   L4-24GB, L40S-48GB, RTX-4090-24GB. Any other "Family-NNGB" becomes
 *   "NVIDIA Family" with NN GiB and no MIG (dashes become spaces when that
 *   reads back as the same model: RTX-3090-24GB is "NVIDIA RTX 3090").
 *   UUIDs are derived from uuid_prefix and the index, so nodes with
 *   different prefixes get different, stable UUIDs.
 *   Topology: same "switch" -> NVML_TOPOLOGY_SINGLE, same "bridge" ->
 *   HOSTBRIDGE, same "numa" -> NODE, else SYSTEM. NVLink groups of two are
 *   direct links; larger groups go through a simulated NVSwitch.
 *   Fault injection: the named function succeeds `after` times, then fails
 *   `count` times (default 1; -1 forever) with `error`; "gpu" limits the
 *   rule to calls about one GPU. Counters restart when the file is re-read.
 *
 * Live changes: util and mem_used_mib (and the fail rules) are re-read when
 * the file changes (inode, size, mtime or ctime), checked with one stat()
 * at the start of each sweep over the GPUs by nvmlDeviceGetUtilizationRates
 * or nvmlDeviceGetMemoryInfo. Replace the file atomically (write + rename).
 * The GPU list itself is read only by nvmlInit_v2.
 *
 * MIG state (mode, instances, their UUIDs) persists in "<config>.state",
 * like a real GPU's layout outlives the process that made it.
 */
#include "simgpu/simgpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sim_state sim = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const struct {
    nvmlReturn_t rc;
    const char *msg;
} messages[] = {
    {NVML_SUCCESS, "Success"},
    {NVML_ERROR_UNINITIALIZED, "Uninitialized"},
    {NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument"},
    {NVML_ERROR_NOT_SUPPORTED, "Not Supported"},
    {NVML_ERROR_NO_PERMISSION, "Insufficient Permissions"},
    {NVML_ERROR_ALREADY_INITIALIZED, "Already Initialized"},
    {NVML_ERROR_NOT_FOUND, "Not Found"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded"},
    {NVML_ERROR_TIMEOUT, "Timeout"},
    {NVML_ERROR_GPU_IS_LOST, "GPU is lost"},
    {NVML_ERROR_RESET_REQUIRED, "GPU requires reset"},
    {NVML_ERROR_IN_USE, "In use by another client"},
    {NVML_ERROR_MEMORY, "Insufficient Memory"},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, "Insufficient resources"},
    {NVML_ERROR_INVALID_STATE, "Invalid state"},
    {NVML_ERROR_UNKNOWN, "Unknown Error"},
};

SIM_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    /* The reason for a failed nvmlInit_v2 (a missing or malformed config)
     * rides on its code: the caller asks right after the failure. */
    if (sim.detail[0] && result == sim.detail_rc)
        return sim.detail;
    for (size_t i = 0; i < sizeof(messages) / sizeof(messages[0]); i++) {
        if (messages[i].rc == result)
            return messages[i].msg;
    }
    return "Unknown Error";
}

/* ---- Library state ---------------------------------------------------- */

nvmlReturn_t sim_enter(const char *fn, int gpu)
{
    if (sim.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    for (int i = 0; i < sim.nfails; i++) {
        struct sim_fail *f = &sim.fails[i];
        if (strcmp(f->fn, fn) != 0 || (f->gpu >= 0 && f->gpu != gpu))
            continue;
        if (++f->calls > f->after && (f->count < 0 || f->failed < f->count)) {
            f->failed++;
            return f->error;
        }
    }
    return NVML_SUCCESS;
}

struct sim_gpu *sim_gpu_of(nvmlDevice_t dev)
{
    if (!dev || dev->magic != SIM_MAGIC || dev->gi >= 0 || dev->gpu < 0 ||
        dev->gpu >= sim.ngpu)
        return NULL;
    return &sim.gpus[dev->gpu];
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
           a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
           a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static void take_fails(const struct sim_config *cfg)
{
    sim.nfails = cfg->nfails;
    memcpy(sim.fails, cfg->fails, sizeof(sim.fails));
}

/* Re-read the live values when the config file changed. A sweep over the
 * GPUs asks for GPU 0 (or a lower index than last time) first, so one
 * stat() per sweep and function: `last` remembers the previous index. */
static void sim_poll(int *last, int gpu)
{
    struct stat st;
    bool sweep = gpu <= *last;
    *last = gpu;
    if (!sweep || stat(sim.config_path, &st) < 0 ||
        same_file(&st, &sim.config_st))
        return;
    struct sim_config *cfg = malloc(sizeof(*cfg));
    char why[256];
    /* A file caught half-written fails to parse: keep the old values and
     * look again at the next sweep. */
    if (cfg && sim_config_load(sim.config_path, cfg, why, sizeof(why)) ==
                   NVML_SUCCESS) {
        sim.config_st = st;
        for (int i = 0; i < sim.ngpu && i < cfg->ngpu; i++)
            sim.gpus[i].spec.live = cfg->gpus[i].live;
        take_fails(cfg);
    }
    free(cfg);
}

static void build_gpus(const struct sim_config *cfg)
{
    for (int i = 0; i < cfg->ngpu; i++) {
        struct sim_gpu *g = &sim.gpus[i];
        g->spec = cfg->gpus[i];
        g->pm = g->spec.mig_capable ? preset_model_find(g->spec.model) : NULL;
        g->h = (struct nvmlDevice_st){SIM_MAGIC, i, -1, -1};
        g->nvl_peer = -1;
        for (int k = 0; k < cfg->ngpu; k++) {
            if (g->spec.nvl_group >= 0 &&
                cfg->gpus[k].nvl_group == g->spec.nvl_group) {
                g->nvl_size++;
                if (k != i)
                    g->nvl_peer = k;
            }
        }
    }
}

static nvmlReturn_t init_locked(void)
{
    const char *path = getenv("SIMGPU_CONFIG");
    struct sim_config *cfg = NULL;
    nvmlReturn_t rc;

    sim.detail[0] = '\0';
    if (!path || !*path) {
        rc = NVML_ERROR_DRIVER_NOT_LOADED;
        snprintf(sim.detail, sizeof(sim.detail),
                 "simgpu: SIMGPU_CONFIG is not set (it names the simulated "
                 "GPUs' config file)");
        goto out;
    }
    if (strlen(path) >= sizeof(sim.config_path)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
        snprintf(sim.detail, sizeof(sim.detail),
                 "simgpu: SIMGPU_CONFIG is too long");
        goto out;
    }
    cfg = malloc(sizeof(*cfg));
    if (!cfg) {
        rc = NVML_ERROR_MEMORY;
        goto out;
    }
    snprintf(sim.config_path, sizeof(sim.config_path), "%s", path);
    snprintf(sim.state_path, sizeof(sim.state_path), "%s.state", path);
    if (stat(path, &sim.config_st) < 0)
        memset(&sim.config_st, 0, sizeof(sim.config_st));
    rc = sim_config_load(path, cfg, sim.detail, sizeof(sim.detail));
    if (rc != NVML_SUCCESS)
        goto out;
    sim.gpus = cfg->ngpu ? calloc((size_t)cfg->ngpu, sizeof(*sim.gpus)) : NULL;
    if (cfg->ngpu && !sim.gpus) {
        rc = NVML_ERROR_MEMORY;
        goto out;
    }
    sim.ngpu = cfg->ngpu;
    build_gpus(cfg);
    take_fails(cfg);
    sim.last_util = sim.last_mem = -1;
    sim_state_load();
    sim.refs = 1;
    /* Fault injection may fail the init itself. */
    rc = sim_enter("nvmlInit_v2", -1);
    if (rc != NVML_SUCCESS) {
        sim.refs = 0;
        free(sim.gpus);
        sim.gpus = NULL;
        sim.ngpu = 0;
    }
out:
    if (rc != NVML_SUCCESS)
        sim.detail_rc = rc;
    else
        sim.detail[0] = '\0';
    free(cfg);
    return rc;
}

SIM_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&sim.lock);
    /* Like NVML, init is reference counted. */
    if (sim.refs > 0)
        sim.refs++;
    else
        rc = init_locked();
    pthread_mutex_unlock(&sim.lock);
    return rc;
}

SIM_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&sim.lock);
    if (sim.refs == 0) {
        rc = NVML_ERROR_UNINITIALIZED;
    } else if (--sim.refs == 0) {
        free(sim.gpus);
        sim.gpus = NULL;
        sim.ngpu = 0;
        sim.nfails = 0;
    }
    pthread_mutex_unlock(&sim.lock);
    return rc;
}

/* ---- Devices ------------------------------------------------------------ */

static nvmlReturn_t copy_string(char *dst, unsigned int len, const char *s)
{
    if (!dst)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(dst, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    SIM_BEGIN("nvmlDeviceGetCount_v2", -1)
    if (!deviceCount)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else
        *deviceCount = (unsigned int)sim.ngpu;
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                      nvmlDevice_t *device)
{
    SIM_BEGIN("nvmlDeviceGetHandleByIndex_v2", (int)index)
    if (!device || index >= (unsigned int)sim.ngpu)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else
        *device = &sim.gpus[index].h;
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid,
                                          unsigned int length)
{
    SIM_BEGIN("nvmlDeviceGetUUID", sim_dev_gpu(device))
    struct sim_gpu *g = sim_gpu_of(device);
    struct sim_ci *ci = g ? NULL : sim_mig_ci(device, NULL);
    if (g)
        rc = copy_string(uuid, length, g->spec.uuid);
    else if (ci)
        rc = copy_string(uuid, length, ci->uuid);
    else
        rc = NVML_ERROR_INVALID_ARGUMENT;
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name,
                                          unsigned int length)
{
    SIM_BEGIN("nvmlDeviceGetName", sim_dev_gpu(device))
    struct sim_gi *gi;
    struct sim_gpu *g = sim_gpu_of(device);
    struct sim_ci *ci = g ? NULL : sim_mig_ci(device, &gi);
    if (g) {
        rc = copy_string(name, length, g->spec.name);
    } else if (ci) {
        char buf[GPU_NAME_MAX + GPU_PROFILE_MAX];
        snprintf(buf, sizeof(buf), "%s MIG %s", sim.gpus[device->gpu].spec.name,
                 gi->prof->name);
        rc = copy_string(name, length, buf);
    } else {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    SIM_END
}

#define MIB (1ULL << 20)

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                                nvmlMemory_t *memory)
{
    SIM_BEGIN("nvmlDeviceGetMemoryInfo", sim_dev_gpu(device))
    struct sim_gi *gi;
    struct sim_gpu *g = sim_gpu_of(device);
    struct sim_ci *ci = g ? NULL : sim_mig_ci(device, &gi);
    if (!memory || (!g && !ci)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (g) {
        sim_poll(&sim.last_mem, device->gpu);
        memory->total = g->spec.mem_mib * MIB;
        memory->used = g->spec.live.mem_used_mib * MIB;
        memory->free = memory->total - memory->used;
    } else {
        memory->total = gi->prof->mem_mib * MIB;
        memory->used = 0;
        memory->free = memory->total;
    }
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(
    nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    SIM_BEGIN("nvmlDeviceGetUtilizationRates", sim_dev_gpu(device))
    struct sim_gpu *g = sim_gpu_of(device);
    if (!utilization || !g) {
        /* MIG devices have no utilization counters in NVML either. */
        rc = sim_mig_ci(device, NULL) ? NVML_ERROR_NOT_SUPPORTED
                                      : NVML_ERROR_INVALID_ARGUMENT;
    } else if (g->mig_mode == NVML_DEVICE_MIG_ENABLE) {
        rc = NVML_ERROR_NOT_SUPPORTED;
    } else {
        sim_poll(&sim.last_util, device->gpu);
        utilization->gpu = g->spec.live.util;
        utilization->memory = g->spec.live.util / 2;
    }
    SIM_END
}

static void fill_pci(nvmlPciInfo_t *pci, unsigned int bus)
{
    memset(pci, 0, sizeof(*pci));
    pci->bus = bus;
    pci->pciDeviceId = 0x233010deu;
    pci->pciSubSystemId = 0x16c110deu;
    snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", bus);
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", bus);
}

static unsigned int gpu_bus(int i)
{
    return 0x10u + 2u * (unsigned int)i;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device,
                                                nvmlPciInfo_t *pci)
{
    SIM_BEGIN("nvmlDeviceGetPciInfo_v3", sim_dev_gpu(device))
    if (!pci || !sim_gpu_of(device))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else
        fill_pci(pci, gpu_bus(device->gpu));
    SIM_END
}

/* The simulated GPU i is "/dev/nvidia<i>" (the agent makes such nodes with
 * --sim-device-dir). */
SIM_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device,
                                                 unsigned int *minorNumber)
{
    SIM_BEGIN("nvmlDeviceGetMinorNumber", sim_dev_gpu(device))
    if (!minorNumber || !sim_gpu_of(device))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else
        *minorNumber = (unsigned int)device->gpu;
    SIM_END
}

/* ---- Topology ----------------------------------------------------------- */

SIM_EXPORT nvmlReturn_t
nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                    nvmlGpuTopologyLevel_t *pathInfo)
{
    SIM_BEGIN("nvmlDeviceGetTopologyCommonAncestor", sim_dev_gpu(device1))
    struct sim_gpu *a = sim_gpu_of(device1), *b = sim_gpu_of(device2);
    if (!a || !b || !pathInfo)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else if (a == b)
        *pathInfo = NVML_TOPOLOGY_INTERNAL;
    else if (a->spec.pci_switch == b->spec.pci_switch)
        *pathInfo = NVML_TOPOLOGY_SINGLE;
    else if (a->spec.bridge == b->spec.bridge)
        *pathInfo = NVML_TOPOLOGY_HOSTBRIDGE;
    else if (a->spec.numa == b->spec.numa)
        *pathInfo = NVML_TOPOLOGY_NODE;
    else
        *pathInfo = NVML_TOPOLOGY_SYSTEM;
    SIM_END
}

/* Links per GPU: 4 to the peer of a pair, 8 to a group's NVSwitch. */
static unsigned int active_links(const struct sim_gpu *g)
{
    return g->nvl_size == 2 ? 4 : g->nvl_size > 2 ? 8 : 0;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device,
                                                 unsigned int link,
                                                 nvmlEnableState_t *isActive)
{
    SIM_BEGIN("nvmlDeviceGetNvLinkState", sim_dev_gpu(device))
    struct sim_gpu *g = sim_gpu_of(device);
    if (!g || !isActive)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else if (g->nvl_size < 2)
        rc = NVML_ERROR_NOT_SUPPORTED;
    else if (link >= NVML_NVLINK_MAX_LINKS)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else
        *isActive = link < active_links(g) ? NVML_FEATURE_ENABLED
                                           : NVML_FEATURE_DISABLED;
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                            unsigned int link,
                                                            nvmlPciInfo_t *pci)
{
    SIM_BEGIN("nvmlDeviceGetNvLinkRemotePciInfo_v2", sim_dev_gpu(device))
    struct sim_gpu *g = sim_gpu_of(device);
    if (!g || !pci || link >= NVML_NVLINK_MAX_LINKS)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else if (g->nvl_size < 2)
        rc = NVML_ERROR_NOT_SUPPORTED;
    else if (link >= active_links(g))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else if (g->nvl_size == 2)
        fill_pci(pci, gpu_bus(g->nvl_peer));
    else /* the group's NVSwitch */
        fill_pci(pci, 0xc0u + ((unsigned int)g->spec.nvl_group & 0x3fu));
    SIM_END
}
