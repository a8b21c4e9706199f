/* SPDX-License-Identifier: Apache-2.0 */
/* Secrets, encrypted at rest (see secrets.h). The table holds each
 * secret's stored record (values sealed); values are opened only for an
 * agent's work entry. */
#include "shoald/secrets.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/model/job.h"
#include "lib/util/file.h"
#include "lib/util/utf8.h"
#include "store/store.h"

struct secrets {
    unsigned char key[crypto_secretbox_KEYBYTES];
    json_t *table;      /* "PROJECT/NAME" ("/NAME": cluster-wide) -> record */
    json_t *store_keys; /* the same key -> its key in the store (a record
                           stored before names were per project is under
                           its bare name) */
};

/* The table's key of a secret: names are per project, so one project's
 * name neither collides with nor reveals another's. */
static void scoped(const char *project, const char *name, char *buf,
                   size_t size)
{
    snprintf(buf, size, "%s/%s", project ? project : "", name ? name : "");
}

#define SCOPED_MAX (2 * JOB_IDENT_MAX + 2)

#define B64 sodium_base64_VARIANT_ORIGINAL

/* Read the key, or make it when the file does not exist. */
static int key_load(struct secrets *s, const char *state_dir,
                    struct sh_error *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/secrets.key", state_dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        randombytes_buf(s->key, sizeof(s->key));
        return file_write_atomic(path, s->key, sizeof(s->key), 0600, true, err);
    }
    if (fd < 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot read %s: %s", path,
                         strerror(errno));
    ssize_t n = read(fd, s->key, sizeof(s->key));
    close(fd);
    if (n != (ssize_t)sizeof(s->key))
        return sh_errorf(err, SH_EINVAL,
                         "%s must hold exactly %zu bytes; it is damaged", path,
                         sizeof(s->key));
    return 0;
}

struct secrets *secrets_create(const char *state_dir, struct sh_error *err)
{
    if (sodium_init() < 0) {
        sh_errorf(err, SH_EINTERNAL, "libsodium could not be initialised");
        return NULL;
    }
    struct secrets *s = sodium_malloc(sizeof(*s));
    if (!s) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    s->table = json_object();
    s->store_keys = json_object();
    if (!s->table || !s->store_keys) {
        json_decref(s->table);
        json_decref(s->store_keys);
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        sodium_free(s);
        return NULL;
    }
    if (key_load(s, state_dir, err) < 0) {
        secrets_destroy(s);
        return NULL;
    }
    return s;
}

void secrets_destroy(struct secrets *s)
{
    if (s) {
        json_decref(s->table);
        json_decref(s->store_keys);
        sodium_free(s); /* wipes the key */
    }
}

/* A stored record is checked before it is trusted. */
static int record_check(const char *key, const json_t *rec,
                        struct sh_error *err)
{
    const char *name = json_string_value(json_object_get(rec, "name"));
    const json_t *project = json_object_get(rec, "project");
    char want[SCOPED_MAX];
    scoped(json_string_value(project), name, want, sizeof(want));
    if (!name || (strcmp(name, key) != 0 && strcmp(want, key) != 0) ||
        !json_is_string(json_object_get(rec, "nonce")) ||
        !json_is_string(json_object_get(rec, "box")) ||
        !json_is_array(json_object_get(rec, "keys")) ||
        (project && !json_is_null(project) && !json_is_string(project)))
        return sh_errorf(err, SH_EINVAL, "stored secret '%.*s' is damaged",
                         UTF8_CUT(key, 64));
    return 0;
}

struct loading {
    json_t *table, *store_keys;
};

