/* SPDX-License-Identifier: Apache-2.0 */
/* MIG through NVML: read the slices a GPU has (the only MIG code that runs
 * on real GPUs today, so it tolerates whatever the driver leaves out), and
 * apply a layout with rollback:
 *
 *   snapshot --> destroy all --> set MIG mode --> create GPU + compute
 *      |                                          instances, largest first
 *      |             any step fails
 *      +----------> destroy all --> old mode --> recreate the snapshot
 *
 * The snapshot is taken before anything changes, so a failure to read the
 * current layout changes nothing. Instances are recreated with their old
 * profiles and placements (their ids and UUIDs are new: NVML assigns them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/gpu_nvml.h"

#define MIB (UINT64_C(1) << 20)
#define MIG_GIS_MAX GPU_SLICES_MAX
#define MIG_CIS_MAX 8

/* ---- Reading slices ------------------------------------------------- */

/* The number of compute slices of the whole GPU: the largest profile's
 * slice count (7 on A100/H100/H200); 7 when the driver cannot say. */
static int full_slices(struct gpu_nvml *n, nvmlDevice_t dev)
{
    int best = 0;
    for (unsigned int p = 0; n->f.nvmlDeviceGetGpuInstanceProfileInfo &&
                             p < NVML_GPU_INSTANCE_PROFILE_COUNT;
         p++) {
        nvmlGpuInstanceProfileInfo_t info;
        memset(&info, 0, sizeof(info));
        if (n->f.nvmlDeviceGetGpuInstanceProfileInfo(dev, p, &info) ==
                NVML_SUCCESS &&
            (int)info.sliceCount > best && info.sliceCount <= 8)
            best = (int)info.sliceCount;
    }
    return best ? best : PRESET_COMPUTE_SLICES;
}

static bool read_slice(struct gpu_nvml *n, nvmlDevice_t mig,
                       const struct gpu_info *g, int den, struct gpu_slice *s)
{
    nvmlDeviceAttributes_t attr;
    unsigned int id;

    memset(s, 0, sizeof(*s));
    s->kind = GPU_SLICE_MIG;
    s->gi_id = -1;
    s->ci_id = -1;
    if (n->f.nvmlDeviceGetUUID(mig, s->uuid, sizeof(s->uuid)) != NVML_SUCCESS)
        return false;
    s->uuid[sizeof(s->uuid) - 1] = '\0';
    if (n->f.nvmlDeviceGetGpuInstanceId &&
        n->f.nvmlDeviceGetGpuInstanceId(mig, &id) == NVML_SUCCESS)
        s->gi_id = (int)id;
    if (n->f.nvmlDeviceGetComputeInstanceId &&
        n->f.nvmlDeviceGetComputeInstanceId(mig, &id) == NVML_SUCCESS)
        s->ci_id = (int)id;
    memset(&attr, 0, sizeof(attr));
    if (n->f.nvmlDeviceGetAttributes_v2 &&
        n->f.nvmlDeviceGetAttributes_v2(mig, &attr) == NVML_SUCCESS &&
        attr.gpuInstanceSliceCount > 0) {
        int ci = attr.computeInstanceSliceCount
                     ? (int)attr.computeInstanceSliceCount
                     : (int)attr.gpuInstanceSliceCount;
        preset_mig_name((int)attr.gpuInstanceSliceCount, ci, attr.memorySizeMB,
                        g->mem_total, s->profile, sizeof(s->profile));
        s->mem_bytes = attr.memorySizeMB * MIB;
        s->share_num = ci;
        s->share_den = den;
    } else {
        /* Without attributes the size is still known from the memory. */
        nvmlMemory_t mem;
        if (n->f.nvmlDeviceGetMemoryInfo(mig, &mem) == NVML_SUCCESS)
            s->mem_bytes = mem.total;
        snprintf(s->profile, sizeof(s->profile), "unknown");
        s->share_num = 1;
        s->share_den = den;
    }
    return true;
}

static int slice_cmp(const void *a, const void *b)
{
    const struct gpu_slice *x = a, *y = b;
    if (x->gi_id != y->gi_id)
        return x->gi_id < y->gi_id ? -1 : 1;
    return (x->ci_id > y->ci_id) - (x->ci_id < y->ci_id);
}

