/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: a walk as the job's user (user_open.c) that never answers, as
 * through a hung mount of the user's own, is killed past its deadline and
 * fails with ETIME, instead of holding the shim for ever; one that
 * answers in time still hands its descriptor back. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "agent/user_open.h"

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int hang_fn(void *arg, int *aux, int *err)
{
    (void)arg;
    (void)aux;
    (void)err;
    for (;;)
        pause();
    return -1;
}

static int open_root_fn(void *arg, int *aux, int *err)
{
    (void)arg;
    *aux = 7;
    int fd = open("/", O_PATH | O_CLOEXEC);
    if (fd < 0)
        *err = errno;
    return fd;
}

Test(user_run, a_child_that_never_answers_is_killed_past_the_deadline,
     .timeout = 30)
{
    /* As this process's own ids: a child all the same. */
    struct user_creds u = {.uid = getuid(), .gid = getgid(), .ngroups = 0};
    if (getuid() != 0)
        cr_skip_test("setgroups needs root");
    user_run_set_timeout(500);
    int aux = -1, err = 0;
    long long t0 = now_ms();
    int fd = user_run(&u, hang_fn, NULL, &aux, &err);
    long long took = now_ms() - t0;
    cr_expect_eq(fd, -1);
    cr_expect_eq(err, ETIME, "err %d", err);
    cr_expect(took >= 400 && took < 10000, "took %lld ms", took);
}

Test(user_run, a_child_that_answers_hands_its_descriptor_back, .timeout = 30)
{
    struct user_creds u = {.uid = getuid(), .gid = getgid(), .ngroups = 0};
    if (getuid() != 0)
        cr_skip_test("setgroups needs root");
    user_run_set_timeout(5000);
    int aux = -1, err = 0;
    int fd = user_run(&u, open_root_fn, NULL, &aux, &err);
    cr_assert_geq(fd, 0, "err %d", err);
    cr_expect_eq(aux, 7);
    close(fd);
}