static int load_one(const char *key, const json_t *rec, void *arg,
                    struct sh_error *err)
{
    struct loading *l = arg;
    if (record_check(key, rec, err) < 0)
        return -1;
    char k[SCOPED_MAX];
    scoped(json_string_value(json_object_get(rec, "project")),
           json_string_value(json_object_get(rec, "name")), k, sizeof(k));
    if (json_object_set(l->table, k, (json_t *)rec) < 0 ||
        json_object_set_new(l->store_keys, k, json_string(key)) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

int secrets_load(struct secrets *s, struct store *st, struct sh_error *err)
{
    struct loading l = {json_object(), json_object()};
    if (!l.table || !l.store_keys ||
        store_load_objects(st, "secret", load_one, &l, err) < 0) {
        json_decref(l.table);
        json_decref(l.store_keys);
        return l.table && l.store_keys
                   ? -1
                   : sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    json_decref(s->table);
    json_decref(s->store_keys);
    s->table = l.table;
    s->store_keys = l.store_keys;
    return 0;
}

const json_t *secrets_get(const struct secrets *s, const char *project,
                          const char *name)
{
    char k[SCOPED_MAX];
    scoped(project, name, k, sizeof(k));
    return json_object_get(s->table, k);
}

const json_t *secrets_resolve(const struct secrets *s, const char *project,
                              const char *name)
{
    const json_t *rec = project ? secrets_get(s, project, name) : NULL;
    return rec ? rec : secrets_get(s, NULL, name);
}

/* The record as the API shows it: everything but the sealed values. */
static json_t *public_view(const json_t *rec)
{
    json_t *v = json_deep_copy(rec);
    if (v) {
        json_object_del(v, "nonce");
        json_object_del(v, "box");
    }
    return v;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *secrets_list(const struct secrets *s)
{
    size_t n = json_object_size(s->table), i = 0;
    const char **names = calloc(n ? n : 1, sizeof(*names));
    json_t *out = json_array();
    if (!names || !out) {
        free(names);
        json_decref(out);
        return NULL;
    }
    const char *key;
    json_t *rec;
    json_object_foreach (s->table, key, rec)
        names[i++] = key;
    qsort(names, n, sizeof(*names), name_cmp);
    for (i = 0; i < n; i++)
        json_array_append_new(out,
                              public_view(json_object_get(s->table, names[i])));
    free(names);
    return out;
}

static int check_data(const json_t *data, struct sh_error *err)
{
    if (!json_is_object(data) || json_object_size(data) == 0 ||
        json_object_size(data) > SECRET_ENTRIES_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "a secret's data must be an object of 1..%d "
                         "\"KEY\": \"VALUE\" entries",
                         SECRET_ENTRIES_MAX);
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)data, k, v) {
        if (!job_ident_valid(k))
            return sh_errorf(err, SH_EINVAL,
                             "secret key '%.*s' must be letters, digits, '.', "
                             "'_' or '-'",
                             UTF8_CUT(k, 64));
        if (!json_is_string(v) || json_string_length(v) == 0 ||
            json_string_length(v) > SECRET_VALUE_MAX ||
            strlen(json_string_value(v)) != json_string_length(v))
            return sh_errorf(err, SH_EINVAL,
                             "secret value of %s must be a string of 1..%d "
                             "bytes without NUL",
                             k, SECRET_VALUE_MAX);
    }
    return 0;
}

static char *b64(const unsigned char *bin, size_t len)
{
    size_t size = sodium_base64_ENCODED_LEN(len, B64);
    char *out = malloc(size);
    if (out)
        sodium_bin2base64(out, size, bin, len, B64);
    return out;
}

int secrets_add(struct secrets *s, struct store_batch *batch, const char *name,
                const char *project, const json_t *data, const char *created_by,
                int64_t now_ms, struct sh_error *err)
{
    if (!job_ident_valid(name))
        return sh_errorf(err, SH_EINVAL,
                         "secret name '%.*s' must be 1..%d letters, digits, "
                         "'.', '_' or '-'",
                         UTF8_CUT(name ? name : "", 64), JOB_IDENT_MAX);
    if (check_data(data, err) < 0)
        return -1;
    char k[SCOPED_MAX];
    scoped(project, name, k, sizeof(k));
    if (json_object_get(s->table, k))
        return sh_errorf(err, SH_ECONFLICT, "secret %s already exists in %s%s",
                         name, project ? "project " : "the cluster",
                         project ? project : "");
    if (json_object_size(s->table) >= SECRETS_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "the cluster has %d secrets, the limit", SECRETS_MAX);
    char *plain = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
    json_t *keys = json_array();
    if (!plain || !keys) {
        free(plain);
        json_decref(keys);
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    const char *entry;
    json_t *v;
    json_object_foreach ((json_t *)data, entry, v)
        json_array_append_new(keys, json_string(entry));
    size_t plen = strlen(plain);
    unsigned char nonce[crypto_secretbox_NONCEBYTES];
    unsigned char *box = malloc(plen + crypto_secretbox_MACBYTES);
    randombytes_buf(nonce, sizeof(nonce));
    char *nonce64 = b64(nonce, sizeof(nonce)), *box64 = NULL;
    if (box) {
        crypto_secretbox_easy(box, (const unsigned char *)plain, plen, nonce,
                              s->key);
        box64 = b64(box, plen + crypto_secretbox_MACBYTES);
    }
    sodium_memzero(plain, plen);
    free(plain);
    free(box);
    json_t *rec =
        nonce64 && box64
            ? json_pack("{s:s, s:s?, s:o, s:s, s:s, s:I, s:s}", "name", name,
                        "project", project, "keys", keys, "nonce", nonce64,
                        "box", box64, "created_ms", (json_int_t)now_ms,
                        "created_by", created_by)
            : NULL;
    free(nonce64);
    free(box64);
    if (!rec)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    if (!json_object_get(rec, "project"))
        json_object_set_new(rec, "project", json_null());
    int rc = 0;
    if (store_batch_put(batch, "secret", k, rec) < 0 ||
        json_object_set(s->table, k, rec) < 0 ||
        json_object_set_new(s->store_keys, k, json_string(k)) < 0)
        rc = sh_errorf(err, SH_EINTERNAL, "out of memory");
    json_decref(rec);
    return rc;
}

int secrets_delete(struct secrets *s, struct store_batch *batch,
                   const char *project, const char *name, struct sh_error *err)
{
    char k[SCOPED_MAX];
    scoped(project, name, k, sizeof(k));
    const char *store_key =
        json_string_value(json_object_get(s->store_keys, k));
    if (!json_object_get(s->table, k) || !store_key)
        return sh_errorf(err, SH_ENOTFOUND, "secret %s does not exist", name);
    if (store_batch_del(batch, "secret", store_key) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    json_object_del(s->table, k);
    json_object_del(s->store_keys, k);
    return 0;
}

/* Decode base64 into a fresh buffer; *len gets its length. */
static unsigned char *unb64(const char *text, size_t *len)
{
    size_t max = strlen(text);
    unsigned char *out = malloc(max ? max : 1);
    if (out && sodium_base642bin(out, max, text, strlen(text), NULL, len, NULL,
                                 B64) != 0) {
        free(out);
        out = NULL;
    }
    return out;
}

json_t *secrets_open(const struct secrets *s, const char *project,
                     const char *name, struct sh_error *err)
{
    const json_t *rec = secrets_get(s, project, name);
    if (!rec) {
        sh_errorf(err, SH_ENOTFOUND, "secret %s does not exist", name);
        return NULL;
    }
    size_t nlen = 0, blen = 0;
    unsigned char *nonce =
        unb64(json_string_value(json_object_get(rec, "nonce")), &nlen);
    unsigned char *box =
        unb64(json_string_value(json_object_get(rec, "box")), &blen);
    json_t *out = NULL;
    if (nonce && box && nlen == crypto_secretbox_NONCEBYTES &&
        blen > crypto_secretbox_MACBYTES) {
        size_t plen = blen - crypto_secretbox_MACBYTES;
        char *plain = malloc(plen + 1);
        if (plain && crypto_secretbox_open_easy((unsigned char *)plain, box,
                                                blen, nonce, s->key) == 0) {
            plain[plen] = '\0';
            out = json_loads(plain, 0, NULL);
            sodium_memzero(plain, plen);
        }
        free(plain);
    }
    free(nonce);
    free(box);
    if (!out)
        sh_errorf(err, SH_EINTERNAL,
                  "secret %s cannot be opened (was the controller's "
                  "secrets.key replaced?)",
                  name);
    return out;
}

/* Whether a record's keys name key. */
static bool rec_has_key(const json_t *rec, const char *key)
{
    size_t i;
    json_t *k;
    json_array_foreach (json_object_get(rec, "keys"), i, k) {
        if (json_is_string(k) && strcmp(json_string_value(k), key) == 0)
            return true;
    }
    return false;
}

json_t *secrets_registry_auth(const struct secrets *s, const char *project,
                              const char *host)
{
    json_t *found = NULL;
    bool found_project = false;
    const char *key;
    json_t *rec;
    json_object_foreach (s->table, key, rec) {
        const char *name = json_string_value(json_object_get(rec, "name"));
        const char *p = json_string_value(json_object_get(rec, "project"));
        bool mine = p && project && strcmp(p, project) == 0;
        if ((p && !mine) || (found && (found_project || !mine)) ||
            !rec_has_key(rec, "registry"))
            continue;
        json_t *v = secrets_open(s, p, name, NULL);
        const char *reg = json_string_value(json_object_get(v, "registry"));
        const char *user = json_string_value(json_object_get(v, "username"));
        const char *pass = json_string_value(json_object_get(v, "password"));
        if (reg && user && pass && strcmp(reg, host) == 0) {
            json_decref(found);
            found =
                json_pack("{s:s, s:s, s:s, s:s}", "secret", name, "registry",
                          reg, "username", user, "password", pass);
            found_project = mine;
        }
        json_decref(v);
    }
    return found;
}
