/* SPDX-License-Identifier: Apache-2.0 */
/* Online backups of the controller's store and sealed secrets' key, made
 * on the controller's host (POST /v1/admin/backup, shoal admin backup). */
#ifndef SHOAL_SHOALD_BACKUP_H
#define SHOAL_SHOALD_BACKUP_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/util/error.h"
#include "shoald/shoald.h"

#define BACKUP_PATH_MAX 3900

struct backup_result {
    bool sqlite;                   /* the store was copied to the path */
    int64_t bytes;                 /* ...of this size */
    char key[BACKUP_PATH_MAX + 8]; /* where the key was copied */
    char pg_dump[8400]; /* PostgreSQL: the command that dumps the store */
};

/* Back up to path (absolute, checked by the caller: no quotes or control
 * bytes) for admin who: the SQLite store to path and the key to
 * path.key, both new files, 0600; on PostgreSQL the key alone and the
 * pg_dump command in r. SH_ECONFLICT when a file exists. */
int backup_make(struct shoald *d, const char *path, const char *who,
                struct backup_result *r, struct sh_error *err);

#endif
