/* SPDX-License-Identifier: Apache-2.0 */
/* MIG profile tables, slicing presets and their validation (see preset.h).
 * The tables follow NVIDIA's MIG user guide ("Supported MIG profiles") for
 * A100-40GB, A100-80GB, H100-80GB and H200-141GB; media-extension (+me)
 * variants are left out on purpose: Shoal never creates them.
 */
#include "lib/model/preset.h"

#include <stdio.h>
#include <string.h>

#include "lib/gpu/nvml.h"

/* NVML's GPU instance profile ids, as the presets name them. */
enum {
    NVML_IDX_1_SLICE = NVML_GPU_INSTANCE_PROFILE_1_SLICE,
    NVML_IDX_2_SLICE = NVML_GPU_INSTANCE_PROFILE_2_SLICE,
    NVML_IDX_3_SLICE = NVML_GPU_INSTANCE_PROFILE_3_SLICE,
    NVML_IDX_4_SLICE = NVML_GPU_INSTANCE_PROFILE_4_SLICE,
    NVML_IDX_7_SLICE = NVML_GPU_INSTANCE_PROFILE_7_SLICE,
    /* one compute slice, two memory slices */
    NVML_IDX_1_SLICE_REV2 = NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2,
};

/* The same placement rules hold on every model with 7+8 slices. */
#define PL_1G                                                                  \
    7,                                                                         \
    {                                                                          \
        0, 1, 2, 3, 4, 5, 6                                                    \
    }
#define PL_1G_2X                                                               \
    4,                                                                         \
    {                                                                          \
        0, 2, 4, 6                                                             \
    }
#define PL_2G                                                                  \
    3,                                                                         \
    {                                                                          \
        0, 2, 4                                                                \
    }
#define PL_3G                                                                  \
    2,                                                                         \
    {                                                                          \
        0, 4                                                                   \
    }
#define PL_4G                                                                  \
    1,                                                                         \
    {                                                                          \
        0                                                                      \
    }
#define PL_7G                                                                  \
    1,                                                                         \
    {                                                                          \
        0                                                                      \
    }

/* name, NVML index, id, compute, memory slices, MiB, max, placements */
static const struct preset_profile a100_40gb[] = {
    {"1g.5gb", NVML_IDX_1_SLICE, 19, 1, 1, 4864, 7, PL_1G},
    {"1g.10gb", NVML_IDX_1_SLICE_REV2, 15, 1, 2, 9856, 4, PL_1G_2X},
    {"2g.10gb", NVML_IDX_2_SLICE, 14, 2, 2, 9856, 3, PL_2G},
    {"3g.20gb", NVML_IDX_3_SLICE, 9, 3, 4, 19968, 2, PL_3G},
    {"4g.20gb", NVML_IDX_4_SLICE, 5, 4, 4, 19968, 1, PL_4G},
    {"7g.40gb", NVML_IDX_7_SLICE, 0, 7, 8, 40192, 1, PL_7G},
};

static const struct preset_profile a100_80gb[] = {
    {"1g.10gb", NVML_IDX_1_SLICE, 19, 1, 1, 9728, 7, PL_1G},
    {"1g.20gb", NVML_IDX_1_SLICE_REV2, 15, 1, 2, 19968, 4, PL_1G_2X},
    {"2g.20gb", NVML_IDX_2_SLICE, 14, 2, 2, 19968, 3, PL_2G},
    {"3g.40gb", NVML_IDX_3_SLICE, 9, 3, 4, 40192, 2, PL_3G},
    {"4g.40gb", NVML_IDX_4_SLICE, 5, 4, 4, 40192, 1, PL_4G},
    {"7g.80gb", NVML_IDX_7_SLICE, 0, 7, 8, 80640, 1, PL_7G},
};

