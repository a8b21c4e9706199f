/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm host lists expanded (see step_hostlist.h). */
#include "agent/step_hostlist.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 1024

/* Expand one name with bracket groups: prefix holds what came before. */
static int expand(const char *prefix, const char *rest, FILE *out, int *count,
                  struct sh_error *err)
{
    const char *open = strchr(rest, '[');
    if (!open) {
        if (++*count > HOSTLIST_NAMES_MAX)
            return sh_errorf(err, SH_ETOOLARGE, "more than %d names",
                             HOSTLIST_NAMES_MAX);
        fprintf(out, "%s%s\n", prefix, rest);
        return 0;
    }
    const char *close = strchr(open, ']');
    if (!close)
        return sh_errorf(err, SH_EINVAL, "unclosed '[' in %s%s", prefix, rest);
    if (close == open + 1)
        return sh_errorf(err, SH_EINVAL, "empty '[]' in %s%s", prefix, rest);
    char head[NAME_MAX_LEN];
    int hl = snprintf(head, sizeof(head), "%s%.*s", prefix, (int)(open - rest),
                      rest);
    if (hl < 0 || (size_t)hl >= sizeof(head) - 32)
        return sh_errorf(err, SH_EINVAL, "a name is too long");
    const char *p = open + 1;
    while (p < close) {
        const char *end = memchr(p, ',', (size_t)(close - p));
        if (!end)
            end = close;
        const char *dash = memchr(p, '-', (size_t)(end - p));
        char *stop;
        int width = (int)((dash ? dash : end) - p);
        if (width < 1 || !isdigit((unsigned char)*p))
            return sh_errorf(err, SH_EINVAL, "bad range in [%.*s]",
                             (int)(close - open - 1), open + 1);
        unsigned long lo = strtoul(p, &stop, 10), hi = lo;
        if (stop != (dash ? dash : end))
            return sh_errorf(err, SH_EINVAL, "bad range in [%.*s]",
                             (int)(close - open - 1), open + 1);
        if (dash) {
            hi = strtoul(dash + 1, &stop, 10);
            if (stop != end || dash + 1 == end || hi < lo)
                return sh_errorf(err, SH_EINVAL, "bad range in [%.*s]",
                                 (int)(close - open - 1), open + 1);
        }
        if (hi - lo >= HOSTLIST_NAMES_MAX)
            return sh_errorf(err, SH_ETOOLARGE, "more than %d names",
                             HOSTLIST_NAMES_MAX);
        for (unsigned long v = lo; v <= hi; v++) {
            snprintf(head + hl, sizeof(head) - (size_t)hl, "%0*lu", width, v);
            if (expand(head, close + 1, out, count, err) < 0)
                return -1;
        }
        p = end + 1;
    }
    return 0;
}

int step_hostlist_print(const char *list, FILE *out, struct sh_error *err)
{
    int count = 0, depth = 0;
    char name[NAME_MAX_LEN];
    size_t n = 0;
    for (const char *p = list;; p++) {
        if (*p == '[')
            depth++;
        else if (*p == ']')
            depth--;
        if (*p == '\0' || (*p == ',' && depth == 0)) {
            name[n] = '\0';
            if (n > 0 && expand("", name, out, &count, err) < 0)
                return -1;
            n = 0;
            if (*p == '\0')
                break;
            continue;
        }
        if (n + 1 >= sizeof(name))
            return sh_errorf(err, SH_EINVAL, "a name is too long");
        name[n++] = *p;
    }
    return 0;
}
