/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: configuration files as options (config.h): keys become long
 * options before the command line's, options the command line gives are
 * taken from there alone, and every mistake names the file and line. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/config/config.h"

static const struct option opts[] = {
    {"state", required_argument, NULL, 's'},
    {"port", required_argument, NULL, 'p'},
    {"label", required_argument, NULL, 'L'},
    {"reslice-on-demand", no_argument, NULL, 'R'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void expect_args(const struct config_args *a, const char *const *want)
{
    int n = 0;
    while (want[n])
        n++;
    cr_assert_eq(a->argc, n, "argc %d, want %d", a->argc, n);
    for (int i = 0; i < n; i++)
        cr_assert_str_eq(a->argv[i], want[i]);
    cr_assert_null(a->argv[n]);
}

Test(config, keys_become_options_with_their_line)
{
    struct config_args a;
    struct sh_error err;
    const char *text = "# the controller\n"
                       "state = /var/lib/shoal\n"
                       "\n"
                       "; a comment\n"
                       "port=7000   ; inline\n"
                       "label = a100\n"
                       "label = switch=sw1\n"
                       "reslice-on-demand = yes\n";
    cr_assert_eq(config_load_string(text, "x.conf", opts, "shoald", &a, &err),
                 0, "%s", err.msg);
    const char *want[] = {"shoald",
                          "--state=/var/lib/shoal",
                          "--port=7000",
                          "--label=a100",
                          "--label=switch=sw1",
                          "--reslice-on-demand",
                          NULL};
    expect_args(&a, want);
    cr_assert_str_eq(config_where(&a, 1), "x.conf:2: ");
    cr_assert_str_eq(config_where(&a, 2), "x.conf:5: ");
    cr_assert_str_eq(config_where(&a, 5), "x.conf:8: ");
    cr_assert_str_eq(config_where(&a, 0), "");
    cr_assert_str_eq(config_where(&a, 99), "");
    config_args_free(&a);
}

Test(config, false_leaves_a_flag_off)
{
    struct config_args a;
    struct sh_error err;
    cr_assert_eq(config_load_string("reslice-on-demand = off\n", "x.conf", opts,
                                    "p", &a, &err),
                 0);
    cr_assert_eq(a.argc, 1);
    config_args_free(&a);
}

static void expect_error(const char *text, const char *msg)
{
    struct config_args a;
    struct sh_error err;
    cr_assert_eq(config_load_string(text, "x.conf", opts, "p", &a, &err), -1,
                 "accepted: %s", text);
    cr_assert(strstr(err.msg, msg), "'%s' lacks '%s'", err.msg, msg);
    cr_assert_null(a.argv);
}

Test(config, mistakes_name_the_file_and_line)
{
    expect_error("state = /x\nprot = 1\n", "x.conf:2: unknown key 'prot'");
    expect_error("help = true\n", "x.conf:1: unknown key 'help'");
    expect_error("\n\n[shoald]\nport = 1\n", "x.conf:4: sections are not used");
    expect_error("port 6820\n", "x.conf:1: not a `key = value` line");
    expect_error("port =\n", "x.conf:1: port needs a value");
    expect_error("reslice-on-demand = maybe\n",
                 "x.conf:1: reslice-on-demand must be true or false");
    char long_line[400];
    memset(long_line, 'a', sizeof(long_line));
    memcpy(long_line, "\nstate = ", 9);
    strcpy(long_line + sizeof(long_line) - 2, "\n");
    expect_error(long_line, "x.conf:2: line longer than");
}

static char path[64];

static void write_file(const char *text)
{
    snprintf(path, sizeof(path), "/tmp/shoal-test-config-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

Test(config, the_command_line_overrides_the_file)
{
    write_file("port = 7000\nlabel = a\nlabel = b\nstate = /f\n");
    char *argv[] = {"shoald",    "--port",         "8000",
                    "--label=c", "--check-config", NULL};
    struct config_args a;
    struct sh_error err;
    cr_assert_eq(config_load(path, opts, 5, argv, &a, &err), 0, "%s", err.msg);
    /* port and label from the command line only; state from the file. */
    const char *want[] = {"shoald", "--state=/f", "--port",
                          "8000",   "--label=c",  NULL};
    expect_args(&a, want);
    cr_assert(a.check_only);
    cr_assert_str_eq(a.path, path);
    config_args_free(&a);
    unlink(path);
}

Test(config, config_names_another_file_which_must_exist)
{
    write_file("port = 7000\n");
    char *argv[] = {"shoald", "--config", path, NULL};
    struct config_args a;
    struct sh_error err;
    cr_assert_eq(
        config_load("/nonexistent/default.conf", opts, 3, argv, &a, &err), 0,
        "%s", err.msg);
    const char *want[] = {"shoald", "--port=7000", NULL};
    expect_args(&a, want);
    config_args_free(&a);
    unlink(path);
    char *missing[] = {"shoald", "--config=/nonexistent/x.conf", NULL};
    cr_assert_eq(config_load(NULL, opts, 2, missing, &a, &err), -1);
    cr_assert(strstr(err.msg, "cannot read /nonexistent/x.conf"), "%s",
              err.msg);
    /* A missing default file is no error: flags alone. */
    char *plain[] = {"shoald", "--port", "1", NULL};
    cr_assert_eq(
        config_load("/nonexistent/default.conf", opts, 3, plain, &a, &err), 0);
    cr_assert_null(a.path);
    cr_assert_eq(a.argc, 3);
    config_args_free(&a);
}
