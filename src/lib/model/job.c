/* SPDX-License-Identifier: Apache-2.0 */
/* Job limits, validation and the state machine (see job.h for the diagram). */
#include "lib/model/job.h"

#include "lib/model/job_deps.h"
#include "lib/model/job_mail.h"
#include "lib/model/job_output.h"
#include "lib/model/job_place.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/volume.h"
#include "lib/util/utf8.h"

static const char *const state_names[JOB_STATE_COUNT] = {
    [JOB_PENDING] = "pending",     [JOB_RUNNING] = "running",
    [JOB_COMPLETED] = "completed", [JOB_FAILED] = "failed",
    [JOB_CANCELLED] = "cancelled", [JOB_PREEMPTED] = "preempted",
    [JOB_TIMEOUT] = "timeout",     [JOB_NODE_FAIL] = "node_fail",
};

static const char *const prio_names[JOB_PRIO_COUNT] = {
    [JOB_PRIO_HIGH] = "high",
    [JOB_PRIO_NORMAL] = "normal",
    [JOB_PRIO_LOW] = "low",
};

const char *job_state_name(enum job_state s)
{
    return (unsigned)s < JOB_STATE_COUNT ? state_names[s] : "unknown";
}

int job_state_from_name(const char *name, enum job_state *out)
{
    for (int i = 0; i < JOB_STATE_COUNT; i++) {
        if (name && strcmp(name, state_names[i]) == 0) {
            *out = (enum job_state)i;
            return 0;
        }
    }
    return -1;
}

const char *job_priority_name(enum job_priority p)
{
    return (unsigned)p < JOB_PRIO_COUNT ? prio_names[p] : "unknown";
}

int job_priority_from_name(const char *name, enum job_priority *out)
{
    for (int i = 0; i < JOB_PRIO_COUNT; i++) {
        if (name && strcmp(name, prio_names[i]) == 0) {
            *out = (enum job_priority)i;
            return 0;
        }
    }
    return -1;
}

bool job_state_is_terminal(enum job_state s)
{
    return s != JOB_PENDING && s != JOB_RUNNING;
}

bool job_ident_valid(const char *s)
{
    if (!s || !*s || *s == '-' || *s == '.')
        return false;
    size_t n = 0;
    for (const char *p = s; *p; p++, n++) {
        unsigned char c = (unsigned char)*p;
        if (!(isalnum(c) || c == '_' || c == '-' || c == '.'))
            return false;
    }
    return n <= JOB_IDENT_MAX;
}

void job_spec_init(struct job_spec *spec)
{
    memset(spec, 0, sizeof(*spec));
    spec->priority = JOB_PRIO_NORMAL;
    spec->nodes = 1;
    spec->tasks_per_node = 1;
}

void job_spec_fini(struct job_spec *spec)
{
    if (!spec)
        return;
    free(spec->name);
    free(spec->user);
    free(spec->project);
    free(spec->partition);
    free(spec->qos);
    free(spec->mail_user);
    free(spec->gpu_type);
    free(spec->slice);
    free(spec->workdir);
    free(spec->submit_dir);
    free(spec->script);
    for (int i = 0; i < spec->argc; i++)
        free(spec->argv[i]);
    free(spec->argv);
    for (int i = 0; i < spec->nenv; i++) {
        free(spec->env[i].key);
        free(spec->env[i].value);
    }
    free(spec->env);
    for (int i = 0; i < spec->nvolumes; i++) {
        free(spec->volumes[i].name);
        free(spec->volumes[i].path);
    }
    free(spec->volumes);
    free(spec->deps);
    free(spec->array);
    free(spec->nodelist);
    free(spec->exclude);
    free(spec->constraint);
    job_container_fini(&spec->container);
    free(spec->output);
    free(spec->error);
    job_spec_init(spec);
}

static bool printable(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            return false;
    }
    return true;
}

static bool env_key_valid(const char *k)
{
    if (!k || !(isalpha((unsigned char)*k) || *k == '_'))
        return false;
    for (const char *p = k; *p; p++) {
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return false;
    }
    return strlen(k) <= 256;
}

