/* SPDX-License-Identifier: Apache-2.0 */
/* Tenants for a replay (`shoal sim --tenants FILE`): teams, projects and
 * users with their quotas and limits, so a replay can answer "which
 * quotas?" and exercise borrowing and reclaim. One directive per line, '#'
 * comments, GPU amounts in GPUs (fractions allowed):
 *   team NAME [guaranteed=[MODEL:]N,...] [limit=[MODEL:]N,...]
 *   project NAME [team=T] [guaranteed=...] [limit=...]
 *   user NAME [max_gpus=N] [max_jobs=N]
 * A bare N is "any model". Not here: anything the engine does not take.
 */
#include "sim/sim.h"

#include <stdlib.h>
#include <string.h>

#define TENANT_LINE_MAX 1024
#define TENANT_WORDS 16

struct tline {
    const char *file;
    int line;
};

static int terr(const struct tline *l, struct sh_error *err, const char *what,
                const char *value)
{
    return sh_errorf(err, SH_EINVAL, "%s:%d: %s%s%s%s", l->file, l->line, what,
                     value ? " '" : "", value ? value : "", value ? "'" : "");
}

static const char *arg(char **w, int n, const char *key)
{
    size_t k = strlen(key);
    for (int i = 2; i < n; i++) {
        if (strncmp(w[i], key, k) == 0 && w[i][k] == '=')
            return w[i] + k + 1;
    }
    return NULL;
}

/* "8", "0.5", "unlimited" -> units. */
static int amount(const char *s, int64_t *out)
{
    if (strcmp(s, "unlimited") == 0) {
        *out = SCHED_UNLIMITED;
        return 0;
    }
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0) || v > 1e9)
        return -1;
    *out = (int64_t)(v * SCHED_UNITS_PER_GPU + 0.5);
    return 0;
}

/* Merge guaranteed= and limit= lists into quota entries. names holds the
 * model strings (the entries point into it). */
static int quotas(const struct tline *l, const char *g, const char *lim,
                  struct sched_quota *q, int *nq, char names[][64],
                  struct sh_error *err)
{
    const char *lists[2] = {g, lim};
    *nq = 0;
    for (int which = 0; which < 2; which++) {
        char buf[TENANT_LINE_MAX];
        char *save = NULL;
        if (!lists[which])
            continue;
        snprintf(buf, sizeof(buf), "%s", lists[which]);
        for (char *t = strtok_r(buf, ",", &save); t;
             t = strtok_r(NULL, ",", &save)) {
            char *colon = strrchr(t, ':');
            const char *model = colon ? t : "any";
            if (colon)
                *colon = '\0';
            int k;
            for (k = 0; k < *nq && strcmp(names[k], model) != 0; k++)
                ;
            if (k == *nq) {
                if (*nq == SCHED_QUOTAS_MAX)
                    return terr(l, err, "too many quota entries", NULL);
                snprintf(names[k], 64, "%s", model);
                q[k].model = strcmp(model, "any") ? names[k] : NULL;
                q[k].guaranteed = 0;
                q[k].limit = SCHED_UNLIMITED;
                (*nq)++;
            }
            int64_t v;
            if (amount(colon ? colon + 1 : t, &v) < 0)
                return terr(l, err, "not a GPU amount:", colon ? colon + 1 : t);
            if (which == 0)
                q[k].guaranteed = v;
            else
                q[k].limit = v;
        }
    }
    return 0;
}

static int directive(struct sched *s, const struct tline *l, char **w, int n,
                     struct sh_error *err)
{
    struct sched_quota q[SCHED_QUOTAS_MAX];
    char names[SCHED_QUOTAS_MAX][64];
    int nq = 0, rc;
    if (n < 2)
        return terr(l, err, "a name is missing after", w[0]);
    if (strcmp(w[0], "user") == 0) {
        int64_t g = SCHED_UNLIMITED, j = 0;
        if (arg(w, n, "max_gpus") && amount(arg(w, n, "max_gpus"), &g) < 0)
            return terr(l, err, "not a GPU amount:", arg(w, n, "max_gpus"));
        if (arg(w, n, "max_jobs")) {
            char *end;
            j = strtol(arg(w, n, "max_jobs"), &end, 10);
            if (*end || j < 0 || j > 1000000)
                return terr(l, err, "not a job count:", arg(w, n, "max_jobs"));
        }
        rc = sched_user_set(s, w[1], g, (int)j, 0, err);
    } else if (strcmp(w[0], "team") == 0 || strcmp(w[0], "project") == 0) {
        if (quotas(l, arg(w, n, "guaranteed"), arg(w, n, "limit"), q, &nq,
                   names, err) < 0)
            return -1;
        rc = w[0][0] == 't'
                 ? sched_team_set(s, w[1], q, nq, err)
                 : sched_project_set(s, w[1], arg(w, n, "team"), q, nq, err);
    } else {
        return terr(l, err, "unknown directive (team, project, user):", w[0]);
    }
    if (rc < 0)
        return sh_error_prefix(err, "%s:%d: ", l->file, l->line);
    return 0;
}

int sim_tenants_apply(const char *text, const char *file, struct sched *s,
                      struct sh_error *err)
{
    struct tline l = {file, 0};
    const char *p = text;
    while (*p) {
        char line[TENANT_LINE_MAX];
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        l.line++;
        if (len >= sizeof(line))
            return terr(&l, err, "line too long", NULL);
        memcpy(line, p, len);
        line[len] = '\0';
        p = nl ? nl + 1 : p + len;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *w[TENANT_WORDS];
        int n = 0;
        char *save = NULL;
        for (char *t = strtok_r(line, " \t\r", &save); t;
             t = strtok_r(NULL, " \t\r", &save)) {
            if (n == TENANT_WORDS)
                return terr(&l, err, "too many words", NULL);
            w[n++] = t;
        }
        if (n > 0 && directive(s, &l, w, n, err) < 0)
            return -1;
    }
    return 0;
}
