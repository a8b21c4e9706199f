/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the event loop's contract as shoald and the agent rely on it: fd
 * callbacks fire with their argument when the fd is ready and stop after
 * loop_del_fd; timers fire in due order, repeat when asked and can be
 * deleted from inside a callback; the before-sleep hook runs every
 * iteration and bounds the sleep; loop_stop ends loop_run. Every test
 * stops its loop from a callback, so none depends on how long anything
 * takes (each has a Criterion timeout in case the loop never stops). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "lib/loop/loop.h"

static struct loop *loop_new(void)
{
    struct sh_error err = {0};
    struct loop *loop = loop_create(&err);
    cr_assert_not_null(loop, "%s", err.msg);
    return loop;
}

static void run_ok(struct loop *loop)
{
    struct sh_error err = {0};
    cr_assert_eq(loop_run(loop, &err), 0, "%s", err.msg);
}

static void pipe_ok(int p[2])
{
    cr_assert_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
}

/* ---- file descriptors ---- */

struct reader {
    int calls;
    uint32_t events;
    char got[16];
    size_t len;
    int stop_after; /* loop_stop when calls reach this */
};

static void on_readable(struct loop *loop, int fd, uint32_t events, void *arg)
{
    struct reader *r = arg;
    r->calls++;
    r->events = events;
    ssize_t n = read(fd, r->got + r->len, sizeof(r->got) - 1 - r->len);
    if (n > 0)
        r->len += (size_t)n;
    if (r->calls >= r->stop_after)
        loop_stop(loop);
}

Test(loop_fd, readable_pipe_calls_back_with_its_argument, .timeout = 10)
{
    struct loop *loop = loop_new();
    int p[2];
    pipe_ok(p);
    struct reader r = {.stop_after = 1};
    cr_assert_eq(loop_add_fd(loop, p[0], EPOLLIN, on_readable, &r, NULL), 0);
    cr_assert_eq(write(p[1], "hi", 2), 2);
    run_ok(loop);
    cr_assert_eq(r.calls, 1);
    cr_assert(r.events & EPOLLIN);
    cr_assert_str_eq(r.got, "hi");
    loop_del_fd(loop, p[0]);
    loop_destroy(loop);
    close(p[0]);
    close(p[1]);
}

static int64_t stop_timer(struct loop *loop, void *arg)
{
    int *fired = arg;
    (*fired)++;
    loop_stop(loop);
    return -1;
}

Test(loop_fd, deleted_fd_is_no_longer_called, .timeout = 10)
{
    struct loop *loop = loop_new();
    int p[2];
    pipe_ok(p);
    struct reader r = {.stop_after = 100};
    cr_assert_eq(loop_add_fd(loop, p[0], EPOLLIN, on_readable, &r, NULL), 0);
    loop_del_fd(loop, p[0]);
    loop_del_fd(loop, p[0]); /* twice is harmless */
    cr_assert_eq(write(p[1], "x", 1), 1);
    int fired = 0;
    cr_assert_gt(loop_add_timer(loop, 20, stop_timer, &fired), 0);
    run_ok(loop);
    cr_assert_eq(fired, 1);
    cr_assert_eq(r.calls, 0, "a deleted fd must not call back");
    loop_destroy(loop);
    close(p[0]);
    close(p[1]);
}

static void on_writable(struct loop *loop, int fd, uint32_t events, void *arg)
{
    struct reader *r = arg;
    (void)fd;
    r->calls++;
    r->events = events;
    loop_stop(loop);
}

Test(loop_fd, mod_fd_switches_the_events_watched, .timeout = 10)
{
    struct loop *loop = loop_new();
    int p[2];
    pipe_ok(p);
    struct reader r = {0};
    /* Watch the write end for nothing that will happen, then for EPOLLOUT
     * (an empty pipe is writable at once). */
    cr_assert_eq(loop_add_fd(loop, p[1], EPOLLIN, on_writable, &r, NULL), 0);
    cr_assert_eq(loop_mod_fd(loop, p[1], EPOLLOUT, NULL), 0);
    run_ok(loop);
    cr_assert_eq(r.calls, 1);
    cr_assert(r.events & EPOLLOUT);
    loop_del_fd(loop, p[1]);
    loop_destroy(loop);
    close(p[0]);
    close(p[1]);
}

