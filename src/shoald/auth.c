/* SPDX-License-Identifier: Apache-2.0 */
/* Users and tokens (see auth.h). Tokens are found by the hex BLAKE2b hash
 * of their text in a hash table; the text itself is never kept. */
#include "shoald/auth.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lib/model/job.h"
#include "store/store.h"

#define HASH_HEX_LEN 64

struct token_entry {
    char hash[HASH_HEX_LEN + 1];
    enum auth_token_kind kind;
    char *subject;
    int64_t created_ms;
    int64_t expires_ms;
    UT_hash_handle hh;
};

struct user_entry {
    struct auth_user user; /* user.name points at name */
    char *name;
    char *default_project;
    UT_hash_handle hh;
};

struct auth {
    struct token_entry *tokens;
    struct user_entry *users;
};

static const char *const token_kind_names[] = {"user", "agent", "join"};

static void token_hash(const char *token, char hex[HASH_HEX_LEN + 1])
{
    unsigned char h[32];
    crypto_generichash(h, sizeof(h), (const unsigned char *)token,
                       strlen(token), NULL, 0);
    sodium_bin2hex(hex, HASH_HEX_LEN + 1, h, sizeof(h));
}

struct auth *auth_create(struct sh_error *err)
{
    if (sodium_init() < 0) {
        sh_errorf(err, SH_EINTERNAL, "libsodium could not be initialised");
        return NULL;
    }
    struct auth *a = calloc(1, sizeof(*a));
    if (!a)
        sh_errorf(err, SH_EINTERNAL, "out of memory");
    return a;
}

static void clear(struct auth *a)
{
    struct token_entry *t, *tt;
    HASH_ITER(hh, a->tokens, t, tt)
    {
        HASH_DEL(a->tokens, t);
        free(t->subject);
        free(t);
    }
    struct user_entry *u, *ut;
    HASH_ITER(hh, a->users, u, ut)
    {
        HASH_DEL(a->users, u);
        free(u->name);
        free(u->default_project);
        free(u);
    }
}

void auth_destroy(struct auth *a)
{
    if (!a)
        return;
    clear(a);
    free(a);
}

static json_t *user_record(const struct user_entry *u)
{
    json_t *rec = json_pack("{s:s, s:b, s:I, s:{s:i, s:i, s:I}}", "name",
                            u->name, "admin", u->user.admin, "created_ms",
                            (json_int_t)u->user.created_ms, "limits",
                            "max_gpus", u->user.limits.max_gpus, "max_jobs",
                            u->user.limits.max_jobs, "max_time_s",
                            (json_int_t)u->user.limits.max_time_s);
    if (rec && u->default_project)
        json_object_set_new(rec, "default_project",
                            json_string(u->default_project));
    return rec;
}

static struct user_entry *user_add(struct auth *a, const char *name)
{
    struct user_entry *u = calloc(1, sizeof(*u));
    if (!u)
        return NULL;
    u->name = strdup(name);
    if (!u->name) {
        free(u);
        return NULL;
    }
    u->user.name = u->name;
    HASH_ADD_KEYPTR(hh, a->users, u->name, strlen(u->name), u);
    return u;
}

static int load_user(const char *key, const json_t *rec, void *arg,
                     struct sh_error *err)
{
    struct auth *a = arg;
    int admin = 0, max_gpus = 0, max_jobs = 0;
    json_int_t created = 0, max_time = 0;
    const char *dp = NULL;
    if (json_unpack((json_t *)rec, "{s:b, s:I, s?{s?i, s?i, s?I}, s?s}",
                    "admin", &admin, "created_ms", &created, "limits",
                    "max_gpus", &max_gpus, "max_jobs", &max_jobs, "max_time_s",
                    &max_time, "default_project", &dp) < 0)
        return sh_errorf(err, SH_EINTERNAL, "user %.64s: bad record", key);
    struct user_entry *u = user_add(a, key);
    if (!u)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    u->user.admin = admin;
    u->user.created_ms = created;
    u->user.limits.max_gpus = max_gpus;
    u->user.limits.max_jobs = max_jobs;
    u->user.limits.max_time_s = max_time;
    if (dp) {
        u->default_project = strdup(dp);
        u->user.default_project = u->default_project;
    }
    return 0;
}

