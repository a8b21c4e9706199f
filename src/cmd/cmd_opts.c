/* SPDX-License-Identifier: Apache-2.0 */
/* The one option parser of the `shoal` commands (see cmd_opts.h): getopt_long
 * in order, with its own messages instead of getopt's. */
#include "cmd/cmd_opts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HELP_VAL 'h'

void cmd_opts_fail(const struct cmd_opts *p, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "shoal: %s: ", p->cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see shoal %s --help)\n", p->cmd);
    exit(2);
}

/* A mistake in the options: dies, or with errors kept, writes the message
 * and returns CMD_OPT_MISTAKE. */
static int mistake(const struct cmd_opts *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int mistake(const struct cmd_opts *p, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (!p->errbuf)
        cmd_opts_fail(p, "%s", msg);
    snprintf(p->errbuf, p->errsize, "%s (see shoal %s --help)", msg, p->cmd);
    return CMD_OPT_MISTAKE;
}

void cmd_opts_keep_errors(struct cmd_opts *p, char *buf, size_t size,
                          const char *nohelp)
{
    p->errbuf = buf;
    p->errsize = size;
    p->nohelp = nohelp;
}

static void help(const struct cmd_opts *p)
{
    fputs(p->usage, stdout);
    exit(0);
}

void cmd_opts_init(struct cmd_opts *p, const char *cmd, const char *usage,
                   const struct option *longs, const char *shorts,
                   bool stop_at_arg, int argc, char **argv)
{
    memset(p, 0, sizeof(*p));
    p->cmd = cmd;
    p->usage = usage;
    p->argc = argc;
    p->argv = argv;
    p->stop_at_arg = stop_at_arg;
    int n = 0;
    for (; longs && longs[n].name; n++) {
        if (n == CMD_OPTS_MAX || strcmp(longs[n].name, "help") == 0) {
            fprintf(stderr, "shoal: %s: bad option table\n", cmd);
            abort();
        }
        p->longs[n] = longs[n];
    }
    p->longs[n] = (struct option){"help", no_argument, NULL, HELP_VAL};
    /* "-": arguments come back in order (CMD_OPT_ARG); "+": the first one
     * ends the options. ":" after it: no messages from getopt itself. */
    snprintf(p->shorts, sizeof(p->shorts), "%s:h%s", stop_at_arg ? "+" : "-",
             shorts ? shorts : "");
    optind = 0; /* glibc: start afresh */
    opterr = 0;
    if (stop_at_arg)
        return; /* a --help after the command line is the job's own */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            help(p);
    }
}

/* What went wrong with the long option in arg ("--name" or "--name=v"). */
static int long_mistake(const struct cmd_opts *p, const char *arg, int code)
{
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    const struct option *found = NULL;
    int matches = 0;
    for (const struct option *o = p->longs; o->name; o++) {
        if (strncmp(o->name, name, len) != 0)
            continue;
        if (strlen(o->name) == len) {
            found = o;
            matches = 1;
            break;
        }
        found = o;
        matches++;
    }
    if (matches > 1)
        return mistake(p, "option --%.*s is ambiguous", (int)len, name);
    if (found && code == ':')
        return mistake(p, "option --%s needs a value", found->name);
    if (found && name[len] == '=' && found->has_arg == no_argument)
        return mistake(p, "option --%s takes no value", found->name);
    return mistake(p, "unknown option --%.*s", (int)len, name);
}

int cmd_opts_next(struct cmd_opts *p)
{
    p->arg = NULL;
    if (p->rest) {
        if (p->next_rest >= p->argc)
            return -1;
        p->arg = p->argv[p->next_rest++];
        return CMD_OPT_ARG;
    }
    int before = optind ? optind : 1;
    int c = getopt_long(p->argc, p->argv, p->shorts, p->longs, NULL);
    if (c == -1) {
        /* In order, getopt stops at "--": what follows is arguments. */
        if (!p->stop_at_arg && optind < p->argc) {
            p->rest = true;
            p->next_rest = optind;
            return cmd_opts_next(p);
        }
        return -1;
    }
    if (c == '?' || c == ':') {
        const char *a = p->argv[optind - 1];
        if (optind > before && strncmp(a, "--", 2) == 0)
            return long_mistake(p, a, c);
        if (c == ':')
            return mistake(p, "option -%c needs a value", optopt);
        return mistake(p, "unknown option -%c", optopt);
    }
    if (c == HELP_VAL && p->nohelp)
        return mistake(p, "--help is not %s", p->nohelp);
    if (c == HELP_VAL)
        help(p);
    p->arg = optarg;
    return c;
}

int cmd_opts_index(const struct cmd_opts *p)
{
    return optind ? optind : p->argc;
}

int cmd_opts_collect(const char *cmd, const char *usage, struct cmd_flag *flags,
                     int argc, char **argv, const char **pos, int maxpos)
{
    struct option longs[CMD_OPTS_MAX + 1];
    int n = 0;
    for (; flags && flags[n].name; n++) {
        if (n == CMD_OPTS_MAX)
            abort();
        longs[n] = (struct option){
            flags[n].name, flags[n].has_arg ? required_argument : no_argument,
            NULL, 256 + n};
    }
    longs[n] = (struct option){NULL, 0, NULL, 0};
    struct cmd_opts p;
    cmd_opts_init(&p, cmd, usage, longs, NULL, false, argc, argv);
    int npos = 0, c;
    while ((c = cmd_opts_next(&p)) != -1) {
        if (c == CMD_OPT_ARG) {
            if (npos == maxpos)
                cmd_opts_fail(&p, "unexpected argument '%s'", p.arg);
            pos[npos++] = p.arg;
            continue;
        }
        flags[c - 256].value = p.arg;
        flags[c - 256].set = true;
    }
    return npos;
}

const char *cmd_opts_subcommand(const char *cmd, const char *usage, int argc,
                                char **argv)
{
    struct cmd_opts p = {.cmd = cmd, .usage = usage};
    if (argc < 2)
        cmd_opts_fail(&p, "which %s command?", cmd);
    const char *sub = argv[1];
    if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0 ||
        strcmp(sub, "help") == 0)
        help(&p);
    if (sub[0] == '-')
        cmd_opts_fail(&p, "unknown option %.*s", (int)strcspn(sub, "="), sub);
    return sub;
}

void cmd_opts_unknown_subcommand(const char *cmd, const char *sub)
{
    struct cmd_opts p = {.cmd = cmd};
    cmd_opts_fail(&p, "unknown command '%s'", sub);
}
