/* SPDX-License-Identifier: Apache-2.0 */
/* JSON codecs for jobs (see job_json.h). */
#include "lib/model/job_json.h"

#include "lib/model/job_array.h"
#include "lib/model/job_place.h"
#include "lib/model/job_deps.h"
#include "lib/model/job_mail.h"

#include <stdlib.h>
#include <string.h>

#include "lib/util/clock.h"
#include "lib/util/parse.h"
#include "lib/util/utf8.h"

/* ---- field readers: each names the field in its error ---- */

static int get_string(const json_t *v, const char *field, size_t max,
                      char **out, struct sh_error *err)
{
    if (json_is_null(v)) {
        *out = NULL;
        return 0;
    }
    if (!json_is_string(v))
        return sh_errorf(err, SH_EINVAL, "%s must be a string", field);
    size_t n = json_string_length(v);
    if (n > max)
        return sh_errorf(err, SH_ETOOLARGE, "%s is %zu bytes, the limit is %zu",
                         field, n, max);
    if (strlen(json_string_value(v)) != n)
        return sh_errorf(err, SH_EINVAL, "%s must not contain NUL bytes",
                         field);
    char *s = strdup(json_string_value(v));
    if (!s)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    free(*out);
    *out = s;
    return 0;
}

static int get_int(const json_t *v, const char *field, int min, int max,
                   int *out, struct sh_error *err)
{
    if (!json_is_integer(v))
        return sh_errorf(err, SH_EINVAL, "%s must be a whole number", field);
    json_int_t i = json_integer_value(v);
    if (i < min || i > max)
        return sh_errorf(err, SH_EINVAL, "%s must be %d..%d, got %lld", field,
                         min, max, (long long)i);
    *out = (int)i;
    return 0;
}

static int get_size(const json_t *v, const char *field, uint64_t *out,
                    struct sh_error *err)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0 || (uint64_t)i > PARSE_SIZE_MAX)
            return sh_errorf(err, SH_EINVAL,
                             "%s must be 0..%llu bytes, got %lld", field,
                             (unsigned long long)PARSE_SIZE_MAX, (long long)i);
        *out = (uint64_t)i;
        return 0;
    }
    if (json_is_string(v))
        return parse_size(field, json_string_value(v), out, err);
    return sh_errorf(err, SH_EINVAL,
                     "%s must be a number of bytes or a size such as \"16G\"",
                     field);
}

static int get_duration(const json_t *v, const char *field, int64_t *out,
                        struct sh_error *err)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0 || i > PARSE_DURATION_MAX)
            return sh_errorf(err, SH_EINVAL,
                             "%s must be 0..%lld seconds, got %lld", field,
                             (long long)PARSE_DURATION_MAX, (long long)i);
        *out = i;
        return 0;
    }
    if (json_is_string(v))
        return parse_duration(field, json_string_value(v), out, err);
    return sh_errorf(err, SH_EINVAL,
                     "%s must be a number of seconds or a duration such as "
                     "\"2h\"",
                     field);
}

static int get_command(const json_t *v, struct job_spec *s,
                       struct sh_error *err)
{
    if (!json_is_array(v))
        return sh_errorf(err, SH_EINVAL, "command must be an array of strings");
    size_t n = json_array_size(v);
    if (n > JOB_ARGC_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "command has %zu arguments, the limit is %d", n,
                         JOB_ARGC_MAX);
    char **argv = calloc(n + 1, sizeof(char *));
    if (!argv)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *a = json_array_get(v, i);
        if (!json_is_string(a) ||
            get_string(a, "command argument", JOB_ARG_MAX, &argv[i], err) < 0) {
            if (!json_is_string(a))
                sh_errorf(err, SH_EINVAL,
                          "command must be an array of strings");
            for (size_t j = 0; j < i; j++)
                free(argv[j]);
            free(argv);
            return -1;
        }
    }
    for (int i = 0; i < s->argc; i++)
        free(s->argv[i]);
    free(s->argv);
    s->argv = argv;
    s->argc = (int)n;
    return 0;
}

static int get_env(const json_t *v, struct job_spec *s, struct sh_error *err)
{
    if (!json_is_object(v))
        return sh_errorf(err, SH_EINVAL,
                         "env must be an object of names to strings");
    size_t n = json_object_size(v);
    if (n > JOB_ENV_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "env has %zu entries, the limit is %d", n,
                         JOB_ENV_MAX);
    struct job_env *env = calloc(n ? n : 1, sizeof(*env));
    if (!env)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    size_t i = 0;
    const char *key;
    const json_t *val;
    int rc = 0;
    json_object_foreach ((json_t *)v, key, val) {
        if (!json_is_string(val)) {
            rc = sh_errorf(err, SH_EINVAL, "env %.*s must be a string",
                           UTF8_CUT(key, 64));
            break;
        }
        env[i].key = strdup(key);
        env[i].value = strdup(json_string_value(val));
        i++;
        if (!env[i - 1].key || !env[i - 1].value) {
            rc = sh_errorf(err, SH_EINTERNAL, "out of memory");
            break;
        }
    }
    s->env = env;
    s->nenv = (int)i;
    return rc;
}

