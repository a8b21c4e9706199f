/* SPDX-License-Identifier: Apache-2.0 */
/* Configuration files as command-line options (config.h). */
#include "lib/config/config.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A physical line longer than this is refused: libinih would cut it. */
#define LINE_MAX_BYTES (INI_MAX_LINE - 2)

struct reader {
    FILE *f;          /* NULL: text */
    const char *text; /* what is left of it */
    int line;         /* of what was read last */
    bool at_start;    /* the next read starts a line */
    int long_line;    /* the first line too long, 0 if none */
};

struct parse {
    struct reader *r;
    const char *name;
    const struct option *opts;
    const bool *on_command_line; /* per option */
    struct config_args *out;
    struct sh_error *err;
    bool failed;
};

static char *own(struct config_args *a, char *s)
{
    if (!s)
        return NULL;
    char **n = realloc(a->own, sizeof(*n) * (size_t)(a->nown + 1));
    if (!n) {
        free(s);
        return NULL;
    }
    a->own = n;
    a->own[a->nown++] = s;
    return s;
}

static int push(struct config_args *a, char *arg, char *where)
{
    char **v = realloc(a->argv, sizeof(*v) * (size_t)(a->argc + 2));
    if (!v)
        return -1;
    a->argv = v;
    char **w = realloc(a->where, sizeof(*w) * (size_t)(a->argc + 2));
    if (!w)
        return -1;
    a->where = w;
    a->argv[a->argc] = arg;
    a->where[a->argc] = where;
    a->argc++;
    a->argv[a->argc] = NULL;
    a->where[a->argc] = NULL;
    return 0;
}

static char *read_line(char *str, int num, void *stream)
{
    struct reader *r = stream;
    char *s;
    if (r->f) {
        s = fgets(str, num, r->f);
    } else {
        if (!*r->text)
            return NULL;
        size_t n = strcspn(r->text, "\n");
        if (r->text[n] == '\n')
            n++;
        if (n > (size_t)num - 1)
            n = (size_t)num - 1;
        memcpy(str, r->text, n);
        str[n] = '\0';
        r->text += n;
        s = str;
    }
    if (!s)
        return NULL;
    if (r->at_start)
        r->line++;
    size_t len = strlen(s);
    r->at_start = len > 0 && s[len - 1] == '\n';
    /* A line that fills the buffer without its end: too long. */
    if (!r->at_start && len >= (size_t)LINE_MAX_BYTES && !r->long_line)
        r->long_line = r->line;
    return s;
}

