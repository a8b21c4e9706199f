/* SPDX-License-Identifier: Apache-2.0 */
/* Job dependencies: parsing, printing and evaluation (job_deps.h). */
#include "lib/model/job_deps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/utf8.h"

/* "%.*s" arguments for len bytes of s (not NUL-terminated there), at
 * most max, never cutting a character in two. */
#define CUT(s, len, max)                                                       \
    utf8_cut((s), (int)((len) < (size_t)(max) ? (len) : (size_t)(max))), (s)

static const char *const kind_names[] = {"afterok", "afterany", "afternotok",
                                         "singleton"};

const char *job_dep_kind_name(enum job_dep_kind k)
{
    return (unsigned)k < 4 ? kind_names[k] : "?";
}

static int kind_from(const char *s, size_t len, enum job_dep_kind *k)
{
    for (int i = 0; i < 4; i++) {
        if (strlen(kind_names[i]) == len &&
            strncmp(s, kind_names[i], len) == 0) {
            *k = (enum job_dep_kind)i;
            return 0;
        }
    }
    return -1;
}

static int add(struct job_dep **v, int *n, enum job_dep_kind kind, uint64_t job,
               int task, struct sh_error *err)
{
    if (*n >= JOB_DEPS_MAX)
        return sh_errorf(err, SH_EINVAL, "dependency: at most %d jobs",
                         JOB_DEPS_MAX);
    struct job_dep *p = realloc(*v, sizeof(**v) * (size_t)(*n + 1));
    if (!p)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    *v = p;
    p[*n].kind = kind;
    p[*n].job = job;
    p[*n].task = task;
    (*n)++;
    return 0;
}

/* One item "kind[:id[:id...]]" of length len. */
static int parse_item(const char *s, size_t len, struct job_dep **v, int *n,
                      struct sh_error *err)
{
    size_t klen = strcspn(s, ":");
    if (klen > len)
        klen = len;
    enum job_dep_kind kind;
    if (kind_from(s, klen, &kind) < 0) {
        static const char *const slurm_only[] = {"after", "aftercorr",
                                                 "afterburstbuffer"};
        bool slurm = false;
        for (int i = 0; i < 3; i++)
            slurm |= strlen(slurm_only[i]) == klen &&
                     strncmp(s, slurm_only[i], klen) == 0;
        if (slurm)
            return sh_errorf(err, SH_EINVAL,
                             "dependency: '%.*s' is a Slurm form Shoal does "
                             "not have (use afterok, afterany, afternotok or "
                             "singleton)",
                             CUT(s, klen, 32));
        return sh_errorf(err, SH_EINVAL,
                         "dependency: unknown kind '%.*s' (afterok, afterany, "
                         "afternotok or singleton)",
                         CUT(s, klen, 32));
    }
    if (kind == JOB_DEP_SINGLETON) {
        if (klen != len)
            return sh_errorf(err, SH_EINVAL,
                             "dependency: singleton takes no job ids");
        return add(v, n, kind, 0, -1, err);
    }
    if (klen == len)
        return sh_errorf(err, SH_EINVAL,
                         "dependency: %s needs job ids (%s:ID[:ID...])",
                         kind_names[kind], kind_names[kind]);
    const char *p = s + klen;
    const char *end = s + len;
    while (p < end) {
        p++; /* the ':' */
        size_t ilen = 0;
        while (p + ilen < end && p[ilen] != ':')
            ilen++;
        char buf[24];
        /* ID or ID_TASK */
        size_t idlen = 0;
        while (idlen < ilen && p[idlen] != '_')
            idlen++;
        bool digits = idlen > 0 && ilen < sizeof(buf) &&
                      (idlen == ilen || idlen + 1 < ilen);
        for (size_t i = 0; i < ilen && digits; i++)
            digits = (p[i] >= '0' && p[i] <= '9') || i == idlen;
        if (!digits)
            return sh_errorf(err, SH_EINVAL,
                             "dependency: '%.*s' is not a job id (ID, or "
                             "ID_TASK for one task of an array)",
                             CUT(p, ilen, 32));
        memcpy(buf, p, ilen);
        buf[ilen] = '\0';
        errno = 0;
        unsigned long long id = strtoull(buf, NULL, 10);
        long task = idlen < ilen ? strtol(buf + idlen + 1, NULL, 10) : -1;
        if (errno || id == 0 || task > 1000000000L)
            return sh_errorf(err, SH_EINVAL, "dependency: '%s' is not a job id",
                             buf);
        if (add(v, n, kind, id, (int)task, err) < 0)
            return -1;
        p += ilen;
    }
    return 0;
}

