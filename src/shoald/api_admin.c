/* SPDX-License-Identifier: Apache-2.0 */
/* POST /v1/admin/backup: an online backup on the controller's host. The
 * store is copied while the controller runs (store_backup: SQLite's
 * VACUUM INTO, a consistent snapshot of what is committed) to the path the
 * admin names, and the sealed secrets' key (<state>/secrets.key, without
 * which the copy's secrets cannot be opened) beside it as PATH.key. Both
 * files are new (an existing file is never written over) and 0600. On
 * PostgreSQL there is no file to copy: the answer carries the pg_dump
 * command to run instead, and the key is copied alike. The key never
 * travels over the API (secrets.h): the files stay on this host. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util/log.h"
#include "shoald/api_handlers.h"
#include "store/store.h"

#define BACKUP_PATH_MAX 3900

/* Creates path, new and empty, mode 0600, never through a link. */
static int create_new(const char *path, struct sh_error *err)
{
    int fd =
        open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return sh_errorf(err, errno == EEXIST ? SH_ECONFLICT : SH_EINVAL,
                         "cannot create %s: %s", path, strerror(errno));
    return fd;
}

static int copy_key(const char *state_dir, const char *to, struct sh_error *err)
{
    char from[4200];
    snprintf(from, sizeof(from), "%s/secrets.key", state_dir);
    int in = open(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0)
        return sh_errorf(err, SH_EINTERNAL, "cannot read %s: %s", from,
                         strerror(errno));
    int out = create_new(to, err);
    if (out < 0) {
        close(in);
        return -1;
    }
    char buf[4096];
    ssize_t n;
    int rc = 0;
    while ((n = read(in, buf, sizeof(buf))) > 0) {
        if (write(out, buf, (size_t)n) != n) {
            n = -1;
            break;
        }
    }
    if (n < 0 || fsync(out) < 0)
        rc = sh_errorf(err, SH_EINTERNAL, "cannot copy %s to %s: %s", from, to,
                       strerror(errno));
    close(in);
    close(out);
    if (rc < 0)
        unlink(to);
    return rc;
}

/* The store's URL without a password, for the pg_dump command line. */
static void url_without_password(const char *url, char *out, size_t size)
{
    snprintf(out, size, "%s", url);
    char *scheme = strstr(out, "://");
    char *at = scheme ? strchr(scheme + 3, '@') : NULL;
    char *colon = scheme ? strchr(scheme + 3, ':') : NULL;
    if (at && colon && colon < at)
        memmove(colon, at, strlen(at) + 1);
}

void api_admin_backup(struct shoald *d, struct api_req *req)
{
    json_t *body = api_body(req);
    if (!body)
        return;
    const char *path;
    json_error_t jerr;
    if (json_unpack_ex(body, &jerr, JSON_STRICT, "{s:s}", "path", &path) < 0) {
        api_errorf(req, SH_EINVAL, "%s", jerr.text);
        return;
    }
    bool plain = true;
    for (const char *p = path; *p; p++)
        plain = plain && (unsigned char)*p >= 0x20 && *p != 0x7f && *p != '\'';
    if (path[0] != '/' || strlen(path) > BACKUP_PATH_MAX || !plain) {
        api_errorf(req, SH_EINVAL,
                   "path must be absolute (a file on the controller's host), "
                   "of at most %d bytes, without quotes or control "
                   "characters",
                   BACKUP_PATH_MAX);
        return;
    }
    char key[BACKUP_PATH_MAX + 8];
    snprintf(key, sizeof(key), "%s.key", path);
    struct sh_error err;
    bool sqlite = strcmp(store_backend(d->store), "postgresql") != 0;
    if (sqlite) {
        /* VACUUM INTO fills an empty file: made here, 0600, so the copy is
         * never readable by others, nor written through a link. */
        int fd = create_new(path, &err);
        if (fd < 0) {
            api_reply_error(req, &err);
            return;
        }
        close(fd);
        if (store_backup(d->store, path, &err) < 0) {
            unlink(path);
            api_reply_error(req, &err);
            return;
        }
    }
    if (copy_key(d->cfg.state_dir, key, &err) < 0) {
        if (sqlite)
            unlink(path);
        api_reply_error(req, &err);
        return;
    }
    const struct api_caller *who = api_caller(req);
    sh_log(LOG_NOTICE, "api", "backup by %s: %s%s%s", who ? who->user : "?",
           sqlite ? path : "", sqlite ? " and " : "", key);
    if (!sqlite) {
        char url[4200], cmd[8400];
        url_without_password(d->cfg.store_url, url, sizeof(url));
        snprintf(cmd, sizeof(cmd), "pg_dump --format=custom --file='%s' '%s'",
                 path, url);
        api_reply_json(req, 200,
                       json_pack("{s:s, s:s, s:s}", "store", "postgresql",
                                 "key", key, "pg_dump", cmd));
        return;
    }
    struct stat st;
    json_int_t bytes = stat(path, &st) == 0 ? (json_int_t)st.st_size : 0;
    api_reply_json(req, 200,
                   json_pack("{s:s, s:s, s:s, s:I}", "store", "sqlite", "path",
                             path, "key", key, "bytes", bytes));
}
