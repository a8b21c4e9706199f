/* SPDX-License-Identifier: Apache-2.0 */
/* Output file patterns (see job_output.h). */
#include "lib/model/job_output.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lib/model/job.h"

int job_output_check(const char *field, const char *pattern,
                     struct sh_error *err)
{
    if (!pattern || !*pattern)
        return sh_errorf(err, SH_EINVAL, "%s must not be empty", field);
    if (strlen(pattern) > JOB_PATH_MAX)
        return sh_errorf(err, SH_ETOOLARGE, "%s is longer than %d bytes", field,
                         JOB_PATH_MAX);
    for (const unsigned char *p = (const unsigned char *)pattern; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            return sh_errorf(err, SH_EINVAL, "%s must be printable characters",
                             field);
        if (*p != '%')
            continue;
        p++;
        if (*p == 'n' || *p == 't' || *p == 's')
            return sh_errorf(err, SH_EINVAL,
                             "%s: '%%%c' is not supported: Shoal writes one "
                             "file per node, not per task or step (use "
                             "%%N, the node's name)",
                             field, *p);
        if (!*p || !strchr("jJAaxuN%", *p))
            return sh_errorf(err, SH_EINVAL,
                             "%s: '%%%c' is not supported (only %%j, %%J, "
                             "%%A, %%a, %%x, %%u, %%N and %%%%)",
                             field, *p ? *p : ' ');
    }
    return 0;
}

/* Append s to buf at *o; '/' becomes '_' when safe is set. */
static bool put(char *buf, size_t size, size_t *o, const char *s, bool safe)
{
    for (; *s; s++) {
        if (*o + 1 >= size)
            return false;
        buf[(*o)++] = safe && *s == '/' ? '_' : *s;
    }
    return true;
}

int job_output_expand(const char *pattern, const struct job_output_vars *v,
                      char *buf, size_t size)
{
    size_t o = 0;
    char num[32];
    bool ok = size > 0;
    for (const char *p = pattern; ok && *p; p++) {
        if (*p != '%') {
            char c[2] = {*p, '\0'};
            ok = put(buf, size, &o, c, false);
            continue;
        }
        switch (*++p) {
        case 'J': /* jobid.stepid: the batch step's file is the job's */
        case 'j':
            snprintf(num, sizeof(num), "%llu", (unsigned long long)v->id);
            ok = put(buf, size, &o, num, false);
            break;
        case 'A':
            snprintf(num, sizeof(num), "%llu",
                     (unsigned long long)(v->array_id ? v->array_id : v->id));
            ok = put(buf, size, &o, num, false);
            break;
        case 'a':
            snprintf(num, sizeof(num), "%d", v->array_id ? v->array_task : 0);
            ok = put(buf, size, &o, num, false);
            break;
        case 'x':
            ok = put(buf, size, &o, v->name ? v->name : "job", true);
            break;
        case 'u':
            ok = put(buf, size, &o, v->user ? v->user : "", true);
            break;
        case 'N':
            ok = put(buf, size, &o, v->node ? v->node : "", true);
            break;
        case '%':
            ok = put(buf, size, &o, "%", false);
            break;
        default: /* unchecked pattern: stop */
            ok = false;
            p--;
            break;
        }
    }
    if (!ok)
        return -1;
    buf[o] = '\0';
    return 0;
}
