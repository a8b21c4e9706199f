/* SPDX-License-Identifier: Apache-2.0 */
/* GET /metrics: Prometheus text exposition (format 0.0.4) of the cluster.
 *
 * Without a token (as scrapers expect by default) only cluster-wide
 * figures: jobs by state, pending jobs by reason kind, nodes, GPUs, the
 * scheduling pass histogram, the group commit and the API. The series that
 * name things (each GPU of each node, each project, each user) are added
 * for a cluster admin's token (Prometheus' `authorization` scrape setting),
 * because user and project names are not for anyone who can reach the
 * port. Names and labels are a contract: contrib/grafana/shoal.json and
 * tests/system/099-metrics.bats use them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lib/util/prom.h"
#include "shoald/api_handlers.h"
#include "shoald/auth.h"
#include "shoald/engine.h"
#include "shoald/commit.h"
#include "shoald/jobtab.h"
#include "shoald/nodetab.h"
#include "shoald/tenancy.h"
#include "shoald/retention.h"

#define METRICS_MAX (256u << 20)

/* The reason kinds cluster_job_wait_kind() gives, always listed (at 0 when
 * no job waits so) so graphs and alerts see every series. */
static const char *const wait_kinds[] = {
    "held",      "dependency",  "array",    "new",        "quota", "limit",
    "resources", "reservation", "priority", "preemption", NULL};

/* Jobs counted per project or per user. name is borrowed from the job or
 * the tenancy table for the request. */
struct tally {
    const char *name;
    double gpus_used; /* slices count as their share */
    int running;
    int pending;
    UT_hash_handle hh;
};

static struct tally *tally_get(struct tally **t, const char *name, bool *oom)
{
    struct tally *e = NULL;
    HASH_FIND_STR(*t, name, e);
    if (e)
        return e;
    e = calloc(1, sizeof(*e));
    if (!e) {
        *oom = true;
        return NULL;
    }
    e->name = name;
    HASH_ADD_KEYPTR(hh, *t, e->name, strlen(e->name), e);
    return e;
}

static void tally_free(struct tally **t)
{
    struct tally *e, *tmp;
    HASH_ITER (hh, *t, e, tmp) {
        HASH_DEL(*t, e);
        free(e);
    }
}

/* GPUs a job holds now (parts not done yet), slices as their share. */
static double held_gpus(const struct job *j)
{
    double held = 0;
    if (j->state == JOB_RUNNING || j->releasing)
        for (int a = 0; a < j->nalloc; a++)
            held += j->alloc[a].done ? 0 : j->alloc[a].share;
    return held;
}

