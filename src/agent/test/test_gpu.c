/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the agent's GPU layer read path over libsimgpu.so (the same code
 * path as real NVML): loading errors, discovery, sampling after the config
 * changes, NVLink groups, topology levels, time-slices and MPS detection.
 * Each test gets its own config file in a fresh temporary directory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/gpu.h"

#define MIB (UINT64_C(1) << 20)

static char dir[64];
static char cfg[128];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/shoal-gpu-XXXXXX");
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
    snprintf(p, sizeof(p), "%s/nvidia-cuda-mps-control", dir);
    unlink(p);
    rmdir(dir);
}

TestSuite(gpu, .init = setup, .fini = teardown);

/* Replace the config atomically, as the simgpu docs ask. */
static void write_config(const char *json)
{
    char tmp[160];
    snprintf(tmp, sizeof(tmp), "%s.tmp", cfg);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f);
    fputs(json, f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(rename(tmp, cfg), 0);
}

static struct gpu_backend *open_sim(void)
{
    struct sh_error err = {0};
    struct gpu_backend *be = gpu_backend_create(SIMGPU_LIB, &err);
    cr_assert_not_null(be, "%s", err.msg);
    return be;
}

static void discover(struct gpu_backend *be, struct gpu_info **gpus, int *n)
{
    struct sh_error err = {0};
    cr_assert_eq(gpu_discover(be, gpus, n, &err), 0, "%s", err.msg);
}

Test(gpu, missing_library_is_unavailable)
{
    struct sh_error err = {0};
    cr_expect_null(gpu_backend_create("/nonexistent/libnvidia-ml.so.1", &err));
    cr_expect_eq(err.code, SH_EUNAVAILABLE);
    cr_expect(strstr(err.msg, "/nonexistent/libnvidia-ml.so.1") != NULL, "%s",
              err.msg);
}

Test(gpu, library_without_nvml_names_the_missing_function)
{
    struct sh_error err = {0};
    cr_expect_null(gpu_backend_create("libm.so.6", &err));
    cr_expect_eq(err.code, SH_EINTERNAL);
    cr_expect(strstr(err.msg, "nvmlInit_v2") != NULL, "%s", err.msg);
}

Test(gpu, unset_config_says_why)
{
    struct sh_error err = {0};
    unsetenv("SIMGPU_CONFIG");
    cr_expect_null(gpu_backend_create(SIMGPU_LIB, &err));
    cr_expect_eq(err.code, SH_EUNAVAILABLE, "%s", err.msg);
    cr_expect(strstr(err.msg, "nvmlInit_v2") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "SIMGPU_CONFIG is not set") != NULL, "%s",
              err.msg);
}

Test(gpu, malformed_config_names_the_problem)
{
    struct sh_error err = {0};
    write_config("{\"count\": 2, \"modle\": \"H100-80GB\"}");
    cr_expect_null(gpu_backend_create(SIMGPU_LIB, &err));
    cr_expect_eq(err.code, SH_EINTERNAL);
    cr_expect(strstr(err.msg, "unknown key \"modle\"") != NULL, "%s", err.msg);
    write_config("{\"count\": 2,");
    cr_expect_null(gpu_backend_create(SIMGPU_LIB, &err));
    cr_expect(strstr(err.msg, "simgpu.json:1") != NULL, "%s", err.msg);
    write_config("{\"count\": 65}");
    cr_expect_null(gpu_backend_create(SIMGPU_LIB, &err));
    cr_expect(strstr(err.msg, "count") != NULL, "%s", err.msg);
}

Test(gpu, init_failure_carries_nvml_message)
{
    struct sh_error err = {0};
    write_config("{\"count\": 1, \"fail\": {\"nvmlInit_v2\": {\"error\": "
                 "\"NVML_ERROR_NO_PERMISSION\"}}}");
    cr_expect_null(gpu_backend_create(SIMGPU_LIB, &err));
    cr_expect_eq(err.code, SH_EFORBIDDEN);
    cr_expect(strstr(err.msg, "Insufficient Permissions") != NULL, "%s",
              err.msg);
    cr_expect(strstr(err.msg, "NVML error 4") != NULL, "%s", err.msg);
}

