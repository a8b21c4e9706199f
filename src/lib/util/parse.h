/* SPDX-License-Identifier: Apache-2.0 */
/* Strict parsers for what people type: integers, sizes ("16G", "512M") and
 * durations ("90s", "30m", "2h", "1d", "1h30m", "HH:MM:SS", "D-HH:MM:SS"),
 * and the matching formatters for tables. Every parser rejects trailing
 * garbage, signs where none belong, overflow and missing units, and says so
 * in err, naming the field given by the caller.
 */
#ifndef SHOAL_UTIL_PARSE_H
#define SHOAL_UTIL_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/util/error.h"

/* The largest size accepted: 1 PiB. */
#define PARSE_SIZE_MAX (UINT64_C(1) << 50)
/* The longest duration accepted: 366 days. */
#define PARSE_DURATION_MAX (INT64_C(366) * 24 * 3600)

/* Parse a decimal integer in [min, max]. field names the value in errors. */
int parse_int64(const char *field, const char *s, int64_t min, int64_t max,
                int64_t *out, struct sh_error *err);

/* Scan a number at *p (digits only, no sign), at most max, into *out and
 * move *p past it; -1 (nothing moved) when there is no digit or it is over
 * max. For grammars that go on after the number ("0-15%4", "4x8"). */
int parse_digits(const char **p, long max, long *out);

/* Parse a size with a binary unit K, M, G, T, P (optionally followed by "B"
 * or "iB"); "16G" is 16 GiB. A bare number is rejected: units are required. */
int parse_size(const char *field, const char *s, uint64_t *bytes,
               struct sh_error *err);

/* Parse a duration into whole seconds (> 0, at most PARSE_DURATION_MAX). */
int parse_duration(const char *field, const char *s, int64_t *seconds,
                   struct sh_error *err);
/* The same with a lower bound of its own: longer than max_seconds (at most
 * PARSE_DURATION_MAX) is refused naming it. */
int parse_duration_max(const char *field, const char *s, int64_t max_seconds,
                       int64_t *seconds, struct sh_error *err);

/* Format seconds as "45s", "12m", "1h05m", "3d04h" into buf. */
void format_duration(int64_t seconds, char *buf, size_t size);

/* Format bytes as "512M", "16G", "1.5T" into buf. */
void format_size(uint64_t bytes, char *buf, size_t size);

#endif
