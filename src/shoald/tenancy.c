/* SPDX-License-Identifier: Apache-2.0 */
/* Teams, projects, memberships and quotas (see tenancy.h). Hash tables
 * (uthash) kept sorted by name, so listings and the scheduler bridge see a
 * stable order. Fixed-size name and quota storage inside each entry: a
 * team or project is one allocation, and the quota model pointers point
 * into the entry itself (never copy an entry by assignment; qlist_copy()
 * fixes the pointers).
 */
#include "shoald/tenancy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lib/model/job.h"
#include "lib/util/utf8.h"
#include "shoald/auth.h"
#include "shoald/jobtab.h"
#include "shoald/volumes.h"
#include "store/store.h"

#define NAME_SIZE (JOB_IDENT_MAX + 1)

struct qlist {
    struct tenancy_quota e[TENANCY_QUOTAS_MAX];
    char model[TENANCY_QUOTAS_MAX][NAME_SIZE];
    int n;
};

struct member_entry {
    struct tenancy_member pub; /* first: a pub pointer is the entry */
    char user[NAME_SIZE];
    UT_hash_handle hh;
};

struct project_entry {
    struct tenancy_project pub; /* first */
    char name[NAME_SIZE];
    char team[NAME_SIZE];
    char idle_policy[16]; /* "" = the controller's default */
    struct qlist q;
    struct member_entry *members;
    UT_hash_handle hh;
};

struct team_entry {
    struct tenancy_team pub; /* first */
    char name[NAME_SIZE];
    struct qlist q;
    UT_hash_handle hh;
};

struct tenancy {
    struct team_entry *teams;
    struct project_entry *projects;
};

static const char *const role_names[] = {"none", "viewer", "member", "admin"};

/* ---- small helpers ---- */

const char *tenancy_role_name(enum tenancy_role role)
{
    if ((unsigned)role > TENANCY_ROLE_ADMIN)
        return "none";
    return role_names[role];
}

int tenancy_role_from_name(const char *name, enum tenancy_role *out)
{
    for (int i = 0; i <= TENANCY_ROLE_ADMIN; i++) {
        if (name && strcmp(name, role_names[i]) == 0) {
            *out = (enum tenancy_role)i;
            return 0;
        }
    }
    return -1;
}

static int name_check(const char *what, const char *name, struct sh_error *err)
{
    if (!name || !job_ident_valid(name))
        return sh_errorf(err, SH_EINVAL,
                         "%s name '%.*s' must be 1..%d letters, digits, '.', "
                         "'_' or '-', not starting with '.' or '-'",
                         what, UTF8_CUT(name ? name : "", 64), JOB_IDENT_MAX);
    return 0;
}

static const char *model_text(const char *model)
{
    return model ? model : "any model";
}

