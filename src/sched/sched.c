/* SPDX-License-Identifier: Apache-2.0 */
/* The engine object: configuration, lifecycle, names, tenants (teams,
 * projects, users) and the job table with its pending queues. Placement,
 * passes, reservations and preemption live in their own files; this one
 * holds the bookkeeping every other file relies on.
 *
 * Pending queues: one per (project, priority class), each a doubly linked
 * list sorted by (submit, id) (the LAS policy: (level, submit, id)). The
 * pass merges them by priority class and
 * fair-share score (sched_pass.c). The FIFO policy uses one queue.
 */
#include "sched/sched_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOUR_MS (INT64_C(3600) * 1000)
#define DAY_MS (24 * HOUR_MS)

void sched_config_init(struct sched_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->policy = SCHED_POLICY_DEFAULT;
    cfg->fair_weight = 1000;
    cfg->age_weight = 10;
    cfg->usage_half_life_ms = 7 * DAY_MS;
    cfg->max_reservations = 1;
    cfg->default_time_limit_ms = 24 * HOUR_MS;
    cfg->preempt_grace_ms = 30 * 1000;
    cfg->full_pass_interval_ms = 60 * 1000;
    cfg->all_reasons = true;
    cfg->user_max_units = SCHED_UNLIMITED;
    cfg->user_max_jobs = 0;
    cfg->user_max_time_ms = 0;
    cfg->las_nthresholds = 2;
    cfg->las_thresholds[0] = HOUR_MS;
    cfg->las_thresholds[1] = 10 * HOUR_MS;
    cfg->las_starve_factor = 4;
    cfg->las_starve_max_ms = 2 * DAY_MS;
    cfg->las_hold_ms = 14 * DAY_MS;
    cfg->las_hold_gpus = 8;
    cfg->las_quantum_ms = 10 * 60 * 1000;
}

static const char *const policy_names[] = {"default", "fifo", "las"};

const char *sched_policy_name(enum sched_policy p)
{
    return (unsigned)p < sizeof(policy_names) / sizeof(policy_names[0])
               ? policy_names[p]
               : NULL;
}

int sched_policy_from_name(const char *name, enum sched_policy *p,
                           struct sh_error *err)
{
    for (size_t i = 0; name && i < sizeof(policy_names) / sizeof(*policy_names);
         i++) {
        if (strcmp(name, policy_names[i]) == 0) {
            *p = (enum sched_policy)i;
            return 0;
        }
    }
    return sh_errorf(err, SH_EINVAL,
                     "policy must be default, fifo or las, not '%s'",
                     name ? name : "");
}

static int config_validate(const struct sched_config *c, struct sh_error *err)
{
    if (!sched_policy_name(c->policy))
        return sh_errorf(err, SH_EINVAL, "policy must be default, fifo or las");
    if (c->las_nthresholds < 0 || c->las_nthresholds > SCHED_LAS_THRESHOLDS_MAX)
        return sh_errorf(err, SH_EINVAL, "las_nthresholds must be 0..%d",
                         SCHED_LAS_THRESHOLDS_MAX);
    for (int i = 0; i < c->las_nthresholds; i++) {
        if (c->las_thresholds[i] <= (i ? c->las_thresholds[i - 1] : 0))
            return sh_errorf(err, SH_EINVAL,
                             "las_thresholds must be > 0 and ascending");
    }
    if (c->las_starve_factor < 0 || c->las_starve_factor > 1000 ||
        c->las_starve_max_ms <= 0 || c->las_quantum_ms < 0)
        return sh_errorf(err, SH_EINVAL,
                         "las_starve_factor must be 0..1000, las_starve_max "
                         "> 0 and las_quantum >= 0");
    if (c->las_starve_max_ms > 365 * DAY_MS)
        return sh_errorf(err, SH_EINVAL, "las_starve_max must be <= 365 days");
    if (c->las_hold_ms < 0 || c->las_hold_ms > 365 * DAY_MS)
        return sh_errorf(err, SH_EINVAL, "las_hold must be 0..365 days");
    if (c->las_hold_gpus < 1 || c->las_hold_gpus > 65536)
        return sh_errorf(err, SH_EINVAL, "las_hold_gpus must be 1..65536");
    if (c->fair_weight < 0 || c->fair_weight > 1000000)
        return sh_errorf(err, SH_EINVAL, "fair_weight must be 0..1000000");
    if (c->age_weight < 0 || c->age_weight > 1000000)
        return sh_errorf(err, SH_EINVAL, "age_weight must be 0..1000000");
    if (c->short_credit_ms < 0 || c->short_credit_ms > 365 * DAY_MS)
        return sh_errorf(err, SH_EINVAL, "short_credit must be 0..365 days");
    if (c->usage_half_life_ms <= 0)
        return sh_errorf(err, SH_EINVAL, "usage_half_life must be > 0");
    if (c->max_reservations < 0 || c->max_reservations > 64)
        return sh_errorf(err, SH_EINVAL, "max_reservations must be 0..64");
    if (c->default_time_limit_ms <= 0)
        return sh_errorf(err, SH_EINVAL, "default_time_limit must be > 0");
    if (c->preempt_grace_ms < 0 || c->full_pass_interval_ms < 0)
        return sh_errorf(err, SH_EINVAL,
                         "preempt_grace and full_pass_interval must be >= 0");
    if (c->user_max_units < SCHED_UNLIMITED || c->user_max_jobs < 0 ||
        c->user_max_time_ms < 0)
        return sh_errorf(err, SH_EINVAL, "user limits must be >= 0");
    return 0;
}

int sched_grow(void **p, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    uint32_t ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    void *np = realloc(*p, ncap * size);
    if (!np)
        return -1;
    memset((char *)np + (size_t)*cap * size, 0, (size_t)(ncap - *cap) * size);
    *p = np;
    *cap = ncap;
    return 0;
}

struct sched *sched_create(const struct sched_config *cfg, struct sh_error *err)
{
    struct sched_config def;
    if (!cfg) {
        sched_config_init(&def);
        cfg = &def;
    }
    if (config_validate(cfg, err) < 0)
        return NULL;
    struct sched *s = calloc(1, sizeof(*s));
    if (!s)
        goto nomem;
    s->cfg = *cfg;
    s->las_slots_now = INT64_MAX; /* no pass yet */
    s->free_job = SCHED_NONE;
    s->fifo.head = s->fifo.tail = SCHED_NONE;
    s->cpu.head = s->cpu.tail = SCHED_NONE;
    s->dirty = true;
    s->memopts_dirty = true;
    s->epoch = 1; /* GPUs start with epoch 0: no reservation */
    s->resv_ids = calloc(65, sizeof(*s->resv_ids));
    s->resv_prev = calloc(65, sizeof(*s->resv_prev));
    if (!s->resv_ids || !s->resv_prev)
        goto nomem;
    if (sched_profile_intern(s, "shared", &s->shared_any) < 0)
        goto nomem;
    return s;
nomem:
    sched_destroy(s);
    sh_errorf(err, SH_EINTERNAL, "out of memory creating the engine");
    return NULL;
}

