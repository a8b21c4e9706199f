/* SPDX-License-Identifier: Apache-2.0 */
/* The GPU layer's front (see gpu.h): argument checks, layout validation and
 * time-slicing, then dispatch through the backend's operations table. What
 * talks to NVML lives in gpu_nvml.c and gpu_mig.c.
 */
#include "agent/gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/gpu_nvml.h"

struct gpu_backend {
    const struct gpu_ops *ops;
    void *ctx;
};

struct gpu_backend *gpu_backend_create_ops(const struct gpu_ops *ops, void *ctx,
                                           struct sh_error *err)
{
    struct gpu_backend *be = calloc(1, sizeof(*be));
    if (!be) {
        ops->destroy(ctx);
        sh_errorf(err, SH_EINTERNAL, "gpu: out of memory");
        return NULL;
    }
    be->ops = ops;
    be->ctx = ctx;
    return be;
}

struct gpu_backend *gpu_backend_create(const char *lib_path,
                                       struct sh_error *err)
{
    struct gpu_nvml *n = gpu_nvml_create(lib_path, err);
    if (!n)
        return NULL;
    return gpu_backend_create_ops(&gpu_nvml_ops, n, err);
}

void gpu_backend_destroy(struct gpu_backend *be)
{
    if (!be)
        return;
    int saved = errno;
    be->ops->destroy(be->ctx);
    free(be);
    errno = saved;
}

const char *gpu_backend_name(const struct gpu_backend *be)
{
    return be->ops->name;
}

int gpu_discover(struct gpu_backend *be, struct gpu_info **gpus, int *ngpus,
                 struct sh_error *err)
{
    return be->ops->discover(be->ctx, gpus, ngpus, err);
}

int gpu_sample(struct gpu_backend *be, struct gpu_info *gpus, int ngpus,
               struct sh_error *err)
{
    if (ngpus < 0 || ngpus > GPU_PER_NODE_MAX)
        return sh_errorf(err, SH_EINVAL, "gpu: ngpus must be 0..%d",
                         GPU_PER_NODE_MAX);
    return be->ops->sample(be->ctx, gpus, ngpus, err);
}

int gpu_link_between(struct gpu_backend *be, int a, int b, enum gpu_link *out,
                     struct sh_error *err)
{
    return be->ops->link_between(be->ctx, a, b, out, err);
}

int gpu_set_shared(struct gpu_info *gpu, int n, struct sh_error *err)
{
    if (n < 1 || n > GPU_SLICES_MAX)
        return sh_errorf(err, SH_EINVAL, "shared slices per GPU must be 1..%d",
                         GPU_SLICES_MAX);
    if (gpu->mig_enabled)
        return sh_errorf(err, SH_ECONFLICT,
                         "GPU %d is in MIG mode: time-slices need MIG off",
                         gpu->index);
    memset(gpu->slices, 0, sizeof(gpu->slices));
    for (int i = 0; i < n; i++) {
        struct gpu_slice *s = &gpu->slices[i];
        s->kind = GPU_SLICE_SHARED;
        snprintf(s->profile, sizeof(s->profile), "shared/%d", n);
        snprintf(s->uuid, sizeof(s->uuid), "%s", gpu->uuid);
        s->mem_bytes = gpu->mem_total / (uint64_t)n;
        s->gi_id = -1;
        s->ci_id = -1;
        s->share_num = 1;
        s->share_den = n;
    }
    gpu->nslices = n;
    return 0;
}

/* The time-slices of a validated shared layout (shares may be uneven in a
 * custom layout; each slice may use its share of the memory). */
