/* SPDX-License-Identifier: Apache-2.0 */
/* A job's container part: fields, validation, references (see
 * job_container.h). */
#include "lib/model/job_container.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/util/utf8.h"

void job_container_init(struct job_container *c)
{
    memset(c, 0, sizeof(*c));
}

void job_container_fini(struct job_container *c)
{
    if (!c)
        return;
    free(c->image);
    for (int i = 0; i < c->nmounts; i++) {
        free(c->mounts[i].src);
        free(c->mounts[i].dst);
    }
    free(c->mounts);
    free(c->workdir);
    for (int i = 0; i < c->nenv; i++) {
        free(c->env[i].key);
        free(c->env[i].value);
    }
    free(c->env);
    job_container_init(c);
}

static int dup_opt(char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return src && !*dst ? -1 : 0;
}

int job_container_copy(struct job_container *dst,
                       const struct job_container *src)
{
    job_container_init(dst);
    if (dup_opt(&dst->image, src->image) < 0 ||
        dup_opt(&dst->workdir, src->workdir) < 0)
        goto fail;
    if (src->nmounts) {
        dst->mounts = calloc((size_t)src->nmounts, sizeof(*dst->mounts));
        if (!dst->mounts)
            goto fail;
        for (; dst->nmounts < src->nmounts; dst->nmounts++) {
            const struct job_cmount *m = &src->mounts[dst->nmounts];
            struct job_cmount *d = &dst->mounts[dst->nmounts];
            d->readonly = m->readonly;
            if (dup_opt(&d->src, m->src) < 0 || dup_opt(&d->dst, m->dst) < 0) {
                dst->nmounts++;
                goto fail;
            }
        }
    }
    if (src->nenv) {
        dst->env = calloc((size_t)src->nenv, sizeof(*dst->env));
        if (!dst->env)
            goto fail;
        for (; dst->nenv < src->nenv; dst->nenv++) {
            const struct job_cenv *e = &src->env[dst->nenv];
            struct job_cenv *d = &dst->env[dst->nenv];
            if (dup_opt(&d->key, e->key) < 0 ||
                dup_opt(&d->value, e->value) < 0) {
                dst->nenv++;
                goto fail;
            }
        }
    }
    return 0;
fail:
    job_container_fini(dst);
    return -1;
}

/* ---- references ---- */

static bool printable(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p <= 0x20 || *p == 0x7f)
            return false;
    }
    return true;
}

/* A path on shared storage: absolute, printable, no ':' (the transports
 * use it as a separator), no "..". */
static int check_image_path(const char *ref, const char *path, size_t len,
                            struct sh_error *err)
{
    char buf[JOB_IMAGE_MAX + 1];
    if (len == 0 || len > JOB_IMAGE_MAX || path[0] != '/')
        return sh_errorf(err, SH_EINVAL,
                         "image '%.*s': the path must be absolute",
                         UTF8_CUT(ref, 128));
    memcpy(buf, path, len);
    buf[len] = '\0';
    if (strstr(buf, "/../") ||
        strcmp(buf + len - (len >= 3 ? 3 : len), "/..") == 0)
        return sh_errorf(err, SH_EINVAL,
                         "image '%.*s': the path must not contain '..'",
                         UTF8_CUT(ref, 128));
    return 0;
}

static bool tag_valid(const char *t, size_t n)
{
    if (n == 0 || n > 128 || !(isalnum((unsigned char)t[0]) || t[0] == '_'))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (!isalnum(c) && c != '_' && c != '.' && c != '-')
            return false;
    }
    return true;
}

/* A repository path component: lowercase letters and digits, separated by
 * single '.', '_' or '-' (and "__"), never at either end. */
