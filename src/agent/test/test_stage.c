/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the node's volume stages (agent/stage.c) without mounting
 * anything, so without root: releasing the stages no run uses (their
 * folder and cache removed whole, those still named kept, one whose lock
 * a shim holds left alone, names that are not stage names never touched),
 * the CSI publish target of a run, and telling a mount point. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/stage.h"

static char top[64];

static void setup(void)
{
    snprintf(top, sizeof(top), "/tmp/shoal-stage-XXXXXX");
    cr_assert_not_null(mkdtemp(top));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(stage, .init = setup, .fini = teardown);

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0, "%s", path);
    close(fd);
}

/* A stage folder as a mount leaves it (not mounted): lock, mnt, passwd,
 * a cache with a nested file. */
static void make_stage(const char *name)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", top, name);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/%s/lock", top, name);
    touch(p);
    snprintf(p, sizeof(p), "%s/%s/passwd", top, name);
    touch(p);
    snprintf(p, sizeof(p), "%s/%s/mnt", top, name);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/%s/cache", top, name);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/%s/cache/deep", top, name);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/%s/cache/deep/blob", top, name);
    touch(p);
}

static bool exists(const char *name)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", top, name);
    return lstat(p, &st) == 0;
}

Test(stage, unused_stages_are_released_whole_and_used_ones_kept)
{
    make_stage("s3-data");
    make_stage("nfs-home");
    json_t *in_use = json_pack("[s]", "nfs-home");
    cr_assert_eq(stage_release_unused(top, in_use), 1);
    cr_assert(!exists("s3-data"), "the unused stage and its cache are gone");
    cr_assert(exists("nfs-home/cache/deep/blob"), "the used one is kept");
    json_decref(in_use);
}

Test(stage, a_stage_a_shim_is_mounting_is_left_alone)
{
    make_stage("s3-busy");
    char p[512];
    snprintf(p, sizeof(p), "%s/s3-busy/lock", top);
    int fd = open(p, O_RDWR | O_CLOEXEC);
    cr_assert_geq(fd, 0);
    cr_assert_eq(flock(fd, LOCK_EX), 0);
    json_t *none = json_array();
    /* flock is per open file: the agent's own open cannot take it. */
    cr_assert_eq(stage_release_unused(top, none), 0);
    cr_assert(exists("s3-busy/cache/deep/blob"));
    close(fd);
    cr_assert_eq(stage_release_unused(top, none), 1);
    cr_assert(!exists("s3-busy"));
    json_decref(none);
}

Test(stage, only_stage_names_are_touched)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/not a stage", top);
    cr_assert_eq(mkdir(p, 0700), 0);
    json_t *none = json_array();
    cr_assert_eq(stage_release_unused(top, none), 0);
    cr_assert(exists("not a stage"));
    cr_assert_eq(stage_release_unused("/nonexistent/stages", none), 0);
    json_decref(none);
}

Test(stage, a_runs_csi_target_is_under_its_stage)
{
    char buf[256];
    json_t *m = json_pack("{s:s, s:s}", "kind", "csi", "stage", "csi-vol1");
    stage_csi_target("/var/lib/shoal/stages", m, "12.1", buf, sizeof(buf));
    cr_assert_str_eq(buf, "/var/lib/shoal/stages/csi-vol1/publish/12.1");
    json_decref(m);
}

Test(stage, a_mount_point_is_told_from_a_folder)
{
    cr_assert(!stage_is_mountpoint(top));
    cr_assert(stage_is_mountpoint("/proc"));
    char p[512];
    snprintf(p, sizeof(p), "%s/missing", top);
    cr_assert(!stage_is_mountpoint(p));
}