static bool same_model(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

/* "any" first, then models by name. */
static int quota_cmp(const void *pa, const void *pb)
{
    const struct tenancy_quota *a = pa, *b = pb;
    if (!a->model || !b->model)
        return (a->model != NULL) - (b->model != NULL);
    return strcmp(a->model, b->model);
}

/* Copy n entries (validated) into dst, sorted; dst owns its model text. */
static void qlist_set(struct qlist *dst, const struct tenancy_quota *q, int n)
{
    struct qlist tmp;
    memset(&tmp, 0, sizeof(tmp));
    for (int i = 0; i < n; i++) {
        tmp.e[i] = q[i];
        if (q[i].model) {
            snprintf(tmp.model[i], NAME_SIZE, "%s", q[i].model);
            tmp.e[i].model = tmp.model[i];
        }
    }
    tmp.n = n;
    qsort(tmp.e, (size_t)n, sizeof(tmp.e[0]), quota_cmp);
    /* Sorting moved the entries, not the text: repoint into dst. */
    memset(dst, 0, sizeof(*dst));
    for (int i = 0; i < n; i++) {
        dst->e[i] = tmp.e[i];
        if (tmp.e[i].model) {
            snprintf(dst->model[i], NAME_SIZE, "%s", tmp.e[i].model);
            dst->e[i].model = dst->model[i];
        }
    }
    dst->n = n;
}

static void team_sync(struct team_entry *te)
{
    te->pub.name = te->name;
    te->pub.quotas = te->q.e;
    te->pub.nquotas = te->q.n;
}

static void project_sync(struct project_entry *pe)
{
    pe->pub.name = pe->name;
    pe->pub.team = pe->team;
    pe->pub.idle_policy = pe->idle_policy[0] ? pe->idle_policy : NULL;
    pe->pub.quotas = pe->q.e;
    pe->pub.nquotas = pe->q.n;
    pe->pub.nmembers = (int)HASH_COUNT(pe->members);
}

static int team_name_cmp(struct team_entry *a, struct team_entry *b)
{
    return strcmp(a->name, b->name);
}

static int project_name_cmp(struct project_entry *a, struct project_entry *b)
{
    return strcmp(a->name, b->name);
}

static int member_name_cmp(struct member_entry *a, struct member_entry *b)
{
    return strcmp(a->user, b->user);
}

static struct team_entry *team_find(const struct tenancy *t, const char *name)
{
    struct team_entry *te = NULL;
    if (name)
        HASH_FIND_STR(t->teams, name, te);
    return te;
}

static struct project_entry *project_find(const struct tenancy *t,
                                          const char *name)
{
    struct project_entry *pe = NULL;
    if (name)
        HASH_FIND_STR(t->projects, name, pe);
    return pe;
}

static struct member_entry *member_find(const struct project_entry *pe,
                                        const char *user)
{
    struct member_entry *me = NULL;
    if (user)
        HASH_FIND_STR(pe->members, user, me);
    return me;
}

static void project_free(struct project_entry *pe)
{
    struct member_entry *me, *tmp;
    HASH_ITER (hh, pe->members, me, tmp) {
        HASH_DEL(pe->members, me);
        free(me);
    }
    free(pe);
}

static void clear_tables(struct tenancy *t)
{
    struct project_entry *pe, *ptmp;
    HASH_ITER (hh, t->projects, pe, ptmp) {
        HASH_DEL(t->projects, pe);
        project_free(pe);
    }
    struct team_entry *te, *ttmp;
    HASH_ITER (hh, t->teams, te, ttmp) {
        HASH_DEL(t->teams, te);
        free(te);
    }
}

/* ---- lifecycle ---- */

struct tenancy *tenancy_create(struct sh_error *err)
{
    struct tenancy *t = calloc(1, sizeof(*t));
    if (!t)
        sh_errorf(err, SH_EINTERNAL, "out of memory");
    return t;
}

void tenancy_destroy(struct tenancy *t)
{
    if (!t)
        return;
    int saved = errno;
    clear_tables(t);
    free(t);
    errno = saved;
}

/* ---- quota lists ---- */

int tenancy_quotas_validate(const struct tenancy_quota *q, int n,
                            const char *what, struct sh_error *err)
{
    if (n < 0 || n > TENANCY_QUOTAS_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "%s: at most %d quota entries (one per GPU model "
                         "and one for any model)",
                         what, TENANCY_QUOTAS_MAX);
    for (int i = 0; i < n; i++) {
        const char *m = model_text(q[i].model);
        if (q[i].model && !job_ident_valid(q[i].model))
            return sh_errorf(err, SH_EINVAL,
                             "%s: gpu_model '%.*s' must be 1..%d letters, "
                             "digits, '.', '_' or '-'",
                             what, UTF8_CUT(q[i].model, 64), JOB_IDENT_MAX);
        if (q[i].guaranteed < 0 || q[i].guaranteed > TENANCY_GPUS_MAX)
            return sh_errorf(err, SH_EINVAL,
                             "%s: guaranteed GPUs (%s) must be 0..%lld, not "
                             "%lld",
                             what, m, (long long)TENANCY_GPUS_MAX,
                             (long long)q[i].guaranteed);
        if (q[i].limit != TENANCY_UNLIMITED &&
            (q[i].limit < 0 || q[i].limit > TENANCY_GPUS_MAX))
            return sh_errorf(err, SH_EINVAL,
                             "%s: limit (%s) must be 0..%lld GPUs or none, "
                             "not %lld",
                             what, m, (long long)TENANCY_GPUS_MAX,
                             (long long)q[i].limit);
        if (q[i].limit != TENANCY_UNLIMITED && q[i].limit < q[i].guaranteed)
            return sh_errorf(
                err, SH_EINVAL,
                "%s: limit %lld (%s) is below the guaranteed %lld; "
                "the limit must be at least the guarantee",
                what, (long long)q[i].limit, m, (long long)q[i].guaranteed);
        for (int j = 0; j < i; j++) {
            if (same_model(q[i].model, q[j].model))
                return sh_errorf(err, SH_EINVAL, "%s: two quota entries for %s",
                                 what, m);
        }
    }
    return 0;
}

int tenancy_quota_apply(const struct tenancy_quota *cur, int n,
                        const struct tenancy_quota_change *chg,
                        struct tenancy_quota *out, int *nout,
                        struct sh_error *err)
{
    int at = -1;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (same_model(cur[i].model, chg->model)) {
            at = i;
            if (chg->remove)
                continue;
        }
        out[k++] = cur[i];
    }
    if (chg->remove) {
        if (at < 0)
            return sh_errorf(err, SH_ENOTFOUND,
                             "there is no quota entry for %s",
                             model_text(chg->model));
        *nout = k;
        return 0;
    }
    if (at < 0) {
        if (k >= TENANCY_QUOTAS_MAX)
            return sh_errorf(err, SH_EINVAL,
                             "at most %d quota entries (one per GPU model and "
                             "one for any model)",
                             TENANCY_QUOTAS_MAX);
        out[k] = (struct tenancy_quota){chg->model, 0, TENANCY_UNLIMITED};
        at = k++;
    }
    out[at].model = chg->model;
    if (chg->set_guaranteed)
        out[at].guaranteed = chg->guaranteed;
    if (chg->set_limit)
        out[at].limit = chg->limit;
    *nout = k;
    return 0;
}

