/* SPDX-License-Identifier: Apache-2.0 */
/* Volume records and the mount path rule (see volume.h). */
#include "lib/model/volume.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/util/utf8.h"

static const char *const kind_names[] = {"host", "nfs", "s3", "csi"};

/* Folders a job may not mount over, nor under: what the system and its
 * setuid programs read. */
static const char *const system_dirs[] = {
    "/bin",     "/boot",      "/dev",     "/etc",       "/lib",
    "/lib32",   "/lib64",     "/libx32",  "/proc",      "/root",
    "/run",     "/sbin",      "/sys",     "/usr",       "/var/lib",
    "/var/run", "/var/spool", "/var/log", "/var/cache",
};

const char *volume_kind_name(enum volume_kind k)
{
    return (unsigned)k < sizeof(kind_names) / sizeof(kind_names[0])
               ? kind_names[k]
               : "unknown";
}

int volume_kind_from_name(const char *name, enum volume_kind *out,
                          struct sh_error *err)
{
    for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++) {
        if (strcmp(name, kind_names[i]) == 0) {
            *out = (enum volume_kind)i;
            return 0;
        }
    }
    return sh_errorf(err, SH_EINVAL,
                     "volume kind '%.*s' is unknown; use host, nfs, s3 or csi",
                     UTF8_CUT(name, 32));
}

static bool printable_path(const char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    }
    return true;
}

/* An absolute, normal path: no "..", ".", empty components or trailing
 * slash, printable, within JOB_PATH_MAX. */
static bool path_normal(const char *p)
{
    size_t len = strlen(p);
    if (len < 2 || len > JOB_PATH_MAX || p[0] != '/' || p[len - 1] == '/' ||
        !printable_path(p))
        return false;
    for (const char *c = p; c; c = strchr(c + 1, '/')) {
        const char *next = c + 1;
        size_t n = strcspn(next, "/");
        if (n == 0 || (n == 1 && next[0] == '.') ||
            (n == 2 && next[0] == '.' && next[1] == '.'))
            return false;
    }
    return true;
}

static bool under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int volume_mount_path_check(const char *path, struct sh_error *err)
{
    if (!path || !path_normal(path))
        return sh_errorf(err, SH_EINVAL,
                         "mount path '%.*s' must be an absolute path without "
                         "'.', '..', '//' or a trailing '/'",
                         UTF8_CUT(path ? path : "", 64));
    for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++) {
        if (under(path, system_dirs[i]))
            return sh_errorf(err, SH_EINVAL,
                             "mount path %s is in the system's folder %s; "
                             "mount volumes elsewhere (e.g. /data, /mnt/x, "
                             "/home/USER/x)",
                             path, system_dirs[i]);
    }
    return 0;
}

/* Fields of a record: "name" and "kind" are required, the rest optional. */
static int check_fields(const json_t *o, const char *const *allowed,
                        const char *what, struct sh_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach ((json_t *)o, key, v) {
        bool ok = false;
        for (int i = 0; allowed[i] && !ok; i++)
            ok = strcmp(key, allowed[i]) == 0;
        if (!ok)
            return sh_errorf(err, SH_EINVAL, "%s: unknown field '%.*s'", what,
                             UTF8_CUT(key, 32));
    }
    return 0;
}

static int check_host(const json_t *host, struct sh_error *err)
{
    static const char *const allowed[] = {"path", NULL};
    if (!json_is_object(host))
        return sh_errorf(err, SH_EINVAL,
                         "a host volume needs \"host\": {\"path\": \"/...\"}");
    if (check_fields(host, allowed, "host", err) < 0)
        return -1;
    const char *path = json_string_value(json_object_get(host, "path"));
    if (!path || !path_normal(path))
        return sh_errorf(err, SH_EINVAL,
                         "host path '%.*s' must be an absolute path without "
                         "'.', '..', '//' or a trailing '/'",
                         UTF8_CUT(path ? path : "", 64));
    return 0;
}

