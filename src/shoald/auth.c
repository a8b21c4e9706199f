/* SPDX-License-Identifier: Apache-2.0 */
/* Users and tokens (see auth.h). Tokens are found by the hex BLAKE2b hash
 * of their text in a hash table; the text itself is never kept. Users are
 * kept sorted by name so listings are stable. */
#include "shoald/auth.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lib/model/job.h"
#include "lib/util/parse.h"
#include "lib/util/utf8.h"
#include "store/store.h"

#define HASH_HEX_LEN 64

struct token_entry {
    struct auth_token_info info; /* first: an info pointer is the entry */
    char hash[HASH_HEX_LEN + 1];
    char *subject; /* info.subject points here */
    UT_hash_handle hh;
};

struct user_entry {
    struct auth_user user; /* first; user.name points at name */
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

static void token_free(struct token_entry *t)
{
    free(t->subject);
    free(t);
}

static void user_free(struct user_entry *u)
{
    free(u->name);
    free(u->default_project);
    free(u);
}

static void clear(struct auth *a)
{
    struct token_entry *t, *tt;
    HASH_ITER (hh, a->tokens, t, tt) {
        HASH_DEL(a->tokens, t);
        token_free(t);
    }
    struct user_entry *u, *ut;
    HASH_ITER (hh, a->users, u, ut) {
        HASH_DEL(a->users, u);
        user_free(u);
    }
}

void auth_destroy(struct auth *a)
{
    if (!a)
        return;
    int saved = errno;
    clear(a);
    free(a);
    errno = saved;
}

static int user_name_cmp(struct user_entry *x, struct user_entry *y)
{
    return strcmp(x->name, y->name);
}

static json_t *user_record(const struct user_entry *u)
{
    json_t *rec =
        json_pack("{s:s, s:b, s:I, s:{s:i, s:i, s:I, s:i}}", "name", u->name,
                  "admin", u->user.admin, "created_ms",
                  (json_int_t)u->user.created_ms, "limits", "max_gpus",
                  u->user.limits.max_gpus, "max_jobs", u->user.limits.max_jobs,
                  "max_time_s", (json_int_t)u->user.limits.max_time_s,
                  "max_pending", u->user.limits.max_pending);
    if (rec && u->default_project)
        json_object_set_new(rec, "default_project",
                            json_string(u->default_project));
    return rec;
}

/* Add u's current record to batch. */
static int put_user(struct store_batch *batch, const struct user_entry *u,
                    struct sh_error *err)
{
    json_t *rec = user_record(u);
    int rc = rec ? store_batch_put(batch, "user", u->name, rec) : -1;
    json_decref(rec);
    if (rc < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
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

static struct user_entry *user_find(const struct auth *a, const char *name)
{
    struct user_entry *u = NULL;
    if (name)
        HASH_FIND_STR(a->users, name, u);
    return u;
}

static int load_user(const char *key, const json_t *rec, void *arg,
                     struct sh_error *err)
{
    struct auth *a = arg;
    int admin = 0, max_gpus = 0, max_jobs = 0, max_pending = 0;
    json_int_t created = 0, max_time = 0;
    const char *dp = NULL;
    if (json_unpack((json_t *)rec, "{s:b, s:I, s?{s?i, s?i, s?I, s?i}, s?s}",
                    "admin", &admin, "created_ms", &created, "limits",
                    "max_gpus", &max_gpus, "max_jobs", &max_jobs, "max_time_s",
                    &max_time, "max_pending", &max_pending, "default_project",
                    &dp) < 0)
        return sh_errorf(err, SH_EINTERNAL, "user %.*s: bad record",
                         UTF8_CUT(key, 64));
    struct user_entry *u = user_add(a, key);
    if (!u)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    u->user.admin = admin;
    u->user.created_ms = created;
    u->user.limits.max_gpus = max_gpus;
    u->user.limits.max_jobs = max_jobs;
    u->user.limits.max_time_s = max_time;
    u->user.limits.max_pending = max_pending;
    if (dp) {
        u->default_project = strdup(dp);
        if (!u->default_project)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
        u->user.default_project = u->default_project;
    }
    return 0;
}

static struct token_entry *token_new(const char *hash,
                                     enum auth_token_kind kind,
                                     const char *subject, int64_t created_ms,
                                     int64_t expires_ms)
{
    struct token_entry *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    memcpy(t->hash, hash, HASH_HEX_LEN + 1);
    memcpy(t->info.id, hash, AUTH_TOKEN_ID_LEN);
    t->info.id[AUTH_TOKEN_ID_LEN] = '\0';
    t->subject = strdup(subject);
    if (!t->subject) {
        free(t);
        return NULL;
    }
    t->info.kind = kind;
    t->info.subject = t->subject;
    t->info.created_ms = created_ms;
    t->info.expires_ms = expires_ms;
    return t;
}

static int load_token(const char *key, const json_t *rec, void *arg,
                      struct sh_error *err)
{
    struct auth *a = arg;
    const char *kind, *subject;
    json_int_t created = 0, expires = 0;
    int max_uses = 0, uses = 0;
    if (json_unpack((json_t *)rec, "{s:s, s:s, s:I, s:I, s?i, s?i}", "kind",
                    &kind, "subject", &subject, "created_ms", &created,
                    "expires_ms", &expires, "max_uses", &max_uses, "uses",
                    &uses) < 0 ||
        strlen(key) != HASH_HEX_LEN)
        return sh_errorf(err, SH_EINTERNAL, "token: bad record");
    enum auth_token_kind k = AUTH_TOKEN_USER;
    for (int i = 0; i < 3; i++) {
        if (strcmp(kind, token_kind_names[i]) == 0)
            k = (enum auth_token_kind)i;
    }
    struct token_entry *t = token_new(key, k, subject, created, expires);
    if (!t)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    t->info.max_uses = max_uses;
    t->info.uses = uses;
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
    HASH_SRT(hh, a->users, user_name_cmp);
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
    if (!t || (t->info.expires_ms && t->info.expires_ms <= now_ms))
        return;
    switch (t->info.kind) {
    case AUTH_TOKEN_USER: {
        struct user_entry *u = user_find(a, t->subject);
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
        if (t->info.max_uses && t->info.uses >= t->info.max_uses)
            return;
        caller->role = API_JOIN;
        caller->token_id = t->info.id;
        break;
    }
}

bool auth_initialised(const struct auth *a)
{
    return HASH_COUNT(a->users) > 0;
}

const struct auth_user *auth_user_get(const struct auth *a, const char *name)
{
    struct user_entry *u = user_find(a, name);
    return u ? &u->user : NULL;
}

int auth_user_create(struct auth *a, struct store_batch *batch,
                     const char *name, bool admin, int64_t now_ms,
                     struct sh_error *err)
{
    if (!name || !job_ident_valid(name))
        return sh_errorf(err, SH_EINVAL,
                         "user name '%.*s' must be 1..%d letters, digits, '.', "
                         "'_' or '-'",
                         UTF8_CUT(name ? name : "", 64), JOB_IDENT_MAX);
    if (auth_user_get(a, name))
        return sh_errorf(err, SH_ECONFLICT, "user %s already exists", name);
    if (HASH_COUNT(a->users) >= AUTH_USERS_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "there are already %d users, the most a cluster may "
                         "have",
                         AUTH_USERS_MAX);
    struct user_entry *u = user_add(a, name);
    if (!u)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    u->user.admin = admin;
    u->user.created_ms = now_ms;
    if (put_user(batch, u, err) < 0) {
        HASH_DEL(a->users, u);
        user_free(u);
        return -1;
    }
    HASH_SRT(hh, a->users, user_name_cmp);
    return 0;
}

static json_t *token_record(const struct token_entry *t)
{
    json_t *rec = json_pack(
        "{s:s, s:s, s:I, s:I}", "kind", token_kind_names[t->info.kind],
        "subject", t->subject, "created_ms", (json_int_t)t->info.created_ms,
        "expires_ms", (json_int_t)t->info.expires_ms);
    if (rec && t->info.kind == AUTH_TOKEN_JOIN && t->info.max_uses) {
        json_object_set_new(rec, "max_uses", json_integer(t->info.max_uses));
        json_object_set_new(rec, "uses", json_integer(t->info.uses));
    }
    return rec;
}

static int issue(struct auth *a, struct store_batch *batch,
                 enum auth_token_kind kind, const char *subject, int64_t now_ms,
                 int64_t expires_ms, int max_uses, char out[AUTH_TOKEN_LEN + 1],
                 struct sh_error *err)
{
    unsigned char raw[32];
    char b64[64];
    char hash[HASH_HEX_LEN + 1];
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2base64(b64, sizeof(b64), raw, sizeof(raw),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof(raw));
    snprintf(out, AUTH_TOKEN_LEN + 1, "shoal_%s", b64);
    sodium_memzero(b64, sizeof(b64));
    token_hash(out, hash);
    struct token_entry *t = token_new(hash, kind, subject, now_ms, expires_ms);
    if (t)
        t->info.max_uses = max_uses;
    json_t *rec = t ? token_record(t) : NULL;
    if (!t || !rec || store_batch_put(batch, "token", t->hash, rec) < 0) {
        json_decref(rec);
        if (t)
            token_free(t);
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    json_decref(rec);
    HASH_ADD_STR(a->tokens, hash, t);
    return 0;
}

int auth_token_issue(struct auth *a, struct store_batch *batch,
                     enum auth_token_kind kind, const char *subject,
                     int64_t now_ms, int64_t expires_ms,
                     char out[AUTH_TOKEN_LEN + 1], struct sh_error *err)
{
    if (kind == AUTH_TOKEN_USER &&
        auth_token_count(a, kind, subject) >= AUTH_TOKENS_PER_SUBJECT_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "%s already holds %d tokens, the most allowed; "
                         "revoke some first",
                         subject, AUTH_TOKENS_PER_SUBJECT_MAX);
    return issue(a, batch, kind, subject, now_ms, expires_ms, 0, out, err);
}

int auth_join_issue(struct auth *a, struct store_batch *batch, int64_t now_ms,
                    int64_t expires_ms, int max_uses,
                    char out[AUTH_TOKEN_LEN + 1], struct sh_error *err)
{
    if (max_uses < 0 || max_uses > AUTH_JOIN_USES_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "uses must be 1..%d (0 or none: no limit), not %d",
                         AUTH_JOIN_USES_MAX, max_uses);
    if (expires_ms && expires_ms <= now_ms)
        return sh_errorf(err, SH_EINVAL, "the expiry must be in the future");
    if (auth_token_count(a, AUTH_TOKEN_JOIN, AUTH_JOIN_CREATED) >=
        AUTH_JOIN_TOKENS_MAX)
        return sh_errorf(err, SH_ETOOLARGE,
                         "there are already %d join tokens, the most allowed; "
                         "revoke some first",
                         AUTH_JOIN_TOKENS_MAX);
    return issue(a, batch, AUTH_TOKEN_JOIN, AUTH_JOIN_CREATED, now_ms,
                 expires_ms, max_uses, out, err);
}

int auth_join_used(struct auth *a, struct store_batch *batch, const char *id,
                   struct sh_error *err)
{
    for (struct token_entry *t = a->tokens; t; t = t->hh.next) {
        if (t->info.kind != AUTH_TOKEN_JOIN || strcmp(t->info.id, id) != 0)
            continue;
        if (!t->info.max_uses)
            return 0;
        t->info.uses++;
        if (t->info.uses >= t->info.max_uses) {
            if (store_batch_del(batch, "token", t->hash) < 0)
                return sh_errorf(err, SH_EINTERNAL, "out of memory");
            HASH_DEL(a->tokens, t);
            token_free(t);
            return 0;
        }
        json_t *rec = token_record(t);
        int rc = rec ? store_batch_put(batch, "token", t->hash, rec) : -1;
        json_decref(rec);
        return rc < 0 ? sh_errorf(err, SH_EINTERNAL, "out of memory") : 0;
    }
    return 0;
}

const struct auth_token_info *auth_join_next(const struct auth *a,
                                             const struct auth_token_info *prev)
{
    const struct token_entry *t =
        prev ? ((const struct token_entry *)prev)->hh.next : a->tokens;
    for (; t; t = t->hh.next) {
        if (t->info.kind == AUTH_TOKEN_JOIN)
            return &t->info;
    }
    return NULL;
}

int auth_token_revoke_all(struct auth *a, struct store_batch *batch,
                          enum auth_token_kind kind, const char *subject)
{
    int n = 0;
    struct token_entry *t, *tt;
    HASH_ITER (hh, a->tokens, t, tt) {
        if (t->info.kind != kind || strcmp(t->subject, subject) != 0)
            continue;
        if (store_batch_del(batch, "token", t->hash) < 0)
            return -1;
        HASH_DEL(a->tokens, t);
        token_free(t);
        n++;
    }
    return n;
}

/* ---- listing and changing users ---- */

const struct auth_user *auth_user_next(const struct auth *a,
                                       const struct auth_user *prev)
{
    const struct user_entry *u =
        prev ? ((const struct user_entry *)prev)->hh.next : a->users;
    return u ? &u->user : NULL;
}

int auth_user_count(const struct auth *a)
{
    return (int)HASH_COUNT(a->users);
}

static struct user_entry *user_must(const struct auth *a, const char *name,
                                    struct sh_error *err)
{
    struct user_entry *u = user_find(a, name);
    if (!u)
        sh_errorf(err, SH_ENOTFOUND, "user %.*s does not exist",
                  UTF8_CUT(name ? name : "", 64));
    return u;
}

int auth_user_delete(struct auth *a, struct store_batch *batch,
                     const char *name, struct sh_error *err)
{
    struct user_entry *u = user_must(a, name, err);
    if (!u)
        return -1;
    if (store_batch_del(batch, "user", u->name) < 0 ||
        auth_token_revoke_all(a, batch, AUTH_TOKEN_USER, u->name) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    HASH_DEL(a->users, u);
    user_free(u);
    return 0;
}

int auth_user_set_admin(struct auth *a, struct store_batch *batch,
                        const char *name, bool admin, struct sh_error *err)
{
    struct user_entry *u = user_must(a, name, err);
    if (!u)
        return -1;
    bool old = u->user.admin;
    u->user.admin = admin;
    if (put_user(batch, u, err) < 0) {
        u->user.admin = old;
        return -1;
    }
    return 0;
}

int auth_user_set_limits(struct auth *a, struct store_batch *batch,
                         const char *name, const struct auth_user_limits *lim,
                         struct sh_error *err)
{
    struct user_entry *u = user_must(a, name, err);
    if (!u)
        return -1;
    if (lim->max_gpus < 0 || lim->max_gpus > AUTH_MAX_GPUS_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "max_gpus must be 0..%d (0 = no limit), not %d",
                         AUTH_MAX_GPUS_MAX, lim->max_gpus);
    if (lim->max_jobs < 0 || lim->max_jobs > AUTH_MAX_JOBS_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "max_jobs must be 0..%d (0 = no limit), not %d",
                         AUTH_MAX_JOBS_MAX, lim->max_jobs);
    if (lim->max_pending < 0 || lim->max_pending > AUTH_MAX_PENDING_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "max_pending must be 0..%d (0 = the cluster's "
                         "default), not %d",
                         AUTH_MAX_PENDING_MAX, lim->max_pending);
    if (lim->max_time_s < 0 || lim->max_time_s > PARSE_DURATION_MAX)
        return sh_errorf(err, SH_EINVAL,
                         "max_time_s must be 0..%lld seconds (366 days; 0 = no "
                         "limit), not %lld",
                         (long long)PARSE_DURATION_MAX,
                         (long long)lim->max_time_s);
    struct auth_user_limits old = u->user.limits;
    u->user.limits = *lim;
    if (put_user(batch, u, err) < 0) {
        u->user.limits = old;
        return -1;
    }
    return 0;
}

int auth_user_set_default_project(struct auth *a, struct store_batch *batch,
                                  const char *name, const char *project,
                                  struct sh_error *err)
{
    struct user_entry *u = user_must(a, name, err);
    if (!u)
        return -1;
    if (project && !job_ident_valid(project))
        return sh_errorf(err, SH_EINVAL,
                         "default_project '%.*s' is not a valid project name",
                         UTF8_CUT(project, 64));
    char *copy = NULL;
    if (project) {
        copy = strdup(project);
        if (!copy)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    char *old = u->default_project;
    u->default_project = copy;
    u->user.default_project = copy;
    if (put_user(batch, u, err) < 0) {
        u->default_project = old;
        u->user.default_project = old;
        free(copy);
        return -1;
    }
    free(old);
    return 0;
}

int auth_users_forget_project(struct auth *a, struct store_batch *batch,
                              const char *project, struct sh_error *err)
{
    int n = 0;
    for (struct user_entry *u = a->users; u; u = u->hh.next) {
        if (!u->default_project || strcmp(u->default_project, project) != 0)
            continue;
        if (auth_user_set_default_project(a, batch, u->name, NULL, err) < 0)
            return -1;
        n++;
    }
    return n;
}

bool auth_admin_remains(const struct auth *a, int64_t now_ms, const char *user,
                        const char *token_id)
{
    for (const struct token_entry *t = a->tokens; t; t = t->hh.next) {
        if (t->info.kind != AUTH_TOKEN_USER ||
            (t->info.expires_ms && t->info.expires_ms <= now_ms))
            continue;
        const struct user_entry *u = user_find(a, t->subject);
        if (!u || !u->user.admin)
            continue;
        if (user && strcmp(user, u->name) == 0 &&
            (!token_id || strcmp(token_id, t->info.id) == 0))
            continue;
        return true;
    }
    return false;
}

/* ---- listing and revoking single tokens ---- */

const struct auth_token_info *
auth_token_next(const struct auth *a, enum auth_token_kind kind,
                const char *subject, const struct auth_token_info *prev)
{
    const struct token_entry *t =
        prev ? ((const struct token_entry *)prev)->hh.next : a->tokens;
    for (; t; t = t->hh.next) {
        if (t->info.kind == kind && strcmp(t->subject, subject) == 0)
            return &t->info;
    }
    return NULL;
}

int auth_token_revoke(struct auth *a, struct store_batch *batch,
                      enum auth_token_kind kind, const char *subject,
                      const char *id, struct sh_error *err)
{
    struct token_entry *t;
    for (t = a->tokens; t; t = t->hh.next) {
        if (t->info.kind == kind && strcmp(t->subject, subject) == 0 &&
            strcmp(t->info.id, id) == 0)
            break;
    }
    if (!t)
        return sh_errorf(err, SH_ENOTFOUND, "%s has no token %.*s", subject,
                         UTF8_CUT(id, 16));
    if (store_batch_del(batch, "token", t->hash) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    HASH_DEL(a->tokens, t);
    token_free(t);
    return 0;
}

const struct auth_token_info *auth_token_info_of(const struct auth *a,
                                                 const char *token)
{
    char hex[HASH_HEX_LEN + 1];
    struct token_entry *t;
    token_hash(token, hex);
    HASH_FIND_STR(a->tokens, hex, t);
    return t ? &t->info : NULL;
}

int auth_token_count(const struct auth *a, enum auth_token_kind kind,
                     const char *subject)
{
    int n = 0;
    for (const struct token_entry *t = a->tokens; t; t = t->hh.next)
        n += t->info.kind == kind && strcmp(t->subject, subject) == 0;
    return n;
}
