/* SPDX-License-Identifier: Apache-2.0 */
/* The NVML GPU backend, read side: load the library with dlopen, resolve
 * its functions, discover GPUs, sample utilization and memory, and work out
 * NVLink groups and PCIe topology. Changing MIG layouts is in gpu_mig.c.
 * It never links against NVML, so the agent runs on machines without a
 * driver; it runs unchanged over simgpu.
 */
#include "agent/gpu_nvml.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    size_t offset;
    bool required;
} funcs[] = {
#define GPU_NVML_ENTRY(fn, req) {#fn, offsetof(struct gpu_nvml_funcs, fn), req},
    GPU_NVML_FUNCS(GPU_NVML_ENTRY)
#undef GPU_NVML_ENTRY
};

static enum sh_errc nvml_errc(nvmlReturn_t rc)
{
    switch (rc) {
    case NVML_ERROR_INVALID_ARGUMENT:
    case NVML_ERROR_NOT_SUPPORTED:
        return SH_EINVAL;
    case NVML_ERROR_NO_PERMISSION:
        return SH_EFORBIDDEN;
    case NVML_ERROR_NOT_FOUND:
        return SH_ENOTFOUND;
    case NVML_ERROR_IN_USE:
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
    case NVML_ERROR_INVALID_STATE:
        return SH_ECONFLICT;
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_LIBRARY_NOT_FOUND:
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_RESET_REQUIRED:
    case NVML_ERROR_TIMEOUT:
    case NVML_ERROR_NOT_READY:
        return SH_EUNAVAILABLE;
    default:
        return SH_EINTERNAL;
    }
}

int gpu_nvml_fail(const struct gpu_nvml *n, struct sh_error *err,
                  nvmlReturn_t rc, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    const char *msg =
        n && n->f.nvmlErrorString ? n->f.nvmlErrorString(rc) : NULL;
    return sh_errorf(err, nvml_errc(rc), "%s: %s (NVML error %d)", what,
                     msg ? msg : "unknown error", (int)rc);
}

static void nvml_destroy(void *ctx)
{
    struct gpu_nvml *n = ctx;
    if (!n)
        return;
    if (n->initialised)
        n->f.nvmlShutdown();
    if (n->dl)
        dlclose(n->dl);
    free(n);
}

static int resolve(struct gpu_nvml *n, struct sh_error *err)
{
    for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
        void *sym = dlsym(n->dl, funcs[i].name);
        if (!sym && funcs[i].required)
            return sh_errorf(err, SH_EINTERNAL,
                             "%s lacks the NVML function %s (driver too old?)",
                             n->lib, funcs[i].name);
        /* POSIX guarantees a data pointer can hold a function pointer. */
        memcpy((char *)&n->f + funcs[i].offset, &sym, sizeof(sym));
    }
    /* Drivers before PCI info v3 have v2, with the same structure. */
    if (!n->f.nvmlDeviceGetPciInfo_v3) {
        void *sym = dlsym(n->dl, "nvmlDeviceGetPciInfo_v2");
        memcpy(&n->f.nvmlDeviceGetPciInfo_v3, &sym, sizeof(sym));
    }
    return 0;
}

static int enumerate(struct gpu_nvml *n, struct sh_error *err)
{
    unsigned int count = 0;
    nvmlReturn_t rc = n->f.nvmlDeviceGetCount_v2(&count);
    if (rc != NVML_SUCCESS)
        return gpu_nvml_fail(n, err, rc, "nvmlDeviceGetCount_v2");
    if (count > GPU_PER_NODE_MAX)
        return sh_errorf(
            err, SH_ETOOLARGE,
            "NVML reports %u GPUs; Shoal handles at most %d per node", count,
            GPU_PER_NODE_MAX);
    for (unsigned int i = 0; i < count; i++) {
        rc = n->f.nvmlDeviceGetHandleByIndex_v2(i, &n->dev[i]);
        if (rc != NVML_SUCCESS)
            return gpu_nvml_fail(n, err, rc,
                                 "nvmlDeviceGetHandleByIndex_v2(GPU %u)", i);
    }
    n->ndev = (int)count;
    return 0;
}

