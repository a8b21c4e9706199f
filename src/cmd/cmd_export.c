/* SPDX-License-Identifier: Apache-2.0 */
/* The submitter's environment sent with a job (cmd_export.h). */
#include "cmd/cmd_export.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lib/model/job.h"

static bool name_valid(const char *s, size_t n)
{
    if (n == 0 || n > 256 || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return false;
    return true;
}

/* A variable of the submitter's that ALL leaves out (cmd_export.h). */
static bool left_out_of_all(const char *name, size_t n)
{
    static const char *const own[] = {"CUDA_VISIBLE_DEVICES",
                                      "NVIDIA_VISIBLE_DEVICES",
                                      "MASTER_ADDR",
                                      "MASTER_PORT",
                                      "WORLD_SIZE",
                                      "RANK",
                                      "LOCAL_RANK",
                                      "NODE_RANK",
                                      "LOCAL_WORLD_SIZE",
                                      "PWD",
                                      "OLDPWD",
                                      NULL};
    if ((n >= 6 && strncmp(name, "SHOAL_", 6) == 0) ||
        (n >= 6 && strncmp(name, "SLURM_", 6) == 0))
        return true;
    for (int i = 0; own[i]; i++)
        if (strlen(own[i]) == n && strncmp(own[i], name, n) == 0)
            return true;
    return false;
}

static bool is_word(const char *item, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(item, word, n) == 0;
}

int export_check(const char *spec, struct sh_error *err)
{
    bool all = false, none = false;
    int items = 0;
    if (!*spec)
        return sh_errorf(err, SH_EINVAL,
                         "--export: empty (ALL, NONE or VAR[=VALUE],...)");
    for (const char *p = spec;; p++) {
        size_t n = strcspn(p, ",");
        size_t name = strcspn(p, "=,");
        items++;
        if (is_word(p, n, "ALL"))
            all = true;
        else if (is_word(p, n, "NONE") || is_word(p, n, "NIL"))
            none = true;
        else if (!name_valid(p, name))
            return sh_errorf(err, SH_EINVAL,
                             "--export: '%.*s' is not ALL, NONE or "
                             "VAR[=VALUE]",
                             (int)n, p);
        else if (name == 11 && strncmp(p, "SHOAL_TOKEN", 11) == 0)
            return sh_errorf(err, SH_EINVAL,
                             "--export: SHOAL_TOKEN is your credential and "
                             "never travels with a job");
        p += n;
        if (!*p)
            break;
    }
    if (none && items > 1)
        return sh_errorf(err, SH_EINVAL,
                         "--export: NONE goes alone (without ALL or "
                         "variables)");
    (void)all;
    return 0;
}

/* Add name=value unless env has name; counts what is added. */
static int add(json_t *env, const char *name, size_t n, const char *value,
               size_t vlen, size_t *bytes, struct sh_error *err)
{
    char key[257];
    snprintf(key, sizeof(key), "%.*s", (int)n, name);
    if (json_object_get(env, key))
        return 0;
    if (vlen > JOB_ENV_VALUE_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "--export: %s is %zu bytes, more than the %d a "
                         "job's variable may hold: unset it, or submit with "
                         "--export=NONE or --export=VAR,...",
                         key, vlen, JOB_ENV_VALUE_MAX);
    *bytes += n + vlen + 2;
    if (json_object_set_new(env, key, json_stringn(value, vlen)) < 0)
        return sh_errorf(err, SH_EINVAL, "--export: %s is not UTF-8 text", key);
    return 0;
}

static int add_all(json_t *env, char *const *environ, size_t *bytes,
                   struct sh_error *err)
{
    for (char *const *e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        size_t n = (size_t)(eq - *e);
        if (!name_valid(*e, n) || left_out_of_all(*e, n) ||
            (n == 11 && strncmp(*e, "SHOAL_TOKEN", 11) == 0))
            continue;
        if (add(env, *e, n, eq + 1, strlen(eq + 1), bytes, err) < 0)
            return -1;
    }
    return 0;
}

/* The submitter's value of name (n bytes), or NULL. */
static const char *lookup(char *const *environ, const char *name, size_t n)
{
    for (char *const *e = environ; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

int export_env(json_t *env, const char *spec, char *const *environ,
               struct sh_error *err)
{
    if (!spec)
        spec = "ALL";
    if (export_check(spec, err) < 0)
        return -1;
    json_t *out = json_deep_copy(env);
    size_t bytes = 0;
    bool all = false;
    if (!out)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    /* The variables named first: they win over ALL's. */
    for (const char *p = spec;; p++) {
        size_t n = strcspn(p, ",");
        size_t name = strcspn(p, "=,");
        if (is_word(p, n, "ALL")) {
            all = true;
        } else if (!is_word(p, n, "NONE") && !is_word(p, n, "NIL")) {
            const char *v = p + name + 1;
            size_t vlen = name < n ? n - name - 1 : 0;
            if (name == n) { /* its current value; unset: not sent */
                v = lookup(environ, p, name);
                vlen = v ? strlen(v) : 0;
            }
            if (v && add(out, p, name, v, vlen, &bytes, err) < 0)
                goto fail;
        }
        p += n;
        if (!*p)
            break;
    }
    if (all && add_all(out, environ, &bytes, err) < 0)
        goto fail;
    if (json_object_size(out) > JOB_ENV_MAX) {
        sh_errorf(err, SH_ETOOLARGE,
                  "--export: the job would get %zu variables, more than "
                  "the %d a job may carry: submit with --export=NONE or "
                  "--export=VAR,... naming those it needs",
                  json_object_size(out), JOB_ENV_MAX);
        goto fail;
    }
    if (bytes > EXPORT_BYTES_MAX) {
        sh_errorf(err, SH_ETOOLARGE,
                  "--export: your environment is %zu bytes, more than the "
                  "%d sent with a job: submit with --export=NONE or "
                  "--export=VAR,... naming those it needs",
                  bytes, EXPORT_BYTES_MAX);
        goto fail;
    }
    json_object_update(env, out);
    json_decref(out);
    return 0;
fail:
    json_decref(out);
    return -1;
}
