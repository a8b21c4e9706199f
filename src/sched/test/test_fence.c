/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the pending reason of a slice job whose only free slices are on
 * unfenced GPUs (time-sliced without MPS) that another project holds. The
 * reason must name the fence and the projects behind it, and only when the
 * fence is the whole story: no free slice at all, slices too small, of
 * another model or on a GPU waiting to be re-sliced keep the plain
 * "resources: needs a ... slice". Scenarios in the format of
 * tests/data/sched/README.md, run with the engine's invariants checked
 * after every line.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "sched/test/scn.h"

static void run(const char *name, const char *text)
{
    char msg[1024];
    int rc = scn_run_text(name, text, msg, sizeof(msg));
    cr_assert(rc == 0, "%s", msg);
}

#define FENCE "; the free ones are on unfenced GPUs (time-sliced, no MPS) "

Test(sched_fence, another_projects_unfenced_gpu_is_named_in_the_reason)
{
    static const char scn[] =
        "node a gpus=2xH100-80GB\n"
        "gpu a 0 slices=4xshared/4 share=1/4 mem=20G kind=shared unfenced\n"
        "job 1 slice=shared project=vision submit=1\n"
        "job 2 slice=shared project=nlp submit=2\n"
        "job 3 slice=shared/4 project=nlp submit=3\n"
        "run 10\n"
        "expect start 1 on=a:0/0\n"
        "expect nostart 2\n"
        "expect reason 2 \"resources: needs a shared slice" FENCE
        "held by project vision\"\n"
        "expect reason 3 \"resources: needs a shared/4 slice" FENCE
        "held by project vision\"\n"
        /* The holder's own project still shares it. */
        "job 4 slice=shared project=vision submit=4\n"
        "run 20\n"
        "expect start 4 on=a:0/1\n"
        "expect reason 2 \"resources: needs a shared slice" FENCE
        "held by project vision\"\n"
        /* Once vision's jobs are gone, nlp gets the GPU. */
        "end 1 at=30\n"
        "end 4 at=30\n"
        "run 30\n"
        "expect start 2 on=a:0/0\n"
        "expect start 3 on=a:0/1\n";
    run("fence_one", scn);
}

Test(sched_fence, every_fencing_project_is_named)
{
    static const char two[] =
        "node a gpus=2xA100-80GB\n"
        "gpu a 0 slices=2xshared/2 share=1/2 mem=40G kind=shared unfenced\n"
        "gpu a 1 slices=2xshared/2 share=1/2 mem=40G kind=shared unfenced\n"
        "job 1 slice=shared project=vision submit=1\n"
        "job 2 slice=shared project=nlp submit=2\n"
        "job 3 slice=shared project=cv submit=3\n"
        "run 10\n"
        "expect start 1 on=a:0/0\n"
        "expect start 2 on=a:1/0\n"
        "expect reason 3 \"resources: needs a shared slice" FENCE
        "held by projects vision and nlp\"\n";
    static const char three[] =
        "node a gpus=3xA100-80GB\n"
        "gpu a 0 slices=2xshared/2 share=1/2 mem=40G kind=shared unfenced\n"
        "gpu a 1 slices=2xshared/2 share=1/2 mem=40G kind=shared unfenced\n"
        "gpu a 2 slices=2xshared/2 share=1/2 mem=40G kind=shared unfenced\n"
        "job 1 slice=shared project=cv submit=1\n"
        "job 2 slice=shared project=vision submit=2\n"
        "job 3 slice=shared project=nlp submit=3\n"
        "job 4 slice=shared project=rl submit=4\n"
        "run 10\n"
        "expect starts 3\n"
        "expect reason 4 \"resources: needs a shared slice" FENCE
        "held by projects cv, vision and nlp\"\n";
    run("fence_two", two);
    run("fence_three", three);
}

