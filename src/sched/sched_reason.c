/* SPDX-License-Identifier: Apache-2.0 */
/* Pending reasons as text, and the submission-time checks. The engine keeps
 * a reason as a code plus a number or two per job (100,000 pending jobs get
 * one each pass); the words are put together only when someone asks, from
 * the current state, e.g.
 *   quota: project vision 8/8 H100-80GB guaranteed, limit 12 reached
 *   limit: user alice runs 4/4 GPUs
 *   resources: needs 2 nodes x 8 H100-80GB
 *   resources: needs a shared slice; the free ones are on unfenced GPUs
 *     (time-sliced, no MPS) held by project vision
 *   reservation: waiting for its reserved start
 *   resources: needs 20G memory on a node (largest free: 3.6G)
 */
#include "sched/sched_int.h"

#include "lib/util/parse.h"

#include <stdio.h>
#include <string.h>

static const char *const wait_names[] = {
    [SCHED_WAIT_NEW] = "new",
    [SCHED_WAIT_QUOTA_PROJECT] = "quota",
    [SCHED_WAIT_QUOTA_TEAM] = "quota",
    [SCHED_WAIT_USER_GPUS] = "limit",
    [SCHED_WAIT_USER_JOBS] = "limit",
    [SCHED_WAIT_RESOURCES] = "resources",
    [SCHED_WAIT_RESERVED] = "reservation",
    [SCHED_WAIT_RESERVATION] = "reservation",
    [SCHED_WAIT_PRIORITY] = "priority",
    [SCHED_WAIT_PREEMPTING] = "preemption",
    [SCHED_WAIT_NEVER] = "resources",
};

const char *sched_wait_name(enum sched_wait w)
{
    if ((unsigned)w < sizeof(wait_names) / sizeof(wait_names[0]))
        return wait_names[w];
    return "unknown";
}

/* Units as GPUs: "8", or "0.25" for slices. */
static const char *gpus_str(int64_t units, char *buf, size_t size)
{
    if (units == SCHED_UNLIMITED)
        snprintf(buf, size, "unlimited");
    else if (units % SCHED_UNITS_PER_GPU == 0)
        snprintf(buf, size, "%lld", (long long)(units / SCHED_UNITS_PER_GPU));
    else
        snprintf(buf, size, "%.2f", (double)units / SCHED_UNITS_PER_GPU);
    return buf;
}

static void quota_text(const struct sched *s, const struct sjob *j, char *buf,
                       size_t size)
{
    bool team = j->wait == SCHED_WAIT_QUOTA_TEAM;
    const struct sproject *p = &s->projects[j->project];
    const struct squota *q;
    const struct susage *u;
    const char *who;
    if (team && p->team != SCHED_NONE) {
        q = &s->teams[p->team].q;
        u = &s->teams[p->team].u;
        who = s->team_names.names[p->team];
    } else {
        q = &p->q;
        u = &p->u;
        who = s->project_names.names[j->project];
    }
    uint16_t m = (uint16_t)j->wait_arg;
    bool per_model =
        m != SCHED_NONE16 && m < s->model_names.n && ((q->has >> m) & 1);
    int64_t used = per_model ? u->used[m] : u->used_total;
    int64_t g = per_model ? q->g[m] : q->has_any ? q->g_any : 0;
    int64_t l = per_model ? q->l[m] : q->has_any ? q->l_any : SCHED_UNLIMITED;
    /* A per-model entry may allow it while "any" does not. */
    if (per_model && l != SCHED_UNLIMITED && used < l && q->has_any) {
        per_model = false;
        used = u->used_total;
        g = q->g_any;
        l = q->l_any;
    }
    char a[24], b[24], c[24], d[24];
    const char *model = per_model ? s->model_names.names[m] : "GPUs";
    int64_t within = used < g ? used : g;
    if (l == SCHED_UNLIMITED || used >= l)
        snprintf(buf, size,
                 "quota: %s %s %s/%s %s guaranteed, limit %s "
                 "reached",
                 team ? "team" : "project", who, gpus_str(within, a, sizeof(a)),
                 gpus_str(g, b, sizeof(b)), model, gpus_str(l, c, sizeof(c)));
    else
        snprintf(buf, size,
                 "quota: %s %s %s/%s %s guaranteed, uses %s of "
                 "limit %s",
                 team ? "team" : "project", who, gpus_str(within, a, sizeof(a)),
                 gpus_str(g, b, sizeof(b)), model, gpus_str(used, d, sizeof(d)),
                 gpus_str(l, c, sizeof(c)));
}