void gpu_nvml_read_slices(struct gpu_nvml *n, nvmlDevice_t dev,
                          struct gpu_info *g)
{
    unsigned int max = PRESET_COMPUTE_SLICES;

    g->nslices = 0;
    if (!n->f.nvmlDeviceGetMigDeviceHandleByIndex)
        return;
    if (n->f.nvmlDeviceGetMaxMigDeviceCount)
        n->f.nvmlDeviceGetMaxMigDeviceCount(dev, &max);
    if (max > 64)
        max = 64;
    int den = full_slices(n, dev);
    for (unsigned int i = 0; i < max && g->nslices < GPU_SLICES_MAX; i++) {
        nvmlDevice_t mig;
        /* Drivers differ on whether MIG device indexes are dense: skip
         * the ones that are not there. */
        if (n->f.nvmlDeviceGetMigDeviceHandleByIndex(dev, i, &mig) !=
            NVML_SUCCESS)
            continue;
        if (read_slice(n, mig, g, den, &g->slices[g->nslices]))
            g->nslices++;
    }
    qsort(g->slices, (size_t)g->nslices, sizeof(g->slices[0]), slice_cmp);
}

/* ---- Snapshot, destroy, create --------------------------------------- */

struct mig_gi {
    unsigned int profile_id;
    nvmlGpuInstancePlacement_t placement;
    int nci;
    unsigned int ci_profile[MIG_CIS_MAX];
    unsigned int ci_slices[MIG_CIS_MAX];
};

struct mig_state {
    bool enabled;
    int ngi;
    struct mig_gi gi[MIG_GIS_MAX];
};

/* What one apply needs to know about the GPU. */
struct mig_job {
    struct gpu_nvml *n;
    int index;
    nvmlDevice_t dev;
    uint64_t mem_total;
};

#define NEED(fn)                                                               \
    do {                                                                       \
        if (!j->n->f.fn)                                                       \
            return sh_errorf(err, SH_EUNAVAILABLE,                             \
                             "%s lacks %s, needed to change MIG", j->n->lib,   \
                             #fn);                                             \
    } while (0)

static int mig_mode(struct mig_job *j, bool *enabled, struct sh_error *err)
{
    unsigned int cur = 0, pending = 0;
    NEED(nvmlDeviceGetMigMode);
    nvmlReturn_t rc = j->n->f.nvmlDeviceGetMigMode(j->dev, &cur, &pending);
    if (rc != NVML_SUCCESS)
        return gpu_nvml_fail(j->n, err, rc, "nvmlDeviceGetMigMode(GPU %d)",
                             j->index);
    *enabled = cur == NVML_DEVICE_MIG_ENABLE;
    return 0;
}

/* The compute instances of one GPU instance, into gi. */
static int snap_cis(struct mig_job *j, nvmlGpuInstance_t h, struct mig_gi *gi,
                    struct sh_error *err)
{
    for (unsigned int p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; p++) {
        nvmlComputeInstanceProfileInfo_t info;
        nvmlComputeInstance_t cis[MIG_CIS_MAX];
        unsigned int count = MIG_CIS_MAX;
        if (j->n->f.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                h, p, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info) !=
            NVML_SUCCESS)
            continue;
        nvmlReturn_t rc =
            j->n->f.nvmlGpuInstanceGetComputeInstances(h, info.id, cis, &count);
        if (rc != NVML_SUCCESS)
            return gpu_nvml_fail(j->n, err, rc,
                                 "nvmlGpuInstanceGetComputeInstances(GPU %d)",
                                 j->index);
        for (unsigned int k = 0; k < count && gi->nci < MIG_CIS_MAX; k++) {
            gi->ci_profile[gi->nci] = info.id;
            gi->ci_slices[gi->nci++] = info.sliceCount;
        }
    }
    return 0;
}

/* The GPU instances of GPU instance profile index p (at most MIG_GIS_MAX).
 * Returns 1 with *profile_id and gis[0..*count) filled, 0 when the GPU has
 * no such profile, -1 (err set) when NVML fails to list them. */