json_t *tenancy_quotas_to_json(const struct tenancy_quota *q, int n)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++) {
        json_t *e = json_pack(
            "{s:s?, s:I, s:o}", "gpu_model", q[i].model, "guaranteed",
            (json_int_t)q[i].guaranteed, "limit",
            q[i].limit == TENANCY_UNLIMITED ? json_null()
                                            : json_integer(q[i].limit));
        /* "o" stole the limit value; append_new steals e. */
        if (!e || json_array_append_new(arr, e) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static int quota_entry_from_json(const json_t *v, struct tenancy_quota *q,
                                 struct sh_error *err)
{
    const char *key;
    const json_t *val;
    if (!json_is_object(v))
        return sh_errorf(err, SH_EINVAL,
                         "each quota entry must be an object {\"gpu_model\", "
                         "\"guaranteed\", \"limit\"}");
    *q = (struct tenancy_quota){NULL, 0, TENANCY_UNLIMITED};
    json_object_foreach ((json_t *)v, key, val) {
        if (strcmp(key, "gpu_model") == 0) {
            if (json_is_null(val))
                continue;
            if (!json_is_string(val))
                return sh_errorf(err, SH_EINVAL,
                                 "gpu_model must be a string or null (any)");
            q->model = json_string_value(val);
        } else if (strcmp(key, "guaranteed") == 0) {
            if (!json_is_integer(val))
                return sh_errorf(err, SH_EINVAL,
                                 "guaranteed must be a whole number of GPUs");
            q->guaranteed = json_integer_value(val);
        } else if (strcmp(key, "limit") == 0) {
            if (json_is_null(val))
                continue;
            if (!json_is_integer(val))
                return sh_errorf(err, SH_EINVAL,
                                 "limit must be a whole number of GPUs or null "
                                 "(none)");
            q->limit = json_integer_value(val);
            if (q->limit < 0)
                return sh_errorf(err, SH_EINVAL,
                                 "limit must be 0..%lld GPUs or null (none), "
                                 "not %lld",
                                 (long long)TENANCY_GPUS_MAX,
                                 (long long)q->limit);
        } else {
            return sh_errorf(err, SH_EINVAL,
                             "quota entry: unknown field '%.*s'",
                             UTF8_CUT(key, 64));
        }
    }
    return 0;
}

int tenancy_quotas_from_json(const json_t *v, struct tenancy_quota *out, int *n,
                             struct sh_error *err)
{
    if (!json_is_array(v))
        return sh_errorf(err, SH_EINVAL,
                         "quotas must be an array of {\"gpu_model\", "
                         "\"guaranteed\", \"limit\"} objects");
    if (json_array_size(v) > TENANCY_QUOTAS_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "at most %d quota entries (one per GPU model and one "
                         "for any model)",
                         TENANCY_QUOTAS_MAX);
    size_t i;
    const json_t *e;
    json_array_foreach ((json_t *)v, i, e) {
        if (quota_entry_from_json(e, &out[i], err) < 0)
            return -1;
    }
    *n = (int)json_array_size(v);
    return 0;
}

/* ---- team pools ---- */

/* A team's projects as they would be after a change. */
struct pview {
    const char *name;
    const struct tenancy_quota *q;
    int n;
};

/* The team entry a project entry is counted against: the same model, else
 * the team's "any" entry; -1 when none. */
static int pool_of(const struct tenancy_quota *tq, int tn, const char *model)
{
    int any = -1;
    for (int i = 0; i < tn; i++) {
        if (model && tq[i].model && strcmp(tq[i].model, model) == 0)
            return i;
        if (!tq[i].model)
            any = i;
    }
    return any;
}

/* Check that the projects' guarantees fit the team's pools. team_side says
 * which side changes, for the message and the code: the team (SH_ECONFLICT:
 * its projects stand in the way) or project focus (SH_EINVAL). */
static int pools_check(const char *team, const struct tenancy_quota *tq, int tn,
                       const struct pview *pv, int np, bool team_side,
                       const char *focus, struct sh_error *err)
{
    int64_t sum[TENANCY_QUOTAS_MAX] = {0};
    int64_t mine[TENANCY_QUOTAS_MAX] = {0};
    for (int p = 0; p < np; p++) {
        bool is_focus = focus && strcmp(pv[p].name, focus) == 0;
        for (int i = 0; i < pv[p].n; i++) {
            const struct tenancy_quota *e = &pv[p].q[i];
            if (e->guaranteed == 0)
                continue;
            int b = pool_of(tq, tn, e->model);
            if (b < 0) {
                if (team_side)
                    return sh_errorf(
                        err, SH_ECONFLICT,
                        "team %s would have no quota for %s, but its project "
                        "%s guarantees %lld GPUs of it; lower the project's "
                        "first",
                        team, model_text(e->model), pv[p].name,
                        (long long)e->guaranteed);
                return sh_errorf(
                    err, SH_EINVAL,
                    "project %s would guarantee %lld GPUs (%s), but team %s "
                    "guarantees 0 for it; give the team a quota first (shoal "
                    "team set-quota)",
                    pv[p].name, (long long)e->guaranteed, model_text(e->model),
                    team);
            }
            sum[b] += e->guaranteed;
            if (is_focus)
                mine[b] += e->guaranteed;
        }
    }
    for (int b = 0; b < tn; b++) {
        if (sum[b] <= tq[b].guaranteed)
            continue;
        if (team_side)
            return sh_errorf(err, SH_ECONFLICT,
                             "team %s would guarantee %lld GPUs (%s), but its "
                             "projects already guarantee %lld in total; lower "
                             "theirs first",
                             team, (long long)tq[b].guaranteed,
                             model_text(tq[b].model), (long long)sum[b]);
        return sh_errorf(
            err, SH_EINVAL,
            "project %s would guarantee %lld GPUs (%s), but team "
            "%s guarantees %lld and its other projects already "
            "hold %lld of them",
            focus ? focus : "?", (long long)mine[b], model_text(tq[b].model),
            team, (long long)tq[b].guaranteed, (long long)(sum[b] - mine[b]));
    }
    return 0;
}

/* Gather the team's projects into pv (caller frees), replacing project
 * subst (or adding it when absent from the team) with q/n; subst NULL for
 * none. A project named skip is left out (it leaves the team). */
static struct pview *team_view(const struct tenancy *t, const char *team,
                               const char *subst, const struct tenancy_quota *q,
                               int n, const char *skip, int *np)
{
    int cap = (int)HASH_COUNT(t->projects) + 1;
    struct pview *pv = calloc((size_t)cap, sizeof(*pv));
    if (!pv)
        return NULL;
    int k = 0;
    bool seen = false;
    for (struct project_entry *pe = t->projects; pe; pe = pe->hh.next) {
        if (strcmp(pe->team, team) != 0)
            continue;
        if (skip && strcmp(pe->name, skip) == 0)
            continue;
        pv[k].name = pe->name;
        pv[k].q = pe->q.e;
        pv[k].n = pe->q.n;
        if (subst && strcmp(pe->name, subst) == 0) {
            pv[k].q = q;
            pv[k].n = n;
            seen = true;
        }
        k++;
    }
    if (subst && !seen) {
        pv[k].name = subst;
        pv[k].q = q;
        pv[k].n = n;
        k++;
    }
    *np = k;
    return pv;
}

/* Check project's new entries q/n against team (the project may be new,
 * or moving in from another team). */
static int project_fits(const struct tenancy *t, const struct team_entry *te,
                        const char *project, const struct tenancy_quota *q,
                        int n, struct sh_error *err)
{
    int np;
    struct pview *pv = team_view(t, te->name, project, q, n, NULL, &np);
    if (!pv)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    int rc =
        pools_check(te->name, te->q.e, te->q.n, pv, np, false, project, err);
    free(pv);
    return rc;
}

/* ---- store records ---- */

static int put_team(struct store_batch *b, const struct team_entry *te,
                    struct sh_error *err)
{
    json_t *rec =
        json_pack("{s:I, s:o}", "created_ms", (json_int_t)te->pub.created_ms,
                  "quotas", tenancy_quotas_to_json(te->q.e, te->q.n));
    /* "o" stole the quota array (json_pack fails on a NULL one). */
    int rc = rec ? store_batch_put(b, "team", te->name, rec) : -1;
    json_decref(rec);
    if (rc < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

static int put_project(struct store_batch *b, const struct project_entry *pe,
                       struct sh_error *err)
{
    json_t *rec = json_pack("{s:s, s:I, s:o}", "team", pe->team, "created_ms",
                            (json_int_t)pe->pub.created_ms, "quotas",
                            tenancy_quotas_to_json(pe->q.e, pe->q.n));
    /* "o" stole the quota array. */
    if (rec && pe->idle_policy[0])
        json_object_set_new(rec, "idle_policy", json_string(pe->idle_policy));
    int rc = rec ? store_batch_put(b, "project", pe->name, rec) : -1;
    json_decref(rec);
    if (rc < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

static void member_key(const char *project, const char *user, char *buf,
                       size_t size)
{
    snprintf(buf, size, "%s/%s", project, user);
}

static int put_member(struct store_batch *b, const char *project,
                      const char *user, enum tenancy_role role,
                      struct sh_error *err)
{
    char key[2 * NAME_SIZE + 2];
    member_key(project, user, key, sizeof(key));
    json_t *rec = json_pack("{s:s, s:s, s:s}", "project", project, "user", user,
                            "role", tenancy_role_name(role));
    int rc = rec ? store_batch_put(b, "member", key, rec) : -1;
    json_decref(rec);
    if (rc < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

static int del_member(struct store_batch *b, const char *project,
                      const char *user, struct sh_error *err)
{
    char key[2 * NAME_SIZE + 2];
    member_key(project, user, key, sizeof(key));
    if (store_batch_del(b, "member", key) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

/* ---- adding entries to memory (no checks beyond allocation) ---- */

static struct team_entry *team_add(struct tenancy *t, const char *name,
                                   const struct tenancy_quota *q, int n,
                                   int64_t created_ms)
{
    struct team_entry *te = calloc(1, sizeof(*te));
    if (!te)
        return NULL;
    snprintf(te->name, NAME_SIZE, "%s", name);
    qlist_set(&te->q, q, n);
    te->pub.created_ms = created_ms;
    team_sync(te);
    HASH_ADD_STR(t->teams, name, te);
    return te;
}

static struct project_entry *project_add(struct tenancy *t, const char *name,
                                         const char *team,
                                         const struct tenancy_quota *q, int n,
                                         int64_t created_ms)
{
    struct project_entry *pe = calloc(1, sizeof(*pe));
    if (!pe)
        return NULL;
    snprintf(pe->name, NAME_SIZE, "%s", name);
    snprintf(pe->team, NAME_SIZE, "%s", team);
    qlist_set(&pe->q, q, n);
    pe->pub.created_ms = created_ms;
    project_sync(pe);
    HASH_ADD_STR(t->projects, name, pe);
    struct team_entry *te = team_find(t, team);
    if (te)
        te->pub.nprojects++;
    return pe;
}

static struct member_entry *member_add(struct project_entry *pe,
                                       const char *user, enum tenancy_role role)
{
    struct member_entry *me = calloc(1, sizeof(*me));
    if (!me)
        return NULL;
    snprintf(me->user, NAME_SIZE, "%s", user);
    me->pub.project = pe->name;
    me->pub.user = me->user;
    me->pub.role = role;
    HASH_ADD_STR(pe->members, user, me);
    project_sync(pe); /* the caller sorts the members */
    return me;
}

/* ---- loading ---- */

static int load_quotas(const char *what, const char *key, const json_t *v,
                       struct tenancy_quota *q, int *n, struct sh_error *err)
{
    char label[2 * NAME_SIZE];
    snprintf(label, sizeof(label), "%s %s", what, key);
    if (tenancy_quotas_from_json(v, q, n, err) < 0 ||
        tenancy_quotas_validate(q, *n, label, err) < 0)
        return sh_error_prefix(err, "%s %.*s: bad record: ", what,
                               UTF8_CUT(key, 64));
    return 0;
}

static int load_team(const char *key, const json_t *rec, void *arg,
                     struct sh_error *err)
{
    struct tenancy *t = arg;
    json_int_t created = 0;
    json_t *quotas = NULL;
    struct tenancy_quota q[TENANCY_QUOTAS_MAX];
    int n = 0;
    if (json_unpack((json_t *)rec, "{s:I, s:o}", "created_ms", &created,
                    "quotas", &quotas) < 0 ||
        !job_ident_valid(key))
        return sh_errorf(err, SH_EINTERNAL, "team %.*s: bad record",
                         UTF8_CUT(key, 64));
    if (load_quotas("team", key, quotas, q, &n, err) < 0)
        return -1;
    if (!team_add(t, key, q, n, created))
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

static int load_project(const char *key, const json_t *rec, void *arg,
                        struct sh_error *err)
{
    struct tenancy *t = arg;
    json_int_t created = 0;
    json_t *quotas = NULL;
    const char *team = NULL;
    struct tenancy_quota q[TENANCY_QUOTAS_MAX];
    int n = 0;
    const char *idle = NULL;
    if (json_unpack((json_t *)rec, "{s:s, s:I, s:o, s?s}", "team", &team,
                    "created_ms", &created, "quotas", &quotas, "idle_policy",
                    &idle) < 0 ||
        !job_ident_valid(key))
        return sh_errorf(err, SH_EINTERNAL, "project %.*s: bad record",
                         UTF8_CUT(key, 64));
    if (!team_find(t, team))
        return sh_errorf(err, SH_EINTERNAL,
                         "project %.*s: its team %.*s is not in the store",
                         UTF8_CUT(key, 64), UTF8_CUT(team, 64));
    if (load_quotas("project", key, quotas, q, &n, err) < 0)
        return -1;
    struct project_entry *pe = project_add(t, key, team, q, n, created);
    if (!pe)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    if (idle) {
        snprintf(pe->idle_policy, sizeof(pe->idle_policy), "%s", idle);
        project_sync(pe);
    }
    return 0;
}

static int load_member(const char *key, const json_t *rec, void *arg,
                       struct sh_error *err)
{
    struct tenancy *t = arg;
    const char *project = NULL, *user = NULL, *role = NULL;
    enum tenancy_role r;
    if (json_unpack((json_t *)rec, "{s:s, s:s, s:s}", "project", &project,
                    "user", &user, "role", &role) < 0 ||
        !job_ident_valid(user) || tenancy_role_from_name(role, &r) < 0 ||
        r == TENANCY_ROLE_NONE)
        return sh_errorf(err, SH_EINTERNAL, "member %.*s: bad record",
                         UTF8_CUT(key, 130));
    struct project_entry *pe = project_find(t, project);
    if (!pe)
        return sh_errorf(err, SH_EINTERNAL,
                         "member %.*s: project %.*s is not in the store",
                         UTF8_CUT(key, 130), UTF8_CUT(project, 64));
    if (member_find(pe, user))
        return sh_errorf(err, SH_EINTERNAL, "member %.*s twice",
                         UTF8_CUT(key, 130));
    if (!member_add(pe, user, r))
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

int tenancy_load(struct tenancy *t, struct store *st, struct sh_error *err)
{
    struct tenancy fresh;
    memset(&fresh, 0, sizeof(fresh));
    if (store_load_objects(st, "team", load_team, &fresh, err) < 0 ||
        store_load_objects(st, "project", load_project, &fresh, err) < 0 ||
        store_load_objects(st, "member", load_member, &fresh, err) < 0) {
        clear_tables(&fresh);
        return -1;
    }
    HASH_SRT(hh, fresh.teams, team_name_cmp);
    HASH_SRT(hh, fresh.projects, project_name_cmp);
    for (struct project_entry *pe = fresh.projects; pe; pe = pe->hh.next)
        HASH_SRT(hh, pe->members, member_name_cmp);
    clear_tables(t);
    *t = fresh;
    return 0;
}

/* ---- reading ---- */

const struct tenancy_team *tenancy_team_next(const struct tenancy *t,
                                             const struct tenancy_team *prev)
{
    const struct team_entry *te =
        prev ? ((const struct team_entry *)prev)->hh.next : t->teams;
    return te ? &te->pub : NULL;
}

const struct tenancy_team *tenancy_team_get(const struct tenancy *t,
                                            const char *name)
{
    const struct team_entry *te = team_find(t, name);
    return te ? &te->pub : NULL;
}

int tenancy_team_count(const struct tenancy *t)
{
    return (int)HASH_COUNT(t->teams);
}

const struct tenancy_project *
tenancy_project_next(const struct tenancy *t,
                     const struct tenancy_project *prev)
{
    const struct project_entry *pe =
        prev ? ((const struct project_entry *)prev)->hh.next : t->projects;
    return pe ? &pe->pub : NULL;
}

const struct tenancy_project *tenancy_project_get(const struct tenancy *t,
                                                  const char *name)
{
    const struct project_entry *pe = project_find(t, name);
    return pe ? &pe->pub : NULL;
}

bool tenancy_project_exists(const struct tenancy *t, const char *name)
{
    return project_find(t, name) != NULL;
}

int tenancy_project_count(const struct tenancy *t)
{
    return (int)HASH_COUNT(t->projects);
}

enum tenancy_role tenancy_role(const struct tenancy *t, const char *project,
                               const char *user)
{
    const struct project_entry *pe = project_find(t, project);
    const struct member_entry *me = pe ? member_find(pe, user) : NULL;
    return me ? me->pub.role : TENANCY_ROLE_NONE;
}

const struct tenancy_member *
tenancy_member_next(const struct tenancy *t, const char *project,
                    const struct tenancy_member *prev)
{
    if (prev) {
        const struct member_entry *me =
            ((const struct member_entry *)prev)->hh.next;
        return me ? &me->pub : NULL;
    }
    const struct project_entry *pe = project_find(t, project);
    return pe && pe->members ? &pe->members->pub : NULL;
}

/* ---- changes: teams ---- */

int tenancy_team_create(struct tenancy *t, struct store_batch *batch,
                        const char *name, const struct tenancy_quota *q, int n,
                        int64_t now_ms, struct sh_error *err)
{
    char what[NAME_SIZE + 8];
    if (name_check("team", name, err) < 0)
        return -1;
    snprintf(what, sizeof(what), "team %s", name);
    if (tenancy_quotas_validate(q, n, what, err) < 0)
        return -1;
    if (team_find(t, name))
        return sh_errorf(err, SH_ECONFLICT, "team %s already exists", name);
    if (HASH_COUNT(t->teams) >= TENANCY_TEAMS_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "there are already %d teams, the "
                         "most a cluster may have",
                         TENANCY_TEAMS_MAX);
    struct team_entry *te = team_add(t, name, q, n, now_ms);
    if (!te)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    if (put_team(batch, te, err) < 0) {
        HASH_DEL(t->teams, te);
        free(te);
        return -1;
    }
    HASH_SRT(hh, t->teams, team_name_cmp);
    return 0;
}

int tenancy_team_delete(struct tenancy *t, struct store_batch *batch,
                        const char *name, struct sh_error *err)
{
    struct team_entry *te = team_find(t, name);
    if (!te)
        return sh_errorf(err, SH_ENOTFOUND, "team %.*s does not exist",
                         UTF8_CUT(name ? name : "", 64));
    if (te->pub.nprojects > 0) {
        const struct project_entry *pe = t->projects;
        while (pe && strcmp(pe->team, name) != 0)
            pe = pe->hh.next;
        return sh_errorf(err, SH_ECONFLICT,
                         "team %s still holds %d project(s) (%s%s); delete or "
                         "move them first",
                         name, te->pub.nprojects, pe ? pe->name : "?",
                         te->pub.nprojects > 1 ? ", ..." : "");
    }
    if (store_batch_del(batch, "team", name) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    HASH_DEL(t->teams, te);
    free(te);
    return 0;
}

int tenancy_team_set_quotas(struct tenancy *t, struct store_batch *batch,
                            const char *name, const struct tenancy_quota *q,
                            int n, struct sh_error *err)
{
    char what[NAME_SIZE + 8];
    struct team_entry *te = team_find(t, name);
    if (!te)
        return sh_errorf(err, SH_ENOTFOUND, "team %.*s does not exist",
                         UTF8_CUT(name ? name : "", 64));
    snprintf(what, sizeof(what), "team %s", name);
    if (tenancy_quotas_validate(q, n, what, err) < 0)
        return -1;
    int np;
    struct pview *pv = team_view(t, name, NULL, NULL, 0, NULL, &np);
    if (!pv)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    int rc = pools_check(name, q, n, pv, np, true, NULL, err);
    free(pv);
    if (rc < 0)
        return -1;
    struct qlist old;
    qlist_set(&old, te->q.e, te->q.n);
    qlist_set(&te->q, q, n);
    team_sync(te);
    if (put_team(batch, te, err) < 0) {
        qlist_set(&te->q, old.e, old.n);
        team_sync(te);
        return -1;
    }
    return 0;
}

/* ---- changes: projects ---- */

int tenancy_project_create(struct tenancy *t, struct store_batch *batch,
                           const char *name, const char *team,
                           const struct tenancy_quota *q, int n, int64_t now_ms,
                           struct sh_error *err)
{
    char what[NAME_SIZE + 8];
    if (name_check("project", name, err) < 0)
        return -1;
    snprintf(what, sizeof(what), "project %s", name);
    if (tenancy_quotas_validate(q, n, what, err) < 0)
        return -1;
    if (project_find(t, name))
        return sh_errorf(err, SH_ECONFLICT, "project %s already exists", name);
    struct team_entry *te = team_find(t, team);
    if (!te)
        return sh_errorf(err, SH_ENOTFOUND, "team %.*s does not exist",
                         UTF8_CUT(team ? team : "", 64));
    if (HASH_COUNT(t->projects) >= TENANCY_PROJECTS_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "there are already %d projects, "
                         "the most a cluster may have",
                         TENANCY_PROJECTS_MAX);
    if (project_fits(t, te, name, q, n, err) < 0)
        return -1;
    struct project_entry *pe = project_add(t, name, team, q, n, now_ms);
    if (!pe)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    if (put_project(batch, pe, err) < 0) {
        HASH_DEL(t->projects, pe);
        te->pub.nprojects--;
        project_free(pe);
        return -1;
    }
    HASH_SRT(hh, t->projects, project_name_cmp);
    return 0;
}

int tenancy_project_delete(struct tenancy *t, struct store_batch *batch,
                           const char *name, struct sh_error *err)
{
    struct project_entry *pe = project_find(t, name);
    if (!pe)
        return sh_errorf(err, SH_ENOTFOUND, "project %.*s does not exist",
                         UTF8_CUT(name ? name : "", 64));
    for (struct member_entry *me = pe->members; me; me = me->hh.next) {
        if (del_member(batch, pe->name, me->user, err) < 0)
            return -1;
    }
    if (store_batch_del(batch, "project", name) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    struct team_entry *te = team_find(t, pe->team);
    if (te)
        te->pub.nprojects--;
    HASH_DEL(t->projects, pe);
    project_free(pe);
    return 0;
}

int tenancy_project_set_quotas(struct tenancy *t, struct store_batch *batch,
                               const char *name, const struct tenancy_quota *q,
                               int n, struct sh_error *err)
{
    char what[NAME_SIZE + 8];
    struct project_entry *pe = project_find(t, name);
    if (!pe)
        return sh_errorf(err, SH_ENOTFOUND, "project %.*s does not exist",
                         UTF8_CUT(name ? name : "", 64));
    snprintf(what, sizeof(what), "project %s", name);
    if (tenancy_quotas_validate(q, n, what, err) < 0)
        return -1;
    struct team_entry *te = team_find(t, pe->team);
    if (te && project_fits(t, te, name, q, n, err) < 0)
        return -1;
    struct qlist old;
    qlist_set(&old, pe->q.e, pe->q.n);
    qlist_set(&pe->q, q, n);
    project_sync(pe);
    if (put_project(batch, pe, err) < 0) {
        qlist_set(&pe->q, old.e, old.n);
        project_sync(pe);
        return -1;
    }
    return 0;
}

int tenancy_project_set_idle_policy(struct tenancy *t,
                                    struct store_batch *batch, const char *name,
                                    const char *policy, struct sh_error *err)
{
    static const char *const names[] = {"none", "warn", "cancel", "preempt",
                                        NULL};
    struct project_entry *pe = project_find(t, name);
    if (!pe)
        return sh_errorf(err, SH_ENOTFOUND, "project %.*s does not exist",
                         UTF8_CUT(name ? name : "", 64));
    bool known = policy == NULL;
    for (int i = 0; policy && names[i]; i++)
        known |= strcmp(policy, names[i]) == 0;
    if (!known)
        return sh_errorf(err, SH_EINVAL,
                         "idle_policy must be none, warn, cancel or preempt");
    char old[sizeof(pe->idle_policy)];
    snprintf(old, sizeof(old), "%s", pe->idle_policy);
    snprintf(pe->idle_policy, sizeof(pe->idle_policy), "%s",
             policy ? policy : "");
    if (put_project(batch, pe, err) < 0) {
        snprintf(pe->idle_policy, sizeof(pe->idle_policy), "%s", old);
        return -1;
    }
    project_sync(pe);
    return 0;
}

const char *tenancy_idle_policy(const struct tenancy *t, const char *project)
{
    const struct tenancy_project *p = tenancy_project_get(t, project);
    return p ? p->idle_policy : NULL;
}

int tenancy_project_set_team(struct tenancy *t, struct store_batch *batch,
                             const char *name, const char *team,
                             struct sh_error *err)
{
    struct project_entry *pe = project_find(t, name);
    if (!pe)
        return sh_errorf(err, SH_ENOTFOUND, "project %.*s does not exist",
                         UTF8_CUT(name ? name : "", 64));
    struct team_entry *to = team_find(t, team);
    if (!to)
        return sh_errorf(err, SH_ENOTFOUND, "team %.*s does not exist",
                         UTF8_CUT(team ? team : "", 64));
    if (strcmp(pe->team, team) == 0)
        return 0;
    if (project_fits(t, to, name, pe->q.e, pe->q.n, err) < 0)
        return -1;
    char old[NAME_SIZE];
    snprintf(old, sizeof(old), "%s", pe->team);
    snprintf(pe->team, NAME_SIZE, "%s", team);
    if (put_project(batch, pe, err) < 0) {
        snprintf(pe->team, NAME_SIZE, "%s", old);
        return -1;
    }
    struct team_entry *from = team_find(t, old);
    if (from)
        from->pub.nprojects--;
    to->pub.nprojects++;
    project_sync(pe);
    return 0;
}

/* ---- changes: members ---- */

int tenancy_member_set(struct tenancy *t, struct store_batch *batch,
                       const char *project, const char *user,
                       enum tenancy_role role, struct sh_error *err)
{
    if (name_check("user", user, err) < 0)
        return -1;
    if (role <= TENANCY_ROLE_NONE || role > TENANCY_ROLE_ADMIN)
        return sh_errorf(err, SH_EINVAL,
                         "role must be admin, member or viewer");
    struct project_entry *pe = project_find(t, project);
    if (!pe)
        return sh_errorf(err, SH_ENOTFOUND, "project %.*s does not exist",
                         UTF8_CUT(project ? project : "", 64));
    struct member_entry *me = member_find(pe, user);
    if (!me && HASH_COUNT(pe->members) >= TENANCY_MEMBERS_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "project %s already has %d members, the most a "
                         "project may have",
                         project, TENANCY_MEMBERS_MAX);
    if (put_member(batch, pe->name, user, role, err) < 0)
        return -1;
    if (me) {
        me->pub.role = role;
        return 0;
    }
    if (!member_add(pe, user, role))
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    HASH_SRT(hh, pe->members, member_name_cmp);
    return 0;
}

int tenancy_member_remove(struct tenancy *t, struct store_batch *batch,
                          const char *project, const char *user,
                          struct sh_error *err)
{
    struct project_entry *pe = project_find(t, project);
    if (!pe)
        return sh_errorf(err, SH_ENOTFOUND, "project %.*s does not exist",
                         UTF8_CUT(project ? project : "", 64));
    struct member_entry *me = member_find(pe, user);
    if (!me)
        return sh_errorf(err, SH_ENOTFOUND,
                         "user %.*s is not a member of project %s",
                         UTF8_CUT(user ? user : "", 64), project);
    if (del_member(batch, pe->name, me->user, err) < 0)
        return -1;
    HASH_DEL(pe->members, me);
    free(me);
    project_sync(pe);
    return 0;
}

int tenancy_user_forget(struct tenancy *t, struct store_batch *batch,
                        const char *user, struct sh_error *err)
{
    for (struct project_entry *pe = t->projects; pe; pe = pe->hh.next) {
        struct member_entry *me = member_find(pe, user);
        if (!me)
            continue;
        if (del_member(batch, pe->name, me->user, err) < 0)
            return -1;
        HASH_DEL(pe->members, me);
        free(me);
        project_sync(pe);
    }
    return 0;
}

int tenancy_init_defaults(struct tenancy *t, struct store_batch *batch,
                          int64_t now_ms, struct sh_error *err)
{
    if (!team_find(t, TENANCY_DEFAULT_TEAM) &&
        tenancy_team_create(t, batch, TENANCY_DEFAULT_TEAM, NULL, 0, now_ms,
                            err) < 0)
        return -1;
    if (!project_find(t, TENANCY_DEFAULT_PROJECT) &&
        tenancy_project_create(t, batch, TENANCY_DEFAULT_PROJECT,
                               TENANCY_DEFAULT_TEAM, NULL, 0, now_ms, err) < 0)
        return -1;
    return 0;
}

/* ---- invariants ---- */

/* Fill err and yield false, for tenancy_check_invariants(). */
#define BROKEN(...) (sh_errorf(err, SH_EINTERNAL, __VA_ARGS__), false)

bool tenancy_check_invariants(const struct tenancy *t, struct sh_error *err)
{
    for (const struct team_entry *te = t->teams; te; te = te->hh.next) {
        int count = 0;
        if (!job_ident_valid(te->name) || te->pub.name != te->name ||
            te->pub.quotas != te->q.e || te->pub.nquotas != te->q.n)
            return BROKEN("team %s: bad entry", te->name);
        if (tenancy_quotas_validate(te->q.e, te->q.n, te->name, err) < 0)
            return false;
        if (te->hh.next &&
            strcmp(te->name, ((struct team_entry *)te->hh.next)->name) >= 0)
            return BROKEN("teams out of order");
        int np;
        struct pview *pv = team_view(t, te->name, NULL, NULL, 0, NULL, &np);
        if (!pv)
            return BROKEN("out of memory");
        int rc =
            pools_check(te->name, te->q.e, te->q.n, pv, np, true, NULL, err);
        free(pv);
        count = np;
        if (rc < 0)
            return false;
        if (count != te->pub.nprojects)
            return BROKEN("team %s counts %d projects, holds %d", te->name,
                          te->pub.nprojects, count);
    }
    for (const struct project_entry *pe = t->projects; pe; pe = pe->hh.next) {
        if (!team_find(t, pe->team))
            return BROKEN("project %s: team %s is missing", pe->name, pe->team);
        if (pe->pub.nmembers != (int)HASH_COUNT(pe->members) ||
            pe->pub.quotas != pe->q.e || pe->pub.nquotas != pe->q.n)
            return BROKEN("project %s: bad entry", pe->name);
        if (tenancy_quotas_validate(pe->q.e, pe->q.n, pe->name, err) < 0)
            return false;
        if (pe->hh.next &&
            strcmp(pe->name, ((struct project_entry *)pe->hh.next)->name) >= 0)
            return BROKEN("projects out of order");
        for (const struct member_entry *me = pe->members; me;
             me = me->hh.next) {
            if (me->pub.role <= TENANCY_ROLE_NONE ||
                me->pub.role > TENANCY_ROLE_ADMIN ||
                me->pub.project != pe->name || !job_ident_valid(me->user))
                return BROKEN("project %s: bad member %s", pe->name, me->user);
        }
    }
    return true;
}

/* ---- removing a project or a user: the rules across tables ---- */

/* Jobs not yet finished (pending, running, or still releasing GPUs) that
 * match project or user (NULL = any). *first is one of their ids. */
static int active_jobs(struct shoald *d, const char *project, const char *user,
                       uint64_t *first)
{
    int n = 0;
    for (struct job *j = jobtab_next(d->jobs, NULL); j;
         j = jobtab_next(d->jobs, j)) {
        if (job_state_is_terminal(j->state) && !j->releasing)
            continue;
        if (project && strcmp(project, j->spec.project) != 0)
            continue;
        if (user && strcmp(user, j->spec.user) != 0)
            continue;
        if (n++ == 0)
            *first = j->id;
    }
    return n;
}

int tenancy_project_remove(struct shoald *d, const char *name,
                           struct sh_error *err)
{
    uint64_t first = 0;
    int n = active_jobs(d, name, NULL, &first);
    if (n > 0)
        return sh_errorf(
            err, SH_ECONFLICT,
            "project %s still has %d pending or running job(s) (e.g. "
            "job %llu); cancel them or wait for them to end first",
            name, n, (unsigned long long)first);
    const char *vol = NULL;
    int nvol = volumes_owned_by(d->volumes, name, &vol);
    if (nvol > 0)
        return sh_errorf(err, SH_ECONFLICT,
                         "project %s owns %d volume(s) (e.g. %s); delete them "
                         "first",
                         name, nvol, vol);
    if (auth_users_forget_project(d->auth, shoald_batch(d), name, err) < 0 ||
        tenancy_project_delete(d->tenancy, shoald_batch(d), name, err) < 0)
        return -1;
    return 0;
}

int tenancy_user_remove(struct shoald *d, const char *name,
                        struct sh_error *err)
{
    uint64_t first = 0;
    const struct auth_user *u = auth_user_get(d->auth, name);
    if (!u)
        return sh_errorf(err, SH_ENOTFOUND, "no user %s", name);
    int n = active_jobs(d, NULL, name, &first);
    if (n > 0)
        return sh_errorf(err, SH_ECONFLICT,
                         "user %s still has %d pending or running job(s) (e.g. "
                         "job %llu); cancel them first",
                         name, n, (unsigned long long)first);
    if (u->admin && !auth_admin_remains(d->auth, shoald_now_ms(d), name, NULL))
        return sh_errorf(err, SH_ECONFLICT,
                         "%s is the last cluster admin with a valid token; "
                         "deleting it would lock everyone out",
                         name);
    if (tenancy_user_forget(d->tenancy, shoald_batch(d), name, err) < 0 ||
        auth_user_delete(d->auth, shoald_batch(d), name, err) < 0)
        return -1;
    return 0;
}
