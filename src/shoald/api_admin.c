/* SPDX-License-Identifier: Apache-2.0 */
/* POST /v1/admin/backup: an online backup on the controller's host
 * (backup.h does it; this checks the request and answers). */
#include <stdlib.h>
#include <string.h>

#include "shoald/api_handlers.h"
#include "shoald/backup.h"

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
    struct sh_error err;
    struct backup_result *r = malloc(sizeof(*r));
    if (!r) {
        api_errorf(req, SH_EINTERNAL, "out of memory");
        return;
    }
    const struct api_caller *who = api_caller(req);
    if (backup_make(d, path, who ? who->user : NULL, r, &err) < 0) {
        free(r);
        api_reply_error(req, &err);
        return;
    }
    if (r->sqlite)
        api_reply_json(req, 200,
                       json_pack("{s:s, s:s, s:s, s:I}", "store", "sqlite",
                                 "path", path, "key", r->key, "bytes",
                                 (json_int_t)r->bytes));
    else
        api_reply_json(req, 200,
                       json_pack("{s:s, s:s, s:s}", "store", "postgresql",
                                 "key", r->key, "pg_dump", r->pg_dump));
    free(r);
}
