/* SPDX-License-Identifier: Apache-2.0 */
/* Clocks and timestamps. Wall time is milliseconds since the Unix epoch
 * (what is stored and shown); monotonic time is for measuring intervals. */
#ifndef SHOAL_UTIL_CLOCK_H
#define SHOAL_UTIL_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "lib/util/error.h"

/* Milliseconds since the epoch, from CLOCK_REALTIME. */
int64_t clock_wall_ms(void);

/* Milliseconds from CLOCK_MONOTONIC. */
int64_t clock_mono_ms(void);

/* Microseconds from CLOCK_MONOTONIC. */
int64_t clock_mono_us(void);

/* Format epoch milliseconds as UTC ISO 8601 ("2026-11-30T07:24:49Z");
 * "-" when ms is 0 (unset). */
void clock_format_iso(int64_t ms, char *buf, size_t size);

/* Format epoch milliseconds as local "YYYY-MM-DD HH:MM:SS" for tables;
 * "-" when ms is 0. */
void clock_format_local(int64_t ms, char *buf, size_t size);

/* Parse "YYYY-MM-DD", "YYYY-MM-DDTHH:MM:SS[Z]" (UTC) into epoch ms. */
int clock_parse_date(const char *field, const char *s, int64_t *ms,
                     struct sh_error *err);

/* A point in time as people write it: a date (clock_parse_date) or a
 * duration back from now_ms ("7d", "12h"; see parse_duration). */
int clock_parse_when(const char *field, const char *s, int64_t now_ms,
                     int64_t *ms, struct sh_error *err);

/* A start time as Slurm's --begin writes it, into epoch ms: "now",
 * "now+N[s|m|h|d|w]" (also "seconds", "minutes", "hours", "days", "weeks";
 * a bare N is seconds), "HH:MM[:SS]" (today, or tomorrow once that time
 * has passed), "YYYY-MM-DD[THH:MM[:SS]]", "midnight", "noon", "teatime"
 * (16:00), "today", "tomorrow". Local time, or UTC with a trailing 'Z'
 * on a dated form. now_ms is the reference for relative forms. At most
 * 366 days ahead. SH_EINVAL naming field and the forms otherwise. */
int clock_parse_begin(const char *field, const char *s, int64_t now_ms,
                      int64_t *ms, struct sh_error *err);

#endif