static int profile_gis(struct mig_job *j, unsigned int p,
                       unsigned int *profile_id, nvmlGpuInstance_t *gis,
                       unsigned int *count, struct sh_error *err)
{
    nvmlGpuInstanceProfileInfo_t info;
    *profile_id = 0;
    *count = 0;
    if (j->n->f.nvmlDeviceGetGpuInstanceProfileInfo(j->dev, p, &info) !=
        NVML_SUCCESS)
        return 0;
    *profile_id = info.id;
    *count = MIG_GIS_MAX;
    nvmlReturn_t rc =
        j->n->f.nvmlDeviceGetGpuInstances(j->dev, info.id, gis, count);
    if (rc != NVML_SUCCESS)
        return gpu_nvml_fail(j->n, err, rc,
                             "nvmlDeviceGetGpuInstances(GPU %d, profile id %u)",
                             j->index, info.id);
    return 1;
}

/* Read the GPU's MIG mode and instances. */
static int snapshot(struct mig_job *j, struct mig_state *st,
                    struct sh_error *err)
{
    memset(st, 0, sizeof(*st));
    if (mig_mode(j, &st->enabled, err) < 0)
        return -1;
    if (!st->enabled)
        return 0;
    for (unsigned int p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++) {
        nvmlGpuInstance_t gis[MIG_GIS_MAX];
        unsigned int profile_id, count;
        int listed = profile_gis(j, p, &profile_id, gis, &count, err);
        if (listed < 0)
            return -1;
        for (unsigned int k = 0; listed && k < count; k++) {
            nvmlGpuInstanceInfo_t gii;
            if (st->ngi >= MIG_GIS_MAX)
                return sh_errorf(err, SH_EINTERNAL,
                                 "GPU %d has more than %d GPU instances",
                                 j->index, MIG_GIS_MAX);
            nvmlReturn_t rc = j->n->f.nvmlGpuInstanceGetInfo(gis[k], &gii);
            if (rc != NVML_SUCCESS)
                return gpu_nvml_fail(
                    j->n, err, rc, "nvmlGpuInstanceGetInfo(GPU %d)", j->index);
            struct mig_gi *gi = &st->gi[st->ngi++];
            gi->profile_id = profile_id;
            gi->placement = gii.placement;
            if (snap_cis(j, gis[k], gi, err) < 0)
                return -1;
        }
    }
    return 0;
}

static int destroy_gi(struct mig_job *j, nvmlGpuInstance_t h,
                      struct sh_error *err)
{
    for (unsigned int p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; p++) {
        nvmlComputeInstanceProfileInfo_t info;
        nvmlComputeInstance_t cis[MIG_CIS_MAX];
        unsigned int count = MIG_CIS_MAX;
        if (j->n->f.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                h, p, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info) !=
                NVML_SUCCESS ||
            j->n->f.nvmlGpuInstanceGetComputeInstances(h, info.id, cis,
                                                       &count) != NVML_SUCCESS)
            continue;
        for (unsigned int k = 0; k < count; k++) {
            nvmlReturn_t rc = j->n->f.nvmlComputeInstanceDestroy(cis[k]);
            if (rc != NVML_SUCCESS)
                return gpu_nvml_fail(j->n, err, rc,
                                     "nvmlComputeInstanceDestroy(GPU %d)",
                                     j->index);
        }
    }
    nvmlReturn_t rc = j->n->f.nvmlGpuInstanceDestroy(h);
    if (rc != NVML_SUCCESS)
        return gpu_nvml_fail(j->n, err, rc, "nvmlGpuInstanceDestroy(GPU %d)",
                             j->index);
    return 0;
}

/* Destroy every compute and GPU instance (MIG mode must be on). */
static int destroy_all(struct mig_job *j, struct sh_error *err)
{
    for (unsigned int p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++) {
        nvmlGpuInstance_t gis[MIG_GIS_MAX];
        unsigned int profile_id, count;
        int listed = profile_gis(j, p, &profile_id, gis, &count, err);
        if (listed < 0)
            return -1;
        for (unsigned int k = 0; listed && k < count; k++) {
            if (destroy_gi(j, gis[k], err) < 0)
                return -1;
        }
    }
    return 0;
}

