/* SPDX-License-Identifier: Apache-2.0 */
/* The scenario runner: parses the line format of tests/data/sched/README.md
 * and drives the engine. Every directive is one line of words; key=value
 * arguments; quoted strings for reason texts. Test-only code, so it keeps
 * things simple: fixed-size buffers with checked bounds.
 */
#include "sched/test/scn.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/parse.h"
#include "sched/sched.h"

#define MAXW 48
#define MAXJOBS 4096
#define LINE_MAX_SCN 1024

struct jobdef {
    unsigned long long id;
    char user[64], project[64], type[64], slice[32];
    char nodelist[256], exclude[256], constraint[256];
    struct sched_job_desc d;
};

/* gpu NODE INDEX [slices=NxPROFILE share=A/B mem=10G kind=mig|shared]
 *     [unfenced] [unsched] [whole]: re-describe one GPU of a node. The
 * runner keeps no copy of the node, so it rebuilds it from the engine's
 * view through a tiny private table of node layouts. */
struct nodecopy {
    char name[64];
    int state;
    char group[64];
    int ngpus;
    struct sched_gpu_desc gpus[64];
    char models[64][64];
    struct gpu_slice slices[64][16];
    int cpus;
    uint64_t hostmem;
};

struct scn {
    const char *name;
    int line;
    char *msg;
    size_t size;
    struct sched_config cfg;
    struct sched *s;
    struct sched_decisions dec;
    bool ran;
    struct jobdef *jobs;
    int njobs;
    struct nodecopy *copies; /* the GPU layouts the scenario gave */
    int ncopies;
};

static int small(const char *s)
{
    return (int)strtol(s, NULL, 10);
}

static int failf(struct scn *c, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    snprintf(c->msg, c->size, "%s:%d: %s", c->name, c->line, buf);
    return -1;
}

/* Split a line into words. Double quotes group spaces into a word and
 * are dropped ("a b", key="a b", ~"a b"). Returns the count, -1 when there
 * are too many. */
static int split(char *line, char **w)
{
    int n = 0;
    char *p = line;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p || *p == '#')
            break;
        if (n == MAXW)
            return -1;
        char *o = p;
        w[n++] = o;
        bool quoted = false;
        while (*p && (quoted || !isspace((unsigned char)*p))) {
            if (*p == '"') {
                quoted = !quoted;
                p++;
                continue;
            }
            *o++ = *p++;
        }
        bool more = *p != '\0';
        *o = '\0';
        if (more)
            p++;
    }
    return n;
}

/* The value of key=... among words, or NULL. */
static const char *arg(char **w, int n, const char *key)
{
    size_t k = strlen(key);
    for (int i = 0; i < n; i++) {
        if (strncmp(w[i], key, k) == 0 && w[i][k] == '=')
            return w[i] + k + 1;
    }
    return NULL;
}

static bool flag(char **w, int n, const char *word)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(w[i], word) == 0)
            return true;
    }
    return false;
}

static int num(struct scn *c, const char *field, const char *s, int64_t min,
               int64_t max, int64_t *out)
{
    struct sh_error err;
    if (parse_int64(field, s, min, max, out, &err) < 0)
        return failf(c, "%s", err.msg);
    return 0;
}

/* GPUs as units: "8" or "0.5". */
static int units(struct scn *c, const char *s, int64_t *out)
{
    if (strcmp(s, "unlimited") == 0) {
        *out = SCHED_UNLIMITED;
        return 0;
    }
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || v < 0)
        return failf(c, "bad GPU amount '%s'", s);
    *out = (int64_t)(v * SCHED_UNITS_PER_GPU + 0.5);
    return 0;
}

static int mem(struct scn *c, const char *s, uint64_t *out)
{
    struct sh_error err;
    if (parse_size("mem", s, out, &err) < 0)
        return failf(c, "%s", err.msg);
    return 0;
}

/* ------------------------------------------------------------- nodes */

/* The host CPUs and memory of a node or job: cpus=N hostmem=SIZE. */
static int host_args(struct scn *c, char **w, int n, int *cpus,
                     uint64_t *hostmem)
{
    int64_t v = 0;
    *cpus = 0;
    *hostmem = 0;
    if (arg(w, n, "cpus") &&
        num(c, "cpus", arg(w, n, "cpus"), 0, 100000, &v) < 0)
        return -1;
    *cpus = (int)v;
    if (arg(w, n, "hostmem") && mem(c, arg(w, n, "hostmem"), hostmem) < 0)
        return -1;
    return 0;
}

/* node NAME [group=G] [state=S] gpus=NxMODEL[,NxMODEL] [mem=80G]
 *      [nvlink=0,0,1,1] [cpus=N] [hostmem=SIZE] */
