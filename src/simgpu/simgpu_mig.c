/* SPDX-License-Identifier: Apache-2.0 */
/* simgpu's MIG: mode changes, GPU and compute instances with NVIDIA's
 * placement rules (from the preset tables), MIG device handles, and the
 * state file that keeps all of it across processes, as a real GPU keeps
 * its layout. Rules modelled:
 *   - profile info, placements and instance calls need MIG mode on;
 *   - a GPU instance sits at one of its profile's placements, its memory
 *     slices may not overlap another's, compute slices total at most 7,
 *     and a profile has at most max_instances instances;
 *   - GPU instance ids follow the placement (7g: 0, 4g/3g: 1-2, 2g and
 *     the two-memory-slice 1g: 3-6, 1g: 7-13), as on A100/H100;
 *   - a compute instance spans 1, 2, 3, 4 or 7 of its GPU instance's
 *     slices (3 not on a 4-slice instance); a GPU instance with compute
 *     instances cannot be destroyed (IN_USE), nor MIG turned off while GPU
 *     instances exist (IN_USE);
 *   - every compute instance is a MIG device with its own "MIG-" UUID.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simgpu/simgpu.h"

#define MIB (1ULL << 20)

/* Compute instance profile index -> slices (NVML_COMPUTE_INSTANCE_PROFILE_*
 * order); 0 for profiles simgpu does not offer. */
static const unsigned int
    ci_profile_slices[NVML_COMPUTE_INSTANCE_PROFILE_COUNT] = {1, 2, 3, 4,
                                                              7, 0, 0, 0};

static int gi_id_for(int size, unsigned int start)
{
    switch (size) {
    case 8:
        return 0;
    case 4:
        return 1 + (int)start / 4;
    case 2:
        return 3 + (int)start / 2;
    default:
        return 7 + (int)start;
    }
}

static bool mig_on(const struct sim_gpu *g)
{
    return g->mig_mode == NVML_DEVICE_MIG_ENABLE;
}

static struct sim_gi *gi_of(nvmlGpuInstance_t h, struct sim_gpu **gp)
{
    if (!h || h->magic != SIM_MAGIC || h->gpu < 0 || h->gpu >= sim.ngpu ||
        h->gi < 0 || h->gi >= SIM_GIS)
        return NULL;
    struct sim_gpu *g = &sim.gpus[h->gpu];
    if (!g->gi[h->gi].used)
        return NULL;
    if (gp)
        *gp = g;
    return &g->gi[h->gi];
}

static struct sim_ci *ci_of(nvmlComputeInstance_t h, struct sim_gi **gip)
{
    if (!h || h->magic != SIM_MAGIC || h->gpu < 0 || h->gpu >= sim.ngpu ||
        h->gi < 0 || h->gi >= SIM_GIS || h->ci < 0 || h->ci >= SIM_CIS)
        return NULL;
    struct sim_gi *gi = &sim.gpus[h->gpu].gi[h->gi];
    if (!gi->used || !gi->ci[h->ci].used)
        return NULL;
    if (gip)
        *gip = gi;
    return &gi->ci[h->ci];
}

struct sim_ci *sim_mig_ci(nvmlDevice_t dev, struct sim_gi **gip)
{
    if (!dev || dev->magic != SIM_MAGIC || dev->gpu < 0 ||
        dev->gpu >= sim.ngpu || dev->gi < 0 || dev->gi >= SIM_GIS ||
        dev->ci < 0 || dev->ci >= SIM_CIS)
        return NULL;
    struct sim_gi *gi = &sim.gpus[dev->gpu].gi[dev->gi];
    if (!gi->used || !gi->ci[dev->ci].used)
        return NULL;
    if (gip)
        *gip = gi;
    return &gi->ci[dev->ci];
}

static void gi_take(struct sim_gpu *g, int id, const struct preset_profile *p,
                    unsigned int start)
{
    struct sim_gi *gi = &g->gi[id];
    memset(gi, 0, sizeof(*gi));
    gi->used = true;
    gi->prof = p;
    gi->start = start;
    gi->h = (struct nvmlGpuInstance_st){SIM_MAGIC, (int)(g - sim.gpus), id};
}