/* An S3 bucket name: 3..63 lowercase letters, digits, '.' and '-'. */
static bool bucket_valid(const char *b)
{
    size_t n = b ? strlen(b) : 0;
    if (n < 3 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '-'))
            return false;
    }
    return true;
}

/* http(s)://host[:port][/path], printable, no spaces, no credentials. */
static bool endpoint_valid(const char *e)
{
    if (!e || strlen(e) > 512)
        return false;
    const char *rest = strncmp(e, "https://", 8) == 0  ? e + 8
                       : strncmp(e, "http://", 7) == 0 ? e + 7
                                                       : NULL;
    if (!rest || !*rest || *rest == '/')
        return false;
    for (const char *c = rest; *c; c++) {
        if ((unsigned char)*c <= 0x20 || *c == 0x7f || *c == '@' || *c == ',' ||
            *c == '\\')
            return false;
    }
    return true;
}

static int check_s3(const json_t *s3, struct sh_error *err)
{
    static const char *const allowed[] = {
        "endpoint", "bucket", "prefix", "region", "secret", "cache", NULL};
    if (!json_is_object(s3))
        return sh_errorf(err, SH_EINVAL,
                         "an s3 volume needs \"s3\": {\"endpoint\", "
                         "\"bucket\", \"secret\", ...}");
    if (check_fields(s3, allowed, "s3", err) < 0)
        return -1;
    const char *endpoint = json_string_value(json_object_get(s3, "endpoint"));
    if (!endpoint_valid(endpoint))
        return sh_errorf(err, SH_EINVAL,
                         "s3 endpoint '%.*s' must be an http:// or https:// "
                         "URL without spaces, commas or credentials",
                         UTF8_CUT(endpoint ? endpoint : "", 64));
    const char *bucket = json_string_value(json_object_get(s3, "bucket"));
    if (!bucket_valid(bucket))
        return sh_errorf(err, SH_EINVAL,
                         "s3 bucket '%.*s' must be 3..63 lowercase letters, "
                         "digits, '.' or '-'",
                         UTF8_CUT(bucket ? bucket : "", 64));
    const json_t *prefix = json_object_get(s3, "prefix");
    if (prefix) {
        char abs[JOB_PATH_MAX + 2];
        const char *p = json_string_value(prefix);
        if (!p || strlen(p) > JOB_PATH_MAX || strchr(p, ',') ||
            (snprintf(abs, sizeof(abs), "/%s", p), !path_normal(abs)))
            return sh_errorf(err, SH_EINVAL,
                             "s3 prefix '%.*s' must be a folder path like "
                             "datasets/x (no leading or trailing '/', '.', "
                             "'..' or ',')",
                             UTF8_CUT(p ? p : "", 64));
    }
    const json_t *region = json_object_get(s3, "region");
    if (region && (!json_is_string(region) ||
                   !job_ident_valid(json_string_value(region))))
        return sh_errorf(err, SH_EINVAL,
                         "s3 region must be a name like us-east-1");
    const char *secret = json_string_value(json_object_get(s3, "secret"));
    if (!secret || !job_ident_valid(secret))
        return sh_errorf(err, SH_EINVAL,
                         "an s3 volume names the secret holding its "
                         "credentials: \"secret\": \"NAME\" (shoal secret "
                         "create)");
    const json_t *cache = json_object_get(s3, "cache");
    if (cache && !json_is_boolean(cache))
        return sh_errorf(err, SH_EINVAL, "s3 cache must be true or false");
    return 0;
}

/* NFS mount options the volume may carry: the kernel client takes them
 * all; the userspace client (nodes without one) honours vers and port and
 * fails the mount on the others rather than ignore them. */
static const char *const nfs_options[] = {
    "vers",   "nfsvers", "port",       "proto", "timeo",       "retrans",
    "rsize",  "wsize",   "hard",       "soft",  "noac",        "actimeo",
    "nolock", "noatime", "nodiratime", "sec",   "lookupcache", NULL};

