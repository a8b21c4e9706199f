/* SPDX-License-Identifier: Apache-2.0 */
/* The LAS policy's settings: the levels given as text (shoald and
 * shoal sim --las-levels) and the policy names. */
#include <criterion/criterion.h>
#include <string.h>

#include "sched/sched.h"

Test(sched_las, levels_parse_units_and_order)
{
    struct sched_config c;
    struct sh_error err;
    sched_config_init(&c);
    cr_assert_eq(sched_las_levels_parse("90,30m,2h,1d", &c, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(c.las_nthresholds, 4);
    cr_assert_eq(c.las_thresholds[0], 90 * 1000);
    cr_assert_eq(c.las_thresholds[1], 30 * 60 * 1000);
    cr_assert_eq(c.las_thresholds[2], 2 * 3600 * 1000);
    cr_assert_eq(c.las_thresholds[3], INT64_C(86400) * 1000);
}

Test(sched_las, bad_levels_are_refused_and_change_nothing)
{
    static const char *bad[] = {"",
                                "0",
                                "1h,",
                                ",1h",
                                "-5",
                                "2h,1h",
                                "1h,1h",
                                "3x",
                                "400d",
                                "1h 2h",
                                "1,2,3,4,5,6,7,8"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        struct sched_config c;
        struct sh_error err = {0};
        sched_config_init(&c);
        cr_assert_eq(sched_las_levels_parse(bad[i], &c, &err), -1, "'%s'",
                     bad[i]);
        cr_assert(strstr(err.msg, "LAS levels"), "'%s': %s", bad[i], err.msg);
        cr_assert_eq(c.las_nthresholds, 2, "'%s' changed the config", bad[i]);
    }
}

Test(sched_las, policy_names)
{
    enum sched_policy p;
    struct sh_error err;
    cr_assert_eq(sched_policy_from_name("las", &p, &err), 0);
    cr_assert_eq(p, SCHED_POLICY_LAS);
    cr_assert_str_eq(sched_policy_name(SCHED_POLICY_LAS), "las");
    cr_assert_eq(sched_policy_from_name("LAS", &p, &err), -1);
    cr_assert(strstr(err.msg, "default, fifo or las"));
    cr_assert_null(sched_policy_name((enum sched_policy)7));
}