Test(loop_fd, adding_a_bad_fd_is_refused)
{
    struct loop *loop = loop_new();
    struct reader r = {0};
    struct sh_error err = {0};
    cr_assert_eq(loop_add_fd(loop, -1, EPOLLIN, on_readable, &r, &err), -1);
    cr_assert_eq(err.code, SH_EINTERNAL);
    cr_assert(strstr(err.msg, "epoll_ctl") != NULL, "%s", err.msg);
    int p[2];
    pipe_ok(p);
    cr_assert_eq(loop_add_fd(loop, p[0], EPOLLIN, on_readable, &r, NULL), 0);
    cr_assert_eq(loop_add_fd(loop, p[0], EPOLLIN, on_readable, &r, &err), -1,
                 "the same fd twice");
    cr_assert_eq(loop_mod_fd(loop, p[1], EPOLLOUT, &err), -1,
                 "an fd never added");
    loop_destroy(loop); /* frees its fd records */
    close(p[0]);
    close(p[1]);
}

/* ---- timers ---- */

struct trace {
    char order[32];
    int n;
    int repeat_left; /* for the repeating timer */
    int64_t victim;  /* a timer to delete from a callback */
    struct loop *loop;
};

static void mark(struct trace *t, char c)
{
    if (t->n < (int)sizeof(t->order) - 1)
        t->order[t->n++] = c;
}

static int64_t timer_a(struct loop *loop, void *arg)
{
    (void)loop;
    mark(arg, 'a');
    return -1;
}

static int64_t timer_b(struct loop *loop, void *arg)
{
    (void)loop;
    mark(arg, 'b');
    return -1;
}

static int64_t timer_c_stop(struct loop *loop, void *arg)
{
    mark(arg, 'c');
    loop_stop(loop);
    return -1;
}

Test(loop_timer, timers_fire_in_due_order, .timeout = 10)
{
    struct loop *loop = loop_new();
    struct trace t = {0};
    /* Added out of order; 100 ms apart so each is due on its own. */
    cr_assert_gt(loop_add_timer(loop, 200, timer_c_stop, &t), 0);
    cr_assert_gt(loop_add_timer(loop, 0, timer_a, &t), 0);
    cr_assert_gt(loop_add_timer(loop, 100, timer_b, &t), 0);
    run_ok(loop);
    cr_assert_str_eq(t.order, "abc");
    loop_destroy(loop);
}

Test(loop_timer, timer_ids_are_distinct_and_positive)
{
    struct loop *loop = loop_new();
    struct trace t = {0};
    int64_t prev = 0;
    for (int i = 0; i < 20; i++) {
        int64_t id = loop_add_timer(loop, 1000, timer_a, &t);
        cr_assert_gt(id, prev);
        prev = id;
    }
    loop_destroy(loop); /* pending timers are freed, never called */
    cr_assert_eq(t.n, 0);
}

static int64_t timer_repeat(struct loop *loop, void *arg)
{
    struct trace *t = arg;
    mark(t, 'r');
    if (--t->repeat_left > 0)
        return 1;
    loop_stop(loop);
    return -1;
}

Test(loop_timer, timer_repeats_while_it_returns_a_delay, .timeout = 10)
{
    struct loop *loop = loop_new();
    struct trace t = {.repeat_left = 5};
    cr_assert_gt(loop_add_timer(loop, 0, timer_repeat, &t), 0);
    run_ok(loop);
    cr_assert_str_eq(t.order, "rrrrr");
    loop_destroy(loop);
}

static int64_t timer_once_then_stop(struct loop *loop, void *arg)
{
    struct trace *t = arg;
    mark(t, 'o');
    loop_add_timer(loop, 50, timer_c_stop, t);
    return -1;
}

Test(loop_timer, timer_returning_minus_one_fires_once, .timeout = 10)
{
    struct loop *loop = loop_new();
    struct trace t = {0};
    cr_assert_gt(loop_add_timer(loop, 0, timer_once_then_stop, &t), 0);
    run_ok(loop);
    cr_assert_str_eq(t.order, "oc", "the first timer ran once, then c");
    loop_destroy(loop);
}

