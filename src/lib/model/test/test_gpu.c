/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: gpu_model_from_name turns the names real NVML drivers report, with
 * the memory they report, into the short model users type; gpu_link_name. */
#include <criterion/criterion.h>

#include "lib/model/gpu.h"

#define MIB (UINT64_C(1) << 20)

static void check(const char *name, uint64_t mib, const char *want)
{
    char model[GPU_MODEL_MAX];
    gpu_model_from_name(name, mib * MIB, model, sizeof(model));
    cr_expect_str_eq(model, want, "%s (%llu MiB)", name,
                     (unsigned long long)mib);
}

Test(gpu_model, names_data_center_gpus)
{
    check("NVIDIA H100 80GB HBM3", 81559, "H100-80GB");
    check("NVIDIA H100 PCIe", 81559, "H100-80GB");
    check("NVIDIA A100-SXM4-40GB", 40960, "A100-40GB");
    check("NVIDIA A100-SXM4-40GB", 40536, "A100-40GB");
    check("NVIDIA A100-SXM4-80GB", 81920, "A100-80GB");
    check("NVIDIA A100 80GB PCIe", 81920, "A100-80GB");
    check("NVIDIA H200", 143771, "H200-141GB");
    check("Tesla V100-SXM2-16GB", 16384, "V100-16GB");
    check("Tesla V100-SXM2-32GB", 32768, "V100-32GB");
    check("NVIDIA L40S", 46068, "L40S-48GB");
    check("NVIDIA A10", 23028, "A10-24GB");
}

Test(gpu_model, names_consumer_gpus_with_their_number)
{
    check("NVIDIA GeForce RTX 4090", 24564, "RTX-4090-24GB");
}

Test(gpu_model, without_memory_gives_the_family_only)
{
    check("NVIDIA H100 80GB HBM3", 0, "H100");
}

Test(gpu_model, odd_names_stay_identifiers)
{
    check("", 16384, "GPU-16GB");
    check("NVIDIA Foo/Bar", 16384, "Foo_Bar-16GB");
}

Test(gpu_model, link_names_are_stable)
{
    cr_expect_str_eq(gpu_link_name(GPU_LINK_SELF), "self");
    cr_expect_str_eq(gpu_link_name(GPU_LINK_NVLINK), "nvlink");
    cr_expect_str_eq(gpu_link_name(GPU_LINK_PCI_SWITCH), "pci_switch");
    cr_expect_str_eq(gpu_link_name(GPU_LINK_PCI_HOST), "pci_host");
    cr_expect_str_eq(gpu_link_name(GPU_LINK_NUMA), "numa");
    cr_expect_str_eq(gpu_link_name(GPU_LINK_SYSTEM), "system");
    cr_expect_str_eq(gpu_link_name(GPU_LINK_UNKNOWN), "unknown");
}
