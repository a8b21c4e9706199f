/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: srun's steps as the controller relays them (shoald/steps.c): only
 * the batch job's first node asks, for the running attempt and the job's
 * own nodes; each other node finds its part in its work until it reports
 * it; the first node learns the others' highest exit before reporting its
 * own; -K's cancel reaches the parts still running; an older attempt's
 * steps are gone. No HTTP, no store: a job made by hand. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job.h"
#include "shoald/shoald.h"
#include "shoald/steps.h"

static struct shoald d;
static struct job job;
static struct job_alloc alloc[2];
static char touched[256];

static void touch(struct shoald *dd, const char *node)
{
    (void)dd;
    strncat(touched, node, sizeof(touched) - strlen(touched) - 2);
    strcat(touched, " ");
}

static void setup(void)
{
    struct sh_error err;
    memset(&d, 0, sizeof(d));
    memset(&job, 0, sizeof(job));
    d.steps = steps_create(touch, &err);
    cr_assert_not_null(d.steps);
    job.id = 7;
    job.state = JOB_RUNNING;
    job.spec.batch = true;
    alloc[0].node = "n1";
    alloc[1].node = "n2";
    job.alloc = alloc;
    job.nalloc = 2;
    touched[0] = '\0';
}

static void teardown(void)
{
    steps_destroy(d.steps);
}

TestSuite(steps, .init = setup, .fini = teardown);

/* A step of 3 tasks: 2 on n1, 1 on n2. */
static json_t *body(int attempt)
{
    return json_pack("{s:i, s:[s], s:[s], s:s, s:i, s:[{s:s, s:i, s:i}, "
                     "{s:s, s:i, s:i}]}",
                     "attempt", attempt, "argv", "hostname", "env", "A=1",
                     "cwd", "/tmp", "ntasks", 3, "parts", "node", "n1", "first",
                     0, "ntasks", 2, "node", "n2", "first", 2, "ntasks", 1);
}

static json_t *work_of(int part)
{
    json_t *e = json_object();
    steps_work(&d, &job, part, e);
    return e;
}

Test(steps, the_first_node_asks_and_the_others_find_their_part)
{
    struct sh_error err = {0};
    int step = -1;
    json_t *b = body(0);
    cr_assert_eq(steps_add(&d, &job, "n1", b, &step, &err), 0, "%s", err.msg);
    cr_assert_eq(step, 0);
    cr_assert_str_eq(touched, "n1 n2 ");
    json_t *w2 = work_of(1);
    json_t *run = json_array_get(json_object_get(w2, "steps"), 0);
    cr_assert_not_null(run);
    cr_assert_eq(json_integer_value(json_object_get(run, "first")), 2);
    cr_assert_eq(json_integer_value(json_object_get(run, "ntasks")), 1);
    cr_assert_eq(json_integer_value(json_object_get(run, "node_index")), 1);
    /* The first node runs its part itself (srun): nothing in its work. */
    json_t *w1 = work_of(0);
    cr_assert_null(json_object_get(w1, "steps"));
    cr_assert_null(json_object_get(w1, "steps_done"));
    /* Another node may not ask. */
    cr_assert_eq(steps_add(&d, &job, "n2", b, &step, &err), -1);
    cr_assert_eq(err.code, SH_EFORBIDDEN);
    json_decref(w1);
    json_decref(w2);
    json_decref(b);
}

Test(steps, the_first_node_hears_the_others_exit_then_reports_its_own)
{
    struct sh_error err = {0};
    int step;
    json_t *b = body(0);
    cr_assert_eq(steps_add(&d, &job, "n1", b, &step, &err), 0, "%s", err.msg);
    cr_assert_eq(steps_part_done(&d, &job, "n2", 0, step, 3, &err), 0);
    json_t *w2 = work_of(1);
    cr_assert_null(json_object_get(w2, "steps"), "reported: not again");
    json_t *w1 = work_of(0);
    json_t *done = json_array_get(json_object_get(w1, "steps_done"), 0);
    cr_assert_not_null(done);
    cr_assert_eq(json_integer_value(json_object_get(done, "exit")), 3);
    /* ... and keeps hearing it until its own part is reported. */
    json_decref(w1);
    w1 = work_of(0);
    cr_assert_not_null(json_object_get(w1, "steps_done"));
    cr_assert_eq(steps_part_done(&d, &job, "n1", 0, step, 0, &err), 0);
    json_decref(w1);
    w1 = work_of(0);
    cr_assert_null(json_object_get(w1, "steps_done"));
    json_t *shown = steps_job_json(&d, &job);
    json_t *s0 = json_array_get(shown, 0);
    cr_assert_str_eq(json_string_value(json_object_get(s0, "state")), "failed");
    cr_assert_eq(json_integer_value(json_object_get(s0, "exit")), 3);
    json_decref(shown);
    json_decref(w1);
    json_decref(w2);
    json_decref(b);
}

Test(steps, cancel_reaches_the_parts_still_running)
{
    struct sh_error err = {0};
    int step;
    json_t *b = body(0);
    cr_assert_eq(steps_add(&d, &job, "n1", b, &step, &err), 0, "%s", err.msg);
    cr_assert_eq(steps_cancel(&d, &job, "n1", 0, step, &err), 0, "%s", err.msg);
    json_t *w2 = work_of(1);
    json_t *run = json_array_get(json_object_get(w2, "steps"), 0);
    cr_assert(json_is_true(json_object_get(run, "cancel")));
    json_t *w1 = work_of(0);
    cr_assert_eq(json_integer_value(
                     json_array_get(json_object_get(w1, "steps_cancel"), 0)),
                 step);
    json_decref(w1);
    json_decref(w2);
    json_decref(b);
}

Test(steps, bad_asks_change_nothing)
{
    struct sh_error err = {0};
    int step;
    /* An older attempt. */
    json_t *b = body(1);
    cr_assert_eq(steps_add(&d, &job, "n1", b, &step, &err), -1);
    cr_assert_eq(err.code, SH_ECONFLICT);
    json_decref(b);
    /* A node outside the job. */
    b = body(0);
    json_object_set_new(json_array_get(json_object_get(b, "parts"), 1), "node",
                        json_string("n9"));
    cr_assert_eq(steps_add(&d, &job, "n1", b, &step, &err), -1);
    cr_assert_eq(err.code, SH_EINVAL);
    json_decref(b);
    /* Tasks that do not add up. */
    b = body(0);
    json_object_set_new(b, "ntasks", json_integer(4));
    cr_assert_eq(steps_add(&d, &job, "n1", b, &step, &err), -1);
    json_decref(b);
    /* A job that runs its command as its tasks has no steps. */
    job.spec.batch = false;
    b = body(0);
    cr_assert_eq(steps_add(&d, &job, "n1", b, &step, &err), -1);
    cr_assert_eq(err.code, SH_EFORBIDDEN);
    json_decref(b);
    cr_assert_null(steps_job_json(&d, &job));
    cr_assert_str_eq(touched, "");
}

Test(steps, a_new_attempt_has_none_of_the_old_ones_steps)
{
    struct sh_error err = {0};
    int step;
    json_t *b = body(0);
    cr_assert_eq(steps_add(&d, &job, "n1", b, &step, &err), 0, "%s", err.msg);
    job.requeues = 1; /* attempt 1 */
    cr_assert_null(steps_job_json(&d, &job));
    json_t *w2 = work_of(1);
    cr_assert_null(json_object_get(w2, "steps"));
    json_decref(w2);
    json_decref(b);
}
