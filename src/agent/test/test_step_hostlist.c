/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm host lists as `scontrol show hostnames` expands them. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "agent/step_hostlist.h"

/* The names of list, one a line, or the error's message. */
static char *expand(const char *list, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    cr_assert_not_null(out);
    struct sh_error err = {0};
    *rc = step_hostlist_print(list, out, &err);
    fclose(out);
    if (*rc < 0) {
        free(buf);
        return strdup(err.msg);
    }
    return buf;
}

static void assert_expands(const char *list, const char *want)
{
    int rc;
    char *got = expand(list, &rc);
    cr_assert_eq(rc, 0, "%s: %s", list, got);
    cr_assert_str_eq(got, want, "%s", list);
    free(got);
}

Test(hostlist, plain_names_one_a_line)
{
    assert_expands("node1,node2", "node1\nnode2\n");
    assert_expands("login", "login\n");
    assert_expands("", "");
}

Test(hostlist, ranges_keep_the_width_of_their_first_bound)
{
    assert_expands("gpu[08-10]", "gpu08\ngpu09\ngpu10\n");
    assert_expands("n[1-3,7]", "n1\nn2\nn3\nn7\n");
    assert_expands("gpu[01-02],login1", "gpu01\ngpu02\nlogin1\n");
}

Test(hostlist, several_groups_in_one_name_multiply)
{
    assert_expands("r[1-2]n[1-2]", "r1n1\nr1n2\nr2n1\nr2n2\n");
    assert_expands("a[1-2]-ib", "a1-ib\na2-ib\n");
}

Test(hostlist, a_list_that_is_not_one_is_refused)
{
    static const char *const bad[] = {"gpu[1-", "gpu[3-1]", "gpu[a-b]", "gpu[]",
                                      "gpu[1-99999999]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc;
        char *msg = expand(bad[i], &rc);
        cr_assert_eq(rc, -1, "%s was accepted", bad[i]);
        cr_assert(strlen(msg) > 0);
        free(msg);
    }
}
