/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: applying slicing layouts through the agent's GPU layer over
 * libsimgpu.so: MIG presets, reading slices back, idempotent re-apply, MIG
 * state surviving a backend restart, rollback after injected NVML failures,
 * the read path for layouts Shoal did not make, and simgpu's own MIG rules
 * (placements, IN_USE) called directly through NVML's C API. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/gpu.h"
#include "lib/gpu/nvml.h"

#define MIB (UINT64_C(1) << 20)

static char dir[64];
static char cfg[128];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/shoal-mig-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cfg, sizeof(cfg), "%s/simgpu.json", dir);
    setenv("SIMGPU_CONFIG", cfg, 1);
}

static void teardown(void)
{
    char p[160];
    unlink(cfg);
    snprintf(p, sizeof(p), "%s.state", cfg);
    unlink(p);
    rmdir(dir);
}

TestSuite(mig, .init = setup, .fini = teardown);

static void write_file(const char *path, const char *text)
{
    char tmp[200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(rename(tmp, path), 0);
}

static void write_config(const char *json)
{
    write_file(cfg, json);
}

static struct gpu_backend *open_sim(void)
{
    struct sh_error err = {0};
    struct gpu_backend *be = gpu_backend_create(SIMGPU_LIB, &err);
    cr_assert_not_null(be, "%s", err.msg);
    return be;
}

/* Discover and return GPU i (a copy). */
static struct gpu_info gpu_at(struct gpu_backend *be, int i)
{
    struct gpu_info *gpus = NULL, g;
    struct sh_error err = {0};
    int n = 0;
    cr_assert_eq(gpu_discover(be, &gpus, &n, &err), 0, "%s", err.msg);
    cr_assert_lt(i, n);
    g = gpus[i];
    free(gpus);
    return g;
}

static void apply(struct gpu_backend *be, struct gpu_info *g,
                  const char *preset)
{
    struct sh_error err = {0};
    cr_assert_eq(gpu_apply_preset(be, g, preset, &err), 0, "%s: %s", preset,
                 err.msg);
}

static int count_profile(const struct gpu_info *g, const char *p)
{
    int n = 0;
    for (int i = 0; i < g->nslices; i++)
        n += strcmp(g->slices[i].profile, p) == 0;
    return n;
}

Test(mig, all_1g_makes_seven_slices)
{
    write_config("{\"count\": 2, \"model\": \"H100-80GB\"}");
    struct gpu_backend *be = open_sim();
    struct gpu_info g = gpu_at(be, 1);
    apply(be, &g, "all-1g.10gb");
    cr_expect(g.mig_enabled);
    cr_assert_eq(g.nslices, 7);
    for (int i = 0; i < 7; i++) {
        const struct gpu_slice *s = &g.slices[i];
        cr_expect_eq(s->kind, GPU_SLICE_MIG);
        cr_expect_str_eq(s->profile, "1g.10gb");
        cr_expect_eq(strncmp(s->uuid, "MIG-", 4), 0, "%s", s->uuid);
        cr_expect_eq(s->mem_bytes, 9984 * MIB);
        cr_expect_geq(s->gi_id, 0);
        cr_expect_eq(s->ci_id, 0);
        cr_expect_eq(s->share_num, 1);
        cr_expect_eq(s->share_den, 7);
        for (int k = 0; k < i; k++) {
            cr_expect_str_neq(s->uuid, g.slices[k].uuid);
            cr_expect_neq(s->gi_id, g.slices[k].gi_id);
        }
    }
    /* The other GPU is untouched; utilization is unknown in MIG mode. */
    struct gpu_info other = gpu_at(be, 0);
    cr_expect_not(other.mig_enabled);
    struct sh_error err = {0};
    cr_assert_eq(gpu_sample(be, &g, 1, &err), 0, "%s", err.msg);
    cr_expect_eq(g.util_pct, -1);
    gpu_backend_destroy(be);
}

Test(mig, presets_of_every_mig_model_apply)
{
    static const char *const models[] = {"A100-40GB", "A100-80GB", "H100-80GB",
                                         "H200-141GB"};
    for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++) {
        char json[128];
        char names[PRESET_LIST_MAX][PRESET_NAME_MAX];
        snprintf(json, sizeof(json), "{\"count\": 1, \"model\": \"%s\"}",
                 models[m]);
        write_config(json);
        struct gpu_backend *be = open_sim();
        struct gpu_info g = gpu_at(be, 0);
        int n = preset_list(g.model, names, PRESET_LIST_MAX);
        for (int i = 0; i < n; i++) {
            struct preset_layout l;
            cr_assert_eq(preset_expand(g.model, names[i], &l, NULL), 0);
            apply(be, &g, names[i]);
            cr_expect_eq(g.mig_enabled, l.mig, "%s %s", models[m], names[i]);
            cr_expect_eq(g.nslices, l.nslices, "%s %s", models[m], names[i]);
            /* Slices read back from the device carry the preset's names:
             * the agent and the preset tables agree. */
            for (int k = 0; k < l.nslices; k++) {
                int want = 0;
                for (int q = 0; q < l.nslices; q++)
                    want +=
                        strcmp(l.slices[q].profile, l.slices[k].profile) == 0;
                cr_expect_eq(count_profile(&g, l.slices[k].profile), want,
                             "%s %s %s", models[m], names[i],
                             l.slices[k].profile);
            }
        }
        gpu_backend_destroy(be);
        teardown();
        setup();
    }
}

