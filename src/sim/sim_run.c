/* SPDX-License-Identifier: Apache-2.0 */
/* The replay: a discrete-event loop around the real engine. Arrivals come
 * from the sorted trace; completions and the ends of preemption grace
 * periods from a binary min-heap keyed by (time, sequence), so equal times
 * keep their insertion order and a replay is deterministic. After all the
 * events of one instant, the engine runs once at that instant; its starts
 * schedule completions, its preemptions schedule stops. A preempted job is
 * requeued (re-added as pending, keeping its submit time) and reruns from
 * the start, or, when its project checkpoints (--resume), from the
 * progress it had when told to stop, after a restore cost. A job whose trace duration exceeds its time limit ends at the
 * limit (a timeout). A fraction of a GPU (gpus 0.25) runs on the smallest
 * slice profile of the cluster that holds it (frac_profile), or on one
 * whole GPU when no slice does.
 */
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/clock.h"
#include "lib/util/parse.h"

enum { EV_END = 1, EV_STOP };
enum { JS_WAITING = 0, JS_PENDING, JS_RUNNING, JS_DONE, JS_REJECTED };

struct ev {
    int64_t t;
    uint64_t seq;
    uint32_t job;
    uint32_t attempt;
    uint8_t kind;
};

struct heap {
    struct ev *v;
    size_t n;
    size_t cap;
    uint64_t seq;
};

static bool ev_before(const struct ev *a, const struct ev *b)
{
    return a->t != b->t ? a->t < b->t : a->seq < b->seq;
}

static int heap_push(struct heap *h, int64_t t, uint32_t job, uint32_t attempt,
                     uint8_t kind)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 1024;
        struct ev *v = realloc(h->v, cap * sizeof(*v));
        if (!v)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    struct ev e = {t, h->seq++, job, attempt, kind};
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!ev_before(&e, &h->v[parent]))
            break;
        h->v[i] = h->v[parent];
        i = parent;
    }
    h->v[i] = e;
    return 0;
}

static struct ev heap_pop(struct heap *h)
{
    struct ev top = h->v[0];
    struct ev last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const struct ev *best = &last;
        if (l < h->n && ev_before(&h->v[l], best)) {
            m = l;
            best = &h->v[l];
        }
        if (r < h->n && ev_before(&h->v[r], best))
            m = r;
        if (m == i)
            break;
        h->v[i] = h->v[m];
        i = m;
    }
    if (h->n > 0)
        h->v[i] = last;
    return top;
}

struct jstate {
    int64_t first_start; /* -1 until it starts */
    int64_t start;       /* current attempt */
    int64_t end;
    int64_t run_ms; /* all attempts */
    double gpu_ms;  /* GPU-milliseconds, all attempts */
    int64_t units;  /* current attempt */
    uint32_t attempt;
    uint8_t state;
    bool timeout;
    int64_t restore_ms; /* resumes with this cost; -1 = reruns from 0 */
    int64_t done_ms;    /* progress saved by checkpoints */
    int64_t overhead;   /* this attempt's restore time */
    int64_t ckpt_at;    /* told to stop at (the checkpoint); -1 */
    size_t nodes_at;    /* its current attempt's nodes in run.nodes */
    uint32_t nnodes;
};

struct run {
    const struct sim_cluster *c;
    const struct sim_trace *t;
    const struct sim_options *o;
    struct sched *s;
    struct heap h;
    struct jstate *js;
    struct sched_decisions dec;
    struct sim_result *r;
    /* The nodes of every attempt, in start order (jstate.nodes_at). */
    uint32_t *nodes;
    size_t nnodes, nodes_cap;
};

/* Append the distinct nodes of a start (places come grouped by node) to
 * x->nodes for job state st. */
static int note_nodes(struct run *x, struct jstate *st,
                      const struct sched_decisions *dec,
                      const struct sched_start *s)
{
    if (x->nnodes + (size_t)s->nplaces > x->nodes_cap) {
        size_t cap = x->nodes_cap ? x->nodes_cap * 2 : 4096;
        while (cap < x->nnodes + (size_t)s->nplaces)
            cap *= 2;
        uint32_t *v = realloc(x->nodes, cap * sizeof(*v));
        if (!v)
            return -1;
        x->nodes = v;
        x->nodes_cap = cap;
    }
    st->nodes_at = x->nnodes;
    st->nnodes = 0;
    for (int p = 0; p < s->nplaces; p++) {
        /* sim_cluster_apply() names node k "n%05d". */
        uint32_t n = (uint32_t)strtoul(
            dec->places[s->first + (size_t)p].node + 1, NULL, 10);
        if (st->nnodes == 0 || x->nodes[x->nnodes - 1] != n) {
            x->nodes[x->nnodes++] = n;
            st->nnodes++;
        }
    }
    return 0;
}