static void ci_take(struct sim_gpu *g, struct sim_gi *gi, int id,
                    unsigned int profile, const char *uuid)
{
    int gpu = (int)(g - sim.gpus), gid = (int)(gi - g->gi);
    struct sim_ci *ci = &gi->ci[id];
    memset(ci, 0, sizeof(*ci));
    ci->used = true;
    ci->profile = profile;
    ci->slices = ci_profile_slices[profile];
    if (uuid)
        snprintf(ci->uuid, sizeof(ci->uuid), "%s", uuid);
    else
        sim_uuid("MIG", g->spec.uuid, g->gen++, ci->uuid, sizeof(ci->uuid));
    ci->h = (struct nvmlComputeInstance_st){SIM_MAGIC, gpu, gid, id};
    ci->dev = (struct nvmlDevice_st){SIM_MAGIC, gpu, gid, id};
}

/* ---- State file -------------------------------------------------------- */

static json_t *gpu_state(const struct sim_gpu *g)
{
    json_t *list = json_array();
    for (int i = 0; list && i < SIM_GIS; i++) {
        const struct sim_gi *gi = &g->gi[i];
        json_t *cis = json_array();
        if (!gi->used || !cis) {
            json_decref(cis);
            continue;
        }
        for (int k = 0; k < SIM_CIS; k++) {
            if (gi->ci[k].used) /* "o": reference stolen by the array */
                json_array_append_new(
                    cis, json_pack("{s:i, s:i, s:s}", "ci", k, "profile",
                                   gi->ci[k].profile, "uuid", gi->ci[k].uuid));
        }
        /* "o" steals cis. */
        json_array_append_new(list, json_pack("{s:i, s:i, s:i, s:o}", "gi", i,
                                              "profile", gi->prof->id, "start",
                                              gi->start, "cis", cis));
    }
    /* "o" steals list. */
    return json_pack("{s:i, s:i, s:o}", "mig_mode", g->mig_mode, "gen", g->gen,
                     "instances", list);
}

void sim_state_save(void)
{
    char tmp[sizeof(sim.state_path) + 8];
    json_t *gpus = json_object();
    for (int i = 0; gpus && i < sim.ngpu; i++) {
        if (sim.gpus[i].pm) /* steals the new object */
            json_object_set_new(gpus, sim.gpus[i].spec.uuid,
                                gpu_state(&sim.gpus[i]));
    }
    /* "o" steals gpus. */
    json_t *root = json_pack("{s:i, s:o}", "version", 1, "gpus", gpus);
    snprintf(tmp, sizeof(tmp), "%s.tmp", sim.state_path);
    /* Write then rename, so a reader never sees half a file. A failure to
     * save loses only persistence, which is reported on stderr because
     * NVML's API has no way to carry it. */
    if (!root || json_dump_file(root, tmp, JSON_INDENT(1)) < 0 ||
        rename(tmp, sim.state_path) < 0)
        fprintf(stderr, "simgpu: cannot save MIG state to %s\n",
                sim.state_path);
    json_decref(root);
}

static void load_instance(struct sim_gpu *g, json_t *inst)
{
    int id = -1, profile = -1, start = -1;
    json_t *cis = NULL;
    if (json_unpack(inst, "{s:i, s:i, s:i, s:o}", "gi", &id, "profile",
                    &profile, "start", &start, "cis", &cis) < 0 ||
        id < 0 || id >= SIM_GIS || g->gi[id].used || start < 0 || start > 7)
        return;
    const struct preset_profile *p =
        preset_profile_by_id(g->spec.model, profile);
    if (!p)
        return;
    gi_take(g, id, p, (unsigned int)start);
    size_t k;
    json_t *c;
    json_array_foreach (cis, k, c) {
        int cid = -1, cprof = -1;
        const char *uuid = NULL;
        if (json_unpack(c, "{s:i, s:i, s:s}", "ci", &cid, "profile", &cprof,
                        "uuid", &uuid) < 0 ||
            cid < 0 || cid >= SIM_CIS || cprof < 0 ||
            cprof >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
            !ci_profile_slices[cprof] || strlen(uuid) >= GPU_UUID_MAX)
            continue;
        ci_take(g, &g->gi[id], cid, (unsigned int)cprof, uuid);
    }
}

