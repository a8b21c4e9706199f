/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal partition` and `shoal qos` create|list|show|delete: the
 * partitions and QOS a cluster admin defines for Slurm users' -p and
 * --qos (shoald/partitions.h says what they do to a job). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_opts.h"
#include "lib/util/parse.h"

static const char partition_usage[] =
    "Usage: shoal partition create NAME --nodes SELECTOR [--default-time DUR]\n"
    "                              [--max-time DUR] [--projects P,Q] "
    "[--default]\n"
    "       shoal partition list [--json]\n"
    "       shoal partition show NAME [--json]\n"
    "       shoal partition delete NAME\n"
    "A partition is a set of nodes with its own time limits, which jobs\n"
    "name with -p/--partition (#SBATCH -p, shoal submit --partition), as\n"
    "in Slurm (cluster admins create and delete them):\n"
    "  --nodes SELECTOR     all, or the nodes whose labels match, in\n"
    "                       --constraint's grammar: a100, rack=r1, a&b, a|b\n"
    "                       (label nodes with shoal-agent --label)\n"
    "  --default-time DUR   time limit of its jobs that give none\n"
    "  --max-time DUR       the longest time limit a job may ask (jobs that\n"
    "                       give none get it)\n"
    "  --projects P,Q       only jobs of these projects may use it\n"
    "  --default            jobs that name no partition go here (one\n"
    "                       partition may be the default)\n";

static const char qos_usage[] =
    "Usage: shoal qos create NAME --priority high|normal|low [--max-time "
    "DUR]\n"
    "                        [--max-gpus-per-user N]\n"
    "       shoal qos list [--json]\n"
    "       shoal qos show NAME [--json]\n"
    "       shoal qos delete NAME\n"
    "A QOS, which jobs name with --qos (#SBATCH --qos), gives them a\n"
    "priority class (as shoal submit --priority) and caps their time limit\n"
    "(--max-time; jobs that give none get it). With --max-gpus-per-user,\n"
    "a user's jobs in it hold at most N GPUs at once: the next one waits\n"
    "(its reason says so) and a bigger one is refused. Cluster admins\n"
    "create and delete them.\n";

struct kind {
    const char *cmd;   /* "partition" */
    const char *path;  /* "/v1/partitions" */
    const char *key;   /* list key */
    const char *usage; /* help */
};

static const struct kind partition_kind = {"partition", "/v1/partitions",
                                           "partitions", partition_usage};
static const struct kind qos_kind = {"qos", "/v1/qos", "qos", qos_usage};

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void dur(const json_t *o, const char *k, char *buf, size_t size)
{
    json_int_t s = json_integer_value(json_object_get(o, k));
    if (s)
        format_duration(s, buf, size);
    else
        snprintf(buf, size, "-");
}

static void set_duration(json_t *req, const char *field, const char *opt,
                         const char *v)
{
    int64_t secs;
    struct sh_error err;
    if (parse_duration(opt, v, &secs, &err) < 0)
        die("%s", err.msg);
    json_object_set_new(req, field, json_integer(secs));
}

static int create(const struct kind *k, int argc, char **argv)
{
    bool part = k == &partition_kind;
    struct cmd_flag pflags[] = {
        {"nodes", true, NULL, false},    {"default-time", true, NULL, false},
        {"max-time", true, NULL, false}, {"projects", true, NULL, false},
        {"default", false, NULL, false}, {NULL, false, NULL, false}};
    struct cmd_flag qflags[] = {{"priority", true, NULL, false},
                                {"max-time", true, NULL, false},
                                {"max-gpus-per-user", true, NULL, false},
                                {NULL, false, NULL, false}};
    struct cmd_flag *flags = part ? pflags : qflags;
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "%s create", k->cmd);
    const char *name;
    if (cmd_opts_collect(cmd, k->usage, flags, argc - 1, argv + 1, &name, 1) !=
        1)
        die("usage: shoal %s create NAME ... (see shoal %s --help)", k->cmd,
            k->cmd);
    json_t *req = json_pack("{s:s}", "name", name);
    if (part) {
        if (!pflags[0].set)
            die("shoal partition create: --nodes is needed: all, or a "
                "constraint on node labels");
        json_object_set_new(req, "nodes", json_string(pflags[0].value));
        if (pflags[1].set)
            set_duration(req, "default_time", "--default-time",
                         pflags[1].value);
        if (pflags[2].set)
            set_duration(req, "max_time", "--max-time", pflags[2].value);
        if (pflags[3].set) {
            json_t *ps = json_array();
            for (const char *p = pflags[3].value; *p;) {
                size_t n = strcspn(p, ",");
                if (n)
                    json_array_append_new(ps, json_stringn(p, n));
                p += n + (p[n] == ',');
            }
            json_object_set_new(req, "projects", ps);
        }
        if (pflags[4].set)
            json_object_set_new(req, "default", json_true());
    } else {
        if (!qflags[0].set)
            die("shoal qos create: --priority high|normal|low is needed");
        json_object_set_new(req, "priority", json_string(qflags[0].value));
        if (qflags[1].set)
            set_duration(req, "max_time", "--max-time", qflags[1].value);
        if (qflags[2].set)
            json_object_set_new(
                req, "max_gpus_per_user",
                json_integer(cmd_parse_int("--max-gpus-per-user",
                                           qflags[2].value, 1, 65536)));
    }
    struct client *c = cmd_connect();
    json_decref(cmd_call(c, "POST", k->path, req));
    json_decref(req);
    printf("%s %s created\n", k->cmd, name);
    client_destroy(c);
    return 0;
}

static void partition_row(struct table *t, const json_t *v)
{
    char dt[32], mt[32], projects[1024] = "(all)";
    dur(v, "default_time", dt, sizeof(dt));
    dur(v, "max_time", mt, sizeof(mt));
    const json_t *ps = json_object_get(v, "projects");
    if (ps) {
        size_t i, used = 0;
        json_t *p;
        projects[0] = '\0';
        json_array_foreach (ps, i, p) {
            int n = snprintf(projects + used, sizeof(projects) - used, "%s%s",
                             i ? "," : "", json_string_value(p));
            if (n < 0 || (size_t)n >= sizeof(projects) - used)
                break;
            used += (size_t)n;
        }
    }
    const char *row[] = {str(v, "name"),
                         json_is_true(json_object_get(v, "default")) ? "yes"
                                                                     : "",
                         str(v, "nodes"),
                         dt,
                         mt,
                         projects};
    table_add(t, row);
}

static void qos_row(struct table *t, const json_t *v)
{
    char mt[32], g[24] = "-";
    dur(v, "max_time", mt, sizeof(mt));
    if (json_object_get(v, "max_gpus_per_user"))
        snprintf(g, sizeof(g), "%lld",
                 (long long)json_integer_value(
                     json_object_get(v, "max_gpus_per_user")));
    const char *row[] = {str(v, "name"), str(v, "priority"), mt, g};
    table_add(t, row);
}

static void print_table(const struct kind *k, const json_t *all)
{
    static const char *const phdr[] = {"NAME",     "DEFAULT",  "NODES",
                                       "DEF_TIME", "MAX_TIME", "PROJECTS"};
    static const char *const qhdr[] = {"NAME", "PRIORITY", "MAX_TIME",
                                       "MAX_GPUS_PER_USER"};
    bool part = k == &partition_kind;
    struct table *t = part ? table_create(6, phdr) : table_create(4, qhdr);
    size_t i;
    json_t *v;
    json_array_foreach (all, i, v) {
        if (part)
            partition_row(t, v);
        else
            qos_row(t, v);
    }
    table_print(t);
    table_destroy(t);
}

static int list(const struct kind *k, int argc, char **argv)
{
    struct cmd_flag flags[] = {{"json", false, NULL, false},
                               {NULL, false, NULL, false}};
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "%s list", k->cmd);
    cmd_opts_collect(cmd, k->usage, flags, argc - 1, argv + 1, NULL, 0);
    struct client *c = cmd_connect();
    json_t *ans = cmd_call(c, "GET", k->path, NULL);
    json_t *all = json_object_get(ans, k->key);
    if (flags[0].set)
        cmd_print_json(json_incref(all));
    else
        print_table(k, all);
    json_decref(ans);
    client_destroy(c);
    return 0;
}

static int show(const struct kind *k, int argc, char **argv)
{
    struct cmd_flag flags[] = {{"json", false, NULL, false},
                               {NULL, false, NULL, false}};
    char cmd[64], path[300], enc[200];
    snprintf(cmd, sizeof(cmd), "%s show", k->cmd);
    const char *name;
    if (cmd_opts_collect(cmd, k->usage, flags, argc - 1, argv + 1, &name, 1) !=
        1)
        die("usage: shoal %s show NAME [--json]", k->cmd);
    client_urlencode(name, enc, sizeof(enc));
    snprintf(path, sizeof(path), "%s/%s", k->path, enc);
    struct client *c = cmd_connect();
    json_t *v = cmd_call(c, "GET", path, NULL);
    if (flags[0].set) {
        cmd_print_json(json_incref(v));
    } else {
        json_t *one = json_pack("[O]", v);
        print_table(k, one);
        json_decref(one);
    }
    json_decref(v);
    client_destroy(c);
    return 0;
}

static int delete_one(const struct kind *k, int argc, char **argv)
{
    char cmd[64], path[300], enc[200];
    snprintf(cmd, sizeof(cmd), "%s delete", k->cmd);
    const char *name;
    if (cmd_opts_collect(cmd, k->usage, NULL, argc - 1, argv + 1, &name, 1) !=
        1)
        die("usage: shoal %s delete NAME", k->cmd);
    client_urlencode(name, enc, sizeof(enc));
    snprintf(path, sizeof(path), "%s/%s", k->path, enc);
    struct client *c = cmd_connect();
    json_decref(cmd_call(c, "DELETE", path, NULL));
    printf("%s %s deleted\n", k->cmd, name);
    client_destroy(c);
    return 0;
}

static int run(const struct kind *k, int argc, char **argv)
{
    const char *sub = cmd_opts_subcommand(k->cmd, k->usage, argc, argv);
    if (strcmp(sub, "create") == 0)
        return create(k, argc, argv);
    if (strcmp(sub, "list") == 0)
        return list(k, argc, argv);
    if (strcmp(sub, "show") == 0)
        return show(k, argc, argv);
    if (strcmp(sub, "delete") == 0)
        return delete_one(k, argc, argv);
    cmd_opts_unknown_subcommand(k->cmd, sub);
}

int cmd_partition(int argc, char **argv)
{
    return run(&partition_kind, argc, argv);
}

int cmd_qos(int argc, char **argv)
{
    return run(&qos_kind, argc, argv);
}
