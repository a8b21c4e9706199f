/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the option parser every `shoal` command uses accepts options,
 * values and arguments in the forms people type, hands them over in order,
 * answers --help with the usage, and refuses a mistake with one line naming
 * the command and the option, exit status 2. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cmd_opts.h"

static const char usage[] = "Usage: shoal thing [--json] [--name N] X\n";

Test(cmd_opts, collect_takes_flags_values_and_arguments_in_any_order)
{
    char *argv[] = {"thing",  "a", "--name",    "n1",
                    "--json", "b", "--name=n2", NULL};
    struct cmd_flag flags[] = {{"json", false, NULL, false},
                               {"name", true, NULL, false},
                               {"other", false, NULL, false},
                               {NULL, false, NULL, false}};
    const char *pos[2];
    int n = cmd_opts_collect("thing", usage, flags, 7, argv, pos, 2);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(pos[0], "a");
    cr_assert_str_eq(pos[1], "b");
    cr_assert(flags[0].set);
    cr_assert(flags[1].set);
    cr_assert_str_eq(flags[1].value, "n2", "the last value given wins");
    cr_assert(!flags[2].set);
}

Test(cmd_opts, double_dash_ends_the_options)
{
    char *argv[] = {"thing", "--", "--json", "-x", NULL};
    struct cmd_flag flags[] = {{"json", false, NULL, false},
                               {NULL, false, NULL, false}};
    const char *pos[2];
    cr_assert_eq(cmd_opts_collect("thing", usage, flags, 4, argv, pos, 2), 2);
    cr_assert_str_eq(pos[0], "--json");
    cr_assert_str_eq(pos[1], "-x");
    cr_assert(!flags[0].set);
}

Test(cmd_opts, next_returns_options_and_arguments_in_order)
{
    static const struct option longs[] = {
        {"csi", required_argument, NULL, 'C'},
        {"param", required_argument, NULL, 'P'},
        {NULL, 0, NULL, 0},
    };
    char *argv[] = {"create",  "k=v", "--csi", "/s",
                    "--param", "a=1", "x=y",   NULL};
    struct cmd_opts p;
    cmd_opts_init(&p, "volume create", usage, longs, NULL, false, 7, argv);
    const int want[] = {CMD_OPT_ARG, 'C', 'P', CMD_OPT_ARG, -1};
    const char *args[] = {"k=v", "/s", "a=1", "x=y", NULL};
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(cmd_opts_next(&p), want[i], "step %d", i);
        if (args[i])
            cr_assert_str_eq(p.arg, args[i]);
    }
}

Test(cmd_opts, stop_at_arg_leaves_the_command_line_alone)
{
    static const struct option longs[] = {
        {"gpus", required_argument, NULL, 'g'},
        {NULL, 0, NULL, 0},
    };
    char *argv[] = {"submit", "-g", "2", "python", "--help", NULL};
    struct cmd_opts p;
    cmd_opts_init(&p, "submit", usage, longs, "g:", true, 5, argv);
    cr_assert_eq(cmd_opts_next(&p), 'g');
    cr_assert_str_eq(p.arg, "2");
    cr_assert_eq(cmd_opts_next(&p), -1);
    cr_assert_eq(cmd_opts_index(&p), 3);
}

Test(cmd_opts, help_prints_the_usage_and_exits_0, .init = cr_redirect_stdout,
     .exit_code = 0)
{
    char *argv[] = {"thing", "--bogus", "--help", NULL};
    struct cmd_flag flags[] = {{NULL, false, NULL, false}};
    cmd_opts_collect("thing", usage, flags, 3, argv, NULL, 0);
    cr_assert_fail("--help must exit");
}

#define FLAGS                                                                  \
    struct cmd_flag flags[] = {{"json", false, NULL, false},                   \
                               {"name", true, NULL, false},                    \
                               {"names", true, NULL, false},                   \
                               {NULL, false, NULL, false}}

Test(cmd_opts, unknown_option_exits_2, .init = cr_redirect_stderr,
     .exit_code = 2)
{
    char *argv[] = {"thing", "--bogus=1", NULL};
    FLAGS;
    cmd_opts_collect("thing", usage, flags, 2, argv, NULL, 0);
}