static void cluster_figures(struct shoald *d, struct prom *p)
{
    int counts[JOB_STATE_COUNT];
    jobtab_count_states(d->jobs, counts);
    prom_family(p, "shoal_jobs", "gauge", "Jobs in memory by state.");
    for (int s = 0; s < JOB_STATE_COUNT; s++) {
        const char *l[] = {"state", job_state_name((enum job_state)s), NULL};
        prom_sample(p, "shoal_jobs", l, counts[s]);
    }
    int kinds[sizeof(wait_kinds) / sizeof(wait_kinds[0])] = {0};
    double held = 0;
    for (struct job *j = jobtab_next(d->jobs, NULL); j;
         j = jobtab_next(d->jobs, j)) {
        held += held_gpus(j);
        if (j->state != JOB_PENDING)
            continue;
        const char *kind = cluster_job_wait_kind(d, j);
        for (int k = 0; wait_kinds[k]; k++)
            if (strcmp(kind, wait_kinds[k]) == 0)
                kinds[k]++;
    }
    prom_family(p, "shoal_jobs_pending", "gauge",
                "Pending jobs by the kind of reason they wait.");
    for (int k = 0; wait_kinds[k]; k++) {
        const char *l[] = {"reason", wait_kinds[k], NULL};
        prom_sample(p, "shoal_jobs_pending", l, kinds[k]);
    }
    int nodes[NODE_STATE_COUNT] = {0};
    int gpus = 0, slices = 0;
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n)) {
        nodes[node_state(n)]++;
        gpus += n->ngpus;
        for (int g = 0; g < n->ngpus; g++)
            slices += n->gpus[g].nslices;
    }
    prom_family(p, "shoal_nodes", "gauge", "Nodes by state.");
    for (int s = 0; s < NODE_STATE_COUNT; s++) {
        const char *l[] = {"state", node_state_name((enum node_state)s), NULL};
        prom_sample(p, "shoal_nodes", l, nodes[s]);
    }
    prom_family(p, "shoal_gpus", "gauge", "GPUs the nodes reported.");
    prom_sample(p, "shoal_gpus", NULL, gpus);
    prom_family(p, "shoal_gpu_slices", "gauge",
                "Slices (MIG or time) on them.");
    prom_sample(p, "shoal_gpu_slices", NULL, slices);
    prom_family(p, "shoal_gpus_allocated", "gauge",
                "GPUs held by jobs (slices count as their share).");
    prom_sample(p, "shoal_gpus_allocated", NULL, held);
    const struct histogram *h = cluster_pass_histogram(d);
    if (h) {
        prom_family(p, "shoal_schedule_pass_seconds", "histogram",
                    "Scheduling passes: the engine's decisions and applying "
                    "them.");
        prom_histogram(p, "shoal_schedule_pass_seconds", NULL, h);
    }
}

static void service_figures(struct shoald *d, struct prom *p)
{
    struct commit_stats cs;
    commit_get_stats(d->commit, &cs);
    prom_family(p, "shoal_commits_total", "counter",
                "Group commits written to the store.");
    prom_sample(p, "shoal_commits_total", NULL, (double)cs.commits);
    prom_family(p, "shoal_commit_changes_total", "counter",
                "Changes written by those commits.");
    prom_sample(p, "shoal_commit_changes_total", NULL, (double)cs.ops);
    prom_family(p, "shoal_commit_failures_total", "counter",
                "Commits the store refused.");
    prom_sample(p, "shoal_commit_failures_total", NULL, (double)cs.failures);
    prom_family(p, "shoal_commit_seconds_total", "counter",
                "Time from sending each commit to its being durable, fsync "
                "included (on PostgreSQL the loop serves requests meanwhile).");
    prom_sample(p, "shoal_commit_seconds_total", NULL,
                (double)cs.total_us / 1e6);
    prom_family(p, "shoal_api_requests_total", "counter",
                "API requests answered.");
    prom_sample(p, "shoal_api_requests_total", NULL,
                (double)api_requests(d->api));
}

/* A GPU is idle when a job holds it whose GPUs have all stayed under the
 * idle threshold (--idle-threshold) for --idle-after: the same rule that
 * flags jobs idle, whatever the project's idle policy does about it. */
static bool job_idle_now(const struct shoald *d, const struct job *j,
                         int64_t now)
{
    return j->idle || (j->idle_since_ms > 0 &&
                       now - j->idle_since_ms >= d->cfg.idle_after_ms);
}

struct gpu_use {
    bool allocated;
    bool idle; /* every job on it idle */
};

struct node_use_ctx {
    const struct shoald *d;
    struct gpu_use *use;
    int64_t now;
};

static void count_holder(const struct job *job, int part, int gpu, int slice,
                         void *arg)
{
    (void)part;
    (void)slice;
    struct node_use_ctx *c = arg;
    c->use[gpu].allocated = true;
    c->use[gpu].idle = c->use[gpu].idle && job_idle_now(c->d, job, c->now);
}

static void node_use(struct shoald *d, const struct node *n,
                     struct gpu_use *use, int64_t now)
{
    for (int g = 0; g < n->ngpus; g++)
        use[g] = (struct gpu_use){false, true};
    struct node_use_ctx c = {d, use, now};
    nodetab_each_gpu_part(d->nodes, d->jobs, n, count_holder, &c);
}

