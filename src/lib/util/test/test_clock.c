/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: clock_parse_when, the "--since/--until" of usage reports and job
 * history: a date (UTC) or a duration back from a given now, and anything
 * else refused with a message that names the field and the value. The
 * parsers underneath have their own tests (test_parse.c); these check what
 * the combination gives. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/util/clock.h"

/* 2026-01-02T00:00:10Z, a fixed "now" so nothing depends on the clock. */
#define NOW_MS 1767312010000LL
#define DAY_MS (86400LL * 1000)

static int64_t when_ok(const char *s)
{
    int64_t ms = -1;
    struct sh_error err = {0};
    cr_assert_eq(clock_parse_when("since", s, NOW_MS, &ms, &err), 0, "'%s': %s",
                 s, err.msg);
    return ms;
}

Test(clock_parse_when, date_is_midnight_utc_whatever_now_is)
{
    cr_assert_eq(when_ok("2026-01-02"), 1767312000000LL);
    cr_assert_eq(when_ok("2025-12-25"), 1767312000000LL - 8 * DAY_MS);
    cr_assert_eq(when_ok("1970-01-01"), 0);
    int64_t ms = 0;
    cr_assert_eq(clock_parse_when("since", "2026-01-02", 5, &ms, NULL), 0);
    cr_assert_eq(ms, 1767312000000LL, "a date does not move with now");
}

Test(clock_parse_when, date_with_a_time_of_day)
{
    cr_assert_eq(when_ok("2026-01-02T00:00:10Z"), 1767312010000LL);
    cr_assert_eq(when_ok("2026-01-01T23:59:59Z"), 1767312000000LL - 1000);
    cr_assert_eq(when_ok("2026-01-02T12:30:00"), 1767312000000LL + 45000000,
                 "without Z the time is still UTC");
}

Test(clock_parse_when, leap_day_is_a_date)
{
    cr_assert_eq(when_ok("2024-02-29"), 1709164800000LL);
}

Test(clock_parse_when, duration_counts_back_from_now)
{
    cr_assert_eq(when_ok("7d"), NOW_MS - 7 * DAY_MS);
    cr_assert_eq(when_ok("12h"), NOW_MS - 12 * 3600 * 1000LL);
    cr_assert_eq(when_ok("90s"), NOW_MS - 90 * 1000LL);
    cr_assert_eq(when_ok("1h30m"), NOW_MS - 5400 * 1000LL);
    cr_assert_eq(when_ok("2d12h"), NOW_MS - 60 * 3600 * 1000LL);
    cr_assert_eq(when_ok("01:00:00"), NOW_MS - 3600 * 1000LL);
    cr_assert_eq(when_ok("1-00:00:00"), NOW_MS - DAY_MS);
    cr_assert_eq(when_ok("366d"), NOW_MS - 366 * DAY_MS, "the longest");
}

Test(clock_parse_when, duration_follows_the_given_now)
{
    int64_t a = 0;
    int64_t b = 0;
    cr_assert_eq(clock_parse_when("until", "1h", NOW_MS, &a, NULL), 0);
    cr_assert_eq(clock_parse_when("until", "1h", NOW_MS + 5000, &b, NULL), 0);
    cr_assert_eq(b - a, 5000);
}

Test(clock_parse_when, garbage_is_refused_naming_the_field_and_value)
{
    const char *bad[] = {
        "",
        "yesterday",
        "7",
        "7x",
        "d7",
        "-7d",
        "0d",
        "367d",
        "1m2h",
        "7d ",
        "2026-13-01",
        "2026-00-10",
        "2026-01-00",
        "2026-01-0x",
        "2026/01/02",
        "02026-01-02",
        "1969-12-31",
        "2026-01-02T25:00:00Z",
        "2026-01-02T10:00",
        "2026-01-02T10:00:00ZZ",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sh_error err = {0};
        int64_t ms = 42;
        cr_assert_eq(clock_parse_when("since", bad[i], NOW_MS, &ms, &err), -1,
                     "'%s' accepted", bad[i]);
        cr_assert_eq(err.code, SH_EINVAL, "'%s'", bad[i]);
        cr_assert_eq(strncmp(err.msg, "since: ", 7), 0, "%s", err.msg);
        char quoted[96];
        snprintf(quoted, sizeof(quoted), "'%s'", bad[i]);
        cr_assert(strstr(err.msg, quoted) != NULL, "%s", err.msg);
        cr_assert(strstr(err.msg, "7d") != NULL, "says what is expected: %s",
                  err.msg);
        cr_assert_eq(ms, 42, "'%s': a refused value leaves the output alone",
                     bad[i]);
    }
}