void sched_destroy(struct sched *s)
{
    if (!s)
        return;
    int saved = errno;
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        struct snode *nd = &s->nodes[n];
        for (int g = 0; g < nd->ngpus; g++)
            free(nd->gpus[g].slices);
        free(nd->gpus);
        free(nd->models);
        free(nd->nvl);
        free(nd->pf);
        node_labels_free(nd->labels, nd->nlabels);
    }
    free(s->nodes);
    for (uint32_t i = 0; i < s->ngroup_bits; i++)
        free(s->group_bits[i]);
    free(s->group_bits);
    for (uint32_t m = 0; m < s->model_names.n; m++)
        free(s->models[m].by_free);
    free(s->models);
    for (uint32_t p = 0; p < s->profile_names.n; p++)
        free(s->profiles[p].nodes);
    free(s->profiles);
    free(s->teams);
    free(s->projects);
    free(s->users);
    for (uint32_t j = 0; j < s->jobs_cap; j++) {
        if (s->jobs[j].state != SJOB_FREE) {
            free(s->jobs[j].place);
            filter_free(&s->jobs[j]);
        }
    }
    free(s->jobs);
    idmap_fini(&s->ids);
    free(s->running);
    free(s->by_end);
    free(s->cpu_running);
    free(s->cpu_order);
    free(s->cpu_times);
    free(s->las_slots);
    free(s->plan_buf);
    free(s->merge_heap);
    free(s->merge_rest);
    free(s->resv_ids);
    free(s->resv_prev);
    free(s->plan_est);
    free(s->plan_why);
    free(s->memopts);
    free(s->memopt_mem);
    free(s->scratch);
    free(s->scratch2);
    free(s->vc_entries);
    free(s->fresh);
    strtab_fini(&s->node_names);
    strtab_fini(&s->group_names);
    strtab_fini(&s->model_names);
    strtab_fini(&s->profile_names);
    strtab_fini(&s->project_names);
    strtab_fini(&s->team_names);
    strtab_fini(&s->user_names);
    free(s);
    errno = saved;
}

/* ------------------------------------------------------------ names */

static bool name_ok(const char *name)
{
    if (!name || !*name)
        return false;
    size_t len = strnlen(name, SCHED_NAME_MAX + 1);
    return len <= SCHED_NAME_MAX;
}

int sched_model_intern(struct sched *s, const char *name, uint16_t *id)
{
    uint32_t found = strtab_find(&s->model_names, name);
    if (found != SCHED_NONE) {
        *id = (uint16_t)found;
        return 0;
    }
    if (s->model_names.n >= SCHED_MODELS_MAX)
        return -1;
    uint32_t cap = s->model_names.n;
    uint32_t nid;
    void *p = s->models;
    if (sched_grow(&p, &cap, s->model_names.n + 1, sizeof(*s->models)) < 0)
        return -1;
    s->models = p;
    uint64_t *rows =
        calloc((size_t)(SCHED_KMAX + 1) * (s->nwords ? s->nwords : 1),
               sizeof(uint64_t));
    if (!rows)
        return -1;
    if (strtab_intern(&s->model_names, name, &nid) < 0) {
        free(rows);
        return -1;
    }
    memset(&s->models[nid], 0, sizeof(s->models[nid]));
    s->models[nid].by_free = rows;
    s->memopts_dirty = true;
    *id = (uint16_t)nid;
    return 0;
}

/* The next name of a gpu_type set ("A100-80GB|H100-80GB") into name;
 * *p moves past it. -1 for an empty or too long name. */
static int models_next(const char **p, char name[SCHED_NAME_MAX + 1])
{
    size_t n = strcspn(*p, "|");
    if (n == 0 || n > SCHED_NAME_MAX)
        return -1;
    memcpy(name, *p, n);
    name[n] = '\0';
    *p += n + ((*p)[n] == '|');
    return 0;
}

int sched_models_find(const struct sched *s, const char *gpu_type,
                      uint64_t *known, int *unknown)
{
    char name[SCHED_NAME_MAX + 1];
    const char *p = gpu_type;
    uint64_t mask = 0;
    int nnew = 0, count = 0;
    if (!*p || p[strlen(p) - 1] == '|')
        return -1;
    while (*p) {
        if (models_next(&p, name) < 0 || ++count > SCHED_MODELS_MAX)
            return -1;
        uint32_t m = strtab_find(&s->model_names, name);
        if (m == SCHED_NONE)
            nnew++;
        else
            mask |= UINT64_C(1) << m;
    }
    if (known)
        *known = mask;
    if (unknown)
        *unknown = nnew;
    return 0;
}

int sched_models_intern(struct sched *s, const char *gpu_type, uint64_t *mask)
{
    char name[SCHED_NAME_MAX + 1];
    const char *p = gpu_type;
    *mask = 0;
    while (*p) {
        uint16_t m;
        if (models_next(&p, name) < 0 || sched_model_intern(s, name, &m) < 0)
            return -1;
        *mask |= UINT64_C(1) << m;
    }
    return 0;
}

