/* SPDX-License-Identifier: Apache-2.0 */
/* simgpu's config file: parse and check it, expand the compact form, make
 * deterministic UUIDs. The format is documented at the top of simgpu.c and
 * in tests/data/simgpu/README.md. Strict: unknown keys and out-of-range
 * values are errors with the key named, so a typo never silently becomes a
 * default.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "simgpu/simgpu.h"

/* The vendor names NVML reports for the models simgpu knows. Memory comes
 * from the preset tables. NVLink: SXM boards whose GPUs are joined by
 * NVLink (NVSwitch) unless the config says otherwise. */
static const struct {
    const char *model;
    const char *name;
    bool nvlink;
} catalogue[] = {
    {"A100-40GB", "NVIDIA A100-SXM4-40GB", true},
    {"A100-80GB", "NVIDIA A100-SXM4-80GB", true},
    {"H100-80GB", "NVIDIA H100 80GB HBM3", true},
    {"H200-141GB", "NVIDIA H200", true},
    {"V100-16GB", "Tesla V100-SXM2-16GB", true},
    {"V100-32GB", "Tesla V100-SXM2-32GB", true},
    {"A10-24GB", "NVIDIA A10", false},
    {"L4-24GB", "NVIDIA L4", false},
    {"L40S-48GB", "NVIDIA L40S", false},
    {"RTX-4090-24GB", "NVIDIA GeForce RTX 4090", false},
};

static const char *const return_names[] = {
    [NVML_SUCCESS] = "NVML_SUCCESS",
    [NVML_ERROR_UNINITIALIZED] = "NVML_ERROR_UNINITIALIZED",
    [NVML_ERROR_INVALID_ARGUMENT] = "NVML_ERROR_INVALID_ARGUMENT",
    [NVML_ERROR_NOT_SUPPORTED] = "NVML_ERROR_NOT_SUPPORTED",
    [NVML_ERROR_NO_PERMISSION] = "NVML_ERROR_NO_PERMISSION",
    [NVML_ERROR_ALREADY_INITIALIZED] = "NVML_ERROR_ALREADY_INITIALIZED",
    [NVML_ERROR_NOT_FOUND] = "NVML_ERROR_NOT_FOUND",
    [NVML_ERROR_INSUFFICIENT_SIZE] = "NVML_ERROR_INSUFFICIENT_SIZE",
    [NVML_ERROR_INSUFFICIENT_POWER] = "NVML_ERROR_INSUFFICIENT_POWER",
    [NVML_ERROR_DRIVER_NOT_LOADED] = "NVML_ERROR_DRIVER_NOT_LOADED",
    [NVML_ERROR_TIMEOUT] = "NVML_ERROR_TIMEOUT",
    [NVML_ERROR_IRQ_ISSUE] = "NVML_ERROR_IRQ_ISSUE",
    [NVML_ERROR_LIBRARY_NOT_FOUND] = "NVML_ERROR_LIBRARY_NOT_FOUND",
    [NVML_ERROR_FUNCTION_NOT_FOUND] = "NVML_ERROR_FUNCTION_NOT_FOUND",
    [NVML_ERROR_CORRUPTED_INFOROM] = "NVML_ERROR_CORRUPTED_INFOROM",
    [NVML_ERROR_GPU_IS_LOST] = "NVML_ERROR_GPU_IS_LOST",
    [NVML_ERROR_RESET_REQUIRED] = "NVML_ERROR_RESET_REQUIRED",
    [NVML_ERROR_OPERATING_SYSTEM] = "NVML_ERROR_OPERATING_SYSTEM",
    [NVML_ERROR_LIB_RM_VERSION_MISMATCH] = "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
    [NVML_ERROR_IN_USE] = "NVML_ERROR_IN_USE",
    [NVML_ERROR_MEMORY] = "NVML_ERROR_MEMORY",
    [NVML_ERROR_NO_DATA] = "NVML_ERROR_NO_DATA",
    [NVML_ERROR_VGPU_ECC_NOT_SUPPORTED] = "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
    [NVML_ERROR_INSUFFICIENT_RESOURCES] = "NVML_ERROR_INSUFFICIENT_RESOURCES",
    [NVML_ERROR_FREQ_NOT_SUPPORTED] = "NVML_ERROR_FREQ_NOT_SUPPORTED",
    [NVML_ERROR_ARGUMENT_VERSION_MISMATCH] =
        "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
    [NVML_ERROR_DEPRECATED] = "NVML_ERROR_DEPRECATED",
    [NVML_ERROR_NOT_READY] = "NVML_ERROR_NOT_READY",
    [NVML_ERROR_GPU_NOT_FOUND] = "NVML_ERROR_GPU_NOT_FOUND",
    [NVML_ERROR_INVALID_STATE] = "NVML_ERROR_INVALID_STATE",
};