/* gpus_total: the engine picks the shape, so nothing else may fix it. */
static int validate_total(const struct job_spec *s, struct sh_error *err)
{
    if (s->gpus_total < 0 || s->gpus_total > JOB_GPUS_TOTAL_MAX)
        return sh_errorf(err, SH_EINVAL, "gpus_total must be 1..%d, got %d",
                         JOB_GPUS_TOTAL_MAX, s->gpus_total);
    if (s->nodelist)
        return sh_errorf(err, SH_EINVAL,
                         "gpus_total lets the engine pick the nodes: not "
                         "with nodelist (give nodes and gpus per node)");
    if (s->slice)
        return sh_errorf(err, SH_EINVAL,
                         "gpus_total is whole GPUs: not with slice");
    if (s->nodes || s->gpus_per_node)
        return sh_errorf(err, SH_EINVAL,
                         "gpus_total lets the engine pick the nodes and the "
                         "GPUs per node: give it without nodes and gpus "
                         "(per node)");
    return 0;
}

static int validate_shape(const struct job_spec *s, struct sh_error *err)
{
    if (s->gpus_total) {
        if (validate_total(s, err) < 0)
            return -1;
    } else if (s->nodes < 1 || s->nodes > JOB_NODES_MAX)
        return sh_errorf(err, SH_EINVAL, "nodes must be 1..%d, got %d",
                         JOB_NODES_MAX, s->nodes);
    if (s->gpus_per_node < 0 || s->gpus_per_node > JOB_GPUS_PER_NODE_MAX)
        return sh_errorf(err, SH_EINVAL, "gpus must be 0..%d per node, got %d",
                         JOB_GPUS_PER_NODE_MAX, s->gpus_per_node);
    if (s->cpus < 0 || s->cpus > JOB_CPUS_MAX)
        return sh_errorf(err, SH_EINVAL, "cpus must be 0..%d, got %d",
                         JOB_CPUS_MAX, s->cpus);
    if (s->tasks_per_node < 1 || s->tasks_per_node > JOB_TASKS_PER_NODE_MAX)
        return sh_errorf(err, SH_EINVAL, "tasks_per_node must be 1..%d, got %d",
                         JOB_TASKS_PER_NODE_MAX, s->tasks_per_node);
    if (s->time_limit < 0)
        return sh_errorf(err, SH_EINVAL, "time_limit must not be negative");
    if ((unsigned)s->priority >= JOB_PRIO_COUNT)
        return sh_errorf(err, SH_EINVAL,
                         "priority must be high, normal or low");
    if (s->slice) {
        if (!*s->slice || strlen(s->slice) > JOB_SLICE_MAX ||
            !job_ident_valid(s->slice))
            return sh_errorf(err, SH_EINVAL,
                             "slice must be a profile name of 1..%d characters "
                             "such as 1g.10gb or shared",
                             JOB_SLICE_MAX);
        if (s->gpus_per_node != 1)
            return sh_errorf(err, SH_EINVAL,
                             "a slice job takes exactly one slice per node "
                             "(gpus must be 1 with slice)");
    }
    if (s->gpu_mem && s->gpus_per_node == 0 && !s->gpus_total)
        return sh_errorf(err, SH_EINVAL, "gpu_mem needs gpus >= 1");
    if (s->gpu_type && !job_ident_valid(s->gpu_type))
        return sh_errorf(
            err, SH_EINVAL,
            "gpu_type must be 1..%d characters of letters, digits, "
            "'.', '_' or '-'",
            JOB_IDENT_MAX);
    if (s->gpu_type && s->gpus_per_node == 0 && !s->gpus_total)
        return sh_errorf(err, SH_EINVAL, "gpu_type needs gpus >= 1");
    return 0;
}

