/* SPDX-License-Identifier: Apache-2.0 */
/* Strict parsers and formatters for integers, sizes and durations. */
#include "lib/util/parse.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Read an unsigned decimal prefix of s. Returns the number of digits read
 * (0 when none) and sets *overflow when it does not fit in max. */
static size_t read_digits(const char *s, uint64_t max, uint64_t *out,
                          bool *overflow)
{
    uint64_t v = 0;
    size_t i = 0;
    *overflow = false;
    while (isdigit((unsigned char)s[i])) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (max - d) / 10)
            *overflow = true;
        else
            v = v * 10 + d;
        i++;
    }
    *out = v;
    return i;
}

int parse_int64(const char *field, const char *s, int64_t min, int64_t max,
                int64_t *out, struct sh_error *err)
{
    if (!s || !*s)
        return sh_errorf(err, SH_EINVAL, "%s: empty value, expected a number",
                         field);
    const char *p = s;
    bool neg = false;
    if (*p == '-' || *p == '+') {
        neg = (*p == '-');
        p++;
    }
    uint64_t v;
    bool overflow;
    size_t n = read_digits(p, (uint64_t)INT64_MAX, &v, &overflow);
    if (n == 0 || p[n] != '\0')
        return sh_errorf(err, SH_EINVAL, "%s: '%s' is not a whole number",
                         field, s);
    int64_t sv = neg ? -(int64_t)v : (int64_t)v;
    if (overflow || sv < min || sv > max)
        return sh_errorf(err, SH_EINVAL,
                         "%s: %s is out of range (%" PRId64 "..%" PRId64 ")",
                         field, s, min, max);
    *out = sv;
    return 0;
}

int parse_size(const char *field, const char *s, uint64_t *bytes,
               struct sh_error *err)
{
    static const char units[] = "KMGTP";
    if (!s || !*s)
        return sh_errorf(err, SH_EINVAL,
                         "%s: empty size, expected e.g. 512M or 16G", field);
    uint64_t v;
    bool overflow;
    size_t n = read_digits(s, UINT64_MAX, &v, &overflow);
    if (n == 0)
        return sh_errorf(err, SH_EINVAL,
                         "%s: '%s' is not a size, expected e.g. 512M or 16G",
                         field, s);
    const char *u = s + n;
    const char *pos = *u ? strchr(units, toupper((unsigned char)*u)) : NULL;
    if (!pos)
        return sh_errorf(err, SH_EINVAL,
                         "%s: '%s' needs a unit K, M, G, T or P (e.g. 16G)",
                         field, s);
    const char *rest = u + 1;
    if (!(strcmp(rest, "") == 0 || strcmp(rest, "B") == 0 ||
          strcmp(rest, "iB") == 0 || strcmp(rest, "b") == 0))
        return sh_errorf(err, SH_EINVAL,
                         "%s: '%s' is not a size, expected e.g. 512M or 16G",
                         field, s);
    unsigned shift = 10 * (unsigned)(pos - units + 1);
    if (overflow || v > (PARSE_SIZE_MAX >> shift))
        return sh_errorf(err, SH_EINVAL, "%s: '%s' is larger than 1P", field,
                         s);
    if (v == 0)
        return sh_errorf(err, SH_EINVAL, "%s: size must be more than zero",
                         field);
    *bytes = v << shift;
    return 0;
}

/* "H:MM:SS", "MM:SS" is not accepted (ambiguous); "D-HH:MM:SS" is. */
static int parse_clock(const char *field, const char *s, int64_t *out,
                       struct sh_error *err)
{
    uint64_t days = 0, h, m, sec;
    bool of;
    const char *p = s;
    const char *dash = strchr(s, '-');
    if (dash) {
        size_t n = read_digits(p, 1000, &days, &of);
        if (n == 0 || p + n != dash || of)
            goto bad;
        p = dash + 1;
    }
    size_t n = read_digits(p, 1000000, &h, &of);
    if (n == 0 || of || p[n] != ':')
        goto bad;
    p += n + 1;
    n = read_digits(p, 59, &m, &of);
    if (n != 2 || of || p[n] != ':')
        goto bad;
    p += n + 1;
    n = read_digits(p, 59, &sec, &of);
    if (n != 2 || of || p[n] != '\0')
        goto bad;
    if (dash && h > 23)
        goto bad;
    *out = (int64_t)(((days * 24 + h) * 60 + m) * 60 + sec);
    return 0;
bad:
    return sh_errorf(err, SH_EINVAL,
                     "%s: '%s' is not a duration, expected e.g. 90s, 30m, "
                     "2h, 1d, 1h30m, HH:MM:SS or D-HH:MM:SS",
                     field, s);
}

