/* SPDX-License-Identifier: Apache-2.0 */
/* A job's JSON view written straight into a buffer, with no jansson tree:
 * the same text, key for key and byte for byte, as
 * json_dumps(job_to_json(job), JSON_COMPACT), at a fraction of the cost.
 * Listings of tens of thousands of jobs use it; a unit test holds the two
 * to each other. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/model/job_deps.h"
#include "lib/model/job_json.h"
#include "lib/model/job_mail.h"
#include "lib/util/clock.h"

struct out {
    struct strbuf *sb;
    bool failed;
    bool hide_env; /* values of env and container_env as JOB_ENV_HIDDEN */
};

static void raw(struct out *o, const char *s, size_t n)
{
    if (!o->failed && strbuf_append(o->sb, s, n) < 0)
        o->failed = true;
}

#define LIT(o, s) raw((o), (s), sizeof(s) - 1)

/* A JSON string as jansson escapes it (no ASCII-only, no escaped '/'). */
static void str(struct out *o, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    raw(o, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        raw(o, run, (size_t)(s - run));
        run = s + 1;
        char esc[7] = {'\\', 0};
        size_t n = 2;
        switch (c) {
        case '"':
        case '\\':
            esc[1] = (char)c;
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
        }
        raw(o, esc, n);
    }
    raw(o, run, (size_t)(s - run));
    raw(o, "\"", 1);
}

static void key(struct out *o, const char *k)
{
    raw(o, ",\"", 2);
    raw(o, k, strlen(k));
    raw(o, "\":", 2);
}

static void str_or_null(struct out *o, const char *s)
{
    if (s)
        str(o, s);
    else
        LIT(o, "null");
}

static void integer(struct out *o, long long v)
{
    char b[24];
    int n = snprintf(b, sizeof(b), "%lld", v);
    raw(o, b, (size_t)n);
}

static void boolean(struct out *o, bool v)
{
    if (v)
        LIT(o, "true");
    else
        LIT(o, "false");
}

/* jansson's real: %.17g, with ".0" when it would read as an integer, and
 * the exponent without '+' or leading zeros. */
static void real(struct out *o, double v)
{
    if (!isfinite(v)) {
        o->failed = true; /* jansson has no such value either */
        return;
    }
    char b[40], r[40];
    snprintf(b, sizeof(b), "%.17g", v);
    if (!strpbrk(b, ".eE"))
        strcat(b, ".0");
    char *e = strchr(b, 'e');
    if (e) {
        size_t n = (size_t)(e - b) + 1;
        memcpy(r, b, n);
        const char *p = e + 1;
        if (*p == '+')
            p++;
        else if (*p == '-')
            r[n++] = *p++;
        while (*p == '0' && p[1])
            p++;
        strcpy(r + n, p);
        raw(o, r, strlen(r));
        return;
    }
    raw(o, b, strlen(b));
}

static void iso(struct out *o, int64_t ms)
{
    if (ms <= 0) {
        LIT(o, "null");
        return;
    }
    char b[32];
    clock_format_iso(ms, b, sizeof(b));
    str(o, b);
}

/* The container part, as job_container_to_json writes it. */
static void container(struct out *o, const struct job_container *c)
{
    if (!c->image)
        return;
    key(o, "image");
    str(o, c->image);
    key(o, "container_mounts");
    raw(o, "[", 1);
    for (int i = 0; i < c->nmounts; i++) {
        raw(o, i ? ",{\"src\":" : "{\"src\":", i ? 8 : 7);
        str(o, c->mounts[i].src);
        key(o, "dst");
        str(o, c->mounts[i].dst);
        key(o, "readonly");
        boolean(o, c->mounts[i].readonly);
        raw(o, "}", 1);
    }
    raw(o, "]", 1);
    key(o, "container_workdir");
    str_or_null(o, c->workdir);
    key(o, "container_env");
    raw(o, "{", 1);
    for (int i = 0; i < c->nenv; i++) {
        if (i)
            raw(o, ",", 1);
        str(o, c->env[i].key);
        raw(o, ":", 1);
        str(o, o->hide_env ? JOB_ENV_HIDDEN : c->env[i].value);
    }
    raw(o, "}", 1);
}

