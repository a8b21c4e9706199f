/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the job lifecycle over a whole controller state (no HTTP), through
 * the seams between jobs.c and cluster.c: the cluster decides placements
 * but never states (a start is posted through d->job_transition, and a
 * start the lifecycle refuses leaves the job pending); a part's end maps
 * to the job's state once (a repeated report changes nothing); an ended
 * job keeps its place until its processes are gone; a node that goes down
 * ends its jobs as node_fail and one with --requeue comes back pending as
 * a new attempt; a dependency that can never be met cancels the job
 * through the lifecycle; a held job starts once released; a clean exit
 * completes a job and a time limit ends it as timeout; `shoal requeue`
 * stops a running job and brings it back as a new attempt once its
 * processes are gone, an ended one at once; a node removed while the
 * engine still holds a job there rebuilds the engine. Jobs here ask for no
 * GPU, on nodes without GPUs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/loop/loop.h"
#include "lib/model/job_json.h"
#include "shoald/auth.h"
#include "shoald/engine.h"
#include "shoald/commit.h"
#include "shoald/jobs.h"
#include "shoald/jobtab.h"
#include "shoald/nodes.h"
#include "shoald/nodetab.h"
#include "shoald/secrets.h"
#include "shoald/slices.h"
#include "shoald/state.h"
#include "shoald/tenancy.h"
#include "shoald/volumes.h"
#include "store/store.h"
#include "state_fixture.h"

static char dir[64];
static struct shoald d;
static const struct api_caller admin = {
    .role = API_USER, .user = "admin", .admin = true};

static void setup(void)
{
    state_fixture_open(&d, dir, sizeof(dir), "shoal-life-test");
    cr_assert_not_null(d.job_transition,
                       "shoald_create registers the lifecycle");
}

static void teardown(void)
{
    state_fixture_close(&d, dir);
}

TestSuite(lifecycle, .init = setup, .fini = teardown);

static void add_node(const char *name)
{
    struct sh_error err = {0};
    char token[AUTH_TOKEN_LEN + 1];
    json_t *gpus = json_array();
    struct nodes_reg r = {
        .name = name, .cpus = 8, .mem = 1 << 30, .gpus = gpus};
    struct node *n = NULL;
    cr_assert_eq(nodes_register(&d, &r, "127.0.0.9", "test", token, &n, &err),
                 0, "%s", err.msg);
    json_decref(gpus);
}

/* Submit a job without GPUs on nodes nodes (requeue: --requeue) and run
 * a pass: it starts. */
static struct job *submit_and_start(int nodes, bool requeue)
{
    struct sh_error err = {0};
    struct job *job = NULL;
    json_t *body = json_pack("{s:[s], s:i, s:b}", "command", "true", "nodes",
                             nodes, "requeue", requeue);
    cr_assert_eq(jobs_submit(&d, &admin, body, NULL, &job, &err), 0, "%s",
                 err.msg);
    json_decref(body);
    cr_assert_eq(job->state, JOB_PENDING);
    cluster_before_sleep(&d);
    return job;
}

/* What the cluster posted to the lifecycle, for the seam test. */
static int posted, posted_to;
static int refuse(struct shoald *dd, struct job *job, int to,
                  const char *reason, struct sh_error *err)
{
    (void)dd;
    (void)job;
    (void)reason;
    posted++;
    posted_to = to;
    return sh_errorf(err, SH_ECONFLICT, "refused by the test");
}

Test(lifecycle, the_cluster_posts_starts_and_never_sets_a_state)
{
    add_node("n1");
    int (*lifecycle)(struct shoald *, struct job *, int, const char *,
                     struct sh_error *) = d.job_transition;
    d.job_transition = refuse;
    struct job *job = submit_and_start(1, false);
    cr_assert_eq(posted, 1, "the start was posted once");
    cr_assert_eq(posted_to, JOB_RUNNING);
    cr_assert_eq(job->state, JOB_PENDING, "a refused start changes nothing");
    d.job_transition = lifecycle;
}

