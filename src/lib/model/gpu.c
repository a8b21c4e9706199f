/* SPDX-License-Identifier: Apache-2.0 */
/* GPU model naming (see gpu.h). */
#include "lib/model/gpu.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Marketed memory sizes in GB; the reported total is a little less than the
 * marketed size (reserved memory), so round up to the nearest of these. */
static const int marketed_gb[] = {4,   6,   8,   10,  11,  12,  16, 20,
                                  24,  32,  40,  48,  64,  80,  94, 96,
                                  120, 141, 144, 180, 192, 256, 288};

static int round_marketed(uint64_t bytes)
{
    double gib = (double)bytes / (1024.0 * 1024.0 * 1024.0);
    for (size_t i = 0; i < sizeof(marketed_gb) / sizeof(marketed_gb[0]); i++) {
        /* Within 12% below the marketed size counts as that size. */
        if (gib <= marketed_gb[i] * 1.02 && gib >= marketed_gb[i] * 0.88)
            return marketed_gb[i];
    }
    return (int)(gib + 0.5);
}

void gpu_model_from_name(const char *name, uint64_t mem_total, char *model,
                         size_t size)
{
    const char *p = name;
    static const char *const vendor[] = {"NVIDIA ", "Tesla ", "GeForce ",
                                         "Quadro "};
    for (size_t i = 0; i < sizeof(vendor) / sizeof(vendor[0]); i++) {
        size_t n = strlen(vendor[i]);
        if (strncmp(p, vendor[i], n) == 0)
            p += n;
    }
    /* The family is the first word, up to a space or a dash: "H100",
     * "A100", "RTX". "RTX 4090" keeps its second word. */
    char family[GPU_MODEL_MAX];
    size_t n = 0;
    while (p[n] && p[n] != ' ' && p[n] != '-' && n < sizeof(family) - 1) {
        family[n] = p[n];
        n++;
    }
    family[n] = '\0';
    if ((strcmp(family, "RTX") == 0 || strcmp(family, "GTX") == 0) &&
        p[n] == ' ') {
        const char *q = p + n + 1;
        size_t m = 0;
        while (q[m] && q[m] != ' ' && n + 1 + m < sizeof(family) - 1)
            m++;
        family[n] = '-';
        memcpy(family + n + 1, q, m);
        family[n + 1 + m] = '\0';
    }
    if (!family[0])
        snprintf(family, sizeof(family), "GPU");
    for (char *c = family; *c; c++) {
        if (!(isalnum((unsigned char)*c) || *c == '-' || *c == '_'))
            *c = '_';
    }
    if (mem_total)
        snprintf(model, size, "%s-%dGB", family, round_marketed(mem_total));
    else
        snprintf(model, size, "%s", family);
}

const char *gpu_link_name(enum gpu_link l)
{
    switch (l) {
    case GPU_LINK_SELF:
        return "self";
    case GPU_LINK_NVLINK:
        return "nvlink";
    case GPU_LINK_PCI_SWITCH:
        return "pci_switch";
    case GPU_LINK_PCI_HOST:
        return "pci_host";
    case GPU_LINK_NUMA:
        return "numa";
    case GPU_LINK_SYSTEM:
        return "system";
    default:
        return "unknown";
    }
}