int job_deps_parse(const char *text, struct job_dep **out, int *n,
                   struct sh_error *err)
{
    struct job_dep *v = NULL;
    int k = 0;
    *out = NULL;
    *n = 0;
    if (!text || !*text)
        return sh_errorf(err, SH_EINVAL, "dependency must not be empty");
    if (strlen(text) > JOB_DEPS_TEXT_MAX)
        return sh_errorf(err, SH_EINVAL, "dependency: longer than %d bytes",
                         JOB_DEPS_TEXT_MAX);
    if (strchr(text, '?'))
        return sh_errorf(err, SH_EINVAL,
                         "dependency: '?' (any of) is not supported; ',' "
                         "means all of");
    for (const char *p = text;;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || parse_item(p, len, &v, &k, err) < 0) {
            if (len == 0)
                sh_errorf(err, SH_EINVAL, "dependency: an empty item in '%.*s'",
                          UTF8_CUT(text, 64));
            free(v);
            return -1;
        }
        if (!p[len])
            break;
        p += len + 1;
    }
    *out = v;
    *n = k;
    return 0;
}

const char *job_deps_format(const struct job_dep *d, int n, char *buf,
                            size_t size)
{
    size_t o = 0;
    if (size)
        buf[0] = '\0';
    for (int i = 0; i < n && o < size; i++) {
        /* Runs of one kind share the kind: afterok:12:13. */
        if (i > 0 && d[i].kind == d[i - 1].kind &&
            d[i].kind != JOB_DEP_SINGLETON)
            o += (size_t)snprintf(buf + o, size - o, ":%llu",
                                  (unsigned long long)d[i].job);
        else if (d[i].kind == JOB_DEP_SINGLETON)
            o += (size_t)snprintf(buf + o, size - o, "%ssingleton",
                                  i ? "," : "");
        else
            o += (size_t)snprintf(buf + o, size - o, "%s%s:%llu", i ? "," : "",
                                  kind_names[d[i].kind],
                                  (unsigned long long)d[i].job);
        if (d[i].kind != JOB_DEP_SINGLETON && d[i].task >= 0 && o < size)
            o += (size_t)snprintf(buf + o, size - o, "_%d", d[i].task);
    }
    return buf;
}

enum job_dep_status job_dep_eval(enum job_dep_kind kind, enum job_state state,
                                 bool requeue)
{
    bool ended =
        job_state_is_terminal(state) &&
        !(requeue && (state == JOB_PREEMPTED || state == JOB_NODE_FAIL));
    if (!ended)
        return JOB_DEP_WAIT;
    bool ok = state == JOB_COMPLETED;
    switch (kind) {
    case JOB_DEP_AFTEROK:
        return ok ? JOB_DEP_MET : JOB_DEP_NEVER;
    case JOB_DEP_AFTERNOTOK:
        return ok ? JOB_DEP_NEVER : JOB_DEP_MET;
    case JOB_DEP_AFTERANY:
        return JOB_DEP_MET;
    case JOB_DEP_SINGLETON:
        break;
    }
    return JOB_DEP_MET;
}

enum job_dep_status job_dep_fold(enum job_dep_kind kind,
                                 enum job_dep_status acc,
                                 enum job_dep_status one, bool first)
{
    if (kind != JOB_DEP_AFTERNOTOK) {
        if (acc == JOB_DEP_NEVER || one == JOB_DEP_NEVER)
            return JOB_DEP_NEVER;
        return acc == JOB_DEP_WAIT || one == JOB_DEP_WAIT ? JOB_DEP_WAIT
                                                          : JOB_DEP_MET;
    }
    /* afternotok: acc holds NEVER while no task failed so far. */
    if (first)
        acc = JOB_DEP_NEVER;
    if (acc == JOB_DEP_WAIT || one == JOB_DEP_WAIT)
        return JOB_DEP_WAIT;
    return acc == JOB_DEP_MET || one == JOB_DEP_MET ? JOB_DEP_MET
                                                    : JOB_DEP_NEVER;
}