Test(mig, balanced_layout_reads_back)
{
    write_config("{\"count\": 1, \"model\": \"H200-141GB\"}");
    struct gpu_backend *be = open_sim();
    struct gpu_info g = gpu_at(be, 0);
    apply(be, &g, "all-balanced");
    cr_assert_eq(g.nslices, 4);
    cr_expect_eq(count_profile(&g, "1g.18gb"), 2);
    cr_expect_eq(count_profile(&g, "2g.35gb"), 1);
    cr_expect_eq(count_profile(&g, "3g.71gb"), 1);
    for (int i = 0; i < g.nslices; i++) {
        if (strcmp(g.slices[i].profile, "3g.71gb") == 0) {
            cr_expect_eq(g.slices[i].share_num, 3);
            cr_expect_eq(g.slices[i].mem_bytes, 71424 * MIB);
        }
    }
    gpu_backend_destroy(be);
}

Test(mig, disable_and_shared_turn_mig_off)
{
    write_config("{\"count\": 1, \"model\": \"A100-40GB\"}");
    struct gpu_backend *be = open_sim();
    struct gpu_info g = gpu_at(be, 0);
    apply(be, &g, "all-3g.20gb");
    cr_expect_eq(g.nslices, 2);
    apply(be, &g, "all-disabled");
    cr_expect_not(g.mig_enabled);
    cr_expect_eq(g.nslices, 0);
    apply(be, &g, "all-2g.10gb");
    cr_expect_eq(g.nslices, 3);
    apply(be, &g, "shared-4");
    cr_expect_not(g.mig_enabled);
    cr_assert_eq(g.nslices, 4);
    cr_expect_eq(g.slices[0].kind, GPU_SLICE_SHARED);
    cr_expect_str_eq(g.slices[0].uuid, g.uuid);
    /* The device itself has no slices now. */
    struct gpu_info fresh = gpu_at(be, 0);
    cr_expect_not(fresh.mig_enabled);
    cr_expect_eq(fresh.nslices, 0);
    apply(be, &g, "all-enabled");
    cr_expect(g.mig_enabled);
    cr_expect_eq(g.nslices, 0);
    gpu_backend_destroy(be);
}