struct gpu_nvml *gpu_nvml_create(const char *lib, struct sh_error *err)
{
    struct gpu_nvml *n = calloc(1, sizeof(*n));
    if (!n) {
        sh_errorf(err, SH_EINTERNAL, "gpu: out of memory");
        return NULL;
    }
    if (!lib)
        lib = GPU_NVML_DEFAULT_LIB;
    if (strlen(lib) >= sizeof(n->lib)) {
        sh_errorf(err, SH_EINVAL, "NVML library path is longer than %zu bytes",
                  sizeof(n->lib) - 1);
        goto error;
    }
    snprintf(n->lib, sizeof(n->lib), "%s", lib);
    n->dl = dlopen(n->lib, RTLD_NOW | RTLD_LOCAL);
    if (!n->dl) {
        const char *why = dlerror();
        sh_errorf(err, SH_EUNAVAILABLE,
                  "NVML library %s cannot be loaded (no NVIDIA driver on this "
                  "machine?): %s",
                  n->lib, why ? why : "unknown reason");
        goto error;
    }
    if (resolve(n, err) < 0)
        goto error;
    nvmlReturn_t rc = n->f.nvmlInit_v2();
    if (rc != NVML_SUCCESS) {
        gpu_nvml_fail(n, err, rc, "nvmlInit_v2 (%s)", n->lib);
        goto error;
    }
    n->initialised = true;
    if (enumerate(n, err) < 0)
        goto error;
    return n;
error:
    nvml_destroy(n);
    return NULL;
}

static void read_pci(struct gpu_nvml *n, nvmlDevice_t dev, struct gpu_info *g)
{
    nvmlPciInfo_t pci;
    if (!n->f.nvmlDeviceGetPciInfo_v3)
        return;
    memset(&pci, 0, sizeof(pci));
    if (n->f.nvmlDeviceGetPciInfo_v3(dev, &pci) == NVML_SUCCESS) {
        pci.busId[sizeof(pci.busId) - 1] = '\0';
        snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%s", pci.busId);
    }
}

static void read_mig_mode(struct gpu_nvml *n, nvmlDevice_t dev,
                          struct gpu_info *g)
{
    unsigned int cur = 0, pending = 0;
    if (!n->f.nvmlDeviceGetMigMode)
        return;
    /* NOT_SUPPORTED: not MIG capable. Any other error: report the GPU as
     * not MIG capable rather than failing discovery. */
    if (n->f.nvmlDeviceGetMigMode(dev, &cur, &pending) == NVML_SUCCESS) {
        g->mig_capable = true;
        g->mig_enabled = cur == NVML_DEVICE_MIG_ENABLE;
    }
}

static int read_gpu(struct gpu_nvml *n, int i, struct gpu_info *g,
                    struct sh_error *err)
{
    nvmlDevice_t dev = n->dev[i];
    nvmlMemory_t mem;
    nvmlUtilization_t util;
    nvmlReturn_t rc;

    memset(g, 0, sizeof(*g));
    g->index = i;
    g->util_pct = -1;
    g->nvlink_group = -1;
    rc = n->f.nvmlDeviceGetUUID(dev, g->uuid, sizeof(g->uuid));
    if (rc != NVML_SUCCESS)
        return gpu_nvml_fail(n, err, rc, "nvmlDeviceGetUUID(GPU %d)", i);
    rc = n->f.nvmlDeviceGetName(dev, g->name, sizeof(g->name));
    if (rc != NVML_SUCCESS)
        return gpu_nvml_fail(n, err, rc, "nvmlDeviceGetName(GPU %d)", i);
    rc = n->f.nvmlDeviceGetMemoryInfo(dev, &mem);
    if (rc != NVML_SUCCESS)
        return gpu_nvml_fail(n, err, rc, "nvmlDeviceGetMemoryInfo(GPU %d)", i);
    g->uuid[sizeof(g->uuid) - 1] = '\0';
    g->name[sizeof(g->name) - 1] = '\0';
    g->mem_total = mem.total;
    g->mem_used = mem.used;
    gpu_model_from_name(g->name, g->mem_total, g->model, sizeof(g->model));
    if (n->f.nvmlDeviceGetUtilizationRates &&
        n->f.nvmlDeviceGetUtilizationRates(dev, &util) == NVML_SUCCESS)
        g->util_pct = util.gpu > 100 ? 100 : (int)util.gpu;
    read_pci(n, dev, g);
    unsigned int minor;
    g->minor = -1;
    if (n->f.nvmlDeviceGetMinorNumber &&
        n->f.nvmlDeviceGetMinorNumber(dev, &minor) == NVML_SUCCESS &&
        minor < 256)
        g->minor = (int)minor;
    read_mig_mode(n, dev, g);
    if (g->mig_enabled)
        gpu_nvml_read_slices(n, dev, g);
    return 0;
}

/* NVLink groups by union-find over GPUs and the far ends of their active
 * links (another GPU, or an NVSwitch): GPUs that reach one another through
 * links, directly or through a switch, end up in one component. Endpoints
 * are keyed by PCI domain/bus/device. Best effort: a link that is not active
 * or whose state cannot be read is ignored. */