static int load_token(const char *key, const json_t *rec, void *arg,
                      struct sh_error *err)
{
    struct auth *a = arg;
    const char *kind, *subject;
    json_int_t created = 0, expires = 0;
    if (json_unpack((json_t *)rec, "{s:s, s:s, s:I, s:I}", "kind", &kind,
                    "subject", &subject, "created_ms", &created, "expires_ms",
                    &expires) < 0 ||
        strlen(key) != HASH_HEX_LEN)
        return sh_errorf(err, SH_EINTERNAL, "token: bad record");
    struct token_entry *t = calloc(1, sizeof(*t));
    if (!t)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    memcpy(t->hash, key, HASH_HEX_LEN + 1);
    t->kind = AUTH_TOKEN_USER;
    for (int i = 0; i < 3; i++) {
        if (strcmp(kind, token_kind_names[i]) == 0)
            t->kind = (enum auth_token_kind)i;
    }
    t->subject = strdup(subject);
    t->created_ms = created;
    t->expires_ms = expires;
    if (!t->subject) {
        free(t);
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    HASH_ADD_STR(a->tokens, hash, t);
    return 0;
}

int auth_load(struct auth *a, struct store *st, struct sh_error *err)
{
    clear(a);
    if (store_load_objects(st, "user", load_user, a, err) < 0 ||
        store_load_objects(st, "token", load_token, a, err) < 0) {
        clear(a);
        return -1;
    }
    return 0;
}

void auth_identify(struct auth *a, const char *token, int64_t now_ms,
                   struct api_caller *caller)
{
    char hex[HASH_HEX_LEN + 1];
    struct token_entry *t;
    memset(caller, 0, sizeof(*caller));
    if (strlen(token) != AUTH_TOKEN_LEN)
        return;
    token_hash(token, hex);
    HASH_FIND_STR(a->tokens, hex, t);
    if (!t || (t->expires_ms && t->expires_ms <= now_ms))
        return;
    switch (t->kind) {
    case AUTH_TOKEN_USER: {
        struct user_entry *u;
        HASH_FIND_STR(a->users, t->subject, u);
        if (!u)
            return;
        caller->role = API_USER;
        caller->user = u->name;
        caller->admin = u->user.admin;
        break;
    }
    case AUTH_TOKEN_AGENT:
        caller->role = API_AGENT;
        caller->node = t->subject;
        break;
    case AUTH_TOKEN_JOIN:
        caller->role = API_JOIN;
        break;
    }
}

bool auth_initialised(const struct auth *a)
{
    return HASH_COUNT(a->users) > 0;
}

const struct auth_user *auth_user_get(const struct auth *a, const char *name)
{
    struct user_entry *u;
    HASH_FIND_STR(a->users, name, u);
    return u ? &u->user : NULL;
}

int auth_user_create(struct auth *a, struct store_batch *batch,
                     const char *name, bool admin, int64_t now_ms,
                     struct sh_error *err)
{
    if (!job_ident_valid(name))
        return sh_errorf(err, SH_EINVAL,
                         "user name '%.64s' must be 1..%d letters, digits, '.', "
                         "'_' or '-'",
                         name, JOB_IDENT_MAX);
    if (auth_user_get(a, name))
        return sh_errorf(err, SH_ECONFLICT, "user %s already exists", name);
    struct user_entry *u = user_add(a, name);
    if (!u)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    u->user.admin = admin;
    u->user.created_ms = now_ms;
    json_t *rec = user_record(u);
    int rc = rec ? store_batch_put(batch, "user", name, rec) : -1;
    json_decref(rec);
    if (rc < 0) {
        HASH_DEL(a->users, u);
        free(u->name);
        free(u);
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    return 0;
}

int auth_token_issue(struct auth *a, struct store_batch *batch,
                     enum auth_token_kind kind, const char *subject,
                     int64_t now_ms, int64_t expires_ms,
                     char out[AUTH_TOKEN_LEN + 1], struct sh_error *err)
{
    unsigned char raw[32];
    char b64[64];
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2base64(b64, sizeof(b64), raw, sizeof(raw),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    snprintf(out, AUTH_TOKEN_LEN + 1, "shoal_%s", b64);
    struct token_entry *t = calloc(1, sizeof(*t));
    if (!t)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    token_hash(out, t->hash);
    t->kind = kind;
    t->subject = strdup(subject);
    t->created_ms = now_ms;
    t->expires_ms = expires_ms;
    json_t *rec = json_pack("{s:s, s:s, s:I, s:I}", "kind",
                            token_kind_names[kind], "subject", subject,
                            "created_ms", (json_int_t)now_ms, "expires_ms",
                            (json_int_t)expires_ms);
    if (!t->subject || !rec || store_batch_put(batch, "token", t->hash, rec) < 0) {
        json_decref(rec);
        free(t->subject);
        free(t);
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    json_decref(rec);
    HASH_ADD_STR(a->tokens, hash, t);
    return 0;
}

int auth_token_revoke_all(struct auth *a, struct store_batch *batch,
                          enum auth_token_kind kind, const char *subject)
{
    int n = 0;
    struct token_entry *t, *tt;
    HASH_ITER(hh, a->tokens, t, tt)
    {
        if (t->kind != kind || strcmp(t->subject, subject) != 0)
            continue;
        if (store_batch_del(batch, "token", t->hash) < 0)
            return -1;
        HASH_DEL(a->tokens, t);
        free(t->subject);
        free(t);
        n++;
    }
    return n;
}
