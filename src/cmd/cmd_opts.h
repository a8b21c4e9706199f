/* SPDX-License-Identifier: Apache-2.0 */
/* The one option parser of the `shoal` commands, over getopt_long. Every
 * command reads its options through it, so they all behave alike:
 *   - -h and --help print the command's usage on stdout and exit 0
 *     (anywhere before "--", whatever else the line holds);
 *   - --name VALUE and --name=VALUE; "--" ends the options;
 *   - a mistake prints one line and exits 2:
 *       shoal: <cmd>: unknown option --x (see shoal <cmd> --help)
 *     ("needs a value", "takes no value", "is ambiguous", "unexpected
 *     argument 'x'" likewise).
 *
 * Two ways to use it:
 *   - cmd_opts_next() walks argv in order and returns each option's `val`
 *     (or CMD_OPT_ARG for an argument that is not an option), for commands
 *     whose options repeat or depend on each other;
 *   - cmd_opts_collect() fills a table of flags and the positional
 *     arguments, for the many commands that only need to know what was
 *     given. */
#ifndef SHOAL_CMD_CMD_OPTS_H
#define SHOAL_CMD_CMD_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

/* Returned by cmd_opts_next() for an argument that is not an option. */
#define CMD_OPT_ARG 1
/* Returned by cmd_opts_next() for a mistake when errors are kept (see
 * cmd_opts_keep_errors()). */
#define CMD_OPT_MISTAKE (-2)

/* The most long options one command may declare. */
#define CMD_OPTS_MAX 48

struct cmd_opts {
    const char *cmd;   /* the command as typed, "team create" */
    const char *usage; /* printed for --help */
    const char *arg;   /* the value of the option (or the argument) just
                          returned by cmd_opts_next(); NULL when none */
    /* Private. */
    int argc;
    char **argv;
    bool stop_at_arg;
    char *errbuf; /* cmd_opts_keep_errors(): mistakes go here */
    size_t errsize;
    bool rest; /* after "--": the remaining arguments, one by one */
    int next_rest;
    const char *nohelp;
    char shorts[64];
    struct option longs[CMD_OPTS_MAX + 2];
};

/* Start parsing argv[1..] (argv[0] is the command or subcommand). longs
 * ends with a zero entry and must not declare "help" (every command has
 * it); shorts lists the short options in getopt's syntax ("as:u:"), or
 * NULL. With stop_at_arg the first argument that is not an option ends the
 * options (it and what follows are left for cmd_opts_index()), as for the
 * command line of `shoal submit`. Handles --help here (exits 0). */
void cmd_opts_init(struct cmd_opts *p, const char *cmd, const char *usage,
                   const struct option *longs, const char *shorts,
                   bool stop_at_arg, int argc, char **argv);

/* The next option's val (its value in p->arg), CMD_OPT_ARG with the
 * argument in p->arg, or -1 at the end. Dies (exit 2) on a mistake. */
int cmd_opts_next(struct cmd_opts *p);

/* Keep mistakes instead of dying: from now on cmd_opts_next() writes the
 * message ("unknown option --x (see shoal <cmd> --help)") into buf and
 * returns CMD_OPT_MISTAKE, and --help is a mistake too ("--help is not
 * <nohelp>"). For options read from a file, where the caller names the
 * place (`#SHOAL` lines of a batch script). Only with stop_at_arg (which
 * leaves --help to cmd_opts_next()). */
void cmd_opts_keep_errors(struct cmd_opts *p, char *buf, size_t size,
                          const char *nohelp);

/* After cmd_opts_next() returned -1 with stop_at_arg: the index in argv of
 * the first argument left (argc when none). */
int cmd_opts_index(const struct cmd_opts *p);

/* Print "shoal: <cmd>: <message> (see shoal <cmd> --help)" on stderr and
 * exit 2: for a mistake in how the command was called. */
void cmd_opts_fail(const struct cmd_opts *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* One flag of cmd_opts_collect()'s table. */
struct cmd_flag {
    const char *name;  /* without "--" */
    bool has_arg;      /* takes a value */
    const char *value; /* out: its value (the last one given) */
    bool set;          /* out: given */
};

/* Parse argv[1..] against flags (ending with a {NULL} entry): set each
 * given flag, and store up to maxpos positional arguments in pos. Dies
 * (exit 2) on an unknown flag, a missing value or a positional argument
 * beyond maxpos. Returns the number of positional arguments. */
int cmd_opts_collect(const char *cmd, const char *usage, struct cmd_flag *flags,
                     int argc, char **argv, const char **pos, int maxpos);

/* For a command of subcommands (`shoal team create ...`): the subcommand,
 * argv[1]. -h, --help or help there prints usage and exits 0; none, or an
 * option in its place, is a mistake (exit 2). The caller says when the
 * name is not one of its own (cmd_opts_unknown_subcommand()). */
const char *cmd_opts_subcommand(const char *cmd, const char *usage, int argc,
                                char **argv);

/* "shoal: <cmd>: unknown command '<sub>' (see shoal <cmd> --help)", exit 2. */
void cmd_opts_unknown_subcommand(const char *cmd, const char *sub)
    __attribute__((noreturn));

#endif
