/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 helpers for text that comes from programs (job output): JSON needs
 * valid UTF-8, programs write bytes. */
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

#endif
