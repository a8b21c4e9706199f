/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 helpers for text that comes from programs (job output) or from
 * requests (paths, query strings, names in error messages): JSON needs
 * valid UTF-8, programs and clients send bytes. */
#ifndef SHOAL_UTIL_UTF8_H
#define SHOAL_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* A NUL-terminated copy of buf[0..len) with every invalid byte replaced by
 * U+FFFD and NUL bytes dropped. Caller frees; NULL on out of memory. */
char *utf8_sanitize(const char *buf, size_t len);

/* The length of the longest prefix of buf[0..len) that does not end in the
 * middle of a multi-byte sequence. When more_follows is false the whole
 * length is returned (a truncated sequence at the very end is invalid and
 * will be replaced). */
size_t utf8_complete_prefix(const char *buf, size_t len, bool more_follows);

/* The length of the longest prefix of the string s that is at most max
 * bytes and does not end inside a multi-byte sequence, for a bounded
 * "%.*s" that never cuts a character in two (where "%.64s" would leave
 * half a character, which is not UTF-8 and cannot go into JSON). Bytes
 * that are not UTF-8 are counted as they are. s may be NULL (length 0);
 * max < 0 counts as 0. */
int utf8_cut(const char *s, int max);

/* The two arguments of such a "%.*s":
 *     sh_errorf(err, SH_ENOTFOUND, "team %.*s does not exist",
 *               UTF8_CUT(name, 64));
 * s is evaluated twice, so it must have no side effects. */
#define UTF8_CUT(s, max) utf8_cut((s), (max)), (s)

#endif
