/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: replays. FIFO on one node equals the textbook definition exactly
 * (by hand, and against a reference over random traces); backfill fills
 * gaps without delaying the head; metrics of a tiny trace checked by hand;
 * the JSON report's fields; determinism.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

struct fixture {
    struct sim_trace t;
    struct sim_cluster c;
    struct sim_result r;
};

static void replay_with(struct fixture *f, const char *cluster,
                        const char *trace, enum sched_policy policy, bool exact,
                        const char *tenants)
{
    struct sh_error err = {0};
    struct sim_options o;
    sim_options_init(&o);
    o.sched.policy = policy;
    o.exact_limits = exact;
    o.tenants = tenants;
    cr_assert(sim_trace_parse(trace, "t.csv", SIM_FORMAT_AUTO, &f->t, &err) ==
                  0,
              "%s", err.msg);
    cr_assert(sim_cluster_parse(cluster, &f->c, &err) == 0, "%s", err.msg);
    cr_assert(sim_run(&f->c, &f->t, &o, &f->r, &err) == 0, "%s", err.msg);
}

static void replay(struct fixture *f, const char *cluster, const char *trace,
                   enum sched_policy policy, bool exact)
{
    replay_with(f, cluster, trace, policy, exact, NULL);
}

static void done(struct fixture *f)
{
    sim_result_fini(&f->r);
    sim_cluster_fini(&f->c);
    sim_trace_fini(&f->t);
}

/* Start time (s) of the job with trace id id. */
static int64_t start_of(const struct fixture *f, uint64_t id)
{
    for (size_t i = 0; i < f->t.njobs; i++) {
        if (f->t.jobs[i].id == id)
            return f->r.outcomes[i].first_start_ms / 1000;
    }
    cr_assert_fail("no job %llu", (unsigned long long)id);
    return -1;
}

/* A 4-GPU node, FIFO. Job 2 needs all 4 GPUs: it starts when job 1 ends
 * (10). Jobs 3 and 4 would fit earlier next to job 1 but may not pass job
 * 2: they start when it ends (15). At 20 job 5 takes the node, job 6
 * waits for it (21). */
static const char *fifo_trace = "id,submit,duration,gpus\n"
                                "1,0,10,2\n"
                                "2,1,5,4\n"
                                "3,2,3,1\n"
                                "4,3,2,2\n"
                                "5,20,1,4\n"
                                "6,20,1,1\n";

Test(sim_run, fifo_on_one_node_is_textbook_fifo)
{
    struct fixture f;
    memset(&f, 0, sizeof(f));
    replay(&f, "1x4xH100-80GB", fifo_trace, SCHED_POLICY_FIFO, false);
    static const int64_t want[] = {0, 10, 15, 15, 20, 21};
    for (uint64_t id = 1; id <= 6; id++)
        cr_assert_eq(start_of(&f, id), want[id - 1], "job %llu",
                     (unsigned long long)id);
    cr_assert_eq(f.r.jobs, 6);
    cr_assert_float_eq(f.r.makespan_s, 22.0, 1e-9);
    done(&f);
}

Test(sim_run, backfill_fills_gaps_without_delaying_the_head)
{
    /* With exact limits job 2's reservation is at 10; job 3 (ends 5) and
     * job 4 (starts when 3 ends, ends 7) fit before it. */
    struct fixture f;
    memset(&f, 0, sizeof(f));
    replay(&f, "1x4xH100-80GB", fifo_trace, SCHED_POLICY_DEFAULT, true);
    cr_assert_eq(start_of(&f, 1), 0);
    cr_assert_eq(start_of(&f, 2), 10);
    cr_assert_eq(start_of(&f, 3), 2);
    cr_assert_eq(start_of(&f, 4), 5);
    done(&f);
}

/* The textbook: one node of g GPUs; at each instant, completions free
 * GPUs, arrivals join the queue in (submit, id) order, then the head
 * starts while it fits. Writes start times (ms) in trace order. */
