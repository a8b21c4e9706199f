/* SPDX-License-Identifier: Apache-2.0 */
/* Job array specifications (job_array.h). */
#include "lib/model/job_array.h"

#include <stdlib.h>
#include <string.h>

#include "lib/util/parse.h"
#include "lib/util/utf8.h"

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

void job_array_fini(struct job_array *a)
{
    free(a->idx);
    a->idx = NULL;
    a->n = 0;
    a->max_running = 0;
}

int job_array_parse(const char *text, struct job_array *a, struct sh_error *err)
{
    memset(a, 0, sizeof(*a));
    if (!text || !*text)
        return sh_errorf(err, SH_EINVAL, "array must not be empty");
    if (strlen(text) > JOB_ARRAY_TEXT_MAX)
        return sh_errorf(err, SH_EINVAL, "array: longer than %d bytes",
                         JOB_ARRAY_TEXT_MAX);
    int cap = 64;
    a->idx = malloc(sizeof(*a->idx) * (size_t)cap);
    if (!a->idx)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    const char *p = text;
    for (;;) {
        const char *item = p;
        long lo, hi, step = 1;
        if (parse_digits(&p, JOB_ARRAY_INDEX_MAX, &lo) < 0)
            goto bad;
        hi = lo;
        if (*p == '-') {
            p++;
            if (parse_digits(&p, JOB_ARRAY_INDEX_MAX, &hi) < 0 || hi < lo)
                goto bad;
            if (*p == ':') {
                p++;
                if (parse_digits(&p, JOB_ARRAY_INDEX_MAX, &step) < 0 ||
                    step < 1)
                    goto bad;
            }
        }
        if (*p && *p != ',' && *p != '%')
            goto bad;
        for (long i = lo; i <= hi; i += step) {
            if (a->n == JOB_ARRAY_TASKS_MAX) {
                job_array_fini(a);
                return sh_errorf(err, SH_EINVAL, "array: more than %d tasks",
                                 JOB_ARRAY_TASKS_MAX);
            }
            if (a->n == cap) {
                cap *= 2;
                int *np = realloc(a->idx, sizeof(*np) * (size_t)cap);
                if (!np) {
                    job_array_fini(a);
                    return sh_errorf(err, SH_EINTERNAL, "out of memory");
                }
                a->idx = np;
            }
            a->idx[a->n++] = (int)i;
        }
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == '%') {
            long m;
            p++;
            if (parse_digits(&p, JOB_ARRAY_TASKS_MAX, &m) < 0 || m < 1 || *p) {
                job_array_fini(a);
                return sh_errorf(err, SH_EINVAL,
                                 "array: '%%' takes the most tasks at once, "
                                 "1..%d, at the end (0-99%%8)",
                                 JOB_ARRAY_TASKS_MAX);
            }
            a->max_running = (int)m;
        }
        break;
    bad:
        job_array_fini(a);
        return sh_errorf(err, SH_EINVAL,
                         "array: '%.*s' is not N, A-B or A-B:STEP with "
                         "indices 0..%d",
                         utf8_cut(item, (int)strcspn(item, ",%") < 32
                                            ? (int)strcspn(item, ",%")
                                            : 32),
                         item, JOB_ARRAY_INDEX_MAX);
    }
    qsort(a->idx, (size_t)a->n, sizeof(*a->idx), int_cmp);
    int k = 0;
    for (int i = 0; i < a->n; i++) {
        if (k == 0 || a->idx[k - 1] != a->idx[i])
            a->idx[k++] = a->idx[i];
    }
    a->n = k;
    return 0;
}
