/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the job lifecycle rules of shoald/jobs.c that need no controller:
 * which state a running job goes to when one of its parts ends (the
 * agent's reason first, then a signal, then the exit code; a clean exit
 * completes the job only once every part has ended), with the reason
 * `shoal show` prints; and which ended jobs go back to pending. */
#include <criterion/criterion.h>
#include <string.h>

#include "shoald/jobs.h"

/* A running job of two parts, on n1 and n2; done marks n1's as ended. */
static void two_parts(struct job *job, struct job_alloc al[2], bool n2_done)
{
    memset(job, 0, sizeof(*job));
    memset(al, 0, 2 * sizeof(*al));
    al[0].node = "n1";
    al[0].done = true;
    al[1].node = "n2";
    al[1].done = n2_done;
    job->state = JOB_RUNNING;
    job->alloc = al;
    job->nalloc = 2;
}

Test(jobs, exit_state_of_a_part)
{
    struct job job;
    struct job_alloc al[2];
    char why[JOB_REASON_MAX];
    two_parts(&job, al, false);
    cr_assert_eq(jobs_exit_state(&job, "n1", 0, 0, NULL, why, sizeof(why)),
                 JOB_RUNNING, "n2 still runs");
    cr_assert_str_eq(why, "");
    cr_assert_eq(jobs_exit_state(&job, "n1", 3, 0, NULL, why, sizeof(why)),
                 JOB_FAILED);
    cr_assert_str_eq(why, "exited with 3 on n1");
    cr_assert_eq(jobs_exit_state(&job, "n1", 3, 9, NULL, why, sizeof(why)),
                 JOB_FAILED);
    cr_assert_str_eq(why, "killed by signal 9 on n1");
    cr_assert_eq(
        jobs_exit_state(&job, "n1", 0, 15, "timeout", why, sizeof(why)),
        JOB_TIMEOUT);
    cr_assert_str_eq(why, "time limit reached on n1");
    cr_assert_eq(jobs_exit_state(&job, "n1", -1, 0, "lost", why, sizeof(why)),
                 JOB_NODE_FAIL);
    cr_assert_str_eq(why, "its processes on n1 were lost");
    two_parts(&job, al, true);
    cr_assert_eq(jobs_exit_state(&job, "n2", 0, 0, NULL, why, sizeof(why)),
                 JOB_COMPLETED, "the last part ended cleanly");
    cr_assert_str_eq(why, "");
}

Test(jobs, requeue_due)
{
    struct job job;
    memset(&job, 0, sizeof(job));
    job.state = JOB_PREEMPTED;
    cr_assert_not(jobs_requeue_due(&job), "not without spec.requeue");
    job.spec.requeue = true;
    cr_assert(jobs_requeue_due(&job));
    job.state = JOB_NODE_FAIL;
    cr_assert(jobs_requeue_due(&job));
    job.state = JOB_FAILED;
    cr_assert_not(jobs_requeue_due(&job), "a failure is not requeued");
    job.requeue_asked = true;
    cr_assert(jobs_requeue_due(&job), "unless a user asked");
}