static int validate_command(const struct job_spec *s, struct sh_error *err)
{
    if (s->script) {
        if (!*s->script)
            return sh_errorf(err, SH_EINVAL, "script must not be empty");
        if (strlen(s->script) > JOB_SCRIPT_MAX)
            return sh_errorf(err, SH_ETOOLARGE,
                             "script is %zu bytes, the limit is %d",
                             strlen(s->script), JOB_SCRIPT_MAX);
    } else if (s->argc < 1 || !s->argv || !s->argv[0] || !*s->argv[0]) {
        return sh_errorf(err, SH_EINVAL, "command must not be empty");
    }
    if (s->argc > JOB_ARGC_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "command has %d arguments, the limit is %d", s->argc,
                         JOB_ARGC_MAX);
    size_t total = 0;
    for (int i = 0; i < s->argc; i++) {
        size_t n = strlen(s->argv[i]);
        if (n > JOB_ARG_MAX)
            return sh_errorf(
                err, SH_ETOOLARGE,
                "command argument %d is %zu bytes, the limit is %d", i, n,
                JOB_ARG_MAX);
        total += n;
    }
    if (total > JOB_ARGV_TOTAL_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "command is %zu bytes, the limit is %d", total,
                         JOB_ARGV_TOTAL_MAX);
    if (s->nenv > JOB_ENV_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "env has %d entries, the limit is %d", s->nenv,
                         JOB_ENV_MAX);
    for (int i = 0; i < s->nenv; i++) {
        if (!env_key_valid(s->env[i].key))
            return sh_errorf(
                err, SH_EINVAL,
                "env name '%.*s' is not valid (letters, digits and "
                "'_', not starting with a digit)",
                UTF8_CUT(s->env[i].key ? s->env[i].key : "", 64));
        if (strlen(s->env[i].value) > JOB_ENV_VALUE_MAX)
            return sh_errorf(err, SH_ETOOLARGE,
                             "env %s is longer than %d bytes", s->env[i].key,
                             JOB_ENV_VALUE_MAX);
        for (int j = 0; j < i; j++) {
            if (strcmp(s->env[i].key, s->env[j].key) == 0)
                return sh_errorf(err, SH_EINVAL, "env %s is given twice",
                                 s->env[i].key);
        }
    }
    return 0;
}

static int validate_paths(const struct job_spec *s, struct sh_error *err)
{
    if (s->workdir) {
        if (s->workdir[0] != '/' || strlen(s->workdir) > JOB_PATH_MAX ||
            !printable(s->workdir))
            return sh_errorf(err, SH_EINVAL,
                             "workdir must be an absolute path of at most %d "
                             "bytes",
                             JOB_PATH_MAX);
    }
    if (s->submit_dir &&
        (s->submit_dir[0] != '/' || strlen(s->submit_dir) > JOB_PATH_MAX ||
         !printable(s->submit_dir)))
        return sh_errorf(err, SH_EINVAL,
                         "submit_dir must be an absolute path of at most %d "
                         "bytes",
                         JOB_PATH_MAX);
    if (s->nvolumes > JOB_VOLUMES_MAX)
        return sh_errorf(err, SH_ETOOLARGE, "%d volumes given, the limit is %d",
                         s->nvolumes, JOB_VOLUMES_MAX);
    for (int i = 0; i < s->nvolumes; i++) {
        const struct job_volume *v = &s->volumes[i];
        if (!job_ident_valid(v->name))
            return sh_errorf(err, SH_EINVAL, "volume name '%.*s' is not valid",
                             UTF8_CUT(v->name ? v->name : "", 64));
        if (volume_mount_path_check(v->path, err) < 0)
            return sh_error_prefix(err, "volume %s: ", v->name);
        for (int j = 0; j < i; j++) {
            if (strcmp(v->path, s->volumes[j].path) == 0)
                return sh_errorf(err, SH_EINVAL,
                                 "two volumes are mounted at %s", v->path);
        }
    }
    return 0;
}