static int do_node(struct scn *c, char **w, int n)
{
    struct sched_gpu_desc gpus[64];
    char models[64][64];
    int ng = 0;
    const char *spec = arg(w, n, "gpus");
    uint64_t m = 80ULL << 30;
    memset(gpus, 0, sizeof(gpus));
    if (n < 2 || !spec)
        return failf(c, "node needs a name and gpus=");
    if (arg(w, n, "mem") && mem(c, arg(w, n, "mem"), &m) < 0)
        return -1;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", spec);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        char *x = strchr(t, 'x');
        if (!x)
            return failf(c, "gpus= wants COUNTxMODEL");
        *x = '\0';
        int64_t cnt;
        if (num(c, "gpus", t, 1, 64, &cnt) < 0)
            return -1;
        for (int i = 0; i < cnt; i++) {
            if (ng == 64)
                return failf(c, "too many GPUs");
            snprintf(models[ng], sizeof(models[ng]), "%s", x + 1);
            gpus[ng].model = models[ng];
            gpus[ng].mem_bytes = m;
            gpus[ng].nvlink_group = -1;
            ng++;
        }
    }
    const char *nvl = arg(w, n, "nvlink");
    if (nvl) {
        snprintf(buf, sizeof(buf), "%s", nvl);
        int i = 0;
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && i < ng;
             t = strtok_r(NULL, ",", &save))
            gpus[i++].nvlink_group = small(t);
    }
    /* labels=a100,ib=hdr: bare names and KEY=VALUE pairs. */
    struct node_label labels[16];
    char lkeys[16][64], lvals[16][64];
    int nl = 0;
    const char *ls = arg(w, n, "labels");
    if (ls) {
        snprintf(buf, sizeof(buf), "%s", ls);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && nl < 16;
             t = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(t, '=');
            snprintf(lvals[nl], sizeof(lvals[nl]), "%s", eq ? eq + 1 : "");
            if (eq)
                *eq = '\0';
            snprintf(lkeys[nl], sizeof(lkeys[nl]), "%s", t);
            labels[nl].key = lkeys[nl];
            labels[nl].value = lvals[nl];
            nl++;
        }
    }
    struct sched_node_desc d = {.name = w[1],
                                .group = arg(w, n, "group"),
                                .state = SCHED_NODE_UP,
                                .ngpus = ng,
                                .gpus = gpus,
                                .labels = labels,
                                .nlabels = nl};
    if (host_args(c, w, n, &d.cpus, &d.mem) < 0)
        return -1;
    const char *st = arg(w, n, "state");
    if (st) {
        const char *names[] = {"up", "down", "draining", "drained"};
        int k;
        for (k = 0; k < 4 && strcmp(names[k], st) != 0; k++)
            ;
        if (k == 4)
            return failf(c, "bad state '%s'", st);
        d.state = (enum sched_node_state)k;
    }
    struct sh_error err;
    if (sched_node_set(c->s, &d, &err) < 0)
        return failf(c, "sched_node_set: %s", err.msg);
    return 0;
}

static struct nodecopy *copy_find(struct scn *c, const char *name)
{
    for (int i = 0; i < c->ncopies; i++) {
        if (strcmp(c->copies[i].name, name) == 0)
            return &c->copies[i];
    }
    return NULL;
}

static int do_gpu(struct scn *c, char **w, int n)
{
    int64_t gi;
    if (n < 3)
        return failf(c, "gpu NODE INDEX ...");
    struct nodecopy *nc = copy_find(c, w[1]);
    if (!nc)
        return failf(c, "gpu: node %s not described by the scenario", w[1]);
    if (num(c, "gpu", w[2], 0, nc->ngpus - 1, &gi) < 0)
        return -1;
    /* The copies array may have moved: point into this copy again. */
    for (int i = 0; i < nc->ngpus; i++) {
        nc->gpus[i].model = nc->models[i];
        nc->gpus[i].slices = nc->gpus[i].nslices ? nc->slices[i] : NULL;
    }
    struct sched_gpu_desc *g = &nc->gpus[gi];
    g->unfenced = flag(w, n, "unfenced");
    g->unschedulable = flag(w, n, "unsched");
    const char *sl = arg(w, n, "slices");
    if (flag(w, n, "whole")) {
        g->nslices = 0;
        g->slices = NULL;
    }
    if (sl) {
        const char *x = strchr(sl, 'x');
        int64_t cnt, a, b;
        const char *share = arg(w, n, "share");
        uint64_t sm = g->mem_bytes;
        if (!x || !share)
            return failf(c, "slices=NxPROFILE needs share=A/B");
        char cbuf[16];
        snprintf(cbuf, sizeof(cbuf), "%.*s", (int)(x - sl), sl);
        if (num(c, "slices", cbuf, 1, 16, &cnt) < 0)
            return -1;
        if (sscanf(share, "%lld/%lld", (long long *)&a, (long long *)&b) != 2)
            return failf(c, "share=A/B");
        if (arg(w, n, "mem") && mem(c, arg(w, n, "mem"), &sm) < 0)
            return -1;
        const char *kind = arg(w, n, "kind");
        bool shared = kind ? strcmp(kind, "shared") == 0
                           : strncmp(x + 1, "shared", 6) == 0;
        for (int k = 0; k < cnt; k++) {
            struct gpu_slice *s = &nc->slices[gi][k];
            memset(s, 0, sizeof(*s));
            s->kind = shared ? GPU_SLICE_SHARED : GPU_SLICE_MIG;
            snprintf(s->profile, sizeof(s->profile), "%s", x + 1);
            s->mem_bytes = sm;
            s->share_num = (int)a;
            s->share_den = (int)b;
            s->gi_id = s->ci_id = -1;
        }
        g->nslices = (int)cnt;
        g->slices = nc->slices[gi];
    }
    struct sched_node_desc d = {.name = nc->name,
                                .group = nc->group[0] ? nc->group : NULL,
                                .state = (enum sched_node_state)nc->state,
                                .ngpus = nc->ngpus,
                                .gpus = nc->gpus,
                                .cpus = nc->cpus,
                                .mem = nc->hostmem};
    struct sh_error err;
    if (sched_node_set(c->s, &d, &err) < 0) {
        const char *want = arg(w, n, "error");
        if (want && strstr(err.msg, want))
            return 0;
        return failf(c, "sched_node_set: %s", err.msg);
    }
    if (arg(w, n, "error"))
        return failf(c, "gpu: expected an error");
    return 0;
}