static int set_mode(struct mig_job *j, bool on, struct sh_error *err)
{
    bool now;
    nvmlReturn_t activation = NVML_SUCCESS;
    NEED(nvmlDeviceSetMigMode);
    nvmlReturn_t rc = j->n->f.nvmlDeviceSetMigMode(
        j->dev, on ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE,
        &activation);
    if (rc != NVML_SUCCESS)
        return gpu_nvml_fail(j->n, err, rc, "nvmlDeviceSetMigMode(GPU %d, %s)",
                             j->index, on ? "enable" : "disable");
    if (mig_mode(j, &now, err) < 0)
        return -1;
    if (now != on)
        return sh_errorf(err, SH_EUNAVAILABLE,
                         "MIG mode %s on GPU %d waits for a GPU reset",
                         on ? "enable" : "disable", j->index);
    return 0;
}

/* Create one GPU instance, at a placement when the library can. */
static int create_gi(struct mig_job *j, unsigned int profile_id,
                     const nvmlGpuInstancePlacement_t *pl, const char *what,
                     nvmlGpuInstance_t *gi, struct sh_error *err)
{
    nvmlReturn_t rc;
    if (pl && j->n->f.nvmlDeviceCreateGpuInstanceWithPlacement) {
        rc = j->n->f.nvmlDeviceCreateGpuInstanceWithPlacement(
            j->dev, profile_id, pl, gi);
        if (rc != NVML_SUCCESS)
            return gpu_nvml_fail(j->n, err, rc,
                                 "nvmlDeviceCreateGpuInstanceWithPlacement(GPU "
                                 "%d, %s at memory slice %u)",
                                 j->index, what, pl->start);
        return 0;
    }
    NEED(nvmlDeviceCreateGpuInstance);
    rc = j->n->f.nvmlDeviceCreateGpuInstance(j->dev, profile_id, gi);
    if (rc != NVML_SUCCESS)
        return gpu_nvml_fail(j->n, err, rc,
                             "nvmlDeviceCreateGpuInstance(GPU %d, %s)",
                             j->index, what);
    return 0;
}

static int create_ci(struct mig_job *j, nvmlGpuInstance_t gi,
                     unsigned int ci_profile, const char *what,
                     struct sh_error *err)
{
    nvmlComputeInstance_t ci;
    nvmlReturn_t rc =
        j->n->f.nvmlGpuInstanceCreateComputeInstance(gi, ci_profile, &ci);
    if (rc != NVML_SUCCESS)
        return gpu_nvml_fail(j->n, err, rc,
                             "nvmlGpuInstanceCreateComputeInstance(GPU %d, %s)",
                             j->index, what);
    return 0;
}

/* The compute profile id of a compute instance spanning a whole GPU
 * instance of `slices` slices. */
static int full_ci_profile(struct mig_job *j, nvmlGpuInstance_t gi,
                           unsigned int slices, unsigned int *id,
                           struct sh_error *err)
{
    for (unsigned int p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; p++) {
        nvmlComputeInstanceProfileInfo_t info;
        if (p == NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1)
            continue;
        if (j->n->f.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gi, p, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info) ==
                NVML_SUCCESS &&
            info.sliceCount == slices) {
            *id = info.id;
            return 0;
        }
    }
    return sh_errorf(err, SH_EINTERNAL,
                     "GPU %d offers no compute instance profile of %u slices",
                     j->index, slices);
}

/* A device profile, as the driver describes it, under its tool name. */
struct dev_profile {
    char name[GPU_PROFILE_MAX];
    nvmlGpuInstanceProfileInfo_t info;
};

static int device_profiles(struct mig_job *j, struct dev_profile *out,
                           int *nout)
{
    *nout = 0;
    for (unsigned int p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++) {
        struct dev_profile *d = &out[*nout];
        /* Media-extension variants share their base profile's name. */
        if (p == NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 ||
            p == NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1)
            continue;
        if (j->n->f.nvmlDeviceGetGpuInstanceProfileInfo(j->dev, p, &d->info) !=
            NVML_SUCCESS)
            continue;
        preset_mig_name((int)d->info.sliceCount, (int)d->info.sliceCount,
                        d->info.memorySizeMB, j->mem_total, d->name,
                        sizeof(d->name));
        (*nout)++;
    }
    return 0;
}

static const struct dev_profile *profile_by_name(const struct dev_profile *d,
                                                 int n, const char *name)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(d[i].name, name) == 0)
            return &d[i];
    }
    return NULL;
}

