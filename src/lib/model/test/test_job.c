/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the job state machine allows only the legal transitions, keeps its
 * invariants after each, and validation names the field and its limit. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job.h"

static struct job *new_job(bool requeue)
{
    struct job_spec spec;
    job_spec_init(&spec);
    spec.argv = calloc(2, sizeof(char *));
    spec.argv[0] = strdup("true");
    spec.argc = 1;
    spec.requeue = requeue;
    spec.gpus_per_node = 1;
    struct job *job = job_create(7, &spec, 1000);
    cr_assert_not_null(job);
    return job;
}

static void place(struct job *job)
{
    struct job_alloc *a = calloc(1, sizeof(*a));
    a->node = strdup("n1");
    a->gpus = calloc(1, sizeof(char *));
    a->gpus[0] = strdup("GPU-1");
    a->ngpus = 1;
    job_set_alloc(job, a, 1);
}

static void check(const struct job *job)
{
    struct sh_error err;
    cr_assert_eq(job_check_invariants(job, &err), 0, "%s", err.msg);
}

Test(job, runs_to_completion_and_holds_gpus_until_released)
{
    struct job *job = new_job(false);
    check(job);
    place(job);
    cr_assert_eq(job_transition(job, JOB_RUNNING, 2000, NULL), 0);
    check(job);
    cr_assert_eq(job->start_ms, 2000);
    cr_assert_eq(job_transition(job, JOB_COMPLETED, 3000, NULL), 0);
    cr_assert(job->releasing);
    cr_assert_eq(job->end_ms, 3000);
    check(job);
    job_destroy(job);
}

Test(job, terminal_states_are_final)
{
    enum job_state finals[] = {JOB_COMPLETED, JOB_FAILED, JOB_CANCELLED,
                               JOB_TIMEOUT};
    for (size_t i = 0; i < 4; i++) {
        struct job *job = new_job(true);
        place(job);
        cr_assert_eq(job_transition(job, JOB_RUNNING, 2000, NULL), 0);
        cr_assert_eq(job_transition(job, finals[i], 3000, NULL), 0);
        for (int to = 0; to < JOB_STATE_COUNT; to++) {
            struct sh_error err;
            cr_assert_eq(job_transition(job, (enum job_state)to, 4000, &err),
                         -1);
            cr_assert_eq(err.code, SH_ECONFLICT);
            cr_assert_eq(job->state, finals[i],
                         "a refused change changes "
                         "nothing");
        }
        job_destroy(job);
    }
}

Test(job, pending_can_only_start_or_be_cancelled)
{
    struct job *job = new_job(false);
    struct sh_error err;
    cr_assert_eq(job_transition(job, JOB_COMPLETED, 2000, &err), -1);
    cr_assert(strstr(err.msg, "pending") && strstr(err.msg, "completed"), "%s",
              err.msg);
    cr_assert_eq(job_transition(job, JOB_PREEMPTED, 2000, &err), -1);
    cr_assert_eq(job_transition(job, JOB_CANCELLED, 2000, &err), 0);
    cr_assert_not(job->releasing, "a job that never ran holds no GPUs");
    check(job);
    job_destroy(job);
}

Test(job, requeue_only_when_asked)
{
    struct job *job = new_job(false);
    place(job);
    job_transition(job, JOB_RUNNING, 2000, NULL);
    cr_assert_eq(job_transition(job, JOB_PREEMPTED, 3000, NULL), 0);
    struct sh_error err;
    cr_assert_eq(job_transition(job, JOB_PENDING, 3000, &err), -1);
    cr_assert(strstr(err.msg, "requeue"), "%s", err.msg);
    job_destroy(job);

    job = new_job(true);
    place(job);
    job_transition(job, JOB_RUNNING, 2000, NULL);
    cr_assert_eq(job_transition(job, JOB_NODE_FAIL, 3000, NULL), 0);
    cr_assert_eq(job_transition(job, JOB_PENDING, 3000, NULL), 0);
    cr_assert_eq(job->requeues, 1);
    cr_assert_eq(job->nalloc, 0);
    check(job);
    job_destroy(job);
}

/* shoal requeue: any end goes back to the queue when a user asked, and
 * the request is spent by it. */
Test(job, a_requeue_asked_for_brings_back_any_end)
{
    struct job *job = new_job(false);
    struct sh_error err;
    place(job);
    job_transition(job, JOB_RUNNING, 2000, NULL);
    cr_assert_eq(job_transition(job, JOB_COMPLETED, 3000, NULL), 0);
    cr_assert_eq(job_transition(job, JOB_PENDING, 3000, &err), -1);
    job->requeue_asked = true;
    cr_assert_eq(job_transition(job, JOB_PENDING, 4000, &err), 0, "%s",
                 err.msg);
    cr_assert_not(job->requeue_asked);
    cr_assert_eq(job->requeues, 1);
    cr_assert_eq(job->queued_ms, 4000);
    check(job);
    /* Pending is not an end: nothing to requeue from. */
    job->requeue_asked = true;
    cr_assert_eq(job_transition(job, JOB_PENDING, 5000, &err), -1);
    job_destroy(job);
}

Test(job, validation_names_field_and_limit)
{
    struct job *job = new_job(false);
    struct sh_error err;
    cr_assert_eq(job_spec_validate(&job->spec, &err), 0, "%s", err.msg);
    job->spec.gpus_per_node = -1;
    cr_assert_eq(job_spec_validate(&job->spec, &err), -1);
    cr_assert(strstr(err.msg, "gpus") && strstr(err.msg, "0..64"), "%s",
              err.msg);
    job->spec.gpus_per_node = 65;
    cr_assert_eq(job_spec_validate(&job->spec, &err), -1);
    job->spec.gpus_per_node = 1;
    job->spec.nodes = 0;
    cr_assert_eq(job_spec_validate(&job->spec, &err), -1);
    cr_assert(strstr(err.msg, "nodes"), "%s", err.msg);
    job->spec.nodes = 1;
    job->spec.slice = strdup("1g.10gb");
    job->spec.gpus_per_node = 2;
    cr_assert_eq(job_spec_validate(&job->spec, &err), -1);
    cr_assert(strstr(err.msg, "slice"), "%s", err.msg);
    job->spec.gpus_per_node = 1;
    cr_assert_eq(job_spec_validate(&job->spec, &err), 0, "%s", err.msg);
    free(job->spec.argv[0]);
    job->spec.argv[0] = strdup("");
    cr_assert_eq(job_spec_validate(&job->spec, &err), -1);
    cr_assert(strstr(err.msg, "command"), "%s", err.msg);
    job_destroy(job);
}

Test(job, identifiers)
{
    cr_assert(job_ident_valid("vision-2"));
    cr_assert(job_ident_valid("a.b_c"));
    cr_assert_not(job_ident_valid(""));
    cr_assert_not(job_ident_valid("-x"));
    cr_assert_not(job_ident_valid("a b"));
    cr_assert_not(job_ident_valid("a/b"));
    char long_name[80];
    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[79] = '\0';
    cr_assert_not(job_ident_valid(long_name));
}

Test(job, spec_copy_is_deep)
{
    struct job *job = new_job(false);
    job->spec.name = strdup("train");
    struct job_spec copy;
    cr_assert_eq(job_spec_copy(&copy, &job->spec), 0);
    cr_assert_str_eq(copy.name, "train");
    cr_assert_neq(copy.name, job->spec.name);
    cr_assert_str_eq(copy.argv[0], "true");
    job_spec_fini(&copy);
    job_destroy(job);
}