static int get_volume(const json_t *v, struct job_volume *vol,
                      struct sh_error *err)
{
    if (json_is_string(v)) {
        /* "name:/path[:ro|:rw]" as on the command line */
        const char *s = json_string_value(v);
        const char *colon = strchr(s, ':');
        if (!colon || colon == s || !colon[1])
            return sh_errorf(err, SH_EINVAL,
                             "volume '%.*s' must be NAME:PATH[:ro]",
                             UTF8_CUT(s, 64));
        const char *path = colon + 1;
        const char *mode = strchr(path, ':');
        if (mode && strcmp(mode, ":ro") != 0 && strcmp(mode, ":rw") != 0)
            return sh_errorf(err, SH_EINVAL,
                             "volume '%.*s': the mode after the path must be "
                             "ro or rw",
                             UTF8_CUT(s, 64));
        vol->readonly = mode && strcmp(mode, ":ro") == 0;
        vol->name = strndup(s, (size_t)(colon - s));
        vol->path = mode ? strndup(path, (size_t)(mode - path)) : strdup(path);
        if (!vol->name || !vol->path)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
    } else if (json_is_object(v)) {
        const char *key;
        const json_t *val;
        json_object_foreach ((json_t *)v, key, val) {
            if (strcmp(key, "name") == 0) {
                if (get_string(val, "volume name", JOB_IDENT_MAX, &vol->name,
                               err) < 0)
                    return -1;
            } else if (strcmp(key, "path") == 0) {
                if (get_string(val, "volume path", JOB_PATH_MAX, &vol->path,
                               err) < 0)
                    return -1;
            } else if (strcmp(key, "readonly") == 0) {
                if (!json_is_boolean(val))
                    return sh_errorf(err, SH_EINVAL,
                                     "volume readonly must be true or false");
                vol->readonly = json_is_true(val);
            } else {
                return sh_errorf(err, SH_EINVAL, "volume: unknown field '%.*s'",
                                 UTF8_CUT(key, 64));
            }
        }
    } else {
        return sh_errorf(
            err, SH_EINVAL,
            "volumes must be an array of \"NAME:PATH[:ro]\" strings "
            "or {\"name\", \"path\", \"readonly\"} objects");
    }
    if (!vol->name || !vol->path)
        return sh_errorf(err, SH_EINVAL, "volume needs a name and a path");
    return 0;
}

static int get_volumes(const json_t *v, struct job_spec *s,
                       struct sh_error *err)
{
    if (!json_is_array(v))
        return sh_errorf(err, SH_EINVAL, "volumes must be an array");
    size_t n = json_array_size(v);
    if (n > JOB_VOLUMES_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "%zu volumes given, the limit is %d", n,
                         JOB_VOLUMES_MAX);
    s->volumes = calloc(n ? n : 1, sizeof(*s->volumes));
    if (!s->volumes)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        s->nvolumes++;
        if (get_volume(json_array_get(v, i), &s->volumes[i], err) < 0)
            return -1;
    }
    return 0;
}

/* "launch": "batch" (once, on the first node) or "tasks" (every task). */
static int get_launch(const json_t *v, struct job_spec *s, struct sh_error *err)
{
    const char *t = json_string_value(v);
    if (t && strcmp(t, "batch") == 0)
        s->batch = true;
    else if (t && strcmp(t, "tasks") == 0)
        s->batch = false;
    else
        return sh_errorf(err, SH_EINVAL,
                         "launch must be \"batch\" (the script once, on the "
                         "first node) or \"tasks\" (every task on every "
                         "node)");
    return 0;
}

static int get_bool(const json_t *v, const char *field, bool *out,
                    struct sh_error *err)
{
    if (!json_is_boolean(v))
        return sh_errorf(err, SH_EINVAL, "%s must be true or false", field);
    *out = json_is_true(v);
    return 0;
}