static void gpu_figures(struct shoald *d, struct prom *p)
{
    static const struct {
        const char *name, *help;
    } fams[] = {
        {"shoal_gpu_allocated", "1 when a job holds the GPU (or a slice)."},
        {"shoal_gpu_idle", "1 when the jobs holding the GPU left it under "
                           "the idle threshold for the idle time."},
        {"shoal_gpu_utilization_percent",
         "GPU utilization the node's agent last reported (0-100)."},
        {"shoal_gpu_memory_used_bytes",
         "GPU memory in use, as the agent last reported."},
        {"shoal_gpu_memory_total_bytes", "GPU memory."},
    };
    int64_t now = shoald_now_ms(d);
    int idle_total = 0;
    for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
        prom_family(p, fams[f].name, "gauge", fams[f].help);
        for (struct node *n = nodetab_next(d->nodes, NULL); n;
             n = nodetab_next(d->nodes, n)) {
            struct gpu_use use[GPU_PER_NODE_MAX];
            if (f <= 1)
                node_use(d, n, use, now);
            for (int g = 0; g < n->ngpus && g < GPU_PER_NODE_MAX; g++) {
                const struct gpu_info *gi = &n->gpus[g];
                char idx[16];
                snprintf(idx, sizeof(idx), "%d", gi->index);
                const char *l[] = {"node",  n->name,   "gpu", idx,
                                   "model", gi->model, NULL};
                double v;
                if (f == 0) {
                    v = use[g].allocated;
                } else if (f == 1) {
                    v = use[g].allocated && use[g].idle;
                    idle_total += (int)v;
                } else if (f == 2) {
                    if (gi->util_pct < 0)
                        continue; /* unknown (MIG) is no sample */
                    v = gi->util_pct;
                } else {
                    v = (double)(f == 3 ? gi->mem_used : gi->mem_total);
                }
                prom_sample(p, fams[f].name, l, v);
            }
        }
    }
    prom_family(p, "shoal_gpus_idle", "gauge",
                "GPUs held by jobs that leave them idle (see shoal_gpu_idle).");
    prom_sample(p, "shoal_gpus_idle", NULL, idle_total);
}

static void tally_figures(struct prom *p, struct tally *t, const char *what,
                          const char *label)
{
    char name[64], help[128];
    static const char *const fields[] = {"gpus_used", "jobs_running",
                                         "jobs_pending"};
    static const char *const helps[] = {
        "GPUs its running jobs hold (slices count as their share)",
        "Its running jobs", "Its pending jobs"};
    for (int f = 0; f < 3; f++) {
        snprintf(name, sizeof(name), "shoal_%s_%s", what, fields[f]);
        snprintf(help, sizeof(help), "%s, per %s.", helps[f], what);
        prom_family(p, name, "gauge", help);
        for (struct tally *e = t; e; e = e->hh.next) {
            const char *l[] = {label, e->name, NULL};
            prom_sample(p, name, l,
                        f == 0   ? e->gpus_used
                        : f == 1 ? e->running
                                 : e->pending);
        }
    }
}