Test(lifecycle, a_part_ends_the_job_once_its_last_part_is_done)
{
    struct sh_error err = {0};
    add_node("n1");
    add_node("n2");
    struct job *job = submit_and_start(2, false);
    cr_assert_eq(job->state, JOB_RUNNING, "started through the lifecycle");
    cr_assert_eq(job->nalloc, 2);
    const char *first = job->alloc[0].node, *second = job->alloc[1].node;
    cr_assert_eq(jobs_part_done(&d, job, first, 0, 0, NULL, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(job->state, JOB_RUNNING, "the other part still runs");
    cr_assert_eq(jobs_part_done(&d, job, first, 3, 0, NULL, &err), 0);
    cr_assert_eq(job->state, JOB_RUNNING, "a repeated report changes nothing");
    cr_assert_lt(jobs_part_done(&d, job, "n9", 0, 0, NULL, &err), 0);
    cr_assert_eq(err.code, SH_ENOTFOUND);
    cr_assert_eq(jobs_part_done(&d, job, second, 3, 0, NULL, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(job->state, JOB_FAILED);
    char want[64];
    snprintf(want, sizeof(want), "exited with 3 on %s", second);
    cr_assert_str_eq(job->reason, want);
    cr_assert_not(job->releasing, "no part left: nothing is held");
    cr_assert_eq(nodetab_rt(d.nodes, first)->njobs, 0);
    cr_assert_eq(nodetab_rt(d.nodes, second)->njobs, 0);
}

Test(lifecycle, a_cancelled_job_holds_its_place_until_its_processes_are_gone)
{
    struct sh_error err = {0};
    add_node("n1");
    struct job *job = submit_and_start(1, false);
    cr_assert_eq(job->state, JOB_RUNNING);
    uint64_t gen = nodetab_rt(d.nodes, "n1")->generation;
    cr_assert_eq(jobs_cancel(&d, &admin, job, &err), 0, "%s", err.msg);
    cr_assert_eq(job->state, JOB_CANCELLED);
    cr_assert(job->releasing, "its processes still run");
    cr_assert_gt(nodetab_rt(d.nodes, "n1")->generation, gen,
                 "its node is told to stop it");
    cr_assert_eq(nodetab_rt(d.nodes, "n1")->njobs, 1);
    cr_assert_eq(jobs_part_done(&d, job, "n1", 0, 15, "cancelled", &err), 0);
    cr_assert_eq(job->state, JOB_CANCELLED, "an ended job stays ended");
    cr_assert_not(job->releasing);
    cr_assert_eq(nodetab_rt(d.nodes, "n1")->njobs, 0);
}

Test(lifecycle, a_node_down_requeues_its_job_as_a_new_attempt)
{
    add_node("n1");
    struct job *job = submit_and_start(1, true);
    struct job *plain = submit_and_start(1, false);
    cr_assert_eq(job->state, JOB_RUNNING);
    cr_assert_eq(plain->state, JOB_RUNNING);
    int attempt = job_attempt(job);
    jobs_node_down(&d, nodetab_get(d.nodes, "n1"), "no heartbeat for 30s");
    cr_assert_not(nodetab_get(d.nodes, "n1")->alive);
    cr_assert_eq(plain->state, JOB_NODE_FAIL);
    cr_assert_str_eq(plain->reason, "node n1 failed: no heartbeat for 30s");
    cr_assert_not(plain->releasing, "its processes count as lost");
    cr_assert_eq(job->state, JOB_PENDING, "--requeue: back to the queue");
    cr_assert_eq(job_attempt(job), attempt + 1, "as a new attempt");
    cr_assert_eq(nodetab_rt(d.nodes, "n1")->njobs, 0);
}

/* Submit body as the admin; the job stays pending until a pass. */
static struct job *submit(json_t *body)
{
    struct sh_error err = {0};
    struct job *job = NULL;
    cr_assert_eq(jobs_submit(&d, &admin, body, NULL, &job, &err), 0, "%s",
                 err.msg);
    json_decref(body);
    return job;
}

Test(lifecycle, a_dependency_never_met_cancels_through_the_lifecycle)
{
    struct sh_error err = {0};
    add_node("n1");
    struct job *first = submit_and_start(1, false);
    cr_assert_eq(first->state, JOB_RUNNING);
    char dep[64];
    snprintf(dep, sizeof(dep), "afterok:%llu", (unsigned long long)first->id);
    struct job *next =
        submit(json_pack("{s:[s], s:s}", "command", "true", "dependency", dep));
    cluster_before_sleep(&d);
    cr_assert_eq(next->state, JOB_PENDING, "waits for job %llu",
                 (unsigned long long)first->id);
    cr_assert_eq(jobs_part_done(&d, first, "n1", 1, 0, NULL, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(first->state, JOB_FAILED);
    cluster_before_sleep(&d);
    cr_assert_eq(next->state, JOB_CANCELLED, "afterok can never be met");
    cr_assert_not_null(strstr(next->reason, "dependency"), "%s", next->reason);
}

Test(lifecycle, a_held_job_starts_only_once_released)
{
    struct sh_error err = {0};
    add_node("n1");
    struct job *job =
        submit(json_pack("{s:[s], s:b}", "command", "true", "hold", true));
    cluster_before_sleep(&d);
    cr_assert_eq(job->state, JOB_PENDING, "held");
    cr_assert_eq(jobs_release(&d, &admin, job, &err), 0, "%s", err.msg);
    cluster_before_sleep(&d);
    cr_assert_eq(job->state, JOB_RUNNING, "released: it starts");
}

Test(lifecycle, a_clean_exit_completes_and_a_time_limit_ends_as_timeout)
{
    struct sh_error err = {0};
    add_node("n1");
    struct job *clean = submit_and_start(1, false);
    struct job *slow = submit_and_start(1, true);
    cr_assert_eq(clean->state, JOB_RUNNING);
    cr_assert_eq(slow->state, JOB_RUNNING);
    cr_assert_eq(nodetab_rt(d.nodes, "n1")->njobs, 2);
    cr_assert_eq(jobs_part_done(&d, clean, "n1", 0, 0, NULL, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(clean->state, JOB_COMPLETED);
    cr_assert_eq(clean->exit_code, 0);
    cr_assert_eq(nodetab_rt(d.nodes, "n1")->njobs, 1, "its place is free");
    cr_assert_eq(jobs_part_done(&d, slow, "n1", 0, 15, "timeout", &err), 0,
                 "%s", err.msg);
    cr_assert_eq(slow->state, JOB_TIMEOUT, "--requeue does not bring it back");
    cr_assert_str_eq(slow->reason, "time limit reached on n1");
    cr_assert_eq(nodetab_rt(d.nodes, "n1")->njobs, 0);
}

Test(lifecycle, a_requeued_running_job_comes_back_once_its_processes_are_gone)
{
    struct sh_error err = {0};
    add_node("n1");
    struct job *job = submit_and_start(1, false);
    cr_assert_eq(job->state, JOB_RUNNING);
    int attempt = job_attempt(job);
    cr_assert_eq(jobs_requeue(&d, &admin, job, &err), 0, "%s", err.msg);
    cr_assert_eq(job->state, JOB_PREEMPTED, "stopped first");
    cr_assert(job->releasing, "its processes still run");
    cr_assert_eq(nodetab_rt(d.nodes, "n1")->njobs, 1);
    cr_assert_eq(jobs_part_done(&d, job, "n1", 0, 15, "cancelled", &err), 0,
                 "%s", err.msg);
    cr_assert_eq(job->state, JOB_PENDING, "back in the queue");
    cr_assert_eq(job_attempt(job), attempt + 1, "as a new attempt");
    cr_assert_eq(nodetab_rt(d.nodes, "n1")->njobs, 0);
    cr_assert_lt(jobs_requeue(&d, &admin, job, &err), 0);
    cr_assert_eq(err.code, SH_ECONFLICT, "a pending job is not requeued");
    cluster_before_sleep(&d);
    cr_assert_eq(job->state, JOB_RUNNING, "and it starts again");
}

Test(lifecycle, a_requeued_failed_job_goes_back_at_once)
{
    struct sh_error err = {0};
    add_node("n1");
    struct job *job = submit_and_start(1, false);
    cr_assert_eq(jobs_part_done(&d, job, "n1", 2, 0, NULL, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(job->state, JOB_FAILED);
    cr_assert_not(job->releasing);
    int attempt = job_attempt(job);
    cr_assert_eq(jobs_requeue(&d, &admin, job, &err), 0, "%s", err.msg);
    cr_assert_eq(job->state, JOB_PENDING, "nothing runs: back at once");
    cr_assert_eq(job_attempt(job), attempt + 1);
}

Test(lifecycle, a_node_the_engine_keeps_is_rebuilt_away)
{
    /* The engine refuses to remove n1 (job a still runs there, as far as
     * it knows): the engine is rebuilt from the tables, so the next job
     * goes to n2 rather than to the node the table no longer has. */
    add_node("n1");
    add_node("n2");
    struct job *a = submit_and_start(2, false);
    cr_assert_eq(a->state, JOB_RUNNING);
    cluster_node_removed(&d, "n1");
    cr_assert_null(nodetab_get(d.nodes, "n1"));
    struct job *b = submit_and_start(1, false);
    cr_assert_eq(b->state, JOB_RUNNING, "started on the node left");
    cr_assert_str_eq(b->alloc[0].node, "n2");
}