/* One submission field. Returns 0, -1 on error, 1 when the key is unknown. */
static int spec_field(const char *key, const json_t *v, struct job_spec *s,
                      struct sh_error *err)
{
    if (strcmp(key, "name") == 0)
        return get_string(v, "name", JOB_NAME_MAX, &s->name, err);
    if (strcmp(key, "user") == 0)
        return get_string(v, "user", JOB_IDENT_MAX, &s->user, err);
    if (strcmp(key, "project") == 0)
        return get_string(v, "project", JOB_IDENT_MAX, &s->project, err);
    if (strcmp(key, "partition") == 0)
        return get_string(v, "partition", JOB_IDENT_MAX, &s->partition, err);
    if (strcmp(key, "qos") == 0)
        return get_string(v, "qos", JOB_IDENT_MAX, &s->qos, err);
    if (strcmp(key, "qos_max_gpus_per_user") == 0) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > JOB_GPUS_TOTAL_MAX)
            return sh_errorf(err, SH_EINVAL,
                             "qos_max_gpus_per_user must be 0..%d",
                             JOB_GPUS_TOTAL_MAX);
        s->qos_max_gpus = (int)json_integer_value(v);
        return 0;
    }
    if (strcmp(key, "mail_type") == 0) {
        if (!json_is_string(v))
            return sh_errorf(err, SH_EINVAL,
                             "mail_type must be a string like \"END,FAIL\"");
        return job_mail_parse(json_string_value(v), &s->mail_events, err);
    }
    if (strcmp(key, "mail_user") == 0)
        return get_string(v, "mail_user", JOB_MAIL_USER_MAX, &s->mail_user,
                          err);
    if (strcmp(key, "priority") == 0) {
        if (!json_is_string(v) ||
            job_priority_from_name(json_string_value(v), &s->priority) < 0)
            return sh_errorf(
                err, SH_EINVAL,
                "priority must be \"high\", \"normal\" or \"low\"");
        return 0;
    }
    if (strcmp(key, "nodes") == 0)
        return get_int(v, "nodes", 0, JOB_NODES_MAX, &s->nodes, err);
    if (strcmp(key, "gpus_total") == 0)
        return get_int(v, "gpus_total", 0, JOB_GPUS_TOTAL_MAX, &s->gpus_total,
                       err);
    if (strcmp(key, "gpus") == 0)
        return get_int(v, "gpus", 0, JOB_GPUS_PER_NODE_MAX, &s->gpus_per_node,
                       err);
    if (strcmp(key, "gpu_type") == 0)
        return get_string(v, "gpu_type", JOB_IDENT_MAX, &s->gpu_type, err);
    if (strcmp(key, "slice") == 0)
        return get_string(v, "slice", JOB_SLICE_MAX, &s->slice, err);
    if (strcmp(key, "gpu_mem") == 0)
        return get_size(v, "gpu_mem", &s->gpu_mem, err);
    if (strcmp(key, "cpus") == 0)
        return get_int(v, "cpus", 0, JOB_CPUS_MAX, &s->cpus, err);
    if (strcmp(key, "mem") == 0)
        return get_size(v, "mem", &s->mem, err);
    if (strcmp(key, "time_limit") == 0)
        return get_duration(v, "time_limit", &s->time_limit, err);
    if (strcmp(key, "tasks_per_node") == 0)
        return get_int(v, "tasks_per_node", 1, JOB_TASKS_PER_NODE_MAX,
                       &s->tasks_per_node, err);
    if (strcmp(key, "requeue") == 0)
        return get_bool(v, "requeue", &s->requeue, err);
    if (strcmp(key, "checkpointable") == 0)
        return get_bool(v, "checkpointable", &s->checkpointable, err);
    if (strcmp(key, "command") == 0)
        return get_command(v, s, err);
    if (strcmp(key, "env") == 0)
        return get_env(v, s, err);
    if (strcmp(key, "workdir") == 0)
        return get_string(v, "workdir", JOB_PATH_MAX, &s->workdir, err);
    if (strcmp(key, "script") == 0)
        return get_string(v, "script", JOB_SCRIPT_MAX, &s->script, err);
    if (strcmp(key, "launch") == 0)
        return get_launch(v, s, err);
    if (strcmp(key, "submit_dir") == 0)
        return get_string(v, "submit_dir", JOB_PATH_MAX, &s->submit_dir, err);
    if (strcmp(key, "volumes") == 0)
        return get_volumes(v, s, err);
    if (strcmp(key, "dependency") == 0) {
        if (!json_is_string(v))
            return sh_errorf(err, SH_EINVAL,
                             "dependency must be a string like "
                             "\"afterok:12:13,singleton\"");
        free(s->deps);
        s->deps = NULL;
        s->ndeps = 0;
        return job_deps_parse(json_string_value(v), &s->deps, &s->ndeps, err);
    }
    if (strcmp(key, "hold") == 0)
        return get_bool(v, "hold", &s->hold, err);
    if (strcmp(key, "array") == 0) {
        struct job_array a;
        if (!json_is_string(v))
            return sh_errorf(err, SH_EINVAL,
                             "array must be a string like \"0-99%%8\"");
        if (job_array_parse(json_string_value(v), &a, err) < 0)
            return -1;
        job_array_fini(&a);
        return get_string(v, "array", JOB_ARRAY_TEXT_MAX, &s->array, err);
    }
    if (strcmp(key, "nodelist") == 0)
        return get_string(v, "nodelist", JOB_NODELIST_TEXT_MAX, &s->nodelist,
                          err);
    if (strcmp(key, "exclude") == 0)
        return get_string(v, "exclude", JOB_NODELIST_TEXT_MAX, &s->exclude,
                          err);
    if (strcmp(key, "constraint") == 0)
        return get_string(v, "constraint", JOB_CONSTRAINT_MAX, &s->constraint,
                          err);
    if (strcmp(key, "exclusive") == 0)
        return get_bool(v, "exclusive", &s->exclusive, err);
    if (strcmp(key, "output") == 0)
        return get_string(v, "output", JOB_PATH_MAX, &s->output, err);
    if (strcmp(key, "error") == 0)
        return get_string(v, "error", JOB_PATH_MAX, &s->error, err);
    if (strcmp(key, "begin") == 0) {
        /* Absolute (UTC); the CLI turns Slurm's now+1h and HH:MM into
         * this, so the record means the same on every machine. */
        if (json_is_null(v)) {
            s->begin_ms = 0;
            return 0;
        }
        if (!json_is_string(v) ||
            clock_parse_date("begin", json_string_value(v), &s->begin_ms,
                             NULL) < 0)
            return sh_errorf(err, SH_EINVAL,
                             "begin must be a UTC time like "
                             "\"2026-12-02T10:00:00Z\"");
        return 0;
    }
    return job_container_field(key, v, &s->container, err);
}