static const struct preset_profile h100_80gb[] = {
    {"1g.10gb", NVML_IDX_1_SLICE, 19, 1, 1, 9984, 7, PL_1G},
    {"1g.20gb", NVML_IDX_1_SLICE_REV2, 15, 1, 2, 20096, 4, PL_1G_2X},
    {"2g.20gb", NVML_IDX_2_SLICE, 14, 2, 2, 20096, 3, PL_2G},
    {"3g.40gb", NVML_IDX_3_SLICE, 9, 3, 4, 40320, 2, PL_3G},
    {"4g.40gb", NVML_IDX_4_SLICE, 5, 4, 4, 40320, 1, PL_4G},
    {"7g.80gb", NVML_IDX_7_SLICE, 0, 7, 8, 80896, 1, PL_7G},
};

static const struct preset_profile h200_141gb[] = {
    {"1g.18gb", NVML_IDX_1_SLICE, 19, 1, 1, 16896, 7, PL_1G},
    {"1g.35gb", NVML_IDX_1_SLICE_REV2, 15, 1, 2, 33792, 4, PL_1G_2X},
    {"2g.35gb", NVML_IDX_2_SLICE, 14, 2, 2, 33792, 3, PL_2G},
    {"3g.71gb", NVML_IDX_3_SLICE, 9, 3, 4, 71424, 2, PL_3G},
    {"4g.71gb", NVML_IDX_4_SLICE, 5, 4, 4, 71424, 1, PL_4G},
    {"7g.141gb", NVML_IDX_7_SLICE, 0, 7, 8, 143360, 1, PL_7G},
};

#define NPROF(t) (int)(sizeof(t) / sizeof((t)[0])), t

static const struct preset_model models[] = {
    {"A100-40GB",
     40960,
     NPROF(a100_40gb),
     {"2x1g.5gb", "1x2g.10gb", "1x3g.20gb", NULL}},
    {"A100-80GB",
     81920,
     NPROF(a100_80gb),
     {"2x1g.10gb", "1x2g.20gb", "1x3g.40gb", NULL}},
    {"H100-80GB",
     81559,
     NPROF(h100_80gb),
     {"2x1g.10gb", "1x2g.20gb", "1x3g.40gb", NULL}},
    {"H200-141GB",
     143771,
     NPROF(h200_141gb),
     {"2x1g.18gb", "1x2g.35gb", "1x3g.71gb", NULL}},
    /* Models without MIG that Shoal still knows the memory of. */
    {"V100-16GB", 16384, 0, NULL, {NULL}},
    {"V100-32GB", 32768, 0, NULL, {NULL}},
    {"A10-24GB", 23028, 0, NULL, {NULL}},
    {"L4-24GB", 23034, 0, NULL, {NULL}},
    {"L40S-48GB", 46068, 0, NULL, {NULL}},
    {"RTX-4090-24GB", 24564, 0, NULL, {NULL}},
};

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

const struct preset_model *preset_model_find(const char *model)
{
    for (size_t i = 0; model && i < sizeof(models) / sizeof(models[0]); i++) {
        if (strcmp(models[i].model, model) == 0)
            return &models[i];
    }
    return NULL;
}

const struct preset_profile *preset_profiles(const char *model, int *n)
{
    const struct preset_model *m = preset_model_find(model);
    *n = m ? m->nprofiles : 0;
    return m && m->nprofiles ? m->profiles : NULL;
}

const struct preset_profile *preset_profile_find(const char *model,
                                                 const char *profile)
{
    int n;
    const struct preset_profile *p = preset_profiles(model, &n);
    for (int i = 0; profile && i < n; i++) {
        if (strcmp(p[i].name, profile) == 0)
            return &p[i];
    }
    return NULL;
}

const struct preset_profile *preset_profile_by_id(const char *model, int id)
{
    int n;
    const struct preset_profile *p = preset_profiles(model, &n);
    for (int i = 0; i < n; i++) {
        if (p[i].id == id)
            return &p[i];
    }
    return NULL;
}

/* Total memory of a model in bytes: from the table, else from the "-NNGB"
 * suffix of its name (NN GiB), else 0. */