static bool component_valid(const char *s, size_t n)
{
    if (n == 0 || !isalnum((unsigned char)s[0]) ||
        !isalnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((isalpha(c) && !islower(c)) ||
            !(isalnum(c) || c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* host[:port]: letters, digits, '-' and '.', then digits. */
static bool host_valid(const char *s, size_t n)
{
    const char *colon = memchr(s, ':', n);
    size_t hn = colon ? (size_t)(colon - s) : n;
    if (hn == 0 || s[0] == '-' || s[0] == '.')
        return false;
    for (size_t i = 0; i < hn; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '-' && c != '.')
            return false;
    }
    if (colon) {
        size_t pn = n - hn - 1;
        if (pn == 0 || pn > 5)
            return false;
        for (size_t i = hn + 1; i < n; i++) {
            if (!isdigit((unsigned char)s[i]))
                return false;
        }
    }
    return true;
}

static int registry_parse(const char *ref, const char *name,
                          struct sh_error *err)
{
    const char *at = strchr(name, '@');
    size_t n = at ? (size_t)(at - name) : strlen(name);
    if (at) {
        const char *d = at + 1;
        bool ok = strncmp(d, "sha256:", 7) == 0 && strlen(d + 7) == 64;
        for (size_t i = 7; ok && i < 71; i++)
            ok = isxdigit((unsigned char)d[i]) && !isupper((unsigned char)d[i]);
        if (!ok)
            return sh_errorf(err, SH_EINVAL,
                             "image '%.*s': a digest must be @sha256: and 64 "
                             "lowercase hex digits",
                             UTF8_CUT(ref, 128));
    }
    const char *slash = memchr(name, '/', n);
    const char *last_slash = NULL;
    for (const char *p = name; p < name + n; p++)
        if (*p == '/')
            last_slash = p;
    const char *tag =
        memchr(last_slash ? last_slash : name, ':',
               n - (size_t)((last_slash ? last_slash : name) - name));
    if (tag && !tag_valid(tag + 1, (size_t)(name + n - tag - 1)))
        return sh_errorf(err, SH_EINVAL,
                         "image '%.*s': a tag is 1..128 letters, digits, "
                         "'_', '.' or '-'",
                         UTF8_CUT(ref, 128));
    if (tag)
        n = (size_t)(tag - name);
    if (n == 0 || n > 255)
        return sh_errorf(err, SH_EINVAL,
                         "image '%.*s': the image name must be 1..255 "
                         "characters",
                         UTF8_CUT(ref, 128));
    const char *p = name;
    /* The first component is a registry host when it looks like one. */
    if (slash && slash < name + n) {
        size_t fn = (size_t)(slash - name);
        bool is_host = memchr(name, '.', fn) || memchr(name, ':', fn) ||
                       (fn == 9 && strncmp(name, "localhost", 9) == 0);
        if (is_host) {
            if (!host_valid(name, fn))
                return sh_errorf(err, SH_EINVAL,
                                 "image '%.*s': '%.*s' is not a registry "
                                 "host[:port]",
                                 UTF8_CUT(ref, 128), (int)fn, name);
            p = slash + 1;
        }
    }
    while (p < name + n) {
        const char *end = memchr(p, '/', (size_t)(name + n - p));
        size_t cn = end ? (size_t)(end - p) : (size_t)(name + n - p);
        if (!component_valid(p, cn))
            return sh_errorf(
                err, SH_EINVAL,
                "image '%.*s': a registry image name is lowercase letters "
                "and digits separated by '.', '_', '-' or '/' (like "
                "registry.example.com/team/train:1.4); local images are "
                "oci-archive:PATH or oci:DIR:TAG",
                UTF8_CUT(ref, 128));
        if (!end)
            break;
        p = end + 1;
        if (p == name + n)
            return sh_errorf(err, SH_EINVAL,
                             "image '%.*s': the name ends with '/'",
                             UTF8_CUT(ref, 128));
    }
    return 0;
}

int job_image_ref_parse(const char *ref, enum job_image_kind *kind,
                        struct sh_error *err)
{
    if (!ref || !*ref)
        return sh_errorf(err, SH_EINVAL, "image must not be empty");
    if (strlen(ref) > JOB_IMAGE_MAX || !printable(ref))
        return sh_errorf(err, SH_EINVAL,
                         "image must be at most %d printable characters "
                         "without spaces",
                         JOB_IMAGE_MAX);
    if (strncmp(ref, "oci-archive:", 12) == 0) {
        const char *path = ref + 12;
        if (strchr(path, ':'))
            return sh_errorf(err, SH_EINVAL,
                             "image '%.*s': oci-archive:PATH takes a path "
                             "without ':'",
                             UTF8_CUT(ref, 128));
        *kind = JOB_IMAGE_OCI_ARCHIVE;
        return check_image_path(ref, path, strlen(path), err);
    }
    if (strncmp(ref, "oci:", 4) == 0) {
        const char *dir = ref + 4;
        const char *colon = strchr(dir, ':');
        size_t dn = colon ? (size_t)(colon - dir) : strlen(dir);
        if (colon && !tag_valid(colon + 1, strlen(colon + 1)))
            return sh_errorf(err, SH_EINVAL,
                             "image '%.*s': oci:DIR:TAG needs a tag of "
                             "letters, digits, '_', '.' or '-'",
                             UTF8_CUT(ref, 128));
        *kind = JOB_IMAGE_OCI_DIR;
        return check_image_path(ref, dir, dn, err);
    }
    const char *name = ref;
    if (strncmp(ref, "docker://", 9) == 0)
        name = ref + 9;
    else if (strstr(ref, "://"))
        return sh_errorf(err, SH_EINVAL,
                         "image '%.*s': the transports are oci-archive:, "
                         "oci: and docker://",
                         UTF8_CUT(ref, 128));
    *kind = JOB_IMAGE_REGISTRY;
    return registry_parse(ref, name, err);
}

int job_image_transport(const char *ref, char *buf, size_t size)
{
    enum job_image_kind kind;
    struct sh_error err;
    if (job_image_ref_parse(ref, &kind, &err) < 0)
        return -1;
    int n;
    if (kind == JOB_IMAGE_REGISTRY)
        n = snprintf(buf, size, "docker://%s",
                     strncmp(ref, "docker://", 9) == 0 ? ref + 9 : ref);
    else if (kind == JOB_IMAGE_OCI_DIR && !strchr(ref + 4, ':'))
        n = snprintf(buf, size, "%s:latest", ref);
    else
        n = snprintf(buf, size, "%s", ref);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

bool job_image_digest_valid(const char *d)
{
    if (!d || strncmp(d, "sha256:", 7) != 0 ||
        strlen(d) != JOB_IMAGE_DIGEST_LEN)
        return false;
    for (const char *p = d + 7; *p; p++) {
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    }
    return true;
}

bool job_image_ref_pinned(const char *ref)
{
    enum job_image_kind kind;
    struct sh_error err;
    if (!ref || job_image_ref_parse(ref, &kind, &err) < 0 ||
        kind != JOB_IMAGE_REGISTRY)
        return false;
    const char *at = strrchr(ref, '@');
    return at && job_image_digest_valid(at + 1);
}

/* ---- mounts, env, the whole part ---- */

static int abs_path_check(const char *what, const char *p, struct sh_error *err)
{
    if (!p || p[0] != '/' || strlen(p) > JOB_PATH_MAX || !printable(p) ||
        strstr(p, "/../") ||
        (strlen(p) >= 3 && strcmp(p + strlen(p) - 3, "/..") == 0))
        return sh_errorf(err, SH_EINVAL,
                         "%s '%.*s' must be an absolute path without '..' "
                         "or spaces",
                         what, UTF8_CUT(p ? p : "", 128));
    return 0;
}

int job_cmount_parse(const char *text, struct job_cmount *m,
                     struct sh_error *err)
{
    const char *colon = strchr(text, ':');
    if (!colon || colon == text || !colon[1])
        return sh_errorf(err, SH_EINVAL,
                         "container mount '%.*s' must be SRC:DST[:ro]",
                         UTF8_CUT(text, 128));
    const char *dst = colon + 1;
    const char *mode = strchr(dst, ':');
    if (mode && strcmp(mode, ":ro") != 0 && strcmp(mode, ":rw") != 0)
        return sh_errorf(err, SH_EINVAL,
                         "container mount '%.*s': the mode after the "
                         "destination must be ro or rw",
                         UTF8_CUT(text, 128));
    m->readonly = mode && strcmp(mode, ":ro") == 0;
    m->src = strndup(text, (size_t)(colon - text));
    m->dst = mode ? strndup(dst, (size_t)(mode - dst)) : strdup(dst);
    if (!m->src || !m->dst)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

static bool env_name_valid(const char *k)
{
    if (!k || !*k || isdigit((unsigned char)k[0]) || strlen(k) > 256)
        return false;
    for (; *k; k++) {
        if (!isalnum((unsigned char)*k) && *k != '_')
            return false;
    }
    return true;
}

int job_container_validate(const struct job_container *c, struct sh_error *err)
{
    if (!c->image) {
        if (c->nmounts || c->workdir || c->nenv)
            return sh_errorf(err, SH_EINVAL,
                             "container_mounts, container_workdir and "
                             "container_env need an image");
        return 0;
    }
    enum job_image_kind kind;
    if (job_image_ref_parse(c->image, &kind, err) < 0)
        return -1;
    if (c->nmounts > JOB_CONTAINER_MOUNTS_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "%d container mounts given, the limit is %d",
                         c->nmounts, JOB_CONTAINER_MOUNTS_MAX);
    for (int i = 0; i < c->nmounts; i++) {
        const struct job_cmount *m = &c->mounts[i];
        if (abs_path_check("container mount source", m->src, err) < 0 ||
            abs_path_check("container mount destination", m->dst, err) < 0)
            return -1;
        if (strcmp(m->dst, "/") == 0)
            return sh_errorf(err, SH_EINVAL,
                             "a container mount cannot replace the image's /");
        for (int j = 0; j < i; j++) {
            if (strcmp(m->dst, c->mounts[j].dst) == 0)
                return sh_errorf(err, SH_EINVAL,
                                 "two container mounts go to %s", m->dst);
        }
    }
    if (c->workdir && abs_path_check("container_workdir", c->workdir, err) < 0)
        return -1;
    if (c->nenv > JOB_ENV_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "container_env has %d entries, the limit is %d",
                         c->nenv, JOB_ENV_MAX);
    for (int i = 0; i < c->nenv; i++) {
        if (!env_name_valid(c->env[i].key))
            return sh_errorf(err, SH_EINVAL,
                             "container_env name '%.*s' is not valid "
                             "(letters, digits and '_', not starting with a "
                             "digit)",
                             UTF8_CUT(c->env[i].key ? c->env[i].key : "", 64));
        if (strlen(c->env[i].value) > JOB_ENV_VALUE_MAX)
            return sh_errorf(err, SH_ETOOLARGE,
                             "container_env %s is longer than %d bytes",
                             c->env[i].key, JOB_ENV_VALUE_MAX);
    }
    return 0;
}

/* ---- JSON ---- */

static int get_str(const json_t *v, const char *field, size_t max, char **out,
                   struct sh_error *err)
{
    if (!json_is_string(v))
        return sh_errorf(err, SH_EINVAL, "%s must be a string", field);
    if (json_string_length(v) > max)
        return sh_errorf(err, SH_ETOOLARGE, "%s is longer than %zu bytes",
                         field, max);
    free(*out);
    *out = strdup(json_string_value(v));
    return *out ? 0 : sh_errorf(err, SH_EINTERNAL, "out of memory");
}

static int get_mounts(const json_t *v, struct job_container *c,
                      struct sh_error *err)
{
    if (!json_is_array(v))
        return sh_errorf(err, SH_EINVAL,
                         "container_mounts must be an array of "
                         "\"SRC:DST[:ro]\" strings");
    size_t n = json_array_size(v);
    if (n > JOB_CONTAINER_MOUNTS_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "%zu container mounts given, the limit is %d", n,
                         JOB_CONTAINER_MOUNTS_MAX);
    c->mounts = calloc(n ? n : 1, sizeof(*c->mounts));
    if (!c->mounts)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(v, i);
        c->nmounts++;
        if (json_is_string(m)) {
            if (job_cmount_parse(json_string_value(m), &c->mounts[i], err) < 0)
                return -1;
        } else if (json_unpack((json_t *)m, "{s:s, s:s, s?b}", "src",
                               &(const char *){NULL}, "dst",
                               &(const char *){NULL}, "readonly",
                               &(int){0}) == 0) {
            const char *src = json_string_value(json_object_get(m, "src"));
            const char *dst = json_string_value(json_object_get(m, "dst"));
            c->mounts[i].src = strdup(src);
            c->mounts[i].dst = strdup(dst);
            c->mounts[i].readonly =
                json_is_true(json_object_get(m, "readonly"));
            if (!c->mounts[i].src || !c->mounts[i].dst)
                return sh_errorf(err, SH_EINTERNAL, "out of memory");
        } else {
            return sh_errorf(err, SH_EINVAL,
                             "container_mounts must be an array of "
                             "\"SRC:DST[:ro]\" strings or {\"src\", \"dst\", "
                             "\"readonly\"} objects");
        }
    }
    return 0;
}

static int get_env(const json_t *v, struct job_container *c,
                   struct sh_error *err)
{
    if (!json_is_object(v))
        return sh_errorf(err, SH_EINVAL,
                         "container_env must be an object of names to "
                         "strings");
    size_t n = json_object_size(v);
    if (n > JOB_ENV_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "container_env has %zu entries, the limit is %d", n,
                         JOB_ENV_MAX);
    c->env = calloc(n ? n : 1, sizeof(*c->env));
    if (!c->env)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    const char *key;
    const json_t *val;
    json_object_foreach ((json_t *)v, key, val) {
        if (!json_is_string(val))
            return sh_errorf(err, SH_EINVAL,
                             "container_env %.*s must be a string",
                             UTF8_CUT(key, 64));
        struct job_cenv *e = &c->env[c->nenv++];
        e->key = strdup(key);
        e->value = strdup(json_string_value(val));
        if (!e->key || !e->value)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    return 0;
}

int job_container_field(const char *key, const json_t *v,
                        struct job_container *c, struct sh_error *err)
{
    if (strcmp(key, "image") == 0) {
        if (json_is_null(v))
            return 0;
        return get_str(v, "image", JOB_IMAGE_MAX, &c->image, err);
    }
    if (strcmp(key, "container_workdir") == 0) {
        if (json_is_null(v))
            return 0;
        return get_str(v, "container_workdir", JOB_PATH_MAX, &c->workdir, err);
    }
    if (strcmp(key, "container_mounts") == 0) {
        if (c->mounts)
            return sh_errorf(err, SH_EINVAL, "container_mounts given twice");
        return get_mounts(v, c, err);
    }
    if (strcmp(key, "container_env") == 0) {
        if (c->env)
            return sh_errorf(err, SH_EINVAL, "container_env given twice");
        return get_env(v, c, err);
    }
    return 1;
}

void job_container_to_json(const struct job_container *c, json_t *o)
{
    if (!c->image)
        return;
    json_object_set_new(o, "image", json_string(c->image));
    json_t *mounts = json_array();
    for (int i = 0; mounts && i < c->nmounts; i++)
        json_array_append_new(mounts, json_pack("{s:s, s:s, s:b}", "src",
                                                c->mounts[i].src, "dst",
                                                c->mounts[i].dst, "readonly",
                                                c->mounts[i].readonly));
    json_object_set_new(o, "container_mounts", mounts);
    json_object_set_new(o, "container_workdir",
                        c->workdir ? json_string(c->workdir) : json_null());
    json_t *env = json_object();
    for (int i = 0; env && i < c->nenv; i++)
        json_object_set_new(env, c->env[i].key, json_string(c->env[i].value));
    json_object_set_new(o, "container_env", env);
}