Test(gpu, discovers_a_compact_config)
{
    struct gpu_info *gpus = NULL;
    int n = 0;
    write_config(
        "{\"count\": 8, \"model\": \"H100-80GB\", \"uuid_prefix\": \"node1\"}");
    struct gpu_backend *be = open_sim();
    cr_expect_str_eq(gpu_backend_name(be), "nvml");
    discover(be, &gpus, &n);
    cr_assert_eq(n, 8);
    for (int i = 0; i < n; i++) {
        cr_expect_eq(gpus[i].index, i);
        cr_expect_str_eq(gpus[i].name, "NVIDIA H100 80GB HBM3");
        cr_expect_str_eq(gpus[i].model, "H100-80GB");
        cr_expect_eq(gpus[i].mem_total, 81559 * MIB);
        cr_expect_eq(strncmp(gpus[i].uuid, "GPU-", 4), 0);
        cr_expect_eq(strlen(gpus[i].uuid), 40, "%s", gpus[i].uuid);
        cr_expect(gpus[i].mig_capable);
        cr_expect_not(gpus[i].mig_enabled);
        cr_expect_eq(gpus[i].nslices, 0);
        cr_expect_eq(gpus[i].nvlink_group, 0, "SXM GPUs share NVLink");
        cr_expect_eq(gpus[i].util_pct, 0);
        cr_expect_neq(gpus[i].pci_bus_id[0], '\0');
        for (int k = 0; k < i; k++) {
            cr_expect_str_neq(gpus[i].uuid, gpus[k].uuid);
            cr_expect_str_neq(gpus[i].pci_bus_id, gpus[k].pci_bus_id);
        }
    }
    free(gpus);
    gpu_backend_destroy(be);
}

Test(gpu, uuids_are_stable_per_prefix)
{
    struct gpu_info *a, *b, *c;
    int n;
    write_config("{\"count\": 2, \"uuid_prefix\": \"node1\"}");
    struct gpu_backend *be = open_sim();
    discover(be, &a, &n);
    gpu_backend_destroy(be);
    be = open_sim();
    discover(be, &b, &n);
    gpu_backend_destroy(be);
    write_config("{\"count\": 2, \"uuid_prefix\": \"node2\"}");
    be = open_sim();
    discover(be, &c, &n);
    gpu_backend_destroy(be);
    cr_expect_str_eq(a[0].uuid, b[0].uuid);
    cr_expect_str_eq(a[1].uuid, b[1].uuid);
    cr_expect_str_neq(a[0].uuid, c[0].uuid);
    cr_expect_str_neq(a[1].uuid, c[1].uuid);
    free(a);
    free(b);
    free(c);
}

Test(gpu, every_catalogue_model_gets_its_short_name)
{
    static const char *const models[] = {
        "A100-40GB", "A100-80GB",     "H100-80GB", "H200-141GB",
        "V100-16GB", "V100-32GB",     "A10-24GB",  "L4-24GB",
        "L40S-48GB", "RTX-4090-24GB", "X9-24GB",   "RTX-3090-24GB"};
    for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++) {
        char json[128];
        struct gpu_info *gpus;
        int n;
        snprintf(json, sizeof(json), "{\"count\": 1, \"model\": \"%s\"}",
                 models[m]);
        write_config(json);
        struct gpu_backend *be = open_sim();
        discover(be, &gpus, &n);
        cr_assert_eq(n, 1);
        cr_expect_str_eq(gpus[0].model, models[m], "name %s", gpus[0].name);
        free(gpus);
        gpu_backend_destroy(be);
    }
}

