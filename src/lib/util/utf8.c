/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 validation and repair (see utf8.h). */
#include "lib/util/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid sequence starting at p (1..4), or 0 when invalid. */
static size_t seq_len(const unsigned char *p, size_t avail)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (avail < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

char *utf8_sanitize(const char *buf, size_t len)
{
    /* Each invalid byte grows to 3 bytes at most. */
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    const unsigned char *p = (const unsigned char *)buf;
    size_t o = 0;
    size_t i = 0;
    while (i < len) {
        size_t n = seq_len(p + i, len - i);
        if (n == 0) {
            out[o++] = (char)0xef;
            out[o++] = (char)0xbf;
            out[o++] = (char)0xbd;
            i++;
        } else if (n == 1 && p[i] == 0) {
            i++;
        } else {
            for (size_t k = 0; k < n; k++)
                out[o++] = (char)p[i + k];
            i += n;
        }
    }
    out[o] = '\0';
    return out;
}

size_t utf8_complete_prefix(const char *buf, size_t len, bool more_follows)
{
    if (!more_follows || len == 0)
        return len;
    /* Look back at most 3 bytes for the start of a sequence. */
    const unsigned char *p = (const unsigned char *)buf;
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned char c = p[len - back];
        if ((c & 0xc0) == 0x80)
            continue; /* continuation byte: keep looking */
        size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        return need > back ? len - back : len;
    }
    return len;
}

int utf8_cut(const char *s, int max)
{
    if (!s || max <= 0)
        return 0;
    size_t n = strnlen(s, (size_t)max + 1);
    if (n <= (size_t)max)
        return (int)n;
    return (int)utf8_complete_prefix(s, (size_t)max, true);
}