static int node_with_copy(struct scn *c, char **w, int n)
{
    if (do_node(c, w, n) < 0)
        return -1;
    struct nodecopy *nc = copy_find(c, w[1]);
    if (!nc) {
        void *p =
            realloc(c->copies, sizeof(*c->copies) * (size_t)(c->ncopies + 1));
        if (!p)
            return failf(c, "out of memory");
        c->copies = p;
        nc = &c->copies[c->ncopies++];
    }
    memset(nc, 0, sizeof(*nc));
    snprintf(nc->name, sizeof(nc->name), "%s", w[1]);
    host_args(c, w, n, &nc->cpus, &nc->hostmem);
    if (arg(w, n, "group"))
        snprintf(nc->group, sizeof(nc->group), "%s", arg(w, n, "group"));
    const char *stn[] = {"up", "down", "draining", "drained"};
    for (int k = 0; k < 4 && arg(w, n, "state"); k++) {
        if (strcmp(stn[k], arg(w, n, "state")) == 0)
            nc->state = k;
    }
    /* Re-parse the GPU list into the copy (same rules as do_node). */
    uint64_t m = 80ULL << 30;
    if (arg(w, n, "mem"))
        mem(c, arg(w, n, "mem"), &m);
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", arg(w, n, "gpus"));
    int ng = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        char *x = strchr(t, 'x');
        *x = '\0';
        for (int i = 0; i < small(t) && ng < 64; i++) {
            snprintf(nc->models[ng], sizeof(nc->models[ng]), "%s", x + 1);
            nc->gpus[ng].model = nc->models[ng];
            nc->gpus[ng].mem_bytes = m;
            nc->gpus[ng].nvlink_group = -1;
            ng++;
        }
    }
    const char *nvl = arg(w, n, "nvlink");
    if (nvl) {
        snprintf(buf, sizeof(buf), "%s", nvl);
        int i = 0;
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && i < ng;
             t = strtok_r(NULL, ",", &save))
            nc->gpus[i++].nvlink_group = small(t);
    }
    nc->ngpus = ng;
    return 0;
}

/* ----------------------------------------------------------- tenants */

static int quota_list(struct scn *c, const char *g, const char *l,
                      struct sched_quota *q, int *nq, char names[][64])
{
    *nq = 0;
    const char *lists[2] = {g, l};
    for (int which = 0; which < 2; which++) {
        if (!lists[which])
            continue;
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", lists[which]);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
             t = strtok_r(NULL, ",", &save)) {
            char *colon = strrchr(t, ':');
            const char *model = colon ? t : "any";
            const char *amount = colon ? colon + 1 : t;
            if (colon)
                *colon = '\0';
            int k;
            for (k = 0; k < *nq; k++) {
                const char *have = q[k].model ? q[k].model : "any";
                if (strcmp(have, model) == 0)
                    break;
            }
            if (k == *nq) {
                if (*nq == 16)
                    return failf(c, "too many quota entries");
                snprintf(names[k], 64, "%s", model);
                q[k].model = strcmp(model, "any") ? names[k] : NULL;
                q[k].guaranteed = 0;
                q[k].limit = SCHED_UNLIMITED;
                (*nq)++;
            }
            int64_t u;
            if (units(c, amount, &u) < 0)
                return -1;
            if (which == 0)
                q[k].guaranteed = u;
            else
                q[k].limit = u;
        }
    }
    return 0;
}

static int do_tenant(struct scn *c, char **w, int n, bool team)
{
    struct sched_quota q[16];
    char names[16][64];
    int nq;
    struct sh_error err;
    if (n < 2)
        return failf(c, "%s needs a name", w[0]);
    if (quota_list(c, arg(w, n, "guaranteed"), arg(w, n, "limit"), q, &nq,
                   names) < 0)
        return -1;
    int rc =
        team ? sched_team_set(c->s, w[1], q, nq, &err)
             : sched_project_set(c->s, w[1], arg(w, n, "team"), q, nq, &err);
    if (rc < 0)
        return failf(c, "%s: %s", w[0], err.msg);
    return 0;
}

static int do_user(struct scn *c, char **w, int n)
{
    int64_t g = SCHED_UNLIMITED, j = 0, t = 0;
    struct sh_error err;
    if (n < 2)
        return failf(c, "user needs a name");
    if (arg(w, n, "max_gpus") && units(c, arg(w, n, "max_gpus"), &g) < 0)
        return -1;
    if (arg(w, n, "max_jobs") &&
        num(c, "max_jobs", arg(w, n, "max_jobs"), 0, 1000000, &j) < 0)
        return -1;
    if (arg(w, n, "max_time") &&
        num(c, "max_time", arg(w, n, "max_time"), 0, INT32_MAX, &t) < 0)
        return -1;
    if (sched_user_set(c->s, w[1], g, (int)j, t * 1000, &err) < 0)
        return failf(c, "user: %s", err.msg);
    return 0;
}

/* -------------------------------------------------------------- jobs */

static struct jobdef *job_find(struct scn *c, unsigned long long id)
{
    for (int i = 0; i < c->njobs; i++) {
        if (c->jobs[i].id == id)
            return &c->jobs[i];
    }
    return NULL;
}

