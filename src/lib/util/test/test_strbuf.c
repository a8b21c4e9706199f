/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: a bounded buffer never grows past its maximum and is unchanged by
 * a refused append. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "lib/util/strbuf.h"

Test(strbuf, appends_until_the_limit_then_refuses_unchanged)
{
    struct strbuf sb;
    strbuf_init(&sb, 10);
    cr_assert_str_eq(strbuf_str(&sb), "");
    cr_assert_eq(strbuf_appends(&sb, "hello"), 0);
    cr_assert_eq(strbuf_appendf(&sb, "%d", 1234), 0);
    cr_assert_str_eq(strbuf_str(&sb), "hello1234");
    cr_assert_eq(strbuf_appends(&sb, "xy"), -1);
    cr_assert_str_eq(strbuf_str(&sb), "hello1234");
    cr_assert_eq(strbuf_appends(&sb, "x"), 0);
    cr_assert_eq(sb.len, 10);
    cr_assert_eq(strbuf_appendf(&sb, "%s", "z"), -1);
    strbuf_reset(&sb);
    cr_assert_eq(sb.len, 0);
    cr_assert_eq(strbuf_appends(&sb, "ok"), 0);
    char *s = strbuf_take(&sb);
    cr_assert_str_eq(s, "ok");
    cr_assert_eq(sb.len, 0);
    free(s);
    strbuf_fini(&sb);
}