static bool nfs_options_valid(const char *o)
{
    if (strlen(o) > 256)
        return false;
    char buf[260];
    snprintf(buf, sizeof(buf), "%s", o);
    char *save = NULL;
    for (char *opt = strtok_r(buf, ",", &save); opt;
         opt = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(opt, '=');
        if (eq)
            *eq = '\0';
        bool known = false;
        for (int i = 0; nfs_options[i] && !known; i++)
            known = strcmp(opt, nfs_options[i]) == 0;
        if (!known)
            return false;
        for (const char *c = eq ? eq + 1 : ""; *c; c++) {
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '.' || *c == ':'))
                return false;
        }
    }
    return o[0] != '\0' && o[0] != ',' && o[strlen(o) - 1] != ',' &&
           !strstr(o, ",,");
}

/* A host name or an IP address (v6 in brackets). */
static bool server_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 253 || s[0] == '-' || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '-' || c == ':' ||
              c == '[' || c == ']'))
            return false;
    }
    return true;
}

static int check_nfs(const json_t *nfs, struct sh_error *err)
{
    static const char *const allowed[] = {"server", "export", "options", NULL};
    if (!json_is_object(nfs))
        return sh_errorf(err, SH_EINVAL,
                         "an nfs volume needs \"nfs\": {\"server\", "
                         "\"export\", \"options\"?}");
    if (check_fields(nfs, allowed, "nfs", err) < 0)
        return -1;
    const char *server = json_string_value(json_object_get(nfs, "server"));
    if (!server_valid(server))
        return sh_errorf(err, SH_EINVAL,
                         "nfs server '%.*s' must be a host name or an IP "
                         "address",
                         UTF8_CUT(server ? server : "", 64));
    const char *export = json_string_value(json_object_get(nfs, "export"));
    if (!export || (strcmp(export, "/") != 0 && !path_normal(export)))
        return sh_errorf(err, SH_EINVAL,
                         "nfs export '%.*s' must be an absolute path",
                         UTF8_CUT(export ? export : "", 64));
    const json_t *options = json_object_get(nfs, "options");
    if (options && (!json_is_string(options) ||
                    !nfs_options_valid(json_string_value(options))))
        return sh_errorf(err, SH_EINVAL,
                         "nfs options must be a comma-separated list of "
                         "vers=, port=, proto=, timeo=, retrans=, rsize=, "
                         "wsize=, hard, soft, noac, actimeo=, nolock, "
                         "noatime, nodiratime, sec=, lookupcache=");
    return 0;
}

static bool printable_max(const char *s, size_t max)
{
    return s && *s && strlen(s) <= max && printable_path(s);
}

/* "controller": {"socket", "capacity"?, "parameters"?}: a CSI controller
 * plugin on the controller's machine creates the volume. */
static int check_csi_controller(const json_t *c, struct sh_error *err)
{
    static const char *const allowed[] = {"socket", "capacity", "parameters",
                                          NULL};
    if (!json_is_object(c) || check_fields(c, allowed, "csi controller", err))
        return sh_errorf(err, SH_EINVAL,
                         "csi controller must be {\"socket\", \"capacity\"?, "
                         "\"parameters\"?}");
    const char *socket = json_string_value(json_object_get(c, "socket"));
    if (!socket || !path_normal(socket) || strlen(socket) > 100)
        return sh_errorf(err, SH_EINVAL,
                         "csi controller socket must be the absolute path of "
                         "the controller plugin's unix socket");
    const json_t *cap = json_object_get(c, "capacity");
    if (cap && (!json_is_integer(cap) || json_integer_value(cap) < 0 ||
                json_integer_value(cap) > (INT64_C(1) << 56)))
        return sh_errorf(err, SH_EINVAL,
                         "csi controller capacity must be a size in bytes");
    const json_t *params = json_object_get(c, "parameters");
    if (params) {
        const char *k;
        json_t *v;
        if (!json_is_object(params) || json_object_size(params) > 32)
            return sh_errorf(err, SH_EINVAL,
                             "csi controller parameters must be an object of "
                             "at most 32 strings");
        json_object_foreach ((json_t *)params, k, v) {
            if (!printable_max(k, 128) ||
                !printable_max(json_string_value(v), 1024))
                return sh_errorf(err, SH_EINVAL,
                                 "csi controller parameter '%.*s' must be a "
                                 "printable string",
                                 UTF8_CUT(k, 64));
        }
    }
    return 0;
}

