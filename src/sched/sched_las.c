/* SPDX-License-Identifier: Apache-2.0 */
/* The least-attained-service rules: the LAS policy (SCHED_POLICY_LAS),
 * and the default policy's rules for checkpointable jobs (sched_las():
 * once one is added; only they have levels, las_leveled(), so the others
 * keep the fair-share order and are never LAS victims). After Tiresias's
 * discretised LAS: a job's attained service is the GPU time it has had
 * (GPUs x ms, over all its runs); its level is how many of the configured
 * thresholds that has reached. Pending jobs are ordered by priority class,
 * then level, then submit time (the default: fair share and age; sched.c's
 * queue order, sched_pass.c's merge), and a waiting job may preempt
 * running checkpointable jobs of a higher level once they have run a
 * quantum (sched_preempt.c). The rest is
 * the default policy's: backfill with reservations, quotas and reclaim.
 *
 * Starvation guard: a pending job of level > 0 that has waited since it
 * was queued longer than las_starve_factor x its run time so far, or than
 * las_starve_max_ms, goes back to level 0 (promotions happen in full
 * passes) and, once started, is not preempted by the LAS rule for the
 * first 1/factor of the time it waited (so a starving job makes
 * progress). Guarantees: the LAS rule never takes GPUs a project holds
 * within its guarantee for another project's job.
 *
 * Hold (aging for blocked gangs): a job of at least las_hold_gpus GPUs
 * that has waited at least las_hold_ms in all (since its submit time, its earlier runs not
 * counted) when it starts is not preempted by the LAS rule for the first
 * half of that wait in this run. The guard's protected run is a fraction
 * of the wait since the job was last queued; a big job preempted again
 * and again accumulates wait across its runs, and without the hold the
 * tail of big jobs' waits is twice FIFO's on Philly (doc/design/sim.md).
 * Protecting the whole run instead raised the average JCT by 2-5x under
 * heavier load; half the wait was the best of 1/1, 1/2 and 1/4. Holding
 * jobs of every size cost twice as much as holding the gangs of 8+ GPUs
 * under heavy load; small jobs rarely wait that long in LAS anyway.
 */
#include "sched/sched_int.h"

#include <errno.h>
#include <stdlib.h>

int64_t las_attained(const struct sched *s, const struct sjob *j, int64_t now)
{
    (void)s;
    if (j->state == SCHED_JOB_PENDING || now <= j->start)
        return j->attained;
    /* units per GPU-ms: a slice counts at its share of the GPU. */
    return j->attained +
           (int64_t)j->units * (now - j->start) / SCHED_UNITS_PER_GPU;
}

uint8_t las_level(const struct sched *s, int64_t attained)
{
    uint8_t l = 0;
    while (l < s->cfg.las_nthresholds && attained >= s->cfg.las_thresholds[l])
        l++;
    return l;
}

/* A running job's level at now, and until when it holds: the service
 * reaches threshold X at the first t with units x (t - start) / 840 >=
 * X - attained (integer division, as las_attained()). */
static void run_level(const struct sched *s, struct sjob *j, int64_t now)
{
    /* The default policy: a job that is not checkpointable has no level. */
    bool leveled = las_leveled(s, j);
    uint8_t l = leveled ? las_level(s, las_attained(s, j, now)) : 0;
    j->las_run_lvl = l;
    j->las_run_start = j->start;
    j->las_run_next = INT64_MAX;
    if (leveled && l < s->cfg.las_nthresholds && j->units > 0) {
        int64_t need =
            (s->cfg.las_thresholds[l] - j->attained) * SCHED_UNITS_PER_GPU;
        int64_t dt = (need + (int64_t)j->units - 1) / (int64_t)j->units;
        j->las_run_next = j->start + dt;
    }
}

/* When a pending job of level > 0 is promoted to level 0. */
static int64_t promote_at(const struct sched *s, const struct sjob *j)
{
    int64_t gpus = j->kind == SJOB_WHOLE
                       ? (j->nodes >= 1 ? (int64_t)j->nodes * j->gpus : j->gpus)
                       : 1;
    int64_t run = j->attained / (gpus > 0 ? gpus : 1);
    int64_t wait = s->cfg.las_starve_max_ms;
    if (s->cfg.las_starve_factor > 0 && run < wait / s->cfg.las_starve_factor)
        wait = s->cfg.las_starve_factor * run;
    return j->queued + wait;
}

void las_job_added(struct sched *s, struct sjob *j)
{
    j->las_lvl = 0;
    if (!sched_las(s) || !las_leveled(s, j))
        return;
    j->las_lvl = las_level(s, j->attained);
    if (j->las_lvl > 0) {
        int64_t t = promote_at(s, j);
        if (t < s->las_next_promote)
            s->las_next_promote = t;
    }
}

void las_job_started(const struct sched *s, struct sjob *j, int64_t now)
{
    if (!sched_las(s))
        return;
    /* Its level while it runs in this pass (now is no later than the
     * pass's time: its service so far is that of its earlier runs). */
    run_level(s, j, s->last_now);
    if (s->cfg.las_hold_ms <= 0 || j->units == 0)
        return;
    /* Its run time so far: GPU-ms over the GPUs (a slice at its share). */
    int64_t run = j->attained / j->units * SCHED_UNITS_PER_GPU +
                  j->attained % j->units * SCHED_UNITS_PER_GPU / j->units;
    int64_t waited = now - j->submit - run;
    if (j->units < (uint64_t)s->cfg.las_hold_gpus * SCHED_UNITS_PER_GPU)
        return;
    if (waited >= s->cfg.las_hold_ms && waited / 2 > j->las_guard_ms)
        j->las_guard_ms = waited / 2;
}

