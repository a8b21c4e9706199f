/* SPDX-License-Identifier: Apache-2.0 */
/* Job dependencies: the Slurm syntax, its errors, and when each kind is met. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job_deps.h"
#include "lib/model/job_json.h"

static void parse_ok(const char *text, int want_n, const char *canon)
{
    struct job_dep *d = NULL;
    int n = 0;
    struct sh_error err = {0};
    cr_assert_eq(job_deps_parse(text, &d, &n, &err), 0, "%s: %s", text,
                 err.msg);
    cr_assert_eq(n, want_n, "%s", text);
    char buf[256];
    cr_assert_str_eq(job_deps_format(d, n, buf, sizeof(buf)), canon);
    /* The canonical form reads back the same. */
    struct job_dep *e = NULL;
    int m = 0;
    cr_assert_eq(job_deps_parse(buf, &e, &m, &err), 0);
    cr_assert_eq(m, n);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(d[i].kind, e[i].kind);
        cr_assert_eq(d[i].job, e[i].job);
        cr_assert_eq(d[i].task, e[i].task);
    }
    free(d);
    free(e);
}

static void parse_bad(const char *text, const char *part)
{
    struct job_dep *d = (struct job_dep *)1;
    int n = 7;
    struct sh_error err = {0};
    cr_assert_lt(job_deps_parse(text, &d, &n, &err), 0, "%s", text);
    cr_assert_null(d);
    cr_assert_eq(n, 0);
    cr_assert(strstr(err.msg, part), "%s: '%s' lacks '%s'", text, err.msg,
              part);
}

Test(job_deps, slurm_forms_parse_and_print)
{
    parse_ok("afterok:12", 1, "afterok:12");
    parse_ok("afterok:12:13,afterany:14", 3, "afterok:12:13,afterany:14");
    parse_ok("afternotok:5,singleton", 2, "afternotok:5,singleton");
    parse_ok("singleton", 1, "singleton");
    parse_ok("afterok:12_3:13", 2, "afterok:12_3:13");
    parse_ok("afterany:12_0", 1, "afterany:12_0");
}

Test(job_deps, an_array_is_met_when_every_task_is)
{
    enum job_dep_status M = JOB_DEP_MET, W = JOB_DEP_WAIT, N = JOB_DEP_NEVER;
    /* afterok: all met; one waiting waits; one never is never. */
    cr_assert_eq(job_dep_fold(JOB_DEP_AFTEROK,
                              job_dep_fold(JOB_DEP_AFTEROK, M, M, true), M,
                              false),
                 M);
    cr_assert_eq(job_dep_fold(JOB_DEP_AFTEROK, M, W, false), W);
    cr_assert_eq(job_dep_fold(JOB_DEP_AFTEROK, W, N, false), N);
    /* afternotok: every task ended and one failed. */
    enum job_dep_status a = job_dep_fold(JOB_DEP_AFTERNOTOK, M, N, true);
    cr_assert_eq(a, N); /* the first completed */
    cr_assert_eq(job_dep_fold(JOB_DEP_AFTERNOTOK, a, M, false), M);
    cr_assert_eq(job_dep_fold(JOB_DEP_AFTERNOTOK, a, W, false), W);
    cr_assert_eq(job_dep_fold(JOB_DEP_AFTERNOTOK, a, N, false), N);
}

Test(job_deps, bad_forms_are_named)
{
    parse_bad("", "must not be empty");
    parse_bad("afterok", "needs job ids");
    parse_bad("afterok:", "is not a job id");
    parse_bad("afterok:x1", "'x1' is not a job id");
    parse_bad("afterok:0", "'0' is not a job id");
    parse_bad("afterok:12_", "is not a job id");
    parse_bad("afterok:_3", "is not a job id");
    parse_bad("afterok:1_2_3", "is not a job id");
    parse_bad("afterok:99999999999999999999999", "is not a job id");
    parse_bad("afterok:1,,afterany:2", "an empty item");
    parse_bad("afterok:1,", "an empty item");
    parse_bad("after:12", "Slurm form Shoal does not have");
    parse_bad("aftercorr:12", "Slurm form Shoal does not have");
    parse_bad("afterok:1?afterany:2", "any of");
    parse_bad("before:1", "unknown kind 'before'");
    parse_bad("singleton:3", "takes no job ids");
}