/* --nodelist, --exclude, --constraint, --exclusive. */
static int validate_where(const struct job_spec *s, struct sh_error *err)
{
    int n = 0;
    if (s->nodelist) {
        if (job_nodelist_check("nodelist", s->nodelist, &n, err) < 0)
            return -1;
        if (n != s->nodes)
            return sh_errorf(err, SH_EINVAL,
                             "nodelist names %d node%s but the job asks for "
                             "%d: it runs on exactly the nodes listed (give "
                             "nodes %d, or use constraint to choose among "
                             "nodes)",
                             n, n == 1 ? "" : "s", s->nodes, n);
    }
    if (s->exclude && job_nodelist_check("exclude", s->exclude, NULL, err) < 0)
        return -1;
    if (s->nodelist && s->exclude) {
        const char *p = s->nodelist;
        while (p) {
            const char *c = strchr(p, ',');
            char name[JOB_IDENT_MAX + 1];
            size_t len = c ? (size_t)(c - p) : strlen(p);
            memcpy(name, p, len);
            name[len] = '\0';
            if (job_nodelist_has(s->exclude, name))
                return sh_errorf(err, SH_EINVAL,
                                 "node %s is both in nodelist and exclude",
                                 name);
            p = c ? c + 1 : NULL;
        }
    }
    if (s->constraint && job_constraint_check(s->constraint, err) < 0)
        return -1;
    if (s->output && job_output_check("output", s->output, err) < 0)
        return -1;
    if (s->error && job_output_check("error", s->error, err) < 0)
        return -1;
    if ((s->output || s->error) && s->container.image)
        return sh_errorf(err, SH_EINVAL,
                         "output and error files are not supported with an "
                         "image yet: its output is kept for shoal logs");
    if (s->exclusive && s->gpus_per_node == 0 && !s->gpus_total)
        return sh_errorf(err, SH_EINVAL,
                         "exclusive needs gpus >= 1 (jobs without GPUs "
                         "share nodes)");
    if (s->exclusive && s->slice)
        return sh_errorf(err, SH_EINVAL,
                         "exclusive takes whole nodes; a slice job cannot "
                         "(drop slice or exclusive)");
    return 0;
}

int job_spec_validate(const struct job_spec *s, struct sh_error *err)
{
    if (s->name && (strlen(s->name) > JOB_NAME_MAX || !printable(s->name)))
        return sh_errorf(err, SH_EINVAL,
                         "name must be at most %d printable characters",
                         JOB_NAME_MAX);
    if (s->user && !job_ident_valid(s->user))
        return sh_errorf(err, SH_EINVAL, "user '%.*s' is not a valid name",
                         UTF8_CUT(s->user, 64));
    if (s->partition && !job_ident_valid(s->partition))
        return sh_errorf(err, SH_EINVAL,
                         "partition '%.*s' is not a valid name (one "
                         "partition, 1..%d letters, digits, '.', '_' or '-')",
                         UTF8_CUT(s->partition, 64), JOB_IDENT_MAX);
    if (s->mail_user && !job_mail_user_valid(s->mail_user))
        return sh_errorf(err, SH_EINVAL,
                         "mail_user must be an address of letters, digits "
                         "and ._%%+-@ (at most %d)",
                         JOB_MAIL_USER_MAX);
    if (s->qos && !job_ident_valid(s->qos))
        return sh_errorf(err, SH_EINVAL, "qos '%.*s' is not a valid name",
                         UTF8_CUT(s->qos, 64));
    if (s->project && !job_ident_valid(s->project))
        return sh_errorf(err, SH_EINVAL,
                         "project must be 1..%d characters of letters, digits, "
                         "'.', '_' or '-'",
                         JOB_IDENT_MAX);
    if (s->checkpointable && !s->requeue)
        return sh_errorf(err, SH_EINVAL,
                         "checkpointable needs requeue: a preempted job goes "
                         "back to the queue to resume");
    if (validate_shape(s, err) < 0 || validate_command(s, err) < 0 ||
        validate_paths(s, err) < 0 || validate_where(s, err) < 0 ||
        job_container_validate(&s->container, err) < 0)
        return -1;
    return 0;
}

static int dup_str(char **dst, const char *src)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : -1;
}