static void spec(struct out *o, const struct job_spec *s)
{
    LIT(o, "{\"name\":");
    str_or_null(o, s->name);
    key(o, "user");
    str_or_null(o, s->user);
    key(o, "project");
    str_or_null(o, s->project);
    if (s->partition) {
        key(o, "partition");
        str(o, s->partition);
    }
    if (s->qos) {
        key(o, "qos");
        str(o, s->qos);
    }
    if (s->qos_max_gpus) {
        key(o, "qos_max_gpus_per_user");
        integer(o, s->qos_max_gpus);
    }
    if (s->mail_events) {
        char m[128];
        key(o, "mail_type");
        str(o, job_mail_format(s->mail_events, m, sizeof(m)));
    }
    if (s->mail_user) {
        key(o, "mail_user");
        str(o, s->mail_user);
    }
    key(o, "priority");
    str(o, job_priority_name(s->priority));
    key(o, "nodes");
    integer(o, s->nodes);
    key(o, "gpus");
    integer(o, s->gpus_per_node);
    if (s->gpus_total) {
        key(o, "gpus_total");
        integer(o, s->gpus_total);
    }
    key(o, "gpu_type");
    str_or_null(o, s->gpu_type);
    key(o, "slice");
    str_or_null(o, s->slice);
    key(o, "gpu_mem");
    integer(o, (long long)s->gpu_mem);
    key(o, "cpus");
    integer(o, s->cpus);
    key(o, "mem");
    integer(o, (long long)s->mem);
    key(o, "time_limit");
    integer(o, s->time_limit);
    key(o, "tasks_per_node");
    integer(o, s->tasks_per_node);
    key(o, "requeue");
    boolean(o, s->requeue);
    key(o, "checkpointable");
    boolean(o, s->checkpointable);
    key(o, "command");
    raw(o, "[", 1);
    for (int i = 0; i < s->argc; i++) {
        if (i)
            raw(o, ",", 1);
        str(o, s->argv[i]);
    }
    raw(o, "]", 1);
    key(o, "env");
    raw(o, "{", 1);
    for (int i = 0; i < s->nenv; i++) {
        if (i)
            raw(o, ",", 1);
        str(o, s->env[i].key);
        raw(o, ":", 1);
        str(o, o->hide_env ? JOB_ENV_HIDDEN : s->env[i].value);
    }
    raw(o, "}", 1);
    key(o, "workdir");
    str_or_null(o, s->workdir);
    if (s->script) {
        key(o, "script");
        str(o, s->script);
    }
    key(o, "launch");
    str(o, s->batch ? "batch" : "tasks");
    if (s->submit_dir) {
        key(o, "submit_dir");
        str(o, s->submit_dir);
    }
    key(o, "volumes");
    raw(o, "[", 1);
    for (int i = 0; i < s->nvolumes; i++) {
        raw(o, i ? ",{\"name\":" : "{\"name\":", i ? 9 : 8);
        str(o, s->volumes[i].name);
        key(o, "path");
        str(o, s->volumes[i].path);
        key(o, "readonly");
        boolean(o, s->volumes[i].readonly);
        raw(o, "}", 1);
    }
    raw(o, "]", 1);
    if (s->ndeps > 0) {
        char deps[JOB_DEPS_TEXT_MAX + 32];
        key(o, "dependency");
        str_or_null(o, job_deps_format(s->deps, s->ndeps, deps, sizeof(deps)));
    }
    if (s->hold)
        LIT(o, ",\"hold\":true");
    if (s->array) {
        key(o, "array");
        str(o, s->array);
    }
    if (s->nodelist) {
        key(o, "nodelist");
        str(o, s->nodelist);
    }
    if (s->exclude) {
        key(o, "exclude");
        str(o, s->exclude);
    }
    if (s->constraint) {
        key(o, "constraint");
        str(o, s->constraint);
    }
    if (s->exclusive)
        LIT(o, ",\"exclusive\":true");
    if (s->begin_ms > 0) {
        key(o, "begin");
        iso(o, s->begin_ms);
    }
    container(o, &s->container);
    if (s->output) {
        key(o, "output");
        str(o, s->output);
    }
    if (s->error) {
        key(o, "error");
        str(o, s->error);
    }
}

static void placement(struct out *o, const struct job *job)
{
    raw(o, "[", 1);
    for (int i = 0; i < job->nalloc; i++) {
        const struct job_alloc *a = &job->alloc[i];
        raw(o, i ? ",{\"node\":" : "{\"node\":", i ? 9 : 8);
        str(o, a->node);
        key(o, "gpus");
        raw(o, "[", 1);
        for (int g = 0; g < a->ngpus; g++) {
            if (g)
                raw(o, ",", 1);
            str(o, a->gpus[g]);
        }
        raw(o, "]", 1);
        key(o, "share");
        real(o, a->share);
        key(o, "done");
        boolean(o, a->done);
        if (a->exit_code >= 0) {
            key(o, "exit_code");
            integer(o, a->exit_code);
        }
        if (a->exit_signal) {
            key(o, "exit_signal");
            integer(o, a->exit_signal);
        }
        raw(o, "}", 1);
    }
    raw(o, "]", 1);
}

/* The start of one attempt's object, up to its nodes (as attempt_to_json
 * in job_json.c). */
static void attempt_head(struct out *o, int attempt, enum job_state state,
                         int64_t start_ms, int64_t end_ms)
{
    LIT(o, "{\"attempt\":");
    integer(o, attempt);
    key(o, "state");
    str(o, job_state_name(state));
    key(o, "start_time");
    iso(o, start_ms);
    key(o, "end_time");
    iso(o, end_ms);
    key(o, "start_ms");
    integer(o, start_ms);
    key(o, "end_ms");
    integer(o, end_ms);
    key(o, "nodes");
}