static int job_parse(struct scn *c, char **w, int n, struct jobdef *jd)
{
    int64_t v;
    memset(jd, 0, sizeof(*jd));
    v = 0;
    if (n >= 2 && !strchr(w[1], '=') &&
        num(c, "id", w[1], 0, INT64_MAX, &v) < 0)
        return -1;
    if (n < 2 && strcmp(w[0], "job") == 0)
        return failf(c, "%s needs an id", w[0]);
    jd->id = (unsigned long long)v;
    snprintf(jd->user, sizeof(jd->user), "%s",
             arg(w, n, "user") ? arg(w, n, "user") : "u");
    snprintf(jd->project, sizeof(jd->project), "%s",
             arg(w, n, "project") ? arg(w, n, "project") : "p");
    struct sched_job_desc *d = &jd->d;
    d->id = jd->id;
    d->user = jd->user;
    d->project = jd->project;
    d->priority = JOB_PRIO_NORMAL;
    d->gpus = 1;
    d->nodes = 1;
    if (arg(w, n, "type")) {
        snprintf(jd->type, sizeof(jd->type), "%s", arg(w, n, "type"));
        d->gpu_type = jd->type;
    }
    if (arg(w, n, "slice")) {
        snprintf(jd->slice, sizeof(jd->slice), "%s", arg(w, n, "slice"));
        d->slice = jd->slice;
    }
    if (arg(w, n, "gpus") &&
        num(c, "gpus", arg(w, n, "gpus"), 0, 65536, &v) < 0)
        return -1;
    if (arg(w, n, "gpus"))
        d->gpus = (int)v;
    if (arg(w, n, "nodes") &&
        num(c, "nodes", arg(w, n, "nodes"), 0, 4096, &v) < 0)
        return -1;
    if (arg(w, n, "nodes"))
        d->nodes = (int)v;
    if (arg(w, n, "mem")) {
        if (mem(c, arg(w, n, "mem"), &d->gpu_mem) < 0)
            return -1;
        d->flexible = !d->slice && d->gpus == 1 && !arg(w, n, "nodes");
    }
    if (arg(w, n, "submit") &&
        num(c, "submit", arg(w, n, "submit"), 0, INT32_MAX, &v) < 0)
        return -1;
    d->submit_ms = arg(w, n, "submit") ? v * 1000 : 0;
    if (arg(w, n, "limit") &&
        num(c, "limit", arg(w, n, "limit"), 0, INT32_MAX, &v) < 0)
        return -1;
    d->time_limit_ms = arg(w, n, "limit") ? v * 1000 : 0;
    const char *p = arg(w, n, "prio");
    if (p && job_priority_from_name(p, &d->priority) < 0)
        return failf(c, "bad prio '%s'", p);
    if (arg(w, n, "nodelist")) {
        snprintf(jd->nodelist, sizeof(jd->nodelist), "%s",
                 arg(w, n, "nodelist"));
        d->nodelist = jd->nodelist;
    }
    if (arg(w, n, "exclude")) {
        snprintf(jd->exclude, sizeof(jd->exclude), "%s", arg(w, n, "exclude"));
        d->exclude = jd->exclude;
    }
    if (arg(w, n, "constraint")) {
        snprintf(jd->constraint, sizeof(jd->constraint), "%s",
                 arg(w, n, "constraint"));
        d->constraint = jd->constraint;
    }
    d->exclusive = flag(w, n, "exclusive");
    if (host_args(c, w, n, &d->cpus, &d->mem) < 0)
        return -1;
    /* LAS: ckpt=1 (checkpointable), attained=GPU-seconds, queued=T. */
    d->checkpointable =
        arg(w, n, "ckpt") && strcmp(arg(w, n, "ckpt"), "1") == 0;
    if (arg(w, n, "attained") &&
        num(c, "attained", arg(w, n, "attained"), 0, INT32_MAX, &v) < 0)
        return -1;
    d->attained_gpu_ms = arg(w, n, "attained") ? v * 1000 : 0;
    if (arg(w, n, "queued") &&
        num(c, "queued", arg(w, n, "queued"), 0, INT32_MAX, &v) < 0)
        return -1;
    d->queued_ms = arg(w, n, "queued") ? v * 1000 : 0;
    return 0;
}

static struct jobdef *job_keep(struct scn *c, const struct jobdef *jd)
{
    struct jobdef *k = job_find(c, jd->id);
    if (!k) {
        if (c->njobs == MAXJOBS)
            return NULL;
        k = &c->jobs[c->njobs++];
    }
    *k = *jd;
    k->d.user = k->user;
    k->d.project = k->project;
    k->d.gpu_type = jd->d.gpu_type ? k->type : NULL;
    k->d.slice = jd->d.slice ? k->slice : NULL;
    k->d.nodelist = jd->d.nodelist ? k->nodelist : NULL;
    k->d.exclude = jd->d.exclude ? k->exclude : NULL;
    k->d.constraint = jd->d.constraint ? k->constraint : NULL;
    return k;
}

static int do_job(struct scn *c, char **w, int n)
{
    struct jobdef jd;
    struct sh_error err;
    if (job_parse(c, w, n, &jd) < 0)
        return -1;
    struct jobdef *k = job_keep(c, &jd);
    if (!k)
        return failf(c, "too many jobs");
    if (sched_job_add(c->s, &k->d, &err) < 0)
        return failf(c, "job add: %s", err.msg);
    return 0;
}

