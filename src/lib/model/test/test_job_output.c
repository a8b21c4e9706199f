/* SPDX-License-Identifier: Apache-2.0 */
/* Output file patterns: the escapes, their expansion, what is refused. */
#include <criterion/criterion.h>
#include <string.h>

#include "lib/model/job_output.h"

Test(job_output, escapes_expand)
{
    struct job_output_vars v = {.id = 42,
                                .array_id = 40,
                                .array_task = 2,
                                .name = "a/b",
                                .user = "ann",
                                .node = "gpu01"};
    char buf[128];
    cr_assert_eq(
        job_output_expand("o_%j_%A_%a_%x_%u_%N_%%.txt", &v, buf, sizeof(buf)),
        0);
    cr_assert_str_eq(buf, "o_42_40_2_a_b_ann_gpu01_%.txt");
    struct job_output_vars single = {.id = 7, .user = "ann"};
    cr_assert_eq(job_output_expand("%A-%a-%x", &single, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "7-0-job");
    cr_assert_lt(job_output_expand("%j%j%j", &v, buf, 4), 0, "does not fit");
}

Test(job_output, unknown_escapes_and_bad_paths_are_refused)
{
    struct sh_error err = {0};
    cr_assert_eq(job_output_check("output", "/x/out_%j.txt", &err), 0);
    cr_assert_lt(job_output_check("output", "out_%t.txt", &err), 0);
    cr_assert(strstr(err.msg, "'%t' is not supported"), "%s", err.msg);
    cr_assert_lt(job_output_check("error", "out_%", &err), 0);
    cr_assert_lt(job_output_check("output", "", &err), 0);
    cr_assert_lt(job_output_check("output", "a\nb", &err), 0);
}