Test(gpu, full_form_overrides_per_gpu)
{
    struct gpu_info *gpus;
    int n;
    write_config(
        "{\"util\": [10, 20], \"mem_used_mib\": 512, \"gpus\": [{\"model\": "
        "\"A100-40GB\", \"uuid\": \"GPU-custom-0\"},{\"model\": \"V100-16GB\", "
        "\"name\": \"Tesla V100-PCIE-16GB\", \"mem_used_mib\": 1024}]}");
    struct gpu_backend *be = open_sim();
    discover(be, &gpus, &n);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(gpus[0].uuid, "GPU-custom-0");
    cr_expect_str_eq(gpus[0].model, "A100-40GB");
    cr_expect(gpus[0].mig_capable);
    cr_expect_eq(gpus[0].util_pct, 10);
    cr_expect_eq(gpus[0].mem_used, 512 * MIB);
    cr_expect_str_eq(gpus[1].name, "Tesla V100-PCIE-16GB");
    cr_expect_str_eq(gpus[1].model, "V100-16GB");
    cr_expect_not(gpus[1].mig_capable);
    cr_expect_eq(gpus[1].util_pct, 20);
    cr_expect_eq(gpus[1].mem_used, 1024 * MIB);
    free(gpus);
    gpu_backend_destroy(be);
}

Test(gpu, zero_gpus_is_a_valid_node)
{
    struct gpu_info *gpus = (struct gpu_info *)1;
    int n = -1;
    write_config("{\"count\": 0}");
    struct gpu_backend *be = open_sim();
    discover(be, &gpus, &n);
    cr_expect_eq(n, 0);
    cr_expect_null(gpus);
    gpu_backend_destroy(be);
}

Test(gpu, sample_sees_config_changes)
{
    struct gpu_info *gpus;
    struct sh_error err = {0};
    int n;
    write_config("{\"count\": 2, \"model\": \"A100-80GB\", \"util\": 5, "
                 "\"mem_used_mib\": 100}");
    struct gpu_backend *be = open_sim();
    discover(be, &gpus, &n);
    cr_expect_eq(gpus[1].util_pct, 5);
    cr_expect_eq(gpus[1].mem_used, 100 * MIB);
    cr_assert_eq(gpu_sample(be, gpus, n, &err), 0, "%s", err.msg);
    cr_expect_eq(gpus[0].util_pct, 5);
    write_config("{\"count\": 2, \"model\": \"A100-80GB\", \"util\": [70, 90], "
                 "\"mem_used_mib\": [2048, 4096]}");
    cr_assert_eq(gpu_sample(be, gpus, n, &err), 0, "%s", err.msg);
    cr_expect_eq(gpus[0].util_pct, 70);
    cr_expect_eq(gpus[1].util_pct, 90);
    cr_expect_eq(gpus[0].mem_used, 2048 * MIB);
    cr_expect_eq(gpus[1].mem_used, 4096 * MIB);
    /* Sampling one GPU alone also sees the next change. */
    write_config("{\"count\": 2, \"model\": \"A100-80GB\", \"util\": 33}");
    cr_assert_eq(gpu_sample(be, &gpus[1], 1, &err), 0, "%s", err.msg);
    cr_expect_eq(gpus[1].util_pct, 33);
    cr_expect_eq(gpus[1].mem_used, 0);
    free(gpus);
    gpu_backend_destroy(be);
}

Test(gpu, sample_failure_changes_nothing)
{
    struct gpu_info *gpus;
    struct sh_error err = {0};
    int n;
    /* Once running, GPU 1 is lost: its memory read fails mid-sample,
     * after GPU 0's values were read. */
    write_config("{\"count\": 2, \"util\": 7}");
    struct gpu_backend *be = open_sim();
    discover(be, &gpus, &n);
    struct gpu_info before[2];
    memcpy(before, gpus, sizeof(before));
    write_config(
        "{\"count\": 2, \"util\": 50, \"fail\": {\"nvmlDeviceGetMemoryInfo\": "
        "{\"after\": 0, \"gpu\": 1, \"error\": \"NVML_ERROR_GPU_IS_LOST\"}}}");
    cr_expect_eq(gpu_sample(be, gpus, n, &err), -1);
    cr_expect_eq(err.code, SH_EUNAVAILABLE);
    cr_expect(strstr(err.msg, "nvmlDeviceGetMemoryInfo(GPU 1)") != NULL, "%s",
              err.msg);
    cr_expect(strstr(err.msg, "GPU is lost") != NULL, "%s", err.msg);
    cr_expect_eq(memcmp(before, gpus, sizeof(before)), 0);
    free(gpus);
    gpu_backend_destroy(be);
}