/* on=n1:0,1,2,3;n2:0,1 or on=n1:3/2 (GPU 3, slice 2), or on=n1;n2 (the
 * nodes of a job without GPUs) */
static int places_parse(struct scn *c, const char *on, struct sched_place *p,
                        int max, int *np, char names[][64])
{
    char buf[1024];
    int n = 0, nn = 0;
    snprintf(buf, sizeof(buf), "%s", on);
    for (char *s1 = NULL, *t = strtok_r(buf, ";", &s1); t;
         t = strtok_r(NULL, ";", &s1)) {
        char *colon = strchr(t, ':');
        if (!colon && nn < 64 && n < max) { /* a node, no GPU */
            snprintf(names[nn], 64, "%s", t);
            p[n].node = names[nn++];
            p[n].gpu = -1;
            p[n++].slice = -1;
            continue;
        }
        if (!colon || nn == 64)
            return failf(c, "on= wants NODE[:GPU[,GPU]][;NODE...]");
        *colon = '\0';
        snprintf(names[nn], 64, "%s", t);
        for (char *s2 = NULL, *g = strtok_r(colon + 1, ",", &s2); g;
             g = strtok_r(NULL, ",", &s2)) {
            if (n == max)
                return failf(c, "too many places");
            char *slash = strchr(g, '/');
            p[n].node = names[nn];
            p[n].gpu = small(g);
            p[n].slice = slash ? small(slash + 1) : -1;
            n++;
        }
        nn++;
    }
    *np = n;
    return 0;
}

static int do_running(struct scn *c, char **w, int n)
{
    struct jobdef jd;
    struct sched_place p[256];
    char names[64][64];
    int np = 0;
    int64_t start = 0;
    struct sh_error err;
    if (job_parse(c, w, n, &jd) < 0)
        return -1;
    if (!arg(w, n, "on"))
        return failf(c, "running needs on=");
    if (places_parse(c, arg(w, n, "on"), p, 256, &np, names) < 0)
        return -1;
    if (arg(w, n, "start") &&
        num(c, "start", arg(w, n, "start"), 0, INT32_MAX, &start) < 0)
        return -1;
    struct jobdef *k = job_keep(c, &jd);
    if (!k)
        return failf(c, "too many jobs");
    const char *want = arg(w, n, "error");
    if (sched_job_recover(c->s, &k->d, start * 1000, p, np, &err) < 0) {
        if (want && strstr(err.msg, want))
            return 0;
        return failf(c, "recover: %s", err.msg);
    }
    if (want)
        return failf(c, "recover: expected an error");
    return 0;
}

/* accept|reject JOBSPEC [error="..."]: sched_job_check at submission. */
static int do_check(struct scn *c, char **w, int n, bool accept)
{
    struct jobdef jd;
    struct sh_error err = {0};
    if (job_parse(c, w, n, &jd) < 0)
        return -1;
    int rc = sched_job_check(c->s, &jd.d, &err);
    if (rc == 0 && arg(w, n, "limits"))
        rc = sched_job_check_limits(c->s, &jd.d, &err);
    if (accept && rc < 0)
        return failf(c, "job %llu rejected: %s", jd.id, err.msg);
    if (!accept && rc == 0)
        return failf(c, "job %llu accepted", jd.id);
    if (!accept && err.code != SH_EINVAL && err.code != SH_EQUOTA)
        return failf(c, "job %llu: wrong error code", jd.id);
    const char *want = arg(w, n, "error");
    if (!accept && want && !strstr(err.msg, want))
        return failf(c, "job %llu: error '%s' lacks '%s'", jd.id, err.msg,
                     want);
    return 0;
}

/* ----------------------------------------------------------- actions */

static int64_t secs(struct scn *c, const char *s, int64_t *out)
{
    return num(c, "time", s, 0, INT32_MAX, out);
}

static int do_run(struct scn *c, char **w, int n)
{
    int64_t t;
    struct sh_error err;
    if (n < 2 || secs(c, w[1], &t) < 0)
        return failf(c, "run TIME [full]");
    if (sched_run(c->s, t * 1000, flag(w, n, "full"), &c->dec, &err) < 0)
        return failf(c, "run: %s", err.msg);
    c->ran = true;
    return 0;
}

/* plan T: sched_plan_estimates() at time T (what shoald does before it
 * lists jobs). */
static int do_plan(struct scn *c, char **w, int n)
{
    int64_t t;
    struct sh_error err;
    if (n < 2 || secs(c, w[1], &t) < 0)
        return failf(c, "plan TIME");
    if (sched_plan_estimates(c->s, t * 1000, &err) < 0)
        return failf(c, "plan: %s", err.msg);
    return 0;
}

static int do_end(struct scn *c, char **w, int n)
{
    int64_t id, t = 0;
    struct sh_error err;
    if (n < 2 || num(c, "id", w[1], 0, INT64_MAX, &id) < 0)
        return failf(c, "end ID at=T");
    if (arg(w, n, "at") && secs(c, arg(w, n, "at"), &t) < 0)
        return -1;
    if (sched_job_end(c->s, (uint64_t)id, t * 1000, &err) < 0)
        return failf(c, "end: %s", err.msg);
    return 0;
}

static int do_remove(struct scn *c, char **w, int n)
{
    int64_t id;
    struct sh_error err;
    if (n < 2 || num(c, "id", w[1], 0, INT64_MAX, &id) < 0)
        return failf(c, "remove ID");
    if (sched_job_remove(c->s, (uint64_t)id, &err) < 0)
        return failf(c, "remove: %s", err.msg);
    return 0;
}