#define NVL_NODES_MAX (GPU_PER_NODE_MAX * (NVML_NVLINK_MAX_LINKS + 1) + 1)
#define NVL_FABRIC (~0ULL)

struct nvl_graph {
    int nnodes;
    unsigned long long key[NVL_NODES_MAX];
    int parent[NVL_NODES_MAX];
};

static int nvl_find(struct nvl_graph *gr, int x)
{
    while (gr->parent[x] != x) {
        gr->parent[x] = gr->parent[gr->parent[x]];
        x = gr->parent[x];
    }
    return x;
}

static void nvl_union(struct nvl_graph *gr, int a, int b)
{
    a = nvl_find(gr, a);
    b = nvl_find(gr, b);
    if (a != b)
        gr->parent[a < b ? b : a] = a < b ? a : b;
}

static unsigned long long pci_key(const nvmlPciInfo_t *p)
{
    return ((unsigned long long)p->domain << 32) |
           ((unsigned long long)(p->bus & 0xff) << 8) | (p->device & 0xff);
}

static int nvl_node(struct nvl_graph *gr, unsigned long long key)
{
    for (int i = 0; i < gr->nnodes; i++) {
        if (gr->key[i] == key)
            return i;
    }
    if (gr->nnodes >= NVL_NODES_MAX)
        return -1;
    gr->key[gr->nnodes] = key;
    gr->parent[gr->nnodes] = gr->nnodes;
    return gr->nnodes++;
}

static void nvl_scan_links(struct gpu_nvml *n, struct nvl_graph *gr, int i,
                           bool *linked)
{
    for (unsigned int l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
        nvmlEnableState_t active = NVML_FEATURE_DISABLED;
        nvmlPciInfo_t remote;
        nvmlReturn_t rc = n->f.nvmlDeviceGetNvLinkState(n->dev[i], l, &active);
        if (rc != NVML_SUCCESS)
            break; /* no NVLink, or no more links on this GPU */
        if (active != NVML_FEATURE_ENABLED)
            continue;
        memset(&remote, 0, sizeof(remote));
        /* An active link whose far end the driver does not describe (an
         * NVSwitch on some boards) joins one shared "fabric" endpoint. */
        unsigned long long key = NVL_FABRIC;
        if (n->f.nvmlDeviceGetNvLinkRemotePciInfo_v2(n->dev[i], l, &remote) ==
            NVML_SUCCESS)
            key = pci_key(&remote);
        int node = nvl_node(gr, key);
        if (node < 0)
            continue;
        nvl_union(gr, i, node);
        linked[i] = true;
    }
}

static void compute_groups(struct gpu_nvml *n)
{
    struct nvl_graph *gr = calloc(1, sizeof(*gr));
    bool linked[GPU_PER_NODE_MAX] = {false};
    int members[GPU_PER_NODE_MAX] = {0};

    for (int i = 0; i < n->ndev; i++)
        n->group[i] = -1;
    n->groups_known = true;
    if (!gr || !n->f.nvmlDeviceGetNvLinkState ||
        !n->f.nvmlDeviceGetNvLinkRemotePciInfo_v2 ||
        !n->f.nvmlDeviceGetPciInfo_v3)
        goto out;
    /* Nodes 0..ndev-1 are the GPUs themselves. */
    for (int i = 0; i < n->ndev; i++) {
        nvmlPciInfo_t pci;
        memset(&pci, 0, sizeof(pci));
        gr->key[i] =
            n->f.nvmlDeviceGetPciInfo_v3(n->dev[i], &pci) == NVML_SUCCESS
                ? pci_key(&pci)
                : ~0ULL - (unsigned long long)i;
        gr->parent[i] = i;
    }
    gr->nnodes = n->ndev;
    for (int i = 0; i < n->ndev; i++)
        nvl_scan_links(n, gr, i, linked);
    for (int i = 0; i < n->ndev; i++)
        members[nvl_find(gr, i)]++;
    /* The root is the smallest node in a component, and GPUs come first,
     * so a component's root is its smallest GPU index. */
    for (int i = 0; i < n->ndev; i++) {
        int root = nvl_find(gr, i);
        if (linked[i] && root < n->ndev && members[root] > 1)
            n->group[i] = root;
    }
out:
    free(gr);
}

static int nvml_discover(void *ctx, struct gpu_info **gpus, int *ngpus,
                         struct sh_error *err)
{
    struct gpu_nvml *n = ctx;
    struct gpu_info *out = NULL;