static uint64_t model_mem_bytes(const char *model)
{
    const struct preset_model *m = preset_model_find(model);
    if (m)
        return m->mem_mib * MIB;
    const char *dash = model ? strrchr(model, '-') : NULL;
    unsigned gb = 0;
    char unit[4] = "";
    if (dash && sscanf(dash + 1, "%u%3s", &gb, unit) == 2 &&
        strcmp(unit, "GB") == 0 && gb <= 4096)
        return (uint64_t)gb * GIB;
    return 0;
}

int preset_list(const char *model, char names[][PRESET_NAME_MAX], int max)
{
    int n = 0;
#define ADD(...)                                                               \
    do {                                                                       \
        if (n < max)                                                           \
            snprintf(names[n++], PRESET_NAME_MAX, __VA_ARGS__);                \
    } while (0)
    const struct preset_model *m = preset_model_find(model);
    ADD("all-disabled");
    if (m && m->nprofiles) {
        ADD("all-enabled");
        for (int i = 0; i < m->nprofiles; i++)
            ADD("all-%s", m->profiles[i].name);
        if (m->balanced[0])
            ADD("all-balanced");
    }
    ADD("shared-2");
    ADD("shared-4");
    ADD("shared-8");
#undef ADD
    return n;
}

static void layout_init(struct preset_layout *l, const char *model,
                        const char *name, bool mig)
{
    memset(l, 0, sizeof(*l));
    snprintf(l->model, sizeof(l->model), "%s", model);
    snprintf(l->name, sizeof(l->name), "%s", name);
    l->mig = mig;
}

/* Append count instances of profile p. Returns -1 when the slice array is
 * full. */
static int layout_add_mig(struct preset_layout *l,
                          const struct preset_profile *p, int count)
{
    for (int i = 0; i < count; i++) {
        if (l->nslices >= GPU_SLICES_MAX)
            return -1;
        struct preset_slice *s = &l->slices[l->nslices++];
        s->kind = GPU_SLICE_MIG;
        snprintf(s->profile, sizeof(s->profile), "%s", p->name);
        s->mem_bytes = p->mem_mib * MIB;
        s->compute_slices = p->compute_slices;
        s->memory_slices = p->memory_slices;
        s->share_num = p->compute_slices;
        s->share_den = PRESET_COMPUTE_SLICES;
    }
    return 0;
}

/* Largest instances first: the order NVIDIA recommends creating them in,
 * and the order the placement search does best with. Insertion sort: at
 * most GPU_SLICES_MAX entries, and it is stable. */
static void layout_sort(struct preset_layout *l)
{
    for (int i = 1; i < l->nslices; i++) {
        struct preset_slice s = l->slices[i];
        int j = i - 1;
        while (j >= 0 && (l->slices[j].compute_slices < s.compute_slices ||
                          (l->slices[j].compute_slices == s.compute_slices &&
                           l->slices[j].memory_slices < s.memory_slices))) {
            l->slices[j + 1] = l->slices[j];
            j--;
        }
        l->slices[j + 1] = s;
    }
}

void preset_shared_layout(const char *model, int n, uint64_t mem_total,
                          struct preset_layout *out)
{
    char name[PRESET_NAME_MAX];
    snprintf(name, sizeof(name), "shared-%d", n);
    layout_init(out, model, name, false);
    for (int i = 0; i < n && i < GPU_SLICES_MAX; i++) {
        struct preset_slice *s = &out->slices[out->nslices++];
        s->kind = GPU_SLICE_SHARED;
        snprintf(s->profile, sizeof(s->profile), "shared/%d", n);
        s->mem_bytes = n > 0 ? mem_total / (uint64_t)n : 0;
        s->share_num = 1;
        s->share_den = n;
    }
}

