/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the gate of pending jobs (shoald/gate.c) on its own, over a job
 * table and an empty store: a hold, afterok/afternotok/afterany on jobs in
 * every state (waiting, met, never), a job that is gone, singleton, a
 * --begin in the future or past, and the checks at submission. The
 * reasons are what `shoal queue` shows, so their text is asserted. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/model/job_deps.h"
#include "shoald/gate.h"
#include "shoald/jobtab.h"
#include "shoald/tenancy.h"
#include "store/store.h"

#define T0 1767312000000LL /* 2026-01-02, ms */

static struct jobtab *jobs;
static struct store *store;
static char dir[64];

static void setup(void)
{
    struct sh_error err = {0};
    char url[128];
    snprintf(dir, sizeof(dir), "/tmp/shoal-gate-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(url, sizeof(url), "sqlite:%s/shoal.db", dir);
    store = store_open(url, &err);
    cr_assert_not_null(store, "%s", err.msg);
    jobs = jobtab_create();
    cr_assert_not_null(jobs);
}

static void teardown(void)
{
    char cmd[128];
    jobtab_destroy(jobs);
    store_close(store);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(gate, .init = setup, .fini = teardown);

/* A job of user (and name, may be NULL) in state st, with dependencies
 * deps ("afterok:1", or NULL), added to the table. */
static struct job *add(uint64_t id, enum job_state st, const char *user,
                       const char *name, const char *deps)
{
    struct job_spec spec;
    struct sh_error err;
    job_spec_init(&spec);
    spec.user = strdup(user);
    spec.project = strdup("default");
    spec.name = name ? strdup(name) : NULL;
    if (deps)
        cr_assert_eq(job_deps_parse(deps, &spec.deps, &spec.ndeps, &err), 0,
                     "%s", err.msg);
    struct job *j = job_create(id, &spec, T0);
    cr_assert_not_null(j);
    j->state = st;
    if (st != JOB_PENDING)
        j->start_ms = T0;
    if (job_state_is_terminal(st))
        j->end_ms = T0 + 1000;
    cr_assert_eq(jobtab_add(jobs, j), 0);
    jobtab_raise_next_id(jobs, id + 1);
    return j;
}

static enum gate_state gate(const struct job *j, char *why, size_t size)
{
    why[0] = '\0';
    return gate_of(jobs, store, T0, j, why, size);
}

Test(gate, a_held_job_waits_for_release)
{
    char why[256];
    struct job *j = add(1, JOB_PENDING, "ann", NULL, NULL);
    j->held = true;
    cr_assert_eq(gate(j, why, sizeof(why)), GATE_HELD);
    cr_assert_str_eq(why, "held: waits for shoal release 1");
    j->held = false;
    cr_assert_eq(gate(j, why, sizeof(why)), GATE_OPEN);
}

Test(gate, only_pending_jobs_have_a_closed_gate)
{
    char why[256];
    struct job *j = add(1, JOB_RUNNING, "ann", NULL, NULL);
    j->held = true;
    cr_assert_eq(gate(j, why, sizeof(why)), GATE_OPEN);
}

Test(gate, afterok_waits_then_opens_or_never_opens)
{
    char why[256];
    struct job *target = add(1, JOB_RUNNING, "ann", NULL, NULL);
    struct job *j = add(2, JOB_PENDING, "ann", NULL, "afterok:1");
    cr_assert_eq(gate(j, why, sizeof(why)), GATE_WAIT);
    cr_assert_str_eq(why, "dependency: waiting for job 1 (running)");
    target->state = JOB_COMPLETED;
    cr_assert_eq(gate(j, why, sizeof(why)), GATE_OPEN);
    target->state = JOB_FAILED;
    cr_assert_eq(gate(j, why, sizeof(why)), GATE_NEVER);
    cr_assert_str_eq(why, "dependency: job 1 ended failed, so afterok:1 can "
                          "never be met");
}

Test(gate, afternotok_and_afterany)
{
    char why[256];
    struct job *target = add(1, JOB_COMPLETED, "ann", NULL, NULL);
    struct job *notok = add(2, JOB_PENDING, "ann", NULL, "afternotok:1");
    struct job *any = add(3, JOB_PENDING, "ann", NULL, "afterany:1");
    cr_assert_eq(gate(notok, why, sizeof(why)), GATE_NEVER);
    cr_assert_eq(gate(any, why, sizeof(why)), GATE_OPEN);
    target->state = JOB_CANCELLED;
    cr_assert_eq(gate(notok, why, sizeof(why)), GATE_OPEN);
    cr_assert_eq(gate(any, why, sizeof(why)), GATE_OPEN);
}

Test(gate, a_dependency_on_a_job_that_is_gone_never_opens)
{
    char why[256];
    /* Job 1 was never in memory and is not in the store. */
    struct job *j = add(5, JOB_PENDING, "ann", NULL, "afterany:1");
    cr_assert_eq(gate(j, why, sizeof(why)), GATE_NEVER);
    cr_assert_str_eq(why, "dependency: job 1 is gone, so afterany:1 can never "
                          "be met");
}

Test(gate, the_first_never_wins_over_a_wait)
{
    char why[256];
    add(1, JOB_RUNNING, "ann", NULL, NULL);
    add(2, JOB_FAILED, "ann", NULL, NULL);
    struct job *j = add(3, JOB_PENDING, "ann", NULL, "afterok:1:2");
    cr_assert_eq(gate(j, why, sizeof(why)), GATE_NEVER);
    cr_assert(strstr(why, "job 2 ended failed"), "%s", why);
}

Test(gate, singleton_waits_for_an_earlier_job_of_the_same_user_and_name)
{
    char why[256];
    struct job *first = add(1, JOB_RUNNING, "ann", "train", NULL);
    add(2, JOB_RUNNING, "bob", "train", NULL);
    struct job *j = add(3, JOB_PENDING, "ann", "train", "singleton");
    struct job *other = add(4, JOB_PENDING, "bob", "eval", "singleton");
    cr_assert_eq(gate(j, why, sizeof(why)), GATE_WAIT);
    cr_assert_str_eq(why, "dependency: singleton: waiting for job 1 "
                          "(running, same name)");
    cr_assert_eq(gate(other, why, sizeof(why)), GATE_OPEN);
    first->state = JOB_COMPLETED;
    cr_assert_eq(gate(j, why, sizeof(why)), GATE_OPEN);
}

Test(gate, begin_in_the_future_waits)
{
    char why[256];
    struct job *j = add(1, JOB_PENDING, "ann", NULL, NULL);
    j->spec.begin_ms = T0 + 10000;
    cr_assert_eq(gate(j, why, sizeof(why)), GATE_WAIT);
    cr_assert_str_eq(why, "begin: eligible at 2026-01-02T00:00:10Z");
    j->spec.begin_ms = T0 - 1;
    cr_assert_eq(gate(j, why, sizeof(why)), GATE_OPEN);
}

Test(gate, submission_checks_name_the_problem)
{
    struct sh_error err = {0};
    struct tenancy *t = tenancy_create(&err);
    cr_assert_not_null(t);
    const struct api_caller admin = {
        .role = API_USER, .user = "root", .admin = true};
    struct job_spec spec;
    job_spec_init(&spec);
    cr_assert_eq(job_deps_parse("singleton", &spec.deps, &spec.ndeps, &err), 0);
    cr_assert_eq(gate_check_submit(jobs, store, t, &admin, &spec, &err), -1);
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert(strstr(err.msg, "singleton needs a job name"), "%s", err.msg);
    job_spec_fini(&spec);

    job_spec_init(&spec);
    cr_assert_eq(job_deps_parse("afterok:7", &spec.deps, &spec.ndeps, &err), 0);
    cr_assert_eq(gate_check_submit(jobs, store, t, &admin, &spec, &err), -1);
    cr_assert_str_eq(err.msg, "dependency: job 7 not found");
    add(7, JOB_RUNNING, "ann", NULL, NULL);
    cr_assert_eq(gate_check_submit(jobs, store, t, &admin, &spec, &err), 0,
                 "%s", err.msg);
    job_spec_fini(&spec);
    tenancy_destroy(t);
}

/* afterok on a whole array whose first task still runs and whose second
 * failed: it can never be met, and the reason names the task that failed
 * (it named the running one, "ended running"). */
Test(gate, an_array_that_can_never_meet_afterok_names_the_failed_task)
{
    char why[256];
    struct job *t0 = add(1, JOB_RUNNING, "ann", NULL, NULL);
    struct job *t1 = add(2, JOB_FAILED, "ann", NULL, NULL);
    t0->array_id = t1->array_id = 1;
    t0->array_task = 0;
    t1->array_task = 1;
    struct job *j = add(3, JOB_PENDING, "ann", NULL, "afterok:1");
    cr_assert_eq(gate(j, why, sizeof(why)), GATE_NEVER);
    cr_assert_str_eq(why, "dependency: job 2 (a task of array 1) ended "
                          "failed, so afterok:1 can never be met");
}
