/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the strict parsers accept exactly what people type for sizes,
 * durations and numbers, and refuse everything else with a message that
 * names the field. */
#include <criterion/criterion.h>
#include <string.h>

#include "lib/util/clock.h"
#include "lib/util/parse.h"

Test(parse, sizes_use_binary_units)
{
    uint64_t b;
    cr_assert_eq(parse_size("mem", "16G", &b, NULL), 0);
    cr_assert_eq(b, 16ULL << 30);
    cr_assert_eq(parse_size("mem", "512M", &b, NULL), 0);
    cr_assert_eq(b, 512ULL << 20);
    cr_assert_eq(parse_size("mem", "1T", &b, NULL), 0);
    cr_assert_eq(b, 1ULL << 40);
    cr_assert_eq(parse_size("mem", "64k", &b, NULL), 0);
    cr_assert_eq(b, 64ULL << 10);
    cr_assert_eq(parse_size("mem", "2GiB", &b, NULL), 0);
    cr_assert_eq(b, 2ULL << 30);
    cr_assert_eq(parse_size("mem", "2GB", &b, NULL), 0);
}

Test(parse, sizes_refuse_missing_units_garbage_and_overflow)
{
    struct sh_error err;
    uint64_t b = 7;
    const char *bad[] = {
        "",      "16",   "G",    "-1G",  "16X",
        "16GG",  "1.5G", " 16G", "16G ", "99999999999999999999G",
        "2048P", "0G"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(parse_size("mem", bad[i], &b, &err), -1, "%s", bad[i]);
        cr_assert_eq(err.code, SH_EINVAL);
        cr_assert(strstr(err.msg, "mem") != NULL, "%s", err.msg);
    }
    cr_assert_eq(b, 7, "a refused value leaves the output alone");
}

Test(parse, durations_in_every_documented_form)
{
    int64_t s;
    cr_assert_eq(parse_duration("time", "90s", &s, NULL), 0);
    cr_assert_eq(s, 90);
    cr_assert_eq(parse_duration("time", "30m", &s, NULL), 0);
    cr_assert_eq(s, 1800);
    cr_assert_eq(parse_duration("time", "2h", &s, NULL), 0);
    cr_assert_eq(s, 7200);
    cr_assert_eq(parse_duration("time", "1d", &s, NULL), 0);
    cr_assert_eq(s, 86400);
    cr_assert_eq(parse_duration("time", "1h30m", &s, NULL), 0);
    cr_assert_eq(s, 5400);
    cr_assert_eq(parse_duration("time", "01:02:03", &s, NULL), 0);
    cr_assert_eq(s, 3723);
    cr_assert_eq(parse_duration("time", "100:00:00", &s, NULL), 0);
    cr_assert_eq(s, 360000);
    cr_assert_eq(parse_duration("time", "2-01:00:00", &s, NULL), 0);
    cr_assert_eq(s, 2 * 86400 + 3600);
}

Test(parse, durations_refuse_ambiguity_and_garbage)
{
    struct sh_error err;
    int64_t s;
    const char *bad[] = {"",      "90",   "s",     "-5m",        "1.5h",
                         "30m1h", "1h1h", "1:2:3", "01:60:00",   "01:00",
                         "1x",    "400d", "0s",    "2-25:00:00", "1h 30m"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(parse_duration("time", bad[i], &s, &err), -1, "%s",
                     bad[i]);
        cr_assert(strstr(err.msg, "time") != NULL, "%s", err.msg);
    }
    parse_duration("time", "90", &s, &err);
    cr_assert(strstr(err.msg, "unit") != NULL, "%s", err.msg);
}

Test(parse, a_duration_with_its_own_bound_names_that_bound)
{
    struct sh_error err;
    int64_t s = 7;
    cr_assert_eq(parse_duration_max("--x", "365d", 365 * 86400, &s, NULL), 0);
    cr_assert_eq(s, 365 * 86400);
    /* Past the option's bound and past the parser's own: the same words. */
    const char *over[] = {"366d", "1000d", "365d1s"};
    for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
        s = 7;
        cr_assert_eq(parse_duration_max("--x", over[i], 365 * 86400, &s, &err),
                     -1);
        cr_assert(strstr(err.msg, "longer than 365 days") != NULL, "%s",
                  err.msg);
        cr_assert_eq(s, 7, "a refused value leaves the output alone");
    }
    cr_assert_eq(parse_duration_max("--x", "2h", 3600, &s, &err), -1);
    cr_assert(strstr(err.msg, "longer than 3600 s") != NULL, "%s", err.msg);
}

Test(parse, integers_are_range_checked)
{
    int64_t v;
    struct sh_error err;
    cr_assert_eq(parse_int64("gpus", "8", 0, 64, &v, NULL), 0);
    cr_assert_eq(v, 8);
    cr_assert_eq(parse_int64("gpus", "65", 0, 64, &v, &err), -1);
    cr_assert(strstr(err.msg, "0..64") != NULL, "%s", err.msg);
    cr_assert_eq(parse_int64("gpus", "-1", 0, 64, &v, &err), -1);
    cr_assert_eq(parse_int64("gpus", "4x", 0, 64, &v, &err), -1);
    cr_assert_eq(parse_int64("gpus", "", 0, 64, &v, &err), -1);
    cr_assert_eq(
        parse_int64("n", "99999999999999999999", 0, INT64_MAX, &v, &err), -1);
}

Test(parse, formatters_are_short)
{
    char buf[32];
    format_duration(45, buf, sizeof(buf));
    cr_assert_str_eq(buf, "45s");
    format_duration(3900, buf, sizeof(buf));
    cr_assert_str_eq(buf, "1h05m");
    format_size(16ULL << 30, buf, sizeof(buf));
    cr_assert_str_eq(buf, "16G");
    format_size(1536ULL << 20, buf, sizeof(buf));
    cr_assert_str_eq(buf, "1.5G");
}

Test(parse, dates)
{
    int64_t ms;
    cr_assert_eq(clock_parse_date("since", "2026-01-02", &ms, NULL), 0);
    cr_assert_eq(ms, 1767312000000LL);
    cr_assert_eq(clock_parse_date("since", "2026-01-02T00:00:10Z", &ms, NULL),
                 0);
    cr_assert_eq(ms, 1767312010000LL);
    cr_assert_eq(clock_parse_date("since", "yesterday", &ms, NULL), -1);
    char buf[32];
    clock_format_iso(1767312010000LL, buf, sizeof(buf));
    cr_assert_str_eq(buf, "2026-01-02T00:00:10Z");
}

Test(parse, digits_stop_at_the_grammar_that_follows)
{
    const char *s = "15%4";
    long v = -1;
    cr_assert_eq(parse_digits(&s, 100, &v), 0);
    cr_assert_eq(v, 15);
    cr_assert_str_eq(s, "%4");
    /* Over max, a sign or no digit: refused, nothing moved. */
    const char *big = "101x";
    cr_assert_eq(parse_digits(&big, 100, &v), -1);
    cr_assert_str_eq(big, "101x");
    const char *neg = "-1";
    cr_assert_eq(parse_digits(&neg, 100, &v), -1);
    cr_assert_str_eq(neg, "-1");
    const char *none = "x";
    cr_assert_eq(parse_digits(&none, 100, &v), -1);
    const char *huge = "99999999999999999999999";
    cr_assert_eq(parse_digits(&huge, 1000000, &v), -1);
}