static bool parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return (*out = true);
        if (strcasecmp(v, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

static int on_entry(void *user, const char *section, const char *key,
                    const char *value)
{
    struct parse *p = user;
    int line = p->r->line;
    if (p->failed)
        return 0;
    if (section && *section) {
        sh_errorf(p->err, SH_EINVAL,
                  "%s:%d: sections are not used here ([%s]): every key is "
                  "an option's long name",
                  p->name, line, section);
        goto fail;
    }
    int idx = -1;
    for (int i = 0; p->opts[i].name; i++) {
        if (strcmp(p->opts[i].name, key) == 0 && strcmp(key, "help") != 0) {
            idx = i;
            break;
        }
    }
    if (idx < 0) {
        sh_errorf(p->err, SH_EINVAL,
                  "%s:%d: unknown key '%s' (keys are the long options of "
                  "--help, without the dashes)",
                  p->name, line, key);
        goto fail;
    }
    char *where = NULL;
    if (asprintf(&where, "%s:%d: ", p->name, line) < 0)
        where = NULL;
    if (!own(p->out, where)) {
        sh_errorf(p->err, SH_EINTERNAL, "out of memory");
        goto fail;
    }
    char *arg = NULL;
    if (p->opts[idx].has_arg == no_argument) {
        bool on;
        if (!parse_bool(value, &on)) {
            sh_errorf(p->err, SH_EINVAL,
                      "%s:%d: %s must be true or false, not '%s'", p->name,
                      line, key, value);
            goto fail;
        }
        if (!on || p->on_command_line[idx])
            return 1;
        if (asprintf(&arg, "--%s", key) < 0)
            arg = NULL;
    } else {
        if (!*value) {
            sh_errorf(p->err, SH_EINVAL, "%s:%d: %s needs a value", p->name,
                      line, key);
            goto fail;
        }
        if (p->on_command_line[idx])
            return 1;
        if (asprintf(&arg, "--%s=%s", key, value) < 0)
            arg = NULL;
    }
    if (!own(p->out, arg) || push(p->out, arg, where) < 0) {
        sh_errorf(p->err, SH_EINTERNAL, "out of memory");
        goto fail;
    }
    return 1;
fail:
    p->failed = true;
    return 0;
}

void config_args_free(struct config_args *a)
{
    for (int i = 0; i < a->nown; i++)
        free(a->own[i]);
    free(a->own);
    free(a->argv);
    free(a->where);
    free(a->path);
    memset(a, 0, sizeof(*a));
}

const char *config_where(const struct config_args *a, int index)
{
    if (!a || index < 0 || index >= a->argc || !a->where[index])
        return "";
    return a->where[index];
}

static int count_opts(const struct option *opts)
{
    int n = 0;
    while (opts[n].name)
        n++;
    return n;
}

/* Parses the file (or text) into out, after out's argv[0]. */
static int parse_into(struct reader *r, const char *name,
                      const struct option *opts, const bool *on_cmdline,
                      struct config_args *out, struct sh_error *err)
{
    struct parse p = {.r = r,
                      .name = name,
                      .opts = opts,
                      .on_command_line = on_cmdline,
                      .out = out,
                      .err = err};
    r->at_start = true;
    int rc = ini_parse_stream(read_line, r, on_entry, &p);
    if (r->long_line)
        return sh_errorf(err, SH_EINVAL, "%s:%d: line longer than %d bytes",
                         name, r->long_line, LINE_MAX_BYTES);
    if (p.failed)
        return -1;
    if (rc < 0)
        return sh_errorf(err, SH_EINVAL, "%s: cannot read it", name);
    if (rc > 0)
        return sh_errorf(err, SH_EINVAL,
                         "%s:%d: not a `key = value` line nor a comment", name,
                         rc);
    return 0;
}

int config_load_string(const char *text, const char *name,
                       const struct option *opts, const char *argv0,
                       struct config_args *out, struct sh_error *err)
{
    memset(out, 0, sizeof(*out));
    int n = count_opts(opts);
    bool *none = calloc((size_t)n + 1, 1);
    char *a0 = own(out, strdup(argv0));
    if (!none || !a0 || push(out, a0, NULL) < 0) {
        free(none);
        config_args_free(out);
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    struct reader r = {.text = text};
    int rc = parse_into(&r, name, opts, none, out, err);
    free(none);
    if (rc < 0)
        config_args_free(out);
    return rc;
}

/* Which options the command line gives: getopt_long over a copy of it,
 * quietly (the program's own pass reports mistakes). */
static void command_line_options(const struct option *opts, int argc,
                                 char **argv, bool *seen)
{
    char **copy = calloc((size_t)argc + 1, sizeof(*copy));
    if (!copy)
        return;
    memcpy(copy, argv, sizeof(*copy) * (size_t)argc);
    int saved_opterr = opterr;
    opterr = 0;
    optind = 0;
    int idx = -1, c;
    while ((c = getopt_long(argc, copy, "h", opts, &idx)) != -1) {
        if (c != '?' && c != ':' && idx >= 0)
            seen[idx] = true;
        idx = -1;
    }
    opterr = saved_opterr;
    optind = 0; /* the program's pass starts afresh */
    free(copy);
}

int config_load(const char *default_path, const struct option *opts, int argc,
                char **argv, struct config_args *out, struct sh_error *err)
{
    memset(out, 0, sizeof(*out));
    /* --config FILE and --check-config come off the command line. */
    const char *path = NULL;
    char **rest = calloc((size_t)argc + 1, sizeof(*rest));
    if (!rest)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    int nrest = 0;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && strcmp(argv[i], "--") == 0) {
            while (i < argc)
                rest[nrest++] = argv[i++];
            break;
        }
        if (i > 0 && strcmp(argv[i], "--check-config") == 0) {
            out->check_only = true;
        } else if (i > 0 && strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc) {
                free(rest);
                return sh_errorf(err, SH_EINVAL, "--config needs a file");
            }
            path = argv[++i];
        } else if (i > 0 && strncmp(argv[i], "--config=", 9) == 0) {
            path = argv[i] + 9;
        } else {
            rest[nrest++] = argv[i];
        }
    }
    bool check_only = out->check_only;
    int n = count_opts(opts);
    bool *seen = calloc((size_t)n + 1, 1);
    if (!seen) {
        free(rest);
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    command_line_options(opts, nrest, rest, seen);
    int rc = 0;
    if (push(out, rest[0], NULL) < 0) {
        rc = sh_errorf(err, SH_EINTERNAL, "out of memory");
        goto done;
    }
    const char *file = path ? path : default_path;
    FILE *f = file ? fopen(file, "re") : NULL;
    if (!f && file && (path || errno != ENOENT)) {
        rc = sh_errorf(err, SH_EINVAL, "cannot read %s: %s", file,
                       strerror(errno));
        goto done;
    }
    if (f) {
        out->path = strdup(file);
        struct reader r = {.f = f};
        rc = parse_into(&r, file, opts, seen, out, err);
        fclose(f);
        if (rc < 0)
            goto done;
    }
    for (int i = 1; i < nrest; i++) {
        if (push(out, rest[i], NULL) < 0) {
            rc = sh_errorf(err, SH_EINTERNAL, "out of memory");
            goto done;
        }
    }
    out->check_only = check_only;
done:
    free(seen);
    free(rest);
    if (rc < 0)
        config_args_free(out);
    return rc;
}