/* Promote the pending jobs the guard says are due; find the next. */
static void promote(struct sched *s, int64_t now)
{
    int64_t next = INT64_MAX;
    for (uint32_t i = 0; i < s->jobs_cap; i++) {
        struct sjob *j = &s->jobs[i];
        if (j->state != SCHED_JOB_PENDING || j->las_lvl == 0)
            continue;
        int64_t t = promote_at(s, j);
        if (t > now) {
            if (t < next)
                next = t;
            continue;
        }
        /* Its queue is sorted by level first: move it (marked unsorted,
         * sorted before the pass). */
        sched_queue_unlink(s, i);
        j->las_lvl = 0;
        /* Its next run is safe for a 1/factor of the time it waited. */
        j->las_guard_ms =
            (now - j->queued) /
            (s->cfg.las_starve_factor > 0 ? s->cfg.las_starve_factor : 4);
        sched_queue_insert(s, i);
    }
    s->las_next_promote = next;
}

/* Running job v's part in las_maxlvl at now (its level when the LAS rule
 * may preempt it, else 0) into its slot, with the time until which that
 * and its level hold. */
static void slot_update(struct sched *s, struct slas_slot *sl, struct sjob *v,
                        int64_t now)
{
    if (now >= v->las_run_next || v->las_run_start != v->start)
        run_level(s, v, now);
    uint8_t key = 0;
    sl->until = v->las_run_next;
    if (v->state == SCHED_JOB_RUNNING && v->ckpt) {
        int64_t wait = s->cfg.las_quantum_ms > v->las_guard_ms
                           ? s->cfg.las_quantum_ms
                           : v->las_guard_ms;
        if (now - v->start >= wait)
            key = v->las_run_lvl;
        else if (v->start + wait < sl->until)
            sl->until = v->start + wait;
    }
    if (key != sl->key)
        s->las_key_changes++;
    sl->key = key;
}

void las_pass_begin(struct sched *s, int64_t now, bool full)
{
    s->las_maxlvl = 0;
    if (!sched_las(s))
        return;
    if (full && now >= s->las_next_promote)
        promote(s, now);
    if (now < s->las_slots_now) { /* not seen at this time: every job */
        for (uint32_t i = 0; i < s->nrunning; i++)
            s->las_slots[i].until = INT64_MIN;
    }
    s->las_slots_now = now;
    struct slas_slot *slots = s->las_slots;
    uint8_t maxlvl = 0;
    for (uint32_t i = 0; i < s->nrunning; i++) {
        /* Every running job's level for the pass (victim_ok, the victims'
         * order): it does not change during a pass. A job is read only
         * when its level or its eligibility may have changed. */
        if (now >= slots[i].until)
            slot_update(s, &slots[i], &s->jobs[s->running[i]], now);
        if (slots[i].key > maxlvl)
            maxlvl = slots[i].key;
    }
    s->las_maxlvl = maxlvl;
}

bool las_victim_ok(const struct sched *s, const struct sjob *j,
                   const struct sjob *v, uint16_t m)
{
    int64_t now = s->last_now;
    if (!sched_las(s) || v->state != SCHED_JOB_RUNNING || !v->ckpt ||
        now - v->start < v->las_guard_ms || v->run_model != m ||
        now - v->start < s->cfg.las_quantum_ms || v->las_run_lvl <= j->las_lvl)
        return false;
    /* The job asking is within its guarantee (only those preempt); the
     * victim's GPUs go to another project only when it borrows them. */
    return !s->quotas_on || v->project == j->project ||
           quota_project_borrowing(s, v->project, m);
}

int sched_las_levels_parse(const char *spec, struct sched_config *cfg,
                           struct sh_error *err)
{
    int64_t v[SCHED_LAS_THRESHOLDS_MAX];
    int n = 0;
    const char *p = spec ? spec : "";
    for (;;) {
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        int64_t unit = 1000;
        if (*end == 's' || *end == 'm' || *end == 'h' || *end == 'd') {
            unit = *end == 's'   ? 1000
                   : *end == 'm' ? 60 * 1000
                   : *end == 'h' ? 3600 * 1000
                                 : INT64_C(86400) * 1000;
            end++;
        }
        if (end == p || *p == '-' || *p == '+' || errno || x <= 0 ||
            x > INT64_C(365) * 86400 * 1000 / unit ||
            (*end != ',' && *end != '\0'))
            return sh_errorf(err, SH_EINVAL,
                             "LAS levels must be GPU times such as 1h,10h "
                             "(at most 365 days each), not '%s'",
                             spec ? spec : "");
        if (n == SCHED_LAS_THRESHOLDS_MAX)
            return sh_errorf(err, SH_EINVAL, "at most %d LAS levels",
                             SCHED_LAS_THRESHOLDS_MAX);
        v[n] = (int64_t)x * unit;
        if (n > 0 && v[n] <= v[n - 1])
            return sh_errorf(err, SH_EINVAL,
                             "LAS levels must be ascending: '%s'", spec);
        n++;
        if (*end == '\0')
            break;
        p = end + 1;
    }
    cfg->las_nthresholds = n;
    for (int i = 0; i < n; i++)
        cfg->las_thresholds[i] = v[i];
    return 0;
}