static int check_csi(const json_t *csi, bool stored, struct sh_error *err)
{
    static const char *const allowed[] = {
        "socket",      "volume_id",  "attributes", "fs_type",
        "mount_flags", "controller", NULL};
    if (!json_is_object(csi))
        return sh_errorf(err, SH_EINVAL,
                         "a csi volume needs \"csi\": {\"socket\", "
                         "\"volume_id\", \"attributes\"?, ...}");
    if (check_fields(csi, allowed, "csi", err) < 0)
        return -1;
    const char *socket = json_string_value(json_object_get(csi, "socket"));
    if (!socket || !path_normal(socket) || strlen(socket) > 100)
        return sh_errorf(err, SH_EINVAL,
                         "csi socket must be the absolute path (at most 100 "
                         "bytes) of the plugin's unix socket on every node");
    const json_t *ctrl = json_object_get(csi, "controller");
    if (ctrl && check_csi_controller(ctrl, err) < 0)
        return -1;
    const json_t *vid = json_object_get(csi, "volume_id");
    if (ctrl && !stored && vid)
        return sh_errorf(err, SH_EINVAL,
                         "a csi volume made by a controller plugin gets its "
                         "volume_id from the plugin; give none");
    if ((!ctrl || stored) && !printable_max(json_string_value(vid), 256))
        return sh_errorf(err, SH_EINVAL,
                         "csi volume_id must be a printable string of 1..256 "
                         "bytes");
    const json_t *attrs = json_object_get(csi, "attributes");
    if (attrs) {
        const char *k;
        json_t *v;
        if (!json_is_object(attrs) || json_object_size(attrs) > 32)
            return sh_errorf(err, SH_EINVAL,
                             "csi attributes must be an object of at most 32 "
                             "\"KEY\": \"VALUE\" strings");
        json_object_foreach ((json_t *)attrs, k, v) {
            if (!printable_max(k, 128) ||
                !printable_max(json_string_value(v), 1024))
                return sh_errorf(err, SH_EINVAL,
                                 "csi attribute '%.*s' must be a printable "
                                 "string",
                                 UTF8_CUT(k, 64));
        }
    }
    const json_t *fs = json_object_get(csi, "fs_type");
    if (fs && (!json_is_string(fs) || !job_ident_valid(json_string_value(fs))))
        return sh_errorf(err, SH_EINVAL, "csi fs_type must be a name");
    const json_t *flags = json_object_get(csi, "mount_flags");
    if (flags) {
        size_t i;
        json_t *f;
        if (!json_is_array(flags) || json_array_size(flags) > 32)
            return sh_errorf(err, SH_EINVAL,
                             "csi mount_flags must be an array of at most 32 "
                             "strings");
        json_array_foreach (flags, i, f) {
            if (!printable_max(json_string_value(f), 256))
                return sh_errorf(err, SH_EINVAL,
                                 "csi mount_flags must be printable strings");
        }
    }
    return 0;
}