Test(gpu, sample_rejects_unknown_index)
{
    struct gpu_info g = {.index = 5};
    struct sh_error err = {0};
    write_config("{\"count\": 2}");
    struct gpu_backend *be = open_sim();
    cr_expect_eq(gpu_sample(be, &g, 1, &err), -1);
    cr_expect_eq(err.code, SH_EINVAL);
    cr_expect_eq(gpu_sample(be, &g, -1, &err), -1);
    gpu_backend_destroy(be);
}

Test(gpu, nvlink_groups)
{
    struct gpu_info *gpus;
    int n;
    write_config("{\"count\": 5, \"nvlink\": \"pairs\"}");
    struct gpu_backend *be = open_sim();
    discover(be, &gpus, &n);
    cr_expect_eq(gpus[0].nvlink_group, 0);
    cr_expect_eq(gpus[1].nvlink_group, 0);
    cr_expect_eq(gpus[2].nvlink_group, 2);
    cr_expect_eq(gpus[3].nvlink_group, 2);
    cr_expect_eq(gpus[4].nvlink_group, -1);
    free(gpus);
    gpu_backend_destroy(be);

    /* Groups of more than two go through a simulated NVSwitch. */
    write_config("{\"count\": 6, \"nvlink\": [[1, 2, 4], [3, 5]]}");
    be = open_sim();
    discover(be, &gpus, &n);
    cr_expect_eq(gpus[0].nvlink_group, -1);
    cr_expect_eq(gpus[1].nvlink_group, 1);
    cr_expect_eq(gpus[2].nvlink_group, 1);
    cr_expect_eq(gpus[4].nvlink_group, 1);
    cr_expect_eq(gpus[3].nvlink_group, 3);
    cr_expect_eq(gpus[5].nvlink_group, 3);
    free(gpus);
    gpu_backend_destroy(be);

    write_config("{\"count\": 2, \"model\": \"L40S-48GB\"}");
    be = open_sim();
    discover(be, &gpus, &n);
    cr_expect_eq(gpus[0].nvlink_group, -1, "PCIe cards have no NVLink");
    free(gpus);
    gpu_backend_destroy(be);
}

/* On some NVSwitch boards the driver does not describe the far end of a
 * link: active links still put the GPUs in one NVLink group. */
Test(gpu, nvlink_without_remote_info_is_one_fabric)
{
    struct gpu_info *gpus;
    int n;
    write_config("{\"count\": 4, \"model\": \"H100-80GB\", \"fail\": "
                 "{\"nvmlDeviceGetNvLinkRemotePciInfo_v2\": {\"count\": -1}}}");
    struct gpu_backend *be = open_sim();
    discover(be, &gpus, &n);
    for (int i = 0; i < n; i++)
        cr_expect_eq(gpus[i].nvlink_group, 0, "GPU %d", i);
    free(gpus);
    gpu_backend_destroy(be);
}

static enum gpu_link link_of(struct gpu_backend *be, int a, int b)
{
    enum gpu_link l = GPU_LINK_UNKNOWN;
    struct sh_error err = {0};
    cr_assert_eq(gpu_link_between(be, a, b, &l, &err), 0, "%s", err.msg);
    return l;
}

