/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: accounting and idle GPUs (shoald/acct.c): the idle policies'
 * names, a part's CPU time and memory peak, and, over a whole controller
 * without HTTP (state_fixture.h) with one node of two GPUs, the idle
 * detection from GPU samples: utilization is accounted time-weighted, a
 * job all of whose GPUs stay under the threshold for the idle time is
 * flagged (warn) or cancelled (cancel), and a busy sample clears it. */
#include <criterion/criterion.h>
#include <string.h>

#include "shoald/acct.h"
#include "shoald/engine.h"
#include "shoald/jobs.h"
#include "shoald/jobtab.h"
#include "shoald/nodes.h"
#include "shoald/nodetab.h"
#include "state_fixture.h"

#define MIN_MS (60LL * 1000)

static char dir[64];
static struct shoald d;
static const struct api_caller admin = {
    .role = API_USER, .user = "admin", .admin = true};

static void setup(void)
{
    state_fixture_open(&d, dir, sizeof(dir), "shoal-acct-test");
    d.cfg.idle_threshold_pct = 5;
    d.cfg.idle_after_ms = 30 * MIN_MS;
    d.cfg.idle_policy = ACCT_IDLE_WARN;
}

static void teardown(void)
{
    state_fixture_close(&d, dir);
}

TestSuite(acct, .init = setup, .fini = teardown);

Test(acct, idle_policy_names_round_trip)
{
    static const char *const names[] = {"none", "warn", "cancel", "preempt"};
    for (int i = 0; i < 4; i++) {
        enum acct_idle_policy p;
        cr_assert_eq(acct_idle_policy_from_name(names[i], &p), 0);
        cr_assert_eq((int)p, i);
        cr_assert_str_eq(acct_idle_policy_name(p), names[i]);
    }
    enum acct_idle_policy p;
    cr_assert_eq(acct_idle_policy_from_name("kill", &p), -1);
    cr_assert_eq(acct_idle_policy_from_name(NULL, &p), -1);
}

Test(acct, a_parts_cpu_adds_up_and_its_memory_peak_is_the_highest)
{
    struct job job;
    memset(&job, 0, sizeof(job));
    acct_part_usage(&job, 1000, 50);
    acct_part_usage(&job, 2000, 20);
    cr_assert_eq(job.cpu_ns, 3000);
    cr_assert_eq(job.mem_peak, 50);
}

/* Node n1 with two GPUs, and a job on both of them, running. */
static struct job *start_gpu_job(void)
{
    struct sh_error err = {0};
    state_fixture_add_node(&d, "n1", 2, "A100-80GB", (int64_t)80 << 30, "acct");
    struct job *job = NULL;
    json_t *body = json_pack("{s:[s], s:i}", "command", "train", "gpus", 2);
    cr_assert_eq(jobs_submit(&d, &admin, body, NULL, &job, &err), 0, "%s",
                 err.msg);
    json_decref(body);
    cluster_before_sleep(&d);
    cr_assert_eq(job->state, JOB_RUNNING, "%s", job->reason);
    return job;
}

/* Both GPUs of n1 at util %, sampled at now. */
static void sample(int util, int64_t now)
{
    struct node *n = nodetab_get(d.nodes, "n1");
    for (int g = 0; g < n->ngpus; g++)
        n->gpus[g].util_pct = util;
    acct_node_samples(&d, n, now);
}

Test(acct, utilization_is_time_weighted)
{
    struct job *job = start_gpu_job();
    int64_t t = shoald_now_ms(&d);
    sample(80, t);
    sample(80, t + 10000);
    sample(20, t + 40000);
    cr_assert_eq(job->util_ms, 40000);
    /* 10 s at 80 %, then 30 s at 20 % (a sample counts back to the one
     * before it) */
    cr_assert_float_eq(job->util_sum / (double)job->util_ms, 35.0, 1e-9);
}

Test(acct, a_job_idle_long_enough_is_flagged_and_a_busy_sample_clears_it)
{
    struct job *job = start_gpu_job();
    int64_t t = shoald_now_ms(&d);
    sample(1, t);
    sample(1, t + 29 * MIN_MS);
    cr_assert(!job->idle, "not yet the idle time");
    /* Samples a minute apart: longer gaps are not evidence. */
    sample(1, t + 30 * MIN_MS);
    sample(1, t + 31 * MIN_MS);
    cr_assert(job->idle);
    cr_assert_eq(job->state, JOB_RUNNING, "warn only flags it");
    sample(90, t + 32 * MIN_MS);
    cr_assert(!job->idle, "a busy sample clears it");
    cr_assert_eq(job->idle_since_ms, 0);
}

Test(acct, the_cancel_policy_ends_an_idle_job)
{
    d.cfg.idle_policy = ACCT_IDLE_CANCEL;
    struct job *job = start_gpu_job();
    uint64_t id = job->id;
    int64_t t = shoald_now_ms(&d);
    sample(0, t);
    sample(0, t + 31 * MIN_MS);
    job = jobtab_get(d.jobs, id);
    cr_assert_not_null(job);
    cr_assert_eq(job->state, JOB_CANCELLED, "%s", job_state_name(job->state));
    cr_assert(job->reason && strstr(job->reason, "idle"), "%s",
              job->reason ? job->reason : "(none)");
}