void sim_state_load(void)
{
    json_error_t jerr;
    json_t *root = json_load_file(sim.state_path, 0, &jerr);
    json_t *gpus = root ? json_object_get(root, "gpus") : NULL;
    for (int i = 0; gpus && i < sim.ngpu; i++) {
        struct sim_gpu *g = &sim.gpus[i];
        json_t *st = json_object_get(gpus, g->spec.uuid);
        json_t *list = NULL;
        int mode = 0, gen = 0;
        /* State for a GPU that is no longer MIG capable is dropped. */
        if (!st || !g->pm ||
            json_unpack(st, "{s:i, s:i, s:o}", "mig_mode", &mode, "gen", &gen,
                        "instances", &list) < 0)
            continue;
        g->mig_mode = mode == 1 ? NVML_DEVICE_MIG_ENABLE : 0;
        g->gen = gen > 0 ? (unsigned int)gen : 0;
        size_t k;
        json_t *inst;
        json_array_foreach (list, k, inst) {
            if (mig_on(g))
                load_instance(g, inst);
        }
    }
    json_decref(root);
}

/* ---- MIG mode ---------------------------------------------------------- */

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device,
                                             unsigned int *currentMode,
                                             unsigned int *pendingMode)
{
    SIM_BEGIN("nvmlDeviceGetMigMode", sim_dev_gpu(device))
    struct sim_gpu *g = sim_gpu_of(device);
    if (!g || !currentMode || !pendingMode) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (!g->pm) {
        rc = NVML_ERROR_NOT_SUPPORTED;
    } else {
        *currentMode = g->mig_mode;
        *pendingMode = g->mig_mode;
    }
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device,
                                             unsigned int mode,
                                             nvmlReturn_t *activationStatus)
{
    SIM_BEGIN("nvmlDeviceSetMigMode", sim_dev_gpu(device))
    struct sim_gpu *g = sim_gpu_of(device);
    if (!g || !activationStatus || mode > NVML_DEVICE_MIG_ENABLE) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
        goto out;
    }
    if (!g->pm) {
        rc = NVML_ERROR_NOT_SUPPORTED;
        goto out;
    }
    for (int i = 0; i < SIM_GIS; i++) {
        if (g->gi[i].used) {
            rc = NVML_ERROR_IN_USE;
            goto out;
        }
    }
    g->mig_mode = mode;
    *activationStatus = NVML_SUCCESS;
    sim_state_save();
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                                       unsigned int *count)
{
    SIM_BEGIN("nvmlDeviceGetMaxMigDeviceCount", sim_dev_gpu(device))
    struct sim_gpu *g = sim_gpu_of(device);
    if (!g || !count)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else if (!g->pm)
        rc = NVML_ERROR_NOT_SUPPORTED;
    else
        *count = PRESET_COMPUTE_SLICES;
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(
    nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)
{
    SIM_BEGIN("nvmlDeviceGetMigDeviceHandleByIndex", sim_dev_gpu(device))
    struct sim_gpu *g = sim_gpu_of(device);
    unsigned int n = 0;
    if (!g || !migDevice) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
        goto out;
    }
    rc = NVML_ERROR_NOT_FOUND;
    for (int i = 0; i < SIM_GIS && mig_on(g); i++) {
        for (int k = 0; g->gi[i].used && k < SIM_CIS; k++) {
            if (g->gi[i].ci[k].used && n++ == index) {
                *migDevice = &g->gi[i].ci[k].dev;
                rc = NVML_SUCCESS;
                goto out;
            }
        }
    }
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device,
                                                   unsigned int *id)
{
    SIM_BEGIN("nvmlDeviceGetGpuInstanceId", sim_dev_gpu(device))
    if (!id || !sim_mig_ci(device, NULL))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else
        *id = (unsigned int)device->gi;
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device,
                                                       unsigned int *id)
{
    SIM_BEGIN("nvmlDeviceGetComputeInstanceId", sim_dev_gpu(device))
    if (!id || !sim_mig_ci(device, NULL))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    else
        *id = (unsigned int)device->ci;
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(
    nvmlDevice_t device, nvmlDeviceAttributes_t *attributes)
{
    SIM_BEGIN("nvmlDeviceGetAttributes_v2", sim_dev_gpu(device))
    struct sim_gi *gi;
    struct sim_ci *ci = sim_mig_ci(device, &gi);
    if (!attributes || !(ci || sim_gpu_of(device))) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (!ci) {
        rc = NVML_ERROR_NOT_SUPPORTED; /* simgpu describes MIG devices */
    } else {
        memset(attributes, 0, sizeof(*attributes));
        attributes->multiprocessorCount = ci->slices * SIM_SM_PER_SLICE;
        attributes->sharedCopyEngineCount = (unsigned)gi->prof->compute_slices;
        attributes->sharedDecoderCount = gi->prof->compute_slices / 2u;
        attributes->gpuInstanceSliceCount = (unsigned)gi->prof->compute_slices;
        attributes->computeInstanceSliceCount = ci->slices;
        attributes->memorySizeMB = gi->prof->mem_mib;
    }
    SIM_END
}

/* ---- GPU instances ------------------------------------------------------ */

static const struct preset_profile *profile_by_index(const struct sim_gpu *g,
                                                     unsigned int index)
{
    for (int i = 0; g->pm && i < g->pm->nprofiles; i++) {
        if ((unsigned int)g->pm->profiles[i].nvml_index == index)
            return &g->pm->profiles[i];
    }
    return NULL;
}

/* The GPU of a whole-GPU handle in MIG mode, or an error in *rc. */
static struct sim_gpu *mig_gpu(nvmlDevice_t dev, nvmlReturn_t *rc)
{
    struct sim_gpu *g = sim_gpu_of(dev);
    *rc = !g                     ? NVML_ERROR_INVALID_ARGUMENT
          : !g->pm || !mig_on(g) ? NVML_ERROR_NOT_SUPPORTED
                                 : NVML_SUCCESS;
    return *rc == NVML_SUCCESS ? g : NULL;
}

SIM_EXPORT nvmlReturn_t
nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                    nvmlGpuInstanceProfileInfo_t *info)
{
    SIM_BEGIN("nvmlDeviceGetGpuInstanceProfileInfo", sim_dev_gpu(device))
    struct sim_gpu *g = mig_gpu(device, &rc);
    const struct preset_profile *p = g ? profile_by_index(g, profile) : NULL;
    if (!g)
        goto out;
    if (!info || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (!p) {
        rc = NVML_ERROR_NOT_SUPPORTED;
    } else {
        memset(info, 0, sizeof(*info));
        info->id = (unsigned int)p->id;
        info->isP2pSupported = 0;
        info->sliceCount = (unsigned int)p->compute_slices;
        info->instanceCount = (unsigned int)p->max_instances;
        info->multiprocessorCount = info->sliceCount * SIM_SM_PER_SLICE;
        info->copyEngineCount = info->sliceCount;
        info->decoderCount = info->sliceCount / 2;
        info->jpegCount = info->sliceCount / 7;
        info->ofaCount = info->sliceCount / 7;
        info->memorySizeMB = p->mem_mib;
    }
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profileId,
    nvmlGpuInstancePlacement_t *placements, unsigned int *count)
{
    SIM_BEGIN("nvmlDeviceGetGpuInstancePossiblePlacements_v2",
              sim_dev_gpu(device))
    struct sim_gpu *g = mig_gpu(device, &rc);
    const struct preset_profile *p =
        g ? preset_profile_by_id(g->spec.model, (int)profileId) : NULL;
    if (!g)
        goto out;
    if (!count || !p) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (!placements) {
        *count = (unsigned int)p->nplacements;
    } else if (*count < (unsigned int)p->nplacements) {
        rc = NVML_ERROR_INSUFFICIENT_SIZE;
    } else {
        for (int i = 0; i < p->nplacements; i++) {
            placements[i].start = (unsigned int)p->placements[i];
            placements[i].size = (unsigned int)p->memory_slices;
        }
        *count = (unsigned int)p->nplacements;
    }
    SIM_END
}

/* Can an instance of p start at memory slice start? */
static nvmlReturn_t gi_fits(const struct sim_gpu *g,
                            const struct preset_profile *p, unsigned int start)
{
    bool valid = false;
    int compute = p->compute_slices, same = 0;
    unsigned int mask = ((1u << p->memory_slices) - 1) << start;
    for (int i = 0; i < p->nplacements; i++)
        valid = valid || (unsigned int)p->placements[i] == start;
    if (!valid)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < SIM_GIS; i++) {
        const struct sim_gi *gi = &g->gi[i];
        if (!gi->used)
            continue;
        unsigned int m = ((1u << gi->prof->memory_slices) - 1) << gi->start;
        if (m & mask)
            return NVML_ERROR_INSUFFICIENT_RESOURCES;
        compute += gi->prof->compute_slices;
        same += gi->prof == p;
    }
    if (compute > PRESET_COMPUTE_SLICES || same >= p->max_instances)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    return NVML_SUCCESS;
}

