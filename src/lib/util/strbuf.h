/* SPDX-License-Identifier: Apache-2.0 */
/* A growable byte buffer with a hard maximum size, for everything fed from
 * the network, a file or a trace. Appending past the maximum fails and leaves
 * the buffer as it was. Always NUL-terminated so it can be used as a string.
 */
#ifndef SHOAL_UTIL_STRBUF_H
#define SHOAL_UTIL_STRBUF_H

#include <stddef.h>

struct strbuf {
    char *data; /* NUL-terminated; NULL until the first append */
    size_t len; /* bytes used, not counting the NUL */
    size_t cap; /* bytes allocated */
    size_t max; /* the most len may ever be */
};

/* Caller-allocated: initialise an empty buffer that may hold up to max bytes.
 */
void strbuf_init(struct strbuf *sb, size_t max);

/* Free the contents; the buffer may be initialised again. NULL-safe. */
void strbuf_fini(struct strbuf *sb);

/* Append n bytes. Returns 0, or -1 when it would pass max or memory is short
 * (the buffer is then unchanged). */
int strbuf_append(struct strbuf *sb, const void *data, size_t n);

int strbuf_appends(struct strbuf *sb, const char *s);

int strbuf_appendf(struct strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Empty the buffer, keeping its memory. */
void strbuf_reset(struct strbuf *sb);

/* The contents as a string ("" when empty). Borrowed until the next change. */
const char *strbuf_str(const struct strbuf *sb);

/* Transfer the contents out (caller frees; never NULL on success) and leave
 * the buffer empty. Returns NULL when memory is short. */
char *strbuf_take(struct strbuf *sb);

#endif