int sim_return_from_name(const char *name)
{
    if (strcmp(name, "NVML_ERROR_UNKNOWN") == 0)
        return NVML_ERROR_UNKNOWN;
    for (size_t i = 0; i < sizeof(return_names) / sizeof(return_names[0]);
         i++) {
        if (return_names[i] && strcmp(return_names[i], name) == 0)
            return (int)i;
    }
    return -1;
}

/* FNV-1a, 64 bits. */
static unsigned long long fnv(const char *s, unsigned long long h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* "<prefix>-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", the same for the same
 * (salt, n) on every run and machine. prefix is "GPU" or "MIG". */
void sim_uuid(const char *prefix, const char *salt, unsigned int n, char *buf,
              size_t size)
{
    char key[256];
    snprintf(key, sizeof(key), "%s/%u", salt, n);
    unsigned long long a = fnv(key, 0xcbf29ce484222325ULL);
    unsigned long long b = fnv(key, a ^ 0x9e3779b97f4a7c15ULL);
    snprintf(buf, size, "%s-%08llx-%04llx-%04llx-%04llx-%012llx", prefix,
             a >> 32, (a >> 16) & 0xffff, a & 0xffff, b >> 48,
             b & 0xffffffffffffULL);
}

struct parse {
    char *why;
    size_t whylen;
};

static nvmlReturn_t bad(struct parse *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static nvmlReturn_t bad(struct parse *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, p->whylen, fmt, ap);
    va_end(ap);
    return NVML_ERROR_UNKNOWN;
}

static int check_keys(struct parse *p, json_t *obj, const char *where,
                      const char *const *keys)
{
    const char *k;
    json_t *v;
    json_object_foreach (obj, k, v) {
        bool known = false;
        for (int i = 0; keys[i] && !known; i++)
            known = strcmp(keys[i], k) == 0;
        if (!known) {
            bad(p, "%s: unknown key \"%s\"", where, k);
            return -1;
        }
    }
    return 0;
}

static int get_int(struct parse *p, json_t *v, const char *key, long long min,
                   long long max, long long *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < min ||
        json_integer_value(v) > max) {
        bad(p, "\"%s\" must be an integer %lld..%lld", key, min, max);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

static int get_str(struct parse *p, json_t *v, const char *key, char *buf,
                   size_t size)
{
    if (!json_is_string(v) || json_string_length(v) == 0 ||
        json_string_length(v) >= size) {
        bad(p, "\"%s\" must be a string of 1..%zu bytes", key, size - 1);
        return -1;
    }
    snprintf(buf, size, "%s", json_string_value(v));
    return 0;
}

/* A value that is a scalar for every GPU or an array of one per GPU. */
static json_t *per_gpu(json_t *v, int i)
{
    return json_is_array(v) ? json_array_get(v, (size_t)i) : v;
}

/* Model defaults: name and memory from the catalogue and preset tables;
 * an unknown "Foo-24GB" becomes "NVIDIA Foo" with 24 GiB. */
static void model_defaults(struct sim_spec *s, bool *nvlink)
{
    const struct preset_model *pm = preset_model_find(s->model);
    *nvlink = false;
    for (size_t i = 0; i < sizeof(catalogue) / sizeof(catalogue[0]); i++) {
        if (strcmp(catalogue[i].model, s->model) == 0) {
            snprintf(s->name, sizeof(s->name), "%s", catalogue[i].name);
            *nvlink = catalogue[i].nvlink;
        }
    }
    s->mem_mib = pm ? pm->mem_mib : 16384;
    s->mig_capable = pm && pm->nprofiles > 0;
    if (s->name[0])
        return;
    char family[GPU_MODEL_MAX];
    snprintf(family, sizeof(family), "%s", s->model);
    char *dash = strrchr(family, '-');
    unsigned gb = 0;
    char unit[4] = "";
    if (dash && sscanf(dash + 1, "%u%3s", &gb, unit) == 2 &&
        strcmp(unit, "GB") == 0 && gb > 0 && gb <= 4096) {
        *dash = '\0';
        if (!pm)
            s->mem_mib = (unsigned long long)gb * 1024;
    }
    /* Prefer a vendor name the agent reads back as the same model:
     * "RTX-3090" is "NVIDIA RTX 3090" (the naming rule keeps RTX's number
     * only after a space). */
    char spaced[GPU_MODEL_MAX], back[GPU_MODEL_MAX];
    snprintf(spaced, sizeof(spaced), "%s", family);
    for (char *c = spaced; *c; c++)
        *c = *c == '-' ? ' ' : *c;
    snprintf(s->name, sizeof(s->name), "NVIDIA %s", spaced);
    gpu_model_from_name(s->name, s->mem_mib << 20, back, sizeof(back));
    if (strcmp(back, s->model) != 0)
        snprintf(s->name, sizeof(s->name), "NVIDIA %s", family);
}

static const char *const top_keys[] = {
    "count",        "model",       "name",       "memory_mib",
    "uuid",         "uuid_prefix", "mig",        "util",
    "mem_used_mib", "nvlink",      "numa_nodes", "gpus_per_switch",
    "gpus",         "fail",        NULL};
static const char *const gpu_keys[] = {
    "model",        "name", "memory_mib", "uuid",   "mig", "util",
    "mem_used_mib", "numa", "switch",     "bridge", NULL};

/* Look a key up in the GPU's own object, then at the top level (where it
 * may be an array with one value per GPU). */
static json_t *lookup(json_t *root, json_t *g, const char *key, int i)
{
    json_t *v = g ? json_object_get(g, key) : NULL;
    return v ? v : per_gpu(json_object_get(root, key), i);
}

static int parse_gpu(struct parse *p, json_t *root, json_t *g, int i, int count,
                     const char *prefix, struct sim_spec *s, bool *nvlink)
{
    json_t *v;
    long long n;
    char where[32];

    snprintf(where, sizeof(where), "gpus[%d]", i);
    if (g && (!json_is_object(g) || check_keys(p, g, where, gpu_keys) < 0)) {
        if (!json_is_object(g))
            bad(p, "%s must be an object", where);
        return -1;
    }
    snprintf(s->model, sizeof(s->model), "H100-80GB");
    if ((v = lookup(root, g, "model", i)) &&
        get_str(p, v, "model", s->model, sizeof(s->model)) < 0)
        return -1;
    model_defaults(s, nvlink);
    if ((v = lookup(root, g, "name", i)) &&
        get_str(p, v, "name", s->name, sizeof(s->name)) < 0)
        return -1;
    if ((v = lookup(root, g, "memory_mib", i))) {
        if (get_int(p, v, "memory_mib", 1, 1 << 24, &n) < 0)
            return -1;
        s->mem_mib = (unsigned long long)n;
    }
    if ((v = lookup(root, g, "mig", i))) {
        if (!json_is_boolean(v))
            return bad(p, "\"mig\" must be true or false"), -1;
        s->mig_capable = json_is_true(v);
    }
    if (s->mig_capable && !preset_profiles(s->model, &(int){0}))
        return bad(p, "%s: simgpu has no MIG profiles for model %s", where,
                   s->model),
               -1;
    sim_uuid("GPU", prefix, (unsigned)i, s->uuid, sizeof(s->uuid));
    if ((v = lookup(root, g, "uuid", i)) &&
        get_str(p, v, "uuid", s->uuid, sizeof(s->uuid)) < 0)
        return -1;
    if ((v = lookup(root, g, "util", i))) {
        if (get_int(p, v, "util", 0, 100, &n) < 0)
            return -1;
        s->live.util = (unsigned)n;
    }
    if ((v = lookup(root, g, "mem_used_mib", i))) {
        if (get_int(p, v, "mem_used_mib", 0, (long long)s->mem_mib, &n) < 0)
            return -1;
        s->live.mem_used_mib = (unsigned long long)n;
    }
    /* Topology defaults: consecutive pairs behind one PCIe switch, GPUs
     * split evenly over the NUMA nodes. */
    long long per_switch = 2, numa_nodes = count > 1 ? 2 : 1;
    if ((v = json_object_get(root, "gpus_per_switch")) &&
        get_int(p, v, "gpus_per_switch", 1, GPU_PER_NODE_MAX, &per_switch) < 0)
        return -1;
    if ((v = json_object_get(root, "numa_nodes")) &&
        get_int(p, v, "numa_nodes", 1, GPU_PER_NODE_MAX, &numa_nodes) < 0)
        return -1;
    s->pci_switch = (int)(i / per_switch);
    s->numa = (int)((long long)i * numa_nodes / (count ? count : 1));
    if ((v = g ? json_object_get(g, "switch") : NULL)) {
        if (get_int(p, v, "switch", 0, 255, &n) < 0)
            return -1;
        s->pci_switch = (int)n;
    }
    s->bridge = 1000 + s->pci_switch; /* no host-bridge level by default */
    if ((v = g ? json_object_get(g, "bridge") : NULL)) {
        if (get_int(p, v, "bridge", 0, 255, &n) < 0)
            return -1;
        s->bridge = (int)n;
    }
    if ((v = g ? json_object_get(g, "numa") : NULL)) {
        if (get_int(p, v, "numa", 0, 255, &n) < 0)
            return -1;
        s->numa = (int)n;
    }
    return 0;
}

static int parse_nvlink(struct parse *p, json_t *v, struct sim_config *cfg,
                        bool by_default)
{
    for (int i = 0; i < cfg->ngpu; i++)
        cfg->gpus[i].nvl_group = -1;
    const char *s = json_is_string(v) ? json_string_value(v)
                    : v               ? NULL
                    : by_default      ? "all"
                                      : "none";
    if (s && strcmp(s, "all") == 0) {
        for (int i = 0; i < cfg->ngpu && cfg->ngpu > 1; i++)
            cfg->gpus[i].nvl_group = 0;
        return 0;
    }
    if (s && strcmp(s, "pairs") == 0) {
        for (int i = 0; i + 1 < cfg->ngpu; i += 2)
            cfg->gpus[i].nvl_group = cfg->gpus[i + 1].nvl_group = i / 2;
        return 0;
    }
    if (s && strcmp(s, "none") == 0)
        return 0;
    if (!json_is_array(v))
        return bad(p, "\"nvlink\" must be \"all\", \"pairs\", \"none\" or a "
                      "list of lists of GPU indexes"),
               -1;
    size_t gi;
    json_t *grp;
    json_array_foreach (v, gi, grp) {
        size_t k;
        json_t *idx;
        if (!json_is_array(grp))
            return bad(p, "nvlink[%zu] must be a list of GPU indexes", gi), -1;
        json_array_foreach (grp, k, idx) {
            long long n;
            if (get_int(p, idx, "nvlink", 0, cfg->ngpu - 1, &n) < 0)
                return -1;
            if (cfg->gpus[n].nvl_group >= 0)
                return bad(p, "nvlink: GPU %lld is in two groups", n), -1;
            cfg->gpus[n].nvl_group = (int)gi;
        }
    }
    return 0;
}

static int parse_fails(struct parse *p, json_t *v, struct sim_config *cfg)
{
    static const char *const keys[] = {"after", "count", "error", "gpu", NULL};
    const char *fn;
    json_t *rule;
    if (!v)
        return 0;
    if (!json_is_object(v))
        return bad(p, "\"fail\" must be an object of NVML function names"), -1;
    json_object_foreach (v, fn, rule) {
        struct sim_fail *f = &cfg->fails[cfg->nfails];
        long long n;
        json_t *e;
        if (cfg->nfails >= SIM_FAILS_MAX)
            return bad(p, "at most %d fail rules", SIM_FAILS_MAX), -1;
        if (strncmp(fn, "nvml", 4) != 0 || strlen(fn) >= sizeof(f->fn))
            return bad(p, "fail: \"%s\" is not an NVML function", fn), -1;
        if (!json_is_object(rule) || check_keys(p, rule, fn, keys) < 0) {
            if (!json_is_object(rule))
                bad(p, "fail.%s must be an object", fn);
            return -1;
        }
        memset(f, 0, sizeof(*f));
        snprintf(f->fn, sizeof(f->fn), "%s", fn);
        f->gpu = -1;
        f->count = 1;
        f->error = NVML_ERROR_UNKNOWN;
        if ((e = json_object_get(rule, "after"))) {
            if (get_int(p, e, "after", 0, 1 << 30, &n) < 0)
                return -1;
            f->after = (int)n;
        }
        if ((e = json_object_get(rule, "count"))) {
            if (get_int(p, e, "count", -1, 1 << 30, &n) < 0)
                return -1;
            f->count = (int)n;
        }
        if ((e = json_object_get(rule, "gpu"))) {
            if (get_int(p, e, "gpu", 0, GPU_PER_NODE_MAX - 1, &n) < 0)
                return -1;
            f->gpu = (int)n;
        }
        if ((e = json_object_get(rule, "error"))) {
            int rc = json_is_string(e)
                         ? sim_return_from_name(json_string_value(e))
                     : json_is_integer(e) ? (int)json_integer_value(e)
                                          : -1;
            if (rc <= 0)
                return bad(p,
                           "fail.%s.error must name an NVML error "
                           "(\"NVML_ERROR_IN_USE\") or be its number",
                           fn),
                       -1;
            f->error = (nvmlReturn_t)rc;
        }
        cfg->nfails++;
    }
    return 0;
}

static nvmlReturn_t parse_root(struct parse *p, json_t *root,
                               struct sim_config *cfg)
{
    json_t *gpus = json_object_get(root, "gpus");
    json_t *v;
    long long count = 1;
    char prefix[128] = "simgpu";
    bool nvlink = false;

    if (!json_is_object(root))
        return bad(p, "the config must be a JSON object");
    if (check_keys(p, root, "config", top_keys) < 0)
        return NVML_ERROR_UNKNOWN;
    if ((v = json_object_get(root, "uuid_prefix")) &&
        get_str(p, v, "uuid_prefix", prefix, sizeof(prefix)) < 0)
        return NVML_ERROR_UNKNOWN;
    if (gpus && !json_is_array(gpus))
        return bad(p, "\"gpus\" must be a list of objects");
    if (gpus)
        count = (long long)json_array_size(gpus);
    if ((v = json_object_get(root, "count"))) {
        if (get_int(p, v, "count", 0, GPU_PER_NODE_MAX, &count) < 0)
            return NVML_ERROR_UNKNOWN;
        if (gpus && (size_t)count != json_array_size(gpus))
            return bad(p, "\"count\" is %lld but \"gpus\" lists %zu", count,
                       json_array_size(gpus));
    }
    if (count > GPU_PER_NODE_MAX)
        return bad(p, "at most %d GPUs", GPU_PER_NODE_MAX);
    cfg->ngpu = (int)count;
    for (int i = 0; i < cfg->ngpu; i++) {
        bool nv;
        json_t *g = gpus ? json_array_get(gpus, (size_t)i) : NULL;
        if (parse_gpu(p, root, g, i, cfg->ngpu, prefix, &cfg->gpus[i], &nv) < 0)
            return NVML_ERROR_UNKNOWN;
        nvlink = i == 0 ? nv : nvlink && nv;
        for (int k = 0; k < i; k++) {
            if (strcmp(cfg->gpus[k].uuid, cfg->gpus[i].uuid) == 0)
                return bad(p, "GPUs %d and %d have the same uuid %s", k, i,
                           cfg->gpus[i].uuid);
        }
    }
    if (parse_nvlink(p, json_object_get(root, "nvlink"), cfg, nvlink) < 0 ||
        parse_fails(p, json_object_get(root, "fail"), cfg) < 0)
        return NVML_ERROR_UNKNOWN;
    return NVML_SUCCESS;
}

nvmlReturn_t sim_config_load(const char *path, struct sim_config *cfg,
                             char *why, size_t whylen)
{
    struct parse p = {why, whylen};
    struct stat st;
    json_error_t jerr;

    memset(cfg, 0, sizeof(*cfg));
    if (stat(path, &st) < 0)
        return bad(&p, "simgpu: cannot read config %s", path),
               NVML_ERROR_DRIVER_NOT_LOADED;
    if (st.st_size > SIM_CONFIG_MAX)
        return bad(&p, "simgpu: config %s is larger than %d bytes", path,
                   SIM_CONFIG_MAX);
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return bad(&p, "simgpu: %s:%d: %s", path, jerr.line, jerr.text);
    char inner[200] = "";
    p.why = inner;
    p.whylen = sizeof(inner);
    nvmlReturn_t rc = parse_root(&p, root, cfg);
    json_decref(root);
    if (rc != NVML_SUCCESS)
        snprintf(why, whylen, "simgpu: %s: %s", path, inner);
    return rc;
}