/* Whether a gpu_type (NULL: any; "A100-80GB|H100-80GB": any of them)
 * allows model. */
static bool model_allowed(const char *type, const char *model)
{
    size_t n = strlen(model);
    for (const char *p = type; p;) {
        size_t len = strcspn(p, "|");
        if (len == n && strncmp(p, model, n) == 0)
            return true;
        p = p[len] ? p + len + 1 : NULL;
    }
    return !type;
}

/* Whether slice a is a better home for a fraction than b: a smaller share
 * of its GPU, then less memory, then the name. */
static bool slice_before(const struct gpu_slice *a, const struct gpu_slice *b)
{
    int64_t x = (int64_t)a->share_num * b->share_den;
    int64_t y = (int64_t)b->share_num * a->share_den;
    if (x != y)
        return x < y;
    if (a->mem_bytes != b->mem_bytes)
        return a->mem_bytes < b->mem_bytes;
    return strcmp(a->profile, b->profile) < 0;
}

/* The slice profile a fraction of a GPU (ppm millionths) replays on: of
 * the cluster's slices on the job's models, the smallest share that holds
 * it (share >= the fraction). NULL when none does: one whole GPU. */
static const char *frac_profile(const struct sim_cluster *c, int32_t ppm,
                                const char *type)
{
    const struct gpu_slice *best = NULL;
    for (int pi = 0; pi < c->npools; pi++) {
        const struct sim_pool *p = &c->pools[pi];
        if (!model_allowed(type, p->model))
            continue;
        for (int k = 0; k < p->nslices; k++) {
            const struct gpu_slice *sl = &p->slices[k];
            if ((int64_t)sl->share_num * 1000000 < (int64_t)ppm * sl->share_den)
                continue;
            if (!best || slice_before(sl, best))
                best = sl;
        }
    }
    return best ? best->profile : NULL;
}

static void job_desc(const struct run *x, size_t i, struct sched_job_desc *d)
{
    const struct sim_job *j = &x->t->jobs[i];
    memset(d, 0, sizeof(*d));
    d->id = i + 1;
    d->user = x->t->names.names[j->user];
    d->project = x->t->names.names[j->project];
    d->priority = (enum job_priority)j->prio;
    d->nodes = j->nodes;
    d->gpus = j->nodes > 0 ? j->gpus / j->nodes : j->gpus;
    d->gpu_type = j->gpu_type >= 0 ? x->t->names.names[j->gpu_type] : NULL;
    d->slice = j->slice >= 0 ? x->t->names.names[j->slice] : NULL;
    if (j->frac_ppm > 0) {
        d->slice = frac_profile(x->c, j->frac_ppm, d->gpu_type);
        d->gpus = 1;
        d->nodes = d->slice ? 1 : j->nodes;
    }
    d->submit_ms = j->submit_ms;
    d->cpus = j->cpus;
    d->mem = j->mem;
    /* Jobs that checkpoint (--resume) may be preempted by LAS; the GPU
     * time of earlier attempts is the service they attained. */
    d->checkpointable = x->js[i].restore_ms >= 0;
    d->attained_gpu_ms = (int64_t)x->js[i].gpu_ms;
    d->time_limit_ms = j->limit_ms;
    if (d->time_limit_ms == 0 && x->o->exact_limits)
        d->time_limit_ms = j->duration_ms > 0 ? j->duration_ms : 1;
}

static int arrive(struct run *x, size_t i, struct sh_error *err)
{
    struct sched_job_desc d;
    job_desc(x, i, &d);
    if (sched_job_check(x->s, &d, NULL) < 0) {
        x->js[i].state = JS_REJECTED;
        x->r->rejected++;
        return 0;
    }
    if (sched_job_add(x->s, &d, err) < 0)
        return -1;
    x->js[i].state = JS_PENDING;
    return 0;
}

