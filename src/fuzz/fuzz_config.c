/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: config_load_string() (lib/config/config.c), the daemons'
 * configuration files (/etc/shoal/shoald.conf, agent.conf) read with
 * libinih. Properties: an accepted file turns into options that each name
 * an option of the table ("--key" or "--key=value") and carry the file and
 * a line within it; a refused one names the file in its error and leaves
 * nothing allocated.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "lib/config/config.h"

static const struct option opts[] = {
    {"state", required_argument, NULL, 's'},
    {"port", required_argument, NULL, 'p'},
    {"label", required_argument, NULL, 'L'},
    {"no-gpus", no_argument, NULL, 'G'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static bool names_an_option(const char *arg)
{
    if (strncmp(arg, "--", 2) != 0)
        return false;
    size_t n = strcspn(arg + 2, "=");
    for (int i = 0; opts[i].name; i++)
        if (strlen(opts[i].name) == n &&
            strncmp(opts[i].name, arg + 2, n) == 0 &&
            strcmp(opts[i].name, "help") != 0)
            return (arg[2 + n] == '=') == (opts[i].has_arg != no_argument);
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    struct config_args a;
    struct sh_error err;
    if (!s)
        return 0;
    size_t lines = 1;
    for (const char *p = s; *p; p++)
        lines += *p == '\n';
    if (config_load_string(s, "f.conf", opts, "prog", &a, &err) == 0) {
        for (int i = 1; i < a.argc; i++) {
            if (!names_an_option(a.argv[i]))
                fuzz_fail("'%s' is not an option of the table", a.argv[i]);
            const char *w = config_where(&a, i);
            long line = strncmp(w, "f.conf:", 7) == 0 ? atol(w + 7) : 0;
            if (line < 1 || (size_t)line > lines)
                fuzz_fail("'%s' came from '%s', not a line of the file",
                          a.argv[i], w);
        }
        config_args_free(&a);
    } else {
        if (!strstr(err.msg, "f.conf"))
            fuzz_fail("error '%s' does not name the file", err.msg);
        if (a.argv || a.own)
            fuzz_fail("a refused file left options behind");
    }
    free(s);
    return 0;
}
