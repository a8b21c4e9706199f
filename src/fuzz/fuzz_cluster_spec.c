/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the simulator's cluster spec, sim_cluster_parse() (sim/
 * sim_cluster.c): "NxGxMODEL[@GROUP][:PRESET]" terms joined by '+', spaces
 * or lines, with the slicing presets of lib/model/preset.c behind ":PRESET".
 * A spec that names a readable file is read from that file; an input that
 * names an existing path is skipped, so the fuzzer never reads the disk.
 * Properties: an accepted cluster has pools and its totals add up.
 */
#include <stdlib.h>
#include <unistd.h>

#include "fuzz/fuzz.h"
#include "sim/sim.h"

static void check_cluster(const char *spec, const struct sim_cluster *c)
{
    int nodes = 0, gpus = 0;
    if (c->npools < 1)
        fuzz_fail("cluster '%s' accepted without pools", spec);
    for (int i = 0; i < c->npools; i++) {
        const struct sim_pool *p = &c->pools[i];
        if (p->nodes < 1 || p->gpus < 1 || p->gpus > GPU_PER_NODE_MAX ||
            p->nslices < 0 || p->nslices > GPU_SLICES_MAX)
            fuzz_fail("cluster '%s': pool %d out of range", spec, i);
        for (int k = 0; k < p->nslices; k++) {
            if (p->slices[k].share_den <= 0)
                fuzz_fail("cluster '%s': pool %d slice %d has share "
                          "denominator %d",
                          spec, i, k, p->slices[k].share_den);
        }
        nodes += p->nodes;
        gpus += p->nodes * p->gpus;
    }
    if (nodes != c->nodes || gpus != c->gpus)
        fuzz_fail("cluster '%s': totals %d nodes %d GPUs, pools add up to "
                  "%d and %d",
                  spec, c->nodes, c->gpus, nodes, gpus);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *spec = fuzz_cstr(data, size);
    struct sim_cluster c;
    struct sh_error err;
    if (!spec)
        return 0;
    if (access(spec, F_OK) == 0) {
        free(spec);
        return 0;
    }
    if (sim_cluster_parse(spec, &c, &err) == 0)
        check_cluster(spec, &c);
    sim_cluster_fini(&c);
    free(spec);
    return 0;
}