/* An attempt ends (completion or preemption): account its GPU time. */
static int attempt_end(struct run *x, uint32_t i, int64_t now,
                       struct sh_error *err)
{
    struct jstate *st = &x->js[i];
    if (sched_job_end(x->s, (uint64_t)i + 1, now, err) < 0)
        return -1;
    st->run_ms += now - st->start;
    st->gpu_ms +=
        (double)(now - st->start) * (double)st->units / SCHED_UNITS_PER_GPU;
    return 0;
}

static int event(struct run *x, const struct ev *e, struct sh_error *err)
{
    struct jstate *st = &x->js[e->job];
    if (st->state != JS_RUNNING || st->attempt != e->attempt)
        return 0; /* stale: the attempt ended another way */
    x->r->events++;
    if (attempt_end(x, e->job, e->t, err) < 0)
        return -1;
    if (e->kind == EV_END) {
        st->state = JS_DONE;
        st->end = e->t;
        return 0;
    }
    /* Preempted: its checkpoint keeps the work done until it was told to
     * stop (the grace went into saving it); back to the queue, keeping
     * its submit time. */
    if (st->restore_ms >= 0 && st->ckpt_at >= st->start) {
        int64_t work = st->ckpt_at - st->start - st->overhead;
        if (work > 0)
            st->done_ms += work;
        if (st->done_ms > x->t->jobs[e->job].duration_ms)
            st->done_ms = x->t->jobs[e->job].duration_ms;
    }
    st->ckpt_at = -1;
    struct sched_job_desc d;
    job_desc(x, e->job, &d);
    d.queued_ms = e->t;
    st->attempt++;
    st->state = JS_PENDING;
    return sched_job_add(x->s, &d, err);
}