void sched_models_str(const struct sched *s, uint64_t mask, char *buf,
                      size_t size)
{
    size_t off = 0;
    buf[0] = '\0';
    for (uint64_t b = mask; b && off + 1 < size; b &= b - 1) {
        int w = snprintf(buf + off, size - off, "%s%s", off ? "|" : "",
                         s->model_names.names[__builtin_ctzll(b)]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

int sched_profile_intern(struct sched *s, const char *name, uint16_t *id)
{
    uint32_t found = strtab_find(&s->profile_names, name);
    if (found != SCHED_NONE) {
        *id = (uint16_t)found;
        return 0;
    }
    if (s->profile_names.n >= SCHED_PROFILES_MAX)
        return -1;
    uint32_t cap = s->profile_names.n;
    uint32_t nid;
    void *p = s->profiles;
    if (sched_grow(&p, &cap, s->profile_names.n + 1, sizeof(*s->profiles)) < 0)
        return -1;
    s->profiles = p;
    uint64_t *bits = calloc(s->nwords ? s->nwords : 1, sizeof(uint64_t));
    if (!bits)
        return -1;
    if (strtab_intern(&s->profile_names, name, &nid) < 0) {
        free(bits);
        return -1;
    }
    memset(&s->profiles[nid], 0, sizeof(s->profiles[nid]));
    s->profiles[nid].nodes = bits;
    s->memopts_dirty = true;
    *id = (uint16_t)nid;
    return 0;
}

static int team_intern(struct sched *s, const char *name, uint32_t *id)
{
    uint32_t found = strtab_find(&s->team_names, name);
    if (found != SCHED_NONE) {
        *id = found;
        return 0;
    }
    uint32_t cap = s->team_names.n;
    void *p = s->teams;
    if (sched_grow(&p, &cap, s->team_names.n + 1, sizeof(*s->teams)) < 0)
        return -1;
    s->teams = p;
    if (strtab_intern(&s->team_names, name, id) < 0)
        return -1;
    memset(&s->teams[*id], 0, sizeof(s->teams[*id]));
    return 0;
}

int sched_project_intern(struct sched *s, const char *name, uint32_t *id)
{
    uint32_t found = strtab_find(&s->project_names, name);
    if (found != SCHED_NONE) {
        *id = found;
        return 0;
    }
    uint32_t cap = s->project_names.n;
    void *p = s->projects;
    if (sched_grow(&p, &cap, s->project_names.n + 1, sizeof(*s->projects)) < 0)
        return -1;
    s->projects = p;
    if (strtab_intern(&s->project_names, name, id) < 0)
        return -1;
    struct sproject *pr = &s->projects[*id];
    memset(pr, 0, sizeof(*pr));
    pr->team = SCHED_NONE;
    pr->usage_t = s->last_now;
    for (int c = 0; c < JOB_PRIO_COUNT; c++) {
        for (int k = 0; k < SCHED_CLASSES; k++)
            pr->queues[c][k].head = pr->queues[c][k].tail = SCHED_NONE;
    }
    s->dirty = true; /* its fair-share score is computed by a full pass */
    return 0;
}

int sched_user_intern(struct sched *s, const char *name, uint32_t *id)
{
    uint32_t found = strtab_find(&s->user_names, name);
    if (found != SCHED_NONE) {
        *id = found;
        return 0;
    }
    uint32_t cap = s->user_names.n;
    void *p = s->users;
    if (sched_grow(&p, &cap, s->user_names.n + 1, sizeof(*s->users)) < 0)
        return -1;
    s->users = p;
    if (strtab_intern(&s->user_names, name, id) < 0)
        return -1;
    struct suser *u = &s->users[*id];
    memset(u, 0, sizeof(*u));
    u->max_units = s->cfg.user_max_units;
    u->max_jobs = s->cfg.user_max_jobs;
    u->max_time_ms = s->cfg.user_max_time_ms;
    return 0;
}

/* ----------------------------------------------------------- tenants */

static int quota_build(struct sched *s, const struct sched_quota *q, int n,
                       struct squota *out, struct sh_error *err)
{
    memset(out, 0, sizeof(*out));
    if (n < 0 || n > SCHED_QUOTAS_MAX)
        return sh_errorf(err, SH_EINVAL, "quota entries must be 0..%d",
                         SCHED_QUOTAS_MAX);
    if (n > 0 && !q)
        return sh_errorf(err, SH_EINVAL, "quota entries missing");
    /* Validate everything before interning any model name. */
    int new_models = 0;
    for (int i = 0; i < n; i++) {
        if (q[i].guaranteed < 0)
            return sh_errorf(err, SH_EINVAL, "guaranteed must be >= 0");
        if (q[i].limit != SCHED_UNLIMITED && q[i].limit < q[i].guaranteed)
            return sh_errorf(err, SH_EINVAL,
                             "limit must be >= guaranteed or unlimited");
        if (q[i].model && !name_ok(q[i].model))
            return sh_errorf(err, SH_EINVAL,
                             "quota model name must be "
                             "1..%d bytes",
                             SCHED_NAME_MAX);
        for (int k = 0; k < i; k++) {
            bool same = (!q[i].model && !q[k].model) ||
                        (q[i].model && q[k].model &&
                         strcmp(q[i].model, q[k].model) == 0);
            if (same)
                return sh_errorf(err, SH_EINVAL, "two quota entries for %s",
                                 q[i].model ? q[i].model : "any model");
        }
        if (q[i].model &&
            strtab_find(&s->model_names, q[i].model) == SCHED_NONE)
            new_models++;
    }
    if (s->model_names.n + new_models > SCHED_MODELS_MAX)
        return sh_errorf(err, SH_ETOOLARGE, "at most %d GPU models",
                         SCHED_MODELS_MAX);
    for (int i = 0; i < n; i++) {
        if (!q[i].model) {
            out->has_any = true;
            out->g_any = q[i].guaranteed;
            out->l_any = q[i].limit;
            continue;
        }
        uint16_t m;
        if (sched_model_intern(s, q[i].model, &m) < 0)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
        out->has |= UINT64_C(1) << m;
        out->g[m] = q[i].guaranteed;
        out->l[m] = q[i].limit;
    }
    return 0;
}

int sched_team_set(struct sched *s, const char *team,
                   const struct sched_quota *q, int n, struct sh_error *err)
{
    struct squota built;
    uint32_t id;
    if (!name_ok(team))
        return sh_errorf(err, SH_EINVAL, "team name must be 1..%d bytes",
                         SCHED_NAME_MAX);
    if (quota_build(s, q, n, &built, err) < 0)
        return -1;
    if (team_intern(s, team, &id) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    s->teams[id].q = built;
    quota_refresh_on(s);
    quota_excuse(s);
    s->dirty = true;
    return 0;
}

/* Add (sign +1) or take away (-1) a project's usage from a team's. */
static void usage_move(struct susage *team, const struct susage *p, int sign)
{
    for (int m = 0; m < SCHED_MODELS_MAX; m++) {
        team->used[m] += sign * p->used[m];
        team->claim[m] += sign * p->claim[m];
        team->stopping[m] += sign * p->stopping[m];
    }
    team->used_total += sign * p->used_total;
    team->claim_total += sign * p->claim_total;
    team->stopping_total += sign * p->stopping_total;
}

int sched_project_set(struct sched *s, const char *project, const char *team,
                      const struct sched_quota *q, int n, struct sh_error *err)
{
    struct squota built;
    uint32_t id;
    uint32_t tid = SCHED_NONE;
    if (!name_ok(project))
        return sh_errorf(err, SH_EINVAL, "project name must be 1..%d bytes",
                         SCHED_NAME_MAX);
    if (team && !name_ok(team))
        return sh_errorf(err, SH_EINVAL, "team name must be 1..%d bytes",
                         SCHED_NAME_MAX);
    if (quota_build(s, q, n, &built, err) < 0)
        return -1;
    if (team && team_intern(s, team, &tid) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    if (sched_project_intern(s, project, &id) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    struct sproject *p = &s->projects[id];
    if (p->team != tid) {
        /* The project's usage, claims and stopping units change team. */
        if (p->team != SCHED_NONE)
            usage_move(&s->teams[p->team].u, &p->u, -1);
        if (tid != SCHED_NONE)
            usage_move(&s->teams[tid].u, &p->u, +1);
    }
    p->team = tid;
    p->q = built;
    p->set = true;
    quota_refresh_on(s);
    quota_excuse(s);
    s->dirty = true;
    return 0;
}

int sched_user_set(struct sched *s, const char *user, int64_t max_units,
                   int max_jobs, int64_t max_time_ms, struct sh_error *err)
{
    uint32_t id;
    if (!name_ok(user))
        return sh_errorf(err, SH_EINVAL, "user name must be 1..%d bytes",
                         SCHED_NAME_MAX);
    if (max_units < SCHED_UNLIMITED || max_jobs < 0 || max_time_ms < 0)
        return sh_errorf(err, SH_EINVAL, "user limits must be >= 0");
    if (sched_user_intern(s, user, &id) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    s->users[id].max_units = max_units;
    s->users[id].max_jobs = max_jobs;
    s->users[id].max_time_ms = max_time_ms;
    s->users[id].own = true;
    quota_excuse(s);
    s->dirty = true;
    return 0;
}

int sched_usage_seed(struct sched *s, const char *project, double unit_ms,
                     int64_t at_ms, struct sh_error *err)
{
    uint32_t id;
    if (!name_ok(project))
        return sh_errorf(err, SH_EINVAL, "project name must be 1..%d bytes",
                         SCHED_NAME_MAX);
    if (!(unit_ms >= 0))
        return sh_errorf(err, SH_EINVAL, "usage must be >= 0");
    if (sched_project_intern(s, project, &id) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    struct sproject *p = &s->projects[id];
    if (at_ms > p->usage_t)
        usage_advance(s, id, at_ms);
    double age = (double)(p->usage_t - at_ms);
    p->usage += unit_ms * exp2(-age / (double)s->cfg.usage_half_life_ms);
    s->dirty = true;
    return 0;
}

/* -------------------------------------------------------------- jobs */

struct sjob *sched_job_get(const struct sched *s, uint64_t id)
{
    uint32_t j = idmap_get(&s->ids, id);
    return j == SCHED_NONE ? NULL : &s->jobs[j];
}

int64_t sched_job_duration(const struct sched *s, const struct sjob *j)
{
    return j->limit > 0 ? j->limit : s->cfg.default_time_limit_ms;
}

struct squeue *sched_job_queue(struct sched *s, const struct sjob *j)
{
    if (s->cfg.policy == SCHED_POLICY_FIFO)
        return &s->fifo;
    return &s->projects[j->project].queues[j->prio][sched_job_class(j)];
}

static bool job_before(const struct sjob *a, const struct sjob *b)
{
    if (a->las_lvl != b->las_lvl) /* 0 unless the LAS rules are on */
        return a->las_lvl < b->las_lvl;
    if (a->submit != b->submit)
        return a->submit < b->submit;
    return a->id < b->id;
}

/* Append j to its queue. Jobs usually arrive in submit order; one that
 * does not (a requeue, a rebuild in id order) is appended too and the queue
 * is marked unsorted, to be sorted once before the next pass: adding N jobs
 * in any order costs O(N log N), not O(N^2). */
void sched_queue_insert(struct sched *s, uint32_t j)
{
    struct squeue *q = sched_job_queue(s, &s->jobs[j]);
    struct sjob *job = &s->jobs[j];
    if (q->tail != SCHED_NONE && job_before(job, &s->jobs[q->tail]) &&
        !q->unsorted) {
        q->unsorted = true;
        s->nunsorted++;
    }
    if (s->cfg.policy != SCHED_POLICY_FIFO) {
        s->projects[job->project].npending++;
        s->projects[job->project].qmask |=
            UINT32_C(1) << (job->prio * SCHED_CLASSES + sched_job_class(job));
    }
    sched_list_append(s, q, j);
}

void sched_list_append(struct sched *s, struct squeue *q, uint32_t j)
{
    struct sjob *job = &s->jobs[j];
    job->prev = q->tail;
    job->next = SCHED_NONE;
    if (q->tail == SCHED_NONE)
        q->head = j;
    else
        s->jobs[q->tail].next = j;
    q->tail = j;
    q->count++;
}

static int job_idx_cmp(const void *a, const void *b, void *arg)
{
    const struct sched *s = arg;
    const struct sjob *x = &s->jobs[*(const uint32_t *)a];
    const struct sjob *y = &s->jobs[*(const uint32_t *)b];
    if (x->las_lvl != y->las_lvl)
        return x->las_lvl < y->las_lvl ? -1 : 1;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* A queue is mostly in order (a few jobs appended out of it: requeues,
 * LAS promotions): the jobs in ascending order from the head stay, the
 * others are sorted and merged in. O(n + k log k) for k out of order;
 * the order is total (ids are unique), so the result is a full sort's. */
static int queue_sort(struct sched *s, struct squeue *q)
{
    uint32_t cap = q->count ? q->count : 1;
    uint32_t *v = malloc(sizeof(*v) * cap * 2);
    uint32_t n = 0, nrun = 0, nout = 0;
    if (!v)
        return -1;
    uint32_t *run = v + cap, *out = v;
    for (uint32_t j = q->head; j != SCHED_NONE; j = s->jobs[j].next) {
        if (nrun == 0 || job_before(&s->jobs[run[nrun - 1]], &s->jobs[j]))
            run[nrun++] = j;
        else
            out[nout++] = j;
    }
    qsort_r(out, nout, sizeof(*out), job_idx_cmp, s);
    /* Both runs to the back half (run[] is there), merged into the front. */
    memmove(v + cap + nrun, out, nout * sizeof(*out));
    out = v + cap + nrun;
    for (uint32_t a = 0, b = 0; a < nrun || b < nout;) {
        if (b == nout ||
            (a < nrun && job_before(&s->jobs[run[a]], &s->jobs[out[b]])))
            v[n++] = run[a++];
        else
            v[n++] = out[b++];
    }
    q->head = n ? v[0] : SCHED_NONE;
    q->tail = n ? v[n - 1] : SCHED_NONE;
    for (uint32_t i = 0; i < n; i++) {
        s->jobs[v[i]].prev = i ? v[i - 1] : SCHED_NONE;
        s->jobs[v[i]].next = i + 1 < n ? v[i + 1] : SCHED_NONE;
    }
    free(v);
    q->unsorted = false;
    return 0;
}

int sched_queues_sort(struct sched *s)
{
    if (s->nunsorted == 0)
        return 0;
    if (s->fifo.unsorted && queue_sort(s, &s->fifo) < 0)
        return -1;
    for (uint32_t p = 0; p < s->project_names.n; p++) {
        for (int c = 0; c < SCHED_NQUEUES; c++) {
            struct squeue *q =
                &s->projects[p].queues[c / SCHED_CLASSES][c % SCHED_CLASSES];
            if (q->unsorted && queue_sort(s, q) < 0)
                return -1;
        }
    }
    s->nunsorted = 0;
    return 0;
}

void sched_list_unlink(struct sched *s, struct squeue *q, uint32_t j)
{
    struct sjob *job = &s->jobs[j];
    if (job->prev == SCHED_NONE)
        q->head = job->next;
    else
        s->jobs[job->prev].next = job->next;
    if (job->next == SCHED_NONE)
        q->tail = job->prev;
    else
        s->jobs[job->next].prev = job->prev;
    job->next = job->prev = SCHED_NONE;
    q->count--;
}

void sched_queue_unlink(struct sched *s, uint32_t j)
{
    struct sjob *job = &s->jobs[j];
    struct squeue *q = sched_job_queue(s, job);
    sched_list_unlink(s, q, j);
    if (s->cfg.policy != SCHED_POLICY_FIFO) {
        s->projects[job->project].npending--;
        if (q->count == 0)
            s->projects[job->project].qmask &=
                ~(UINT32_C(1)
                  << (job->prio * SCHED_CLASSES + sched_job_class(job)));
    }
    if (q->count == 0 && q->unsorted) {
        q->unsorted = false;
        s->nunsorted--;
    }
}

static int desc_validate(const struct sched *s, const struct sched_job_desc *d,
                         struct sh_error *err)
{
    if (!name_ok(d->user))
        return sh_errorf(err, SH_EINVAL, "user must be 1..%d bytes",
                         SCHED_NAME_MAX);
    if (!name_ok(d->project))
        return sh_errorf(err, SH_EINVAL, "project must be 1..%d bytes",
                         SCHED_NAME_MAX);
    if ((unsigned)d->priority >= JOB_PRIO_COUNT)
        return sh_errorf(err, SH_EINVAL,
                         "priority must be high, normal or "
                         "low");
    if (d->gpu_type && !strchr(d->gpu_type, '|') && !name_ok(d->gpu_type))
        return sh_errorf(err, SH_EINVAL, "gpu_type must be 1..%d bytes",
                         SCHED_NAME_MAX);
    if (d->gpu_type && sched_models_find(s, d->gpu_type, NULL, NULL) < 0)
        return sh_errorf(err, SH_EINVAL,
                         "gpu_type must be 1..%d models of 1..%d bytes "
                         "separated by '|'",
                         SCHED_MODELS_MAX, SCHED_NAME_MAX);
    if (d->slice &&
        (!*d->slice || strnlen(d->slice, GPU_PROFILE_MAX) >= GPU_PROFILE_MAX))
        return sh_errorf(err, SH_EINVAL, "slice must be 1..%d bytes",
                         GPU_PROFILE_MAX - 1);
    if (d->time_limit_ms < 0)
        return sh_errorf(err, SH_EINVAL, "time_limit must be >= 0");
    if (d->attained_gpu_ms < 0 || d->queued_ms < 0)
        return sh_errorf(err, SH_EINVAL,
                         "attained_gpu_ms and queued_ms must be >= 0");
    if (d->nodes < 0 || d->nodes > JOB_NODES_MAX)
        return sh_errorf(err, SH_EINVAL, "nodes must be 0..%d", JOB_NODES_MAX);
    if (d->gpu_mem / (1024 * 1024) > UINT32_MAX)
        return sh_errorf(err, SH_EINVAL, "gpu_mem is too large");
    if (d->cpus < 0 || d->mem / (1024 * 1024) >= UINT32_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "cpus must be >= 0 and mem under 4 PiB");
    if (d->slice || d->flexible) {
        if (d->gpus != 1 || d->nodes > 1)
            return sh_errorf(err, SH_EINVAL,
                             "a %s job takes 1 GPU on 1 "
                             "node",
                             d->slice ? "slice" : "memory");
        if (d->slice && d->flexible)
            return sh_errorf(err, SH_EINVAL,
                             "slice and flexible memory "
                             "exclude each other");
        if (d->flexible && d->gpu_mem == 0)
            return sh_errorf(err, SH_EINVAL, "a memory job needs gpu_mem");
        return 0;
    }
    if (d->gpus == 0) /* a job without GPUs: nodes only */
        return 0;
    if (d->gpus < 1)
        return sh_errorf(err, SH_EINVAL, "gpus must be >= 0");
    if (d->nodes >= 1 && d->gpus > GPU_PER_NODE_MAX)
        return sh_errorf(err, SH_EINVAL, "gpus per node must be 1..%d",
                         GPU_PER_NODE_MAX);
    if (d->nodes == 0 && d->gpus > JOB_NODES_MAX * GPU_PER_NODE_MAX)
        return sh_errorf(err, SH_EINVAL, "gpus must be 1..%d",
                         JOB_NODES_MAX * GPU_PER_NODE_MAX);
    (void)s;
    return 0;
}

/* Take a free job slot and fill it from d (interning names). */
static int job_alloc(struct sched *s, const struct sched_job_desc *d,
                     uint32_t *out, struct sh_error *err)
{
    int new_models = 0;
    if (d->gpu_type)
        sched_models_find(s, d->gpu_type, NULL, &new_models);
    if (s->model_names.n + (uint32_t)new_models > SCHED_MODELS_MAX)
        return sh_errorf(err, SH_ETOOLARGE, "at most %d GPU models",
                         SCHED_MODELS_MAX);
    if (d->slice && strtab_find(&s->profile_names, d->slice) == SCHED_NONE &&
        s->profile_names.n >= SCHED_PROFILES_MAX)
        return sh_errorf(err, SH_ETOOLARGE, "at most %d slice profiles",
                         SCHED_PROFILES_MAX);
    uint32_t user, project;
    uint16_t profile = SCHED_NONE16;
    uint64_t models = 0;
    bool cpu = d->gpus == 0 && !d->slice && !d->flexible;
    if (sched_user_intern(s, d->user, &user) < 0 ||
        sched_project_intern(s, d->project, &project) < 0 ||
        (d->gpu_type && !cpu &&
         sched_models_intern(s, d->gpu_type, &models) < 0) ||
        (d->slice && sched_profile_intern(s, d->slice, &profile) < 0))
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    if (s->free_job == SCHED_NONE) {
        uint32_t old = s->jobs_cap;
        void *p = s->jobs;
        if (sched_grow(&p, &s->jobs_cap, old + 1, sizeof(*s->jobs)) < 0)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
        s->jobs = p;
        for (uint32_t i = s->jobs_cap; i-- > old;) {
            s->jobs[i].state = SJOB_FREE;
            s->jobs[i].next = s->free_job;
            s->free_job = i;
        }
    }
    uint32_t j = s->free_job;
    if (idmap_put(&s->ids, d->id, j) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    s->free_job = s->jobs[j].next;
    struct sjob *job = &s->jobs[j];
    memset(job, 0, sizeof(*job));
    job->id = d->id;
    job->submit = d->submit_ms;
    job->limit = d->time_limit_ms;
    job->user = user;
    job->project = project;
    job->models = models;
    job->model = sched_popcount64(models) == 1
                     ? (uint16_t)__builtin_ctzll(models)
                     : SCHED_NONE16;
    job->profile = profile;
    job->run_model = SCHED_NONE16;
    job->prio = (uint8_t)d->priority;
    job->ckpt = d->checkpointable;
    job->attained = d->attained_gpu_ms;
    job->queued = d->queued_ms ? d->queued_ms : d->submit_ms;
    job->mem_mib = (uint32_t)((d->gpu_mem + (1024 * 1024) - 1) / (1024 * 1024));
    job->host_cpus = (uint32_t)d->cpus;
    job->host_mem = (uint32_t)((d->mem + (1024 * 1024) - 1) / (1024 * 1024));
    job->kind = cpu           ? SJOB_CPU
                : d->slice    ? SJOB_SLICE
                : d->flexible ? SJOB_FLEX
                              : SJOB_WHOLE;
    job->gpus = (uint32_t)d->gpus;
    job->nodes = (uint16_t)(job->kind == SJOB_WHOLE ? d->nodes
                            : cpu && d->nodes > 1   ? d->nodes
                                                    : 1);
    job->next = job->prev = SCHED_NONE;
    if (filter_set(s, job, d) < 0) {
        idmap_del(&s->ids, d->id);
        job->state = SJOB_FREE;
        job->next = s->free_job;
        s->free_job = j;
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    /* The default policy: the first checkpointable GPU job, added or
     * recovered running (a rebuilt engine decides as the one before it),
     * turns the LAS rules on before las_job_added()/las_job_started(). */
    if (job->ckpt && !cpu && s->cfg.policy == SCHED_POLICY_DEFAULT)
        s->las_ckpt = true;
    *out = j;
    return 0;
}

static void job_free(struct sched *s, uint32_t j)
{
    struct sjob *job = &s->jobs[j];
    idmap_del(&s->ids, job->id);
    free(job->place);
    job->place = NULL;
    filter_free(job);
    job->state = SJOB_FREE;
    job->next = s->free_job;
    s->free_job = j;
}

int sched_job_add(struct sched *s, const struct sched_job_desc *d,
                  struct sh_error *err)
{
    uint32_t j;
    if (desc_validate(s, d, err) < 0)
        return -1;
    if (idmap_get(&s->ids, d->id) != SCHED_NONE)
        return sh_errorf(err, SH_ECONFLICT, "job %llu is already known",
                         (unsigned long long)d->id);
    if (job_alloc(s, d, &j, err) < 0)
        return -1;
    if (sched_job_cpu(&s->jobs[j])) {
        s->jobs[j].state = SCHED_JOB_PENDING;
        s->jobs[j].wait = SCHED_WAIT_NEW;
        cpu_queue_add(s, j);
        return 0;
    }
    if (s->nfresh == s->fresh_cap) {
        void *p = s->fresh;
        if (sched_grow(&p, &s->fresh_cap, s->nfresh + 1, sizeof(*s->fresh)) <
            0) {
            job_free(s, j);
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
        }
        s->fresh = p;
    }
    s->fresh[s->nfresh++] = d->id;
    s->jobs[j].state = SCHED_JOB_PENDING;
    s->jobs[j].wait = SCHED_WAIT_NEW;
    las_job_added(s, &s->jobs[j]);
    sched_pending_count(s, j, +1); /* sets lb, which picks the queue */
    sched_queue_insert(s, j);
    s->npending++;
    return 0;
}

/* The fewest GPUs a pending job needs on one node, for the pending-demand
 * counts: its per-node count, or for jobs whose node count the engine
 * picks, the smallest over the models present; 1 for memory jobs (they
 * may take a whole GPU); 0 for slice jobs. */
uint8_t sched_job_lb(const struct sched *s, const struct sjob *j)
{
    if (j->kind == SJOB_SLICE)
        return 0;
    if (j->kind == SJOB_FLEX)
        return 1;
    uint32_t lb = j->nodes >= 1 ? j->gpus : UINT32_MAX;
    for (uint32_t m = 0; m < s->model_names.n && j->nodes == 0; m++) {
        uint32_t nn, g;
        if (s->models[m].nnodes > 0 && job_shape(s, j, (uint16_t)m, &nn, &g) &&
            g < lb)
            lb = g;
    }
    if (lb == UINT32_MAX)
        lb = 1;
    return (uint8_t)(lb > SCHED_KMAX ? SCHED_KMAX : lb);
}

/* Quarter-octave buckets: the top bit and the two bits after it. */
uint32_t sched_dur_bucket(int64_t ms)
{
    if (ms < 4)
        return ms < 1 ? 0 : (uint32_t)ms - 1;
    int msb = 63 - __builtin_clzll((uint64_t)ms);
    uint32_t frac = (uint32_t)((uint64_t)ms >> (msb - 2)) & 3;
    uint32_t b = (uint32_t)msb * 4 + frac;
    return b < SCHED_DUR_BUCKETS ? b : SCHED_DUR_BUCKETS - 1;
}

/* The smallest run time of a bucket (a lower bound for its jobs). */
int64_t sched_dur_floor(uint32_t b)
{
    if (b < 8)
        return b < 3 ? (int64_t)b + 1 : 4;
    uint32_t msb = b / 4, frac = b % 4;
    return (int64_t)((4u + frac)) << (msb - 2);
}

/* The fewest nodes a job takes, as a class (1, 2, 3-4, 5-8, 9+). */
static uint8_t job_ncls(const struct sched *s, const struct sjob *j)
{
    uint32_t n = j->nodes;
    if (j->kind != SJOB_WHOLE) {
        n = 1;
    } else if (n == 0) {
        uint32_t per = 0;
        for (uint32_t m = 0; m < s->model_names.n; m++) {
            if (s->models[m].nnodes > 0 && (uint32_t)s->models[m].maxper > per)
                per = (uint32_t)s->models[m].maxper;
        }
        n = per ? (j->gpus + per - 1) / per : 1;
    }
    return (uint8_t)(n <= 1 ? 0 : n == 2 ? 1 : n <= 4 ? 2 : n <= 8 ? 3 : 4);
}

void sched_pending_count(struct sched *s, uint32_t j, int sign)
{
    struct sjob *job = &s->jobs[j];
    if (sign > 0) {
        job->lb = sched_job_lb(s, job);
        job->ncls = job_ncls(s, job);
    }
    s->pend_version++;
    if (job->lb > 0)
        s->pend_shape[job->lb][job->ncls] += (uint32_t)sign;
    s->pend_lb[job->lb] += (uint32_t)sign;
    if (job->lb > 0 && job->limit > 0) {
        uint32_t b = sched_dur_bucket(job->limit);
        s->pend_dur[b] += (uint32_t)sign;
        if (s->pend_dur[b])
            bits_set(s->pend_dur_bits, b);
        else
            bits_clear(s->pend_dur_bits, b);
    } else if (job->lb > 0)
        s->pend_default += (uint32_t)sign;
    if (job->kind == SJOB_FLEX)
        s->pend_flex += (uint32_t)sign;
    {
        int k = job->lb > 0;
        uint32_t bc = sched_dur_bucket((int64_t)job->host_cpus + 1);
        uint32_t bm = sched_dur_bucket((int64_t)job->host_mem + 1);
        s->pend_hcpu[k][bc] += (uint32_t)sign;
        s->pend_hmem[k][bm] += (uint32_t)sign;
        if (s->pend_hcpu[k][bc])
            bits_set(s->pend_hcpu_bits[k], bc);
        else
            bits_clear(s->pend_hcpu_bits[k], bc);
        if (s->pend_hmem[k][bm])
            bits_set(s->pend_hmem_bits[k], bm);
        else
            bits_clear(s->pend_hmem_bits[k], bm);
    }
}

int64_t sched_pend_host_min(const uint64_t *bits)
{
    for (uint32_t w = 0; w < SCHED_DUR_BUCKETS / 64; w++) {
        if (bits[w])
            return sched_dur_floor(w * 64 +
                                   (uint32_t)__builtin_ctzll(bits[w])) -
                   1;
    }
    return INT64_MAX;
}

/* Give back the claim a pending preemptor holds. */
static void claim_release(struct sched *s, uint32_t j)
{
    struct sjob *job = &s->jobs[j];
    if (job->victims == 0)
        return;
    quota_claim(s, job->project, job->run_model, job->units, -1);
    job->victims = 0;
    job->units = 0;
    job->run_model = SCHED_NONE16;
}

/* Room for more running jobs, taken before any change so that adding
 * them cannot fail half-way. */
int sched_running_reserve(struct sched *s, uint32_t more)
{
    void *a = s->running, *b = s->by_end;
    if (sched_grow(&a, &s->running_cap, s->nrunning + more,
                   sizeof(*s->running)) < 0)
        return -1;
    s->running = a;
    if (sched_grow(&b, &s->by_end_cap, s->nrunning + more, sizeof(*s->by_end)) <
        0)
        return -1;
    s->by_end = b;
    void *c = s->las_slots;
    if (sched_grow(&c, &s->las_slots_cap, s->nrunning + more,
                   sizeof(*s->las_slots)) < 0)
        return -1;
    s->las_slots = c;
    return 0;
}

static bool end_before(const struct sjob *a, const struct sjob *b)
{
    return a->est != b->est ? a->est < b->est : a->id < b->id;
}

/* First position in by_end not before job j (binary search). */
static uint32_t by_end_lower(const struct sched *s, uint32_t n,
                             const struct sjob *j)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (end_before(&s->jobs[s->by_end[mid]], j))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Keep by_end sorted: it holds exactly the jobs of running[] (call with
 * nrunning already counting j; capacity from sched_running_reserve()). */
void sched_by_end_insert(struct sched *s, uint32_t j)
{
    uint32_t n = s->nrunning - 1;
    uint32_t at = by_end_lower(s, n, &s->jobs[j]);
    memmove(&s->by_end[at + 1], &s->by_end[at], (n - at) * sizeof(uint32_t));
    s->by_end[at] = j;
}

/* Remove j (call before nrunning drops). */
void sched_by_end_remove(struct sched *s, uint32_t j)
{
    uint32_t n = s->nrunning;
    uint32_t at = by_end_lower(s, n, &s->jobs[j]);
    if (at < n && s->by_end[at] == j) {
        memmove(&s->by_end[at], &s->by_end[at + 1],
                (n - at - 1) * sizeof(uint32_t));
    }
}

/* Count j as running (capacity reserved). */
void sched_running_add(struct sched *s, uint32_t j)
{
    s->jobs[j].prev = s->nrunning;
    s->las_slots[s->nrunning] = (struct slas_slot){INT64_MIN, 0};
    s->running[s->nrunning++] = j;
    s->run_adds++;
    sched_by_end_insert(s, j);
}

static void running_remove(struct sched *s, uint32_t j)
{
    sched_by_end_remove(s, j);
    uint32_t slot = s->jobs[j].prev;
    uint32_t last = s->running[--s->nrunning];
    s->run_removes++;
    s->running[slot] = last;
    s->las_slots[slot] = s->las_slots[s->nrunning];
    s->jobs[last].prev = slot;
}

static void job_stop(struct sched *s, uint32_t j, int64_t now)
{
    struct sjob *job = &s->jobs[j];
    cpu_note_stop(s, job);
    if (sched_job_cpu(job)) {
        cpu_release(s, j);
        job_free(s, j);
        return;
    }
    if (job->state == SCHED_JOB_PREEMPTING) {
        struct sjob *f = sched_job_get(s, job->other);
        if (f && f->state == SCHED_JOB_PENDING && f->victims > 0) {
            if (--f->victims == 0) {
                f->victims = 1;
                claim_release(s, (uint32_t)(f - s->jobs));
            }
        }
        quota_stopping(s, j, -1);
    }
    if (now > s->projects[job->project].usage_t)
        usage_advance(s, job->project, now);
    node_release(s, j);
    quota_account(s, j, -1);
    running_remove(s, j);
    job_free(s, j);
}

int sched_job_remove(struct sched *s, uint64_t id, struct sh_error *err)
{
    uint32_t j = idmap_get(&s->ids, id);
    if (j == SCHED_NONE)
        return sh_errorf(err, SH_ENOTFOUND, "job %llu is not known",
                         (unsigned long long)id);
    if (s->jobs[j].state == SCHED_JOB_PENDING && sched_job_cpu(&s->jobs[j])) {
        cpu_queue_remove(s, j);
        job_free(s, j);
        return 0;
    }
    if (s->jobs[j].state == SCHED_JOB_PENDING) {
        claim_release(s, j);
        sched_queue_unlink(s, j);
        sched_pending_count(s, j, -1);
        s->npending--;
        job_free(s, j);
        return 0;
    }
    job_stop(s, j, s->last_now);
    return 0;
}

int sched_job_end(struct sched *s, uint64_t id, int64_t now,
                  struct sh_error *err)
{
    uint32_t j = idmap_get(&s->ids, id);
    if (j == SCHED_NONE)
        return sh_errorf(err, SH_ENOTFOUND, "job %llu is not known",
                         (unsigned long long)id);
    if (s->jobs[j].state == SCHED_JOB_PENDING)
        return sh_errorf(err, SH_ECONFLICT,
                         "job %llu is pending, not "
                         "running",
                         (unsigned long long)id);
    job_stop(s, j, now);
    return 0;
}

/* A job without GPUs found running: its nodes, one entry each (gpu -1). */
static int cpu_recover(struct sched *s, const struct sched_job_desc *d,
                       int64_t start_ms, struct splace *p, int n,
                       struct sh_error *err)
{
    uint32_t j;
    if (job_alloc(s, d, &j, err) < 0) {
        free(p);
        return -1;
    }
    if (cpu_hold(s, j, p, n, true) < 0) {
        free(p);
        job_free(s, j);
        return sh_errorf(err, SH_ECONFLICT,
                         "job %llu: its nodes are given twice, or memory "
                         "is short",
                         (unsigned long long)d->id);
    }
    node_mark_shared(s, j);
    struct sjob *job = &s->jobs[j];
    job->state = SCHED_JOB_RUNNING;
    job->start = start_ms;
    job->est = start_ms + sched_job_duration(s, job);
    quota_excuse(s);
    return 0;
}

int sched_job_recover(struct sched *s, const struct sched_job_desc *d,
                      int64_t start_ms, const struct sched_place *places, int n,
                      struct sh_error *err)
{
    uint32_t j;
    struct splace *p = NULL;
    if (desc_validate(s, d, err) < 0)
        return -1;
    if (idmap_get(&s->ids, d->id) != SCHED_NONE)
        return sh_errorf(err, SH_ECONFLICT, "job %llu is already known",
                         (unsigned long long)d->id);
    bool cpu = d->gpus == 0 && !d->slice && !d->flexible;
    if (n < 1 || n > (cpu ? JOB_NODES_MAX : JOB_NODES_MAX * GPU_PER_NODE_MAX) ||
        !places)
        return sh_errorf(err, SH_EINVAL, "a running job needs a placement");
    p = calloc((size_t)n, sizeof(*p));
    if (!p)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    for (int i = 0; i < n; i++) {
        uint32_t nd = places[i].node
                          ? strtab_find(&s->node_names, places[i].node)
                          : SCHED_NONE;
        if (nd == SCHED_NONE || !s->nodes[nd].present) {
            free(p);
            return sh_errorf(err, SH_ENOTFOUND,
                             "job %llu: node %s is not "
                             "known",
                             (unsigned long long)d->id,
                             places[i].node ? places[i].node : "(null)");
        }
        p[i].node = nd;
        p[i].gpu = (uint8_t)(places[i].gpu < 0 ? 255 : places[i].gpu);
        p[i].slice = (int8_t)(places[i].slice < -1 ? 127 : places[i].slice);
        if (cpu ? places[i].gpu >= 0 || places[i].slice != -1
                : places[i].gpu < 0 || places[i].gpu >= s->nodes[nd].ngpus ||
                      places[i].slice >= GPU_SLICES_MAX ||
                      places[i].slice < -1) {
            free(p);
            return sh_errorf(err, SH_EINVAL,
                             "job %llu: no GPU %d slice %d "
                             "on node %s%s",
                             (unsigned long long)d->id, places[i].gpu,
                             places[i].slice, places[i].node,
                             cpu ? " for a job without GPUs (gpu -1)" : "");
        }
    }
    if (cpu)
        return cpu_recover(s, d, start_ms, p, n, err);
    /* Room first: once node_hold() succeeds the job owns p, and only
     * job_free() may free it. */
    if (sched_running_reserve(s, 1) < 0) {
        free(p);
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    if (job_alloc(s, d, &j, err) < 0) {
        free(p);
        return -1;
    }
    if (node_hold(s, j, p, n) < 0) {
        free(p);
        job_free(s, j);
        return sh_errorf(err, SH_ECONFLICT,
                         "job %llu: its GPUs or slices "
                         "are not free",
                         (unsigned long long)d->id);
    }
    node_mark_shared(s, j);
    struct sjob *job = &s->jobs[j];
    job->state = SCHED_JOB_RUNNING;
    job->start = start_ms;
    las_job_started(s, job, start_ms);
    job->est = start_ms + sched_job_duration(s, job);
    sched_running_add(s, j);
    if (start_ms > s->projects[job->project].usage_t)
        usage_advance(s, job->project, start_ms);
    quota_account(s, j, +1);
    quota_excuse(s);
    return 0;
}

/* ------------------------------------------------------------ status */

int sched_job_status(const struct sched *s, uint64_t id,
                     struct sched_job_status *st, struct sh_error *err)
{
    const struct sjob *j = sched_job_get(s, id);
    if (!j)
        return sh_errorf(err, SH_ENOTFOUND, "job %llu is not known",
                         (unsigned long long)id);
    memset(st, 0, sizeof(*st));
    st->state = (enum sched_job_state)j->state;
    if (j->state == SCHED_JOB_PENDING && sched_job_cpu(j)) {
        /* No plan: the pass leaves its estimate, or says why none. */
        st->wait = (enum sched_wait)j->wait;
        st->est_start_ms = j->est;
        st->other_job = j->other;
        st->est_why = j->est > 0                        ? SCHED_EST_OK
                      : j->wait == SCHED_WAIT_USER_JOBS ? SCHED_EST_LIMITS
                      : j->wait == SCHED_WAIT_RESOURCES ? SCHED_EST_NO_ROOM
                                                        : SCHED_EST_STALE;
    } else if (j->state == SCHED_JOB_PENDING) {
        st->wait = (enum sched_wait)j->wait;
        st->est_start_ms = j->est;
        st->other_job = j->other;
        st->est_why = SCHED_EST_STALE;
        int64_t e;
        enum sched_est_why why;
        if (sched_plan_get(s, (uint32_t)(j - s->jobs), &e, &why)) {
            st->est_why = why;
            if (why == SCHED_EST_OK && st->est_start_ms == 0)
                st->est_start_ms = e;
        }
        if (st->est_start_ms > 0)
            st->est_why = SCHED_EST_OK;
    } else {
        st->start_ms = j->start;
        st->other_job = j->state == SCHED_JOB_PREEMPTING ? j->other : 0;
    }
    return 0;
}

int sched_job_placement(const struct sched *s, uint64_t id,
                        struct sched_place *out, int max)
{
    const struct sjob *j = sched_job_get(s, id);
    if (!j || j->state == SCHED_JOB_PENDING)
        return -1;
    for (int i = 0; i < j->nplace && i < max; i++) {
        out[i].node = s->node_names.names[j->place[i].node];
        out[i].gpu = sched_job_cpu(j) ? -1 : j->place[i].gpu;
        out[i].slice = j->place[i].slice;
    }
    return j->nplace;
}

void sched_stats_get(const struct sched *s, struct sched_stats *st)
{
    memset(st, 0, sizeof(*st));
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        if (!s->nodes[n].present)
            continue;
        st->nodes++;
        st->gpus += s->nodes[n].ngpus;
    }
    st->pending = s->npending + s->ncpu_pending;
    st->running = s->nrunning + s->ncpu_running;
    st->free_units = s->free_whole * SCHED_UNITS_PER_GPU;
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        const struct snode *nd = &s->nodes[n];
        if (!nd->indexed)
            continue;
        for (int g = 0; g < nd->ngpus; g++) {
            const struct sgpu *gp = &nd->gpus[g];
            if (!(gp->flags & SGPU_SLICED) || (gp->flags & SGPU_UNSCHED))
                continue;
            for (int k = 0; k < gp->nslices; k++) {
                if (gp->slices[k].job == SCHED_NONE)
                    st->free_units += gp->slices[k].units;
            }
        }
    }
    for (uint32_t p = 0; p < s->project_names.n; p++)
        st->used_units += s->projects[p].u.used_total;
    st->full_passes = s->full_passes;
    st->incremental_passes = s->incr_passes;
}
