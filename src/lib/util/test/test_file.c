/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: file_write_atomic, how tokens, state notes and configs are
 * replaced: the new contents land whole with the asked mode, no temporary
 * file is left behind, and a failure leaves the old file as it was. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util/file.h"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/shoal-test-file-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static void read_all(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

TestSuite(file_write_atomic, .init = make_dir, .fini = remove_dir);

Test(file_write_atomic, replaces_contents_with_mode_and_no_leftover)
{
    char path[128], tmp[140], buf[64];
    snprintf(path, sizeof(path), "%s/token", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    struct sh_error err = {0};

    cr_assert_eq(
        file_write_atomic(path, "first, longer\n", 14, 0600, true, &err), 0,
        "%s", err.msg);
    cr_assert_eq(file_write_atomic(path, "second\n", 7, 0600, false, &err), 0,
                 "%s", err.msg);
    read_all(path, buf, sizeof(buf));
    cr_assert_str_eq(buf, "second\n");
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert_neq(access(tmp, F_OK), 0, "temporary file left behind");
}

Test(file_write_atomic, failure_leaves_old_file_and_says_why)
{
    char path[128], buf[64];
    snprintf(path, sizeof(path), "%s/conf", dir);
    struct sh_error err = {0};
    cr_assert_eq(file_write_atomic(path, "old\n", 4, 0644, false, &err), 0);

    /* A directory where the temporary file must go: the write fails. */
    char tmp[140];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    cr_assert_eq(mkdir(tmp, 0700), 0);
    cr_assert_lt(file_write_atomic(path, "new\n", 4, 0644, true, &err), 0);
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    cr_assert_not_null(strstr(err.msg, "conf.tmp"), "%s", err.msg);
    read_all(path, buf, sizeof(buf));
    cr_assert_str_eq(buf, "old\n");
}

Test(file_write_atomic, missing_directory_is_an_error)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/no/such/dir/file", dir);
    struct sh_error err = {0};
    cr_assert_lt(file_write_atomic(path, "x", 1, 0644, false, &err), 0);
    cr_assert_not_null(strstr(err.msg, "cannot write"), "%s", err.msg);
}