/* A slice job whose only free slices are on unfenced GPUs (time-sliced
 * without MPS) that other projects hold: say so, naming them, e.g.
 * "; the free ones are on unfenced GPUs (time-sliced, no MPS) held by
 * project vision". Nothing otherwise. */
static void fence_text(const struct sched *s, const struct sjob *j, char *buf,
                       size_t size)
{
    enum { NAMES = 3 };
    uint32_t ids[NAMES];
    int n =
        place_slice_fenced(s, j, j->profile, model_mask_for(s, j), ids, NAMES);
    if (n == 0)
        return;
    /* "vision", "vision and nlp", "vision, nlp and cv", "..., cv and
     * others"; names are at most SCHED_NAME_MAX bytes. */
    char names[NAMES * (SCHED_NAME_MAX + 8) + 16] = "";
    size_t off = 0;
    for (int i = 0; i < n && i < NAMES; i++) {
        const char *sep = i == 0 ? "" : i == n - 1 ? " and " : ", ";
        off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%.64s",
                                sep, s->project_names.names[ids[i]]);
    }
    if (n > NAMES)
        snprintf(names + off, sizeof(names) - off, " and others");
    snprintf(buf, size,
             "; the free ones are on unfenced GPUs (time-sliced, no MPS) "
             "held by project%s %s",
             n > 1 ? "s" : "", names);
}

/* When the host CPUs or memory are what the job waits for: of the up
 * nodes it may use that have the GPUs it needs per node free (any up node
 * for a job without GPUs), none has the memory (or the CPUs) free, e.g.
 * "resources: needs 20G memory on a node (largest free: 3.6G)". false
 * when that is not it (or no such node: the GPUs are). */
static bool room_text(const struct sched *s, const struct sjob *j, char *buf,
                      size_t size)
{
    if (j->host_cpus == 0 && j->host_mem == 0)
        return false;
    uint32_t gpn = sched_job_cpu(j)        ? 0
                   : j->kind != SJOB_WHOLE ? 0
                   : j->nodes >= 1         ? j->gpus
                                           : 1;
    int64_t best_mem = -1, best_cpus = -1;
    bool mem_counted = false, cpus_counted = false;
    for (uint32_t n = 0; n < s->node_names.n; n++) {
        const struct snode *nd = &s->nodes[n];
        if (!nd->present || nd->state != SCHED_NODE_UP ||
            !sched_node_ok(s, j, n) ||
            (uint32_t)sched_popcount64(nd->free) < gpn)
            continue;
        if (nd->mem_mib == 0 || nd->cpus == 0)
            return false; /* a node without figures has room */
        int64_t fm = (int64_t)nd->mem_mib - nd->mem_used;
        int64_t fc = (int64_t)nd->cpus - nd->cpus_used;
        if (fm > best_mem)
            best_mem = fm;
        if (fc > best_cpus)
            best_cpus = fc;
        mem_counted = cpus_counted = true;
    }
    char need[32], have[32];
    if (mem_counted && j->host_mem > best_mem) {
        format_size((uint64_t)j->host_mem << 20, need, sizeof(need));
        format_size((uint64_t)(best_mem > 0 ? best_mem : 0) << 20, have,
                    sizeof(have));
        snprintf(buf, size,
                 "resources: needs %s memory on a node (largest free: %s)",
                 need, have);
        return true;
    }
    if (cpus_counted && j->host_cpus > best_cpus) {
        snprintf(buf, size,
                 "resources: needs %u CPUs on a node (most free: %lld)",
                 j->host_cpus, (long long)(best_cpus > 0 ? best_cpus : 0));
        return true;
    }
    return false;
}

