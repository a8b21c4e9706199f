/* SPDX-License-Identifier: Apache-2.0 */
/* Quotas, usage accounting and fair share.
 *
 * A project (and its team) holds quota entries per GPU model and/or for
 * "any" model. For a job on model m:
 *   - limits: every entry that applies (m's, and "any") must allow
 *     used + job <= limit, for the project and for its team;
 *   - guarantee: every entry that applies must have room, used + claimed +
 *     job <= guaranteed ("160 GPUs guaranteed, of which 80 H100"), for the
 *     project, or else for its team; with no entry that applies there is no
 *     guarantee. Such a job is "in quota": it is admitted first and may
 *     reclaim borrowed GPUs by preemption. Others borrow idle GPUs, and are
 *     what preemption takes back (usage above a guarantee that applies).
 * While no project or team has any entry, quotas are off and every job is
 * in quota (plain fair share).
 *
 * Fair share: each project's usage decays with a half-life; its share is
 * its guarantee over all guarantees (equal shares when there are none). A
 * full pass scores each project fair_weight x (share - usage share).
 */
#include "sched/sched_int.h"

#include <math.h>

static bool limit_ok(const struct squota *q, const struct susage *u, uint16_t m,
                     int64_t units)
{
    if (m != SCHED_NONE16 && (q->has >> m & 1) && q->l[m] != SCHED_UNLIMITED &&
        u->used[m] + units > q->l[m])
        return false;
    if (q->has_any && q->l_any != SCHED_UNLIMITED &&
        u->used_total + units > q->l_any)
        return false;
    return true;
}

static bool in_guarantee(const struct squota *q, const struct susage *u,
                         uint16_t m, int64_t units)
{
    bool per_model = m != SCHED_NONE16 && ((q->has >> m) & 1);
    if (!per_model && !q->has_any)
        return false;
    if (per_model && u->used[m] + u->claim[m] + units > q->g[m])
        return false;
    if (q->has_any && u->used_total + u->claim_total + units > q->g_any)
        return false;
    return true;
}

enum qclass quota_class(const struct sched *s, uint32_t project, uint16_t m,
                        int64_t units)
{
    if (!s->quotas_on)
        return QC_IN;
    const struct sproject *p = &s->projects[project];
    const struct steam *t = p->team != SCHED_NONE ? &s->teams[p->team] : NULL;
    if (!limit_ok(&p->q, &p->u, m, units))
        return QC_PROJECT_LIMIT;
    if (t && !limit_ok(&t->q, &t->u, m, units))
        return QC_TEAM_LIMIT;
    if (in_guarantee(&p->q, &p->u, m, units))
        return QC_IN;
    if (t && in_guarantee(&t->q, &t->u, m, units))
        return QC_IN;
    return QC_BORROW;
}

/* Usage beyond the guarantee on model m, not counting jobs already told to
 * stop. No entry means a guarantee of 0. */
static bool over_guarantee(const struct squota *q, const struct susage *u,
                           uint16_t m)
{
    bool per_model = (q->has >> m) & 1;
    if (per_model && u->used[m] - u->stopping[m] > q->g[m])
        return true;
    if (q->has_any && u->used_total - u->stopping_total > q->g_any)
        return true;
    if (!per_model && !q->has_any)
        return u->used[m] - u->stopping[m] > 0;
    return false;
}

bool quota_project_borrowing(const struct sched *s, uint32_t p, uint16_t m)
{
    if (!s->quotas_on)
        return false;
    return over_guarantee(&s->projects[p].q, &s->projects[p].u, m);
}

bool quota_team_borrowing(const struct sched *s, uint32_t t, uint16_t m)
{
    if (t == SCHED_NONE)
        return true;
    return over_guarantee(&s->teams[t].q, &s->teams[t].u, m);
}

static void borrowing_update(struct sched *s, uint32_t pid)
{
    struct sproject *p = &s->projects[pid];
    bool b = false;
    if (s->quotas_on) {
        for (uint32_t m = 0; m < s->model_names.n && !b; m++) {
            if (p->u.used[m] > 0)
                b = over_guarantee(&p->q, &p->u, (uint16_t)m);
        }
    }
    if (b != p->borrowing) {
        p->borrowing = b;
        if (b)
            s->nborrowing++;
        else
            s->nborrowing--;
    }
}

void quota_refresh_on(struct sched *s)
{
    bool on = false;
    for (uint32_t i = 0; i < s->project_names.n && !on; i++)
        on = s->projects[i].q.has || s->projects[i].q.has_any;
    for (uint32_t i = 0; i < s->team_names.n && !on; i++)
        on = s->teams[i].q.has || s->teams[i].q.has_any;
    s->quotas_on = on;
    for (uint32_t i = 0; i < s->project_names.n; i++)
        borrowing_update(s, i);
}

static void usage_add(struct susage *u, uint16_t m, int64_t units)
{
    u->used[m] += units;
    u->used_total += units;
}

