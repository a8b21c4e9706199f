/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal secret create|list|show|delete`: credentials volumes use, stored
 * sealed by the controller and never shown back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_opts.h"

static const char secret_usage[] =
    "Usage: shoal secret create NAME [--project P] KEY=VALUE... | "
    "--from-file KEY=PATH...\n"
    "       shoal secret list [--json]\n"
    "       shoal secret show NAME [--project P | --cluster] [--json]\n"
    "       shoal secret delete NAME [--project P | --cluster]\n"
    "A secret holds credentials, e.g. an S3 volume's access_key and\n"
    "secret_key. The controller stores values encrypted and never shows\n"
    "them back: listings give the names of the keys only. KEY=- reads the\n"
    "value from standard input (one line), so it stays out of your shell\n"
    "history. A secret belongs to one project (--project; its admins\n"
    "manage it) or to the whole cluster (cluster admins). Names are per\n"
    "project: show and delete find the one you may see, or the one of\n"
    "--project P (--cluster: the cluster-wide one) when several projects\n"
    "have one of that name.\n"
    "A secret with registry=HOST[:PORT], username and password holds the\n"
    "credentials the project's jobs pull images from that registry with\n"
    "(a project's own before the cluster's).\n";

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* The value of KEY=VALUE, KEY=- (stdin) or, with from_file, KEY=PATH. */
static void add_entry(json_t *data, const char *arg, bool from_file)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        die("'%s' must be KEY=VALUE", arg);
    char key[128];
    size_t kn = (size_t)(eq - arg);
    if (kn >= sizeof(key))
        die("key of '%.20s...' is too long", arg);
    memcpy(key, arg, kn);
    key[kn] = '\0';
    char buf[8192];
    const char *value = eq + 1;
    FILE *f = NULL;
    if (from_file && !(f = fopen(value, "re")))
        die("--from-file %s: cannot read %s", key, value);
    if (!from_file && strcmp(value, "-") == 0)
        f = stdin;
    if (f) {
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        if (f != stdin)
            fclose(f);
        buf[n] = '\0';
        buf[strcspn(buf, "\r\n")] = '\0';
        value = buf;
    }
    json_object_set_new(data, key, json_string(value));
}

static int create(int argc, char **argv)
{
    json_t *body = json_object();
    json_t *data = json_object();
    const char *name = NULL;
    static const struct option longs[] = {
        {"project", required_argument, NULL, 'p'},
        {"from-file", required_argument, NULL, 'f'},
        {NULL, 0, NULL, 0},
    };
    struct cmd_opts p;
    cmd_opts_init(&p, "secret create", secret_usage, longs, NULL, false,
                  argc - 1, argv + 1);
    int o;
    while ((o = cmd_opts_next(&p)) != -1) {
        if (o == 'p')
            json_object_set_new(body, "project", json_string(p.arg));
        else if (o == 'f')
            add_entry(data, p.arg, true);
        else if (!name)
            name = p.arg; /* the first argument: NAME */
        else
            add_entry(data, p.arg, false); /* then KEY=VALUE */
    }
    if (!name ||
        (json_object_size(data) == 0 && !json_object_get(body, "project")))
        die("usage: shoal secret create NAME [--project P] KEY=VALUE...");
    json_object_set_new(body, "name", json_string(name));
    json_object_set_new(body, "data", data);
    struct client *c = cmd_connect();
    json_t *ans = cmd_call(c, "POST", "/v1/secrets", body);
    printf("secret %s created\n", str(ans, "name"));
    json_decref(ans);
    json_decref(body);
    client_destroy(c);
    return 0;
}

static void keys_of(const json_t *s, char *buf, size_t size)
{
    size_t i, o = 0;
    json_t *k;
    buf[0] = '\0';
    json_array_foreach (json_object_get(s, "keys"), i, k)
        o += (size_t)snprintf(buf + o, o < size ? size - o : 0, "%s%s",
                              i ? "," : "", json_string_value(k));
}

static int list(int argc, char **argv)
{
    struct cmd_flag flags[] = {{"json", false, NULL, false},
                               {NULL, false, NULL, false}};
    cmd_opts_collect("secret list", secret_usage, flags, argc - 1, argv + 1,
                     NULL, 0);
    bool json_out = flags[0].set;
    struct client *c = cmd_connect();
    json_t *ans = cmd_call(c, "GET", "/v1/secrets", NULL);
    json_t *list = json_object_get(ans, "secrets");
    if (json_out) {
        cmd_print_json(json_incref(list));
    } else {
        static const char *const hdr[] = {"NAME", "PROJECT", "KEYS"};
        struct table *t = table_create(3, hdr);
        size_t i;
        json_t *s;
        json_array_foreach (list, i, s) {
            char keys[1024];
            keys_of(s, keys, sizeof(keys));
            const char *row[] = {str(s, "name"),
                                 str(s, "project") ?: "(cluster)", keys};
            table_add(t, row);
        }
        table_print(t);
        table_destroy(t);
    }
    json_decref(ans);
    client_destroy(c);
    return 0;
}

/* /v1/secrets/NAME, with ?project= when --project or --cluster says. */
static void secret_path(char *path, size_t size, const char *name,
                        const struct cmd_flag *project,
                        const struct cmd_flag *cluster)
{
    char enc[200], penc[200] = "";
    if (project->set && cluster->set)
        die("--project and --cluster exclude each other");
    client_urlencode(name, enc, sizeof(enc));
    if (project->set)
        client_urlencode(project->value, penc, sizeof(penc));
    snprintf(path, size, "/v1/secrets/%s%s%s", enc,
             project->set || cluster->set ? "?project=" : "", penc);
}

static int show(int argc, char **argv)
{
    struct cmd_flag flags[] = {{"json", false, NULL, false},
                               {"project", true, NULL, false},
                               {"cluster", false, NULL, false},
                               {NULL, false, NULL, false}};
    const char *name;
    if (cmd_opts_collect("secret show", secret_usage, flags, argc - 1, argv + 1,
                         &name, 1) != 1)
        die("usage: shoal secret show NAME [--project P | --cluster] "
            "[--json]");
    char path[700];
    secret_path(path, sizeof(path), name, &flags[1], &flags[2]);
    struct client *c = cmd_connect();
    json_t *s = cmd_call(c, "GET", path, NULL);
    if (flags[0].set) {
        cmd_print_json(json_incref(s));
    } else {
        char keys[1024];
        keys_of(s, keys, sizeof(keys));
        printf("Name:      %s\nProject:   %s\nKeys:      %s (values are "
               "never shown)\nCreated:   by %s\n",
               str(s, "name"), str(s, "project") ?: "(cluster-wide)", keys,
               str(s, "created_by") ?: "-");
    }
    json_decref(s);
    client_destroy(c);
    return 0;
}

static int delete (int argc, char **argv)
{
    struct cmd_flag flags[] = {{"project", true, NULL, false},
                               {"cluster", false, NULL, false},
                               {NULL, false, NULL, false}};
    const char *name;
    if (cmd_opts_collect("secret delete", secret_usage, flags, argc - 1,
                         argv + 1, &name, 1) != 1)
        die("usage: shoal secret delete NAME [--project P | --cluster]");
    char path[700];
    secret_path(path, sizeof(path), name, &flags[0], &flags[1]);
    struct client *c = cmd_connect();
    json_decref(cmd_call(c, "DELETE", path, NULL));
    printf("secret %s deleted\n", name);
    client_destroy(c);
    return 0;
}

int cmd_secret(int argc, char **argv)
{
    const char *sub = cmd_opts_subcommand("secret", secret_usage, argc, argv);
    if (strcmp(sub, "create") == 0)
        return create(argc, argv);
    if (strcmp(sub, "list") == 0)
        return list(argc, argv);
    if (strcmp(sub, "show") == 0)
        return show(argc, argv);
    if (strcmp(sub, "delete") == 0)
        return delete (argc, argv);
    cmd_opts_unknown_subcommand("secret", sub);
}