int job_spec_copy(struct job_spec *dst, const struct job_spec *src)
{
    job_spec_init(dst);
    *dst = *src;
    dst->name = dst->user = dst->project = dst->gpu_type = dst->slice = NULL;
    dst->partition = dst->qos = dst->mail_user = NULL;
    dst->workdir = dst->script = dst->array = dst->submit_dir = NULL;
    dst->nodelist = dst->exclude = dst->constraint = NULL;
    dst->output = dst->error = NULL;
    dst->argv = NULL;
    dst->env = NULL;
    dst->volumes = NULL;
    dst->deps = NULL;
    dst->argc = dst->nenv = dst->nvolumes = dst->ndeps = 0;
    job_container_init(&dst->container);
    if (dup_str(&dst->name, src->name) < 0 ||
        dup_str(&dst->user, src->user) < 0 ||
        dup_str(&dst->project, src->project) < 0 ||
        dup_str(&dst->partition, src->partition) < 0 ||
        dup_str(&dst->qos, src->qos) < 0 ||
        dup_str(&dst->mail_user, src->mail_user) < 0 ||
        dup_str(&dst->gpu_type, src->gpu_type) < 0 ||
        dup_str(&dst->slice, src->slice) < 0 ||
        dup_str(&dst->workdir, src->workdir) < 0 ||
        dup_str(&dst->submit_dir, src->submit_dir) < 0 ||
        dup_str(&dst->script, src->script) < 0 ||
        dup_str(&dst->array, src->array) < 0 ||
        dup_str(&dst->nodelist, src->nodelist) < 0 ||
        dup_str(&dst->exclude, src->exclude) < 0 ||
        dup_str(&dst->constraint, src->constraint) < 0 ||
        dup_str(&dst->output, src->output) < 0 ||
        dup_str(&dst->error, src->error) < 0)
        goto error;
    dst->argv = calloc((size_t)src->argc + 1, sizeof(char *));
    if (!dst->argv)
        goto error;
    for (; dst->argc < src->argc; dst->argc++) {
        if (dup_str(&dst->argv[dst->argc], src->argv[dst->argc]) < 0)
            goto error;
    }
    if (src->nenv) {
        dst->env = calloc((size_t)src->nenv, sizeof(*dst->env));
        if (!dst->env)
            goto error;
        for (; dst->nenv < src->nenv; dst->nenv++) {
            struct job_env *e = &dst->env[dst->nenv];
            if (dup_str(&e->key, src->env[dst->nenv].key) < 0 ||
                dup_str(&e->value, src->env[dst->nenv].value) < 0) {
                dst->nenv++;
                goto error;
            }
        }
    }
    if (src->nvolumes) {
        dst->volumes = calloc((size_t)src->nvolumes, sizeof(*dst->volumes));
        if (!dst->volumes)
            goto error;
        for (; dst->nvolumes < src->nvolumes; dst->nvolumes++) {
            struct job_volume *v = &dst->volumes[dst->nvolumes];
            v->readonly = src->volumes[dst->nvolumes].readonly;
            if (dup_str(&v->name, src->volumes[dst->nvolumes].name) < 0 ||
                dup_str(&v->path, src->volumes[dst->nvolumes].path) < 0) {
                dst->nvolumes++;
                goto error;
            }
        }
    }
    if (src->ndeps) {
        dst->deps = malloc(sizeof(*dst->deps) * (size_t)src->ndeps);
        if (!dst->deps)
            goto error;
        memcpy(dst->deps, src->deps, sizeof(*dst->deps) * (size_t)src->ndeps);
        dst->ndeps = src->ndeps;
    }
    if (job_container_copy(&dst->container, &src->container) < 0)
        goto error;
    return 0;
error:
    job_spec_fini(dst);
    return -1;
}

bool job_idem_key_valid(const char *key)
{
    size_t n = strlen(key);
    return n > 0 && n <= JOB_IDEM_KEY_MAX &&
           strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                       "0123456789-_.:") == n;
}

bool job_spec_uses_gpus(const struct job_spec *spec)
{
    return spec->gpus_per_node > 0 || spec->gpus_total > 0;
}

int job_spec_total_gpus(const struct job_spec *spec)
{
    if (spec->gpus_total)
        return spec->gpus_total;
    return spec->nodes * spec->gpus_per_node;
}

struct job *job_create(uint64_t id, struct job_spec *spec, int64_t submit_ms)
{
    struct job *job = calloc(1, sizeof(*job));
    if (!job)
        return NULL;
    job->id = id;
    job->spec = *spec;
    job_spec_init(spec);
    job->state = JOB_PENDING;
    job->submit_ms = submit_ms;
    job->queued_ms = submit_ms;
    job->exit_code = -1;
    return job;
}