Test(sched_fence, more_than_three_projects_are_summed_up)
{
    static const char scn[] =
        "node a gpus=4xA100-80GB\n"
        "gpu a 0 slices=2xshared/2 share=1/2 mem=40G kind=shared unfenced\n"
        "gpu a 1 slices=2xshared/2 share=1/2 mem=40G kind=shared unfenced\n"
        "gpu a 2 slices=2xshared/2 share=1/2 mem=40G kind=shared unfenced\n"
        "gpu a 3 slices=2xshared/2 share=1/2 mem=40G kind=shared unfenced\n"
        "job 1 slice=shared project=p1 submit=1\n"
        "job 2 slice=shared project=p2 submit=2\n"
        "job 3 slice=shared project=p3 submit=3\n"
        "job 4 slice=shared project=p4 submit=4\n"
        "job 5 slice=shared project=p5 submit=5\n"
        "run 10\n"
        "expect starts 4\n"
        "expect reason 5 \"resources: needs a shared slice" FENCE
        "held by projects p1, p2, p3 and others\"\n";
    run("fence_more", scn);
}

Test(sched_fence, no_free_slice_at_all_is_not_the_fence)
{
    static const char scn[] =
        "node a gpus=1xH100-80GB\n"
        "gpu a 0 slices=2xshared/2 share=1/2 mem=40G kind=shared unfenced\n"
        "job 1 slice=shared project=vision submit=1\n"
        "job 2 slice=shared project=vision submit=2\n"
        "job 3 slice=shared project=nlp submit=3\n"
        "run 10\n"
        "expect starts 2\n"
        "expect reason 3 \"resources: needs a shared slice\"\n";
    run("fence_full", scn);
}

Test(sched_fence, slices_that_would_not_do_anyway_are_not_the_fence)
{
    static const char scn[] =
        "node a gpus=1xH100-80GB,1xA100-80GB\n"
        "gpu a 0 slices=4xshared/4 share=1/4 mem=20G kind=shared unfenced\n"
        "gpu a 1 slices=4xshared/4 share=1/4 mem=20G kind=shared unfenced\n"
        "job 1 slice=shared project=vision type=H100-80GB submit=1\n"
        "job 2 slice=shared project=vision type=A100-80GB submit=2\n"
        "run 10\n"
        "expect starts 2\n"
        /* Too much memory for the free slices: not the fence. */
        "job 3 slice=shared project=nlp mem=30G submit=3\n"
        /* Only the H100's slices would do; vision holds that GPU. */
        "job 4 slice=shared project=nlp type=H100-80GB submit=4\n"
        "run 20\n"
        "expect reason 3 \"resources: needs a shared slice\"\n"
        "expect reason 4 \"resources: needs a shared slice of H100-80GB" FENCE
        "held by project vision\"\n"
        /* A GPU waiting to be re-sliced is out of the picture. */
        "gpu a 0 slices=4xshared/4 share=1/4 mem=20G kind=shared unfenced "
        "unsched\n"
        "run 30\n"
        "expect reason 4 \"resources: needs a shared slice of H100-80GB\"\n";
    run("fence_not", scn);
}

Test(sched_fence, a_free_fenced_gpu_next_to_a_full_mps_gpu)
{
    /* GPU 1 is time-sliced with MPS (fenced): full, so only vision's
     * unfenced GPU has room. */
    static const char scn[] =
        "node a gpus=2xH100-80GB\n"
        "gpu a 0 slices=4xshared/4 share=1/4 mem=20G kind=shared unfenced\n"
        "gpu a 1 slices=2xshared/2 share=1/2 mem=40G kind=shared\n"
        "job 1 slice=shared project=nlp submit=1\n"
        "job 2 slice=shared project=cv submit=2\n"
        "run 10\n"
        "expect start 1 on=a:1/0\n"
        "expect start 2 on=a:1/1\n"
        "job 3 slice=shared project=vision submit=3\n"
        "job 4 slice=shared project=nlp submit=4\n"
        "run 20\n"
        "expect start 3 on=a:0/0\n"
        "expect nostart 4\n"
        "expect reason 4 \"resources: needs a shared slice" FENCE
        "held by project vision\"\n"
        /* MPS frees a slice: the plain reason would be stale, the job
         * starts there. */
        "end 2 at=30\n"
        "run 30\n"
        "expect start 4 on=a:1/1\n";
    run("fence_mps", scn);
}