int job_spec_from_json(const json_t *obj, struct job_spec *spec,
                       struct sh_error *err)
{
    if (!json_is_object(obj))
        return sh_errorf(err, SH_EINVAL, "a job must be a JSON object");
    const char *key;
    const json_t *v;
    json_object_foreach ((json_t *)obj, key, v) {
        int rc = spec_field(key, v, spec, err);
        if (rc == 1)
            rc = sh_errorf(err, SH_EINVAL, "unknown field '%.*s'",
                           UTF8_CUT(key, 64));
        if (rc < 0)
            goto error;
    }
    if (!spec->argv && !spec->script) {
        sh_errorf(err, SH_EINVAL, "command (or script) is required");
        goto error;
    }
    /* gpus_total: no shape until the engine picks one (a stored job says
     * nodes 0 and gpus 0; any other value is a conflict, which
     * job_spec_validate names). */
    if (spec->gpus_total > 0 && !json_object_get(obj, "nodes"))
        spec->nodes = 0;
    /* A node list names the nodes, so it gives their count. */
    if (spec->nodelist && !json_object_get(obj, "nodes") && !spec->gpus_total) {
        int n = 0;
        if (job_nodelist_check("nodelist", spec->nodelist, &n, err) < 0)
            goto error;
        spec->nodes = n;
    }
    /* A slice or a GPU memory wish means one GPU unless told otherwise. */
    if ((spec->slice || spec->gpu_mem) && !json_object_get(obj, "gpus") &&
        !spec->gpus_total)
        spec->gpus_per_node = 1;
    if (!spec->argv) {
        spec->argv = calloc(1, sizeof(char *));
        if (!spec->argv) {
            sh_errorf(err, SH_EINTERNAL, "out of memory");
            goto error;
        }
    }
    if (job_spec_validate(spec, err) < 0)
        goto error;
    return 0;
error:
    job_spec_fini(spec);
    return -1;
}

/* ---- encoders ---- */

/* Set key to a string or null. Steals the new value's reference. */
static void set_str(json_t *o, const char *key, const char *s)
{
    json_object_set_new(o, key, s ? json_string(s) : json_null());
}

static void set_time(json_t *o, const char *key, int64_t ms)
{
    char buf[32];
    if (ms <= 0) {
        json_object_set_new(o, key, json_null());
        return;
    }
    clock_format_iso(ms, buf, sizeof(buf));
    json_object_set_new(o, key, json_string(buf));
}

