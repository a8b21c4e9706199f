/* SPDX-License-Identifier: Apache-2.0 */
/* --mail-type events and --mail-user addresses. */
#include <criterion/criterion.h>
#include <string.h>

#include "lib/model/job_mail.h"

Test(job_mail, slurm_event_lists_parse_and_print)
{
    int e;
    char buf[128];
    struct sh_error err = {0};
    cr_assert_eq(job_mail_parse("end,FAIL", &e, &err), 0, "%s", err.msg);
    cr_assert_str_eq(job_mail_format(e, buf, sizeof(buf)), "END,FAIL");
    cr_assert_eq(job_mail_parse("ALL,ARRAY_TASKS", &e, &err), 0);
    cr_assert_str_eq(job_mail_format(e, buf, sizeof(buf)),
                     "BEGIN,END,FAIL,REQUEUE,INVALID_DEPEND");
    cr_assert_eq(job_mail_parse("NONE", &e, &err), 0);
    cr_assert_eq(e, 0);
    cr_assert_lt(job_mail_parse("TIME_LIMIT_80", &e, &err), 0);
    cr_assert(strstr(err.msg, "is not supported"), "%s", err.msg);
    cr_assert_lt(job_mail_parse("END,,", &e, &err), 0);
    cr_assert_lt(job_mail_parse("", &e, &err), 0);
}

Test(job_mail, addresses_are_one_safe_argument)
{
    cr_assert(job_mail_user_valid("ann.lee+hpc@example.org"));
    cr_assert(!job_mail_user_valid("-oProxyCommand=x"));
    cr_assert(!job_mail_user_valid("a b@c"));
    cr_assert(!job_mail_user_valid("a;rm@c"));
    cr_assert(!job_mail_user_valid(""));
}