static nvmlReturn_t create_gi(nvmlDevice_t device, unsigned int profileId,
                              const nvmlGpuInstancePlacement_t *placement,
                              nvmlGpuInstance_t *gpuInstance)
{
    nvmlReturn_t rc;
    struct sim_gpu *g = mig_gpu(device, &rc);
    if (!g)
        return rc;
    const struct preset_profile *p =
        preset_profile_by_id(g->spec.model, (int)profileId);
    if (!p || !gpuInstance ||
        (placement && placement->size != (unsigned int)p->memory_slices))
        return NVML_ERROR_INVALID_ARGUMENT;
    rc = NVML_ERROR_INSUFFICIENT_RESOURCES;
    unsigned int start = 0;
    if (placement) {
        start = placement->start;
        rc = gi_fits(g, p, start);
    } else {
        /* No placement given: the first one that fits. */
        for (int i = 0; i < p->nplacements && rc != NVML_SUCCESS; i++) {
            start = (unsigned int)p->placements[i];
            rc = gi_fits(g, p, start);
        }
    }
    if (rc != NVML_SUCCESS)
        return rc;
    int id = gi_id_for(p->memory_slices, start);
    gi_take(g, id, p, start);
    *gpuInstance = &g->gi[id].h;
    sim_state_save();
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstance(
    nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t *gpuInstance)
{
    SIM_BEGIN("nvmlDeviceCreateGpuInstance", sim_dev_gpu(device))
    rc = create_gi(device, profileId, NULL, gpuInstance);
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profileId,
    const nvmlGpuInstancePlacement_t *placement, nvmlGpuInstance_t *gpuInstance)
{
    SIM_BEGIN("nvmlDeviceCreateGpuInstanceWithPlacement", sim_dev_gpu(device))
    rc = placement ? create_gi(device, profileId, placement, gpuInstance)
                   : NVML_ERROR_INVALID_ARGUMENT;
    SIM_END
}

SIM_EXPORT nvmlReturn_t
nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                          nvmlGpuInstance_t *gpuInstances, unsigned int *count)
{
    SIM_BEGIN("nvmlDeviceGetGpuInstances", sim_dev_gpu(device))
    struct sim_gpu *g = mig_gpu(device, &rc);
    unsigned int n = 0;
    if (!g)
        goto out;
    if (!gpuInstances || !count) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
        goto out;
    }
    for (int i = 0; i < SIM_GIS; i++) {
        if (!g->gi[i].used || (unsigned int)g->gi[i].prof->id != profileId)
            continue;
        if (n >= *count) {
            rc = NVML_ERROR_INSUFFICIENT_SIZE;
            goto out;
        }
        gpuInstances[n++] = &g->gi[i].h;
    }
    *count = n;
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                               nvmlGpuInstanceInfo_t *info)
{
    SIM_BEGIN("nvmlGpuInstanceGetInfo", gpuInstance ? gpuInstance->gpu : -1)
    struct sim_gpu *g;
    struct sim_gi *gi = gi_of(gpuInstance, &g);
    if (!gi || !info) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else {
        info->device = &g->h;
        info->id = (unsigned int)(gi - g->gi);
        info->profileId = (unsigned int)gi->prof->id;
        info->placement.start = gi->start;
        info->placement.size = (unsigned int)gi->prof->memory_slices;
    }
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance)
{
    SIM_BEGIN("nvmlGpuInstanceDestroy", gpuInstance ? gpuInstance->gpu : -1)
    struct sim_gi *gi = gi_of(gpuInstance, NULL);
    if (!gi) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
        goto out;
    }
    for (int k = 0; k < SIM_CIS; k++) {
        if (gi->ci[k].used) {
            rc = NVML_ERROR_IN_USE;
            goto out;
        }
    }
    memset(gi, 0, sizeof(*gi));
    sim_state_save();
    SIM_END
}

