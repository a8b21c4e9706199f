/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: file_write_atomic, how tokens, state notes and configs are
 * replaced: the new contents land whole with the asked mode, no temporary
 * file is left behind, and a failure leaves the old file as it was; links
 * planted under the file's or its temporary file's name are replaced, never
 * written through; readers of a folder others write to open regular files
 * only. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
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

/* A link planted where the temporary file goes, and one in place of the
 * file itself: both are replaced and their targets keep their contents. */
Test(file_write_atomic, planted_links_are_never_followed)
{
    char victim[128], path[128], tmp[140], buf[64];
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    snprintf(path, sizeof(path), "%s/status.json", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    struct sh_error err = {0};
    cr_assert_eq(file_write_atomic(victim, "secret\n", 7, 0600, false, &err),
                 0);

    cr_assert_eq(symlink(victim, tmp), 0);
    cr_assert_eq(file_write_atomic(path, "one\n", 4, 0644, false, &err), 0,
                 "%s", err.msg);
    read_all(victim, buf, sizeof(buf));
    cr_assert_str_eq(buf, "secret\n");
    read_all(path, buf, sizeof(buf));
    cr_assert_str_eq(buf, "one\n");

    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(symlink(victim, path), 0);
    cr_assert_eq(file_write_atomic(path, "two\n", 4, 0644, false, &err), 0,
                 "%s", err.msg);
    read_all(victim, buf, sizeof(buf));
    cr_assert_str_eq(buf, "secret\n");
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode), "the link was not replaced");
}

Test(file_write_atomic, readers_open_regular_files_only)
{
    char victim[128], link[128], fifo[128];
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    snprintf(link, sizeof(link), "%s/stdout", dir);
    snprintf(fifo, sizeof(fifo), "%s/stderr", dir);
    struct sh_error err = {0};
    cr_assert_eq(file_write_atomic(victim, "secret\n", 7, 0600, false, &err),
                 0);
    cr_assert_eq(symlink(victim, link), 0);
    cr_assert_eq(mkfifo(fifo, 0600), 0);

    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    cr_assert_geq(dfd, 0);
    cr_assert_lt(file_open_regular_at(dfd, "stdout"), 0);
    cr_assert_eq(errno, ELOOP);
    cr_assert_lt(file_open_regular_at(dfd, "stderr"), 0); /* does not block */
    cr_assert_eq(errno, EINVAL);
    cr_assert_eq(file_size_at(dfd, "stdout"), 0);
    cr_assert_eq(file_size_at(dfd, "victim"), 7);
    int fd = file_open_regular_at(dfd, "victim");
    cr_assert_geq(fd, 0);
    close(fd);
    struct stat st;
    cr_assert_lt(file_open_regular_stat_at(dfd, "stdout", &st), 0);
    cr_assert_eq(errno, ELOOP);
    cr_assert_lt(file_open_regular_stat_at(dfd, "stderr", &st), 0);
    cr_assert_eq(errno, EINVAL);
    fd = file_open_regular_stat_at(dfd, "victim", &st);
    cr_assert_geq(fd, 0);
    cr_assert(S_ISREG(st.st_mode));
    cr_assert_eq(st.st_size, 7, "the size of the file opened");
    cr_assert_eq(st.st_mode & 07777, 0600);
    char buf[8];
    cr_assert_eq(read(fd, buf, sizeof(buf)), 7, "it reads");
    close(fd);
    close(dfd);
}

Test(file, remove_tree_removes_all_and_follows_no_link)
{
    char top[] = "/tmp/shoal-rmtree-XXXXXX",
         outside[] = "/tmp/shoal-keep-XXXXXX";
    char p[256];
    cr_assert_not_null(mkdtemp(top));
    cr_assert_not_null(mkdtemp(outside));
    snprintf(p, sizeof(p), "%s/kept", outside);
    cr_assert_eq(file_write_atomic(p, "x", 1, 0600, false, NULL), 0);
    snprintf(p, sizeof(p), "%s/a", top);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/a/b", top);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/a/b/file", top);
    cr_assert_eq(file_write_atomic(p, "data", 4, 0600, false, NULL), 0);
    snprintf(p, sizeof(p), "%s/a/link", top);
    cr_assert_eq(symlink(outside, p), 0);
    file_remove_tree(top);
    struct stat st;
    cr_assert_lt(lstat(top, &st), 0, "the whole tree is gone");
    snprintf(p, sizeof(p), "%s/kept", outside);
    cr_assert_eq(stat(p, &st), 0, "what a link pointed to is untouched");
    file_remove_tree(outside);
    cr_assert_lt(lstat(outside, &st), 0);
}