/* The messages, checked in a child whose stderr we read back. */
static const char *error_of(int argc, char **argv)
{
    static char buf[512];
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        FLAGS;
        const char *pos[1];
        cmd_opts_collect("thing", usage, flags, argc, argv, pos, 1);
        _exit(0);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t n;
    while ((n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
        len += (size_t)n;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    buf[len] = '\0';
    /* Under the sanitizers the child's exit may add the runtime's own
     * "==PID==..." lines (LeakSanitizer); they are not the command's. */
    for (char *line = buf; *line;) {
        char *nl = strchr(line, '\n');
        char *next = nl ? nl + 1 : line + strlen(line);
        if (line[0] == '=' && line[1] == '=')
            memmove(line, next, strlen(next) + 1);
        else
            line = next;
    }
    cr_assert(WIFEXITED(status));
    cr_assert_eq(WEXITSTATUS(status), buf[0] ? 2 : 0, "%s", buf);
    return buf;
}

Test(cmd_opts, mistakes_are_one_line_with_the_way_to_help)
{
    char *a1[] = {"thing", "--bogus", NULL};
    cr_assert_str_eq(
        error_of(2, a1),
        "shoal: thing: unknown option --bogus (see shoal thing --help)\n");
    char *a2[] = {"thing", "--name", NULL};
    cr_assert_str_eq(error_of(2, a2), "shoal: thing: option --name needs a "
                                      "value (see shoal thing --help)\n");
    char *a3[] = {"thing", "--json=yes", NULL};
    cr_assert_str_eq(error_of(2, a3), "shoal: thing: option --json takes no "
                                      "value (see shoal thing --help)\n");
    char *a4[] = {"thing", "--nam", "x", NULL};
    cr_assert_str_eq(error_of(3, a4), "shoal: thing: option --nam is "
                                      "ambiguous (see shoal thing --help)\n");
    char *a5[] = {"thing", "-x", NULL};
    cr_assert_str_eq(
        error_of(2, a5),
        "shoal: thing: unknown option -x (see shoal thing --help)\n");
    char *a6[] = {"thing", "a", "b", NULL};
    cr_assert_str_eq(error_of(3, a6), "shoal: thing: unexpected argument 'b' "
                                      "(see shoal thing --help)\n");
    char *a7[] = {"thing", "a", "--name", "--", NULL};
    cr_assert_str_eq(error_of(4, a7), "", "a value may look like an option");
}

Test(cmd_opts, kept_errors_come_back_with_the_same_words)
{
    static const struct option longs[] = {
        {"gpus", required_argument, NULL, 'g'},
        {NULL, 0, NULL, 0},
    };
    char msg[256];
    char *a1[] = {"submit", "--gpus=1", "--frob", NULL};
    struct cmd_opts p;
    cmd_opts_init(&p, "submit", usage, longs, "g:", true, 3, a1);
    cmd_opts_keep_errors(&p, msg, sizeof(msg), "a directive");
    cr_assert_eq(cmd_opts_next(&p), 'g');
    cr_assert_str_eq(p.arg, "1");
    cr_assert_eq(cmd_opts_next(&p), CMD_OPT_MISTAKE);
    cr_assert_str_eq(msg, "unknown option --frob (see shoal submit --help)");
    char *a2[] = {"submit", "-g", NULL};
    cmd_opts_init(&p, "submit", usage, longs, "g:", true, 2, a2);
    cmd_opts_keep_errors(&p, msg, sizeof(msg), "a directive");
    cr_assert_eq(cmd_opts_next(&p), CMD_OPT_MISTAKE);
    cr_assert_str_eq(msg, "option -g needs a value (see shoal submit --help)");
    char *a3[] = {"submit", "--help", NULL};
    cmd_opts_init(&p, "submit", usage, longs, "g:", true, 2, a3);
    cmd_opts_keep_errors(&p, msg, sizeof(msg), "a directive");
    cr_assert_eq(cmd_opts_next(&p), CMD_OPT_MISTAKE, "--help does not exit");
    cr_assert_str_eq(msg,
                     "--help is not a directive (see shoal submit --help)");
}

Test(cmd_opts, subcommand_is_the_first_argument)
{
    char *argv[] = {"team", "create", "--help", NULL};
    cr_assert_str_eq(cmd_opts_subcommand("team", usage, 3, argv), "create");
}

Test(cmd_opts, subcommand_help_prints_the_usage, .init = cr_redirect_stdout,
     .exit_code = 0)
{
    char *argv[] = {"team", "help", NULL};
    cmd_opts_subcommand("team", usage, 2, argv);
    cr_assert_fail("help must exit");
}

Test(cmd_opts, no_subcommand_exits_2, .init = cr_redirect_stderr,
     .exit_code = 2)
{
    char *argv[] = {"team", NULL};
    cmd_opts_subcommand("team", usage, 1, argv);
}

Test(cmd_opts, unknown_subcommand_exits_2, .init = cr_redirect_stderr,
     .exit_code = 2)
{
    cmd_opts_unknown_subcommand("team", "frob");
}