Test(mig, reapplying_the_same_layout_keeps_the_instances)
{
    write_config("{\"count\": 1, \"model\": \"A100-80GB\"}");
    struct gpu_backend *be = open_sim();
    struct gpu_info g = gpu_at(be, 0);
    apply(be, &g, "all-balanced");
    struct gpu_info first = g;
    apply(be, &g, "all-balanced");
    cr_assert_eq(g.nslices, first.nslices);
    for (int i = 0; i < g.nslices; i++)
        cr_expect_str_eq(g.slices[i].uuid, first.slices[i].uuid);
    /* A different layout replaces them. */
    apply(be, &g, "all-1g.20gb");
    cr_expect_eq(g.nslices, 4);
    cr_expect_str_neq(g.slices[0].uuid, first.slices[0].uuid);
    gpu_backend_destroy(be);
}

Test(mig, state_survives_a_backend_restart)
{
    write_config(
        "{\"count\": 2, \"model\": \"H100-80GB\", \"uuid_prefix\": \"n7\"}");
    struct gpu_backend *be = open_sim();
    struct gpu_info g = gpu_at(be, 1);
    apply(be, &g, "all-balanced");
    gpu_backend_destroy(be);

    be = open_sim();
    struct gpu_info again = gpu_at(be, 1);
    cr_expect(again.mig_enabled);
    cr_assert_eq(again.nslices, g.nslices);
    for (int i = 0; i < g.nslices; i++) {
        cr_expect_str_eq(again.slices[i].uuid, g.slices[i].uuid);
        cr_expect_str_eq(again.slices[i].profile, g.slices[i].profile);
        cr_expect_eq(again.slices[i].gi_id, g.slices[i].gi_id);
    }
    cr_expect_not(gpu_at(be, 0).mig_enabled);
    /* New instances after the restart get UUIDs never used before. */
    apply(be, &again, "all-1g.10gb");
    for (int i = 0; i < again.nslices; i++) {
        for (int k = 0; k < g.nslices; k++)
            cr_expect_str_neq(again.slices[i].uuid, g.slices[k].uuid);
    }
    gpu_backend_destroy(be);
}

Test(mig, create_failure_rolls_back)
{
    struct sh_error err = {0};
    write_config("{\"count\": 1, \"model\": \"H100-80GB\"}");
    struct gpu_backend *be = open_sim();
    struct gpu_info g = gpu_at(be, 0);
    apply(be, &g, "all-3g.40gb");
    gpu_backend_destroy(be);

    /* The third instance of the new layout fails to be created. */
    write_config("{\"count\": 1, \"model\": \"H100-80GB\", \"fail\": "
                 "{\"nvmlDeviceCreateGpuInstanceWithPlacement\": {\"after\": "
                 "2, \"error\": \"NVML_ERROR_INSUFFICIENT_RESOURCES\"}}}");
    be = open_sim();
    struct gpu_info before = gpu_at(be, 0);
    cr_expect_eq(gpu_apply_preset(be, &before, "all-1g.10gb", &err), -1);
    cr_expect_eq(err.code, SH_ECONFLICT);
    cr_expect(
        strstr(err.msg,
               "nvmlDeviceCreateGpuInstanceWithPlacement(GPU 0, 1g.10gb") !=
            NULL,
        "%s", err.msg);
    cr_expect(strstr(err.msg, "Insufficient resources") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "rolled back") != NULL, "%s", err.msg);
    /* The caller's copy is untouched and the device has the old layout. */
    cr_expect_eq(before.nslices, 2);
    struct gpu_info after = gpu_at(be, 0);
    cr_expect(after.mig_enabled);
    cr_assert_eq(after.nslices, 2);
    cr_expect_eq(count_profile(&after, "3g.40gb"), 2);
    /* And the layout can be applied once the fault is gone. */
    apply(be, &after, "all-1g.10gb");
    cr_expect_eq(after.nslices, 7);
    gpu_backend_destroy(be);
}