void job_alloc_free(struct job_alloc *alloc, int n)
{
    for (int i = 0; i < n; i++) {
        free(alloc[i].node);
        for (int g = 0; g < alloc[i].ngpus; g++)
            free(alloc[i].gpus[g]);
        free(alloc[i].gpus);
    }
    free(alloc);
}

void job_destroy(struct job *job)
{
    if (!job)
        return;
    job_spec_fini(&job->spec);
    free(job->reason);
    free(job->image_digest);
    free(job->idem_key);
    free(job->gpu_model);
    job_alloc_free(job->alloc, job->nalloc);
    for (int i = 0; i < job->npast; i++)
        job_attempt_fini(&job->past[i]);
    free(job->past);
    free(job);
}

/* The legal transitions: the one table. */
static bool transition_legal(enum job_state from, enum job_state to)
{
    switch (from) {
    case JOB_PENDING:
        return to == JOB_RUNNING || to == JOB_CANCELLED;
    case JOB_RUNNING:
        return to == JOB_COMPLETED || to == JOB_FAILED || to == JOB_CANCELLED ||
               to == JOB_TIMEOUT || to == JOB_NODE_FAIL || to == JOB_PREEMPTED;
    case JOB_PREEMPTED:
    case JOB_NODE_FAIL:
    case JOB_COMPLETED:
    case JOB_FAILED:
    case JOB_CANCELLED:
    case JOB_TIMEOUT:
        return to == JOB_PENDING; /* requeue; checked below */
    default:
        return false;
    }
}

int job_transition_check(const struct job *job, enum job_state to,
                         struct sh_error *err)
{
    if (!transition_legal(job->state, to))
        return sh_errorf(err, SH_ECONFLICT,
                         "job %llu is %s and cannot become %s",
                         (unsigned long long)job->id,
                         job_state_name(job->state), job_state_name(to));
    /* Back to the queue: after a preemption or node failure when it was
     * submitted with requeue, or from any end when a user asked for it
     * (shoal requeue). */
    bool automatic = job->spec.requeue && (job->state == JOB_PREEMPTED ||
                                           job->state == JOB_NODE_FAIL);
    if (to == JOB_PENDING && !automatic && !job->requeue_asked)
        return sh_errorf(err, SH_ECONFLICT,
                         "job %llu was not submitted with requeue",
                         (unsigned long long)job->id);
    return 0;
}

int job_transition(struct job *job, enum job_state to, int64_t now_ms,
                   struct sh_error *err)
{
    if (job_transition_check(job, to, err) < 0)
        return -1;
    enum job_state from = job->state;
    job->state = to;
    if (to == JOB_RUNNING) {
        job->start_ms = now_ms;
        job->end_ms = 0;
        job->exit_code = -1;
        job->exit_signal = 0;
    } else if (to == JOB_PENDING) {
        /* Keep the attempt that ends here; out of memory loses only it. */
        struct job_attempt a = {
            .attempt = job_attempt(job),
            .start_ms = job_attempt_started(job) ? job->start_ms : 0,
            .end_ms = job->end_ms,
            .nodes = job_alloc_nodes(job),
            .state = from,
            .exit_code = job->exit_code,
            .exit_signal = job->exit_signal,
            .reason = job->reason ? strdup(job->reason) : NULL,
        };
        job_attempt_push(job, &a);
        job->requeues++;
        job->requeue_asked = false;
        job->queued_ms = now_ms; /* a requeued job waits behind the queue */
        job->end_ms = 0;
        job->exit_code = -1;
        job->exit_signal = 0;
        job->releasing = false;
        job->master_port = 0;
        free(job->image_digest);
        job->image_digest = NULL;
        job_set_alloc(job, NULL, 0);
    } else {
        job->end_ms = now_ms;
        /* A running job keeps its GPUs until its processes are gone. */
        job->releasing = (from == JOB_RUNNING && job_parts_active(job));
    }
    return 0;
}

int job_set_reason(struct job *job, const char *reason)
{
    char *copy = NULL;
    if (reason) {
        copy = strndup(reason, JOB_REASON_MAX);
        if (!copy)
            return -1;
    }
    free(job->reason);
    job->reason = copy;
    return 0;
}

