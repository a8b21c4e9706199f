/* SPDX-License-Identifier: Apache-2.0 */
/* Node lists, exclusions and label constraints (see job_place.h). */
#include "lib/model/job_place.h"

#include <ctype.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/util/utf8.h"

static bool name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

/* The next comma-separated entry of *p: its start and length. */
static bool next_entry(const char **p, const char **start, size_t *len)
{
    if (!*p)
        return false;
    const char *c = strchr(*p, ',');
    *start = *p;
    *len = c ? (size_t)(c - *p) : strlen(*p);
    *p = c ? c + 1 : NULL;
    return true;
}

static bool entry_is(const char *start, size_t len, const char *name)
{
    return strlen(name) == len && strncmp(start, name, len) == 0;
}

int job_nodelist_check(const char *field, const char *list, int *count,
                       struct sh_error *err)
{
    if (!list || !*list)
        return sh_errorf(err, SH_EINVAL, "%s must name at least one node",
                         field);
    if (strlen(list) > JOB_NODELIST_TEXT_MAX)
        return sh_errorf(err, SH_ETOOLARGE, "%s is longer than %d bytes", field,
                         JOB_NODELIST_TEXT_MAX);
    int n = 0;
    const char *p = list, *start;
    size_t len;
    while (next_entry(&p, &start, &len)) {
        char name[JOB_IDENT_MAX + 1];
        if (len == 0 || len > JOB_IDENT_MAX)
            return sh_errorf(err, SH_EINVAL,
                             "%s: node names are 1..%d characters separated "
                             "by commas",
                             field, JOB_IDENT_MAX);
        memcpy(name, start, len);
        name[len] = '\0';
        if (!job_ident_valid(name))
            return sh_errorf(err, SH_EINVAL,
                             "%s: '%.*s' is not a node name (ranges such as "
                             "gpu[01-04] are not supported: list the names)",
                             field, UTF8_CUT(name, 64));
        const char *q = list, *s2;
        size_t l2;
        for (int k = 0; k < n && next_entry(&q, &s2, &l2); k++) {
            if (l2 == len && strncmp(s2, start, len) == 0)
                return sh_errorf(err, SH_EINVAL, "%s: node %s is named twice",
                                 field, name);
        }
        if (++n > JOB_NODES_MAX)
            return sh_errorf(err, SH_ETOOLARGE, "%s names more than %d nodes",
                             field, JOB_NODES_MAX);
    }
    if (count)
        *count = n;
    return 0;
}

bool job_nodelist_has(const char *list, const char *name)
{
    const char *p = list, *start;
    size_t len;
    while (next_entry(&p, &start, &len)) {
        if (entry_is(start, len, name))
            return true;
    }
    return false;
}

int job_constraint_check(const char *expr, struct sh_error *err)
{
    if (!expr || !*expr)
        return sh_errorf(err, SH_EINVAL, "constraint must not be empty");
    if (strlen(expr) > JOB_CONSTRAINT_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "constraint is longer than %d bytes",
                         JOB_CONSTRAINT_MAX);
    bool want_term = true, in_value = false;
    for (const char *p = expr; *p; p++) {
        if (name_char(*p)) {
            want_term = false;
            continue;
        }
        if (*p == '=' && !want_term && !in_value) {
            in_value = true;
            want_term = true; /* a value must follow */
            continue;
        }
        if ((*p == '&' || *p == '|') && !want_term) {
            want_term = true;
            in_value = false;
            continue;
        }
        if (*p == '&' || *p == '|' || *p == '=')
            return sh_errorf(err, SH_EINVAL,
                             "constraint \"%.*s\": '%c' needs a label on "
                             "each side",
                             UTF8_CUT(expr, 128), *p);
        return sh_errorf(err, SH_EINVAL,
                         "constraint \"%.*s\": '%c' is not supported (only "
                         "LABEL, KEY=VALUE, A&B and A|B)",
                         UTF8_CUT(expr, 128), *p);
    }
    if (want_term)
        return sh_errorf(err, SH_EINVAL,
                         "constraint \"%.*s\" ends without a label",
                         UTF8_CUT(expr, 128));
    return 0;
}

/* Whether the labels have the term [start, start + len). */
static bool term_match(const char *start, size_t len,
                       const struct node_label *labels, int n)
{
    const char *eq = memchr(start, '=', len);
    size_t klen = eq ? (size_t)(eq - start) : len;
    for (int i = 0; i < n; i++) {
        if (!entry_is(start, klen, labels[i].key))
            continue;
        if (!eq)
            return true;
        const char *v = labels[i].value ? labels[i].value : "";
        if (entry_is(eq + 1, len - klen - 1, v))
            return true;
    }
    return false;
}

bool job_constraint_match(const char *expr, const struct node_label *labels,
                          int n)
{
    const char *p = expr;
    while (*p) {
        /* One '&' group: all its terms must hold. */
        bool all = true;
        for (;;) {
            size_t len = strcspn(p, "&|");
            all = all && term_match(p, len, labels, n);
            p += len;
            if (*p != '&')
                break;
            p++;
        }
        if (all)
            return true;
        if (*p == '|')
            p++;
    }
    return false;
}

bool job_place_allows(const char *nodelist, const char *exclude,
                      const char *constraint, const char *node,
                      const struct node_label *labels, int n)
{
    if (nodelist && !job_nodelist_has(nodelist, node))
        return false;
    if (exclude && job_nodelist_has(exclude, node))
        return false;
    return !constraint || job_constraint_match(constraint, labels, n);
}
