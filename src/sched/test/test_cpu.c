/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: jobs without GPUs (gpus=0) in the engine (sched_cpu.c): their
 * order, the user's running-job limit, placement on the eligible up node
 * with the fewest running jobs, node wishes, exclusivity both ways, no
 * preemption, reasons and estimates, recovery. Scenarios in the format of
 * tests/data/sched/README.md (a CPU job's placement is its nodes,
 * "on=a;b"), run with the engine's invariants checked after every line.
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

Test(sched_cpu, jobs_start_in_priority_order)
{
    /* One job at a time (the user's limit): the high-priority job goes
     * first though submitted last, then normal before low. */
    static const char scn[] = "node a gpus=1xH100-80GB\n"
                              "user u max_jobs=1\n"
                              "job 1 gpus=0 prio=low submit=1\n"
                              "job 2 gpus=0 submit=2\n"
                              "job 3 gpus=0 prio=high submit=3\n"
                              "run 10\n"
                              "expect starts 1\n"
                              "expect start 3 on=a\n"
                              "end 3 at=20\n"
                              "run 20\n"
                              "expect start 2 on=a\n"
                              "expect nostart 1\n"
                              "end 2 at=30\n"
                              "run 30\n"
                              "expect start 1 on=a\n";
    run("cpu_order", scn);
}

Test(sched_cpu, user_running_job_limit_counts_cpu_jobs)
{
    static const char scn[] =
        "node a gpus=2xH100-80GB\n"
        "user u max_jobs=2\n"
        "job 1 gpus=1 submit=1\n"
        "job 2 gpus=0 submit=2\n"
        "job 3 gpus=0 submit=3\n"
        "job 4 gpus=1 submit=4\n"
        "job 5 gpus=0 user=v submit=5\n"
        "run 10\n"
        "expect start 1\n"
        "expect start 2 on=a\n"
        "expect start 5 on=a\n"
        "expect nostart 3\n"
        "expect nostart 4\n"
        "expect reason 3 \"limit: user u runs 2/2 jobs\"\n"
        "expect reason 4 \"limit: user u runs 2/2 jobs\"\n"
        "plan 10\n"
        "expect est 3 none ~\"quota or user limit\"\n"
        /* A CPU job ending frees a place. */
        "remove 4\n"
        "end 2 at=20\n"
        "run 20\n"
        "expect start 3 on=a\n";
    run("cpu_user_limit", scn);
}

Test(sched_cpu, placed_on_the_up_node_with_fewest_running_jobs)
{
    static const char scn[] =
        "node a gpus=2xH100-80GB\n"
        "node b gpus=2xH100-80GB\n"
        "node c gpus=2xH100-80GB\n"
        "node d gpus=2xH100-80GB state=down\n"
        "running 1 on=a:0\n"
        "running 2 on=b:0\n"
        "running 3 on=b:1\n"
        "job 4 gpus=0 submit=4\n"
        "job 5 gpus=0 submit=5\n"
        "job 6 gpus=0 nodes=2 submit=6\n"
        "run 10\n"
        "expect start 4 on=c\n"
        "expect start 5 on=a\n"    /* a and c run one each: node order */
        "expect start 6 on=c;a\n"; /* c runs 1, then a and b 2: a first */
    run("cpu_fewest", scn);
}

Test(sched_cpu, nodelist_exclude_and_constraint_are_honoured)
{
    static const char scn[] =
        "node a gpus=1xH100-80GB labels=a100\n"
        "node b gpus=1xH100-80GB\n"
        "node c gpus=1xH100-80GB\n"
        "job 1 gpus=0 nodelist=b submit=1\n"
        "job 2 gpus=0 exclude=a,b submit=2\n"
        "job 3 gpus=0 constraint=a100 submit=3\n"
        "job 4 gpus=0 constraint=h200 submit=4\n"
        "job 5 gpus=0 nodelist=c nodes=2 submit=5\n"
        "run 10\n"
        "expect start 1 on=b\n"
        "expect start 2 on=c\n"
        "expect start 3 on=a\n"
        "expect nostart 4\n"
        "expect reason 4 ~\"waiting: no node matches constraint\"\n"
        "expect nostart 5\n"
        "expect reason 5 \"resources: needs 2 up nodes without an exclusive "
        "job (nodelist c)\"\n";
    run("cpu_wishes", scn);
}

