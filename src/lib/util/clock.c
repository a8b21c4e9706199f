/* SPDX-License-Identifier: Apache-2.0 */
/* Clocks and timestamp formatting (see clock.h). */
#include "lib/util/clock.h"
#include "lib/util/parse.h"
#include "lib/util/utf8.h"

#include <stdbool.h>
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

/* now+N[unit]: the offset in seconds, -1 when malformed. */
static int64_t begin_offset(const char *s)
{
    static const struct {
        const char *name;
        int64_t secs;
    } units[] = {
        {"", 1},         {"s", 1},        {"sec", 1},       {"secs", 1},
        {"second", 1},   {"seconds", 1},  {"m", 60},        {"min", 60},
        {"mins", 60},    {"minute", 60},  {"minutes", 60},  {"h", 3600},
        {"hour", 3600},  {"hours", 3600}, {"d", 86400},     {"day", 86400},
        {"days", 86400}, {"w", 604800},   {"week", 604800}, {"weeks", 604800},
    };
    int64_t n = 0;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9') {
        n = n * 10 + (*p++ - '0');
        if (n > 366 * 86400)
            return -1;
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(p, units[i].name) == 0)
            return n * units[i].secs;
    }
    return -1;
}

/* HH:MM[:SS] at the start of s into tm; the rest in *end. */
static bool begin_hms(const char *s, struct tm *tm, const char **end)
{
    int h, m, sec = 0, used = 0;
    if (sscanf(s, "%2d:%2d%n", &h, &m, &used) != 2)
        return false;
    s += used;
    if (*s == ':') {
        int u2 = 0;
        if (sscanf(s + 1, "%2d%n", &sec, &u2) != 1)
            return false;
        s += 1 + u2;
    }
    if (h > 23 || m > 59 || sec > 59 || h < 0 || m < 0 || sec < 0)
        return false;
    tm->tm_hour = h;
    tm->tm_min = m;
    tm->tm_sec = sec;
    *end = s;
    return true;
}

int clock_parse_begin(const char *field, const char *s, int64_t now_ms,
                      int64_t *ms, struct sh_error *err)
{
    time_t now = (time_t)(now_ms / 1000);
    struct tm tm;
    int64_t out = -1;
    localtime_r(&now, &tm);
    tm.tm_isdst = -1;
    if (strcmp(s, "now") == 0) {
        out = now_ms;
    } else if (strncmp(s, "now+", 4) == 0) {
        int64_t off = begin_offset(s + 4);
        if (off >= 0)
            out = now_ms + off * 1000;
    } else if (strcmp(s, "today") == 0 || strcmp(s, "tomorrow") == 0 ||
               strcmp(s, "midnight") == 0 || strcmp(s, "noon") == 0 ||
               strcmp(s, "teatime") == 0) {
        tm.tm_hour = s[0] == 'n' ? 12 : s[0] == 't' && s[1] == 'e' ? 16 : 0;
        tm.tm_min = tm.tm_sec = 0;
        if (strcmp(s, "today") == 0) {
            out = now_ms; /* today: at once */
        } else {
            if (strcmp(s, "tomorrow") == 0 || strcmp(s, "midnight") == 0)
                tm.tm_mday++;
            time_t t = mktime(&tm);
            if (t != (time_t)-1 && t < now) { /* noon/teatime passed */
                tm.tm_mday++;
                tm.tm_isdst = -1;
                t = mktime(&tm);
            }
            out = t == (time_t)-1 ? -1 : (int64_t)t * 1000;
        }
    } else {
        const char *end = NULL;
        struct tm d = tm;
        const char *after = strptime(s, "%Y-%m-%d", &d);
        bool dated = after != NULL;
        if (dated) {
            end = after;
            d.tm_hour = d.tm_min = d.tm_sec = 0;
            if (*end == 'T' && !begin_hms(end + 1, &d, &end))
                end = NULL;
        } else {
            d = tm; /* the failed strptime may have written fields */
            if (!begin_hms(s, &d, &end))
                end = NULL;
        }
        bool utc = end && dated && *end == 'Z';
        if (utc)
            end++;
        if (end && *end == '\0') {
            struct tm want = d;
            d.tm_isdst = -1;
            time_t t = utc ? timegm(&d) : mktime(&d);
            if (t != (time_t)-1 && d.tm_mday == want.tm_mday &&
                d.tm_mon == want.tm_mon) {
                if (!dated && t < now)
                    t += 86400;
                out = (int64_t)t * 1000;
            }
        }
    }
    if (out < 0)
        return sh_errorf(err, SH_EINVAL,
                         "%s: '%.*s' is not a start time: use now+30m, "
                         "now+2hours, HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], "
                         "midnight, noon, teatime, today or tomorrow",
                         field, UTF8_CUT(s, 64));
    if (out > now_ms + INT64_C(366) * 86400 * 1000)
        return sh_errorf(err, SH_EINVAL,
                         "%s: '%.*s' is more than 366 days ahead", field,
                         UTF8_CUT(s, 64));
    *ms = out;
    return 0;
}