/* usage PROJECT GPU_HOURS [at=T]: seed decayed usage from history. */
static int do_usage(struct scn *c, char **w, int n)
{
    int64_t t = 0;
    struct sh_error err;
    if (n < 3)
        return failf(c, "usage PROJECT GPU_HOURS [at=T]");
    char *end;
    double h = strtod(w[2], &end);
    if (end == w[2] || *end || h < 0)
        return failf(c, "bad GPU hours '%s'", w[2]);
    if (arg(w, n, "at") && secs(c, arg(w, n, "at"), &t) < 0)
        return -1;
    if (sched_usage_seed(c->s, w[1], h * SCHED_UNITS_PER_GPU * 3600e3, t * 1000,
                         &err) < 0)
        return failf(c, "usage: %s", err.msg);
    return 0;
}

static int do_nodestate(struct scn *c, char **w, int n)
{
    const char *names[] = {"up", "down", "draining", "drained"};
    struct sh_error err;
    int k;
    if (n < 3)
        return failf(c, "nodestate NODE STATE");
    for (k = 0; k < 4 && strcmp(names[k], w[2]) != 0; k++)
        ;
    if (k == 4)
        return failf(c, "bad state '%s'", w[2]);
    if (sched_node_set_state(c->s, w[1], (enum sched_node_state)k, &err) < 0)
        return failf(c, "nodestate: %s", err.msg);
    struct nodecopy *nc = copy_find(c, w[1]);
    if (nc)
        nc->state = k;
    return 0;
}

/* ------------------------------------------------------ expectations */

static const struct sched_start *find_start(struct scn *c, uint64_t id)
{
    for (size_t i = 0; i < c->dec.nstarts; i++) {
        if (c->dec.starts[i].job == id)
            return &c->dec.starts[i];
    }
    return NULL;
}

static void placement_text(struct scn *c, const struct sched_start *st,
                           char *buf, size_t size)
{
    size_t off = 0;
    const char *last = NULL;
    buf[0] = '\0';
    for (int i = 0; i < st->nplaces && off + 16 < size; i++) {
        const struct sched_place *p = &c->dec.places[st->first + (size_t)i];
        bool same = last && strcmp(last, p->node) == 0;
        int wr;
        if (p->gpu < 0) /* a job without GPUs: the node */
            wr = snprintf(buf + off, size - off, "%s%s", last ? ";" : "",
                          p->node);
        else if (p->slice >= 0)
            wr = snprintf(buf + off, size - off, "%s%s%s%d/%d",
                          same ? "," : (last ? ";" : ""), same ? "" : p->node,
                          same ? "" : ":", p->gpu, p->slice);
        else
            wr = snprintf(buf + off, size - off, "%s%s%s%d",
                          same ? "," : (last ? ";" : ""), same ? "" : p->node,
                          same ? "" : ":", p->gpu);
        off += (size_t)wr;
        last = p->node;
    }
}

static int expect_start(struct scn *c, char **w, int n, bool want)
{
    int64_t id;
    if (n < 3 || num(c, "id", w[2], 0, INT64_MAX, &id) < 0)
        return failf(c, "expect start ID [on=...]");
    const struct sched_start *st = find_start(c, (uint64_t)id);
    if (!want) {
        if (st)
            return failf(c, "job %lld started", (long long)id);
        return 0;
    }
    if (!st)
        return failf(c, "job %lld did not start", (long long)id);
    const char *on = arg(w, n, "on");
    char got[1024];
    placement_text(c, st, got, sizeof(got));
    if (on && strcmp(on, got) != 0)
        return failf(c, "job %lld placed on %s, expected %s", (long long)id,
                     got, on);
    if (arg(w, n, "nodes")) {
        int64_t nn;
        if (num(c, "nodes", arg(w, n, "nodes"), 0, 4096, &nn) < 0)
            return -1;
        if (st->nnodes != nn)
            return failf(c, "job %lld on %d nodes (%s), expected %lld",
                         (long long)id, st->nnodes, got, (long long)nn);
    }
    return 0;
}

static int expect_preempt(struct scn *c, char **w, int n, bool want)
{
    int64_t id, f = -1;
    if (n < 3 || num(c, "id", w[2], 0, INT64_MAX, &id) < 0)
        return failf(c, "expect preempt ID [for=ID]");
    if (arg(w, n, "for") &&
        num(c, "for", arg(w, n, "for"), 0, INT64_MAX, &f) < 0)
        return -1;
    for (size_t i = 0; i < c->dec.npreempts; i++) {
        if (c->dec.preempts[i].job != (uint64_t)id)
            continue;
        if (!want)
            return failf(c, "job %lld was preempted", (long long)id);
        if (f >= 0 && c->dec.preempts[i].for_job != (uint64_t)f)
            return failf(
                c, "job %lld preempted for %llu, expected %lld", (long long)id,
                (unsigned long long)c->dec.preempts[i].for_job, (long long)f);
        return 0;
    }
    if (want)
        return failf(c, "job %lld was not preempted", (long long)id);
    return 0;
}

