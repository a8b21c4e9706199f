/* SPDX-License-Identifier: Apache-2.0 */
/* A small single-threaded event loop on epoll, in the spirit of Redis' ae:
 * file descriptors with callbacks, a handful of timers, and a hook that runs
 * once per iteration just before the loop sleeps (where the controller does
 * its group commit). Used by shoald and shoal-agent.
 *
 * Not thread-safe: everything runs on the thread that calls loop_run().
 */
#ifndef SHOAL_LOOP_LOOP_H
#define SHOAL_LOOP_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/util/error.h"

struct loop;

/* Called when fd is ready; events are EPOLLIN/EPOLLOUT/... bits. */
typedef void (*loop_fd_f)(struct loop *loop, int fd, uint32_t events,
                          void *arg);
/* Called when a timer is due. Return the next delay in ms to repeat, or -1
 * to remove the timer. */
typedef int64_t (*loop_timer_f)(struct loop *loop, void *arg);
/* Called once per iteration before sleeping; returns a timeout in ms the
 * loop must not sleep past (-1 = no limit, 0 = do not sleep). */
typedef int (*loop_hook_f)(struct loop *loop, void *arg);

struct loop *loop_create(struct sh_error *err);
/* Free the loop; file descriptors are not closed (their owners close them).
 * NULL-safe. */
void loop_destroy(struct loop *loop);

/* Watch fd for events (EPOLLIN etc.). arg is kept until loop_del_fd. */
int loop_add_fd(struct loop *loop, int fd, uint32_t events, loop_fd_f cb,
                void *arg, struct sh_error *err);
int loop_mod_fd(struct loop *loop, int fd, uint32_t events,
                struct sh_error *err);
void loop_del_fd(struct loop *loop, int fd);

/* Run cb after delay_ms. Returns a timer id > 0, or -1. */
int64_t loop_add_timer(struct loop *loop, int64_t delay_ms, loop_timer_f cb,
                       void *arg);
void loop_del_timer(struct loop *loop, int64_t id);

void loop_set_before_sleep(struct loop *loop, loop_hook_f hook, void *arg);

/* Run until loop_stop(). Returns 0, or -1 when epoll fails. */
int loop_run(struct loop *loop, struct sh_error *err);
void loop_stop(struct loop *loop);

/* Monotonic ms at the start of the current iteration (cheap "now"). */
int64_t loop_now_ms(const struct loop *loop);

#endif