Test(mig, rollback_restores_mig_off)
{
    struct sh_error err = {0};
    write_config("{\"count\": 1, \"model\": \"A100-40GB\", \"fail\": "
                 "{\"nvmlGpuInstanceCreateComputeInstance\": {\"after\": 1, "
                 "\"error\": \"NVML_ERROR_UNKNOWN\"}}}");
    struct gpu_backend *be = open_sim();
    struct gpu_info g = gpu_at(be, 0);
    cr_expect_eq(gpu_apply_preset(be, &g, "all-balanced", &err), -1);
    cr_expect_eq(err.code, SH_EINTERNAL);
    cr_expect(strstr(err.msg, "nvmlGpuInstanceCreateComputeInstance") != NULL,
              "%s", err.msg);
    cr_expect(strstr(err.msg, "rolled back") != NULL, "%s", err.msg);
    struct gpu_info after = gpu_at(be, 0);
    cr_expect_not(after.mig_enabled);
    cr_expect_eq(after.nslices, 0);
    gpu_backend_destroy(be);
}

Test(mig, destroy_failure_rolls_back)
{
    struct sh_error err = {0};
    write_config("{\"count\": 1, \"model\": \"A100-80GB\"}");
    struct gpu_backend *be = open_sim();
    struct gpu_info g = gpu_at(be, 0);
    apply(be, &g, "all-2g.20gb");
    gpu_backend_destroy(be);
    write_config("{\"count\": 1, \"model\": \"A100-80GB\", \"fail\": "
                 "{\"nvmlGpuInstanceDestroy\": {\"after\": 1, \"error\": "
                 "\"NVML_ERROR_IN_USE\"}}}");
    be = open_sim();
    g = gpu_at(be, 0);
    cr_expect_eq(gpu_apply_preset(be, &g, "all-7g.80gb", &err), -1);
    cr_expect_eq(err.code, SH_ECONFLICT);
    cr_expect(strstr(err.msg, "nvmlGpuInstanceDestroy") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "In use") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "rolled back") != NULL, "%s", err.msg);
    struct gpu_info after = gpu_at(be, 0);
    cr_expect_eq(count_profile(&after, "2g.20gb"), 3);
    gpu_backend_destroy(be);
}

Test(mig, failed_rollback_is_reported)
{
    struct sh_error err = {0};
    write_config("{\"count\": 1, \"model\": \"H100-80GB\"}");
    struct gpu_backend *be = open_sim();
    struct gpu_info g = gpu_at(be, 0);
    apply(be, &g, "all-4g.40gb");
    gpu_backend_destroy(be);
    write_config("{\"count\": 1, \"model\": \"H100-80GB\", \"fail\": "
                 "{\"nvmlDeviceCreateGpuInstanceWithPlacement\": {\"count\": "
                 "-1, \"error\": \"NVML_ERROR_UNKNOWN\"}}}");
    be = open_sim();
    g = gpu_at(be, 0);
    cr_expect_eq(gpu_apply_preset(be, &g, "all-3g.40gb", &err), -1);
    cr_expect(strstr(err.msg, "rollback failed too") != NULL, "%s", err.msg);
    gpu_backend_destroy(be);
}

Test(mig, mode_change_failure_is_reported)
{
    struct sh_error err = {0};
    write_config("{\"count\": 1, \"model\": \"H100-80GB\", \"fail\": "
                 "{\"nvmlDeviceSetMigMode\": {\"error\": "
                 "\"NVML_ERROR_NO_PERMISSION\"}}}");
    struct gpu_backend *be = open_sim();
    struct gpu_info g = gpu_at(be, 0);
    cr_expect_eq(gpu_apply_preset(be, &g, "all-7g.80gb", &err), -1);
    cr_expect_eq(err.code, SH_EFORBIDDEN);
    cr_expect(strstr(err.msg, "nvmlDeviceSetMigMode(GPU 0, enable)") != NULL,
              "%s", err.msg);
    cr_expect_not(gpu_at(be, 0).mig_enabled);
    gpu_backend_destroy(be);
}