Test(gpu, topology_levels)
{
    struct sh_error err = {0};
    enum gpu_link l;
    write_config(
        "{\"nvlink\": [[0, 5]], \"gpus\": [{\"switch\": 0, \"bridge\": 0, "
        "\"numa\": 0},{\"switch\": 0, \"bridge\": 0, \"numa\": 0},{\"switch\": "
        "1, \"bridge\": 0, \"numa\": 0},{\"switch\": 2, \"bridge\": 1, "
        "\"numa\": 0},{\"switch\": 3, \"bridge\": 2, \"numa\": 1},{\"switch\": "
        "4, \"bridge\": 3, \"numa\": 1}]}");
    struct gpu_backend *be = open_sim();
    /* Before any discovery: the backend finds the groups itself. */
    cr_expect_eq(link_of(be, 0, 5), GPU_LINK_NVLINK);
    cr_expect_eq(link_of(be, 0, 0), GPU_LINK_SELF);
    cr_expect_eq(link_of(be, 0, 1), GPU_LINK_PCI_SWITCH);
    cr_expect_eq(link_of(be, 1, 2), GPU_LINK_PCI_HOST);
    cr_expect_eq(link_of(be, 2, 3), GPU_LINK_NUMA);
    cr_expect_eq(link_of(be, 3, 4), GPU_LINK_SYSTEM);
    cr_expect_eq(link_of(be, 4, 5), GPU_LINK_NUMA);
    cr_expect_eq(link_of(be, 4, 3), GPU_LINK_SYSTEM);
    cr_expect_eq(gpu_link_between(be, 0, 6, &l, &err), -1);
    cr_expect_eq(err.code, SH_EINVAL);
    cr_expect_eq(gpu_link_between(be, -1, 0, &l, &err), -1);
    gpu_backend_destroy(be);
}

Test(gpu, topology_error_is_reported)
{
    struct sh_error err = {0};
    enum gpu_link l;
    write_config("{\"count\": 2, \"nvlink\": \"none\", \"fail\": "
                 "{\"nvmlDeviceGetTopologyCommonAncestor\": {\"error\": "
                 "\"NVML_ERROR_UNKNOWN\"}}}");
    struct gpu_backend *be = open_sim();
    cr_expect_eq(gpu_link_between(be, 0, 1, &l, &err), -1);
    cr_expect_eq(err.code, SH_EINTERNAL);
    cr_expect(strstr(err.msg, "nvmlDeviceGetTopologyCommonAncestor") != NULL,
              "%s", err.msg);
    /* count defaults to 1: the next call succeeds. */
    cr_expect_eq(link_of(be, 0, 1), GPU_LINK_PCI_SWITCH);
    gpu_backend_destroy(be);
}

Test(gpu, discovery_error_names_gpu_and_call)
{
    struct gpu_info *gpus = NULL;
    struct sh_error err = {0};
    int n = 0;
    write_config("{\"count\": 3, \"fail\": {\"nvmlDeviceGetUUID\": {\"gpu\": "
                 "2, \"error\": 15}}}");
    struct gpu_backend *be = open_sim();
    cr_expect_eq(gpu_discover(be, &gpus, &n, &err), -1);
    cr_expect_eq(err.code, SH_EUNAVAILABLE);
    cr_expect(strstr(err.msg, "nvmlDeviceGetUUID(GPU 2)") != NULL, "%s",
              err.msg);
    cr_expect_null(gpus);
    gpu_backend_destroy(be);
}

Test(gpu, optional_failures_leave_data_unknown)
{
    struct gpu_info *gpus;
    int n;
    write_config("{\"count\": 2, \"util\": 40, \"fail\": "
                 "{\"nvmlDeviceGetUtilizationRates\": {\"count\": "
                 "-1},\"nvmlDeviceGetMigMode\": {\"count\": "
                 "-1},\"nvmlDeviceGetNvLinkState\": {\"count\": "
                 "-1},\"nvmlDeviceGetPciInfo_v3\": {\"count\": -1}}}");
    struct gpu_backend *be = open_sim();
    discover(be, &gpus, &n);
    cr_assert_eq(n, 2);
    cr_expect_eq(gpus[0].util_pct, -1);
    cr_expect_not(gpus[0].mig_capable);
    cr_expect_eq(gpus[0].nvlink_group, -1);
    cr_expect_eq(gpus[0].pci_bus_id[0], '\0');
    cr_expect_str_eq(gpus[0].model, "H100-80GB");
    free(gpus);
    gpu_backend_destroy(be);
}

