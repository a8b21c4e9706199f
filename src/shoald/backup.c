/* SPDX-License-Identifier: Apache-2.0 */
/* Online backups on the controller's host (backup.h): the store copied
 * while the controller runs (store_backup: SQLite's VACUUM INTO, a
 * consistent snapshot of what is committed) to a path an admin names, and
 * the sealed secrets' key (<state>/secrets.key, without which the copy's
 * secrets cannot be opened) beside it as PATH.key. Both files are new (an
 * existing file is never written over) and 0600. On PostgreSQL there is no
 * file to copy: the caller gets the pg_dump command to run instead, and
 * the key is copied alike. The key never leaves this host. */
#include "shoald/backup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util/log.h"
#include "store/store.h"

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

int backup_make(struct shoald *d, const char *path, const char *who,
                struct backup_result *r, struct sh_error *err)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->key, sizeof(r->key), "%s.key", path);
    r->sqlite = strcmp(store_backend(d->store), "postgresql") != 0;
    if (r->sqlite) {
        /* VACUUM INTO fills an empty file: made here, 0600, so the copy is
         * never readable by others, nor written through a link. */
        int fd = create_new(path, err);
        if (fd < 0)
            return -1;
        close(fd);
        if (store_backup(d->store, path, err) < 0) {
            unlink(path);
            return -1;
        }
    }
    if (copy_key(d->cfg.state_dir, r->key, err) < 0) {
        if (r->sqlite)
            unlink(path);
        return -1;
    }
    sh_log(LOG_NOTICE, "backup", "backup by %s: %s%s%s", who ? who : "?",
           r->sqlite ? path : "", r->sqlite ? " and " : "", r->key);
    if (r->sqlite) {
        struct stat st;
        r->bytes = stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
    } else {
        char url[4200];
        url_without_password(d->cfg.store_url, url, sizeof(url));
        snprintf(r->pg_dump, sizeof(r->pg_dump),
                 "pg_dump --format=custom --file='%s' '%s'", path, url);
    }
    return 0;
}
