/* SPDX-License-Identifier: Apache-2.0 */
/* Job steps relayed between agents (see steps.h). */
#include "shoald/steps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "lib/model/job.h"

#define STEP_ARGV_MAX 4096
#define STEP_ENV_MAX 4096

/* The steps of one job attempt. Each step is a JSON object:
 * {"step", "req": {argv, env, cwd, label, kill_on_bad_exit, ntasks},
 *  "parts": [{"node", "first", "ntasks", "done", "exit"}]}. */
struct job_steps {
    uint64_t id;
    int attempt;
    int next;     /* the number the next step gets */
    json_t *list; /* steps, oldest first */
    UT_hash_handle hh;
};

struct steps {
    struct job_steps *jobs; /* uthash by id */
    steps_touch_f touch;
};

struct steps *steps_create(steps_touch_f touch, struct sh_error *err)
{
    struct steps *s = calloc(1, sizeof(*s));
    if (!s) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    s->touch = touch;
    return s;
}

static void job_steps_free(struct steps *s, struct job_steps *js)
{
    HASH_DEL(s->jobs, js);
    json_decref(js->list);
    free(js);
}

void steps_destroy(struct steps *s)
{
    if (!s)
        return;
    struct job_steps *js, *tmp;
    HASH_ITER (hh, s->jobs, js, tmp)
        job_steps_free(s, js);
    free(s);
}

/* The job's steps of its current attempt; an older attempt's are
 * dropped. NULL when it has none (and create is false). */
static struct job_steps *job_steps_get(struct steps *s, const struct job *job,
                                       bool create)
{
    struct job_steps *js;
    uint64_t id = job->id;
    if (!s)
        return NULL; /* a controller without steps (unit tests) */
    HASH_FIND(hh, s->jobs, &id, sizeof(id), js);
    if (js && (js->attempt != job_attempt(job) || job->state != JOB_RUNNING)) {
        job_steps_free(s, js);
        js = NULL;
    }
    if (js || !create)
        return js;
    js = calloc(1, sizeof(*js));
    if (!js || !(js->list = json_array())) {
        free(js);
        return NULL;
    }
    js->id = id;
    js->attempt = job_attempt(job);
    HASH_ADD(hh, s->jobs, id, sizeof(js->id), js);
    return js;
}

static int node_part(const struct job *job, const char *node)
{
    for (int a = 0; a < job->nalloc; a++) {
        if (strcmp(job->alloc[a].node, node) == 0)
            return a;
    }
    return -1;
}

static bool strings(const json_t *a, size_t max)
{
    size_t i;
    json_t *v;
    if (!json_is_array(a) || json_array_size(a) > max)
        return false;
    json_array_foreach (a, i, v) {
        if (!json_is_string(v))
            return false;
    }
    return true;
}