Test(job_deps, at_most_the_limit)
{
    char text[1024] = "afterok";
    for (int i = 1; i <= JOB_DEPS_MAX; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), ":%d", i);
    struct job_dep *d = NULL;
    int n = 0;
    struct sh_error err = {0};
    cr_assert_eq(job_deps_parse(text, &d, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(n, JOB_DEPS_MAX);
    free(d);
    strcat(text, ":65");
    parse_bad(text, "at most 64");
}

Test(job_deps, when_each_kind_is_met)
{
    /* Not ended yet: wait. */
    cr_assert_eq(job_dep_eval(JOB_DEP_AFTEROK, JOB_PENDING, false),
                 JOB_DEP_WAIT);
    cr_assert_eq(job_dep_eval(JOB_DEP_AFTERANY, JOB_RUNNING, false),
                 JOB_DEP_WAIT);
    /* A preempted job that requeues has not ended. */
    cr_assert_eq(job_dep_eval(JOB_DEP_AFTERANY, JOB_PREEMPTED, true),
                 JOB_DEP_WAIT);
    cr_assert_eq(job_dep_eval(JOB_DEP_AFTERANY, JOB_PREEMPTED, false),
                 JOB_DEP_MET);
    cr_assert_eq(job_dep_eval(JOB_DEP_AFTEROK, JOB_COMPLETED, false),
                 JOB_DEP_MET);
    cr_assert_eq(job_dep_eval(JOB_DEP_AFTEROK, JOB_FAILED, false),
                 JOB_DEP_NEVER);
    cr_assert_eq(job_dep_eval(JOB_DEP_AFTEROK, JOB_CANCELLED, false),
                 JOB_DEP_NEVER);
    cr_assert_eq(job_dep_eval(JOB_DEP_AFTERNOTOK, JOB_TIMEOUT, false),
                 JOB_DEP_MET);
    cr_assert_eq(job_dep_eval(JOB_DEP_AFTERNOTOK, JOB_COMPLETED, false),
                 JOB_DEP_NEVER);
    cr_assert_eq(job_dep_eval(JOB_DEP_AFTERANY, JOB_FAILED, false),
                 JOB_DEP_MET);
}

Test(job_deps, a_submission_carries_them_and_hold)
{
    struct job_spec s;
    struct sh_error err = {0};
    job_spec_init(&s);
    json_t *body = json_pack("{s:[s], s:s, s:b}", "command", "true",
                             "dependency", "afterok:3:4,singleton", "hold", 1);
    cr_assert_eq(job_spec_from_json(body, &s, &err), 0, "%s", err.msg);
    cr_assert_eq(s.ndeps, 3);
    cr_assert(s.hold);
    json_t *back = job_spec_to_json(&s);
    cr_assert_str_eq(json_string_value(json_object_get(back, "dependency")),
                     "afterok:3:4,singleton");
    cr_assert(json_is_true(json_object_get(back, "hold")));
    struct job_spec c;
    cr_assert_eq(job_spec_copy(&c, &s), 0);
    cr_assert_eq(c.ndeps, 3);
    cr_assert_eq(c.deps[1].job, 4);
    job_spec_fini(&c);
    job_spec_fini(&s);
    json_decref(back);
    /* A bad dependency refuses the submission with its reason. */
    json_object_set_new(body, "dependency", json_string("afterok:x"));
    job_spec_init(&s);
    cr_assert_lt(job_spec_from_json(body, &s, &err), 0);
    cr_assert(strstr(err.msg, "'x' is not a job id"), "%s", err.msg);
    json_object_set_new(body, "dependency", json_integer(3));
    job_spec_init(&s);
    cr_assert_lt(job_spec_from_json(body, &s, &err), 0);
    cr_assert(strstr(err.msg, "dependency must be a string"), "%s", err.msg);
    json_decref(body);
}
