/* SPDX-License-Identifier: Apache-2.0 */
/* Clocks and timestamp formatting (see clock.h). */
#include "lib/util/clock.h"
#include "lib/util/parse.h"
#include "lib/util/utf8.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void clock_format_iso(int64_t ms, char *buf, size_t size)
{
    if (ms <= 0) {
        snprintf(buf, size, "-");
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void clock_format_local(int64_t ms, char *buf, size_t size)
{
    if (ms <= 0) {
        snprintf(buf, size, "-");
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
}

int clock_parse_date(const char *field, const char *s, int64_t *ms,
                     struct sh_error *err)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = strptime(s, "%Y-%m-%d", &tm);
    if (end && *end == 'T') {
        end = strptime(end + 1, "%H:%M:%S", &tm);
        if (end && *end == 'Z')
            end++;
    }
    if (!end || *end != '\0')
        return sh_errorf(err, SH_EINVAL,
                         "%s: '%s' is not a date, expected YYYY-MM-DD or "
                         "YYYY-MM-DDTHH:MM:SSZ",
                         field, s);
    struct tm want = tm;
    time_t t = timegm(&tm);
    if (t < 0)
        return sh_errorf(err, SH_EINVAL, "%s: '%s' is before 1970", field, s);
    /* timegm moves impossible days (February 30 becomes March 2): refuse
     * a date that did not survive the round trip. */
    if (tm.tm_mday != want.tm_mday || tm.tm_mon != want.tm_mon ||
        tm.tm_year != want.tm_year)
        return sh_errorf(err, SH_EINVAL,
                         "%s: '%s' is not a day of the calendar", field, s);
    *ms = (int64_t)t * 1000;
    return 0;
}

int clock_parse_when(const char *field, const char *s, int64_t now_ms,
                     int64_t *ms, struct sh_error *err)
{
    int64_t secs;
    if (clock_parse_date(field, s, ms, NULL) == 0)
        return 0;
    if (parse_duration(field, s, &secs, NULL) == 0) {
        *ms = now_ms - secs * 1000;
        return 0;
    }
    return sh_errorf(err, SH_EINVAL,
                     "%s: '%.*s' is neither a date (YYYY-MM-DD) nor a "
                     "duration back from now (7d, 12h)",
                     field, UTF8_CUT(s, 64));
}
