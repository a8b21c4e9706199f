/* SPDX-License-Identifier: Apache-2.0 */
/* JSON as text: spans, members, elements, and jansson's indented layout
 * (see json_text.h). */
#include "cmd/json_text.h"

#include <string.h>

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* p is on the opening quote: one past the closing one, or NULL. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

bool jtext_value(const char *p, const char *end, struct jtext *v)
{
    p = skip_space(p, end);
    if (p >= end)
        return false;
    const char *s = p;
    if (*p == '"') {
        p = skip_string(p, end);
    } else if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p && p < end) {
            if (*p == '"') {
                p = skip_string(p, end);
                continue;
            }
            if (*p == '{' || *p == '[')
                depth++;
            else if (*p == '}' || *p == ']')
                depth--;
            p++;
            if (depth == 0)
                break;
        }
        if (depth != 0)
            p = NULL;
    } else {
        while (p < end && !strchr(",]} \t\r\n", *p))
            p++;
        if (p == s)
            p = NULL;
    }
    if (!p)
        return false;
    v->p = s;
    v->end = p;
    return true;
}

/* The next member or element of the container v, from *cursor (NULL: the
 * first); with key, the member's key span too. */
static bool next_item(const struct jtext *c, char open, const char **cursor,
                      struct jtext *key, struct jtext *v)
{
    const char *p = *cursor;
    if (!p) {
        if (c->end - c->p < 2 || *c->p != open)
            return false;
        p = c->p + 1;
    } else {
        p = skip_space(p, c->end);
        if (p >= c->end || *p != ',')
            return false;
        p++;
    }
    const char *last = c->end - 1; /* the closing bracket */
    p = skip_space(p, last);
    if (p >= last)
        return false;
    if (key) {
        if (*p != '"' || !jtext_value(p, last, key))
            return false;
        p = skip_space(key->end, last);
        if (p >= last || *p != ':')
            return false;
        p++;
    }
    if (!jtext_value(p, last, v))
        return false;
    *cursor = v->end;
    return true;
}

bool jtext_member(const struct jtext *o, const char *key, struct jtext *v)
{
    size_t n = strlen(key);
    const char *cur = NULL;
    struct jtext k;
    while (next_item(o, '{', &cur, &k, v)) {
        if ((size_t)(k.end - k.p) == n + 2 && memcmp(k.p + 1, key, n) == 0)
            return true;
    }
    return false;
}

bool jtext_next(const struct jtext *a, const char **cursor, struct jtext *v)
{
    return next_item(a, '[', cursor, NULL, v);
}

static void newline(FILE *f, int depth)
{
    putc_unlocked('\n', f);
    for (int i = 0; i < depth; i++) {
        putc_unlocked(' ', f);
        putc_unlocked(' ', f);
    }
}

void jtext_print(FILE *f, const struct jtext *v, int depth)
{
    const char *p = v->p, *end = v->end;
    while (p < end) {
        char c = *p;
        switch (c) {
        case '"': {
            const char *e = skip_string(p, end);
            if (!e)
                e = end;
            fwrite_unlocked(p, 1, (size_t)(e - p), f);
            p = e;
            continue;
        }
        case ' ':
        case '\t':
        case '\r':
        case '\n':
            break;
        case '{':
        case '[': {
            const char *q = skip_space(p + 1, end);
            putc_unlocked(c, f);
            if (q < end && (*q == '}' || *q == ']')) {
                putc_unlocked(*q, f); /* empty: {} or [] */
                p = q + 1;
                continue;
            }
            newline(f, ++depth);
            break;
        }
        case '}':
        case ']':
            newline(f, --depth);
            putc_unlocked(c, f);
            break;
        case ',':
            putc_unlocked(',', f);
            newline(f, depth);
            break;
        case ':':
            putc_unlocked(':', f);
            putc_unlocked(' ', f);
            break;
        default:
            putc_unlocked(c, f);
        }
        p++;
    }
}
