/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: clusters of many nodes. Setting up N nodes is linear (the
 * per-model figures are folded in per node, not recounted over all nodes
 * for every node), so a 20,000-node cluster is set up in a test; it must
 * then decide as a small one would: the largest node per model, node
 * counts per size, memory and slice figures all as a recount gives them
 * (sched_check_invariants() compares), through adds, same-layout re-sets,
 * layout changes and removals. Decisions are checked, never timings.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"

#define GIB (1ULL << 30)

static void check(struct sched *s, const char *when)
{
    struct sh_error err;
    cr_assert(sched_check_invariants(s, &err) == 0, "after %s: %s", when,
              err.msg);
}

/* A node of n GPUs of one model; the first nmig GPUs cut in seven
 * 1g.10gb MIG slices. */
static int node_set(struct sched *s, const char *name, const char *group,
                    enum sched_node_state state, int n, const char *model,
                    uint64_t mem, int nmig, struct sh_error *err)
{
    struct sched_gpu_desc g[16];
    struct gpu_slice sl[7];
    memset(g, 0, sizeof(g));
    memset(sl, 0, sizeof(sl));
    for (int k = 0; k < 7; k++) {
        sl[k].kind = GPU_SLICE_MIG;
        snprintf(sl[k].profile, sizeof(sl[k].profile), "1g.10gb");
        sl[k].mem_bytes = 10 * GIB;
        sl[k].share_num = 1;
        sl[k].share_den = 7;
    }
    for (int i = 0; i < n; i++) {
        g[i].model = model;
        g[i].mem_bytes = mem;
        g[i].nvlink_group = 0;
        if (i < nmig) {
            g[i].nslices = 7;
            g[i].slices = sl;
        }
    }
    struct sched_node_desc d = {
        .name = name, .group = group, .state = state, .ngpus = n, .gpus = g};
    return sched_node_set(s, &d, err);
}

static void job(struct sched_job_desc *d, uint64_t id, int nodes, int gpus,
                const char *type)
{
    memset(d, 0, sizeof(*d));
    d->id = id;
    d->user = "u";
    d->project = "p";
    d->priority = JOB_PRIO_NORMAL;
    d->nodes = nodes;
    d->gpus = gpus;
    d->gpu_type = type;
    d->time_limit_ms = 3600 * 1000;
}

static void add(struct sched *s, const struct sched_job_desc *d)
{
    struct sh_error err;
    cr_assert(sched_job_check(s, d, &err) == 0, "job %llu: %s",
              (unsigned long long)d->id, err.msg);
    cr_assert(sched_job_add(s, d, &err) == 0, "%s", err.msg);
}

/* The start of job id in dec, or NULL. */
static const struct sched_start *start_of(const struct sched_decisions *dec,
                                          uint64_t id)
{
    for (size_t i = 0; i < dec->nstarts; i++) {
        if (dec->starts[i].job == id)
            return &dec->starts[i];
    }
    return NULL;
}

#define NODES 20000

/* n00000..n19998: 4 x A100-40GB in switches of 32 (every 1000th node has
 * its first GPU cut in MIG slices); n19999, the last: 8 x H100-80GB. */
static struct sched *big_cluster(void)
{
    struct sh_error err;
    struct sched_config cfg;
    sched_config_init(&cfg);
    cfg.full_pass_interval_ms = 0;
    struct sched *s = sched_create(&cfg, &err);
    cr_assert(s, "%s", err.msg);
    for (int n = 0; n < NODES - 1; n++) {
        char name[16], group[16];
        snprintf(name, sizeof(name), "n%05d", n);
        snprintf(group, sizeof(group), "sw%d", n / 32);
        cr_assert(node_set(s, name, group, SCHED_NODE_UP, 4, "A100-40GB",
                           40 * GIB, n % 1000 == 500 ? 1 : 0, &err) == 0,
                  "%s", err.msg);
    }
    cr_assert(node_set(s, "n19999", "sw624", SCHED_NODE_UP, 8, "H100-80GB",
                       80 * GIB, 0, &err) == 0,
              "%s", err.msg);
    return s;
}