/* Strict decimal in [min, max] filling the whole string. */
static int parse_small_int(const char *s, int min, int max, int *out)
{
    int v = 0;
    if (!*s)
        return -1;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9' || v > 1000)
            return -1;
        v = v * 10 + (*c - '0');
    }
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Parse "NxPROFILE" or "PROFILE" and add it to l. */
static int layout_add_token(struct preset_layout *l, const char *tok,
                            struct sh_error *err)
{
    int count = 1;
    const char *prof = tok;
    const char *x = strchr(tok, 'x');
    if (x && x > tok) {
        char num[8];
        size_t len = (size_t)(x - tok);
        if (len >= sizeof(num))
            return sh_errorf(err, SH_EINVAL,
                             "slice count in \"%s\" is too large (at most %d)",
                             tok, GPU_SLICES_MAX);
        memcpy(num, tok, len);
        num[len] = '\0';
        if (parse_small_int(num, 1, GPU_SLICES_MAX, &count) < 0)
            return sh_errorf(err, SH_EINVAL,
                             "slice count in \"%s\" must be 1..%d", tok,
                             GPU_SLICES_MAX);
        prof = x + 1;
    }
    const struct preset_profile *p = preset_profile_find(l->model, prof);
    if (!p)
        return sh_errorf(err, SH_ENOTFOUND,
                         "profile \"%s\" does not exist on %s", prof, l->model);
    if (layout_add_mig(l, p, count) < 0)
        return sh_errorf(err, SH_EINVAL, "layout has more than %d slices",
                         GPU_SLICES_MAX);
    return 0;
}

static int mig_model(const char *model, const struct preset_model **m,
                     struct sh_error *err)
{
    *m = preset_model_find(model);
    if (!*m || !(*m)->nprofiles)
        return sh_errorf(err, SH_ENOTFOUND, "GPU model %s has no MIG profiles",
                         model ? model : "(none)");
    return 0;
}

int preset_layout_parse(const char *model, const char *spec,
                        struct preset_layout *out, struct sh_error *err)
{
    struct preset_layout l;
    const struct preset_model *m;
    char buf[256];
    int n;

    if (strlen(spec) >= sizeof(buf))
        return sh_errorf(err, SH_ETOOLARGE, "layout is longer than %zu bytes",
                         sizeof(buf) - 1);
    if (strncmp(spec, "shared/", 7) == 0) {
        if (parse_small_int(spec + 7, 1, PRESET_SHARED_MAX, &n) < 0)
            return sh_errorf(err, SH_EINVAL, "shared/N needs N in 1..%d",
                             PRESET_SHARED_MAX);
        preset_shared_layout(model, n, model_mem_bytes(model), &l);
        snprintf(l.name, sizeof(l.name), "custom");
        goto done;
    }
    if (mig_model(model, &m, err) < 0)
        return -1;
    layout_init(&l, model, "custom", true);
    snprintf(buf, sizeof(buf), "%s", spec);
    char *p = buf;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (!*p)
            return sh_errorf(err, SH_EINVAL, "layout \"%s\" has an empty entry",
                             spec);
        if (layout_add_token(&l, p, err) < 0)
            return -1;
        if (!comma)
            break;
        p = comma + 1;
    }
    layout_sort(&l);
done:
    if (preset_validate(&l, err) < 0)
        return -1;
    *out = l;
    return 0;
}

int preset_expand(const char *model, const char *preset,
                  struct preset_layout *out, struct sh_error *err)
{
    struct preset_layout l;
    const struct preset_model *m;
    int n;