Test(mig, snapshot_failure_changes_nothing)
{
    struct sh_error err = {0};
    write_config("{\"count\": 1, \"model\": \"H100-80GB\"}");
    struct gpu_backend *be = open_sim();
    struct gpu_info g = gpu_at(be, 0);
    apply(be, &g, "all-3g.40gb");
    gpu_backend_destroy(be);
    write_config("{\"count\": 1, \"model\": \"H100-80GB\", \"fail\": "
                 "{\"nvmlGpuInstanceGetInfo\": {\"count\": -1}}}");
    be = open_sim();
    g = gpu_at(be, 0);
    cr_expect_eq(gpu_apply_preset(be, &g, "all-1g.10gb", &err), -1);
    cr_expect(strstr(err.msg, "reading the current MIG layout") != NULL, "%s",
              err.msg);
    cr_expect_eq(count_profile(&g, "3g.40gb"), 2);
    struct gpu_info after = gpu_at(be, 0);
    cr_expect_eq(count_profile(&after, "3g.40gb"), 2);
    gpu_backend_destroy(be);
}

Test(mig, layout_checks_happen_before_any_change)
{
    struct sh_error err = {0};
    struct preset_layout l;
    write_config(
        "{\"gpus\": [{\"model\": \"H100-80GB\"}, {\"model\": \"L40S-48GB\"}]}");
    struct gpu_backend *be = open_sim();
    struct gpu_info h100 = gpu_at(be, 0), l40s = gpu_at(be, 1);
    cr_assert_eq(preset_expand("A100-40GB", "all-1g.5gb", &l, NULL), 0);
    cr_expect_eq(gpu_apply_layout(be, &h100, &l, &err), -1);
    cr_expect_eq(err.code, SH_EINVAL);
    cr_expect(strstr(err.msg, "is for A100-40GB") != NULL, "%s", err.msg);
    cr_assert_eq(preset_expand("H100-80GB", "all-1g.10gb", &l, NULL), 0);
    snprintf(l.model, sizeof(l.model), "%s", l40s.model);
    cr_expect_eq(gpu_apply_layout(be, &l40s, &l, &err), -1);
    cr_expect(strstr(err.msg, "not MIG capable") != NULL, "%s", err.msg);
    cr_assert_eq(preset_expand("H100-80GB", "all-1g.10gb", &l, NULL), 0);
    l.nslices = 8;
    l.slices[7] = l.slices[0];
    cr_expect_eq(gpu_apply_layout(be, &h100, &l, &err), -1);
    cr_expect(strstr(err.msg, "at most 7") != NULL, "%s", err.msg);
    cr_expect_not(gpu_at(be, 0).mig_enabled);
    gpu_backend_destroy(be);
}

/* A layout made by someone else: one 7-slice GPU instance split into a 3-
 * and a 4-slice compute instance, and a 1g instance (written straight into
 * simgpu's state file, as if nvidia-smi had made it). */
Test(mig, reads_layouts_shoal_did_not_make)
{
    char state[200], text[1024];
    write_config(
        "{\"count\": 1, \"model\": \"A100-80GB\", \"uuid\": \"GPU-x\"}");
    snprintf(state, sizeof(state), "%s.state", cfg);
    snprintf(text, sizeof(text),
             "{\"version\": 1, \"gpus\": {\"GPU-x\": {\"mig_mode\": 1, "
             "\"gen\": 9, \"instances\": [{\"gi\": 2, \"profile\": 9, "
             "\"start\": 4, \"cis\": [{\"ci\": 0, \"profile\": 0, \"uuid\": "
             "\"MIG-a\"}, {\"ci\": 1, \"profile\": 1, \"uuid\": "
             "\"MIG-b\"}]},{\"gi\": 7, \"profile\": 19, \"start\": 0, \"cis\": "
             "[{\"ci\": 0, \"profile\": 0, \"uuid\": \"MIG-c\"}]}]}}}");
    write_file(state, text);
    struct gpu_backend *be = open_sim();
    struct gpu_info g = gpu_at(be, 0);
    cr_expect(g.mig_enabled);
    cr_assert_eq(g.nslices, 3);
    /* Sorted by GPU instance, then compute instance. */
    cr_expect_str_eq(g.slices[0].uuid, "MIG-a");
    cr_expect_str_eq(g.slices[0].profile, "1c.3g.40gb");
    cr_expect_eq(g.slices[0].gi_id, 2);
    cr_expect_eq(g.slices[0].ci_id, 0);
    cr_expect_eq(g.slices[0].share_num, 1);
    cr_expect_eq(g.slices[0].share_den, 7);
    cr_expect_str_eq(g.slices[1].profile, "2c.3g.40gb");
    cr_expect_eq(g.slices[1].ci_id, 1);
    cr_expect_eq(g.slices[1].share_num, 2);
    cr_expect_str_eq(g.slices[2].uuid, "MIG-c");
    cr_expect_str_eq(g.slices[2].profile, "1g.10gb");
    /* Applying a preset replaces all of it, compute instances included. */
    apply(be, &g, "all-3g.40gb");
    cr_expect_eq(g.nslices, 2);
    gpu_backend_destroy(be);
}