static int decisions(struct run *x, int64_t now, struct sh_error *err)
{
    const struct sched_decisions *dec = &x->dec;
    for (size_t k = 0; k < dec->nstarts; k++) {
        const struct sched_start *s = &dec->starts[k];
        uint32_t i = (uint32_t)(s->job - 1);
        const struct sim_job *j = &x->t->jobs[i];
        struct jstate *st = &x->js[i];
        st->state = JS_RUNNING;
        st->start = now;
        if (st->first_start < 0)
            st->first_start = now;
        if (note_nodes(x, st, dec, s) < 0)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
        st->units = 0;
        for (int p = 0; p < s->nplaces; p++) {
            const struct sched_place *pl = &dec->places[s->first + (size_t)p];
            st->units += sim_cluster_units(x->c, pl->node, pl->gpu, pl->slice);
        }
        st->overhead = 0;
        if (st->done_ms > 0) {
            st->overhead = st->restore_ms;
            x->r->resumes++;
        }
        int64_t run = j->duration_ms - st->done_ms + st->overhead;
        st->timeout = j->limit_ms > 0 && j->limit_ms < run;
        if (st->timeout)
            run = j->limit_ms;
        if (heap_push(&x->h, now + run, i, st->attempt, EV_END) < 0)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    for (size_t k = 0; k < dec->npreempts; k++) {
        uint32_t i = (uint32_t)(dec->preempts[k].job - 1);
        x->r->preemptions++;
        x->js[i].ckpt_at = now;
        if (heap_push(&x->h, now + x->o->grace_ms, i, x->js[i].attempt,
                      EV_STOP) < 0)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    return 0;
}

static int loop(struct run *x, struct sh_error *err)
{
    size_t a = 0, n = x->t->njobs;
    for (;;) {
        int64_t now = INT64_MAX;
        if (a < n)
            now = x->t->jobs[a].submit_ms;
        if (x->h.n > 0 && x->h.v[0].t < now)
            now = x->h.v[0].t;
        if (now == INT64_MAX)
            break;
        /* Completions first: GPUs freed at t are free for arrivals at t. */
        while (x->h.n > 0 && x->h.v[0].t == now) {
            struct ev e = heap_pop(&x->h);
            if (event(x, &e, err) < 0)
                return -1;
        }
        while (a < n && x->t->jobs[a].submit_ms == now) {
            x->r->events++;
            if (arrive(x, a++, err) < 0)
                return -1;
        }
        if (sched_run(x->s, now, false, &x->dec, err) < 0)
            return -1;
        if (x->o->on_decisions)
            x->o->on_decisions(x->o->on_decisions_arg, x->s, now, &x->dec);
        if (decisions(x, now, err) < 0)
            return -1;
    }
    return 0;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v (n > 0). */
static double pct(const double *v, size_t n, double p)
{
    size_t k = (size_t)ceil(p / 100.0 * (double)n);
    return v[k > 0 ? k - 1 : 0];
}

static int metrics(struct run *x, struct sh_error *err)
{
    struct sim_result *r = x->r;
    const struct sim_trace *t = x->t;
    size_t n = t->njobs;
    double *jct = malloc(sizeof(*jct) * (n ? n : 1));
    double *wait = malloc(sizeof(*wait) * (n ? n : 1));
    double *bigw = malloc(sizeof(*bigw) * (n ? n : 1)); /* >= 8 GPUs */
    size_t nbig = 0;
    r->projects = calloc(t->names.n ? t->names.n : 1, sizeof(*r->projects));
    if (!jct || !wait || !bigw || !r->projects) {
        free(jct);
        free(wait);
        free(bigw);
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    int64_t first = n ? t->jobs[0].submit_ms : 0, last = first;
    double gpu_ms = 0, jsum = 0, wsum = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct jstate *st = &x->js[i];
        const struct sim_job *j = &t->jobs[i];
        struct sim_project *p = &r->projects[j->project];
        gpu_ms += st->gpu_ms;
        p->gpu_s += st->gpu_ms / 1000.0;
        if (st->state != JS_DONE) {
            if (st->state != JS_REJECTED)
                r->unfinished++;
            continue;
        }
        if (st->end > last)
            last = st->end;
        r->timeouts += st->timeout;
        double c = (double)(st->end - j->submit_ms) / 1000.0;
        double w = (double)(st->end - j->submit_ms - st->run_ms) / 1000.0;
        jct[k] = c;
        wait[k++] = w;
        if (j->gpus >= SIM_BIG_GPUS)
            bigw[nbig++] = w;
        jsum += c;
        wsum += w;
        p->name = t->names.names[j->project];
        p->jobs++;
        p->jct_sum_s += c;
        /* How close to an undisturbed run: duration / JCT, 1 when the
         * job never waited. */
        p->speed_sum +=
            c > 0 ? fmin(1.0, (double)j->duration_ms / 1000.0 / c) : 1.0;
    }
    r->jobs = k;
    r->makespan_s = (double)(last - first) / 1000.0;
    if (k > 0) {
        qsort(jct, k, sizeof(*jct), dbl_cmp);
        qsort(wait, k, sizeof(*wait), dbl_cmp);
        r->jct_avg_s = jsum / (double)k;
        r->jct_p50_s = pct(jct, k, 50);
        r->jct_p95_s = pct(jct, k, 95);
        r->jct_p99_s = pct(jct, k, 99);
        r->wait_avg_s = wsum / (double)k;
        r->wait_p99_s = pct(wait, k, 99);
        r->big_jobs = nbig;
        if (nbig > 0) {
            qsort(bigw, nbig, sizeof(*bigw), dbl_cmp);
            r->wait_big_p99_s = pct(bigw, nbig, 99);
        }
    }
    if (r->makespan_s > 0 && x->c->gpus > 0)
        r->utilization = gpu_ms / 1000.0 / ((double)x->c->gpus * r->makespan_s);
    /* Jain's index over projects of their mean duration/JCT. */
    double s1 = 0, s2 = 0;
    size_t np = 0;
    for (size_t i = 0; i < t->names.n; i++) {
        struct sim_project *p = &r->projects[i];
        if (p->jobs == 0)
            continue;
        double v = p->speed_sum / (double)p->jobs;
        s1 += v;
        s2 += v * v;
        np++;
    }
    r->nprojects = t->names.n;
    r->jain = np && s2 > 0 ? s1 * s1 / ((double)np * s2) : 1.0;
    free(jct);
    free(wait);
    free(bigw);
    return 0;
}

int sim_resume_parse(const char *spec, struct sim_resume *r,
                     struct sh_error *err)
{
    const char *colon = strrchr(spec, ':');
    size_t n = colon ? (size_t)(colon - spec) : 0;
    if (!colon || n == 0 || n > SCHED_NAME_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "--resume takes PROJECT:DUR or all:DUR (the restore "
                         "cost, e.g. all:2m), not '%s'",
                         spec);
    memcpy(r->who, spec, n);
    r->who[n] = '\0';
    for (size_t i = 0; i < n; i++) {
        char c = r->who[i];
        if (!(c == '.' || c == '_' || c == '-' || (c >= '0' && c <= '9') ||
              (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            return sh_errorf(err, SH_EINVAL,
                             "--resume: '%s' is not a project name", r->who);
    }
    const char *d = colon + 1;
    if (strcmp(d, "0") == 0 || strcmp(d, "0s") == 0) {
        r->restore_ms = 0;
        return 0;
    }
    int64_t s;
    if (parse_duration("--resume", d, &s, err) < 0)
        return -1;
    r->restore_ms = s * 1000;
    return 0;
}

void sim_options_init(struct sim_options *o)
{
    memset(o, 0, sizeof(*o));
    sched_config_init(&o->sched);
    /* The controller's settings (sched.h). */
    o->grace_ms = SCHED_PREEMPT_GRACE_MS;
    o->sched.preempt_grace_ms = o->grace_ms;
    o->sched.full_pass_interval_ms = SCHED_FULL_PASS_MS;
    o->sched.short_credit_ms = SCHED_SHORT_CREDIT_MS;
    /* Nobody reads pending reasons in a replay: skip the reason walk of
     * full passes. It decides nothing (the controller, which walks, takes
     * the same decisions: sched.md), and it would cost the whole queue
     * every full pass. */
    o->sched.all_reasons = false;
}

int sim_run(const struct sim_cluster *c, const struct sim_trace *t,
            const struct sim_options *o, struct sim_result *r,
            struct sh_error *err)
{
    struct run x;
    int rc = -1;
    memset(&x, 0, sizeof(x));
    memset(r, 0, sizeof(*r));
    x.c = c;
    x.t = t;
    x.o = o;
    x.r = r;
    r->gpus = c->gpus;
    r->nodes = c->nodes;
    r->policy = o->sched.policy;
    sched_decisions_init(&x.dec);
    x.js = calloc(t->njobs ? t->njobs : 1, sizeof(*x.js));
    if (!x.js) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < t->njobs; i++) {
        const char *proj = t->names.names[t->jobs[i].project];
        x.js[i].first_start = -1;
        x.js[i].ckpt_at = -1;
        x.js[i].restore_ms = -1;
        for (int k = 0; k < o->nresume; k++) {
            if (strcmp(o->resume[k].who, "all") == 0 ||
                strcmp(o->resume[k].who, proj) == 0) {
                x.js[i].restore_ms = o->resume[k].restore_ms;
                break;
            }
        }
    }
    x.s = sched_create(&o->sched, err);
    if (!x.s || sim_cluster_apply(c, x.s, err) < 0)
        goto out;
    if (o->tenants &&
        sim_tenants_apply(o->tenants,
                          o->tenants_name ? o->tenants_name : "tenants", x.s,
                          err) < 0)
        goto out;
    int64_t t0 = clock_mono_us();
    if (loop(&x, err) < 0)
        goto out;
    r->wall_s = (double)(clock_mono_us() - t0) / 1e6;
    rc = metrics(&x, err);
    if (rc == 0) {
        r->outcomes = calloc(t->njobs ? t->njobs : 1, sizeof(*r->outcomes));
        if (!r->outcomes) {
            rc = sh_errorf(err, SH_EINTERNAL, "out of memory");
            goto out;
        }
        r->noutcomes = t->njobs;
        for (size_t i = 0; i < t->njobs; i++) {
            const struct jstate *st = &x.js[i];
            struct sim_outcome *oc = &r->outcomes[i];
            oc->first_start_ms = st->first_start;
            oc->start_ms = st->first_start < 0 ? -1 : st->start;
            oc->end_ms = st->state == JS_DONE ? st->end : -1;
            oc->attempts = st->attempt + (st->first_start >= 0);
            oc->state = st->state == JS_DONE
                            ? (st->timeout ? SIM_TIMEOUT : SIM_COMPLETED)
                        : st->state == JS_REJECTED ? SIM_REJECTED
                                                   : SIM_UNFINISHED;
            oc->nodes_at = st->nodes_at;
            oc->nnodes = st->first_start >= 0 ? st->nnodes : 0;
        }
        r->outcome_nodes = x.nodes; /* handed over */
        r->noutcome_nodes = x.nnodes;
        x.nodes = NULL;
    }
out:
    sched_destroy(x.s);
    sched_decisions_fini(&x.dec);
    free(x.h.v);
    free(x.js);
    free(x.nodes);
    return rc;
}

void sim_result_fini(struct sim_result *r)
{
    if (!r)
        return;
    free(r->projects);
    free(r->outcomes);
    free(r->outcome_nodes);
    memset(r, 0, sizeof(*r));
}
