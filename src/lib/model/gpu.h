/* SPDX-License-Identifier: Apache-2.0 */
/* What Shoal knows about one GPU and its slices, as the agent reports it and
 * the controller keeps it. Plain fixed-size data (no heap), so arrays of GPUs
 * copy and free trivially. Also the rule that turns a vendor device name and
 * memory size into the short model name users type ("H100-80GB").
 */
#ifndef SHOAL_MODEL_GPU_H
#define SHOAL_MODEL_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/util/error.h"

#define GPU_UUID_MAX 96 /* NVML's UUID buffer size, with the NUL */
#define GPU_NAME_MAX 96 /* NVML's device name buffer size */
#define GPU_MODEL_MAX 64
#define GPU_PROFILE_MAX 32
#define GPU_SLICES_MAX 16
#define GPU_PER_NODE_MAX 64

/* How two GPUs of one node are connected (NVML's topology levels, plus
 * NVLink), from closest to farthest. */
enum gpu_link {
    GPU_LINK_SELF = 0,
    GPU_LINK_NVLINK,     /* at least one NVLink between them */
    GPU_LINK_PCI_SWITCH, /* behind one PCIe switch (single or multiple) */
    GPU_LINK_PCI_HOST,   /* behind one PCIe host bridge */
    GPU_LINK_NUMA,       /* same NUMA node / CPU socket */
    GPU_LINK_SYSTEM,     /* across CPU sockets */
    GPU_LINK_UNKNOWN,
};

enum gpu_slice_kind {
    GPU_SLICE_MIG = 0, /* a MIG GPU instance with one compute instance */
    GPU_SLICE_SHARED,  /* a time-slice of the whole GPU */
};

struct gpu_slice {
    enum gpu_slice_kind kind;
    char profile[GPU_PROFILE_MAX]; /* "1g.10gb", "shared/4" */
    char uuid[GPU_UUID_MAX];       /* MIG device UUID, or the GPU's own */
    uint64_t mem_bytes;            /* memory this slice may use */
    int gi_id;                     /* MIG GPU instance id; -1 for shared */
    int ci_id;                     /* MIG compute instance id; -1 for shared */
    int share_num;                 /* share of the GPU, num/den (1/7, 1/4) */
    int share_den;
};

struct gpu_info {
    int index;                 /* NVML index on the node */
    char uuid[GPU_UUID_MAX];   /* "GPU-..." */
    char name[GPU_NAME_MAX];   /* vendor name, "NVIDIA H100 80GB HBM3" */
    char model[GPU_MODEL_MAX]; /* short model, "H100-80GB" */
    char pci_bus_id[32];
    int minor;          /* N of /dev/nvidiaN; -1 unknown */
    uint64_t mem_total; /* bytes */
    uint64_t mem_used;  /* bytes, last sample */
    int util_pct;       /* 0..100, last sample; -1 unknown */
    bool mig_capable;
    bool mig_enabled; /* current MIG mode */
    int nvlink_group; /* GPUs joined by NVLink share a group; -1 */
    char preset[48];  /* the slicing preset Shoal applied; "" */
    int nslices;
    struct gpu_slice slices[GPU_SLICES_MAX];
};

/* Derive the short model name from the vendor name and total memory:
 * "NVIDIA H100 80GB HBM3" + 80 GiB -> "H100-80GB",
 * "NVIDIA A100-SXM4-40GB" -> "A100-40GB", "Tesla V100-SXM2-16GB" ->
 * "V100-16GB". The memory is rounded to the marketed size in GB. */
void gpu_model_from_name(const char *name, uint64_t mem_total, char *model,
                         size_t size);

const char *gpu_link_name(enum gpu_link l);

#endif
