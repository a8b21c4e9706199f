/* SPDX-License-Identifier: Apache-2.0 */
/* Bounded growable buffer (see strbuf.h). */
#include "lib/util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_init(struct strbuf *sb, size_t max)
{
    sb->data = NULL;
    sb->len = 0;
    sb->cap = 0;
    sb->max = max;
}

void strbuf_fini(struct strbuf *sb)
{
    if (!sb)
        return;
    free(sb->data);
    sb->data = NULL;
    sb->len = 0;
    sb->cap = 0;
}

static int strbuf_reserve(struct strbuf *sb, size_t n)
{
    if (n > sb->max || sb->len > sb->max - n)
        return -1;
    size_t need = sb->len + n + 1;
    if (need <= sb->cap)
        return 0;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need)
        cap *= 2;
    char *p = realloc(sb->data, cap);
    if (!p)
        return -1;
    sb->data = p;
    sb->cap = cap;
    return 0;
}

int strbuf_append(struct strbuf *sb, const void *data, size_t n)
{
    if (strbuf_reserve(sb, n) < 0)
        return -1;
    if (n)
        memcpy(sb->data + sb->len, data, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
    return 0;
}

int strbuf_appends(struct strbuf *sb, const char *s)
{
    return strbuf_append(sb, s, strlen(s));
}

int strbuf_appendf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || strbuf_reserve(sb, (size_t)n) < 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
    return 0;
}

void strbuf_reset(struct strbuf *sb)
{
    sb->len = 0;
    if (sb->data)
        sb->data[0] = '\0';
}

const char *strbuf_str(const struct strbuf *sb)
{
    return sb->data ? sb->data : "";
}

char *strbuf_take(struct strbuf *sb)
{
    char *s = sb->data ? sb->data : strdup("");
    sb->data = NULL;
    sb->len = 0;
    sb->cap = 0;
    return s;
}
