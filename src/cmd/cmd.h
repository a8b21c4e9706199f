/* SPDX-License-Identifier: Apache-2.0 */
/* Shared helpers of the `shoal` commands: errors (die/warn print
 * "shoal: <message>" on stderr), the connection to the controller, tables
 * for people and JSON for scripts. Every command is a function
 * `int cmd_<verb>(int argc, char **argv)` with argv[0] the verb. */
#ifndef SHOAL_CMD_CMD_H
#define SHOAL_CMD_CMD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/client/client.h"
#include "lib/util/error.h"

/* Print "shoal: <message>" on stderr and exit with status 1. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Print "shoal: <message>" on stderr. */
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Connect to the configured controller or die with a helpful message. */
struct client *cmd_connect(void);

/* Call the API or die with its message. Returns the parsed answer. */
json_t *cmd_call(struct client *c, const char *method, const char *path,
                 const json_t *body);

/* Print a JSON value, pretty, on stdout. Steals v. */
void cmd_print_json(json_t *v);

/* A table for people: add rows of strings, then print with aligned
 * columns. Cells are copied. */
struct table;
struct table *table_create(int ncols, const char *const *headers);
void table_add(struct table *t, const char *const *cells);
void table_print(struct table *t);
void table_destroy(struct table *t);

/* Format epoch ms relative to now for tables ("5m ago", "in 2h"). */
void cmd_format_ago(long long ms, char *buf, size_t size);

/* Strict integer option parsing that dies with the option's name. */
long long cmd_parse_int(const char *opt, const char *s, long long min,
                        long long max);

/* A job as users name it: ID, or ID_TASK for a task of an array (as
 * Slurm writes it). Dies on anything else; returns s. */
const char *cmd_job_ref(const char *s);

int cmd_submit(int argc, char **argv);
int cmd_admin(int argc, char **argv);
/* Apply the `#SHOAL` directive lines at the top of a batch script (the
 * options of shoal submit, before the script's first command) to job, the
 * submission object being built. text is the script, path names it in
 * messages; both are borrowed for the call. Returns 0, or -1 with err
 * ("PATH:LINE: message"), and then job may hold the earlier directives. */
int cmd_submit_directives(json_t *job, const char *path, const char *text,
                          struct sh_error *err);
int cmd_queue(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_hold(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_update(int argc, char **argv);
int cmd_requeue(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_nodes(int argc, char **argv);
int cmd_node(int argc, char **argv);
int cmd_up(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_usage(int argc, char **argv);
int cmd_slice(int argc, char **argv);
int cmd_team(int argc, char **argv);
int cmd_project(int argc, char **argv);
int cmd_user(int argc, char **argv);
int cmd_volume(int argc, char **argv);
int cmd_partition(int argc, char **argv);
int cmd_qos(int argc, char **argv);
int cmd_secret(int argc, char **argv);

#endif