Test(clock_parse_when, long_garbage_is_cut_in_the_message)
{
    char s[400];
    memset(s, 'z', sizeof(s) - 1);
    s[sizeof(s) - 1] = '\0';
    struct sh_error err = {0};
    int64_t ms = 0;
    cr_assert_eq(clock_parse_when("until", s, NOW_MS, &ms, &err), -1);
    cr_assert_eq(strncmp(err.msg, "until: ", 7), 0, "%s", err.msg);
    cr_assert(strstr(err.msg, "duration") != NULL,
              "the explanation survives a long value: %s", err.msg);
}

/* An impossible calendar day is refused, not moved (timegm would take
 * February 30 as March 2, and a report would cover the wrong days). */
Test(clock_parse_when, impossible_calendar_day_is_refused)
{
    const char *bad[] = {"2026-02-30", "2026-04-31", "2025-02-29"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sh_error err = {0};
        int64_t ms = 42;
        cr_assert_eq(clock_parse_when("since", bad[i], NOW_MS, &ms, &err), -1,
                     "'%s' accepted", bad[i]);
        cr_assert_eq(err.code, SH_EINVAL);
        cr_assert(strstr(err.msg, "since") != NULL, "%s", err.msg);
    }
}

/* --begin forms, in UTC so the figures do not depend on the machine. */
static int64_t begin(const char *s, int64_t now)
{
    struct sh_error err = {0};
    int64_t ms = -1;
    cr_assert_eq(clock_parse_begin("--begin", s, now, &ms, &err), 0, "%s: %s",
                 s, err.msg);
    return ms;
}

Test(clock_parse_begin, slurm_forms)
{
    setenv("TZ", "UTC", 1);
    tzset();
    int64_t now = INT64_C(1796205600000); /* 2026-12-02T10:00:00Z */
    cr_assert_eq(begin("now", now), now);
    cr_assert_eq(begin("now+90", now), now + 90000);
    cr_assert_eq(begin("now+1h", now), now + 3600000);
    cr_assert_eq(begin("now+30minutes", now), now + 1800000);
    cr_assert_eq(begin("now+2days", now), now + 2 * 86400000LL);
    cr_assert_eq(begin("11:30", now), now + 5400000);       /* today */
    cr_assert_eq(begin("09:00:30", now), now + 82830000LL); /* tomorrow */
    cr_assert_eq(begin("2026-12-24", now), INT64_C(1798070400000));
    cr_assert_eq(begin("2026-12-02T10:00", now), now);
    cr_assert_eq(begin("2026-12-02T12:00:00Z", now), now + 7200000);
    cr_assert_eq(begin("noon", now), now + 7200000);
    cr_assert_eq(begin("teatime", now), now + 6 * 3600000LL);
    cr_assert_eq(begin("midnight", now), now + 14 * 3600000LL);
    cr_assert_eq(begin("tomorrow", now), now + 14 * 3600000LL);
    cr_assert_eq(begin("today", now), now);
}

Test(clock_parse_begin, garbage_and_far_futures_are_refused)
{
    struct sh_error err = {0};
    int64_t ms;
    int64_t now = INT64_C(1796205600000);
    const char *bad[] = {"",       "soon",          "now+",
                         "now+1y", "now-1h",        "25:00",
                         "10:61",  "2026-13-01",    "2026-02-30",
                         "12:00Z", "2026-12-02T10", "now+99999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_lt(clock_parse_begin("--begin", bad[i], now, &ms, &err), 0,
                     "%s accepted", bad[i]);
        cr_assert(strstr(err.msg, "--begin"), "%s", err.msg);
    }
    cr_assert_lt(clock_parse_begin("--begin", "2028-01-01", now, &ms, &err), 0);
    cr_assert(strstr(err.msg, "366 days"), "%s", err.msg);
}