/* Plan placements for the layout from what the driver says is possible. */
static int plan(struct mig_job *j, const struct preset_layout *l,
                const struct dev_profile **prof, int *starts, bool *placed,
                struct sh_error *err)
{
    struct preset_fit_item items[GPU_SLICES_MAX];
    *placed = j->n->f.nvmlDeviceGetGpuInstancePossiblePlacements_v2 &&
              j->n->f.nvmlDeviceCreateGpuInstanceWithPlacement;
    if (!*placed)
        return 0; /* the driver will choose */
    for (int i = 0; i < l->nslices; i++) {
        nvmlGpuInstancePlacement_t pl[PRESET_PLACEMENTS_MAX];
        unsigned int count = PRESET_PLACEMENTS_MAX;
        nvmlReturn_t rc = j->n->f.nvmlDeviceGetGpuInstancePossiblePlacements_v2(
            j->dev, prof[i]->info.id, pl, &count);
        if (rc != NVML_SUCCESS)
            return gpu_nvml_fail(
                j->n, err, rc,
                "nvmlDeviceGetGpuInstancePossiblePlacements_v2(GPU %d, %s)",
                j->index, prof[i]->name);
        items[i].nstarts = 0;
        items[i].size = count ? (int)pl[0].size : 0;
        for (unsigned int k = 0; k < count && k < PRESET_PLACEMENTS_MAX; k++)
            items[i].starts[items[i].nstarts++] = (int)pl[k].start;
    }
    if (preset_fit(items, l->nslices, starts) < 0)
        return sh_errorf(
            err, SH_EINVAL,
            "layout %s does not fit the MIG placements GPU %d offers", l->name,
            j->index);
    return 0;
}

static int create_layout(struct mig_job *j, const struct preset_layout *l,
                         struct sh_error *err)
{
    struct dev_profile dp[NVML_GPU_INSTANCE_PROFILE_COUNT];
    const struct dev_profile *prof[GPU_SLICES_MAX];
    int starts[GPU_SLICES_MAX];
    int ndp;
    bool placed;

    device_profiles(j, dp, &ndp);
    for (int i = 0; i < l->nslices; i++) {
        prof[i] = profile_by_name(dp, ndp, l->slices[i].profile);
        if (!prof[i])
            return sh_errorf(err, SH_ENOTFOUND,
                             "GPU %d offers no MIG profile %s", j->index,
                             l->slices[i].profile);
    }
    if (plan(j, l, prof, starts, &placed, err) < 0)
        return -1;
    for (int i = 0; i < l->nslices; i++) {
        nvmlGpuInstancePlacement_t pl = {
            .start = placed ? (unsigned int)starts[i] : 0,
            .size = (unsigned int)l->slices[i].memory_slices,
        };
        nvmlGpuInstance_t gi = NULL;
        unsigned int ci_id = 0;
        if (create_gi(j, prof[i]->info.id, placed ? &pl : NULL, prof[i]->name,
                      &gi, err) < 0 ||
            full_ci_profile(j, gi, prof[i]->info.sliceCount, &ci_id, err) < 0 ||
            create_ci(j, gi, ci_id, prof[i]->name, err) < 0)
            return -1;
    }
    return 0;
}

/* Put the GPU back as the snapshot says. */
static int restore(struct mig_job *j, const struct mig_state *st,
                   struct sh_error *err)
{
    bool now;
    if (mig_mode(j, &now, err) < 0)
        return -1;
    if (now && destroy_all(j, err) < 0)
        return -1;
    if (now != st->enabled && set_mode(j, st->enabled, err) < 0)
        return -1;
    for (int i = 0; i < st->ngi; i++) {
        const struct mig_gi *g = &st->gi[i];
        nvmlGpuInstance_t gi;
        char what[32];
        snprintf(what, sizeof(what), "profile id %u", g->profile_id);
        if (create_gi(j, g->profile_id, &g->placement, what, &gi, err) < 0)
            return -1;
        for (int k = 0; k < g->nci; k++) {
            if (create_ci(j, gi, g->ci_profile[k], what, err) < 0)
                return -1;
        }
    }
    return 0;
}

