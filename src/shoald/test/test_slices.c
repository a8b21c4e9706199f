/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: slicing plans on the controller (shoald/slices.c) over a whole
 * controller without HTTP (state_fixture.h) with one node of two GPUs
 * without MIG: a request is checked whole before any plan is made; a
 * waiting plan keeps new jobs off its GPU; the node's work carries it only
 * once no job holds the GPU (the walk over the node's parts), and it is
 * applied when the node reports the preset, or failed with the agent's
 * reason. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "shoald/engine.h"
#include "shoald/jobs.h"
#include "shoald/nodes.h"
#include "shoald/nodetab.h"
#include "shoald/slices.h"
#include "state_fixture.h"

static char dir[64];
static struct shoald d;
static const struct api_caller admin = {
    .role = API_USER, .user = "admin", .admin = true};

static void setup(void)
{
    state_fixture_open(&d, dir, sizeof(dir), "shoal-slices-test");
    state_fixture_add_node(&d, "n1", 2, "T4-16GB", (int64_t)16 << 30, "slices");
}

static void teardown(void)
{
    state_fixture_close(&d, dir);
}

TestSuite(slices, .init = setup, .fini = teardown);

static int work_gpus(void)
{
    json_t *w = slices_node_work(&d, nodetab_get(d.nodes, "n1"));
    int n = (int)json_array_size(w);
    json_decref(w);
    return n;
}

Test(slices, a_request_is_checked_before_any_plan_is_made)
{
    struct sh_error err = {0};
    cr_assert_eq(slices_request(&d, "n9", NULL, 0, "shared-4", "t", &err), -1);
    cr_assert_eq(err.code, SH_ENOTFOUND);
    int bad[] = {0, 5};
    cr_assert_eq(slices_request(&d, "n1", bad, 2, "shared-4", "t", &err), -1);
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert(strstr(err.msg, "no GPU 5"), "%s", err.msg);
    cr_assert(!slices_gpu_blocked(&d, "n1", 0), "GPU 0 got no plan either");
    cr_assert_eq(slices_request(&d, "n1", NULL, 0, "all-1g.5gb", "t", &err), -1,
                 "a MIG preset on a GPU without MIG");
    cr_assert(!slices_gpu_blocked(&d, "n1", 0));
}

Test(slices, a_plan_blocks_its_gpu_until_the_node_reports_the_preset)
{
    struct sh_error err = {0};
    int one[] = {0};
    cr_assert_eq(slices_request(&d, "n1", one, 1, "shared-4", "test", &err), 0,
                 "%s", err.msg);
    cr_assert(slices_gpu_blocked(&d, "n1", 0));
    cr_assert(!slices_gpu_blocked(&d, "n1", 1));
    cr_assert_eq(work_gpus(), 1, "the free GPU's plan goes to the agent");
    cr_assert(slices_gpu_blocked(&d, "n1", 0), "applying blocks too");
    struct node *n = nodetab_get(d.nodes, "n1");
    snprintf(n->gpus[0].preset, sizeof(n->gpus[0].preset), "shared-4");
    slices_node_reported(&d, n);
    cr_assert(!slices_gpu_blocked(&d, "n1", 0), "applied");
    cr_assert_eq(work_gpus(), 0);
}

Test(slices, a_gpu_a_job_holds_is_sliced_only_once_the_job_is_gone)
{
    struct sh_error err = {0};
    struct job *job = NULL;
    json_t *body = json_pack("{s:[s], s:i}", "command", "train", "gpus", 2);
    cr_assert_eq(jobs_submit(&d, &admin, body, NULL, &job, &err), 0, "%s",
                 err.msg);
    json_decref(body);
    cluster_before_sleep(&d);
    cr_assert_eq(job->state, JOB_RUNNING);
    cr_assert_eq(slices_request(&d, "n1", NULL, 0, "shared-2", "t", &err), 0,
                 "%s", err.msg);
    cr_assert_eq(work_gpus(), 0, "both GPUs are held");
    cr_assert_eq(jobs_part_done(&d, job, "n1", 0, 0, NULL, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(work_gpus(), 2, "free now");
}

Test(slices, a_failed_plan_frees_its_gpu_with_the_agents_reason)
{
    struct sh_error err = {0};
    int one[] = {1};
    cr_assert_eq(slices_request(&d, "n1", one, 1, "shared-8", "t", &err), 0);
    cr_assert_eq(work_gpus(), 1);
    slices_failed(&d, "n1", 1, "shared-4", "not this preset");
    cr_assert(slices_gpu_blocked(&d, "n1", 1), "another preset's failure");
    slices_failed(&d, "n1", 1, "shared-8", "driver said no");
    cr_assert(!slices_gpu_blocked(&d, "n1", 1));
    json_t *v = slices_view(&d);
    char *text = json_dumps(v, 0);
    cr_assert(strstr(text, "driver said no"), "%s", text);
    free(text);
    json_decref(v);
}
