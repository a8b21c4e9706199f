/* SPDX-License-Identifier: Apache-2.0 */
/* Host CPUs and memory of jobs at submission: defaults and the refusal of
 * requests no node could hold (resources.h). */
#include "shoald/resources.h"

#include <stdio.h>

#include "lib/util/parse.h"
#include "shoald/jobtab.h"
#include "shoald/nodetab.h"
#include "shoald/shoald.h"

/* Without nodes to judge by. */
#define FALLBACK_MEM_PER_GPU (UINT64_C(4) << 30)
#define MIB (UINT64_C(1) << 20)

/* The least per GPU (CPUs and memory) and per job without GPUs (memory)
 * the registered nodes have. */
struct shares {
    int cpus_per_gpu; /* 0 where a node has fewer CPUs than GPUs */
    uint64_t mem_per_gpu;
    uint64_t mem_per_cpu_job;
};

static void node_shares(const struct shoald *d, struct shares *sh)
{
    bool gpu_seen = false, cpu_seen = false;
    sh->cpus_per_gpu = 0;
    sh->mem_per_gpu = FALLBACK_MEM_PER_GPU;
    sh->mem_per_cpu_job = FALLBACK_MEM_PER_GPU;
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n)) {
        if (n->cpus <= 0 || n->mem == 0)
            continue;
        if (n->ngpus > 0) {
            int c = n->cpus / n->ngpus;
            uint64_t m = n->mem / (uint64_t)n->ngpus / MIB * MIB;
            if (!gpu_seen || c < sh->cpus_per_gpu)
                sh->cpus_per_gpu = c;
            if (!gpu_seen || m < sh->mem_per_gpu)
                sh->mem_per_gpu = m;
            gpu_seen = true;
        }
        /* A job without GPUs: a CPU's share, or a GPU's where the node has
         * more GPUs than CPUs. */
        int parts = n->ngpus > n->cpus ? n->ngpus : n->cpus;
        uint64_t m = n->mem / (uint64_t)parts / MIB * MIB;
        if (!cpu_seen || m < sh->mem_per_cpu_job)
            sh->mem_per_cpu_job = m;
        cpu_seen = true;
    }
}

/* GPUs per node of a job asking total GPUs in all: as the engine splits
 * them (sched.h), over the fewest nodes of the most GPUs a node has, the
 * same count on each. */
static int total_per_node(const struct shoald *d, int total)
{
    int per = 0;
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n))
        per = n->ngpus > per ? n->ngpus : per;
    if (per == 0 || total <= per)
        return total;
    int nn = (total + per - 1) / per;
    while (total % nn)
        nn++;
    return total / nn;
}

/* A slice's part of its GPU's memory share, by its profile's name: MIG's
 * "Ng.*" N of the GPU's 7 compute slices, a time-slice "shared/N" one N-th,
 * any other ("shared": any time-slice) an eighth, so that as many slices
 * as a GPU holds take about its share, never several GPUs'. */
static uint64_t slice_share(const char *profile, uint64_t per_gpu)
{
    unsigned n = 0;
    char rest;
    if (sscanf(profile, "%ug.%c", &n, &rest) == 2 && n >= 1 && n <= 7)
        return per_gpu * n / 7;
    if (sscanf(profile, "shared/%u", &n) == 1 && n >= 1 && n <= 64)
        return per_gpu / n;
    return per_gpu / 8;
}

void resources_defaults(const struct shoald *d, struct job_spec *spec)
{
    if (spec->cpus > 0 && spec->mem > 0)
        return;
    struct shares sh;
    node_shares(d, &sh);
    if (d->cfg.default_cpus_per_gpu > 0)
        sh.cpus_per_gpu = d->cfg.default_cpus_per_gpu;
    if (d->cfg.default_mem_per_gpu > 0)
        sh.mem_per_gpu = d->cfg.default_mem_per_gpu;
    if (!job_spec_uses_gpus(spec)) {
        if (spec->cpus == 0)
            spec->cpus = d->cfg.default_cpus;
        if (spec->mem == 0)
            spec->mem = d->cfg.default_mem_per_cpu > 0
                            ? d->cfg.default_mem_per_cpu *
                                  (uint64_t)(spec->cpus > 0 ? spec->cpus : 1)
                            : sh.mem_per_cpu_job *
                                  (uint64_t)(spec->cpus > 0 ? spec->cpus : 1);
        return;
    }
    int gpn = spec->gpus_total ? total_per_node(d, spec->gpus_total)
                               : spec->gpus_per_node;
    if (spec->slice) {
        if (spec->mem == 0)
            spec->mem = slice_share(spec->slice, sh.mem_per_gpu) / MIB * MIB;
        return;
    }
    if (spec->cpus == 0)
        spec->cpus = sh.cpus_per_gpu * gpn;
    if (spec->mem == 0)
        spec->mem = sh.mem_per_gpu * (uint64_t)gpn;
}

int resources_check(const struct shoald *d, const struct job_spec *spec,
                    struct sh_error *err)
{
    int most_cpus = 0;
    uint64_t most_mem = 0;
    bool any = false;
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n)) {
        any = true;
        if (n->cpus >= spec->cpus && n->mem >= spec->mem)
            return 0;
        if (n->cpus > most_cpus)
            most_cpus = n->cpus;
        if (n->mem > most_mem)
            most_mem = n->mem;
    }
    if (!any)
        return 0;
    char need[32], have[32];
    if (spec->mem > most_mem) {
        format_size(spec->mem, need, sizeof(need));
        format_size(most_mem, have, sizeof(have));
        return sh_errorf(err, SH_EINVAL,
                         "needs %s memory on a node but the largest node has "
                         "%s",
                         need, have);
    }
    if (spec->cpus > most_cpus)
        return sh_errorf(err, SH_EINVAL,
                         "needs %d CPUs on a node but the largest node has %d",
                         spec->cpus, most_cpus);
    format_size(spec->mem, need, sizeof(need));
    return sh_errorf(err, SH_EINVAL,
                     "needs %d CPUs and %s memory on one node but no node has "
                     "both",
                     spec->cpus, need);
}

void resources_node_allocated(const struct shoald *d, const char *name,
                              int *cpus, uint64_t *mem)
{
    const struct node_rt *rt = nodetab_rt(d->nodes, name);
    *cpus = 0;
    *mem = 0;
    for (int i = 0; rt && i < rt->njobs; i++) {
        const struct job *job = jobtab_get(d->jobs, rt->jobs[i]);
        if (!job || job->state != JOB_RUNNING)
            continue;
        *cpus += job->spec.cpus;
        *mem += job->spec.mem;
    }
}
