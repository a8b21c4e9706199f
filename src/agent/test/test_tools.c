/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: root's tools run as pinned before a job's volumes are mounted
 * (tools.c): once pinned, what a folder of PATH holds later (a volume
 * mounted over it in the job's namespace) is never run in their place. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/image_int.h"
#include "agent/tools.h"

static void write_tool(const char *dir, const char *name, const char *says)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "#!/bin/sh\necho %s\n", says);
    fclose(f);
    cr_assert_eq(chmod(path, 0755), 0);
}

static char *run_out(char *name, const struct tool_as *as)
{
    char *argv[] = {name, NULL};
    struct tool_run r;
    cr_assert_eq(image_tool_run(argv, &r, NULL, NULL, as), 0);
    return r.out;
}

Test(tools, a_folder_covered_after_the_pin_does_not_supply_the_tool)
{
    char dir[] = "/tmp/shoal-tools-XXXXXX";
    cr_assert(mkdtemp(dir));
    char bin[600], old[600];
    snprintf(bin, sizeof(bin), "%s/bin", dir);
    snprintf(old, sizeof(old), "%s/old", dir);
    cr_assert_eq(mkdir(bin, 0755), 0);
    write_tool(bin, "umoci", "pinned");
    tools_pin(bin);
    /* What a volume mounted over the folder does to the path. */
    cr_assert_eq(rename(bin, old), 0);
    cr_assert_eq(mkdir(bin, 0755), 0);
    write_tool(bin, "umoci", "planted");
    write_tool(bin, "skopeo", "planted");
    char *out = run_out("umoci", NULL);
    cr_expect_str_eq(out, "pinned\n");
    free(out);
    /* Also from a child that closes its descriptors first (a pull as the
     * job's user; NULL: as this process). */
    struct tool_as as = {.user = NULL, .home = dir};
    out = run_out("umoci", &as);
    cr_expect_str_eq(out, "pinned\n");
    free(out);
    /* Not there when pinned: not run at all, even found now. */
    out = run_out("skopeo", NULL);
    cr_expect_str_eq(out, "");
    free(out);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(tools, only_the_named_tools_run_once_pinned)
{
    tools_pin("/usr/bin:/bin");
    char *argv[] = {"sh", "-c", "echo ran", NULL};
    struct tool_run r;
    cr_assert_eq(image_tool_run(argv, &r, NULL, NULL, NULL), 0);
    cr_expect_str_eq(r.out, "");
    cr_expect(!image_tool_ok(&r));
    free(r.out);
    tools_unpin();
    cr_assert_eq(image_tool_run(argv, &r, NULL, NULL, NULL), 0);
    cr_expect_str_eq(r.out, "ran\n");
    free(r.out);
}