json_t *job_spec_to_json(const struct job_spec *s)
{
    json_t *o = json_object();
    json_t *argv = json_array();
    json_t *env = json_object();
    json_t *vols = json_array();
    if (!o || !argv || !env || !vols) {
        json_decref(o);
        json_decref(argv);
        json_decref(env);
        json_decref(vols);
        return NULL;
    }
    set_str(o, "name", s->name);
    set_str(o, "user", s->user);
    set_str(o, "project", s->project);
    if (s->partition)
        set_str(o, "partition", s->partition);
    if (s->qos)
        set_str(o, "qos", s->qos);
    if (s->qos_max_gpus)
        json_object_set_new(o, "qos_max_gpus_per_user",
                            json_integer(s->qos_max_gpus));
    if (s->mail_events) {
        char m[128];
        set_str(o, "mail_type", job_mail_format(s->mail_events, m, sizeof(m)));
    }
    if (s->mail_user)
        set_str(o, "mail_user", s->mail_user);
    set_str(o, "priority", job_priority_name(s->priority));
    json_object_set_new(o, "nodes", json_integer(s->nodes));
    json_object_set_new(o, "gpus", json_integer(s->gpus_per_node));
    if (s->gpus_total)
        json_object_set_new(o, "gpus_total", json_integer(s->gpus_total));
    set_str(o, "gpu_type", s->gpu_type);
    set_str(o, "slice", s->slice);
    json_object_set_new(o, "gpu_mem", json_integer((json_int_t)s->gpu_mem));
    json_object_set_new(o, "cpus", json_integer(s->cpus));
    json_object_set_new(o, "mem", json_integer((json_int_t)s->mem));
    json_object_set_new(o, "time_limit", json_integer(s->time_limit));
    json_object_set_new(o, "tasks_per_node", json_integer(s->tasks_per_node));
    json_object_set_new(o, "requeue", json_boolean(s->requeue));
    json_object_set_new(o, "checkpointable", json_boolean(s->checkpointable));
    for (int i = 0; i < s->argc; i++)
        json_array_append_new(argv, json_string(s->argv[i]));
    json_object_set_new(o, "command", argv); /* steals argv */
    for (int i = 0; i < s->nenv; i++)
        json_object_set_new(env, s->env[i].key, json_string(s->env[i].value));
    json_object_set_new(o, "env", env); /* steals env */
    set_str(o, "workdir", s->workdir);
    if (s->script)
        set_str(o, "script", s->script);
    set_str(o, "launch", s->batch ? "batch" : "tasks");
    if (s->submit_dir)
        set_str(o, "submit_dir", s->submit_dir);
    for (int i = 0; i < s->nvolumes; i++)
        json_array_append_new(vols, json_pack("{s:s, s:s, s:b}", "name",
                                              s->volumes[i].name, "path",
                                              s->volumes[i].path, "readonly",
                                              s->volumes[i].readonly));
    json_object_set_new(o, "volumes", vols); /* steals vols */
    if (s->ndeps > 0) {
        char deps[JOB_DEPS_TEXT_MAX + 32];
        set_str(o, "dependency",
                job_deps_format(s->deps, s->ndeps, deps, sizeof(deps)));
    }
    if (s->hold)
        json_object_set_new(o, "hold", json_true());
    if (s->array)
        set_str(o, "array", s->array);
    if (s->nodelist)
        set_str(o, "nodelist", s->nodelist);
    if (s->exclude)
        set_str(o, "exclude", s->exclude);
    if (s->constraint)
        set_str(o, "constraint", s->constraint);
    if (s->exclusive)
        json_object_set_new(o, "exclusive", json_true());
    if (s->begin_ms > 0)
        set_time(o, "begin", s->begin_ms);
    job_container_to_json(&s->container, o);
    if (s->output)
        set_str(o, "output", s->output);
    if (s->error)
        set_str(o, "error", s->error);
    return o;
}

json_t *job_alloc_to_json(const struct job_alloc *alloc, int n)
{
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    for (int i = 0; i < n; i++) {
        json_t *gpus = json_array();
        for (int g = 0; g < alloc[i].ngpus; g++)
            json_array_append_new(gpus, json_string(alloc[i].gpus[g]));
        /* "o" steals gpus */
        json_t *e =
            json_pack("{s:s, s:o, s:f, s:b}", "node", alloc[i].node, "gpus",
                      gpus, "share", alloc[i].share, "done", alloc[i].done);
        if (e && alloc[i].exit_code >= 0)
            json_object_set_new(e, "exit_code",
                                json_integer(alloc[i].exit_code));
        if (e && alloc[i].exit_signal)
            json_object_set_new(e, "exit_signal",
                                json_integer(alloc[i].exit_signal));
        json_array_append_new(arr, e);
    }
    return arr;
}

int job_alloc_from_json(const json_t *arr, struct job_alloc **out, int *nout,
                        struct sh_error *err)
{
    if (!json_is_array(arr))
        return sh_errorf(err, SH_EINVAL, "placement must be an array");
    size_t n = json_array_size(arr);
    if (n > JOB_NODES_MAX)
        return sh_errorf(err, SH_ETOOLARGE, "placement has too many nodes");
    struct job_alloc *alloc = calloc(n ? n : 1, sizeof(*alloc));
    if (!alloc)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    int filled = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(arr, i);
        const json_t *node = json_object_get(e, "node");
        const json_t *gpus = json_object_get(e, "gpus");
        if (!json_is_string(node) || !json_is_array(gpus) ||
            json_array_size(gpus) > JOB_GPUS_PER_NODE_MAX * 8) {
            sh_errorf(err, SH_EINVAL,
                      "placement entries need a node and a gpus array");
            goto error;
        }
        filled++;
        const json_t *share = json_object_get(e, "share");
        alloc[i].share = json_is_number(share) ? json_number_value(share)
                                               : (double)json_array_size(gpus);
        alloc[i].done = json_is_true(json_object_get(e, "done"));
        const json_t *ec = json_object_get(e, "exit_code");
        const json_t *es = json_object_get(e, "exit_signal");
        alloc[i].exit_code =
            json_is_integer(ec) ? (int)json_integer_value(ec) : -1;
        alloc[i].exit_signal =
            json_is_integer(es) ? (int)json_integer_value(es) : 0;
        alloc[i].node = strdup(json_string_value(node));
        size_t ng = json_array_size(gpus);
        alloc[i].gpus = calloc(ng ? ng : 1, sizeof(char *));
        if (!alloc[i].node || !alloc[i].gpus) {
            sh_errorf(err, SH_EINTERNAL, "out of memory");
            goto error;
        }
        for (size_t g = 0; g < ng; g++) {
            const json_t *u = json_array_get(gpus, g);
            if (!json_is_string(u)) {
                sh_errorf(err, SH_EINVAL, "placement GPUs must be strings");
                goto error;
            }
            alloc[i].gpus[g] = strdup(json_string_value(u));
            alloc[i].ngpus++;
            if (!alloc[i].gpus[g]) {
                sh_errorf(err, SH_EINTERNAL, "out of memory");
                goto error;
            }
        }
    }
    *out = alloc;
    *nout = (int)n;
    return 0;