int job_attempt(const struct job *job)
{
    return job->requeues;
}

bool job_attempt_started(const struct job *job)
{
    /* A requeued job keeps its last start until it starts again, and a
     * requeue sets queued_ms after that run's end. */
    return job->start_ms > 0 && job->start_ms >= job->queued_ms;
}

void job_attempt_fini(struct job_attempt *a)
{
    free(a->nodes);
    free(a->reason);
    a->nodes = a->reason = NULL;
}

int job_attempt_push(struct job *job, struct job_attempt *a)
{
    if (job->npast == JOB_ATTEMPTS_KEPT) {
        job_attempt_fini(&job->past[0]);
        memmove(job->past, job->past + 1,
                (size_t)(job->npast - 1) * sizeof(*job->past));
        job->npast--;
    } else {
        struct job_attempt *grown =
            realloc(job->past, (size_t)(job->npast + 1) * sizeof(*grown));
        if (!grown) {
            job_attempt_fini(a);
            return -1;
        }
        job->past = grown;
    }
    job->past[job->npast++] = *a;
    return 0;
}

char *job_alloc_nodes(const struct job *job)
{
    size_t len = 0;
    for (int i = 0; i < job->nalloc; i++)
        len += strlen(job->alloc[i].node) + 1;
    if (len == 0)
        return NULL;
    char *s = malloc(len);
    if (!s)
        return NULL;
    size_t at = 0;
    for (int i = 0; i < job->nalloc; i++) {
        size_t n = strlen(job->alloc[i].node);
        if (i)
            s[at++] = ',';
        memcpy(s + at, job->alloc[i].node, n);
        at += n;
    }
    s[at] = '\0';
    return s;
}

bool job_parts_active(const struct job *job)
{
    for (int i = 0; i < job->nalloc; i++) {
        if (!job->alloc[i].done)
            return true;
    }
    return false;
}

void job_set_alloc(struct job *job, struct job_alloc *alloc, int n)
{
    job_alloc_free(job->alloc, job->nalloc);
    job->alloc = alloc;
    job->nalloc = n;
}

double job_gpu_seconds(const struct job *job, int64_t now_ms)
{
    if (job->start_ms <= 0)
        return 0.0;
    int64_t end = job->end_ms > 0 ? job->end_ms : now_ms;
    if (end < job->start_ms)
        return 0.0;
    double gpus = 0.0;
    for (int i = 0; i < job->nalloc; i++)
        gpus += job->alloc[i].share;
    return gpus * (double)(end - job->start_ms) / 1000.0;
}

double job_util_avg(const struct job *job)
{
    return job->util_ms > 0 ? job->util_sum / (double)job->util_ms : -1.0;
}

int job_check_invariants(const struct job *job, struct sh_error *err)
{
    if ((unsigned)job->state >= JOB_STATE_COUNT)
        return sh_errorf(err, SH_EINTERNAL, "job %llu: bad state",
                         (unsigned long long)job->id);
    switch (job->state) {
    case JOB_PENDING:
        if (job->nalloc != 0 || job->end_ms != 0 || job->releasing)
            return sh_errorf(err, SH_EINTERNAL,
                             "job %llu: pending with a placement or end time",
                             (unsigned long long)job->id);
        break;
    case JOB_RUNNING:
        if ((job->spec.gpus_total ? job->nalloc < 1
                                  : job->nalloc != job->spec.nodes) ||
            job->start_ms < job->submit_ms || job->end_ms != 0)
            return sh_errorf(err, SH_EINTERNAL,
                             "job %llu: running without a full placement",
                             (unsigned long long)job->id);
        break;
    default:
        if (job->end_ms < job->start_ms)
            return sh_errorf(err, SH_EINTERNAL, "job %llu: ended before start",
                             (unsigned long long)job->id);
        if (job->releasing && job->nalloc == 0)
            return sh_errorf(err, SH_EINTERNAL,
                             "job %llu: releasing without a placement",
                             (unsigned long long)job->id);
        break;
    }
    return 0;
}