/* What every record holds, request or stored. */
static int check_common(const json_t *o, bool stored, struct sh_error *err)
{
    static const char *const req_fields[] = {"name",     "kind", "project",
                                             "readonly", "host", "s3",
                                             "nfs",      "csi",  NULL};
    static const char *const rec_fields[] = {
        "name", "kind", "project",    "readonly",   "host", "s3",
        "nfs",  "csi",  "created_ms", "created_by", NULL};
    if (!json_is_object(o))
        return sh_errorf(err, SH_EINVAL, "a volume must be a JSON object");
    if (check_fields(o, stored ? rec_fields : req_fields, "volume", err) < 0)
        return -1;
    const char *name = json_string_value(json_object_get(o, "name"));
    if (!name || !job_ident_valid(name))
        return sh_errorf(err, SH_EINVAL,
                         "volume name '%.*s' must be 1..%d letters, digits, "
                         "'.', '_' or '-'",
                         UTF8_CUT(name ? name : "", 64), JOB_IDENT_MAX);
    const json_t *project = json_object_get(o, "project");
    if (project && !json_is_null(project) &&
        (!json_is_string(project) ||
         !job_ident_valid(json_string_value(project))))
        return sh_errorf(err, SH_EINVAL,
                         "volume %s: project must be a project name or null",
                         name);
    const json_t *ro = json_object_get(o, "readonly");
    if (ro && !json_is_boolean(ro))
        return sh_errorf(err, SH_EINVAL,
                         "volume %s: readonly must be true or false", name);
    const char *kind = json_string_value(json_object_get(o, "kind"));
    if (!kind)
        return sh_errorf(err, SH_EINVAL,
                         "volume %s needs a kind: host, nfs, s3 or csi", name);
    enum volume_kind k;
    if (volume_kind_from_name(kind, &k, err) < 0)
        return -1;
    /* Exactly the kind's own object. */
    for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++) {
        if (i != (size_t)k && json_object_get(o, kind_names[i]))
            return sh_errorf(err, SH_EINVAL, "a %s volume has no \"%s\"", kind,
                             kind_names[i]);
    }
    if (k == VOLUME_HOST)
        return check_host(json_object_get(o, "host"), err);
    if (k == VOLUME_S3)
        return check_s3(json_object_get(o, "s3"), err);
    if (k == VOLUME_NFS)
        return check_nfs(json_object_get(o, "nfs"), err);
    return check_csi(json_object_get(o, "csi"), stored, err);
}

json_t *volume_from_request(const json_t *body, const char *created_by,
                            int64_t now_ms, struct sh_error *err)
{
    if (check_common(body, false, err) < 0)
        return NULL;
    const json_t *project = json_object_get(body, "project");
    const json_t *ro = json_object_get(body, "readonly");
    const char *kind = json_string_value(json_object_get(body, "kind"));
    json_t *rec =
        json_pack("{s:s, s:s, s:O, s:b, s:I, s:s}", "name",
                  json_string_value(json_object_get(body, "name")), "kind",
                  kind, "project", project ? project : json_null(), "readonly",
                  json_is_true(ro), "created_ms", (json_int_t)now_ms,
                  "created_by", created_by);
    /* The kind's own object, checked field by field above. */
    if (rec &&
        json_object_set_new(rec, kind,
                            json_deep_copy(json_object_get(body, kind))) < 0) {
        json_decref(rec);
        rec = NULL;
    }
    if (!rec)
        sh_errorf(err, SH_EINTERNAL, "out of memory");
    return rec;
}

int volume_record_check(const json_t *rec, struct sh_error *err)
{
    return check_common(rec, true, err);
}

const char *volume_name(const json_t *rec)
{
    return json_string_value(json_object_get(rec, "name"));
}

const char *volume_project(const json_t *rec)
{
    return json_string_value(json_object_get(rec, "project"));
}

bool volume_readonly(const json_t *rec)
{
    return json_is_true(json_object_get(rec, "readonly"));
}

const char *volume_secret(const json_t *rec)
{
    return json_string_value(
        json_object_get(json_object_get(rec, "s3"), "secret"));
}

enum volume_kind volume_kind(const json_t *rec)
{
    enum volume_kind k = VOLUME_HOST;
    const char *name = json_string_value(json_object_get(rec, "kind"));
    if (name)
        volume_kind_from_name(name, &k, NULL);
    return k;
}
