/* SPDX-License-Identifier: Apache-2.0 */
/* Job array specifications: Slurm's forms and their errors. */
#include <criterion/criterion.h>
#include <string.h>

#include "lib/model/job_array.h"

static void parse_ok(const char *text, int n, int first, int last, int max)
{
    struct job_array a;
    struct sh_error err = {0};
    cr_assert_eq(job_array_parse(text, &a, &err), 0, "%s: %s", text, err.msg);
    cr_assert_eq(a.n, n, "%s: %d tasks", text, a.n);
    cr_assert_eq(a.idx[0], first, "%s", text);
    cr_assert_eq(a.idx[a.n - 1], last, "%s", text);
    cr_assert_eq(a.max_running, max, "%s", text);
    for (int i = 1; i < a.n; i++)
        cr_assert_lt(a.idx[i - 1], a.idx[i], "%s: ascending, once", text);
    job_array_fini(&a);
}

static void parse_bad(const char *text, const char *part)
{
    struct job_array a;
    struct sh_error err = {0};
    cr_assert_lt(job_array_parse(text, &a, &err), 0, "%s accepted", text);
    cr_assert_null(a.idx);
    cr_assert(strstr(err.msg, part), "%s: '%s' lacks '%s'", text, err.msg,
              part);
}

Test(job_array, slurm_forms)
{
    parse_ok("0-99", 100, 0, 99, 0);
    parse_ok("0-99%8", 100, 0, 99, 8);
    parse_ok("0-15:4", 4, 0, 12, 0);
    parse_ok("1,3,5-7", 5, 1, 7, 0);
    parse_ok("7,3,3,5", 3, 3, 7, 0); /* sorted, once */
    parse_ok("42", 1, 42, 42, 0);
    parse_ok("0-9999", 10000, 0, 9999, 0);
}

Test(job_array, errors_name_the_part)
{
    parse_bad("", "must not be empty");
    parse_bad("a-b", "'a-b' is not N, A-B");
    parse_bad("5-3", "'5-3' is not");
    parse_bad("0-9:0", "'0-9:0' is not");
    parse_bad("1,,2", "'' is not");
    parse_bad("0-10000", "more than 10000 tasks");
    parse_bad("0-99%0", "'%' takes the most tasks at once");
    parse_bad("0-99%8,3", "'%' takes the most tasks at once");
    parse_bad("99999999", "is not N");
    parse_bad("-1", "'-1' is not");
}