Test(sched_scale, twenty_thousand_nodes_decide_like_a_small_cluster)
{
    struct sched *s = big_cluster();
    struct sched_stats st;
    struct sh_error err;
    struct sched_decisions dec;
    struct sched_job_desc d;
    sched_stats_get(s, &st);
    cr_assert_eq(st.nodes, NODES);
    cr_assert_eq(st.gpus, (size_t)(NODES - 1) * 4 + 8);
    check(s, "setting up 20,000 nodes");

    /* 8 GPUs, the engine picks the nodes: only the H100 node holds them
     * on one node. */
    job(&d, 1, 0, 8, NULL);
    add(s, &d);
    /* 8 A100s: the largest A100 node has 4, so two nodes of one switch. */
    job(&d, 2, 0, 8, "A100-40GB");
    add(s, &d);
    /* The smallest thing with 10 GiB: a 1g.10gb slice. */
    job(&d, 3, 1, 1, NULL);
    d.gpu_mem = 10 * GIB;
    d.flexible = true;
    add(s, &d);
    /* 60 GiB: only H100s have it, and the H100 node is taken. */
    job(&d, 4, 1, 1, NULL);
    d.gpu_mem = 60 * GIB;
    add(s, &d);

    sched_decisions_init(&dec);
    cr_assert(sched_run(s, 1000, true, &dec, &err) == 0, "%s", err.msg);
    const struct sched_start *a = start_of(&dec, 1);
    cr_assert(a && a->nnodes == 1 && a->nplaces == 8, "job 1 not on 1 node");
    cr_assert_str_eq(dec.places[a->first].node, "n19999");
    const struct sched_start *b = start_of(&dec, 2);
    cr_assert(b && b->nnodes == 2 && b->nplaces == 8, "job 2 not 2 x 4");
    int n0 = atoi(dec.places[b->first].node + 1);
    int n1 = atoi(dec.places[b->first + 4].node + 1);
    cr_assert(n0 / 32 == n1 / 32 && n0 != n1, "job 2 across switches: %d %d",
              n0, n1);
    const struct sched_start *c = start_of(&dec, 3);
    cr_assert(c && c->nplaces == 1 && dec.places[c->first].slice >= 0,
              "job 3 did not take a slice");
    cr_assert_eq(atoi(dec.places[c->first].node + 1) % 1000, 500);
    cr_assert_null(start_of(&dec, 4));
    struct sched_job_status js;
    cr_assert(sched_job_status(s, 4, &js, &err) == 0);
    cr_assert_eq(js.state, SCHED_JOB_PENDING);
    check(s, "the first pass");

    /* What can never fit says why, from the figures. */
    job(&d, 5, 1, 8, "A100-40GB");
    cr_assert(sched_job_check(s, &d, &err) < 0);
    cr_assert(strstr(err.msg, "largest node has 4 A100-40GB"), "%s", err.msg);
    job(&d, 6, 1, 1, NULL);
    d.gpu_mem = 100 * GIB;
    cr_assert(sched_job_check(s, &d, &err) < 0);

    /* A state change re-sets a node with the same layout. */
    cr_assert(node_set(s, "n00007", "sw0", SCHED_NODE_DRAINING, 4, "A100-40GB",
                       40 * GIB, 0, &err) == 0,
              "%s", err.msg);
    check(s, "a same-layout re-set");
    /* A new, larger node: 16 A100s on one node now fit... */
    cr_assert(node_set(s, "n20000", NULL, SCHED_NODE_UP, 16, "A100-40GB",
                       40 * GIB, 0, &err) == 0,
              "%s", err.msg);
    check(s, "adding a 16-GPU node");
    job(&d, 7, 1, 16, "A100-40GB");
    add(s, &d);
    cr_assert(sched_run(s, 2000, true, &dec, &err) == 0, "%s", err.msg);
    const struct sched_start *e = start_of(&dec, 7);
    cr_assert(e && e->nplaces == 16, "job 7 did not start");
    cr_assert_str_eq(dec.places[e->first].node, "n20000");
    cr_assert(sched_job_end(s, 7, 3000, &err) == 0, "%s", err.msg);
    /* ... and no longer once it went away (a recount). */
    cr_assert(sched_node_remove(s, "n20000", &err) == 0, "%s", err.msg);
    check(s, "removing it");
    job(&d, 8, 1, 16, "A100-40GB");
    cr_assert(sched_job_check(s, &d, &err) < 0);
    /* A node that shrinks: a recount. */
    cr_assert(node_set(s, "n00009", "sw0", SCHED_NODE_UP, 2, "A100-40GB",
                       40 * GIB, 0, &err) == 0,
              "%s", err.msg);
    check(s, "shrinking a node");
    cr_assert(sched_run(s, 4000, true, &dec, &err) == 0, "%s", err.msg);
    check(s, "the last pass");
    sched_decisions_fini(&dec);
    sched_destroy(s);
}

/* Random adds, re-sets, layout changes, removals and re-adds (slices with
 * and without memory, in any order): the figures always equal a recount. */
Test(sched_scale, node_changes_keep_the_figures_of_a_recount)
{
    static const char *models[] = {"H100-80GB", "A100-40GB", "L4-24GB"};
    struct sh_error err;
    struct sched *s = sched_create(NULL, &err);
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    cr_assert(s, "%s", err.msg);
    for (int step = 0; step < 600; step++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        char name[16];
        snprintf(name, sizeof(name), "n%03d", (int)(x % 200));
        if (x % 7 == 0) {
            sched_node_remove(s, name, &err); /* may not exist: fine */
        } else {
            struct sched_gpu_desc g[8];
            struct gpu_slice sl[4];
            int n = 1 + (int)((x >> 8) % 8);
            memset(g, 0, sizeof(g));
            memset(sl, 0, sizeof(sl));
            for (int k = 0; k < 4; k++) {
                sl[k].kind = GPU_SLICE_SHARED;
                snprintf(sl[k].profile, sizeof(sl[k].profile), "shared/4");
                /* Agents may report no memory for a share. */
                sl[k].mem_bytes =
                    ((x >> (20 + k)) & 1) ? (uint64_t)(k + 1) << 30 : 0;
                sl[k].share_num = 1;
                sl[k].share_den = 4;
            }
            for (int i = 0; i < n; i++) {
                g[i].model = models[(x >> 12) % 3];
                g[i].mem_bytes = (uint64_t)(16 + (x >> 16) % 64) << 30;
                g[i].nvlink_group = -1;
                if (((x >> 30) + (uint64_t)i) % 3 == 0) {
                    g[i].nslices = 4;
                    g[i].slices = sl;
                }
            }
            struct sched_node_desc d = {
                .name = name,
                .state = (x >> 40) % 4 ? SCHED_NODE_UP : SCHED_NODE_DOWN,
                .ngpus = n,
                .gpus = g};
            cr_assert(sched_node_set(s, &d, &err) == 0, "%s", err.msg);
            if ((x >> 44) % 2) {
                d.state = SCHED_NODE_DRAINING; /* same layout */
                cr_assert(sched_node_set(s, &d, &err) == 0, "%s", err.msg);
            }
        }
        check(s, name);
    }
    sched_destroy(s);
}