Test(sched_cpu, never_preempted_and_no_gpu_quota)
{
    /* Project other borrows both GPUs and runs a CPU job; own reclaims
     * its guarantee: the GPU job is preempted, the CPU job never. The CPU
     * job takes none of other's GPU limit. */
    static const char scn[] = "node a gpus=2xH100-80GB\n"
                              "project own guaranteed=2\n"
                              "project other limit=2\n"
                              "job 1 project=other gpus=2 submit=1\n"
                              "job 2 project=other gpus=0 submit=2\n"
                              "run 10\n"
                              "expect start 1\n"
                              "expect start 2 on=a\n"
                              "job 3 project=own gpus=2 submit=3\n"
                              "run 20\n"
                              "expect preempt 1 for=3\n"
                              "expect nopreempt 2\n"
                              "expect preempts 1\n"
                              "end 1 at=25\n"
                              "run 30\n"
                              "expect start 3\n"
                              "expect state 2 running\n";
    run("cpu_no_preempt", scn);
}

Test(sched_cpu, exclusive_jobs_wait_for_each_other)
{
    static const char scn[] =
        "node a gpus=2xH100-80GB\n"
        /* An exclusive GPU job waits for the CPU job on its node. */
        "job 1 gpus=0 submit=1\n"
        "run 10\n"
        "expect start 1 on=a\n"
        "job 2 gpus=2 exclusive submit=2\n"
        "run 20\n"
        "expect nostart 2\n"
        "expect reason 2 ~\"(exclusive: whole idle nodes)\"\n"
        "end 1 at=30\n"
        "run 30\n"
        "expect start 2\n"
        /* A CPU job waits for the exclusive job, and says so. */
        "job 3 gpus=0 limit=100 submit=3\n"
        "run 40\n"
        "expect nostart 3\n"
        "expect reason 3 \"resources: needs an up node without an exclusive "
        "job\"\n"
        "end 2 at=50\n"
        "run 50\n"
        "expect start 3 on=a\n"
        /* An exclusive CPU job waits for every job of the node. */
        "job 4 gpus=1 submit=4\n"
        "job 5 gpus=0 exclusive submit=5\n"
        "run 60\n"
        "expect start 4\n"
        "expect nostart 5\n"
        "expect reason 5 \"resources: needs an up node without an exclusive "
        "job (exclusive: whole idle nodes)\"\n"
        "end 3 at=70\n"
        "end 4 at=70\n"
        "run 70\n"
        "expect start 5 on=a\n"
        /* ... and nothing else starts beside it. */
        "job 6 gpus=1 submit=6\n"
        "job 7 gpus=0 submit=7\n"
        "run 80\n"
        "expect starts 0\n";
    run("cpu_exclusive", scn);
}

Test(sched_cpu, reserved_nodes_are_kept_for_exclusive_jobs)
{
    /* Job 2 needs both nodes whole and holds a reservation for when job
     * 1 ends; a later CPU job must not take the idle node b meanwhile (a
     * stream of them would keep job 2 waiting for ever), and an exclusive
     * CPU job no reserved node at all. */
    static const char scn[] = "node a gpus=2xH100-80GB\n"
                              "node b gpus=2xH100-80GB\n"
                              "running 1 on=a:0 limit=100\n"
                              "job 2 gpus=2 nodes=2 exclusive submit=2\n"
                              "run 10\n"
                              "expect nostart 2\n"
                              "expect est 2 100\n"
                              "job 3 gpus=0 submit=3\n"
                              "job 4 gpus=0 exclusive submit=4\n"
                              "run 20\n"
                              "expect starts 0\n"
                              "end 1 at=50\n"
                              "run 50\n"
                              "expect start 2\n"
                              "expect nostart 3\n"
                              "expect nostart 4\n";
    run("cpu_reserved", scn);
}

Test(sched_cpu, pending_reasons_and_estimates)
{
    static const char scn[] =
        "config policy=fifo\n"
        "node a gpus=1xH100-80GB state=down\n"
        "job 1 gpus=0 submit=1\n"
        "expect reason 1 \"new: waiting for the next scheduling pass\"\n"
        "run 10\n"
        "expect nostart 1\n"
        "expect reason 1 \"resources: needs an up node without an exclusive "
        "job\"\n"
        "plan 10\n"
        "expect est 1 none ~\"even once every running job\"\n"
        "nodestate a up\n"
        "run 20\n"
        "expect start 1 on=a\n"
        /* FIFO: a CPU job waits behind the blocked head, not before it. */
        "running 2 gpus=1 limit=100 on=a:0 start=20\n"
        "job 3 gpus=1 submit=3\n"
        "job 4 gpus=0 submit=4\n"
        "run 30\n"
        "expect starts 0\n"
        "expect reason 4 \"priority: behind higher-priority jobs\"\n"
        "remove 3\n"
        "run 40\n"
        "expect start 4 on=a\n"
        /* An exclusive CPU job's estimate: when the node's jobs end. */
        "job 5 gpus=0 exclusive submit=5\n"
        "run 50\n"
        "expect nostart 5\n"
        "plan 50\n"
        "expect est 5 86440\n" /* job 4's end: 40 + the default day */;
    run("cpu_reasons", scn);
}

