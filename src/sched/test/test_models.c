/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: a job's gpu_type naming a set of models ("A100-80GB|H100-80GB"):
 * it runs on any model of the set and never on another, all its GPUs (a
 * gang too) of one model; slice jobs keep to the set's sliced GPUs; what
 * cannot fit and why a job waits say the set.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"

#define GIB (1ULL << 30)
#define SET "A100-80GB|H100-80GB"

static void check(struct sched *s, const char *when)
{
    struct sh_error err;
    cr_assert(sched_check_invariants(s, &err) == 0, "after %s: %s", when,
              err.msg);
}

/* A node of 4 GPUs of model; shares > 0 cuts each in that many
 * time-slices. */
static void node(struct sched *s, const char *name, const char *model,
                 int shares)
{
    struct sched_gpu_desc g[4];
    struct gpu_slice sl[4];
    struct sh_error err;
    memset(g, 0, sizeof(g));
    memset(sl, 0, sizeof(sl));
    for (int k = 0; k < shares; k++) {
        sl[k].kind = GPU_SLICE_SHARED;
        snprintf(sl[k].profile, sizeof(sl[k].profile), "shared/%d", shares);
        sl[k].mem_bytes = 8 * GIB;
        sl[k].share_num = 1;
        sl[k].share_den = shares;
    }
    for (int i = 0; i < 4; i++) {
        g[i].model = model;
        g[i].mem_bytes = 80 * GIB;
        g[i].nvlink_group = 0;
        g[i].nslices = shares;
        g[i].slices = shares ? sl : NULL;
    }
    struct sched_node_desc d = {
        .name = name, .state = SCHED_NODE_UP, .ngpus = 4, .gpus = g};
    cr_assert(sched_node_set(s, &d, &err) == 0, "%s", err.msg);
}

static void job(struct sched *s, uint64_t id, int nodes, int gpus,
                const char *type, const char *slice)
{
    struct sched_job_desc d;
    struct sh_error err;
    memset(&d, 0, sizeof(d));
    d.id = id;
    d.user = "u";
    d.project = "p";
    d.priority = JOB_PRIO_NORMAL;
    d.nodes = nodes;
    d.gpus = gpus;
    d.gpu_type = type;
    d.slice = slice;
    d.submit_ms = (int64_t)id;
    cr_assert(sched_job_check(s, &d, &err) == 0, "job %llu: %s",
              (unsigned long long)id, err.msg);
    cr_assert(sched_job_add(s, &d, &err) == 0, "%s", err.msg);
}

/* The model of every GPU job id runs on ("" when not running), from the
 * node names: a* nodes hold A100s, h* H100s, l* L4s. Fails on a mix. */
static char model_of(struct sched *s, uint64_t id)
{
    struct sched_place p[16];
    int n = sched_job_placement(s, id, p, 16);
    if (n <= 0)
        return 0;
    for (int i = 1; i < n; i++)
        cr_assert_eq(p[i].node[0], p[0].node[0], "job %llu mixes %s and %s",
                     (unsigned long long)id, p[0].node, p[i].node);
    return p[0].node[0];
}

static struct sched *cluster(void)
{
    struct sh_error err;
    struct sched_config cfg;
    sched_config_init(&cfg);
    cfg.full_pass_interval_ms = 0;
    cfg.max_reservations = 0; /* reasons say resources, not reservation */
    struct sched *s = sched_create(&cfg, &err);
    cr_assert(s, "%s", err.msg);
    node(s, "a0", "A100-80GB", 0);
    node(s, "a1", "A100-80GB", 0);
    node(s, "h0", "H100-80GB", 0);
    node(s, "h1", "H100-80GB", 0);
    node(s, "l0", "L4-24GB", 0);
    node(s, "l1", "L4-24GB", 0);
    return s;
}

static void run(struct sched *s, int64_t now, struct sched_decisions *dec)
{
    struct sh_error err;
    cr_assert(sched_run(s, now, true, dec, &err) == 0, "%s", err.msg);
    check(s, "a pass");
}