static int64_t timer_kill_victim(struct loop *loop, void *arg)
{
    struct trace *t = arg;
    mark(t, 'k');
    loop_del_timer(loop, t->victim);
    return -1;
}

Test(loop_timer, timer_deleted_from_a_callback_never_fires, .timeout = 10)
{
    struct loop *loop = loop_new();
    struct trace t = {0};
    cr_assert_gt(loop_add_timer(loop, 0, timer_kill_victim, &t), 0);
    t.victim = loop_add_timer(loop, 50, timer_b, &t);
    cr_assert_gt(t.victim, 0);
    cr_assert_gt(loop_add_timer(loop, 150, timer_c_stop, &t), 0);
    run_ok(loop);
    cr_assert_str_eq(t.order, "kc", "b was deleted before it was due");
    loop_destroy(loop);
}

Test(loop_timer, timer_due_now_deleted_by_an_earlier_one_never_fires,
     .timeout = 10)
{
    struct loop *loop = loop_new();
    struct trace t = {0};
    /* Both due at the first iteration; the first deletes the second. */
    cr_assert_gt(loop_add_timer(loop, 0, timer_kill_victim, &t), 0);
    t.victim = loop_add_timer(loop, 0, timer_b, &t);
    cr_assert_gt(loop_add_timer(loop, 50, timer_c_stop, &t), 0);
    run_ok(loop);
    cr_assert_str_eq(t.order, "kc");
    loop_destroy(loop);
}

static int64_t timer_delete_self(struct loop *loop, void *arg)
{
    struct trace *t = arg;
    mark(t, 's');
    loop_del_timer(loop, t->victim); /* its own id */
    return 1;                        /* would repeat, but it is gone */
}

Test(loop_timer, repeating_timer_that_deletes_itself_stops, .timeout = 10)
{
    struct loop *loop = loop_new();
    struct trace t = {0};
    t.victim = loop_add_timer(loop, 0, timer_delete_self, &t);
    cr_assert_gt(loop_add_timer(loop, 100, timer_c_stop, &t), 0);
    run_ok(loop);
    cr_assert_str_eq(t.order, "sc");
    loop_destroy(loop);
}

Test(loop_timer, deleting_an_unknown_timer_is_harmless, .timeout = 10)
{
    struct loop *loop = loop_new();
    struct trace t = {0};
    int64_t id = loop_add_timer(loop, 0, timer_c_stop, &t);
    loop_del_timer(loop, id + 1000);
    run_ok(loop);
    cr_assert_str_eq(t.order, "c");
    loop_del_timer(loop, id); /* already gone */
    loop_destroy(loop);
}

/* ---- before sleep, stop ---- */

struct hook {
    int calls;
    int timeout;    /* what the hook returns */
    int stop_after; /* loop_stop at this call */
    int timer_runs; /* runs of a timer, seen by the hook */
    int timer_runs_at_hook[8];
};

static int before_sleep(struct loop *loop, void *arg)
{
    struct hook *h = arg;
    if (h->calls < 8)
        h->timer_runs_at_hook[h->calls] = h->timer_runs;
    h->calls++;
    if (h->calls >= h->stop_after)
        loop_stop(loop);
    return h->timeout;
}

Test(loop_hook, hook_bounds_the_sleep_of_an_idle_loop, .timeout = 10)
{
    /* Nothing to wait for: without the hook's 1 ms bound the loop would
     * sleep forever and the hook would run once. */
    struct loop *loop = loop_new();
    struct hook h = {.timeout = 1, .stop_after = 5};
    loop_set_before_sleep(loop, before_sleep, &h);
    run_ok(loop);
    cr_assert_eq(h.calls, 5);
    loop_destroy(loop);
}

Test(loop_hook, hook_returning_zero_keeps_the_loop_from_sleeping, .timeout = 10)
{
    struct loop *loop = loop_new();
    struct hook h = {.timeout = 0, .stop_after = 3};
    loop_set_before_sleep(loop, before_sleep, &h);
    run_ok(loop);
    cr_assert_eq(h.calls, 3);
    loop_destroy(loop);
}