static void reference_fifo(const struct sim_trace *t, int g, int64_t *start)
{
    size_t n = t->njobs, head = 0, a = 0;
    int64_t *end = calloc(n, sizeof(*end));
    int free_gpus = g;
    for (size_t i = 0; i < n; i++)
        start[i] = -1;
    for (;;) {
        int64_t now = INT64_MAX;
        if (a < n)
            now = t->jobs[a].submit_ms;
        for (size_t i = 0; i < n; i++) {
            if (start[i] >= 0 && end[i] > 0 && end[i] < now)
                now = end[i];
        }
        if (now == INT64_MAX)
            break;
        for (size_t i = 0; i < n; i++) {
            if (start[i] >= 0 && end[i] == now) {
                free_gpus += t->jobs[i].gpus;
                end[i] = 0;
            }
        }
        while (a < n && t->jobs[a].submit_ms == now)
            a++;
        while (head < a && t->jobs[head].gpus <= free_gpus) {
            start[head] = now;
            end[head] = now + t->jobs[head].duration_ms;
            free_gpus -= t->jobs[head].gpus;
            if (t->jobs[head].duration_ms == 0) {
                /* Zero-length jobs end at once: free now. */
                free_gpus += t->jobs[head].gpus;
                end[head] = 0;
            }
            head++;
        }
    }
    free(end);
}

Test(sim_run, fifo_matches_the_reference_on_random_traces)
{
    uint64_t x = 12345;
    for (int round = 0; round < 20; round++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        fprintf(m, "id,submit,duration,gpus\n");
        for (int i = 1; i <= 150; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            fprintf(m, "%d,%llu,%llu,%llu\n", i, (unsigned long long)(x % 400),
                    (unsigned long long)(1 + (x >> 20) % 60),
                    (unsigned long long)(1 + (x >> 40) % 8));
        }
        fclose(m);
        struct fixture f;
        memset(&f, 0, sizeof(f));
        replay(&f, "1x8xH100-80GB", buf, SCHED_POLICY_FIFO, false);
        int64_t *want = calloc(f.t.njobs, sizeof(*want));
        reference_fifo(&f.t, 8, want);
        for (size_t i = 0; i < f.t.njobs; i++)
            cr_assert_eq(f.r.outcomes[i].first_start_ms, want[i],
                         "round %d job %llu: %lld, textbook %lld", round,
                         (unsigned long long)f.t.jobs[i].id,
                         (long long)f.r.outcomes[i].first_start_ms,
                         (long long)want[i]);
        free(want);
        free(buf);
        done(&f);
    }
}

/* Two GPUs. Job 1 takes both for 100 s; jobs 2 and 3 start at 100.
 *   JCT: 100, 150-10 = 140, 130-20 = 110 -> avg 350/3, p50 110 (nearest
 *   rank 2 of 3), p95 = p99 = 140.
 *   Waits: 0, 140-50 = 90, 110-30 = 80 -> avg 170/3, p99 90.
 *   Makespan 150; GPU time 2*100 + 50 + 30 = 280 -> utilization 280/300.
 *   Projects: a has jobs 1 and 3 (JCT avg 105, 230 of 280 GPU-s), b has
 *   job 2 (140, 50 of 280).
 *   Jain over mean duration/JCT: a (1 + 30/110)/2, b 50/140. */
static const char *tiny = "id,submit,duration,gpus,project\n"
                          "1,0,100,2,a\n"
                          "2,10,50,1,b\n"
                          "3,20,30,1,a\n";

Test(sim_run, metrics_of_a_tiny_trace_by_hand)
{
    struct fixture f;
    memset(&f, 0, sizeof(f));
    replay(&f, "1x2xH100-80GB", tiny, SCHED_POLICY_DEFAULT, false);
    const struct sim_result *r = &f.r;
    cr_assert_eq(r->jobs, 3);
    cr_assert_float_eq(r->makespan_s, 150, 1e-9);
    cr_assert_float_eq(r->jct_avg_s, 350.0 / 3, 1e-9);
    cr_assert_float_eq(r->jct_p50_s, 110, 1e-9);
    cr_assert_float_eq(r->jct_p95_s, 140, 1e-9);
    cr_assert_float_eq(r->jct_p99_s, 140, 1e-9);
    cr_assert_float_eq(r->wait_avg_s, 170.0 / 3, 1e-9);
    cr_assert_float_eq(r->wait_p99_s, 90, 1e-9);
    cr_assert_float_eq(r->utilization, 280.0 / 300, 1e-9);
    double xa = (1 + 30.0 / 110) / 2, xb = 50.0 / 140;
    double jain = (xa + xb) * (xa + xb) / (2 * (xa * xa + xb * xb));
    cr_assert_float_eq(r->jain, jain, 1e-9);
    cr_assert_eq(r->preemptions, 0);
    const struct sim_project *pa = NULL, *pb = NULL;
    for (size_t i = 0; i < r->nprojects; i++) {
        if (r->projects[i].jobs && strcmp(r->projects[i].name, "a") == 0)
            pa = &r->projects[i];
        if (r->projects[i].jobs && strcmp(r->projects[i].name, "b") == 0)
            pb = &r->projects[i];
    }
    cr_assert(pa && pb);
    cr_assert_eq(pa->jobs, 2);
    cr_assert_float_eq(pa->jct_sum_s / 2, 105, 1e-9);
    cr_assert_float_eq(pa->gpu_s, 230, 1e-9);
    cr_assert_float_eq(pb->gpu_s, 50, 1e-9);
    done(&f);
}