void quota_account(struct sched *s, uint32_t j, int sign)
{
    struct sjob *job = &s->jobs[j];
    struct sproject *p = &s->projects[job->project];
    int64_t units = (int64_t)job->units * sign;
    usage_add(&p->u, job->run_model, units);
    p->running_units += units;
    if (p->team != SCHED_NONE)
        usage_add(&s->teams[p->team].u, job->run_model, units);
    s->users[job->user].used_units += units;
    s->users[job->user].running += sign;
    if (sign < 0) {
        /* Back within the limits: no excuse any more. */
        struct suser *u = &s->users[job->user];
        u->over_ok = u->over_ok && !quota_user_within(u);
        p->over_ok = p->over_ok && !quota_within(&p->q, &p->u);
        if (p->team != SCHED_NONE) {
            struct steam *t = &s->teams[p->team];
            t->over_ok = t->over_ok && !quota_within(&t->q, &t->u);
        }
    }
    borrowing_update(s, job->project);
}

void quota_stopping(struct sched *s, uint32_t j, int sign)
{
    struct sjob *job = &s->jobs[j];
    struct sproject *p = &s->projects[job->project];
    int64_t units = (int64_t)job->units * sign;
    p->u.stopping[job->run_model] += units;
    p->u.stopping_total += units;
    if (p->team != SCHED_NONE) {
        s->teams[p->team].u.stopping[job->run_model] += units;
        s->teams[p->team].u.stopping_total += units;
    }
    borrowing_update(s, job->project);
}

void quota_claim(struct sched *s, uint32_t project, uint16_t m, int64_t units,
                 int sign)
{
    struct sproject *p = &s->projects[project];
    p->u.claim[m] += units * sign;
    p->u.claim_total += units * sign;
    if (p->team != SCHED_NONE) {
        s->teams[p->team].u.claim[m] += units * sign;
        s->teams[p->team].u.claim_total += units * sign;
    }
}

/* ------------------------------------------------------- fair share */

void usage_advance(struct sched *s, uint32_t pid, int64_t now)
{
    struct sproject *p = &s->projects[pid];
    int64_t dt = now - p->usage_t;
    if (dt <= 0)
        return;
    double hl = (double)s->cfg.usage_half_life_ms;
    double f = exp2(-(double)dt / hl);
    /* Integral of running_units decaying over [usage_t, now]. */
    p->usage = p->usage * f + (double)p->running_units * hl / M_LN2 * (1.0 - f);
    p->usage_t = now;
}

static int64_t project_guarantee_sum(const struct sproject *p)
{
    int64_t g = p->q.has_any ? p->q.g_any : 0;
    for (uint64_t b = p->q.has; b; b &= b - 1)
        g += p->q.g[__builtin_ctzll(b)];
    return g;
}

void usage_keys(struct sched *s, int64_t now)
{
    uint32_t np = s->project_names.n;
    double total = 0;
    int64_t gtotal = 0;
    for (uint32_t i = 0; i < np; i++) {
        usage_advance(s, i, now);
        total += s->projects[i].usage;
        gtotal += project_guarantee_sum(&s->projects[i]);
    }
    for (uint32_t i = 0; i < np; i++) {
        struct sproject *p = &s->projects[i];
        double share = gtotal > 0
                           ? (double)project_guarantee_sum(p) / (double)gtotal
                           : 1.0 / (double)np;
        double used = total > 0 ? p->usage / total : 0.0;
        int64_t distance_ppm = (int64_t)((share - used) * 1e6);
        p->key = s->cfg.fair_weight * distance_ppm;
    }
}

/* Whether a project could still start a job of at least units within its
 * (or its team's) guarantee on one of the given models. Always true when
 * quotas are off. */
bool quota_has_room(const struct sched *s, uint32_t pid, uint64_t models,
                    int64_t units)
{
    const struct sproject *p = &s->projects[pid];
    const struct steam *t = p->team != SCHED_NONE ? &s->teams[p->team] : NULL;
    if (!s->quotas_on)
        return true;
    for (uint32_t m = 0; m < s->model_names.n; m++) {
        if (!((models >> m) & 1) || s->models[m].nnodes == 0)
            continue;
        if (in_guarantee(&p->q, &p->u, (uint16_t)m, units) ||
            (t && in_guarantee(&t->q, &t->u, (uint16_t)m, units)))
            return true;
    }
    return false;
}

/* Usage within every limit of q. */
bool quota_within(const struct squota *q, const struct susage *u)
{
    for (uint64_t b = q->has; b; b &= b - 1) {
        int m = __builtin_ctzll(b);
        if (q->l[m] != SCHED_UNLIMITED && u->used[m] > q->l[m])
            return false;
    }
    return !q->has_any || q->l_any == SCHED_UNLIMITED ||
           u->used_total <= q->l_any;
}

bool quota_user_within(const struct suser *u)
{
    return (u->max_units == SCHED_UNLIMITED || u->used_units <= u->max_units) &&
           (u->max_jobs == 0 || u->running <= u->max_jobs);
}

/* After a limit changed or running jobs were recovered: whoever is above a
 * limit now is so by an admin's decision, not the engine's. The engine
 * never starts anything for them until they are back within. */
void quota_excuse(struct sched *s)
{
    for (uint32_t i = 0; i < s->project_names.n; i++) {
        struct sproject *p = &s->projects[i];
        p->over_ok = !quota_within(&p->q, &p->u);
    }
    for (uint32_t i = 0; i < s->team_names.n; i++) {
        struct steam *t = &s->teams[i];
        t->over_ok = !quota_within(&t->q, &t->u);
    }
    for (uint32_t i = 0; i < s->user_names.n; i++)
        s->users[i].over_ok = !quota_user_within(&s->users[i]);
}