Test(mig, read_path_survives_missing_details)
{
    write_config("{\"count\": 1, \"model\": \"H100-80GB\"}");
    struct gpu_backend *be = open_sim();
    struct gpu_info g = gpu_at(be, 0);
    apply(be, &g, "all-3g.40gb");
    gpu_backend_destroy(be);
    write_config(
        "{\"count\": 1, \"model\": \"H100-80GB\", \"fail\": "
        "{\"nvmlDeviceGetAttributes_v2\": {\"count\": "
        "-1},\"nvmlDeviceGetGpuInstanceId\": {\"count\": "
        "-1},\"nvmlDeviceGetGpuInstanceProfileInfo\": {\"count\": -1}}}");
    be = open_sim();
    g = gpu_at(be, 0);
    cr_assert_eq(g.nslices, 2);
    cr_expect_str_eq(g.slices[0].profile, "unknown");
    cr_expect_eq(g.slices[0].mem_bytes, 40320 * MIB);
    cr_expect_eq(g.slices[0].gi_id, -1);
    cr_expect_eq(g.slices[0].share_den, 7);
    cr_expect_eq(strncmp(g.slices[0].uuid, "MIG-", 4), 0);
    gpu_backend_destroy(be);
}

/* A backend without MIG support, through the operations table. */
static int fake_discover(void *ctx, struct gpu_info **gpus, int *n,
                         struct sh_error *err)
{
    *gpus = calloc(1, sizeof(**gpus));
    if (!*gpus)
        return sh_errorf(err, SH_EINTERNAL, "oom");
    (*gpus)->mig_capable = true;
    snprintf((*gpus)->model, sizeof((*gpus)->model), "H100-80GB");
    *n = 1;
    return 0;
}

static void fake_destroy(void *ctx)
{
    free(ctx);
}

static const struct gpu_ops fake_ops = {
    .name = "fake",
    .destroy = fake_destroy,
    .discover = fake_discover,
};

Test(mig, backend_without_mig_support_says_so)
{
    struct sh_error err = {0};
    struct gpu_backend *be = gpu_backend_create_ops(&fake_ops, malloc(8), &err);
    cr_assert_not_null(be);
    cr_expect_str_eq(gpu_backend_name(be), "fake");
    struct gpu_info g = gpu_at(be, 0);
    cr_expect_eq(gpu_apply_preset(be, &g, "all-7g.80gb", &err), -1);
    cr_expect_eq(err.code, SH_EUNAVAILABLE);
    cr_expect(strstr(err.msg, "fake") != NULL, "%s", err.msg);
    /* Time-slicing needs no driver. */
    cr_expect_eq(gpu_apply_preset(be, &g, "shared-2", &err), 0, "%s", err.msg);
    cr_expect_eq(g.nslices, 2);
    gpu_backend_destroy(be);
}

/* ---- simgpu's MIG rules, through NVML's C API ------------------------- */