    if (!preset || !*preset || strlen(preset) >= PRESET_NAME_MAX)
        return sh_errorf(err, SH_EINVAL, "preset name must be 1..%d bytes",
                         PRESET_NAME_MAX - 1);
    if (strcmp(preset, "all-disabled") == 0) {
        layout_init(&l, model, preset, false);
    } else if (strncmp(preset, "shared-", 7) == 0) {
        if (parse_small_int(preset + 7, 2, PRESET_SHARED_MAX, &n) < 0)
            return sh_errorf(err, SH_EINVAL,
                             "preset %s: shared-N needs N in 2..%d", preset,
                             PRESET_SHARED_MAX);
        preset_shared_layout(model, n, model_mem_bytes(model), &l);
    } else if (strncmp(preset, "all-", 4) == 0) {
        if (mig_model(model, &m, err) < 0)
            return sh_error_prefix(err, "preset %s: ", preset);
        layout_init(&l, model, preset, true);
        const char *what = preset + 4;
        if (strcmp(what, "balanced") == 0) {
            for (int i = 0; i < 4 && m->balanced[i]; i++) {
                if (layout_add_token(&l, m->balanced[i], err) < 0)
                    return sh_error_prefix(err, "preset %s: ", preset);
            }
        } else if (strcmp(what, "enabled") != 0) {
            const struct preset_profile *p = preset_profile_find(model, what);
            if (!p)
                return sh_errorf(
                    err, SH_ENOTFOUND,
                    "preset %s does not exist for %s: no profile %s", preset,
                    model, what);
            layout_add_mig(&l, p, p->max_instances);
        }
        layout_sort(&l);
    } else {
        return sh_errorf(err, SH_ENOTFOUND,
                         "unknown preset %s (expected all-disabled, "
                         "all-<profile>, all-balanced or shared-N)",
                         preset);
    }
    if (preset_validate(&l, err) < 0)
        return sh_error_prefix(err, "preset %s: ", preset);
    *out = l;
    return 0;
}

static bool fit_search(const struct preset_fit_item *items, int n, int i,
                       uint32_t used, int *chosen)
{
    if (i == n)
        return true;
    const struct preset_fit_item *it = &items[i];
    /* Identical items are interchangeable: only try them in increasing
     * start order, which turns 7! orders of seven 1g slices into one. */
    bool same = i > 0 && items[i - 1].size == it->size &&
                items[i - 1].nstarts == it->nstarts &&
                memcmp(items[i - 1].starts, it->starts,
                       sizeof(it->starts[0]) * (size_t)it->nstarts) == 0;
    for (int k = 0; k < it->nstarts; k++) {
        int start = it->starts[k];
        if (same && start <= chosen[i - 1])
            continue;
        if (start < 0 || it->size <= 0 || start + it->size > 32)
            continue;
        uint32_t mask =
            (it->size == 32 ? UINT32_MAX : ((UINT32_C(1) << it->size) - 1))
            << start;
        if (used & mask)
            continue;
        chosen[i] = start;
        if (fit_search(items, n, i + 1, used | mask, chosen))
            return true;
    }
    return false;
}

int preset_fit(const struct preset_fit_item *items, int n, int *chosen)
{
    return fit_search(items, n, 0, 0, chosen) ? 0 : -1;
}

static int validate_share(const struct preset_slice *s, int i,
                          struct sh_error *err)
{
    if (s->share_den < 1 || s->share_den > 64 || s->share_num < 1 ||
        s->share_num > s->share_den)
        return sh_errorf(err, SH_EINVAL,
                         "slice %d (%s): share %d/%d must be a fraction in (0, "
                         "1] with a denominator of at most 64",
                         i, s->profile, s->share_num, s->share_den);
    return 0;
}

static int validate_shared(const struct preset_layout *l, struct sh_error *err)
{
    /* Sum the shares exactly: over the common denominator 64! would
     * overflow, so compare with the least common multiple step by step. */
    uint64_t num = 0, den = 1;
    for (int i = 0; i < l->nslices; i++) {
        const struct preset_slice *s = &l->slices[i];
        if (s->kind != GPU_SLICE_SHARED)
            return sh_errorf(
                err, SH_EINVAL,
                "slice %d (%s) is a MIG slice but MIG is off in this layout: "
                "MIG and shared slices cannot be mixed",
                i, s->profile);
        if (validate_share(s, i, err) < 0)
            return -1;
        uint64_t a = den, b = (uint64_t)s->share_den;
        while (b) {
            uint64_t t = a % b;
            a = b;
            b = t;
        }
        uint64_t lcm = den / a * (uint64_t)s->share_den;
        num = num * (lcm / den) +
              (uint64_t)s->share_num * (lcm / (uint64_t)s->share_den);
        den = lcm;
    }
    if (num > den)
        return sh_errorf(err, SH_EINVAL,
                         "shared slices add up to %llu/%llu of the GPU, more "
                         "than the whole GPU",
                         (unsigned long long)num, (unsigned long long)den);
    return 0;
}