error:
    job_alloc_free(alloc, filled);
    return -1;
}

/* One attempt in the user's view (job_json_write.c writes the same).
 * nodes: an array of names, stolen. */
static json_t *attempt_to_json(int attempt, enum job_state state,
                               int64_t start_ms, int64_t end_ms, json_t *nodes,
                               int exit_code, int exit_signal,
                               const char *reason)
{
    json_t *o = json_object();
    json_object_set_new(o, "attempt", json_integer(attempt));
    set_str(o, "state", job_state_name(state));
    set_time(o, "start_time", start_ms);
    set_time(o, "end_time", end_ms);
    json_object_set_new(o, "start_ms", json_integer(start_ms));
    json_object_set_new(o, "end_ms", json_integer(end_ms));
    json_object_set_new(o, "nodes", nodes);
    json_object_set_new(o, "exit_code",
                        exit_code >= 0 ? json_integer(exit_code) : json_null());
    json_object_set_new(o, "exit_signal",
                        exit_signal ? json_integer(exit_signal) : json_null());
    set_str(o, "reason", reason);
    return o;
}

json_t *job_attempts_to_json(const struct job *job)
{
    json_t *arr = json_array();
    for (int i = 0; i < job->npast; i++) {
        const struct job_attempt *a = &job->past[i];
        json_t *nodes = json_array();
        for (const char *p = a->nodes; p && *p;) {
            size_t len = strcspn(p, ",");
            json_array_append_new(nodes, json_stringn(p, len));
            p += len + (p[len] == ',');
        }
        json_array_append_new(arr,
                              attempt_to_json(a->attempt, a->state, a->start_ms,
                                              a->end_ms, nodes, a->exit_code,
                                              a->exit_signal, a->reason));
    }
    json_t *nodes = json_array();
    for (int i = 0; i < job->nalloc; i++)
        json_array_append_new(nodes, json_string(job->alloc[i].node));
    bool started = job_attempt_started(job);
    json_array_append_new(
        arr, attempt_to_json(job_attempt(job), job->state,
                             started ? job->start_ms : 0, job->end_ms, nodes,
                             job->exit_code, job->exit_signal, job->reason));
    return arr;
}

json_t *job_to_json(const struct job *job)
{
    json_t *o = job_spec_to_json(&job->spec);
    if (!o)
        return NULL;
    json_object_set_new(o, "id", json_integer((json_int_t)job->id));
    set_str(o, "state", job_state_name(job->state));
    set_str(o, "reason", job->reason);
    set_time(o, "submit_time", job->submit_ms);
    set_time(o, "start_time", job->start_ms);
    set_time(o, "end_time", job->end_ms);
    set_time(o, "estimated_start", job->est_start_ms);
    json_object_set_new(o, "exit_code",
                        job->exit_code >= 0 ? json_integer(job->exit_code)
                                            : json_null());
    json_object_set_new(o, "exit_signal",
                        job->exit_signal ? json_integer(job->exit_signal)
                                         : json_null());
    json_object_set_new(o, "requeues", json_integer(job->requeues));
    json_object_set_new(o, "releasing", json_boolean(job->releasing));
    json_object_set_new(o, "held", json_boolean(job->held));
    if (job->array_id) {
        json_object_set_new(o, "array_id",
                            json_integer((json_int_t)job->array_id));
        json_object_set_new(o, "array_task", json_integer(job->array_task));
    }
    json_object_set_new(o, "placement",
                        job_alloc_to_json(job->alloc, job->nalloc));
    json_object_set_new(o, "attempt", json_integer(job_attempt(job)));
    json_object_set_new(o, "attempts", job_attempts_to_json(job));
    set_str(o, "gpu_model", job->gpu_model);
    double util = job_util_avg(job);
    json_object_set_new(o, "gpu_utilization",
                        util >= 0 ? json_real((double)(int)(util * 10) / 10)
                                  : json_null());
    json_object_set_new(o, "idle", json_boolean(job->idle));
    json_object_set_new(o, "gpu_seconds",
                        json_real(job_gpu_seconds(job, clock_wall_ms())));
    json_object_set_new(o, "cpu_seconds", json_real((double)job->cpu_ns / 1e9));
    json_object_set_new(o, "mem_peak", json_integer((json_int_t)job->mem_peak));
    /* Millisecond times for scripts (the ISO fields are for people). */
    json_object_set_new(o, "submit_ms", json_integer(job->submit_ms));
    json_object_set_new(o, "start_ms", json_integer(job->start_ms));
    json_object_set_new(o, "end_ms", json_integer(job->end_ms));
    if (job->master_port)
        json_object_set_new(o, "master_port", json_integer(job->master_port));
    if (job->image_digest)
        json_object_set_new(o, "image_digest", json_string(job->image_digest));
    return o;
}