Test(sched_cpu, recovered_and_removed)
{
    static const char scn[] =
        "node a gpus=1xH100-80GB\n"
        "node b gpus=1xH100-80GB\n"
        "running 1 gpus=0 nodes=2 on=a;b start=5\n"
        "expect state 1 running\n"
        "running 2 gpus=0 on=a:0 error=\"for a job without GPUs\"\n"
        "running 3 gpus=0 exclusive on=a start=5\n" /* it runs: taken */
        "job 4 gpus=0 submit=4\n"
        "remove 4\n"
        "expect state 4 gone\n"
        "run 10\n"
        "expect starts 0\n"
        "end 1 at=20\n"
        "expect state 1 gone\n";
    run("cpu_recover", scn);
}

Test(sched_cpu, incremental_passes_see_what_lets_one_start)
{
    /* Between full passes the jobs without GPUs are looked at when a job
     * of their user ends or a new one comes, and start at once. */
    static const char scn[] =
        "config full_pass_interval=60\n"
        "node a gpus=1xH100-80GB\n"
        "user u max_jobs=1\n"
        "job 1 gpus=1 submit=1\n"
        "job 2 gpus=0 submit=2\n"
        "run 10\n"
        "expect start 1\n"
        "expect reason 2 \"limit: user u runs 1/1 jobs\"\n"
        "run 15\n"
        "expect full no\n"
        "expect starts 0\n"
        "expect reason 2 \"limit: user u runs 1/1 jobs\"\n"
        "end 1 at=20\n"
        "run 20\n"
        "expect full no\n"
        "expect start 2 on=a\n"
        "job 3 gpus=0 user=v submit=3\n"
        "run 21\n"
        "expect full no\n"
        "expect start 3 on=a\n";
    run("cpu_incremental", scn);
}

Test(sched_cpu, exclusive_gpu_job_reserves_for_when_cpu_jobs_end)
{
    /* The CPU job on a ends at 100 (its limit): the exclusive job gets
     * the node then, a reservation that keeps a later CPU job off a. */
    static const char scn[] = "node a gpus=2xH100-80GB\n"
                              "running 1 gpus=0 on=a limit=100\n"
                              "job 2 gpus=2 exclusive submit=2\n"
                              "run 10\n"
                              "expect nostart 2\n"
                              "expect est 2 100\n"
                              "job 3 gpus=0 submit=3\n"
                              "run 20\n"
                              "expect starts 0\n"
                              "expect est 2 100\n"
                              "end 1 at=60\n"
                              "run 60\n"
                              "expect start 2\n";
    run("cpu_resv_excl", scn);
}

Test(sched_cpu, reservation_waits_for_an_exclusive_cpu_job)
{
    /* Node a's GPUs are idle but an exclusive CPU job holds it until
     * 100; b's GPUs free at 200. Job 3 (2 GPUs) can have a at 100, not
     * now. */
    static const char scn[] = "node a gpus=2xH100-80GB\n"
                              "node b gpus=2xH100-80GB\n"
                              "running 1 gpus=0 exclusive on=a limit=100\n"
                              "running 2 gpus=2 on=b:0,1 limit=200\n"
                              "job 3 gpus=2 submit=3\n"
                              "run 10\n"
                              "expect nostart 3\n"
                              "expect est 3 100\n"
                              "end 1 at=50\n"
                              "run 50\n"
                              "expect start 3 on=a:0,1\n";
    run("cpu_resv_held", scn);
}

Test(sched_cpu, without_backfill_incremental_and_full_passes_agree)
{
    /* No backfill: a CPU job waits behind the blocked GPU job ahead of
     * it. Project other borrows a GPU (so a full pass walks on to job 2
     * though nothing can start); an incremental pass must not let a CPU
     * job pass job 2 either. */
    static const char scn[] =
        "config max_reservations=0 full_pass_interval=60\n"
        "node a gpus=2xH100-80GB\n"
        "project own guaranteed=2\n"
        "project other limit=2\n"
        "running 1 project=other on=a:0 limit=1000\n"
        "job 2 project=own gpus=2 nodelist=a submit=2\n"
        "job 3 project=own gpus=0 submit=3\n"
        "run 10\n"
        "expect full\n"
        "expect nostart 3\n"
        "expect reason 3 \"priority: behind higher-priority jobs\"\n"
        "job 4 project=own gpus=0 submit=4\n"
        "run 20\n"
        "expect full no\n"
        "expect starts 0\n"
        "expect reason 4 \"priority: behind higher-priority jobs\"\n"
        "run 70\n"
        "expect full\n"
        "expect starts 0\n";
    run("cpu_no_backfill", scn);
}