    if (enumerate(n, err) < 0)
        return -1;
    compute_groups(n);
    if (n->ndev > 0) {
        out = calloc((size_t)n->ndev, sizeof(*out));
        if (!out)
            return sh_errorf(err, SH_EINTERNAL, "gpu: out of memory");
    }
    for (int i = 0; i < n->ndev; i++) {
        if (read_gpu(n, i, &out[i], err) < 0) {
            free(out);
            return -1;
        }
        out[i].nvlink_group = n->group[i];
    }
    *gpus = out;
    *ngpus = n->ndev;
    return 0;
}

static int nvml_sample(void *ctx, struct gpu_info *gpus, int ngpus,
                       struct sh_error *err)
{
    struct gpu_nvml *n = ctx;
    int util[GPU_PER_NODE_MAX];
    unsigned long long used[GPU_PER_NODE_MAX];

    for (int k = 0; k < ngpus; k++) {
        int i = gpus[k].index;
        nvmlUtilization_t u;
        nvmlMemory_t mem;
        if (i < 0 || i >= n->ndev)
            return sh_errorf(err, SH_EINVAL,
                             "GPU index %d is not one of the %d GPUs", i,
                             n->ndev);
        util[k] = -1;
        /* Utilization is optional (MIG mode has none): only a lost GPU
         * fails the sample. */
        if (n->f.nvmlDeviceGetUtilizationRates) {
            nvmlReturn_t rc = n->f.nvmlDeviceGetUtilizationRates(n->dev[i], &u);
            if (rc == NVML_SUCCESS)
                util[k] = u.gpu > 100 ? 100 : (int)u.gpu;
            else if (rc == NVML_ERROR_GPU_IS_LOST)
                return gpu_nvml_fail(
                    n, err, rc, "nvmlDeviceGetUtilizationRates(GPU %d)", i);
        }
        nvmlReturn_t rc = n->f.nvmlDeviceGetMemoryInfo(n->dev[i], &mem);
        if (rc != NVML_SUCCESS)
            return gpu_nvml_fail(n, err, rc, "nvmlDeviceGetMemoryInfo(GPU %d)",
                                 i);
        used[k] = mem.used;
    }
    for (int k = 0; k < ngpus; k++) {
        gpus[k].util_pct = util[k];
        gpus[k].mem_used = used[k];
    }
    return 0;
}

static enum gpu_link link_from_level(nvmlGpuTopologyLevel_t level)
{
    switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
        return GPU_LINK_SELF;
    case NVML_TOPOLOGY_SINGLE:
    case NVML_TOPOLOGY_MULTIPLE:
        return GPU_LINK_PCI_SWITCH;
    case NVML_TOPOLOGY_HOSTBRIDGE:
        return GPU_LINK_PCI_HOST;
    case NVML_TOPOLOGY_NODE:
        return GPU_LINK_NUMA;
    case NVML_TOPOLOGY_SYSTEM:
        return GPU_LINK_SYSTEM;
    default:
        return GPU_LINK_UNKNOWN;
    }
}

static int nvml_link_between(void *ctx, int a, int b, enum gpu_link *out,
                             struct sh_error *err)
{
    struct gpu_nvml *n = ctx;
    nvmlGpuTopologyLevel_t level;

    if (a < 0 || a >= n->ndev || b < 0 || b >= n->ndev)
        return sh_errorf(err, SH_EINVAL, "GPU indexes %d and %d must be 0..%d",
                         a, b, n->ndev - 1);
    if (a == b) {
        *out = GPU_LINK_SELF;
        return 0;
    }
    if (!n->groups_known)
        compute_groups(n);
    if (n->group[a] >= 0 && n->group[a] == n->group[b]) {
        *out = GPU_LINK_NVLINK;
        return 0;
    }
    *out = GPU_LINK_UNKNOWN;
    if (!n->f.nvmlDeviceGetTopologyCommonAncestor)
        return 0;
    nvmlReturn_t rc =
        n->f.nvmlDeviceGetTopologyCommonAncestor(n->dev[a], n->dev[b], &level);
    if (rc == NVML_ERROR_NOT_SUPPORTED)
        return 0;
    if (rc != NVML_SUCCESS)
        return gpu_nvml_fail(
            n, err, rc, "nvmlDeviceGetTopologyCommonAncestor(GPU %d, GPU %d)",
            a, b);
    *out = link_from_level(level);
    return 0;
}

const struct gpu_ops gpu_nvml_ops = {
    .name = "nvml",
    .destroy = nvml_destroy,
    .discover = nvml_discover,
    .sample = nvml_sample,
    .link_between = nvml_link_between,
    .apply_mig = gpu_nvml_apply_mig,
};
