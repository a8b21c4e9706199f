/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal team`, `shoal project` and `shoal user`: teams, projects, their
 * quotas and members, users, their tokens and limits, through /v1/teams,
 * /v1/projects and /v1/users. Tables for people, --json for scripts. A new
 * token is printed alone on the last line of stdout so scripts can take it
 * with `tail -n 1`; it is never shown again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_opts.h"
#include "lib/util/parse.h"

#define GPUS_MAX 1000000

/* ---- usage texts ---- */

static const char team_usage[] =
    "Usage: shoal team COMMAND ...\n"
    "Teams hold projects; a team's guaranteed GPUs are the pool its\n"
    "projects' guarantees are carved from.\n"
    "\n"
    "  shoal team create NAME [--guaranteed N] [--limit N] [--gpu-model M]\n"
    "  shoal team list [--json]\n"
    "  shoal team show NAME [--json]\n"
    "  shoal team set-quota NAME [--guaranteed N] [--limit N|none]\n"
    "                            [--gpu-model M] [--remove]\n"
    "  shoal team delete NAME     (only once it holds no projects)\n"
    "\n"
    "Every command takes --help. Changes need a cluster admin.\n";

static const char project_usage[] =
    "Usage: shoal project COMMAND ...\n"
    "Projects are what jobs are charged to; users are members of projects\n"
    "with a role: admin (also cancels any job of the project and manages\n"
    "members), member (submits, cancels own jobs) or viewer (reads).\n"
    "\n"
    "  shoal project create NAME --team T [--guaranteed N] [--limit N]\n"
    "                                     [--gpu-model M]\n"
    "  shoal project list [--team T] [--json]\n"
    "  shoal project show NAME [--json]\n"
    "  shoal project set-quota NAME [--guaranteed N] [--limit N|none]\n"
    "                               [--gpu-model M] [--remove]\n"
    "  shoal project set NAME --team T\n"
    "  shoal project delete NAME  (only without pending or running jobs)\n"
    "  shoal project add-member PROJECT USER [--role admin|member|viewer]\n"
    "  shoal project remove-member PROJECT USER\n"
    "  shoal project members PROJECT [--json]\n"
    "\n"
    "Every command takes --help.\n";

static const char user_usage[] =
    "Usage: shoal user COMMAND ...\n"
    "Users and their API tokens. A token is shown once, when it is made.\n"
    "\n"
    "  shoal user create NAME [--admin] [--project P] [--expires DUR]\n"
    "  shoal user list [--json]\n"
    "  shoal user show NAME [--json]\n"
    "  shoal user token NAME [--expires DUR]   a new token\n"
    "  shoal user tokens NAME [--json]         list tokens (ids, expiry)\n"
    "  shoal user revoke NAME [--token ID]     revoke all tokens, or one\n"
    "  shoal user set-limits NAME [--max-gpus N|none] [--max-jobs N|none]\n"
    "                             [--max-time DUR|none] [--max-pending N]\n"
    "  shoal user set NAME [--admin|--no-admin] [--project P|--no-project]\n"
    "  shoal user delete NAME\n"
    "\n"
    "Every user is a member of the project \"default\", where jobs go\n"
    "without --project, unless --project P gives them another default.\n"
    "Every command takes --help.\n";

static const char quota_options[] =
    "\n"
    "  --guaranteed N   GPUs always available to it (0..1000000)\n"
    "  --limit N|none   how many GPUs it may use at most, borrowing idle\n"
    "                   ones beyond its guarantee (none: no limit)\n"
    "  --gpu-model M    the entry for one GPU model (default: any model);\n"
    "                   one entry per model plus one for any model\n";

static void need_pos(int npos, int want, const char *what, const char *names)
{
    if (npos < want)
        die("missing %s (see shoal %s --help)", names, what);
}

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* "/v1/<kind>/<encoded name><rest>" */
static void path_of(char *buf, size_t size, const char *kind, const char *name,
                    const char *rest)
{
    char enc[400];
    client_urlencode(name, enc, sizeof(enc));
    snprintf(buf, size, "/v1/%s/%s%s", kind, enc, rest ? rest : "");
}

static json_t *call(const char *method, const char *path, json_t *body)
{
    struct client *c = cmd_connect();
    json_t *ans = cmd_call(c, method, path, body);
    client_destroy(c);
    json_decref(body);
    return ans;
}

/* ---- quotas ---- */

/* "8, H100-80GB:4" from the entries' field key ("guaranteed"/"limit"). */
static void format_quota(const json_t *quotas, const char *key, char *buf,
                         size_t size)
{
    size_t o = 0, i;
    json_t *e;
    buf[0] = '\0';
    json_array_foreach (quotas, i, e) {
        char num[32];
        json_t *v = json_object_get(e, key);
        if (json_is_integer(v))
            snprintf(num, sizeof(num), "%lld",
                     (long long)json_integer_value(v));
        else
            snprintf(num, sizeof(num), "none");
        const char *m = str(e, "gpu_model");
        o += (size_t)snprintf(buf + o, o < size ? size - o : 0, "%s%s%s%s",
                              i ? ", " : "", m ? m : "", m ? ":" : "", num);
        if (o >= size)
            break;
    }
    if (!buf[0])
        snprintf(buf, size, "-");
}

static long long gpus_arg(const char *opt, const char *s)
{
    return cmd_parse_int(opt, s, 0, GPUS_MAX);
}

/* Add the quota options to body (create: the shorthand fields; set-quota:
 * one entry's change). */
static void quota_fields(json_t *body, const struct cmd_flag *g,
                         const struct cmd_flag *l, const struct cmd_flag *m)
{
    if (g->set)
        json_object_set_new(body, "guaranteed",
                            json_integer(gpus_arg("--guaranteed", g->value)));
    if (l->set)
        json_object_set_new(body, "limit",
                            strcmp(l->value, "none") == 0
                                ? json_null()
                                : json_integer(gpus_arg("--limit", l->value)));
    if (m->set)
        json_object_set_new(
            body, "gpu_model",
            strcmp(m->value, "any") == 0 ? json_null() : json_string(m->value));
}

static void print_quota_lines(const json_t *o)
{
    size_t i;
    json_t *e;
    json_t *quotas = json_object_get(o, "quotas");
    if (json_array_size(quotas) == 0) {
        printf("%-14s none\n", "quotas:");
        return;
    }
    json_array_foreach (quotas, i, e) {
        char lim[32] = "no limit";
        json_t *l = json_object_get(e, "limit");
        if (json_is_integer(l))
            snprintf(lim, sizeof(lim), "limit %lld",
                     (long long)json_integer_value(l));
        const char *m = str(e, "gpu_model");
        printf("%-14s %s: %lld guaranteed, %s\n",
               i ? "" : "quotas:", m ? m : "any model",
               (long long)json_integer_value(json_object_get(e, "guaranteed")),
               lim);
    }
}

/* set-quota for teams and projects. */
static int set_quota(int argc, char **argv, const char *kind, const char *what,
                     const char *usage)
{
    struct cmd_flag opts[] = {
        {"guaranteed", true, NULL, false}, {"limit", true, NULL, false},
        {"gpu-model", true, NULL, false},  {"remove", false, NULL, false},
        {"json", false, NULL, false},      {NULL, false, NULL, false}};
    const char *pos[1];
    need_pos(cmd_opts_collect(what, usage, opts, argc, argv, pos, 1), 1, what,
             "the name");
    if (!opts[0].set && !opts[1].set && !opts[3].set)
        die("give --guaranteed, --limit or --remove (see shoal %s --help)",
            what);
    json_t *body = json_object();
    quota_fields(body, &opts[0], &opts[1], &opts[2]);
    if (opts[3].set)
        json_object_set_new(body, "remove", json_true());
    if (opts[2].set == false)
        json_object_set_new(body, "gpu_model", json_null());
    char path[512];
    path_of(path, sizeof(path), kind, pos[0], "/quota");
    json_t *ans = call("PATCH", path, body);
    if (opts[4].set) {
        cmd_print_json(ans);
        return 0;
    }
    printf("%-14s %s\n", "name:", str(ans, "name"));
    print_quota_lines(ans);
    json_decref(ans);
    return 0;
}

/* ---- teams ---- */

static const char team_create_usage[] =
    "Usage: shoal team create NAME [--guaranteed N] [--limit N]\n"
    "                              [--gpu-model M] [--json]\n"
    "Create a team, optionally with one quota entry.\n";
static const char team_list_usage[] =
    "Usage: shoal team list [--json]\n"
    "List teams with their projects and quotas (GUARANTEED and LIMIT list\n"
    "the entry for any model, then MODEL:N per model). Users who are not\n"
    "cluster admins see the teams of their projects.\n";
static const char team_show_usage[] =
    "Usage: shoal team show NAME [--json]\n"
    "Show one team, its quotas and its projects.\n";
static const char team_delete_usage[] =
    "Usage: shoal team delete NAME\n"
    "Delete a team that holds no projects.\n";
static const char team_quota_usage_head[] =
    "Usage: shoal team set-quota NAME [--guaranteed N] [--limit N|none]\n"
    "                                 [--gpu-model M] [--remove] [--json]\n"
    "Change one quota entry of a team (the entry for any model, or for\n"
    "--gpu-model M); --remove deletes the entry. Fields not given keep\n"
    "their value. The team's guarantee may not drop below what its\n"
    "projects already guarantee.\n";

static void print_teams(const json_t *teams)
{
    static const char *const hdr[] = {"TEAM", "PROJECTS", "GUARANTEED",
                                      "LIMIT"};
    struct table *t = table_create(4, hdr);
    size_t i;
    json_t *e;
    json_array_foreach (teams, i, e) {
        char np[16], g[256], l[256];
        snprintf(
            np, sizeof(np), "%lld",
            (long long)json_integer_value(json_object_get(e, "project_count")));
        format_quota(json_object_get(e, "quotas"), "guaranteed", g, sizeof(g));
        format_quota(json_object_get(e, "quotas"), "limit", l, sizeof(l));
        const char *row[] = {str(e, "name"), np, g, l};
        table_add(t, row);
    }
    table_print(t);
    table_destroy(t);
}

static void print_team(const json_t *o)
{
    char buf[2048];
    size_t off = 0, i;
    json_t *p;
    printf("%-14s %s\n", "name:", str(o, "name"));
    printf("%-14s %s\n", "created:", str(o, "created"));
    print_quota_lines(o);
    buf[0] = '\0';
    json_array_foreach (json_object_get(o, "projects"), i, p)
        off += (size_t)snprintf(buf + off,
                                off < sizeof(buf) ? sizeof(buf) - off : 0,
                                "%s%s", i ? ", " : "", json_string_value(p));
    printf("%-14s %s\n", "projects:", buf[0] ? buf : "none");
}

static int team_create(int argc, char **argv)
{
    char usage[1024];
    snprintf(usage, sizeof(usage), "%s%s", team_create_usage, quota_options);
    struct cmd_flag opts[] = {{"guaranteed", true, NULL, false},
                              {"limit", true, NULL, false},
                              {"gpu-model", true, NULL, false},
                              {"json", false, NULL, false},
                              {NULL, false, NULL, false}};
    const char *pos[1];
    need_pos(cmd_opts_collect("team create", usage, opts, argc, argv, pos, 1),
             1, "team create", "the team's name");
    json_t *body = json_pack("{s:s}", "name", pos[0]);
    quota_fields(body, &opts[0], &opts[1], &opts[2]);
    json_t *ans = call("POST", "/v1/teams", body);
    if (opts[3].set) {
        cmd_print_json(ans);
        return 0;
    }
    printf("created team %s\n", str(ans, "name"));
    json_decref(ans);
    return 0;
}

static int team_list(int argc, char **argv)
{
    struct cmd_flag opts[] = {{"json", false, NULL, false},
                              {NULL, false, NULL, false}};
    cmd_opts_collect("team list", team_list_usage, opts, argc, argv, NULL, 0);
    json_t *ans = call("GET", "/v1/teams", NULL);
    if (opts[0].set)
        cmd_print_json(json_incref(json_object_get(ans, "teams")));
    else
        print_teams(json_object_get(ans, "teams"));
    json_decref(ans);
    return 0;
}

static int team_show(int argc, char **argv)
{
    struct cmd_flag opts[] = {{"json", false, NULL, false},
                              {NULL, false, NULL, false}};
    const char *pos[1];
    char path[512];
    need_pos(cmd_opts_collect("team show", team_show_usage, opts, argc, argv,
                              pos, 1),
             1, "team show", "the team's name");
    path_of(path, sizeof(path), "teams", pos[0], NULL);
    json_t *ans = call("GET", path, NULL);
    if (opts[0].set) {
        cmd_print_json(ans);
        return 0;
    }
    print_team(ans);
    json_decref(ans);
    return 0;
}

static int simple_delete(int argc, char **argv, const char *kind,
                         const char *what, const char *usage, const char *noun)
{
    const char *pos[1];
    char path[512];
    need_pos(cmd_opts_collect(what, usage, NULL, argc, argv, pos, 1), 1, what,
             "the name");
    path_of(path, sizeof(path), kind, pos[0], NULL);
    json_decref(call("DELETE", path, NULL));
    printf("deleted %s %s\n", noun, pos[0]);
    return 0;
}

int cmd_team(int argc, char **argv)
{
    const char *sub = cmd_opts_subcommand("team", team_usage, argc, argv);
    argc--;
    argv++;
    if (strcmp(sub, "create") == 0)
        return team_create(argc, argv);
    if (strcmp(sub, "list") == 0)
        return team_list(argc, argv);
    if (strcmp(sub, "show") == 0)
        return team_show(argc, argv);
    if (strcmp(sub, "delete") == 0)
        return simple_delete(argc, argv, "teams", "team delete",
                             team_delete_usage, "team");
    if (strcmp(sub, "set-quota") == 0) {
        char usage[1024];
        snprintf(usage, sizeof(usage), "%s%s", team_quota_usage_head,
                 quota_options);
        return set_quota(argc, argv, "teams", "team set-quota", usage);
    }
    cmd_opts_unknown_subcommand("team", sub);
}

/* ---- projects ---- */

static const char project_create_usage[] =
    "Usage: shoal project create NAME --team T [--guaranteed N] [--limit N]\n"
    "                                 [--gpu-model M] [--json]\n"
    "Create a project in team T, optionally with one quota entry. Its\n"
    "guarantees must fit in what the team guarantees.\n";
static const char project_list_usage[] =
    "Usage: shoal project list [--team T] [--json]\n"
    "List projects with their team, members, your role and quotas. Users\n"
    "who are not cluster admins see the projects they belong to.\n";
static const char project_show_usage[] =
    "Usage: shoal project show NAME [--json]\n"
    "Show one project, its quotas and its members.\n";
static const char project_set_usage[] =
    "Usage: shoal project set NAME [--team T] [--idle-policy P] [--json]\n"
    "Move a project to another team (its guarantees must fit there), or set\n"
    "what happens to its jobs whose GPUs sit idle: none, warn, cancel,\n"
    "preempt (when others wait), or default (the controller's).\n";
static const char project_delete_usage[] =
    "Usage: shoal project delete NAME\n"
    "Delete a project and its memberships; refused while it has pending or\n"
    "running jobs. Users whose default it was fall back to \"default\".\n";
static const char project_quota_usage_head[] =
    "Usage: shoal project set-quota NAME [--guaranteed N] [--limit N|none]\n"
    "                                    [--gpu-model M] [--remove] [--json]\n"
    "Change one quota entry of a project (the entry for any model, or for\n"
    "--gpu-model M); --remove deletes the entry. Fields not given keep\n"
    "their value. Guarantees must fit in the team's.\n";
static const char add_member_usage[] =
    "Usage: shoal project add-member PROJECT USER [--role "
    "admin|member|viewer]\n"
    "Give USER a role in PROJECT (default member), or change their role.\n"
    "Cluster admins and the project's admins may do this.\n";
static const char remove_member_usage[] =
    "Usage: shoal project remove-member PROJECT USER\n"
    "Take USER out of PROJECT. Their jobs stay theirs.\n";
static const char members_usage[] =
    "Usage: shoal project members PROJECT [--json]\n"
    "List the members of a project with their roles.\n";

static void print_projects(const json_t *projects)
{
    static const char *const hdr[] = {"PROJECT",   "TEAM",       "MEMBERS",
                                      "YOUR ROLE", "GUARANTEED", "LIMIT"};
    struct table *t = table_create(6, hdr);
    size_t i;
    json_t *e;
    json_array_foreach (projects, i, e) {
        char nm[16], g[256], l[256];
        snprintf(
            nm, sizeof(nm), "%lld",
            (long long)json_integer_value(json_object_get(e, "member_count")));
        format_quota(json_object_get(e, "quotas"), "guaranteed", g, sizeof(g));
        format_quota(json_object_get(e, "quotas"), "limit", l, sizeof(l));
        const char *role = str(e, "role");
        const char *row[] = {str(e, "name"),
                             str(e, "team"),
                             nm,
                             role && strcmp(role, "none") != 0 ? role : "-",
                             g,
                             l};
        table_add(t, row);
    }
    table_print(t);
    table_destroy(t);
}

static void print_members(const json_t *members)
{
    static const char *const hdr[] = {"USER", "ROLE"};
    struct table *t = table_create(2, hdr);
    size_t i;
    json_t *e;
    json_array_foreach (members, i, e) {
        const char *row[] = {str(e, "user"), str(e, "role")};
        table_add(t, row);
    }
    table_print(t);
    table_destroy(t);
}

static void print_project(const json_t *o)
{
    printf("%-14s %s\n", "name:", str(o, "name"));
    printf("%-14s %s\n", "team:", str(o, "team"));
    printf("%-14s %s\n", "created:", str(o, "created"));
    const char *role = str(o, "role");
    if (role && strcmp(role, "none") != 0)
        printf("%-14s %s\n", "your role:", role);
    print_quota_lines(o);
    printf("members:\n");
    print_members(json_object_get(o, "members"));
}

static int project_create(int argc, char **argv)
{
    char usage[1024];
    snprintf(usage, sizeof(usage), "%s%s", project_create_usage, quota_options);
    struct cmd_flag opts[] = {
        {"team", true, NULL, false},  {"guaranteed", true, NULL, false},
        {"limit", true, NULL, false}, {"gpu-model", true, NULL, false},
        {"json", false, NULL, false}, {NULL, false, NULL, false}};
    const char *pos[1];
    need_pos(
        cmd_opts_collect("project create", usage, opts, argc, argv, pos, 1), 1,
        "project create", "the project's name");
    if (!opts[0].set)
        die("--team is required (see shoal project create --help)");
    json_t *body =
        json_pack("{s:s, s:s}", "name", pos[0], "team", opts[0].value);
    quota_fields(body, &opts[1], &opts[2], &opts[3]);
    json_t *ans = call("POST", "/v1/projects", body);
    if (opts[4].set) {
        cmd_print_json(ans);
        return 0;
    }
    printf("created project %s in team %s\n", str(ans, "name"),
           str(ans, "team"));
    json_decref(ans);
    return 0;
}

static int project_list(int argc, char **argv)
{
    struct cmd_flag opts[] = {{"team", true, NULL, false},
                              {"json", false, NULL, false},
                              {NULL, false, NULL, false}};
    cmd_opts_collect("project list", project_list_usage, opts, argc, argv, NULL,
                     0);
    char path[512] = "/v1/projects";
    if (opts[0].set) {
        char enc[400];
        client_urlencode(opts[0].value, enc, sizeof(enc));
        snprintf(path, sizeof(path), "/v1/projects?team=%s", enc);
    }
    json_t *ans = call("GET", path, NULL);
    if (opts[1].set)
        cmd_print_json(json_incref(json_object_get(ans, "projects")));
    else
        print_projects(json_object_get(ans, "projects"));
    json_decref(ans);
    return 0;
}

static int project_show(int argc, char **argv, bool members_only)
{
    struct cmd_flag opts[] = {{"json", false, NULL, false},
                              {NULL, false, NULL, false}};
    const char *pos[1];
    char path[512];
    const char *what = members_only ? "project members" : "project show";
    need_pos(cmd_opts_collect(what,
                              members_only ? members_usage : project_show_usage,
                              opts, argc, argv, pos, 1),
             1, what, "the project's name");
    path_of(path, sizeof(path), "projects", pos[0],
            members_only ? "/members" : NULL);
    json_t *ans = call("GET", path, NULL);
    if (members_only) {
        if (opts[0].set)
            cmd_print_json(json_incref(json_object_get(ans, "members")));
        else
            print_members(json_object_get(ans, "members"));
        json_decref(ans);
        return 0;
    }
    if (opts[0].set) {
        cmd_print_json(ans);
        return 0;
    }
    print_project(ans);
    json_decref(ans);
    return 0;
}

static int project_set(int argc, char **argv)
{
    struct cmd_flag opts[] = {{"team", true, NULL, false},
                              {"json", false, NULL, false},
                              {"idle-policy", true, NULL, false},
                              {NULL, false, NULL, false}};
    const char *pos[1];
    char path[512];
    need_pos(cmd_opts_collect("project set", project_set_usage, opts, argc,
                              argv, pos, 1),
             1, "project set", "the project's name");
    if (!opts[0].set && !opts[2].set)
        die("nothing to change: give --team T or --idle-policy P (see shoal "
            "project set --help)");
    json_t *body = json_object();
    if (opts[0].set)
        json_object_set_new(body, "team", json_string(opts[0].value));
    if (opts[2].set) {
        const char *p = opts[2].value;
        if (strcmp(p, "none") && strcmp(p, "warn") && strcmp(p, "cancel") &&
            strcmp(p, "preempt") && strcmp(p, "default"))
            die("--idle-policy must be none, warn, cancel, preempt or default");
        json_object_set_new(body, "idle_policy",
                            strcmp(p, "default") ? json_string(p)
                                                 : json_null());
    }
    path_of(path, sizeof(path), "projects", pos[0], NULL);
    json_t *ans = call("PATCH", path, body);
    if (opts[1].set) {
        cmd_print_json(ans);
        return 0;
    }
    const char *idle = str(ans, "idle_policy");
    printf("project %s is in team %s; idle policy %s\n", str(ans, "name"),
           str(ans, "team"), idle ? idle : "default");
    json_decref(ans);
    return 0;
}

static int project_member(int argc, char **argv, bool add)
{
    struct cmd_flag opts[] = {{"role", true, NULL, false},
                              {NULL, false, NULL, false}};
    const char *pos[2];
    const char *what = add ? "project add-member" : "project remove-member";
    int n = cmd_opts_collect(what, add ? add_member_usage : remove_member_usage,
                             add ? opts : NULL, argc, argv, pos, 2);
    need_pos(n, 2, what, "PROJECT and USER");
    char rest[300], enc[200];
    client_urlencode(pos[1], enc, sizeof(enc));
    snprintf(rest, sizeof(rest), "/members/%s", enc);
    char path[600];
    path_of(path, sizeof(path), "projects", pos[0], rest);
    if (!add) {
        json_decref(call("DELETE", path, NULL));
        printf("removed %s from project %s\n", pos[1], pos[0]);
        return 0;
    }
    const char *role = opts[0].set ? opts[0].value : "member";
    if (strcmp(role, "admin") != 0 && strcmp(role, "member") != 0 &&
        strcmp(role, "viewer") != 0)
        die("--role must be admin, member or viewer, not '%s'", role);
    json_t *ans = call("PUT", path, json_pack("{s:s}", "role", role));
    printf("%s is %s %s of project %s\n", str(ans, "user"),
           strcmp(role, "admin") == 0 ? "an" : "a", str(ans, "role"),
           str(ans, "project"));
    json_decref(ans);
    return 0;
}

int cmd_project(int argc, char **argv)
{
    const char *sub = cmd_opts_subcommand("project", project_usage, argc, argv);
    argc--;
    argv++;
    if (strcmp(sub, "create") == 0)
        return project_create(argc, argv);
    if (strcmp(sub, "list") == 0)
        return project_list(argc, argv);
    if (strcmp(sub, "show") == 0)
        return project_show(argc, argv, false);
    if (strcmp(sub, "members") == 0)
        return project_show(argc, argv, true);
    if (strcmp(sub, "set") == 0)
        return project_set(argc, argv);
    if (strcmp(sub, "delete") == 0)
        return simple_delete(argc, argv, "projects", "project delete",
                             project_delete_usage, "project");
    if (strcmp(sub, "set-quota") == 0) {
        char usage[1024];
        snprintf(usage, sizeof(usage), "%s%s", project_quota_usage_head,
                 quota_options);
        return set_quota(argc, argv, "projects", "project set-quota", usage);
    }
    if (strcmp(sub, "add-member") == 0)
        return project_member(argc, argv, true);
    if (strcmp(sub, "remove-member") == 0)
        return project_member(argc, argv, false);
    cmd_opts_unknown_subcommand("project", sub);
}

/* ---- users ---- */

static const char user_create_usage[] =
    "Usage: shoal user create NAME [--admin] [--project P] [--expires DUR]\n"
    "                              [--json]\n"
    "Create a user and its first token, printed alone on the last line of\n"
    "stdout (shown only this once).\n"
    "\n"
    "  --admin          a cluster admin\n"
    "  --project P      their default project (they become a member);\n"
    "                   without it, jobs go to the project \"default\"\n"
    "  --expires DUR    the token stops working after DUR (e.g. 30d)\n"
    "  --json           print the user and token as JSON\n";
static const char user_list_usage[] =
    "Usage: shoal user list [--json]\n"
    "List users with their projects, limits and token counts (cluster\n"
    "admins).\n";
static const char user_show_usage[] =
    "Usage: shoal user show NAME [--json]\n"
    "Show one user (yourself, or anyone for cluster admins).\n";
static const char user_token_usage[] =
    "Usage: shoal user token NAME [--expires DUR] [--json]\n"
    "Issue a new token for NAME (cluster admins), printed alone on the last\n"
    "line of stdout; older tokens stay valid until revoked.\n";
static const char user_tokens_usage[] =
    "Usage: shoal user tokens NAME [--json]\n"
    "List NAME's tokens: id, created, expiry (never the token itself).\n";
static const char user_revoke_usage[] =
    "Usage: shoal user revoke NAME [--token ID]\n"
    "Revoke every token of NAME, or only the one with id ID (see shoal user\n"
    "tokens). Users may revoke their own; cluster admins anyone's.\n";
static const char user_limits_usage[] =
    "Usage: shoal user set-limits NAME [--max-gpus N|none]\n"
    "                                  [--max-jobs N|none]\n"
    "                                  [--max-time DUR|none]\n"
    "                                  [--max-pending N|default]\n"
    "Set per-user limits: GPUs and jobs running at once, and the longest\n"
    "--time a job may ask for (none: no limit), and the most pending jobs\n"
    "(array tasks count one each; default: shoald's --max-pending-per-user).\n"
    "Limits not given keep their value.\n";
static const char user_set_usage[] =
    "Usage: shoal user set NAME [--admin|--no-admin] [--project "
    "P|--no-project]\n"
    "Make NAME a cluster admin or not; set their default project (they\n"
    "become a member when they are not one), or clear it (jobs then go to\n"
    "\"default\").\n";
static const char user_delete_usage[] =
    "Usage: shoal user delete NAME\n"
    "Delete a user, its tokens and memberships; refused while it has\n"
    "pending or running jobs, or when it is the last cluster admin.\n";

/* Seconds from a --expires/--max-time value; "none" gives 0. */
static long long duration_arg(const char *opt, const char *s, bool none_ok)
{
    int64_t v;
    struct sh_error err;
    if (none_ok && strcmp(s, "none") == 0)
        return 0;
    if (parse_duration(opt, s, &v, &err) < 0)
        die("%s", err.msg);
    return v;
}

static void print_token(const json_t *ans)
{
    const char *exp = str(ans, "expires");
    printf("token for %s (id %s, %s%s; shown only this once):\n",
           str(ans, "user"), str(ans, "token_id"),
           exp ? "expires " : "never expires", exp ? exp : "");
    printf("%s\n", str(ans, "token"));
}

static void format_limits(const json_t *l, char *buf, size_t size)
{
    static const char *const keys[] = {"max_gpus", "max_jobs", "max_time_s",
                                       "max_pending"};
    static const char *const names[] = {"gpus", "jobs", "time", "pending"};
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < 4; i++) {
        json_t *v = json_object_get(l, keys[i]);
        if (!json_is_integer(v))
            continue;
        char val[32];
        if (i == 2)
            format_duration(json_integer_value(v), val, sizeof(val));
        else
            snprintf(val, sizeof(val), "%lld",
                     (long long)json_integer_value(v));
        o += (size_t)snprintf(buf + o, o < size ? size - o : 0, "%s%s=%s",
                              o ? " " : "", names[i], val);
    }
    if (!buf[0])
        snprintf(buf, size, "-");
}

static void format_roles(const json_t *projects, char *buf, size_t size)
{
    size_t o = 0, i;
    json_t *e;
    buf[0] = '\0';
    json_array_foreach (projects, i, e) {
        o += (size_t)snprintf(buf + o, o < size ? size - o : 0, "%s%s:%s",
                              i ? "," : "", str(e, "project"), str(e, "role"));
        if (o >= size)
            break;
    }
    if (!buf[0])
        snprintf(buf, size, "-");
}

static void print_users(const json_t *users)
{
    static const char *const hdr[] = {"USER",     "ADMIN",  "DEFAULT",
                                      "PROJECTS", "LIMITS", "TOKENS"};
    struct table *t = table_create(6, hdr);
    size_t i;
    json_t *e;
    json_array_foreach (users, i, e) {
        char roles[1024], limits[128], tokens[16];
        format_roles(json_object_get(e, "projects"), roles, sizeof(roles));
        format_limits(json_object_get(e, "limits"), limits, sizeof(limits));
        snprintf(
            tokens, sizeof(tokens), "%lld",
            (long long)json_integer_value(json_object_get(e, "token_count")));
        const char *dp = str(e, "default_project");
        const char *row[] = {str(e, "name"),
                             json_is_true(json_object_get(e, "admin")) ? "yes"
                                                                       : "no",
                             dp ? dp : "(default)",
                             roles,
                             limits,
                             tokens};
        table_add(t, row);
    }
    table_print(t);
    table_destroy(t);
}

static void print_user(const json_t *o)
{
    char buf[2048];
    const char *dp = str(o, "default_project");
    printf("%-16s %s\n", "name:", str(o, "name"));
    printf("%-16s %s\n", "cluster admin:",
           json_is_true(json_object_get(o, "admin")) ? "yes" : "no");
    printf("%-16s %s\n", "created:", str(o, "created"));
    printf("%-16s %s\n",
           "default project:", dp ? dp : "(none: the project \"default\")");
    format_roles(json_object_get(o, "projects"), buf, sizeof(buf));
    printf("%-16s %s\n", "projects:", buf);
    format_limits(json_object_get(o, "limits"), buf, sizeof(buf));
    printf("%-16s %s\n", "limits:", buf);
    printf("%-16s %lld\n", "tokens:",
           (long long)json_integer_value(json_object_get(o, "token_count")));
}

static int user_create(int argc, char **argv)
{
    struct cmd_flag opts[] = {{"admin", false, NULL, false},
                              {"project", true, NULL, false},
                              {"expires", true, NULL, false},
                              {"json", false, NULL, false},
                              {NULL, false, NULL, false}};
    const char *pos[1];
    need_pos(cmd_opts_collect("user create", user_create_usage, opts, argc,
                              argv, pos, 1),
             1, "user create", "the user's name");
    json_t *body =
        json_pack("{s:s, s:b}", "name", pos[0], "admin", opts[0].set);
    if (opts[1].set)
        json_object_set_new(body, "default_project",
                            json_string(opts[1].value));
    if (opts[2].set)
        json_object_set_new(
            body, "expires_in_s",
            json_integer(duration_arg("--expires", opts[2].value, false)));
    json_t *ans = call("POST", "/v1/users", body);
    if (opts[3].set) {
        cmd_print_json(ans);
        return 0;
    }
    const char *dp = str(ans, "default_project");
    printf("created user %s%s; default project %s\n", str(ans, "name"),
           json_is_true(json_object_get(ans, "admin")) ? " (cluster admin)"
                                                       : "",
           dp ? dp : "default");
    print_token(ans);
    json_decref(ans);
    return 0;
}

static int user_list(int argc, char **argv)
{
    struct cmd_flag opts[] = {{"json", false, NULL, false},
                              {NULL, false, NULL, false}};
    cmd_opts_collect("user list", user_list_usage, opts, argc, argv, NULL, 0);
    json_t *ans = call("GET", "/v1/users", NULL);
    if (opts[0].set)
        cmd_print_json(json_incref(json_object_get(ans, "users")));
    else
        print_users(json_object_get(ans, "users"));
    json_decref(ans);
    return 0;
}

static int user_show(int argc, char **argv)
{
    struct cmd_flag opts[] = {{"json", false, NULL, false},
                              {NULL, false, NULL, false}};
    const char *pos[1];
    char path[512];
    need_pos(cmd_opts_collect("user show", user_show_usage, opts, argc, argv,
                              pos, 1),
             1, "user show", "the user's name");
    path_of(path, sizeof(path), "users", pos[0], NULL);
    json_t *ans = call("GET", path, NULL);
    if (opts[0].set) {
        cmd_print_json(ans);
        return 0;
    }
    print_user(ans);
    json_decref(ans);
    return 0;
}

static int user_token(int argc, char **argv)
{
    struct cmd_flag opts[] = {{"expires", true, NULL, false},
                              {"json", false, NULL, false},
                              {NULL, false, NULL, false}};
    const char *pos[1];
    char path[512];
    need_pos(cmd_opts_collect("user token", user_token_usage, opts, argc, argv,
                              pos, 1),
             1, "user token", "the user's name");
    json_t *body = json_object();
    if (opts[0].set)
        json_object_set_new(
            body, "expires_in_s",
            json_integer(duration_arg("--expires", opts[0].value, false)));
    path_of(path, sizeof(path), "users", pos[0], "/tokens");
    json_t *ans = call("POST", path, body);
    if (opts[1].set) {
        cmd_print_json(ans);
        return 0;
    }
    print_token(ans);
    json_decref(ans);
    return 0;
}

static int user_tokens(int argc, char **argv)
{
    struct cmd_flag opts[] = {{"json", false, NULL, false},
                              {NULL, false, NULL, false}};
    const char *pos[1];
    char path[512];
    need_pos(cmd_opts_collect("user tokens", user_tokens_usage, opts, argc,
                              argv, pos, 1),
             1, "user tokens", "the user's name");
    path_of(path, sizeof(path), "users", pos[0], "/tokens");
    json_t *ans = call("GET", path, NULL);
    json_t *tokens = json_object_get(ans, "tokens");
    if (opts[0].set) {
        cmd_print_json(json_incref(tokens));
        json_decref(ans);
        return 0;
    }
    static const char *const hdr[] = {"ID", "CREATED", "EXPIRES"};
    struct table *t = table_create(3, hdr);
    size_t i;
    json_t *e;
    json_array_foreach (tokens, i, e) {
        char exp[64];
        const char *x = str(e, "expires");
        snprintf(exp, sizeof(exp), "%s%s", x ? x : "never",
                 json_is_true(json_object_get(e, "expired")) ? " (expired)"
                                                             : "");
        const char *row[] = {str(e, "id"), str(e, "created"), exp};
        table_add(t, row);
    }
    table_print(t);
    table_destroy(t);
    json_decref(ans);
    return 0;
}

static int user_revoke(int argc, char **argv)
{
    struct cmd_flag opts[] = {{"token", true, NULL, false},
                              {NULL, false, NULL, false}};
    const char *pos[1];
    char path[600], rest[200], enc[150];
    need_pos(cmd_opts_collect("user revoke", user_revoke_usage, opts, argc,
                              argv, pos, 1),
             1, "user revoke", "the user's name");
    if (opts[0].set) {
        client_urlencode(opts[0].value, enc, sizeof(enc));
        snprintf(rest, sizeof(rest), "/tokens/%s", enc);
    } else {
        snprintf(rest, sizeof(rest), "/tokens");
    }
    path_of(path, sizeof(path), "users", pos[0], rest);
    json_t *ans = call("DELETE", path, NULL);
    printf("revoked %lld token(s) of %s\n",
           (long long)json_integer_value(json_object_get(ans, "revoked")),
           pos[0]);
    json_decref(ans);
    return 0;
}

static int user_set_limits(int argc, char **argv)
{
    struct cmd_flag opts[] = {
        {"max-gpus", true, NULL, false},    {"max-jobs", true, NULL, false},
        {"max-time", true, NULL, false},    {"json", false, NULL, false},
        {"max-pending", true, NULL, false}, {NULL, false, NULL, false}};
    const char *pos[1];
    char path[512];
    need_pos(cmd_opts_collect("user set-limits", user_limits_usage, opts, argc,
                              argv, pos, 1),
             1, "user set-limits", "the user's name");
    if (!opts[0].set && !opts[1].set && !opts[2].set && !opts[4].set)
        die("give --max-gpus, --max-jobs, --max-time or --max-pending (see "
            "shoal user set-limits --help)");
    json_t *body = json_object();
    const char *keys[] = {"max_gpus", "max_jobs"};
    for (int i = 0; i < 2; i++) {
        if (!opts[i].set)
            continue;
        char opt[16];
        snprintf(opt, sizeof(opt), "--%s", opts[i].name);
        json_object_set_new(
            body, keys[i],
            strcmp(opts[i].value, "none") == 0
                ? json_null()
                : json_integer(cmd_parse_int(opt, opts[i].value, 0, GPUS_MAX)));
    }
    if (opts[2].set) {
        long long s = duration_arg("--max-time", opts[2].value, true);
        json_object_set_new(body, "max_time_s",
                            s ? json_integer(s) : json_null());
    }
    if (opts[4].set)
        json_object_set_new(
            body, "max_pending",
            strcmp(opts[4].value, "default") == 0
                ? json_null()
                : json_integer(cmd_parse_int("--max-pending", opts[4].value, 1,
                                             10000000)));
    path_of(path, sizeof(path), "users", pos[0], "/limits");
    json_t *ans = call("PATCH", path, body);
    if (opts[3].set) {
        cmd_print_json(ans);
        return 0;
    }
    char buf[128];
    format_limits(json_object_get(ans, "limits"), buf, sizeof(buf));
    printf("limits of %s: %s\n", pos[0], strcmp(buf, "-") == 0 ? "none" : buf);
    json_decref(ans);
    return 0;
}

static int user_set(int argc, char **argv)
{
    struct cmd_flag opts[] = {
        {"admin", false, NULL, false},  {"no-admin", false, NULL, false},
        {"project", true, NULL, false}, {"no-project", false, NULL, false},
        {"json", false, NULL, false},   {NULL, false, NULL, false}};
    const char *pos[1];
    char path[512];
    need_pos(
        cmd_opts_collect("user set", user_set_usage, opts, argc, argv, pos, 1),
        1, "user set", "the user's name");
    if ((opts[0].set && opts[1].set) || (opts[2].set && opts[3].set))
        die("contradictory options (see shoal user set --help)");
    json_t *body = json_object();
    if (opts[0].set || opts[1].set)
        json_object_set_new(body, "admin", json_boolean(opts[0].set));
    if (opts[2].set)
        json_object_set_new(body, "default_project",
                            json_string(opts[2].value));
    if (opts[3].set)
        json_object_set_new(body, "default_project", json_null());
    if (json_object_size(body) == 0) {
        json_decref(body);
        die("nothing to change (see shoal user set --help)");
    }
    path_of(path, sizeof(path), "users", pos[0], NULL);
    json_t *ans = call("PATCH", path, body);
    if (opts[4].set) {
        cmd_print_json(ans);
        return 0;
    }
    print_user(ans);
    json_decref(ans);
    return 0;
}

int cmd_user(int argc, char **argv)
{
    const char *sub = cmd_opts_subcommand("user", user_usage, argc, argv);
    argc--;
    argv++;
    if (strcmp(sub, "create") == 0)
        return user_create(argc, argv);
    if (strcmp(sub, "list") == 0)
        return user_list(argc, argv);
    if (strcmp(sub, "show") == 0)
        return user_show(argc, argv);
    if (strcmp(sub, "token") == 0)
        return user_token(argc, argv);
    if (strcmp(sub, "tokens") == 0)
        return user_tokens(argc, argv);
    if (strcmp(sub, "revoke") == 0)
        return user_revoke(argc, argv);
    if (strcmp(sub, "set-limits") == 0)
        return user_set_limits(argc, argv);
    if (strcmp(sub, "set") == 0)
        return user_set(argc, argv);
    if (strcmp(sub, "delete") == 0)
        return simple_delete(argc, argv, "users", "user delete",
                             user_delete_usage, "user");
    cmd_opts_unknown_subcommand("user", sub);
}