json_t *job_to_record(const struct job *job)
{
    json_t *spec = job_spec_to_json(&job->spec);
    if (!spec)
        return NULL;
    /* "o" steals spec and the placement array */
    json_t *rec = json_pack(
        "{s:I, s:o, s:s, s:I, s:I, s:I, s:i, s:i, s:i, "
        "s:b, s:I, s:o}",
        "id", (json_int_t)job->id, "spec", spec, "state",
        job_state_name(job->state), "submit_ms", (json_int_t)job->submit_ms,
        "start_ms", (json_int_t)job->start_ms, "end_ms",
        (json_int_t)job->end_ms, "exit_code", job->exit_code, "exit_signal",
        job->exit_signal, "requeues", job->requeues, "releasing",
        job->releasing, "est_start_ms", (json_int_t)job->est_start_ms,
        "placement", job_alloc_to_json(job->alloc, job->nalloc));
    if (rec && job->reason)
        json_object_set_new(rec, "reason", json_string(job->reason));
    if (rec && job->master_port)
        json_object_set_new(rec, "master_port", json_integer(job->master_port));
    if (rec && job->image_digest)
        json_object_set_new(rec, "image_digest",
                            json_string(job->image_digest));
    if (rec && job->idem_key)
        json_object_set_new(rec, "idempotency_key", json_string(job->idem_key));
    if (rec && job->queued_ms != job->submit_ms)
        json_object_set_new(rec, "queued_ms", json_integer(job->queued_ms));
    if (rec && job->gpu_model)
        json_object_set_new(rec, "gpu_model", json_string(job->gpu_model));
    if (rec && job->util_ms > 0) {
        json_object_set_new(rec, "util_sum", json_real(job->util_sum));
        json_object_set_new(rec, "util_ms", json_integer(job->util_ms));
    }
    if (rec && job->idle_since_ms)
        json_object_set_new(rec, "idle_since_ms",
                            json_integer(job->idle_since_ms));
    if (rec && job->idle)
        json_object_set_new(rec, "idle", json_true());
    if (rec && job->held)
        json_object_set_new(rec, "held", json_true());
    if (rec && job->requeue_asked)
        json_object_set_new(rec, "requeue_asked", json_true());
    if (rec && job->attained_gpu_ms > 0)
        json_object_set_new(rec, "attained_gpu_ms",
                            json_integer((json_int_t)job->attained_gpu_ms));
    if (rec && job->array_id)
        json_object_update_new(rec, json_pack("{s:I, s:i, s:i}", "array_id",
                                              (json_int_t)job->array_id,
                                              "array_task", job->array_task,
                                              "array_max", job->array_max));
    if (rec && job->cpu_ns)
        json_object_set_new(rec, "cpu_ns",
                            json_integer((json_int_t)job->cpu_ns));
    if (rec && job->mem_peak)
        json_object_set_new(rec, "mem_peak",
                            json_integer((json_int_t)job->mem_peak));
    if (rec && job->npast) {
        json_t *arr = json_array();
        for (int i = 0; i < job->npast; i++) {
            const struct job_attempt *a = &job->past[i];
            json_t *o = json_pack("{s:i, s:s, s:I, s:I, s:i, s:i}", "attempt",
                                  a->attempt, "state", job_state_name(a->state),
                                  "start_ms", (json_int_t)a->start_ms, "end_ms",
                                  (json_int_t)a->end_ms, "exit_code",
                                  a->exit_code, "exit_signal", a->exit_signal);
            if (o && a->nodes)
                json_object_set_new(o, "nodes", json_string(a->nodes));
            if (o && a->reason)
                json_object_set_new(o, "reason", json_string(a->reason));
            json_array_append_new(arr, o);
        }
        json_object_set_new(rec, "attempts", arr);
    }
    return rec;
}

/* The earlier attempts of a record; entries that do not read are skipped
 * (they are history, not state the job needs to run). */
static int attempts_from_record(struct job *job, const json_t *arr)
{
    size_t i;
    const json_t *o;
    json_array_foreach (arr, i, o) {
        json_int_t start = 0, end = 0;
        int attempt = 0, exit_code = -1, exit_signal = 0;
        const char *state = NULL, *nodes = NULL, *reason = NULL;
        struct job_attempt a = {0};
        if (json_unpack((json_t *)o, "{s:i, s:s, s:I, s:I, s:i, s:i, s?s, s?s}",
                        "attempt", &attempt, "state", &state, "start_ms",
                        &start, "end_ms", &end, "exit_code", &exit_code,
                        "exit_signal", &exit_signal, "nodes", &nodes, "reason",
                        &reason) < 0 ||
            attempt < 0 || job_state_from_name(state, &a.state) < 0)
            continue;
        a.attempt = attempt;
        a.start_ms = start;
        a.end_ms = end;
        a.exit_code = exit_code;
        a.exit_signal = exit_signal;
        a.nodes = nodes ? strdup(nodes) : NULL;
        a.reason = reason ? strndup(reason, JOB_REASON_MAX) : NULL;
        if ((nodes && !a.nodes) || (reason && !a.reason)) {
            job_attempt_fini(&a);
            return -1;
        }
        if (job_attempt_push(job, &a) < 0)
            return -1;
    }
    return 0;
}