static int validate_mig(const struct preset_layout *l, struct sh_error *err)
{
    const struct preset_model *m;
    struct preset_fit_item items[GPU_SLICES_MAX];
    int chosen[GPU_SLICES_MAX];
    int counts[PRESET_LIST_MAX] = {0};
    int compute = 0, memory = 0;

    if (mig_model(l->model, &m, err) < 0)
        return -1;
    for (int i = 0; i < l->nslices; i++) {
        const struct preset_slice *s = &l->slices[i];
        if (s->kind != GPU_SLICE_MIG)
            return sh_errorf(
                err, SH_EINVAL,
                "slice %d (%s) is a shared slice but MIG is on in this layout: "
                "MIG and shared slices cannot be mixed",
                i, s->profile);
        const struct preset_profile *p =
            preset_profile_find(l->model, s->profile);
        if (!p)
            return sh_errorf(err, SH_ENOTFOUND,
                             "slice %d: profile %s does not exist on %s", i,
                             s->profile, l->model);
        if (validate_share(s, i, err) < 0)
            return -1;
        int k = (int)(p - m->profiles);
        if (++counts[k] > p->max_instances)
            return sh_errorf(err, SH_EINVAL,
                             "too many %s slices: %s allows at most %d",
                             p->name, l->model, p->max_instances);
        compute += p->compute_slices;
        memory += p->memory_slices;
        items[i].size = p->memory_slices;
        items[i].nstarts = p->nplacements;
        memcpy(items[i].starts, p->placements, sizeof(items[i].starts));
    }
    if (compute > PRESET_COMPUTE_SLICES)
        return sh_errorf(
            err, SH_EINVAL,
            "layout uses %d compute slices, more than the %d of a %s", compute,
            PRESET_COMPUTE_SLICES, l->model);
    if (memory > PRESET_MEMORY_SLICES)
        return sh_errorf(
            err, SH_EINVAL,
            "layout uses %d memory slices, more than the %d of a %s", memory,
            PRESET_MEMORY_SLICES, l->model);
    if (preset_fit(items, l->nslices, chosen) < 0)
        return sh_errorf(err, SH_EINVAL,
                         "layout does not fit the MIG placement rules of %s",
                         l->model);
    return 0;
}

int preset_validate(const struct preset_layout *l, struct sh_error *err)
{
    if (l->nslices < 0 || l->nslices > GPU_SLICES_MAX)
        return sh_errorf(err, SH_EINVAL, "a layout has 0..%d slices, not %d",
                         GPU_SLICES_MAX, l->nslices);
    return l->mig ? validate_mig(l, err) : validate_shared(l, err);
}

void preset_mig_name(int gi_slices, int ci_slices, uint64_t mem_mib,
                     uint64_t total_bytes, char *buf, size_t size)
{
    uint64_t gb = 0;
    if (total_bytes) {
        /* Integer form of mig-parted's rule: the fraction of the GPU's
         * memory rounded up to eighths, times the GPU's size in whole GB
         * (rounded up), rounded to the nearest GB. */
        uint64_t eighths = (mem_mib * MIB * 8 + total_bytes - 1) / total_bytes;
        uint64_t total_gb = (total_bytes + GIB - 1) / GIB;
        gb = (eighths * total_gb * 2 + 8) / 16;
    } else {
        gb = (mem_mib + 1023) / 1024;
    }
    if (ci_slices > 0 && ci_slices != gi_slices)
        snprintf(buf, size, "%dc.%dg.%llugb", ci_slices, gi_slices,
                 (unsigned long long)gb);
    else
        snprintf(buf, size, "%dg.%llugb", gi_slices, (unsigned long long)gb);
}