Test(sched_models, a_set_runs_on_its_models_only)
{
    struct sched *s = cluster();
    struct sched_decisions dec;
    char buf[256];
    sched_decisions_init(&dec);
    for (uint64_t id = 1; id <= 5; id++)
        job(s, id, 1, 4, SET, NULL);
    run(s, 1000, &dec);
    cr_assert_eq(dec.nstarts, 4);
    int a = 0, h = 0;
    for (uint64_t id = 1; id <= 4; id++) {
        char m = model_of(s, id);
        cr_assert(m == 'a' || m == 'h', "job %llu on %c",
                  (unsigned long long)id, m);
        a += m == 'a';
        h += m == 'h';
    }
    cr_assert(a == 2 && h == 2);
    /* Both L4 nodes are free, yet job 5 waits for its set. */
    cr_assert_eq(model_of(s, 5), 0);
    sched_job_reason(s, 5, buf, sizeof(buf));
    cr_assert_str_eq(buf, "resources: needs 4 " SET " on one node", "%s", buf);
    /* One model is enough: an H100 node frees, job 5 takes it. */
    struct sh_error err;
    for (uint64_t id = 1; id <= 4; id++) {
        if (model_of(s, id) == 'h') {
            cr_assert(sched_job_end(s, id, 2000, &err) == 0, "%s", err.msg);
            break;
        }
    }
    run(s, 2000, &dec);
    cr_assert_eq(model_of(s, 5), 'h');
    sched_decisions_fini(&dec);
    sched_destroy(s);
}

Test(sched_models, a_gang_never_mixes_models)
{
    struct sched *s = cluster();
    struct sched_decisions dec;
    struct sh_error err;
    sched_decisions_init(&dec);
    /* Hold one A100 and one H100 node: one of each model stays free. */
    job(s, 1, 1, 4, "A100-80GB", NULL);
    job(s, 2, 1, 4, "H100-80GB", NULL);
    run(s, 1000, &dec);
    cr_assert_eq(dec.nstarts, 2);
    /* 2 x 4 of the set (and 8 with the nodes left to the engine): an
     * A100 node and an H100 node are free, but that would mix. */
    job(s, 3, 2, 4, SET, NULL);
    job(s, 4, 0, 8, SET, NULL);
    run(s, 2000, &dec);
    cr_assert_eq(dec.nstarts, 0, "a gang started across models");
    /* The other A100 node frees: job 3 takes both A100 nodes. */
    cr_assert(sched_job_end(s, 1, 3000, &err) == 0, "%s", err.msg);
    run(s, 3000, &dec);
    cr_assert_eq(model_of(s, 3), 'a');
    cr_assert_eq(sched_job_placement(s, 3, NULL, 0), 8);
    cr_assert_eq(model_of(s, 4), 0);
    cr_assert(sched_job_end(s, 2, 4000, &err) == 0, "%s", err.msg);
    run(s, 4000, &dec);
    cr_assert_eq(model_of(s, 4), 'h');
    sched_decisions_fini(&dec);
    sched_destroy(s);
}

Test(sched_models, slice_jobs_keep_to_the_set)
{
    struct sh_error err;
    struct sched *s = sched_create(NULL, &err);
    struct sched_decisions dec;
    sched_decisions_init(&dec);
    cr_assert(s, "%s", err.msg);
    node(s, "a0", "A100-80GB", 4);
    node(s, "l0", "L4-24GB", 4);
    for (uint64_t id = 1; id <= 3; id++)
        job(s, id, 1, 1, "L4-24GB|H100-80GB", "shared");
    run(s, 1000, &dec);
    cr_assert_eq(dec.nstarts, 3);
    for (uint64_t id = 1; id <= 3; id++)
        cr_assert_eq(model_of(s, id), 'l');
    sched_decisions_fini(&dec);
    sched_destroy(s);
}

Test(sched_models, checks_name_the_set)
{
    struct sched *s = cluster();
    struct sched_job_desc d;
    struct sh_error err;
    memset(&d, 0, sizeof(d));
    d.id = 1;
    d.user = "u";
    d.project = "p";
    d.nodes = 1;
    d.gpus = 4;
    /* A set of which the cluster has one model is fine. */
    d.gpu_type = "B200-192GB|H100-80GB";
    cr_assert(sched_job_check(s, &d, &err) == 0, "%s", err.msg);
    d.gpu_type = "B200-192GB|GB200";
    cr_assert(sched_job_check(s, &d, &err) < 0);
    cr_assert_str_eq(err.msg, "unknown GPU model 'B200-192GB|GB200'");
    d.gpu_type = "A100-80GB|";
    cr_assert(sched_job_check(s, &d, &err) < 0);
    cr_assert(strstr(err.msg, "separated by '|'"), "%s", err.msg);
    cr_assert(sched_job_add(s, &d, &err) < 0);
    cr_assert_eq(err.code, SH_EINVAL);
    d.gpu_type = SET;
    d.gpus = 8;
    cr_assert(sched_job_check(s, &d, &err) < 0);
    cr_assert(strstr(err.msg, "largest node has 4"), "%s", err.msg);
    sched_destroy(s);
}