static void quota_figures(struct shoald *d, struct prom *p)
{
    prom_family(p, "shoal_project_gpus_guaranteed", "gauge",
                "GPUs guaranteed to the project (gpu_model \"any\" for any "
                "model).");
    for (const struct tenancy_project *pr =
             tenancy_project_next(d->tenancy, NULL);
         pr; pr = tenancy_project_next(d->tenancy, pr))
        for (int q = 0; q < pr->nquotas; q++) {
            const char *m = pr->quotas[q].model ? pr->quotas[q].model : "any";
            const char *l[] = {"project",   pr->name, "team", pr->team,
                               "gpu_model", m,        NULL};
            prom_sample(p, "shoal_project_gpus_guaranteed", l,
                        (double)pr->quotas[q].guaranteed);
        }
    prom_family(p, "shoal_project_gpus_limit", "gauge",
                "GPUs the project may use at most, borrowing included (no "
                "series when it has no limit).");
    for (const struct tenancy_project *pr =
             tenancy_project_next(d->tenancy, NULL);
         pr; pr = tenancy_project_next(d->tenancy, pr))
        for (int q = 0; q < pr->nquotas; q++) {
            if (pr->quotas[q].limit == TENANCY_UNLIMITED)
                continue;
            const char *m = pr->quotas[q].model ? pr->quotas[q].model : "any";
            const char *l[] = {"project",   pr->name, "team", pr->team,
                               "gpu_model", m,        NULL};
            prom_sample(p, "shoal_project_gpus_limit", l,
                        (double)pr->quotas[q].limit);
        }
    static const char *const lims[] = {"shoal_user_gpus_limit",
                                       "shoal_user_jobs_limit"};
    static const char *const lhelp[] = {
        "GPUs the user's running jobs may hold at most (no series: no limit).",
        "Jobs the user may run at once (no series: no limit)."};
    for (int f = 0; f < 2; f++) {
        prom_family(p, lims[f], "gauge", lhelp[f]);
        for (const struct auth_user *u = auth_user_next(d->auth, NULL); u;
             u = auth_user_next(d->auth, u)) {
            int v = f == 0 ? u->limits.max_gpus : u->limits.max_jobs;
            const char *l[] = {"user", u->name, NULL};
            if (v > 0)
                prom_sample(p, lims[f], l, v);
        }
    }
}

/* Per project and per user: every project and user known, then any a job
 * still names (a deleted one). */
static int tenant_figures(struct shoald *d, struct prom *p)
{
    struct tally *projects = NULL, *users = NULL;
    bool oom = false;
    for (const struct tenancy_project *pr =
             tenancy_project_next(d->tenancy, NULL);
         pr; pr = tenancy_project_next(d->tenancy, pr))
        tally_get(&projects, pr->name, &oom);
    for (const struct auth_user *u = auth_user_next(d->auth, NULL); u;
         u = auth_user_next(d->auth, u))
        tally_get(&users, u->name, &oom);
    for (struct job *j = jobtab_next(d->jobs, NULL); j && !oom;
         j = jobtab_next(d->jobs, j)) {
        if (j->state != JOB_PENDING && j->state != JOB_RUNNING)
            continue;
        struct tally *e[2] = {
            j->spec.project ? tally_get(&projects, j->spec.project, &oom)
                            : NULL,
            j->spec.user ? tally_get(&users, j->spec.user, &oom) : NULL};
        for (int i = 0; i < 2; i++) {
            if (!e[i])
                continue;
            e[i]->gpus_used += held_gpus(j);
            e[i]->running += j->state == JOB_RUNNING;
            e[i]->pending += j->state == JOB_PENDING;
        }
    }
    if (!oom) {
        tally_figures(p, projects, "project", "project");
        tally_figures(p, users, "user", "user");
        quota_figures(d, p);
    }
    tally_free(&projects);
    tally_free(&users);
    return oom ? -1 : 0;
}

void api_metrics(struct shoald *d, struct api_req *req)
{
    const struct api_caller *caller = api_caller(req);
    bool detail = caller->role == API_USER && caller->admin;
    struct prom p;
    prom_init(&p, METRICS_MAX);
    cluster_figures(d, &p);
    service_figures(d, &p);
    retention_figures(d, &p);
    int rc = 0;
    if (detail) {
        gpu_figures(d, &p);
        rc = tenant_figures(d, &p);
    }
    if (rc < 0 || p.overflow) {
        prom_fini(&p);
        api_errorf(req, SH_EINTERNAL, "metrics do not fit in memory");
        return;
    }
    size_t len = p.sb.len;
    api_reply_text(req, 200, "text/plain; version=0.0.4", strbuf_take(&p.sb),
                   len);
}