int parse_duration(const char *field, const char *s, int64_t *seconds,
                   struct sh_error *err)
{
    return parse_duration_max(field, s, PARSE_DURATION_MAX, seconds, err);
}

int parse_duration_max(const char *field, const char *s, int64_t max_seconds,
                       int64_t *seconds, struct sh_error *err)
{
    if (!s || !*s)
        return sh_errorf(err, SH_EINVAL,
                         "%s: empty duration, expected e.g. 90s, 30m or 2h",
                         field);
    int64_t total = 0;
    if (strchr(s, ':')) {
        if (parse_clock(field, s, &total, err) < 0)
            return -1;
    } else {
        const char *p = s;
        int last_rank = 5;
        while (*p) {
            uint64_t v;
            bool of;
            size_t n = read_digits(p, UINT64_MAX / 2, &v, &of);
            if (n == 0)
                goto bad;
            char u = p[n];
            static const char order[] = "smhd";
            const char *pos = u ? strchr(order, u) : NULL;
            if (!u)
                return sh_errorf(err, SH_EINVAL,
                                 "%s: '%s' needs a unit: s, m, h or d "
                                 "(e.g. 90s, 30m, 2h)",
                                 field, s);
            if (!pos)
                goto bad;
            int rank = (int)(pos - order);
            if (rank >= last_rank)
                goto bad; /* units must go from large to small, once each */
            last_rank = rank;
            static const int64_t mult[] = {1, 60, 3600, 86400};
            if (of || v > (uint64_t)(PARSE_DURATION_MAX / mult[rank]))
                goto toolong;
            total += (int64_t)v * mult[rank];
            if (total > PARSE_DURATION_MAX)
                goto toolong;
            p += n + 1;
        }
    }
    if (total <= 0)
        return sh_errorf(err, SH_EINVAL, "%s: duration must be more than zero",
                         field);
    if (total > max_seconds)
        goto toolong;
    *seconds = total;
    return 0;
bad:
    return sh_errorf(err, SH_EINVAL,
                     "%s: '%s' is not a duration, expected e.g. 90s, 30m, 2h, "
                     "1d, 1h30m, HH:MM:SS or D-HH:MM:SS",
                     field, s);
toolong:
    if (max_seconds % 86400 == 0)
        return sh_errorf(err, SH_EINVAL, "%s: '%s' is longer than %lld days",
                         field, s, (long long)(max_seconds / 86400));
    return sh_errorf(err, SH_EINVAL, "%s: '%s' is longer than %lld s", field, s,
                     (long long)max_seconds);
}

void format_duration(int64_t s, char *buf, size_t size)
{
    if (s < 0)
        s = 0;
    if (s < 60)
        snprintf(buf, size, "%" PRId64 "s", s);
    else if (s < 3600)
        snprintf(buf, size, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, size, "%" PRId64 "h%02" PRId64 "m", s / 3600,
                 (s % 3600) / 60);
    else
        snprintf(buf, size, "%" PRId64 "d%02" PRId64 "h", s / 86400,
                 (s % 86400) / 3600);
}

void format_size(uint64_t bytes, char *buf, size_t size)
{
    static const char units[] = "KMGTP";
    if (bytes < 1024) {
        snprintf(buf, size, "%" PRIu64 "B", bytes);
        return;
    }
    double v = (double)bytes;
    int u = -1;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (v == (double)(uint64_t)v)
        snprintf(buf, size, "%" PRIu64 "%c", (uint64_t)v, units[u]);
    else
        snprintf(buf, size, "%.1f%c", v, units[u]);
}

int parse_digits(const char **p, long max, long *out)
{
    const char *s = *p;
    long v = 0;
    if (*s < '0' || *s > '9')
        return -1;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s - '0');
        if (v > max)
            return -1;
        s++;
    }
    *p = s;
    *out = v;
    return 0;
}