Test(sim_run, json_report_has_the_contract_fields)
{
    struct fixture f;
    memset(&f, 0, sizeof(f));
    replay(&f, "1x2xH100-80GB", tiny, SCHED_POLICY_DEFAULT, false);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    cr_assert(sim_report_json(m, &f.r) == 0);
    fclose(m);
    json_error_t je;
    json_t *o = json_loads(buf, 0, &je);
    cr_assert(o, "%s", je.text);
    static const char *keys[] = {"jobs",          "makespan_s",  "jct_avg_s",
                                 "jct_p50_s",     "jct_p95_s",   "jct_p99_s",
                                 "wait_avg_s",    "wait_p99_s",  "utilization",
                                 "jain_fairness", "preemptions", "projects"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        cr_assert(json_object_get(o, keys[i]), "no %s", keys[i]);
    cr_assert_eq(json_integer_value(json_object_get(o, "jobs")), 3);
    json_t *a = json_object_get(json_object_get(o, "projects"), "a");
    cr_assert(a);
    cr_assert_eq(json_integer_value(json_object_get(a, "jobs")), 2);
    cr_assert_float_eq(json_real_value(json_object_get(a, "jct_avg_s")), 105,
                       1e-6);
    cr_assert_float_eq(json_real_value(json_object_get(a, "gpu_share")),
                       230.0 / 280, 1e-6);
    json_decref(o);
    free(buf);
    done(&f);
}

Test(sim_run, slices_gangs_and_rejections)
{
    /* A sliced pool takes the slice job; the 3-node gang cannot fit two
     * nodes of whole GPUs and is rejected; the 16-GPU job spans two. */
    struct fixture f;
    memset(&f, 0, sizeof(f));
    replay(&f, "2x8xH100-80GB+1x1xH100-80GB:all-1g.10gb",
           "id,submit,duration,gpus,nodes,slice\n"
           "1,0,100,1,,1g.10gb\n"
           "2,0,100,24,3,\n"
           "3,0,100,16,,\n",
           SCHED_POLICY_DEFAULT, false);
    cr_assert_eq(f.r.jobs, 2);
    cr_assert_eq(f.r.rejected, 1);
    cr_assert_eq(start_of(&f, 1), 0);
    cr_assert_eq(start_of(&f, 3), 0);
    /* The slice is 1/7 of a GPU for 100 s. */
    cr_assert_float_eq(f.r.utilization, (16 * 100 + 100.0 / 7) / (17 * 100.0),
                       1e-9);
    done(&f);
}

Test(sim_run, same_trace_same_result)
{
    struct fixture a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    char path[512];
    snprintf(path, sizeof(path), "%s/pollux_workload-6.csv", TRACES_DIR);
    FILE *f = fopen(path, "r");
    cr_assert(f);
    char *text = calloc(1, 1 << 16);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    text[n] = '\0';
    replay(&a, "4x8xH100-80GB", text, SCHED_POLICY_DEFAULT, false);
    replay(&b, "4x8xH100-80GB", text, SCHED_POLICY_DEFAULT, false);
    cr_assert_eq(a.r.noutcomes, b.r.noutcomes);
    cr_assert(memcmp(a.r.outcomes, b.r.outcomes,
                     a.r.noutcomes * sizeof(*a.r.outcomes)) == 0);
    cr_assert_float_eq(a.r.jct_avg_s, b.r.jct_avg_s, 0);
    free(text);
    done(&a);
    done(&b);
}

/* Quotas in a replay: "other" borrows the node; "own" reclaims it at 10.
 * Job 1 stops after the 10 s grace (the controller's, at 20) and is
 * requeued; job 2 runs 20-70; job 1 reruns 70-170. GPU time 4*20 + 4*50 +
 * 4*100 = 680 over 4 GPUs x 170 s: the node was never idle. */
Test(sim_run, quotas_reclaim_and_requeue)
{
    struct fixture f;
    memset(&f, 0, sizeof(f));
    replay_with(&f, "1x4xH100-80GB",
                "id,submit,duration,gpus,project\n"
                "1,0,100,4,other\n"
                "2,10,50,4,own\n",
                SCHED_POLICY_DEFAULT, false,
                "# the owner's guarantee covers the node\n"
                "project own guaranteed=4 limit=4\n"
                "project other guaranteed=0 limit=4\n");
    cr_assert_eq(f.r.preemptions, 1);
    cr_assert_eq(f.r.jobs, 2);
    const struct sim_outcome *o1 = &f.r.outcomes[0], *o2 = &f.r.outcomes[1];
    cr_assert_eq(o1->first_start_ms, 0);
    cr_assert_eq(o1->start_ms, 70000);
    cr_assert_eq(o1->end_ms, 170000);
    cr_assert_eq(o1->attempts, 2);
    cr_assert_eq(o2->start_ms, 20000);
    cr_assert_eq(o2->end_ms, 70000);
    cr_assert_float_eq(f.r.utilization, 1.0, 1e-9);
    cr_assert_float_eq(f.r.wait_avg_s, (50 + 10) / 2.0, 1e-9);
    done(&f);
}

/* The same reclaim with checkpointing: job 1 is told to stop at 10 (its
 * checkpoint: 10 s of work), stops at 20, and resumes at 70 with 90 s
 * left plus a 5 s restore: it ends at 165, not 170. Without --resume for
 * its project it reruns from the start. */
Test(sim_run, a_checkpointed_job_resumes_where_it_was_told_to_stop)
{
    static const char *trace = "id,submit,duration,gpus,project\n"
                               "1,0,100,4,other\n"
                               "2,10,50,4,own\n";
    static const char *tenants = "project own guaranteed=4 limit=4\n"
                                 "project other guaranteed=0 limit=4\n";
    struct sh_error err = {0};
    struct fixture f;
    memset(&f, 0, sizeof(f));
    struct sim_options o;
    sim_options_init(&o);
    o.tenants = tenants;
    cr_assert_eq(sim_resume_parse("other:5s", &o.resume[0], &err), 0, "%s",
                 err.msg);
    cr_assert_eq(sim_resume_parse("vision:0s", &o.resume[1], &err), 0, "%s",
                 err.msg);
    o.nresume = 2;
    cr_assert(sim_trace_parse(trace, "t.csv", SIM_FORMAT_AUTO, &f.t, &err) ==
              0);
    cr_assert(sim_cluster_parse("1x4xH100-80GB", &f.c, &err) == 0);
    cr_assert(sim_run(&f.c, &f.t, &o, &f.r, &err) == 0, "%s", err.msg);
    cr_assert_eq(f.r.preemptions, 1);
    cr_assert_eq(f.r.resumes, 1);
    cr_assert_eq(f.r.outcomes[0].start_ms, 70000);
    cr_assert_eq(f.r.outcomes[0].end_ms, 165000);
    cr_assert_eq(f.r.outcomes[1].end_ms, 70000);
    done(&f);

    /* Only "vision" checkpoints now: job 1 reruns from the start. */
    memset(&f, 0, sizeof(f));
    o.resume[0] = o.resume[1];
    o.nresume = 1;
    cr_assert(sim_trace_parse(trace, "t.csv", SIM_FORMAT_AUTO, &f.t, &err) ==
              0);
    cr_assert(sim_cluster_parse("1x4xH100-80GB", &f.c, &err) == 0);
    cr_assert(sim_run(&f.c, &f.t, &o, &f.r, &err) == 0, "%s", err.msg);
    cr_assert_eq(f.r.resumes, 0);
    cr_assert_eq(f.r.outcomes[0].end_ms, 170000);
    done(&f);
}

Test(sim_run, resume_specs_are_checked)
{
    struct sim_resume r;
    struct sh_error err = {0};
    cr_assert_eq(sim_resume_parse("all:2m", &r, &err), 0);
    cr_assert_str_eq(r.who, "all");
    cr_assert_eq(r.restore_ms, 120000);
    cr_assert_lt(sim_resume_parse("all", &r, &err), 0);
    cr_assert(strstr(err.msg, "PROJECT:DUR"), "%s", err.msg);
    cr_assert_lt(sim_resume_parse(":2m", &r, &err), 0);
    cr_assert_lt(sim_resume_parse("a b:2m", &r, &err), 0);
    cr_assert(strstr(err.msg, "not a project name"), "%s", err.msg);
    cr_assert_lt(sim_resume_parse("all:soon", &r, &err), 0);
}

Test(sim_run, tenants_errors_name_the_line)
{
    struct sched *s = sched_create(NULL, NULL);
    struct sh_error err = {0};
    cr_assert(sim_tenants_apply("project a guaranteed=2\nteem b\n", "q.txt", s,
                                &err) < 0);
    cr_assert(strstr(err.msg, "q.txt:2: unknown directive"), "%s", err.msg);
    cr_assert(sim_tenants_apply("project a guaranteed=x\n", "q.txt", s, &err) <
              0);
    cr_assert(strstr(err.msg, "q.txt:1: not a GPU amount: 'x'"), "%s", err.msg);
    cr_assert(sim_tenants_apply("project a guaranteed=4 limit=2\n", "q.txt", s,
                                &err) < 0);
    cr_assert(strstr(err.msg, "q.txt:1: limit must be >= guaranteed"), "%s",
              err.msg);
    sched_destroy(s);
}

/* --outcomes: one row per job with its times, attempts, state and nodes.
 * On 1 node of 2 sliced GPUs and 1 of 2 whole ones: job 1 takes both whole
 * GPUs; job 2 (a gang of 2 nodes x 2) can never fit: node n00000 has no
 * whole GPU; job 3 (a quarter GPU) runs on a time-slice of n00000; job 4
 * waits for job 1 and ends at 30. */
Test(sim_run, outcomes_give_each_job_its_times_state_and_nodes)
{
    struct fixture f;
    memset(&f, 0, sizeof(f));
    replay(&f, "1x2xH100-80GB:shared-4+1x2xH100-80GB",
           "id,submit,duration,gpus,nodes\n"
           "1,0,10,2,1\n"
           "2,0,10,4,2\n"
           "3,1,5,0.25,1\n"
           "4,2,20,1,1\n",
           SCHED_POLICY_FIFO, false);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    cr_assert(m);
    cr_assert_eq(sim_report_outcomes(m, &f.t, &f.r), 0);
    fclose(m);
    cr_assert_str_eq(buf, "id,submit,first_start,start,end,attempts,state,"
                          "nodes\n"
                          "1,0,0,0,10,1,completed,n00001\n"
                          "2,0,,,,0,rejected,\n"
                          "3,1,1,1,6,1,completed,n00000\n"
                          "4,2,10,10,30,1,completed,n00001\n");
    free(buf);
    done(&f);
}

/* Host memory: a node giving jobs 64G (and 8 CPUs). Jobs 1 and 2 ask 40G
 * each: 2 waits for 1 to end (100) though GPUs are free; job 3 asks 20G
 * and runs beside 1 at once; job 4 asks 6 CPUs, more than are left beside
 * 3's 4 (from 0 until 50): it starts at 50. Without the columns (and on a
 * cluster without figures) every job starts at 0: the old results. */
static const char *host_trace = "id,submit,duration,gpus,cpus,mem\n"
                                "1,0,100,1,,40G\n"
                                "2,0,10,1,,40G\n"
                                "3,0,50,1,4,20G\n"
                                "4,0,10,1,6,\n";

Test(sim_run, host_cpus_and_memory_from_the_trace_and_cluster)
{
    struct fixture f;
    memset(&f, 0, sizeof(f));
    replay(&f, "1x4xH100-80GB/8/64G", host_trace, SCHED_POLICY_DEFAULT, true);
    cr_assert_eq(start_of(&f, 1), 0);
    cr_assert_eq(start_of(&f, 2), 100);
    cr_assert_eq(start_of(&f, 3), 0);
    cr_assert_eq(start_of(&f, 4), 50);
    done(&f);
    memset(&f, 0, sizeof(f));
    replay(&f, "1x4xH100-80GB", host_trace, SCHED_POLICY_DEFAULT, true);
    for (uint64_t id = 1; id <= 4; id++)
        cr_assert_eq(start_of(&f, id), 0, "job %llu", (unsigned long long)id);
    done(&f);
    struct sim_cluster c;
    struct sh_error err;
    cr_assert(sim_cluster_parse("2x8xH100-80GB/0/1T", &c, &err) < 0);
    cr_assert(strstr(err.msg, "/CPUS/MEM"), "%s", err.msg);
    sim_cluster_fini(&c);
    cr_assert(
        sim_cluster_parse("2x8xH100-80GB/128/1T@2:all-1g.10gb", &c, &err) == 0,
        "%s", err.msg);
    cr_assert_eq(c.pools[0].cpus, 128);
    cr_assert_eq(c.pools[0].host_mem, UINT64_C(1) << 40);
    cr_assert_eq(c.pools[0].group_size, 2);
    sim_cluster_fini(&c);
}
