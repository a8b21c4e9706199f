/* SPDX-License-Identifier: Apache-2.0 */
/* GPU slicing presets: NVIDIA's published MIG profile tables per GPU model,
 * the named layouts built on them (mig-parted habit: "all-1g.10gb",
 * "all-balanced", "all-disabled", plus "shared-N" time-slicing), and the
 * validator that says why a layout cannot be applied to a model. Shared by
 * the controller, the agent, simgpu and the simulator. Pure: no I/O, no
 * global mutable state; the tables are constant.
 *
 * A MIG GPU has 7 compute slices and 8 memory slices. A GPU instance of a
 * profile occupies `compute_slices` of the 7 and a run of `memory_slices`
 * memory slices that must start at one of the profile's placements.
 * Share convention: a MIG slice's share is compute_slices/7; a shared-N
 * slice's share is 1/N.
 */
#ifndef SHOAL_MODEL_PRESET_H
#define SHOAL_MODEL_PRESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/model/gpu.h"
#include "lib/util/error.h"

#define PRESET_NAME_MAX 48
#define PRESET_COMPUTE_SLICES 7 /* compute slices of a MIG GPU */
#define PRESET_MEMORY_SLICES 8  /* memory slices of a MIG GPU */
#define PRESET_PLACEMENTS_MAX 8
#define PRESET_LIST_MAX 24   /* most presets one model can have */
#define PRESET_SHARED_MAX 16 /* shared-N: N is 2..16 (GPU_SLICES_MAX) */

/* One MIG GPU-instance profile of one model, as NVIDIA's MIG user guide
 * lists it (nvidia-smi mig -lgip / -lgipp). */
struct preset_profile {
    const char *name;   /* "1g.10gb" */
    int nvml_index;     /* NVML_GPU_INSTANCE_PROFILE_* constant */
    int id;             /* the profile id NVML and nvidia-smi report */
    int compute_slices; /* of PRESET_COMPUTE_SLICES */
    int memory_slices;  /* of PRESET_MEMORY_SLICES; size of a placement */
    uint64_t mem_mib;   /* memory of one instance, MiB */
    int max_instances;  /* most instances of this profile on one GPU */
    int nplacements;
    int placements[PRESET_PLACEMENTS_MAX]; /* allowed first memory slices */
};

/* A GPU model Shoal knows: its memory and MIG profiles (nprofiles may be 0
 * for a model without MIG). */
struct preset_model {
    const char *model; /* short model, "H100-80GB" */
    uint64_t mem_mib;  /* total memory as NVML reports it, MiB */
    int nprofiles;
    const struct preset_profile *profiles;
    const char *balanced[4]; /* the all-balanced layout, "2x1g.10gb", ... */
};

struct preset_slice {
    enum gpu_slice_kind kind;
    char profile[GPU_PROFILE_MAX]; /* "1g.10gb", "shared/4" */
    uint64_t mem_bytes;            /* memory the slice may use */
    int compute_slices;            /* of 7 for MIG; 0 for shared */
    int memory_slices;             /* of 8 for MIG; 0 for shared */
    int share_num;                 /* share of the GPU, num/den */
    int share_den;
};

/* A layout for one GPU: MIG on with these instances, or MIG off with zero
 * (the whole GPU) or more time-sliced shares. Plain data: copy freely. */
struct preset_layout {
    char model[GPU_MODEL_MAX];
    char name[PRESET_NAME_MAX]; /* the preset it came from, or "custom" */
    bool mig;                   /* MIG mode on */
    int nslices;
    struct preset_slice slices[GPU_SLICES_MAX];
};

/* The model's table entry, or NULL when Shoal has no table for it. The
 * result points into a constant table: valid for the program's life. */
const struct preset_model *preset_model_find(const char *model);

/* The model's MIG profiles (constant table, never freed); NULL with *n = 0
 * when the model has no MIG profiles Shoal knows. */
const struct preset_profile *preset_profiles(const char *model, int *n);

/* One profile of a model by name ("1g.10gb") or by NVML profile id; NULL
 * when absent. Constant table, never freed. */
const struct preset_profile *preset_profile_find(const char *model,
                                                 const char *profile);
const struct preset_profile *preset_profile_by_id(const char *model, int id);

/* Fill names (caller-allocated, max entries) with the presets valid for
 * model, in a stable order: all-disabled, all-enabled and the all-<profile>
 * and all-balanced MIG presets when the model has MIG, then shared-2,
 * shared-4, shared-8. Returns how many were written. */
int preset_list(const char *model, char names[][PRESET_NAME_MAX], int max);

/* Expand a named preset for model into *out (caller-allocated; untouched on
 * failure). Besides the listed names, "shared-N" for any N in 2..16 works.
 * Errors: SH_ENOTFOUND for an unknown preset or a MIG preset on a model
 * without that profile, SH_EINVAL for a malformed name. */
int preset_expand(const char *model, const char *preset,
                  struct preset_layout *out, struct sh_error *err);

/* Parse a custom layout "2x1g.10gb,1x3g.40gb" (a count is optional: "1g.10gb"
 * means one) or "shared/4" for model into *out, then validate it. Borrowed
 * arguments; *out untouched on failure. */
int preset_layout_parse(const char *model, const char *spec,
                        struct preset_layout *out, struct sh_error *err);

/* Check a layout against its model: every profile exists for the model, no
 * profile above its max instances, total compute slices <= 7, memory slices
 * <= 8, the instances fit the placement rules, MIG and shared slices are not
 * mixed, shares are sane and sum to at most 1. Returns 0, or -1 with the
 * reason in err (SH_EINVAL, or SH_ENOTFOUND for an unknown model/profile). */
int preset_validate(const struct preset_layout *layout, struct sh_error *err);

/* Placement planner. Each item may start at one of its nstarts starts and
 * occupies `size` consecutive memory slices (of at most 32). Finds starts
 * for all items with no overlap, trying the given order first (a small
 * backtracking search). Writes chosen[i] and returns 0, or -1 when no
 * assignment exists. */
struct preset_fit_item {
    int size;
    int nstarts;
    int starts[PRESET_PLACEMENTS_MAX];
};
int preset_fit(const struct preset_fit_item *items, int n, int *chosen);

/* The MIG profile name NVIDIA tools show for an instance of gi_slices GPU
 * slices (ci_slices of them in its compute instance) with mem_mib of memory
 * on a GPU of total_bytes: "1g.10gb", or "1c.3g.40gb" when the compute
 * instance is smaller than its GPU instance. Memory is rounded the way
 * mig-parted does: up to eighths of the GPU, then to whole GB. */
void preset_mig_name(int gi_slices, int ci_slices, uint64_t mem_mib,
                     uint64_t total_bytes, char *buf, size_t size);

/* Fill a time-sliced layout of n equal shares of a GPU with mem_total bytes
 * (each slice may use mem_total/n). n must be 1..GPU_SLICES_MAX. */
void preset_shared_layout(const char *model, int n, uint64_t mem_total,
                          struct preset_layout *out);

#endif
