/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: shoald/resources.c, the host CPUs and memory of jobs at
 * submission: the default share a job that asks none gets (from the
 * nodes, or the admin's settings), and the refusal of a request no node
 * holds, naming the largest node's figures. Nodes are made in memory. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "shoald/jobtab.h"
#include "shoald/nodetab.h"
#include "shoald/resources.h"
#include "shoald/shoald.h"

#define GIB (UINT64_C(1) << 30)

static struct shoald d;

static void setup(void)
{
    memset(&d, 0, sizeof(d));
    d.nodes = nodetab_create();
    d.jobs = jobtab_create();
    cr_assert(d.nodes && d.jobs);
}

static void teardown(void)
{
    nodetab_destroy(d.nodes);
    jobtab_destroy(d.jobs);
}

static void add_node(const char *name, int cpus, uint64_t mem, int ngpus)
{
    struct node *n = node_create(name);
    cr_assert(n);
    n->cpus = cpus;
    n->mem = mem;
    n->ngpus = ngpus;
    n->gpus = ngpus ? calloc((size_t)ngpus, sizeof(*n->gpus)) : NULL;
    cr_assert_eq(nodetab_add(d.nodes, n), 0);
}

static struct job_spec gpu_job(int gpus)
{
    struct job_spec s;
    memset(&s, 0, sizeof(s));
    s.nodes = 1;
    s.gpus_per_node = gpus;
    return s;
}

TestSuite(resources, .init = setup, .fini = teardown);

Test(resources, a_gpu_job_gets_its_gpus_share_of_the_poorest_node)
{
    add_node("big", 64, 512 * GIB, 8); /* 8 CPUs, 64G per GPU */
    add_node("small", 2, 24 * GIB, 4); /* 0 CPUs, 6G per GPU */
    struct job_spec s = gpu_job(2);
    resources_defaults(&d, &s);
    cr_assert_eq(s.mem, 12 * GIB);
    cr_assert_eq(s.cpus, 0, "fewer CPUs than GPUs somewhere: none counted");
    /* What the job asks stays. */
    s = gpu_job(1);
    s.mem = 3 * GIB;
    s.cpus = 5;
    resources_defaults(&d, &s);
    cr_assert_eq(s.mem, 3 * GIB);
    cr_assert_eq(s.cpus, 5);
}

Test(resources, cpus_per_gpu_from_the_nodes_or_the_admin)
{
    add_node("a", 16, 64 * GIB, 4);
    struct job_spec s = gpu_job(3);
    resources_defaults(&d, &s);
    cr_assert_eq(s.cpus, 12);
    cr_assert_eq(s.mem, 48 * GIB);
    d.cfg.default_cpus_per_gpu = 1;
    d.cfg.default_mem_per_gpu = 2 * GIB;
    s = gpu_job(3);
    resources_defaults(&d, &s);
    cr_assert_eq(s.cpus, 3);
    cr_assert_eq(s.mem, 6 * GIB);
}

Test(resources, a_total_counts_per_node_as_the_engine_splits_it)
{
    add_node("a", 16, 64 * GIB, 4);
    struct job_spec s;
    memset(&s, 0, sizeof(s));
    s.gpus_total = 6; /* 2 nodes x 3 on 4-GPU nodes */
    resources_defaults(&d, &s);
    cr_assert_eq(s.mem, 48 * GIB);
    cr_assert_eq(s.cpus, 12);
}

Test(resources, a_job_without_gpus_gets_a_cpus_memory_share)
{
    add_node("a", 2, 24 * GIB, 4); /* more GPUs than CPUs: a GPU's share */
    struct job_spec s;
    memset(&s, 0, sizeof(s));
    s.nodes = 1;
    resources_defaults(&d, &s);
    cr_assert_eq(s.cpus, 0);
    cr_assert_eq(s.mem, 6 * GIB);
    d.cfg.default_cpus = 2;
    d.cfg.default_mem_per_cpu = GIB;
    memset(&s, 0, sizeof(s));
    s.nodes = 1;
    resources_defaults(&d, &s);
    cr_assert_eq(s.cpus, 2);
    cr_assert_eq(s.mem, 2 * GIB);
}

Test(resources, a_request_no_node_holds_is_refused_with_the_largest)
{
    struct sh_error err = {0};
    struct job_spec s = gpu_job(1);
    s.mem = 500 * GIB;
    cr_assert_eq(resources_check(&d, &s, &err), 0, "no node: nothing to judge");
    add_node("a", 2, 23 * GIB + 512 * (GIB >> 10), 4);
    add_node("b", 64, 16 * GIB, 4);
    cr_assert_eq(resources_check(&d, &s, &err), -1);
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert_str_eq(err.msg,
                     "needs 500G memory on a node but the largest node has "
                     "23.5G");
    s.mem = 20 * GIB;
    s.cpus = 8; /* a has the memory, b the CPUs: neither both */
    cr_assert_eq(resources_check(&d, &s, &err), -1);
    cr_assert(strstr(err.msg, "no node has both"), "%s", err.msg);
    s.cpus = 100;
    s.mem = GIB;
    cr_assert_eq(resources_check(&d, &s, &err), -1);
    cr_assert_str_eq(err.msg,
                     "needs 100 CPUs on a node but the largest node has 64");
    s.cpus = 2;
    cr_assert_eq(resources_check(&d, &s, &err), 0);
}

/* Slices take their part of a GPU's share, so that the slices one GPU
 * holds take about one GPU's share of the node, never seven quarters. */
Test(resources, a_slice_takes_its_part_of_a_gpus_share)
{
    add_node("a", 16, 56 * GIB, 2); /* 28G per GPU */
    struct job_spec s = gpu_job(1);
    s.slice = "1g.10gb";
    resources_defaults(&d, &s);
    cr_assert_eq(s.mem, 4 * GIB, "1/7 of 28G");
    cr_assert_eq(s.cpus, 0);
    s = gpu_job(1);
    s.slice = "3g.40gb";
    resources_defaults(&d, &s);
    cr_assert_eq(s.mem, 12 * GIB, "3/7 of 28G");
    s = gpu_job(1);
    s.slice = "shared/4";
    resources_defaults(&d, &s);
    cr_assert_eq(s.mem, 7 * GIB);
    s = gpu_job(1);
    s.slice = "shared";
    resources_defaults(&d, &s);
    cr_assert_eq(s.mem, 28 * GIB / 8 / (1 << 20) * (1 << 20));
}