static void resources_text(const struct sched *s, const struct sjob *j,
                           char *buf, size_t size)
{
    if (room_text(s, j, buf, size))
        return;
    char set[SCHED_MODELS_MAX * (SCHED_NAME_MAX + 1)];
    const char *model = NULL;
    if (j->models) {
        sched_models_str(s, j->models, set, sizeof(set));
        model = set;
    }
    /* No constraint, but the cluster has one model: name it. */
    uint32_t present = 0, only = 0;
    for (uint32_t m = 0; m < s->model_names.n && !model; m++) {
        if (s->models[m].nnodes > 0) {
            present++;
            only = m;
        }
    }
    if (!model && present == 1 && j->kind == SJOB_WHOLE)
        model = s->model_names.names[only];
    if (sched_job_cpu(j)) {
        if (j->nodes > 1)
            snprintf(buf, size,
                     "resources: needs %u up nodes without an exclusive job",
                     j->nodes);
        else
            snprintf(buf, size,
                     "resources: needs an up node without an exclusive job");
    } else if (j->kind == SJOB_SLICE) {
        const char *p = s->profile_names.names[j->profile];
        int w = snprintf(buf, size, "resources: needs a %s slice%s%s", p,
                         model ? " of " : "", model ? model : "");
        if (w > 0 && (size_t)w < size)
            fence_text(s, j, buf + w, size - (size_t)w);
    } else if (j->kind == SJOB_FLEX) {
        snprintf(buf, size,
                 "resources: needs a GPU or slice with %u MiB "
                 "of memory",
                 j->mem_mib);
    } else if (j->nodes == 0) {
        snprintf(buf, size, "resources: needs %u %s", j->gpus,
                 model ? model : "GPUs");
    } else if (j->nodes == 1) {
        snprintf(buf, size, "resources: needs %u %s on one node", j->gpus,
                 model ? model : "GPUs");
    } else {
        snprintf(buf, size, "resources: needs %u nodes x %u %s", j->nodes,
                 j->gpus, model ? model : "GPUs");
    }
}

/* A job whose wishes no node meets: "waiting: no node matches
 * constraint \"a100\"". false when some node does (or it has none). */
static bool wishes_text(const struct sjob *j, char *buf, size_t size)
{
    char w[JOB_REASON_MAX];
    if (!j->filter || j->filter->nallow > 0)
        return false;
    filter_text(j, w, sizeof(w));
    snprintf(buf, size, "waiting: no node matches %s", w);
    return true;
}

/* What narrows the nodes, after a resources reason. */
static void wishes_append(const struct sjob *j, char *buf, size_t size)
{
    char w[JOB_REASON_MAX];
    size_t o = strlen(buf);
    if (j->filter && o < size) {
        filter_text(j, w, sizeof(w));
        o += (size_t)snprintf(buf + o, size - o, " (%s)", w);
    }
    if (j->excl && o < size)
        snprintf(buf + o, size - o, " (exclusive: whole idle nodes)");
}

const char *sched_job_reason(const struct sched *s, uint64_t id, char *buf,
                             size_t size)
{
    const struct sjob *j = sched_job_get(s, id);
    char a[24], b[24];
    if (size == 0)
        return buf;
    buf[0] = '\0';
    if (!j || j->state != SCHED_JOB_PENDING)
        return buf;
    const struct suser *u = &s->users[j->user];
    const char *user = s->user_names.names[j->user];
    switch ((enum sched_wait)j->wait) {
    case SCHED_WAIT_NEW:
        snprintf(buf, size, "new: waiting for the next scheduling pass");
        break;
    case SCHED_WAIT_QUOTA_PROJECT:
    case SCHED_WAIT_QUOTA_TEAM:
        quota_text(s, j, buf, size);
        break;
    case SCHED_WAIT_USER_GPUS:
        snprintf(buf, size, "limit: user %s runs %s/%s GPUs", user,
                 gpus_str(u->used_units, a, sizeof(a)),
                 gpus_str(u->max_units, b, sizeof(b)));
        break;
    case SCHED_WAIT_USER_JOBS:
        snprintf(buf, size, "limit: user %s runs %d/%d jobs", user, u->running,
                 u->max_jobs);
        break;
    case SCHED_WAIT_RESOURCES:
        if (wishes_text(j, buf, size))
            break;
        resources_text(s, j, buf, size);
        wishes_append(j, buf, size);
        break;
    case SCHED_WAIT_RESERVED:
        snprintf(buf, size, "reservation: waiting for its reserved start");
        wishes_append(j, buf, size);
        break;
    case SCHED_WAIT_RESERVATION:
        snprintf(buf, size,
                 "reservation: waiting for job %llu's "
                 "reservation",
                 (unsigned long long)j->other);
        break;
    case SCHED_WAIT_PRIORITY:
        snprintf(buf, size, "priority: behind higher-priority jobs");
        break;
    case SCHED_WAIT_PREEMPTING:
        snprintf(buf, size,
                 "preemption: waiting for %u preempted job%s to "
                 "stop",
                 j->victims, j->victims == 1 ? "" : "s");
        break;
    case SCHED_WAIT_NEVER: {
        if (wishes_text(j, buf, size))
            break;
        struct sh_error err = {0};
        static_fit(s, j, &err);
        snprintf(buf, size, "resources: can never fit: %s", err.msg);
        break;
    }
    }
    return buf;
}