struct nvml {
    void *dl;
    __typeof__(nvmlInit_v2) *init;
    __typeof__(nvmlShutdown) *shutdown;
    __typeof__(nvmlDeviceGetHandleByIndex_v2) *handle;
    __typeof__(nvmlDeviceSetMigMode) *set_mode;
    __typeof__(nvmlDeviceGetGpuInstanceProfileInfo) *profile;
    __typeof__(nvmlDeviceCreateGpuInstanceWithPlacement) *create_at;
    __typeof__(nvmlDeviceCreateGpuInstance) *create;
    __typeof__(nvmlGpuInstanceDestroy) *destroy;
    __typeof__(nvmlGpuInstanceCreateComputeInstance) *create_ci;
    __typeof__(nvmlDeviceGetGpuInstancePossiblePlacements_v2) *placements;
};

#define SYM(field, name)                                                       \
    do {                                                                       \
        void *p = dlsym(n->dl, name);                                          \
        cr_assert_not_null(p, "%s", name);                                     \
        memcpy(&n->field, &p, sizeof(p));                                      \
    } while (0)

static void nvml_open(struct nvml *n)
{
    n->dl = dlopen(SIMGPU_LIB, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(n->dl, "%s", dlerror());
    SYM(init, "nvmlInit_v2");
    SYM(shutdown, "nvmlShutdown");
    SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
    SYM(set_mode, "nvmlDeviceSetMigMode");
    SYM(profile, "nvmlDeviceGetGpuInstanceProfileInfo");
    SYM(create_at, "nvmlDeviceCreateGpuInstanceWithPlacement");
    SYM(create, "nvmlDeviceCreateGpuInstance");
    SYM(destroy, "nvmlGpuInstanceDestroy");
    SYM(create_ci, "nvmlGpuInstanceCreateComputeInstance");
    SYM(placements, "nvmlDeviceGetGpuInstancePossiblePlacements_v2");
    cr_assert_eq(n->init(), NVML_SUCCESS);
}

static void nvml_close(struct nvml *n)
{
    cr_expect_eq(n->shutdown(), NVML_SUCCESS);
    cr_expect_eq(n->shutdown(), NVML_ERROR_UNINITIALIZED);
    dlclose(n->dl);
}

Test(mig, simgpu_enforces_placement_rules)
{
    struct nvml n;
    nvmlDevice_t dev;
    nvmlGpuInstanceProfileInfo_t p3, p4, p1;
    nvmlGpuInstance_t gi, gi2;
    nvmlReturn_t act;
    write_config("{\"count\": 1, \"model\": \"H100-80GB\"}");
    nvml_open(&n);
    cr_assert_eq(n.handle(0, &dev), NVML_SUCCESS);
    cr_expect_eq(n.profile(dev, NVML_GPU_INSTANCE_PROFILE_3_SLICE, &p3),
                 NVML_ERROR_NOT_SUPPORTED, "needs MIG mode");
    cr_assert_eq(n.set_mode(dev, NVML_DEVICE_MIG_ENABLE, &act), NVML_SUCCESS);
    cr_assert_eq(n.profile(dev, NVML_GPU_INSTANCE_PROFILE_3_SLICE, &p3),
                 NVML_SUCCESS);
    cr_expect_eq(p3.id, 9);
    cr_expect_eq(p3.sliceCount, 3);
    cr_expect_eq(p3.instanceCount, 2);
    cr_expect_eq(p3.memorySizeMB, 40320);
    cr_assert_eq(n.profile(dev, NVML_GPU_INSTANCE_PROFILE_4_SLICE, &p4),
                 NVML_SUCCESS);
    cr_assert_eq(n.profile(dev, NVML_GPU_INSTANCE_PROFILE_1_SLICE, &p1),
                 NVML_SUCCESS);
    cr_expect_eq(n.profile(dev, NVML_GPU_INSTANCE_PROFILE_6_SLICE, &p1),
                 NVML_ERROR_NOT_SUPPORTED);

    nvmlGpuInstancePlacement_t pl[8];
    unsigned int count = 0;
    cr_assert_eq(n.placements(dev, p3.id, NULL, &count), NVML_SUCCESS);
    cr_expect_eq(count, 2);
    count = 1;
    cr_expect_eq(n.placements(dev, p3.id, pl, &count),
                 NVML_ERROR_INSUFFICIENT_SIZE);
    count = 8;
    cr_assert_eq(n.placements(dev, p3.id, pl, &count), NVML_SUCCESS);
    cr_expect_eq(pl[1].start, 4);
    cr_expect_eq(pl[1].size, 4);

    /* 3g at 2 is no placement; at 0 it is; 4g at 0 then overlaps. */
    nvmlGpuInstancePlacement_t at = {.start = 2, .size = 4};
    cr_expect_eq(n.create_at(dev, p3.id, &at, &gi),
                 NVML_ERROR_INVALID_ARGUMENT);
    at.start = 0;
    cr_assert_eq(n.create_at(dev, p3.id, &at, &gi), NVML_SUCCESS);
    cr_expect_eq(n.create_at(dev, p4.id, &at, &gi2),
                 NVML_ERROR_INSUFFICIENT_RESOURCES);
    /* Without a placement the first free one is taken: 3g at 4. */
    cr_assert_eq(n.create(dev, p3.id, &gi2), NVML_SUCCESS);
    /* Two 3g's use 6 compute slices; a 1g fits by compute but the memory
     * is full. */
    cr_expect_eq(n.create(dev, p1.id, &gi2), NVML_ERROR_INSUFFICIENT_RESOURCES);
    /* A GPU instance with a compute instance is in use; MIG cannot be
     * turned off while instances exist. */
    nvmlComputeInstance_t ci;
    cr_assert_eq(n.create_ci(gi, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, &ci),
                 NVML_SUCCESS);
    cr_expect_eq(n.create_ci(gi, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, &ci),
                 NVML_ERROR_INSUFFICIENT_RESOURCES);
    cr_expect_eq(n.create_ci(gi, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, &ci),
                 NVML_ERROR_INVALID_ARGUMENT);
    cr_expect_eq(n.destroy(gi), NVML_ERROR_IN_USE);
    cr_expect_eq(n.set_mode(dev, NVML_DEVICE_MIG_DISABLE, &act),
                 NVML_ERROR_IN_USE);
    nvml_close(&n);
}

Test(mig, simgpu_refuses_mig_on_gpus_without_it)
{
    struct nvml n;
    nvmlDevice_t dev;
    nvmlReturn_t act;
    write_config("{\"count\": 1, \"model\": \"L40S-48GB\"}");
    nvml_open(&n);
    cr_assert_eq(n.handle(0, &dev), NVML_SUCCESS);
    cr_expect_eq(n.set_mode(dev, NVML_DEVICE_MIG_ENABLE, &act),
                 NVML_ERROR_NOT_SUPPORTED);
    cr_expect_eq(n.handle(1, &dev), NVML_ERROR_INVALID_ARGUMENT);
    nvml_close(&n);
}

Test(mig, simgpu_config_rejects_mig_for_unknown_profiles)
{
    struct sh_error err = {0};
    write_config("{\"count\": 1, \"model\": \"L40S-48GB\", \"mig\": true}");
    cr_expect_null(gpu_backend_create(SIMGPU_LIB, &err));
    cr_expect(strstr(err.msg, "no MIG profiles") != NULL, "%s", err.msg);
}

Test(mig, shared_layout_turns_mig_off_even_from_a_stale_copy)
{
    write_config("{\"count\": 1, \"model\": \"H100-80GB\"}");
    struct gpu_backend *be = open_sim();
    struct gpu_info stale = gpu_at(be, 0);
    struct gpu_info g = stale;
    apply(be, &g, "all-balanced");
    /* The caller still holds the copy from before MIG was turned on. */
    apply(be, &stale, "shared-2");
    cr_expect_not(stale.mig_enabled);
    cr_expect_eq(stale.nslices, 2);
    cr_expect_not(gpu_at(be, 0).mig_enabled);
    gpu_backend_destroy(be);
}
