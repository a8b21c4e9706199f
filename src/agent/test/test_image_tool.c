/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: what lets the image cache enforce its caps while skopeo and umoci
 * write (image_tool.c, image_cache.c): a tick comes every half second even
 * while the tool writes without a pause, a tick may stop the tool, and the
 * bytes and entries of a tree are counted. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/image_int.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct ticks {
    int n;
    int stop_at; /* the tick that answers -1 */
};

static int count_tick(void *arg)
{
    struct ticks *t = arg;
    return ++t->n >= t->stop_at ? -1 : 0;
}

Test(image_tool, a_tick_stops_a_tool_that_writes_without_pause)
{
    /* `yes` never pauses: the ticks must still come, by the clock. */
    char *argv[] = {"yes", NULL};
    struct tool_run r;
    struct ticks t = {.stop_at = 2};
    int64_t t0 = now_ms();
    cr_assert_eq(image_tool_run(argv, &r, count_tick, &t, NULL), 0);
    int64_t took = now_ms() - t0;
    free(r.out);
    cr_assert(r.stopped);
    cr_assert_eq(t.n, 2);
    cr_assert(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL);
    cr_assert_lt(took, 5000, "took %lld ms", (long long)took);
}

Test(image_tool, a_tool_that_ends_is_not_stopped)
{
    char *argv[] = {"sh", "-c", "echo out; sleep 1", NULL};
    struct tool_run r;
    struct ticks t = {.stop_at = 100};
    cr_assert_eq(image_tool_run(argv, &r, count_tick, &t, NULL), 0);
    cr_assert_not(r.stopped);
    cr_assert(image_tool_ok(&r));
    cr_assert_str_eq(r.out, "out\n");
    cr_assert_geq(t.n, 1);
    free(r.out);
}

Test(image_cache, usage_counts_bytes_and_entries_below_a_folder)
{
    char dir[] = "/tmp/shoal-usage-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[300], cmd[400];
    snprintf(path, sizeof(path), "%s/sub", dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(cmd, sizeof(cmd),
             "head -c 1048576 /dev/urandom >%s/sub/a && : >%s/b && "
             "ln -s b %s/c",
             dir, dir, dir);
    cr_assert_eq(system(cmd), 0);
    uint64_t bytes = 0, entries = 0;
    image_usage(dir, &bytes, &entries);
    /* sub, sub/a, b, c: the folder itself is not counted. */
    cr_assert_eq(entries, 4);
    cr_assert_geq(bytes, 1048576);
    cr_assert_lt(bytes, 2 * 1048576);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(image_cache, a_manifest_declaring_no_size_is_told_apart)
{
    /* What the pull reserves room for in the cache before it starts. */
    cr_expect_eq(image_manifest_bytes("{\"layers\":[{\"size\":3},"
                                      "{\"size\":4}]}"),
                 7);
    cr_expect_eq(image_manifest_bytes("{\"manifests\":[]}"), 0);
    cr_expect_eq(image_manifest_bytes("{\"layers\":[{\"size\":-1}]}"),
                 IMAGE_BYTES_BAD);
    cr_expect_eq(image_manifest_bytes("{\"layers\":[{\"size\":\"12\"}]}"),
                 IMAGE_BYTES_BAD);
    cr_expect_eq(image_manifest_bytes("{\"layers\":[{\"size\":1.5}]}"),
                 IMAGE_BYTES_BAD);
    /* 2^62 is a size; four of them are past 2^64. */
    cr_expect_eq(
        image_manifest_bytes("{\"layers\":[{\"size\":4611686018427387904}]}"),
        (uint64_t)1 << 62);
    cr_expect_eq(
        image_manifest_bytes("{\"layers\":[{\"size\":4611686018427387904},"
                             "{\"size\":4611686018427387904},"
                             "{\"size\":4611686018427387904},"
                             "{\"size\":4611686018427387904}]}"),
        IMAGE_BYTES_BAD);
}