Test(gpu, set_shared_makes_time_slices)
{
    struct gpu_info *gpus;
    struct sh_error err = {0};
    int n;
    write_config("{\"count\": 1, \"model\": \"L4-24GB\"}");
    struct gpu_backend *be = open_sim();
    discover(be, &gpus, &n);
    cr_assert_eq(gpu_set_shared(&gpus[0], 4, &err), 0, "%s", err.msg);
    cr_assert_eq(gpus[0].nslices, 4);
    cr_expect_eq(gpus[0].slices[3].kind, GPU_SLICE_SHARED);
    cr_expect_str_eq(gpus[0].slices[3].uuid, gpus[0].uuid);
    cr_expect_str_eq(gpus[0].slices[3].profile, "shared/4");
    cr_expect_eq(gpus[0].slices[3].share_den, 4);
    cr_expect_eq(gpus[0].slices[3].mem_bytes, gpus[0].mem_total / 4);
    cr_expect_eq(gpus[0].slices[3].gi_id, -1);
    cr_expect_eq(gpu_set_shared(&gpus[0], 0, &err), -1);
    cr_expect_eq(gpu_set_shared(&gpus[0], GPU_SLICES_MAX + 1, &err), -1);
    gpus[0].mig_enabled = true;
    cr_expect_eq(gpu_set_shared(&gpus[0], 2, &err), -1);
    cr_expect_eq(err.code, SH_ECONFLICT);
    free(gpus);
    gpu_backend_destroy(be);
}

Test(gpu, apply_shared_preset_on_a_gpu_without_mig)
{
    struct gpu_info *gpus;
    struct sh_error err = {0};
    int n;
    write_config("{\"count\": 1, \"model\": \"V100-32GB\"}");
    struct gpu_backend *be = open_sim();
    discover(be, &gpus, &n);
    cr_assert_eq(gpu_apply_preset(be, &gpus[0], "shared-8", &err), 0, "%s",
                 err.msg);
    cr_expect_eq(gpus[0].nslices, 8);
    cr_expect_eq(gpus[0].slices[0].share_num, 1);
    cr_expect_eq(gpus[0].slices[0].share_den, 8);
    cr_expect_eq(gpus[0].slices[0].mem_bytes, 4096 * MIB);
    cr_assert_eq(gpu_apply_preset(be, &gpus[0], "all-disabled", &err), 0);
    cr_expect_eq(gpus[0].nslices, 0);
    cr_expect_eq(gpu_apply_preset(be, &gpus[0], "all-1g.10gb", &err), -1);
    cr_expect_eq(err.code, SH_ENOTFOUND);
    cr_expect(strstr(err.msg, "GPU 0") != NULL, "%s", err.msg);
    free(gpus);
    gpu_backend_destroy(be);
}

Test(gpu, mps_detection_looks_on_path)
{
    char p[160];
    char path[256];
    snprintf(path, sizeof(path), "/nonexistent:%s", dir);
    cr_expect_not(gpu_mps_available(path));
    snprintf(p, sizeof(p), "%s/nvidia-cuda-mps-control", dir);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fclose(f);
    cr_expect_not(gpu_mps_available(path), "not executable yet");
    cr_assert_eq(chmod(p, 0755), 0);
    cr_expect(gpu_mps_available(path));
    cr_expect_not(gpu_mps_available(""));
    (void)gpu_mps_available(NULL); /* $PATH: whatever this machine has */
}

/* The examples in tests/data/simgpu (documented in its README) load, with
 * the GPU counts they promise. */
Test(gpu, example_configs_load)
{
    static const struct {
        const char *file;
        int ngpus;
    } examples[] = {{"h100x8.json", 8},
                    {"a100x4-pairs.json", 4},
                    {"mixed.json", 4},
                    {"cpu-only.json", 0},
                    {"fault-mig-create.json", 1}};
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        char path[512];
        struct gpu_info *gpus = NULL;
        int n = -1;
        snprintf(path, sizeof(path), "%s/%s", SIMGPU_DATA, examples[i].file);
        setenv("SIMGPU_CONFIG", path, 1);
        struct gpu_backend *be = open_sim();
        discover(be, &gpus, &n);
        cr_expect_eq(n, examples[i].ngpus, "%s", examples[i].file);
        free(gpus);
        gpu_backend_destroy(be);
    }
}

Test(gpu, destroy_null_is_a_no_op)
{
    gpu_backend_destroy(NULL);
}
