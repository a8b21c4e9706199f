/* SPDX-License-Identifier: Apache-2.0 */
/* The daemons' configuration files (/etc/shoal/shoald.conf and
 * /etc/shoal/agent.conf): INI, read with libinih, one `key = value` a line
 * where the key is the long name of a command-line option of the program
 * (`port = 6820` is --port 6820, `label = a100` is --label a100 and may
 * repeat; an option without a value takes true or false). No sections;
 * `#` and `;` start comments.
 *
 * config_load turns the file into options placed before the command
 * line's, so the program's one option parser (getopt_long in main.c)
 * checks both alike; an option the command line gives is taken from there
 * alone (flags override the file, repeatable ones included). Errors name
 * the file and line: a key that is no option, a section, a line that is
 * not KEY = VALUE, an option without its value; for a bad value the
 * program's parser prints config_where() before its message.
 *
 * The command line's --config FILE names another file (which must exist;
 * the default file may be missing) and --check-config asks the program to
 * check everything and exit: config_load takes both off the options it
 * returns. */
#ifndef SHOAL_CONFIG_H
#define SHOAL_CONFIG_H

#include <getopt.h>
#include <stdbool.h>

#include "lib/util/error.h"

struct config_args {
    int argc;
    char **argv;     /* argv[0], the file's options, the command line's */
    char **where;    /* per entry: "FILE:LINE: " for the file's, else NULL */
    char *path;      /* the file read; NULL when none was */
    bool check_only; /* --check-config */
    char **own;      /* strings allocated here, freed with the rest */
    int nown;
};

/* Reads default_path (or the --config FILE of argv) and merges it with
 * argv as above. opts: the program's options, ending with a zero entry;
 * "help" is not a key. On error fills err and returns -1 (out is freed). */
int config_load(const char *default_path, const struct option *opts, int argc,
                char **argv, struct config_args *out, struct sh_error *err);

/* The same on a file's text (name is what errors call it); argv is only
 * argv[0]. For the fuzz target and the tests. */
int config_load_string(const char *text, const char *name,
                       const struct option *opts, const char *argv0,
                       struct config_args *out, struct sh_error *err);

/* "FILE:LINE: " when argv entry index came from the file, else "". */
const char *config_where(const struct config_args *a, int index);

void config_args_free(struct config_args *a);

#endif