/* True when the GPU already has exactly the layout: MIG on, and the same
 * profiles, each with one compute instance spanning it. */
static bool already_applied(struct mig_job *j, const struct mig_state *st,
                            const struct preset_layout *l)
{
    struct dev_profile dp[NVML_GPU_INSTANCE_PROFILE_COUNT];
    bool used[MIG_GIS_MAX] = {false};
    int ndp;

    if (!st->enabled || !l->mig || st->ngi != l->nslices)
        return false;
    device_profiles(j, dp, &ndp);
    for (int i = 0; i < l->nslices; i++) {
        const struct dev_profile *p =
            profile_by_name(dp, ndp, l->slices[i].profile);
        bool found = false;
        for (int k = 0; p && k < st->ngi && !found; k++) {
            const struct mig_gi *gi = &st->gi[k];
            if (!used[k] && gi->profile_id == p->info.id && gi->nci == 1 &&
                gi->ci_slices[0] == p->info.sliceCount) {
                used[k] = true;
                found = true;
            }
        }
        if (!found)
            return false;
    }
    return true;
}

static int check_funcs(struct mig_job *j, struct sh_error *err)
{
    NEED(nvmlDeviceGetMigMode);
    NEED(nvmlDeviceSetMigMode);
    NEED(nvmlDeviceGetGpuInstanceProfileInfo);
    NEED(nvmlDeviceGetGpuInstances);
    NEED(nvmlGpuInstanceGetInfo);
    NEED(nvmlGpuInstanceDestroy);
    NEED(nvmlGpuInstanceGetComputeInstanceProfileInfo);
    NEED(nvmlGpuInstanceCreateComputeInstance);
    NEED(nvmlGpuInstanceGetComputeInstances);
    NEED(nvmlComputeInstanceDestroy);
    if (!j->n->f.nvmlDeviceCreateGpuInstance &&
        !j->n->f.nvmlDeviceCreateGpuInstanceWithPlacement)
        NEED(nvmlDeviceCreateGpuInstance);
    return 0;
}

static int apply_steps(struct mig_job *j, const struct mig_state *st,
                       const struct preset_layout *l, struct sh_error *err)
{
    if (st->enabled && destroy_all(j, err) < 0)
        return -1;
    if (st->enabled != l->mig && set_mode(j, l->mig, err) < 0)
        return -1;
    if (l->mig && l->nslices > 0 && create_layout(j, l, err) < 0)
        return -1;
    return 0;
}

int gpu_nvml_apply_mig(void *ctx, int index, const struct preset_layout *layout,
                       struct sh_error *err)
{
    struct gpu_nvml *n = ctx;
    struct mig_state before;
    struct mig_job job = {.n = n, .index = index};
    struct mig_job *j = &job;
    nvmlMemory_t mem;

    if (index < 0 || index >= n->ndev)
        return sh_errorf(err, SH_EINVAL,
                         "GPU index %d is not one of the %d GPUs", index,
                         n->ndev);
    j->dev = n->dev[index];
    if (check_funcs(j, err) < 0)
        return -1;
    nvmlReturn_t rc = n->f.nvmlDeviceGetMemoryInfo(j->dev, &mem);
    if (rc != NVML_SUCCESS)
        return gpu_nvml_fail(n, err, rc, "nvmlDeviceGetMemoryInfo(GPU %d)",
                             index);
    j->mem_total = mem.total;
    if (snapshot(j, &before, err) < 0)
        return sh_error_prefix(err, "reading the current MIG layout: ");
    if (!layout->mig && !before.enabled)
        return 0;
    if (already_applied(j, &before, layout))
        return 0;
    if (apply_steps(j, &before, layout, err) == 0)
        return 0;
    /* Keep the first error's code and text; say what became of the GPU. */
    struct sh_error rerr = {0};
    char first[sizeof(rerr.msg)] = "";
    if (err)
        snprintf(first, sizeof(first), "%s", err->msg);
    if (restore(j, &before, &rerr) < 0) {
        if (err)
            snprintf(err->msg, sizeof(err->msg), "%s; rollback failed too: %s",
                     first, rerr.msg);
    } else if (err) {
        snprintf(err->msg, sizeof(err->msg),
                 "%s; rolled back to the previous layout", first);
    }
    return -1;
}