/* A job record for checks, without interning anything. */
static int temp_job(const struct sched *s, const struct sched_job_desc *d,
                    struct sjob *j, struct sh_error *err)
{
    memset(j, 0, sizeof(*j));
    j->model = SCHED_NONE16;
    j->profile = SCHED_NONE16;
    if (d->gpu_type) {
        uint64_t present = 0;
        if (sched_models_find(s, d->gpu_type, &j->models, NULL) < 0)
            return sh_errorf(err, SH_EINVAL,
                             "gpu_type must be 1..%d models of 1..%d "
                             "bytes separated by '|'",
                             SCHED_MODELS_MAX, SCHED_NAME_MAX);
        for (uint64_t b = j->models; b; b &= b - 1) {
            if (s->models[__builtin_ctzll(b)].nnodes > 0)
                present |= b & -b;
        }
        if (!present)
            return sh_errorf(err, SH_EINVAL, "unknown GPU model '%s'",
                             d->gpu_type);
        if (sched_popcount64(j->models) == 1)
            j->model = (uint16_t)__builtin_ctzll(j->models);
    }
    if (d->slice) {
        uint32_t p = strtab_find(&s->profile_names, d->slice);
        if (p == SCHED_NONE || s->profiles[p].nexist == 0)
            return sh_errorf(err, SH_EINVAL, "unknown slice profile '%s'",
                             d->slice);
        j->profile = (uint16_t)p;
    }
    j->kind = d->slice ? SJOB_SLICE : d->flexible ? SJOB_FLEX : SJOB_WHOLE;
    j->gpus = d->gpus > 0 ? (uint32_t)d->gpus : 0;
    j->nodes = (uint16_t)(j->kind == SJOB_WHOLE && d->nodes > 0 ? d->nodes
                          : j->kind == SJOB_WHOLE               ? 0
                                                                : 1);
    j->mem_mib = (uint32_t)((d->gpu_mem + (1024 * 1024) - 1) / (1024 * 1024));
    j->host_cpus = d->cpus > 0 ? (uint32_t)d->cpus : 0;
    j->host_mem = (uint32_t)((d->mem + (1024 * 1024) - 1) / (1024 * 1024));
    j->limit = d->time_limit_ms;
    return 0;
}

int sched_job_check_host(const struct sched *s, const struct sched_job_desc *d,
                         struct sh_error *err)
{
    struct sjob j;
    memset(&j, 0, sizeof(j));
    if (d->cpus < 0 || d->mem / (1024 * 1024) >= UINT32_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "cpus must be >= 0 and mem under 4 PiB");
    j.host_cpus = (uint32_t)d->cpus;
    j.host_mem = (uint32_t)((d->mem + (1024 * 1024) - 1) / (1024 * 1024));
    return sched_fit_host(s, &j, err) ? 0 : -1;
}

int sched_job_check(const struct sched *s, const struct sched_job_desc *d,
                    struct sh_error *err)
{
    struct sjob j;
    if (d->slice && d->flexible)
        return sh_errorf(err, SH_EINVAL,
                         "slice and flexible memory exclude "
                         "each other");
    if ((d->slice || d->flexible) && (d->gpus != 1 || d->nodes > 1))
        return sh_errorf(err, SH_EINVAL, "a %s job takes 1 GPU on 1 node",
                         d->slice ? "slice" : "memory");
    if (!d->slice && !d->flexible && d->gpus == 0)
        return sched_job_check_host(s, d, err); /* a job without GPUs */
    if (!d->slice && !d->flexible && d->gpus < 1)
        return sh_errorf(err, SH_EINVAL, "gpus must be >= 0");
    if (d->nodes < 0 || d->nodes > JOB_NODES_MAX)
        return sh_errorf(err, SH_EINVAL, "nodes must be 0..%d", JOB_NODES_MAX);
    if (temp_job(s, d, &j, err) < 0)
        return -1;
    return static_fit(s, &j, err) ? 0 : -1;
}