static void set_shared_from_layout(struct gpu_info *gpu,
                                   const struct preset_layout *layout)
{
    memset(gpu->slices, 0, sizeof(gpu->slices));
    for (int i = 0; i < layout->nslices; i++) {
        const struct preset_slice *ls = &layout->slices[i];
        struct gpu_slice *s = &gpu->slices[i];
        s->kind = GPU_SLICE_SHARED;
        snprintf(s->profile, sizeof(s->profile), "%s", ls->profile);
        snprintf(s->uuid, sizeof(s->uuid), "%s", gpu->uuid);
        s->mem_bytes =
            gpu->mem_total / (uint64_t)ls->share_den * (uint64_t)ls->share_num;
        s->gi_id = -1;
        s->ci_id = -1;
        s->share_num = ls->share_num;
        s->share_den = ls->share_den;
    }
    gpu->nslices = layout->nslices;
}

/* Re-read one GPU after a change. */
static int refresh_one(struct gpu_backend *be, int index, struct gpu_info *out,
                       struct sh_error *err)
{
    struct gpu_info *all = NULL;
    int n = 0, rc = -1;
    if (gpu_discover(be, &all, &n, err) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (all[i].index == index) {
            *out = all[i];
            rc = 0;
        }
    }
    if (rc < 0)
        sh_errorf(err, SH_EINTERNAL, "GPU %d vanished after the change", index);
    free(all);
    return rc;
}

static int check_layout(const struct gpu_info *gpu,
                        const struct preset_layout *layout,
                        struct sh_error *err)
{
    if (layout->model[0] && strcmp(layout->model, gpu->model) != 0)
        return sh_errorf(err, SH_EINVAL,
                         "layout %s is for %s, but GPU %d is a %s",
                         layout->name, layout->model, gpu->index, gpu->model);
    if (layout->mig && !gpu->mig_capable)
        return sh_errorf(err, SH_EINVAL, "GPU %d (%s) is not MIG capable",
                         gpu->index, gpu->name);
    if (preset_validate(layout, err) < 0)
        return sh_error_prefix(err, "GPU %d: ", gpu->index);
    return 0;
}

int gpu_apply_layout(struct gpu_backend *be, struct gpu_info *gpu,
                     const struct preset_layout *layout, struct sh_error *err)
{
    struct gpu_info fresh;

    if (check_layout(gpu, layout, err) < 0)
        return -1;
    /* Ask the backend whenever MIG is involved: it decides from the
     * device, not from the caller's copy, whether anything must change
     * (turning MIG off for a shared layout, say). */
    if (layout->mig || gpu->mig_capable) {
        if (be->ops->apply_mig) {
            if (be->ops->apply_mig(be->ctx, gpu->index, layout, err) < 0)
                return -1;
        } else if (layout->mig) {
            return sh_errorf(err, SH_EUNAVAILABLE,
                             "the %s GPU backend cannot change MIG",
                             be->ops->name);
        }
    }
    if (refresh_one(be, gpu->index, &fresh, err) < 0)
        return -1;
    if (!layout->mig && fresh.mig_enabled)
        return sh_errorf(err, SH_ECONFLICT,
                         "GPU %d is still in MIG mode; the %s backend cannot "
                         "turn it off",
                         gpu->index, be->ops->name);
    if (!layout->mig)
        set_shared_from_layout(&fresh, layout);
    *gpu = fresh;
    return 0;
}

int gpu_apply_preset(struct gpu_backend *be, struct gpu_info *gpu,
                     const char *preset, struct sh_error *err)
{
    struct preset_layout layout;
    if (preset_expand(gpu->model, preset, &layout, err) < 0)
        return sh_error_prefix(err, "GPU %d: ", gpu->index);
    return gpu_apply_layout(be, gpu, &layout, err);
}

bool gpu_mps_available(const char *path)
{
    if (!path)
        path = getenv("PATH");
    if (!path)
        return false;
    const char *p = path;
    for (;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char file[4096];
        /* An empty entry means the current directory, as for execvp. */
        int w = snprintf(file, sizeof(file), "%.*s%snvidia-cuda-mps-control",
                         (int)len, p, len ? "/" : "");
        if (w > 0 && (size_t)w < sizeof(file) && access(file, X_OK) == 0)
            return true;
        if (!colon)
            return false;
        p = colon + 1;
    }
}
