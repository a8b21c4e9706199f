/* SPDX-License-Identifier: Apache-2.0 */
/* shoal admin: what the operator of a controller runs.
 *   shoal admin backup FILE   an online backup of the store and the sealed
 *                             secrets' key (POST /v1/admin/backup) */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/cmd_opts.h"

static const char admin_usage[] =
    "Usage: shoal admin backup FILE\n"
    "Back up the controller while it runs (cluster admins): a consistent\n"
    "copy of its SQLite store to FILE and the sealed secrets' key, without\n"
    "which the copy's secrets cannot be opened, to FILE.key. The controller\n"
    "writes both on its own host (a relative FILE is taken from here),\n"
    "mode 0600; neither may exist. On PostgreSQL it copies the key and\n"
    "prints the pg_dump command that backs up the database.\n"
    "Restore: stop shoald, put FILE as STATE/shoal.db and FILE.key as\n"
    "STATE/secrets.key, start shoald (doc/ops.md).\n";

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

int cmd_admin(int argc, char **argv)
{
    const char *verb = cmd_opts_subcommand("admin", admin_usage, argc, argv);
    if (strcmp(verb, "backup") != 0)
        cmd_opts_unknown_subcommand("admin", verb);
    struct cmd_flag flags[] = {{NULL, false, NULL, false}};
    const char *pos[2];
    int npos = cmd_opts_collect("admin", admin_usage, flags, argc - 1, argv + 1,
                                pos, 2);
    if (npos != 1)
        die("admin backup: one FILE, please (see shoal admin --help)");
    char path[PATH_MAX + 2];
    if (pos[0][0] == '/') {
        snprintf(path, sizeof(path), "%s", pos[0]);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof(cwd)))
            die("admin backup: cannot tell this folder; give an absolute "
                "FILE");
        if (snprintf(path, sizeof(path), "%s/%s", cwd, pos[0]) >=
            (int)sizeof(path))
            die("admin backup: the path is too long");
    }
    json_t *body = json_pack("{s:s}", "path", path);
    struct client *c = cmd_connect();
    json_t *r = cmd_call(c, "POST", "/v1/admin/backup", body);
    if (strcmp(str(r, "store"), "postgresql") == 0) {
        printf("the store is on PostgreSQL: back it up with\n  %s\n"
               "sealed secrets' key: %s (keep it with the dump)\n",
               str(r, "pg_dump"), str(r, "key"));
    } else {
        printf("store: %s (%lld bytes)\nsealed secrets' key: %s\n",
               str(r, "path"),
               (long long)json_integer_value(json_object_get(r, "bytes")),
               str(r, "key"));
    }
    json_decref(r);
    json_decref(body);
    client_destroy(c);
    return 0;
}