static int expect_reason(struct scn *c, char **w, int n)
{
    int64_t id;
    char buf[512];
    if (n < 4 || num(c, "id", w[2], 0, INT64_MAX, &id) < 0)
        return failf(c, "expect reason ID \"text\" | ~\"part\"");
    sched_job_reason(c->s, (uint64_t)id, buf, sizeof(buf));
    bool part = w[3][0] == '~';
    const char *want = part ? w[3] + 1 : w[3];
    if (part ? !strstr(buf, want) : strcmp(buf, want) != 0)
        return failf(c, "job %lld reason '%s', expected %s'%s'", (long long)id,
                     buf, part ? "a part " : "", want);
    return 0;
}

static int expect_state(struct scn *c, char **w, int n)
{
    int64_t id;
    struct sched_job_status st;
    struct sh_error err;
    const char *names[] = {"pending", "running", "preempting"};
    if (n < 4 || num(c, "id", w[2], 0, INT64_MAX, &id) < 0)
        return failf(c, "expect state ID STATE");
    if (sched_job_status(c->s, (uint64_t)id, &st, &err) < 0) {
        if (strcmp(w[3], "gone") == 0)
            return 0;
        return failf(c, "status: %s", err.msg);
    }
    if (strcmp(names[st.state], w[3]) != 0)
        return failf(c, "job %lld is %s, expected %s", (long long)id,
                     names[st.state], w[3]);
    return 0;
}

static int expect_est(struct scn *c, char **w, int n)
{
    int64_t id, t;
    struct sched_job_status st;
    struct sh_error err;
    if (n < 4 || num(c, "id", w[2], 0, INT64_MAX, &id) < 0)
        return failf(c, "expect est ID SECONDS|none");
    if (sched_job_status(c->s, (uint64_t)id, &st, &err) < 0)
        return failf(c, "status: %s", err.msg);
    if (strcmp(w[3], "none") == 0) {
        if (st.est_start_ms != 0)
            return failf(c, "job %lld estimated at %lld s, expected none",
                         (long long)id, (long long)(st.est_start_ms / 1000));
        /* expect est ID none ~"part of the no-estimate text" */
        const char *why = sched_est_why_text(st.est_why);
        if (n >= 5 && w[4][0] == '~' && !strstr(why, w[4] + 1))
            return failf(c, "job %lld: '%s', expected it to hold '%s'",
                         (long long)id, why, w[4] + 1);
        return 0;
    }
    if (secs(c, w[3], &t) < 0)
        return -1;
    if (st.est_start_ms != t * 1000)
        return failf(c, "job %lld estimated at %.3f s, expected %lld s",
                     (long long)id, (double)st.est_start_ms / 1000.0,
                     (long long)t);
    return 0;
}

static int expect_count(struct scn *c, char **w, int n, size_t have)
{
    int64_t want;
    if (n < 3 || num(c, "count", w[2], 0, 1000000, &want) < 0)
        return failf(c, "expect %s N", w[1]);
    if ((int64_t)have != want)
        return failf(c, "%zu %s, expected %lld", have, w[1], (long long)want);
    return 0;
}

static int do_expect(struct scn *c, char **w, int n)
{
    if (n < 2)
        return failf(c, "expect WHAT ...");
    if (!c->ran && strcmp(w[1], "reason") != 0 && strcmp(w[1], "state") != 0)
        return failf(c, "expect before any run");
    if (strcmp(w[1], "start") == 0)
        return expect_start(c, w, n, true);
    if (strcmp(w[1], "nostart") == 0)
        return expect_start(c, w, n, false);
    if (strcmp(w[1], "starts") == 0)
        return expect_count(c, w, n, c->dec.nstarts);
    if (strcmp(w[1], "preempt") == 0)
        return expect_preempt(c, w, n, true);
    if (strcmp(w[1], "nopreempt") == 0)
        return expect_preempt(c, w, n, false);
    if (strcmp(w[1], "preempts") == 0)
        return expect_count(c, w, n, c->dec.npreempts);
    if (strcmp(w[1], "reason") == 0)
        return expect_reason(c, w, n);
    if (strcmp(w[1], "state") == 0)
        return expect_state(c, w, n);
    if (strcmp(w[1], "est") == 0)
        return expect_est(c, w, n);
    if (strcmp(w[1], "full") == 0) {
        if (c->dec.full_pass != (n < 3 || strcmp(w[2], "no") != 0))
            return failf(c, "the run was %s",
                         c->dec.full_pass ? "full" : "incremental");
        return 0;
    }
    return failf(c, "unknown expectation '%s'", w[1]);
}