static int64_t count_timer(struct loop *loop, void *arg)
{
    (void)loop;
    struct hook *h = arg;
    h->timer_runs++;
    return 1;
}

Test(loop_hook, hook_runs_after_the_due_timers_of_its_iteration, .timeout = 10)
{
    struct loop *loop = loop_new();
    struct hook h = {.timeout = -1, .stop_after = 3};
    cr_assert_gt(loop_add_timer(loop, 0, count_timer, &h), 0);
    loop_set_before_sleep(loop, before_sleep, &h);
    run_ok(loop);
    cr_assert_eq(h.calls, 3);
    cr_assert_eq(h.timer_runs_at_hook[0], 1,
                 "the timer due at start ran before the first hook");
    cr_assert_geq(h.timer_runs_at_hook[2], h.timer_runs_at_hook[1]);
    loop_destroy(loop);
}

Test(loop_hook, stop_from_the_hook_ends_the_loop_before_it_sleeps,
     .timeout = 10)
{
    /* The hook asks for no bound (-1) and there is nothing to wait for:
     * only the stop check after the hook keeps loop_run from blocking. */
    struct loop *loop = loop_new();
    struct hook h = {.timeout = -1, .stop_after = 1};
    loop_set_before_sleep(loop, before_sleep, &h);
    run_ok(loop);
    cr_assert_eq(h.calls, 1);
    loop_destroy(loop);
}

Test(loop_stop, loop_can_run_again_after_a_stop, .timeout = 10)
{
    struct loop *loop = loop_new();
    struct trace t = {0};
    cr_assert_gt(loop_add_timer(loop, 0, timer_c_stop, &t), 0);
    run_ok(loop);
    cr_assert_gt(loop_add_timer(loop, 0, timer_c_stop, &t), 0);
    run_ok(loop);
    cr_assert_str_eq(t.order, "cc");
    loop_destroy(loop);
}

static void on_readable_stop(struct loop *loop, int fd, uint32_t events,
                             void *arg)
{
    struct reader *r = arg;
    char c;
    (void)events;
    r->calls++;
    if (read(fd, &c, 1) == 1)
        r->got[r->len++] = c;
    loop_stop(loop);
}

Test(loop_stop, stop_from_an_fd_callback_returns_from_run, .timeout = 10)
{
    struct loop *loop = loop_new();
    int p[2];
    pipe_ok(p);
    struct reader r = {0};
    cr_assert_eq(loop_add_fd(loop, p[0], EPOLLIN, on_readable_stop, &r, NULL),
                 0);
    cr_assert_eq(write(p[1], "ab", 2), 2);
    run_ok(loop);
    cr_assert_eq(r.calls, 1, "stopped after the first callback");
    run_ok(loop); /* the second byte is still there */
    cr_assert_eq(r.calls, 2);
    cr_assert_str_eq(r.got, "ab");
    loop_del_fd(loop, p[0]);
    loop_destroy(loop);
    close(p[0]);
    close(p[1]);
}

Test(loop_now, now_is_monotonic_and_moves_after_a_wait, .timeout = 10)
{
    struct loop *loop = loop_new();
    int64_t before = loop_now_ms(loop);
    struct trace t = {0};
    cr_assert_gt(loop_add_timer(loop, 20, timer_c_stop, &t), 0);
    int p[2];
    pipe_ok(p);
    struct reader r = {.stop_after = 1};
    cr_assert_eq(loop_add_fd(loop, p[0], EPOLLIN, on_readable, &r, NULL), 0);
    run_ok(loop); /* the timer stops it after a 20 ms wait */
    cr_assert_geq(loop_now_ms(loop), before);
    cr_assert_eq(write(p[1], "x", 1), 1);
    run_ok(loop);
    cr_assert_eq(r.calls, 1);
    cr_assert_geq(loop_now_ms(loop), before + 20,
                  "now was taken after the wait");
    loop_del_fd(loop, p[0]);
    loop_destroy(loop);
    close(p[0]);
    close(p[1]);
    loop_destroy(NULL);
}
