/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal volume create|list|show|delete`: storage jobs mount by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_opts.h"
#include "lib/util/parse.h"

static const char volume_usage[] =
    "Usage: shoal volume create NAME --host PATH [--project P] [--read-only]\n"
    "       shoal volume create NAME --nfs SERVER:/EXPORT [--options O]\n"
    "                           [--project P] [--read-only]\n"
    "       shoal volume create NAME --csi SOCKET --volume-id ID [--attr "
    "K=V]...\n"
    "                           [--fs-type T] [--mount-flag F]...\n"
    "       shoal volume create NAME --csi SOCKET --csi-controller SOCKET\n"
    "                           [--capacity SIZE] [--param K=V]... [...]\n"
    "       shoal volume create NAME --s3 URL/BUCKET[/PREFIX] --secret S\n"
    "                           [--region R] [--cache] [--project P] "
    "[--read-only]\n"
    "       shoal volume list [--project P] [--json]\n"
    "       shoal volume show NAME [--json]\n"
    "       shoal volume delete NAME\n"
    "Volumes are storage a job mounts by name:\n"
    "  shoal submit -v NAME:/PATH[:ro] ...\n"
    "A volume belongs to one project (--project: only its jobs may mount\n"
    "it) or to the whole cluster. --host PATH binds a folder that exists on\n"
    "every node (cluster admins only). --nfs mounts an NFS export once per\n"
    "node (the kernel client, or a userspace one where the kernel has\n"
    "none); --options are NFS mount options (default vers=4.1).\n"
    "--csi names a CSI node plugin's unix socket (on every node) and the\n"
    "volume's id and attributes (its volume context): the agent stages it\n"
    "once per node and publishes it per job (cluster admins only). With\n"
    "--csi-controller, the controller plugin at that socket (on the\n"
    "controller's machine) creates the volume (CreateVolume, with\n"
    "--capacity and --param) and deletes it with the volume.\n"
    "--s3 mounts a bucket of an\n"
    "S3-compatible store (path-style URL, e.g. https://s3.example.com/data)\n"
    "once per node with s3fs; --secret names the secret holding its\n"
    "access_key and secret_key (shoal secret create); --cache keeps a\n"
    "node-local copy of what jobs read. --read-only mounts it read-only for\n"
    "every job; ':ro' does so for one job. The job sees the volume at PATH\n"
    "in its own mount namespace; a volume that cannot be mounted fails the\n"
    "job with the reason.\n";

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static const char *urlenc(const char *s, char *buf, size_t size)
{
    client_urlencode(s, buf, size);
    return buf;
}

/* KEY=VALUE into *obj (made when NULL). */
static void add_kv(json_t **obj, const char *opt, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        die("%s '%s' must be KEY=VALUE", opt, kv);
    if (!*obj)
        *obj = json_object();
    char key[256];
    snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
    json_object_set_new(*obj, key, json_string(eq + 1));
}

/* "https://host:port/bucket/some/prefix" -> endpoint, bucket, prefix. */
static json_t *s3_from_url(const char *url)
{
    const char *host = strstr(url, "://");
    const char *slash = host ? strchr(host + 3, '/') : NULL;
    if (!slash || !slash[1])
        die("--s3 '%s' must be URL/BUCKET[/PREFIX], e.g. "
            "https://s3.example.com/datasets",
            url);
    const char *bucket = slash + 1;
    const char *rest = strchr(bucket, '/');
    json_t *s3 = json_object();
    json_object_set_new(s3, "endpoint",
                        json_stringn(url, (size_t)(slash - url)));
    json_object_set_new(
        s3, "bucket",
        json_stringn(bucket, rest ? (size_t)(rest - bucket) : strlen(bucket)));
    if (rest && rest[1]) {
        size_t n = strlen(rest + 1);
        while (n > 0 && rest[1 + n - 1] == '/')
            n--;
        if (n > 0)
            json_object_set_new(s3, "prefix", json_stringn(rest + 1, n));
    }
    return s3;
}

static int create(int argc, char **argv)
{
    json_t *body = json_object();
    const char *name = NULL;
    const char *host = NULL;
    json_t *s3 = NULL;
    const char *nfs = NULL, *options = NULL;
    json_t *csi = NULL, *params = NULL;
    const char *ctrl_socket = NULL, *capacity = NULL;
    const char *secret = NULL, *region = NULL;
    bool cache = false;
    static const struct option longs[] = {
        {"host", required_argument, NULL, 'H'},
        {"s3", required_argument, NULL, 'S'},
        {"nfs", required_argument, NULL, 'N'},
        {"options", required_argument, NULL, 'o'},
        {"secret", required_argument, NULL, 's'},
        {"region", required_argument, NULL, 'r'},
        {"cache", no_argument, NULL, 'c'},
        {"project", required_argument, NULL, 'p'},
        {"read-only", no_argument, NULL, 'R'},
        {"csi", required_argument, NULL, 'C'},
        {"volume-id", required_argument, NULL, 'i'},
        {"csi-controller", required_argument, NULL, 'k'},
        {"capacity", required_argument, NULL, 'z'},
        {"param", required_argument, NULL, 'P'},
        {"fs-type", required_argument, NULL, 'f'},
        {"mount-flag", required_argument, NULL, 'm'},
        {"attr", required_argument, NULL, 'a'},
        {NULL, 0, NULL, 0},
    };
    struct cmd_opts p;
    cmd_opts_init(&p, "volume create", volume_usage, longs, NULL, false,
                  argc - 1, argv + 1);
    int opt;
    while ((opt = cmd_opts_next(&p)) != -1) {
        const char *a = p.arg;
        /* The CSI details follow --csi, and go into its object. */
        if (strchr("ikzPfma", opt) && !csi) {
            const char *flag = "";
            for (const struct option *l = longs; l->name; l++)
                if (l->val == opt)
                    flag = l->name;
            cmd_opts_fail(&p, "option --%s comes after --csi SOCKET", flag);
        }
        switch (opt) {
        case 'H':
            host = a;
            break;
        case 'S':
            if (s3)
                cmd_opts_fail(&p, "--s3 given twice");
            s3 = s3_from_url(a);
            break;
        case 'N':
            nfs = a;
            break;
        case 'o':
            options = a;
            break;
        case 's':
            secret = a;
            break;
        case 'r':
            region = a;
            break;
        case 'c':
            cache = true;
            break;
        case 'p':
            json_object_set_new(body, "project", json_string(a));
            break;
        case 'R':
            json_object_set_new(body, "readonly", json_true());
            break;
        case 'C':
            if (csi)
                cmd_opts_fail(&p, "--csi given twice");
            csi = json_pack("{s:s}", "socket", a);
            break;
        case 'i':
            json_object_set_new(csi, "volume_id", json_string(a));
            break;
        case 'k':
            ctrl_socket = a;
            break;
        case 'z':
            capacity = a;
            break;
        case 'P':
            add_kv(&params, "--param", a);
            break;
        case 'f':
            json_object_set_new(csi, "fs_type", json_string(a));
            break;
        case 'm': {
            json_t *f = json_object_get(csi, "mount_flags");
            if (!f) {
                f = json_array();
                json_object_set_new(csi, "mount_flags", f);
            }
            json_array_append_new(f, json_string(a));
            break;
        }
        case 'a': {
            json_t *at = json_object_get(csi, "attributes");
            add_kv(&at, "--attr", a);
            if (!json_object_get(csi, "attributes"))
                json_object_set_new(csi, "attributes", at);
            break;
        }
        default: /* CMD_OPT_ARG: the first is NAME */
            if (name)
                cmd_opts_fail(&p, "unexpected argument '%s'", a);
            name = a;
        }
    }
    if (!name)
        die("usage: shoal volume create NAME --host PATH [--project P] "
            "[--read-only]");
    json_object_set_new(body, "name", json_string(name));
    if ((host != NULL) + (s3 != NULL) + (nfs != NULL) + (csi != NULL) != 1)
        die("say what the volume is: one of --host PATH, --nfs "
            "SERVER:/EXPORT, --s3 URL/BUCKET or --csi SOCKET (see shoal "
            "volume --help)");
    if (!nfs && options)
        die("--options is for --nfs volumes");
    if (!s3 && (secret || region || cache))
        die("--secret, --region and --cache are for --s3 volumes");
    if (host) {
        json_object_set_new(body, "kind", json_string("host"));
        json_object_set_new(body, "host", json_pack("{s:s}", "path", host));
    } else if (csi) {
        if (!ctrl_socket && (capacity || params))
            die("--capacity and --param go with --csi-controller");
        if (ctrl_socket) {
            json_t *ctrl = json_pack("{s:s}", "socket", ctrl_socket);
            uint64_t bytes;
            struct sh_error err;
            if (capacity) {
                if (parse_size("--capacity", capacity, &bytes, &err) < 0)
                    die("%s", err.msg);
                json_object_set_new(ctrl, "capacity",
                                    json_integer((json_int_t)bytes));
            }
            if (params)
                json_object_set_new(ctrl, "parameters", params);
            json_object_set_new(csi, "controller", ctrl);
        }
        json_object_set_new(body, "kind", json_string("csi"));
        json_object_set_new(body, "csi", csi);
    } else if (nfs) {
        const char *colon = strrchr(nfs, ':');
        if (!colon || colon == nfs || colon[1] != '/')
            die("--nfs '%s' must be SERVER:/EXPORT", nfs);
        json_t *o = json_pack("{s:s%, s:s}", "server", nfs,
                              (size_t)(colon - nfs), "export", colon + 1);
        if (options)
            json_object_set_new(o, "options", json_string(options));
        json_object_set_new(body, "kind", json_string("nfs"));
        json_object_set_new(body, "nfs", o);
    } else {
        if (!secret)
            die("an --s3 volume needs --secret NAME holding access_key and "
                "secret_key (shoal secret create)");
        json_object_set_new(s3, "secret", json_string(secret));
        if (region)
            json_object_set_new(s3, "region", json_string(region));
        if (cache)
            json_object_set_new(s3, "cache", json_true());
        json_object_set_new(body, "kind", json_string("s3"));
        json_object_set_new(body, "s3", s3);
    }
    struct client *c = cmd_connect();
    json_t *ans = cmd_call(c, "POST", "/v1/volumes", body);
    printf("volume %s created\n", str(ans, "name"));
    json_decref(ans);
    json_decref(body);
    client_destroy(c);
    return 0;
}

static void source_of(const json_t *v, char *buf, size_t size)
{
    const json_t *s3 = json_object_get(v, "s3");
    if (strcmp(str(v, "kind"), "host") == 0)
        snprintf(buf, size, "%s",
                 str(json_object_get(v, "host"), "path") ?: "-");
    else if (json_object_get(v, "csi"))
        snprintf(buf, size, "%s (%s)",
                 str(json_object_get(v, "csi"), "volume_id"),
                 str(json_object_get(v, "csi"), "socket"));
    else if (json_object_get(v, "nfs"))
        snprintf(buf, size, "%s:%s", str(json_object_get(v, "nfs"), "server"),
                 str(json_object_get(v, "nfs"), "export"));
    else if (s3)
        snprintf(buf, size, "%s/%s%s%s (secret %s)", str(s3, "endpoint"),
                 str(s3, "bucket"), str(s3, "prefix") ? "/" : "",
                 str(s3, "prefix") ?: "", str(s3, "secret"));
    else
        snprintf(buf, size, "-");
}

static int list(int argc, char **argv)
{
    struct cmd_flag flags[] = {{"json", false, NULL, false},
                               {"project", true, NULL, false},
                               {NULL, false, NULL, false}};
    cmd_opts_collect("volume list", volume_usage, flags, argc - 1, argv + 1,
                     NULL, 0);
    bool json_out = flags[0].set;
    char path[300] = "/v1/volumes";
    if (flags[1].set) {
        char enc[200];
        snprintf(path, sizeof(path), "/v1/volumes?project=%s",
                 urlenc(flags[1].value, enc, sizeof(enc)));
    }
    struct client *c = cmd_connect();
    json_t *ans = cmd_call(c, "GET", path, NULL);
    json_t *vols = json_object_get(ans, "volumes");
    if (json_out) {
        cmd_print_json(json_incref(vols));
    } else {
        static const char *const hdr[] = {"NAME",   "KIND", "PROJECT",
                                          "SOURCE", "MODE", "JOBS"};
        struct table *t = table_create(6, hdr);
        size_t i;
        json_t *v;
        json_array_foreach (vols, i, v) {
            char src[4200], jobs[24];
            source_of(v, src, sizeof(src));
            snprintf(jobs, sizeof(jobs), "%lld",
                     (long long)json_integer_value(
                         json_object_get(v, "active_jobs")));
            const char *row[] = {
                str(v, "name"),
                str(v, "kind"),
                str(v, "project") ? str(v, "project") : "(cluster)",
                src,
                json_is_true(json_object_get(v, "readonly")) ? "ro" : "rw",
                jobs};
            table_add(t, row);
        }
        table_print(t);
        table_destroy(t);
    }
    json_decref(ans);
    client_destroy(c);
    return 0;
}

static int show(int argc, char **argv)
{
    struct cmd_flag flags[] = {{"json", false, NULL, false},
                               {NULL, false, NULL, false}};
    const char *name;
    if (cmd_opts_collect("volume show", volume_usage, flags, argc - 1, argv + 1,
                         &name, 1) != 1)
        die("usage: shoal volume show NAME [--json]");
    char path[300], enc[200];
    snprintf(path, sizeof(path), "/v1/volumes/%s",
             urlenc(name, enc, sizeof(enc)));
    struct client *c = cmd_connect();
    json_t *v = cmd_call(c, "GET", path, NULL);
    if (flags[0].set) {
        cmd_print_json(json_incref(v));
    } else {
        char src[4200];
        source_of(v, src, sizeof(src));
        printf("Name:      %s\nKind:      %s\nProject:   %s\nSource:    %s\n"
               "Mode:      %s\nJobs:      %lld pending or running\n"
               "Created:   by %s\n",
               str(v, "name"), str(v, "kind"),
               str(v, "project") ? str(v, "project") : "(cluster-wide)", src,
               json_is_true(json_object_get(v, "readonly")) ? "read-only"
                                                            : "read-write",
               (long long)json_integer_value(json_object_get(v, "active_jobs")),
               str(v, "created_by") ?: "-");
    }
    json_decref(v);
    client_destroy(c);
    return 0;
}

static int delete (int argc, char **argv)
{
    const char *name;
    if (cmd_opts_collect("volume delete", volume_usage, NULL, argc - 1,
                         argv + 1, &name, 1) != 1)
        die("usage: shoal volume delete NAME");
    char path[300], enc[200];
    snprintf(path, sizeof(path), "/v1/volumes/%s",
             urlenc(name, enc, sizeof(enc)));
    struct client *c = cmd_connect();
    json_decref(cmd_call(c, "DELETE", path, NULL));
    printf("volume %s deleted\n", name);
    client_destroy(c);
    return 0;
}

int cmd_volume(int argc, char **argv)
{
    const char *sub = cmd_opts_subcommand("volume", volume_usage, argc, argv);
    if (strcmp(sub, "create") == 0)
        return create(argc, argv);
    if (strcmp(sub, "list") == 0)
        return list(argc, argv);
    if (strcmp(sub, "show") == 0)
        return show(argc, argv);
    if (strcmp(sub, "delete") == 0)
        return delete (argc, argv);
    cmd_opts_unknown_subcommand("volume", sub);
}