static int do_config(struct scn *c, char **w, int n)
{
    int64_t v;
    if (c->s)
        return failf(c, "config must come first");
    for (int i = 1; i < n; i++) {
        char *eq = strchr(w[i], '=');
        if (!eq)
            return failf(c, "config KEY=VALUE");
        *eq = '\0';
        const char *k = w[i], *val = eq + 1;
        if (strcmp(k, "policy") == 0) {
            struct sh_error err;
            if (sched_policy_from_name(val, &c->cfg.policy, &err) < 0)
                return failf(c, "%s", err.msg);
            continue;
        }
        if (strcmp(k, "las_levels") == 0) {
            /* GPU-seconds, ascending: "3600,36000". */
            c->cfg.las_nthresholds = 0;
            for (char *t = (char *)val, *sv = NULL;
                 (t = strtok_r(t, ",", &sv)) != NULL; t = NULL) {
                if (c->cfg.las_nthresholds == SCHED_LAS_THRESHOLDS_MAX ||
                    num(c, k, t, 1, INT32_MAX, &v) < 0)
                    return failf(c, "bad las_levels");
                c->cfg.las_thresholds[c->cfg.las_nthresholds++] = v * 1000;
            }
            continue;
        }
        if (num(c, k, val, 0, INT32_MAX, &v) < 0)
            return -1;
        if (strcmp(k, "max_reservations") == 0)
            c->cfg.max_reservations = (int)v;
        else if (strcmp(k, "default_limit") == 0)
            c->cfg.default_time_limit_ms = v * 1000;
        else if (strcmp(k, "fair_weight") == 0)
            c->cfg.fair_weight = v;
        else if (strcmp(k, "age_weight") == 0)
            c->cfg.age_weight = v;
        else if (strcmp(k, "grace") == 0)
            c->cfg.preempt_grace_ms = v * 1000;
        else if (strcmp(k, "full_pass_interval") == 0)
            c->cfg.full_pass_interval_ms = v * 1000;
        else if (strcmp(k, "half_life") == 0)
            c->cfg.usage_half_life_ms = v * 1000;
        else if (strcmp(k, "short_credit") == 0)
            c->cfg.short_credit_ms = v * 1000;
        else if (strcmp(k, "las_starve_factor") == 0)
            c->cfg.las_starve_factor = v;
        else if (strcmp(k, "las_starve_max") == 0)
            c->cfg.las_starve_max_ms = v * 1000;
        else if (strcmp(k, "las_hold") == 0)
            c->cfg.las_hold_ms = v * 1000;
        else if (strcmp(k, "las_hold_gpus") == 0)
            c->cfg.las_hold_gpus = v;
        else if (strcmp(k, "las_quantum") == 0)
            c->cfg.las_quantum_ms = v * 1000;
        else if (strcmp(k, "reslice") == 0)
            c->cfg.reslice = v != 0;
        else
            return failf(c, "unknown config '%s'", k);
    }
    return 0;
}

static int ensure_engine(struct scn *c)
{
    struct sh_error err;
    if (c->s)
        return 0;
    c->s = sched_create(&c->cfg, &err);
    if (!c->s)
        return failf(c, "sched_create: %s", err.msg);
    return 0;
}

static int do_line(struct scn *c, char **w, int n)
{
    const char *d = w[0];
    if (strcmp(d, "config") == 0)
        return do_config(c, w, n);
    if (ensure_engine(c) < 0)
        return -1;
    if (strcmp(d, "node") == 0)
        return node_with_copy(c, w, n);
    if (strcmp(d, "gpu") == 0)
        return do_gpu(c, w, n);
    if (strcmp(d, "team") == 0)
        return do_tenant(c, w, n, true);
    if (strcmp(d, "project") == 0)
        return do_tenant(c, w, n, false);
    if (strcmp(d, "user") == 0)
        return do_user(c, w, n);
    if (strcmp(d, "job") == 0)
        return do_job(c, w, n);
    if (strcmp(d, "running") == 0)
        return do_running(c, w, n);
    if (strcmp(d, "accept") == 0 || strcmp(d, "reject") == 0)
        return do_check(c, w, n, d[0] == 'a');
    if (strcmp(d, "run") == 0)
        return do_run(c, w, n);
    if (strcmp(d, "plan") == 0)
        return do_plan(c, w, n);
    if (strcmp(d, "end") == 0)
        return do_end(c, w, n);
    if (strcmp(d, "remove") == 0)
        return do_remove(c, w, n);
    if (strcmp(d, "nodestate") == 0)
        return do_nodestate(c, w, n);
    if (strcmp(d, "usage") == 0)
        return do_usage(c, w, n);
    if (strcmp(d, "expect") == 0)
        return do_expect(c, w, n);
    return failf(c, "unknown directive '%s'", d);
}

int scn_run_text(const char *name, const char *text, char *msg, size_t size)
{
    struct scn c;
    int rc = 0;
    memset(&c, 0, sizeof(c));
    c.name = name;
    c.msg = msg;
    c.size = size;
    sched_config_init(&c.cfg);
    c.cfg.full_pass_interval_ms = 0; /* every run is full unless set */
    sched_decisions_init(&c.dec);
    c.jobs = calloc(MAXJOBS, sizeof(*c.jobs));
    msg[0] = '\0';
    if (!c.jobs)
        return -1;
    const char *p = text;
    char line[LINE_MAX_SCN];
    while (*p && rc == 0) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        c.line++;
        if (len >= sizeof(line)) {
            rc = failf(&c, "line too long");
            break;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p = nl ? nl + 1 : p + len;
        char *w[MAXW];
        int n = split(line, w);
        if (n < 0) {
            rc = failf(&c, "too many words");
            break;
        }
        if (n == 0)
            continue;
        rc = do_line(&c, w, n);
        if (rc == 0 && c.s) {
            struct sh_error err;
            if (sched_check_invariants(c.s, &err) < 0)
                rc =
                    failf(&c, "invariant broken after '%s': %s", w[0], err.msg);
        }
    }
    sched_decisions_fini(&c.dec);
    sched_destroy(c.s);
    free(c.jobs);
    free(c.copies);
    return rc;
}

int scn_run_file(const char *path, char *msg, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(msg, size, "%s: cannot open", path);
        return -1;
    }
    char *text = malloc(1 << 20);
    size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (!text) {
        snprintf(msg, size, "%s: out of memory", path);
        return -1;
    }
    text[n] = '\0';
    const char *base = strrchr(path, '/');
    int rc = scn_run_text(base ? base + 1 : path, text, msg, size);
    free(text);
    return rc;
}