/* ---- Compute instances -------------------------------------------------- */

/* Slices of compute profile `profile` inside gi, 0 when not offered. */
static unsigned int ci_slices_in(const struct sim_gi *gi, unsigned int profile)
{
    unsigned int n = (unsigned int)gi->prof->compute_slices;
    unsigned int s = profile < NVML_COMPUTE_INSTANCE_PROFILE_COUNT
                         ? ci_profile_slices[profile]
                         : 0;
    if (!s || s > n || (n == 4 && s == 3))
        return 0;
    return s;
}

SIM_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpuInstance, unsigned int profile,
    unsigned int engProfile, nvmlComputeInstanceProfileInfo_t *info)
{
    SIM_BEGIN("nvmlGpuInstanceGetComputeInstanceProfileInfo",
              gpuInstance ? gpuInstance->gpu : -1)
    struct sim_gi *gi = gi_of(gpuInstance, NULL);
    unsigned int s = gi ? ci_slices_in(gi, profile) : 0;
    if (!gi || !info || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (!s ||
               engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED) {
        rc = NVML_ERROR_NOT_SUPPORTED;
    } else {
        memset(info, 0, sizeof(*info));
        info->id = profile;
        info->sliceCount = s;
        info->instanceCount = (unsigned int)gi->prof->compute_slices / s;
        info->multiprocessorCount = s * SIM_SM_PER_SLICE;
        info->sharedCopyEngineCount = (unsigned int)gi->prof->compute_slices;
    }
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstance_t *computeInstance)
{
    SIM_BEGIN("nvmlGpuInstanceCreateComputeInstance",
              gpuInstance ? gpuInstance->gpu : -1)
    struct sim_gpu *g;
    struct sim_gi *gi = gi_of(gpuInstance, &g);
    unsigned int s = gi ? ci_slices_in(gi, profileId) : 0, used = 0;
    int free_id = -1;
    if (!gi || !computeInstance || !s) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
        goto out;
    }
    for (int k = SIM_CIS - 1; k >= 0; k--) {
        if (gi->ci[k].used)
            used += gi->ci[k].slices;
        else
            free_id = k;
    }
    if (free_id < 0 || used + s > (unsigned int)gi->prof->compute_slices) {
        rc = NVML_ERROR_INSUFFICIENT_RESOURCES;
        goto out;
    }
    ci_take(g, gi, free_id, profileId, NULL);
    *computeInstance = &gi->ci[free_id].h;
    sim_state_save();
    SIM_END
}

SIM_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstances(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstance_t *computeInstances, unsigned int *count)
{
    SIM_BEGIN("nvmlGpuInstanceGetComputeInstances",
              gpuInstance ? gpuInstance->gpu : -1)
    struct sim_gi *gi = gi_of(gpuInstance, NULL);
    unsigned int n = 0;
    if (!gi || !computeInstances || !count) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
        goto out;
    }
    for (int k = 0; k < SIM_CIS; k++) {
        if (!gi->ci[k].used || gi->ci[k].profile != profileId)
            continue;
        if (n >= *count) {
            rc = NVML_ERROR_INSUFFICIENT_SIZE;
            goto out;
        }
        computeInstances[n++] = &gi->ci[k].h;
    }
    *count = n;
    SIM_END
}

SIM_EXPORT nvmlReturn_t
nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance)
{
    SIM_BEGIN("nvmlComputeInstanceDestroy",
              computeInstance ? computeInstance->gpu : -1)
    struct sim_ci *ci = ci_of(computeInstance, NULL);
    if (!ci) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else {
        memset(ci, 0, sizeof(*ci));
        sim_state_save();
    }
    SIM_END
}
