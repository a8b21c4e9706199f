/* SPDX-License-Identifier: Apache-2.0 */
/* Loading, initialising and reloading the controller's state (see
 * state.h). */
#include "shoald/state.h"

#include <errno.h>
#include <sodium.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/model/node_json.h"
#include "lib/util/file.h"
#include "lib/util/log.h"
#include "lib/util/utf8.h"
#include "shoald/auth.h"
#include "shoald/engine.h"
#include "shoald/commit.h"
#include "shoald/jobs.h"
#include "shoald/nodetab.h"
#include "shoald/slices.h"
#include "shoald/tenancy.h"
#include "shoald/secrets.h"
#include "shoald/partitions.h"
#include "shoald/volumes.h"
#include "store/store.h"

static int load_node(const char *key, const json_t *rec, void *arg,
                     struct sh_error *err)
{
    struct nodetab *t = arg;
    struct node *n = node_from_record(rec, err);
    if (!n)
        return sh_error_prefix(err, "node %.*s: ", UTF8_CUT(key, 64));
    if (nodetab_add(t, n) < 0) {
        node_destroy(n);
        return sh_errorf(err, SH_EINTERNAL, "node %.*s twice",
                         UTF8_CUT(key, 64));
    }
    return 0;
}

/* Load nodes into a fresh table; liveness is copied from the old table. */
static int nodes_load(struct shoald *d, struct sh_error *err)
{
    struct nodetab *t = nodetab_create();
    if (!t)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    if (store_load_objects(d->store, "node", load_node, t, err) < 0) {
        nodetab_destroy(t);
        return -1;
    }
    if (d->nodes)
        nodetab_take_runtime(t, d->nodes);
    nodetab_destroy(d->nodes);
    d->nodes = t;
    return 0;
}

static int load_cluster(const char *key, const json_t *rec, void *arg,
                        struct sh_error *err)
{
    struct shoald *d = arg;
    const char *id = json_string_value(json_object_get(rec, "id"));
    (void)err;
    if (strcmp(key, "id") == 0 && id && strlen(id) < sizeof(d->cluster_id))
        snprintf(d->cluster_id, sizeof(d->cluster_id), "%s", id);
    return 0;
}

/* The cluster's id: random, made once, kept in the store. Agents put it in
 * their cgroup paths so two clusters on one host never touch each other's
 * jobs. A new cluster makes it in its first commit; one made before ids
 * existed gets it in a commit of its own. commit says which. */
static int ensure_cluster_id(struct shoald *d, bool commit,
                             struct sh_error *err)
{
    if (d->cluster_id[0])
        return 0;
    unsigned char raw[8];
    char hex[sizeof(raw) * 2 + 1];
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2hex(hex, sizeof(hex), raw, sizeof(raw));
    json_t *rec = json_pack("{s:s}", "id", hex);
    int rc = rec ? store_batch_put(shoald_batch(d), "cluster", "id", rec) : -1;
    json_decref(rec);
    if (rc < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    if (commit && commit_flush(d->commit, err) < 0)
        return -1;
    snprintf(d->cluster_id, sizeof(d->cluster_id), "%s", hex);
    return 0;
}

int state_load(struct shoald *d, struct sh_error *err)
{
    if (auth_load(d->auth, d->store, err) < 0 || nodes_load(d, err) < 0 ||
        jobs_load(d, err) < 0 ||
        store_load_objects(d->store, "cluster", load_cluster, d, err) < 0)
        return -1;
    if (d->slices && slices_load(d->slices, d->store, err) < 0)
        return -1;
    if (tenancy_load(d->tenancy, d->store, err) < 0 ||
        volumes_load(d->volumes, d->store, err) < 0 ||
        (d->partitions && partitions_load(d->partitions, d->store, err) < 0) ||
        secrets_load(d->secrets, d->store, err) < 0)
        return -1;
    return 0;
}

int state_reload(void *arg, struct sh_error *err)
{
    struct shoald *d = arg;
    if (state_load(d, err) < 0)
        return -1;
    cluster_reloaded(d);
    return 0;
}

int state_write_file(const char *state_dir, const char *name, const char *text,
                     int mode, struct sh_error *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", state_dir, name);
    return file_write_atomic(path, text, strlen(text), mode, true, err);
}

/* Finish an initialisation that committed but crashed before renaming the
 * token files into place. */
static void finish_pending_files(const struct shoald *d)
{
    static const char *const names[] = {"admin.token", "join.token"};
    for (int i = 0; i < 2; i++) {
        char path[4096], tmp[4200];
        snprintf(path, sizeof(path), "%s/%s", d->cfg.state_dir, names[i]);
        snprintf(tmp, sizeof(tmp), "%s.init", path);
        if (access(path, F_OK) != 0 && access(tmp, F_OK) == 0)
            rename(tmp, path);
    }
}

int state_init_cluster(struct shoald *d, struct sh_error *err)
{
    if (auth_initialised(d->auth)) {
        finish_pending_files(d);
        return ensure_cluster_id(d, true, err);
    }
    char admin[AUTH_TOKEN_LEN + 2], join[AUTH_TOKEN_LEN + 2];
    int64_t now = shoald_now_ms(d);
    struct store_batch *b = shoald_batch(d);
    if (auth_user_create(d->auth, b, d->cfg.admin_user, true, now, err) < 0 ||
        auth_token_issue(d->auth, b, AUTH_TOKEN_USER, d->cfg.admin_user, now, 0,
                         admin, err) < 0 ||
        auth_token_issue(d->auth, b, AUTH_TOKEN_JOIN, "cluster", now, 0, join,
                         err) < 0)
        return -1;
    /* The cluster's default team and project, with the first admin as a
     * member like every later user (see tenancy.h). */
    if (tenancy_init_defaults(d->tenancy, b, now, err) < 0 ||
        tenancy_member_set(d->tenancy, b, TENANCY_DEFAULT_PROJECT,
                           d->cfg.admin_user, TENANCY_ROLE_MEMBER, err) < 0)
        return -1;
    strcat(admin, "\n");
    strcat(join, "\n");
    /* The token files are written under a temporary name first and renamed
     * after the commit, so a crash in between leaves either no cluster or
     * a cluster with its token files. */
    const char *dir = d->cfg.state_dir;
    if (state_write_file(dir, "admin.token.init", admin, 0600, err) < 0 ||
        state_write_file(dir, "join.token.init", join, 0600, err) < 0 ||
        ensure_cluster_id(d, false, err) < 0 ||
        commit_flush(d->commit, err) < 0)
        return -1;
    finish_pending_files(d);
    sh_log(LOG_NOTICE, "state",
           "initialised a new cluster: admin user %s; tokens in %s/admin.token "
           "and %s/join.token",
           d->cfg.admin_user, d->cfg.state_dir, d->cfg.state_dir);
    return 0;
}