/* The parts: nodes of the allocation, each once, ranks in order from 0. */
static json_t *check_parts(const struct job *job, const json_t *parts,
                           json_int_t ntasks, struct sh_error *err)
{
    json_t *out = json_array();
    json_int_t next = 0;
    size_t i;
    json_t *p;
    if (!json_is_array(parts) || json_array_size(parts) == 0 ||
        json_array_size(parts) > (size_t)job->nalloc) {
        sh_errorf(err, SH_EINVAL, "parts must name 1..%d nodes of the job",
                  job->nalloc);
        goto fail;
    }
    json_array_foreach (parts, i, p) {
        const char *node;
        json_int_t first, n;
        if (json_unpack(p, "{s:s, s:I, s:I}", "node", &node, "first", &first,
                        "ntasks", &n) < 0 ||
            first != next || n < 1 || node_part(job, node) < 0) {
            sh_errorf(err, SH_EINVAL,
                      "part %zu: a node of the job, its first rank (%lld) and "
                      "its tasks (1 or more)",
                      i, (long long)next);
            goto fail;
        }
        for (size_t k = 0; k < i; k++) {
            if (strcmp(json_string_value(
                           json_object_get(json_array_get(out, k), "node")),
                       node) == 0) {
                sh_errorf(err, SH_EINVAL, "node %s is named twice", node);
                goto fail;
            }
        }
        next += n;
        json_array_append_new(
            out, json_pack("{s:s, s:I, s:I, s:b, s:i}", "node", node, "first",
                           first, "ntasks", n, "done", 0, "exit", -1));
    }
    if (next != ntasks) {
        sh_errorf(err, SH_EINVAL, "the parts hold %lld tasks, ntasks is %lld",
                  (long long)next, (long long)ntasks);
        goto fail;
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* Ended steps go first when a job holds too many. */
static void trim(struct job_steps *js)
{
    for (size_t i = 0; json_array_size(js->list) >= STEPS_PER_JOB_MAX &&
                       i < json_array_size(js->list);) {
        const json_t *st = json_array_get(js->list, i);
        if (json_is_true(json_object_get(st, "ended")))
            json_array_remove(js->list, i);
        else
            i++;
    }
}

int steps_add(struct shoald *d, const struct job *job, const char *node,
              const json_t *body, int *step, struct sh_error *err)
{
    json_int_t attempt = -1, ntasks = 0;
    const json_t *argv = NULL, *env = NULL, *parts = NULL, *cwd = NULL;
    int label = 0, kbe = 0;
    json_error_t jerr;
    if (json_unpack_ex((json_t *)body, &jerr, JSON_STRICT,
                       "{s:I, s:o, s:o, s?o, s?b, s?b, s:I, s:o}", "attempt",
                       &attempt, "argv", &argv, "env", &env, "cwd", &cwd,
                       "label", &label, "kill_on_bad_exit", &kbe, "ntasks",
                       &ntasks, "parts", &parts) < 0)
        return sh_errorf(err, SH_EINVAL, "step: %s", jerr.text);
    if (job->state != JOB_RUNNING || attempt != job_attempt(job))
        return sh_errorf(err, SH_ECONFLICT,
                         "job %llu attempt %lld is not running",
                         (unsigned long long)job->id, (long long)attempt);
    if (!job->spec.batch || job->nalloc < 1 ||
        strcmp(job->alloc[0].node, node) != 0)
        return sh_errorf(err, SH_EFORBIDDEN,
                         "steps of job %llu are started from its batch "
                         "script, on its first node",
                         (unsigned long long)job->id);
    if (!strings(argv, STEP_ARGV_MAX) || json_array_size(argv) == 0 ||
        !strings(env, STEP_ENV_MAX) || (cwd && !json_is_string(cwd)))
        return sh_errorf(err, SH_EINVAL,
                         "step: argv (not empty) and env are arrays of "
                         "strings, cwd a string");
    json_t *checked = check_parts(job, parts, ntasks, err);
    if (!checked)
        return -1;
    struct job_steps *js = job_steps_get(d->steps, job, true);
    if (!js) {
        json_decref(checked);
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    trim(js);
    if (json_array_size(js->list) >= STEPS_PER_JOB_MAX) {
        json_decref(checked);
        return sh_errorf(err, SH_ETOOLARGE,
                         "job %llu has %d steps running: no more",
                         (unsigned long long)job->id, STEPS_PER_JOB_MAX);
    }
    json_t *req = json_pack("{s:O, s:O, s:O?, s:b, s:b, s:I}", "argv", argv,
                            "env", env, "cwd", cwd, "label", label,
                            "kill_on_bad_exit", kbe, "ntasks", ntasks);
    json_t *st = json_pack("{s:i, s:o, s:o, s:b}", "step", js->next, "req", req,
                           "parts", checked, "ended", 0);
    if (!st)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    json_array_append_new(js->list, st);
    *step = js->next++;
    size_t i;
    json_t *p;
    /* Its first node too: a step of that node alone is at once one whose
     * other parts all ended. */
    json_array_foreach (checked, i, p)
        d->steps->touch(d, json_string_value(json_object_get(p, "node")));
    return 0;
}

static json_t *find_step(struct job_steps *js, int step)
{
    size_t i;
    json_t *st;
    json_array_foreach (js ? js->list : NULL, i, st) {
        if (json_integer_value(json_object_get(st, "step")) == step)
            return st;
    }
    return NULL;
}

int steps_part_done(struct shoald *d, const struct job *job, const char *node,
                    int attempt, int step, int exit_code, struct sh_error *err)
{
    if (attempt != job_attempt(job))
        return 0; /* an older attempt's: gone with it */
    json_t *st = find_step(job_steps_get(d->steps, job, false), step);
    if (!st)
        return sh_errorf(err, SH_ENOTFOUND, "job %llu has no step %d",
                         (unsigned long long)job->id, step);
    size_t i;
    json_t *p;
    bool ended = true, found = false;
    json_array_foreach (json_object_get(st, "parts"), i, p) {
        if (strcmp(json_string_value(json_object_get(p, "node")), node) == 0 &&
            !json_is_true(json_object_get(p, "done"))) {
            json_object_set_new(p, "done", json_true());
            json_object_set_new(p, "exit", json_integer(exit_code));
            found = true;
        }
        ended = ended && json_is_true(json_object_get(p, "done"));
    }
    if (!found)
        return 0; /* a repeated report */
    json_object_set_new(st, "ended", json_boolean(ended));
    /* Its first node waits for the others (and reports its own last); the
     * reporter drops it. */
    if (job->nalloc > 0)
        d->steps->touch(d, job->alloc[0].node);
    if (strcmp(node, job->alloc[0].node) != 0)
        d->steps->touch(d, node);
    return 0;
}

int steps_cancel(struct shoald *d, const struct job *job, const char *node,
                 int attempt, int step, struct sh_error *err)
{
    if (attempt != job_attempt(job))
        return 0;
    json_t *st = find_step(job_steps_get(d->steps, job, false), step);
    if (!st)
        return sh_errorf(err, SH_ENOTFOUND, "job %llu has no step %d",
                         (unsigned long long)job->id, step);
    bool member = false;
    size_t i;
    json_t *p;
    json_array_foreach (json_object_get(st, "parts"), i, p)
        member = member || strcmp(json_string_value(json_object_get(p, "node")),
                                  node) == 0;
    if (!member)
        return sh_errorf(err, SH_EFORBIDDEN, "node %s has no part of step %d",
                         node, step);
    if (json_is_true(json_object_get(st, "cancel")))
        return 0;
    json_object_set_new(st, "cancel", json_true());
    json_array_foreach (json_object_get(st, "parts"), i, p)
        d->steps->touch(d, json_string_value(json_object_get(p, "node")));
    return 0;
}

/* The highest exit of the parts other than skip's (all of them when skip
 * is NULL), and whether they all ended. */
static int parts_exit(const json_t *st, const char *skip, bool *all_done)
{
    int worst = 0;
    size_t i;
    json_t *p;
    *all_done = true;
    json_array_foreach (json_object_get(st, "parts"), i, p) {
        if (skip &&
            strcmp(json_string_value(json_object_get(p, "node")), skip) == 0)
            continue;
        if (!json_is_true(json_object_get(p, "done"))) {
            *all_done = false;
            continue;
        }
        int e = (int)json_integer_value(json_object_get(p, "exit"));
        if (e > worst)
            worst = e;
    }
    return worst;
}

void steps_work(struct shoald *d, const struct job *job, int part,
                json_t *entry)
{
    struct job_steps *js = job_steps_get(d->steps, job, false);
    if (!js || job->state != JOB_RUNNING)
        return;
    const char *node = job->alloc[part].node;
    json_t *run = json_array();
    json_t *done = json_array();
    json_t *cancel = json_array();
    size_t i;
    json_t *st;
    json_array_foreach (js->list, i, st) {
        size_t k;
        json_t *p;
        json_array_foreach (json_object_get(st, "parts"), k, p) {
            if (part == 0 ||
                strcmp(json_string_value(json_object_get(p, "node")), node) !=
                    0 ||
                json_is_true(json_object_get(p, "done")))
                continue;
            json_array_append_new(
                run, json_pack("{s:O, s:O, s:O, s:O, s:i, s:b}", "step",
                               json_object_get(st, "step"), "req",
                               json_object_get(st, "req"), "first",
                               json_object_get(p, "first"), "ntasks",
                               json_object_get(p, "ntasks"), "node_index",
                               (int)k, "cancel",
                               json_is_true(json_object_get(st, "cancel"))));
        }
        if (part == 0 && json_is_true(json_object_get(st, "cancel")) &&
            !json_is_true(json_object_get(st, "ended")))
            json_array_append(cancel, json_object_get(st, "step"));
        bool all;
        int worst = parts_exit(st, job->alloc[0].node, &all);
        if (part == 0 && all && !json_is_true(json_object_get(st, "ended")))
            json_array_append_new(done, json_pack("{s:O, s:i}", "step",
                                                  json_object_get(st, "step"),
                                                  "exit", worst));
    }
    if (json_array_size(run))
        json_object_set_new(entry, "steps", run);
    else
        json_decref(run);
    if (json_array_size(done))
        json_object_set_new(entry, "steps_done", done);
    else
        json_decref(done);
    if (json_array_size(cancel))
        json_object_set_new(entry, "steps_cancel", cancel);
    else
        json_decref(cancel);
}

json_t *steps_job_json(struct shoald *d, const struct job *job)
{
    struct job_steps *js = job_steps_get(d->steps, job, false);
    if (!js || json_array_size(js->list) == 0)
        return NULL;
    json_t *out = json_array();
    size_t i;
    json_t *st;
    json_array_foreach (js->list, i, st) {
        bool all;
        int worst = parts_exit(st, NULL, &all);
        json_t *nodes = json_array();
        size_t k;
        json_t *p;
        json_array_foreach (json_object_get(st, "parts"), k, p)
            json_array_append(nodes, json_object_get(p, "node"));
        const json_t *req = json_object_get(st, "req");
        json_array_append_new(
            out,
            json_pack("{s:O, s:s, s:o, s:o, s:O, s:O}", "step",
                      json_object_get(st, "step"), "state",
                      all ? (worst ? "failed" : "completed") : "running",
                      "exit", all ? json_integer(worst) : json_null(), "nodes",
                      nodes, "ntasks", json_object_get(req, "ntasks"),
                      "command", json_object_get(req, "argv")));
    }
    return out;
}