/* Recovery takes the jobs that run whatever their order: an exclusive job
 * and another on one node are both taken (exclusivity is for new starts),
 * nothing new starts there while the exclusive one runs, and the node is
 * everyone's once it ended. */
static void recover_both(const char *name, const char *first,
                         const char *second, int plain, int excl)
{
    char scn[1024];
    snprintf(scn, sizeof(scn),
             "node a gpus=2xH100-80GB\n"
             "%s\n%s\n"
             "expect state 1 running\n"
             "expect state 2 running\n"
             "job 3 gpus=0 submit=3\n"
             "job 4 gpus=1 submit=4\n"
             "run 10\n"
             "expect starts 0\n"
             "end %d at=20\n"
             "run 20\n"
             "expect starts 0\n"
             "end %d at=30\n"
             "run 30\n"
             "expect start 3 on=a\n"
             "expect start 4\n",
             first, second, plain, excl);
    run(name, scn);
}

Test(sched_cpu, recovery_order_does_not_matter)
{
    const char *gpu_excl = "running 1 gpus=1 exclusive on=a:0 start=5";
    const char *cpu = "running 2 gpus=0 on=a start=5";
    const char *gpu = "running 1 gpus=1 on=a:0 start=5";
    const char *cpu_excl = "running 2 gpus=0 exclusive on=a start=5";
    recover_both("cpu_recover_gpu_first", gpu_excl, cpu, 2, 1);
    recover_both("cpu_recover_cpu_first", cpu, gpu_excl, 2, 1);
    recover_both("cpu_recover_excl_cpu_first", cpu_excl, gpu, 1, 2);
    recover_both("cpu_recover_excl_cpu_second", gpu, cpu_excl, 1, 2);
    /* Two exclusive ones: the node is held until both ended. */
    recover_both("cpu_recover_both_excl", gpu_excl, cpu_excl, 1, 2);
    recover_both("cpu_recover_both_excl_cpu_first", cpu_excl, gpu_excl, 1, 2);
}

Test(sched_cpu, estimate_is_when_the_wanted_node_count_is_free)
{
    /* Each node held by an exclusive job: a job of N nodes can start when
     * the N-th eligible node frees (ends 300, 100, 200, 400). */
    static const char held[] = "node a gpus=1xH100-80GB\n"
                               "node b gpus=1xH100-80GB\n"
                               "node c gpus=1xH100-80GB\n"
                               "node d gpus=1xH100-80GB\n"
                               "running 1 exclusive on=a:0 limit=300\n"
                               "running 2 exclusive on=b:0 limit=100\n"
                               "running 3 exclusive on=c:0 limit=200\n"
                               "running 4 exclusive on=d:0 limit=400\n"
                               "job 5 gpus=0 nodes=2 exclude=b submit=5\n"
                               "job 6 gpus=0 nodes=3 submit=6\n"
                               "job 7 gpus=0 nodes=4 nodelist=a,b,c,d "
                               "submit=7\n"
                               "run 10\n"
                               "expect starts 0\n"
                               "expect est 5 300\n"
                               "expect est 6 300\n"
                               "expect est 7 400\n";
    run("cpu_est_held", held);
    /* An exclusive job waits for every job of a node, GPU or not: e's
     * end at 700 (its CPU job), f's at 600, g now. */
    static const char busy[] = "node e gpus=2xH100-80GB\n"
                               "node f gpus=2xH100-80GB\n"
                               "node g gpus=2xH100-80GB\n"
                               "running 11 on=e:0 limit=500\n"
                               "running 12 gpus=0 on=e limit=700\n"
                               "running 13 on=f:0 limit=600\n"
                               "job 14 gpus=0 nodes=2 exclusive submit=14\n"
                               "job 15 gpus=0 nodes=3 exclusive submit=15\n"
                               "run 10\n"
                               "expect starts 0\n"
                               "expect est 14 600\n"
                               "expect est 15 700\n";
    run("cpu_est_busy", busy);
}