static void attempt_tail(struct out *o, int exit_code, int exit_signal,
                         const char *reason)
{
    key(o, "exit_code");
    if (exit_code >= 0)
        integer(o, exit_code);
    else
        LIT(o, "null");
    key(o, "exit_signal");
    if (exit_signal)
        integer(o, exit_signal);
    else
        LIT(o, "null");
    key(o, "reason");
    str_or_null(o, reason);
    raw(o, "}", 1);
}

static void attempts(struct out *o, const struct job *job)
{
    raw(o, "[", 1);
    for (int i = 0; i < job->npast; i++) {
        const struct job_attempt *a = &job->past[i];
        if (i)
            raw(o, ",", 1);
        attempt_head(o, a->attempt, a->state, a->start_ms, a->end_ms);
        raw(o, "[", 1);
        bool first = true;
        for (const char *p = a->nodes; p && *p; first = false) {
            size_t len = strcspn(p, ",");
            char name[JOB_IDENT_MAX + 1];
            snprintf(name, sizeof(name), "%.*s",
                     (int)(len < JOB_IDENT_MAX ? len : JOB_IDENT_MAX), p);
            if (!first)
                raw(o, ",", 1);
            str(o, name);
            p += len + (p[len] == ',');
        }
        raw(o, "]", 1);
        attempt_tail(o, a->exit_code, a->exit_signal, a->reason);
    }
    if (job->npast)
        raw(o, ",", 1);
    bool started = job_attempt_started(job);
    attempt_head(o, job_attempt(job), job->state, started ? job->start_ms : 0,
                 job->end_ms);
    raw(o, "[", 1);
    for (int i = 0; i < job->nalloc; i++) {
        if (i)
            raw(o, ",", 1);
        str(o, job->alloc[i].node);
    }
    raw(o, "]", 1);
    attempt_tail(o, job->exit_code, job->exit_signal, job->reason);
    raw(o, "]", 1);
}

int job_json_write(struct strbuf *sb, const struct job *job,
                   const struct job_view_extra *x, int64_t now_ms)
{
    struct out o = {.sb = sb, .hide_env = x && x->hide_env};
    size_t start = sb->len;
    spec(&o, &job->spec);
    key(&o, "id");
    integer(&o, (long long)job->id);
    key(&o, "state");
    str(&o, job_state_name(job->state));
    key(&o, "reason");
    str_or_null(&o, x && x->reason ? x->reason : job->reason);
    key(&o, "submit_time");
    iso(&o, job->submit_ms);
    key(&o, "start_time");
    iso(&o, job->start_ms);
    key(&o, "end_time");
    iso(&o, job->end_ms);
    key(&o, "estimated_start");
    iso(&o, x && x->est_start_ms > 0 ? x->est_start_ms : job->est_start_ms);
    key(&o, "exit_code");
    if (job->exit_code >= 0)
        integer(&o, job->exit_code);
    else
        LIT(&o, "null");
    key(&o, "exit_signal");
    if (job->exit_signal)
        integer(&o, job->exit_signal);
    else
        LIT(&o, "null");
    key(&o, "requeues");
    integer(&o, job->requeues);
    key(&o, "releasing");
    boolean(&o, job->releasing);
    key(&o, "held");
    boolean(&o, job->held);
    if (job->array_id) {
        key(&o, "array_id");
        integer(&o, (long long)job->array_id);
        key(&o, "array_task");
        integer(&o, job->array_task);
    }
    key(&o, "placement");
    placement(&o, job);
    key(&o, "attempt");
    integer(&o, job_attempt(job));
    key(&o, "attempts");
    attempts(&o, job);
    key(&o, "gpu_model");
    str_or_null(&o, job->gpu_model);
    key(&o, "gpu_utilization");
    double util = job_util_avg(job);
    if (util >= 0)
        real(&o, (double)(int)(util * 10) / 10);
    else
        LIT(&o, "null");
    key(&o, "idle");
    boolean(&o, job->idle);
    key(&o, "gpu_seconds");
    real(&o, job_gpu_seconds(job, now_ms));
    key(&o, "cpu_seconds");
    real(&o, (double)job->cpu_ns / 1e9);
    key(&o, "mem_peak");
    integer(&o, (long long)job->mem_peak);
    key(&o, "submit_ms");
    integer(&o, job->submit_ms);
    key(&o, "start_ms");
    integer(&o, job->start_ms);
    key(&o, "end_ms");
    integer(&o, job->end_ms);
    if (job->master_port) {
        key(&o, "master_port");
        integer(&o, job->master_port);
    }
    if (job->image_digest) {
        key(&o, "image_digest");
        str(&o, job->image_digest);
    }
    if (x && x->estimate && x->estimate[0]) {
        key(&o, "estimate");
        str(&o, x->estimate);
    }
    raw(&o, "}", 1);
    if (o.failed) {
        sb->len = start; /* leave the buffer as it was */
        if (sb->data)
            sb->data[start] = '\0';
        return -1;
    }
    return 0;
}