static int64_t limit_of(const struct squota *q, uint16_t m)
{
    int64_t l = SCHED_UNLIMITED;
    if (m != SCHED_NONE16 && ((q->has >> m) & 1))
        l = q->l[m];
    if (q->has_any && q->l_any != SCHED_UNLIMITED &&
        (l == SCHED_UNLIMITED || q->l_any < l))
        l = q->l_any;
    return l;
}

/* The limit a job meets: its model's, or without a model constraint the
 * most generous among the models present (it may run on any of them). */
static int64_t limit_of_job(const struct sched *s, const struct squota *q,
                            uint64_t allowed)
{
    uint16_t m = SCHED_NONE16;
    if (sched_popcount64(allowed) == 1)
        return limit_of(q, (uint16_t)__builtin_ctzll(allowed));
    int64_t best = -2;
    for (uint32_t i = 0; i < s->model_names.n; i++) {
        if (s->models[i].nnodes == 0 || (allowed && !((allowed >> i) & 1)))
            continue;
        int64_t l = limit_of(q, (uint16_t)i);
        if (l == SCHED_UNLIMITED)
            return SCHED_UNLIMITED;
        if (l > best)
            best = l;
    }
    return best == -2 ? limit_of(q, m) : best;
}

int sched_job_check_limits(const struct sched *s,
                           const struct sched_job_desc *d, struct sh_error *err)
{
    char a[24], b[24];
    uint32_t uid = d->user ? strtab_find(&s->user_names, d->user) : SCHED_NONE;
    int64_t max_time =
        uid != SCHED_NONE ? s->users[uid].max_time_ms : s->cfg.user_max_time_ms;
    int64_t max_units =
        uid != SCHED_NONE ? s->users[uid].max_units : s->cfg.user_max_units;
    if (max_time > 0 && (d->time_limit_ms == 0 || d->time_limit_ms > max_time))
        return sh_errorf(err, SH_EQUOTA,
                         "time limit must be at most %lld "
                         "s for user %s",
                         (long long)(max_time / 1000), d->user ? d->user : "?");
    int64_t units;
    if (d->slice) {
        uint32_t p = strtab_find(&s->profile_names, d->slice);
        units = p != SCHED_NONE ? s->profiles[p].units_max : 0;
    } else {
        int n = d->nodes > 0 ? d->nodes : 1;
        units = (int64_t)n * (d->gpus > 0 ? d->gpus : 1) * SCHED_UNITS_PER_GPU;
    }
    if (max_units != SCHED_UNLIMITED && units > max_units)
        return sh_errorf(err, SH_EQUOTA,
                         "needs %s GPUs but user %s may run "
                         "%s",
                         gpus_str(units, a, sizeof(a)), d->user ? d->user : "?",
                         gpus_str(max_units, b, sizeof(b)));
    uint32_t pid =
        d->project ? strtab_find(&s->project_names, d->project) : SCHED_NONE;
    if (pid == SCHED_NONE || !s->quotas_on)
        return 0;
    uint64_t m16 = 0; /* the job's models (one or a set); 0 = any */
    if (d->gpu_type && sched_models_find(s, d->gpu_type, &m16, NULL) < 0)
        m16 = 0;
    const struct sproject *p = &s->projects[pid];
    int64_t l = limit_of_job(s, &p->q, m16);
    if (l != SCHED_UNLIMITED && units > l)
        return sh_errorf(err, SH_EQUOTA,
                         "needs %s GPUs but project %s's "
                         "limit is %s",
                         gpus_str(units, a, sizeof(a)), d->project,
                         gpus_str(l, b, sizeof(b)));
    if (p->team != SCHED_NONE) {
        l = limit_of_job(s, &s->teams[p->team].q, m16);
        if (l != SCHED_UNLIMITED && units > l)
            return sh_errorf(err, SH_EQUOTA,
                             "needs %s GPUs but team %s's "
                             "limit is %s",
                             gpus_str(units, a, sizeof(a)),
                             s->team_names.names[p->team],
                             gpus_str(l, b, sizeof(b)));
    }
    return 0;
}
