/* SPDX-License-Identifier: Apache-2.0 */
/* Quotas, usage accounting and fair share.
 *
 * A project (and its team) holds quota entries per GPU model and/or for
 * "any" model. For a job on model m:
 *   - limits: every entry that applies (m's, and "any") must allow
 *     used + job <= limit, for the project and for its team;
 *   - guarantee: the most specific entry (m's, else "any") decides whether
 *     used + claimed + job <= guaranteed, for the project, or else for its
 *     team. Such a job is "in quota": it is admitted first and may reclaim
 *     borrowed GPUs by preemption. Others borrow idle GPUs.
 * While no project or team has any entry, quotas are off and every job is
 * in quota (plain fair share).
 *
 * Fair share: each project's usage decays with a half-life; its share is
 * its guarantee over all guarantees (equal shares when there are none). A
 * full pass scores each project fair_weight x (share - usage share).
 */
#include "sched/sched_int.h"

#include <math.h>

static bool limit_ok(const struct squota *q, const struct susage *u,
                     uint16_t m, int64_t units)
{
    if (m != SCHED_NONE16 && (q->has >> m & 1) && q->l[m] != SCHED_UNLIMITED &&
        u->used[m] + units > q->l[m])
        return false;
    if (q->has_any && q->l_any != SCHED_UNLIMITED &&
        u->used_total + units > q->l_any)
        return false;
    return true;
}

int64_t quota_guarantee(const struct squota *q, const struct susage *u,
                        uint16_t m, int64_t *used)
{
    if (m != SCHED_NONE16 && (q->has >> m & 1)) {
        *used = u->used[m] + u->claim[m];
        return q->g[m];
    }
    if (q->has_any) {
        *used = u->used_total + u->claim_total;
        return q->g_any;
    }
    *used = m != SCHED_NONE16 ? u->used[m] : u->used_total;
    return -1;
}

static bool in_guarantee(const struct squota *q, const struct susage *u,
                         uint16_t m, int64_t units)
{
    int64_t used;
    int64_t g = quota_guarantee(q, u, m, &used);
    return g >= 0 && used + units <= g;
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
    if ((q->has >> m) & 1)
        return u->used[m] - u->stopping[m] > q->g[m];
    if (q->has_any)
        return u->used_total - u->stopping_total > q->g_any;
    return u->used[m] - u->stopping[m] > 0;
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

void quota_claim(struct sched *s, uint32_t project, uint16_t m,
                 int64_t units, int sign)
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
    p->usage = p->usage * f +
               (double)p->running_units * hl / M_LN2 * (1.0 - f);
    p->usage_t = now;
}

static int64_t project_guarantee_sum(const struct sproject *p)
{
    int64_t g = p->q.has_any ? p->q.g_any : 0;
    for (int m = 0; m < SCHED_MODELS_MAX; m++) {
        if ((p->q.has >> m) & 1)
            g += p->q.g[m];
    }
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


/* Whether a project could still start some job within its (or its team's)
 * guarantee. Always true when quotas are off. */
bool quota_has_room(const struct sched *s, uint32_t pid)
{
    const struct sproject *p = &s->projects[pid];
    const struct squota *qs[2] = {&p->q, p->team != SCHED_NONE
                                             ? &s->teams[p->team].q
                                             : NULL};
    const struct susage *us[2] = {&p->u, p->team != SCHED_NONE
                                             ? &s->teams[p->team].u
                                             : NULL};
    if (!s->quotas_on)
        return true;
    for (int i = 0; i < 2; i++) {
        const struct squota *q = qs[i];
        const struct susage *u = us[i];
        if (!q)
            continue;
        if (q->has_any && u->used_total + u->claim_total < q->g_any)
            return true;
        for (uint64_t b = q->has; b; b &= b - 1) {
            int m = __builtin_ctzll(b);
            if (u->used[m] + u->claim[m] < q->g[m])
                return true;
        }
    }
    return false;
}