struct job *job_from_record(const json_t *rec, struct sh_error *err)
{
    json_int_t id = 0, submit = 0, start = 0, end = 0, est = 0;
    int exit_code = -1, exit_signal = 0, requeues = 0, releasing = 0;
    const char *state = NULL, *reason = NULL;
    json_t *spec_obj = NULL, *placement = NULL;
    json_error_t jerr;
    if (json_unpack_ex((json_t *)rec, &jerr, 0,
                       "{s:I, s:o, s:s, s:I, s:I, s:I, s:i, s:i, s:i, s:b, "
                       "s?s, s?I, s:o}",
                       "id", &id, "spec", &spec_obj, "state", &state,
                       "submit_ms", &submit, "start_ms", &start, "end_ms", &end,
                       "exit_code", &exit_code, "exit_signal", &exit_signal,
                       "requeues", &requeues, "releasing", &releasing, "reason",
                       &reason, "est_start_ms", &est, "placement",
                       &placement) < 0) {
        sh_errorf(err, SH_EINVAL, "job record: %s", jerr.text);
        return NULL;
    }
    struct job_spec spec;
    job_spec_init(&spec);
    /* The stored spec holds the defaults explicitly (nulls and zeros);
     * drop the nulls so the strict parser sees only real values. */
    json_t *clean = json_object();
    const char *key;
    json_t *v;
    json_object_foreach (spec_obj, key, v) {
        if (!json_is_null(v))
            json_object_set(clean, key, v);
    }
    int rc = job_spec_from_json(clean, &spec, err);
    json_decref(clean);
    if (rc < 0)
        return NULL;
    struct job *job = job_create((uint64_t)id, &spec, submit);
    if (!job) {
        job_spec_fini(&spec);
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    if (job_state_from_name(state, &job->state) < 0) {
        sh_errorf(err, SH_EINVAL, "job record: unknown state '%s'", state);
        goto error;
    }
    job->start_ms = start;
    job->end_ms = end;
    job->exit_code = exit_code;
    job->exit_signal = exit_signal;
    job->requeues = requeues;
    job->releasing = releasing;
    job->est_start_ms = est;
    job->master_port =
        (int)json_integer_value(json_object_get(rec, "master_port"));
    const char *digest =
        json_string_value(json_object_get(rec, "image_digest"));
    if (digest && job_image_digest_valid(digest) &&
        !(job->image_digest = strdup(digest))) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        goto error;
    }
    const char *idem =
        json_string_value(json_object_get(rec, "idempotency_key"));
    if (idem && job_idem_key_valid(idem) && !(job->idem_key = strdup(idem))) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        goto error;
    }
    const json_t *queued = json_object_get(rec, "queued_ms");
    if (json_is_integer(queued))
        job->queued_ms = json_integer_value(queued);
    const char *model = json_string_value(json_object_get(rec, "gpu_model"));
    if (model && !(job->gpu_model = strdup(model))) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        goto error;
    }
    job->util_sum = json_number_value(json_object_get(rec, "util_sum"));
    job->util_ms = json_integer_value(json_object_get(rec, "util_ms"));
    job->idle_since_ms =
        json_integer_value(json_object_get(rec, "idle_since_ms"));
    job->idle = json_is_true(json_object_get(rec, "idle"));
    job->held = json_is_true(json_object_get(rec, "held"));
    job->requeue_asked = json_is_true(json_object_get(rec, "requeue_asked"));
    const json_t *attained = json_object_get(rec, "attained_gpu_ms");
    if (json_is_integer(attained) && json_integer_value(attained) > 0)
        job->attained_gpu_ms = json_integer_value(attained);
    job->array_id =
        (uint64_t)json_integer_value(json_object_get(rec, "array_id"));
    job->array_task =
        (int)json_integer_value(json_object_get(rec, "array_task"));
    job->array_max = (int)json_integer_value(json_object_get(rec, "array_max"));
    job->cpu_ns = (uint64_t)json_integer_value(json_object_get(rec, "cpu_ns"));
    job->mem_peak =
        (uint64_t)json_integer_value(json_object_get(rec, "mem_peak"));
    if (attempts_from_record(job, json_object_get(rec, "attempts")) < 0) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        goto error;
    }
    if ((reason && job_set_reason(job, reason) < 0) ||
        job_alloc_from_json(placement, &job->alloc, &job->nalloc, err) < 0)
        goto error;
    return job;
error:
    job_destroy(job);
    return NULL;
}
