/* SPDX-License-Identifier: Apache-2.0 */
/* The epoll event loop (see loop.h). Timers are few (heartbeat checks,
 * timeouts), so they live in a small array scanned each iteration. */
#include "lib/loop/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <uthash.h>

#include "lib/util/clock.h"

#define LOOP_MAX_EVENTS 256

struct loop_fd {
    int fd;
    loop_fd_f cb;
    void *arg;
    UT_hash_handle hh;
};

struct loop_timer {
    int64_t id;
    int64_t due_ms;
    loop_timer_f cb;
    void *arg;
};

struct loop {
    int epfd;
    struct loop_fd *fds; /* hash by fd */
    struct loop_timer *timers;
    int ntimers;
    int timer_cap;
    int64_t next_timer_id;
    loop_hook_f before_sleep;
    void *before_sleep_arg;
    bool stop;
    int64_t now_ms;
};

struct loop *loop_create(struct sh_error *err)
{
    struct loop *loop = calloc(1, sizeof(*loop));
    if (!loop) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    loop->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (loop->epfd < 0) {
        sh_errorf(err, SH_EINTERNAL, "epoll_create1: %s", strerror(errno));
        free(loop);
        return NULL;
    }
    loop->now_ms = clock_mono_ms();
    return loop;
}

void loop_destroy(struct loop *loop)
{
    if (!loop)
        return;
    int saved = errno;
    struct loop_fd *f, *tmp;
    HASH_ITER (hh, loop->fds, f, tmp) {
        HASH_DEL(loop->fds, f);
        free(f);
    }
    free(loop->timers);
    close(loop->epfd);
    free(loop);
    errno = saved;
}

int loop_add_fd(struct loop *loop, int fd, uint32_t events, loop_fd_f cb,
                void *arg, struct sh_error *err)
{
    struct loop_fd *f = calloc(1, sizeof(*f));
    if (!f)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    f->fd = fd;
    f->cb = cb;
    f->arg = arg;
    struct epoll_event ev = {.events = events, .data.fd = fd};
    if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        int e = errno;
        free(f);
        return sh_errorf(err, SH_EINTERNAL, "epoll_ctl add %d: %s", fd,
                         strerror(e));
    }
    HASH_ADD_INT(loop->fds, fd, f);
    return 0;
}

int loop_mod_fd(struct loop *loop, int fd, uint32_t events,
                struct sh_error *err)
{
    struct epoll_event ev = {.events = events, .data.fd = fd};
    if (epoll_ctl(loop->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
        return sh_errorf(err, SH_EINTERNAL, "epoll_ctl mod %d: %s", fd,
                         strerror(errno));
    return 0;
}

void loop_del_fd(struct loop *loop, int fd)
{
    struct loop_fd *f;
    HASH_FIND_INT(loop->fds, &fd, f);
    if (!f)
        return;
    epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
    HASH_DEL(loop->fds, f);
    free(f);
}

int64_t loop_add_timer(struct loop *loop, int64_t delay_ms, loop_timer_f cb,
                       void *arg)
{
    if (loop->ntimers == loop->timer_cap) {
        int cap = loop->timer_cap ? loop->timer_cap * 2 : 8;
        struct loop_timer *t = realloc(loop->timers, (size_t)cap * sizeof(*t));
        if (!t)
            return -1;
        loop->timers = t;
        loop->timer_cap = cap;
    }
    struct loop_timer *t = &loop->timers[loop->ntimers++];
    t->id = ++loop->next_timer_id;
    t->due_ms = clock_mono_ms() + (delay_ms > 0 ? delay_ms : 0);
    t->cb = cb;
    t->arg = arg;
    return t->id;
}

void loop_del_timer(struct loop *loop, int64_t id)
{
    for (int i = 0; i < loop->ntimers; i++) {
        if (loop->timers[i].id == id) {
            loop->timers[i] = loop->timers[--loop->ntimers];
            return;
        }
    }
}

void loop_set_before_sleep(struct loop *loop, loop_hook_f hook, void *arg)
{
    loop->before_sleep = hook;
    loop->before_sleep_arg = arg;
}

void loop_stop(struct loop *loop)
{
    loop->stop = true;
}

int64_t loop_now_ms(const struct loop *loop)
{
    return loop->now_ms;
}

/* Run due timers; return ms until the next one (-1 when none). */
static int run_timers(struct loop *loop)
{
    int64_t now = clock_mono_ms();
    int64_t next = -1;
    /* Callbacks may add or delete timers: find due ones by id each time. */
    for (int i = 0; i < loop->ntimers; i++) {
        struct loop_timer *t = &loop->timers[i];
        if (t->due_ms > now)
            continue;
        int64_t id = t->id;
        int64_t again = t->cb(loop, t->arg);
        /* Find it again: the callback may have changed the array. */
        int j;
        for (j = 0; j < loop->ntimers; j++) {
            if (loop->timers[j].id == id)
                break;
        }
        if (j == loop->ntimers)
            continue;
        if (again < 0) {
            loop->timers[j] = loop->timers[--loop->ntimers];
            i = -1; /* restart the scan: order changed */
            continue;
        }
        loop->timers[j].due_ms = now + again;
    }
    for (int i = 0; i < loop->ntimers; i++) {
        int64_t d = loop->timers[i].due_ms - now;
        if (d < 0)
            d = 0;
        if (next < 0 || d < next)
            next = d;
    }
    return next > INT32_MAX ? INT32_MAX : (int)next;
}

int loop_run(struct loop *loop, struct sh_error *err)
{
    struct epoll_event events[LOOP_MAX_EVENTS];
    loop->stop = false;
    while (!loop->stop) {
        int timeout = run_timers(loop);
        if (loop->before_sleep) {
            int t = loop->before_sleep(loop, loop->before_sleep_arg);
            if (t >= 0 && (timeout < 0 || t < timeout))
                timeout = t;
        }
        if (loop->stop)
            break;
        int n = epoll_wait(loop->epfd, events, LOOP_MAX_EVENTS, timeout);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return sh_errorf(err, SH_EINTERNAL, "epoll_wait: %s",
                             strerror(errno));
        }
        loop->now_ms = clock_mono_ms();
        for (int i = 0; i < n; i++) {
            struct loop_fd *f;
            int fd = events[i].data.fd;
            HASH_FIND_INT(loop->fds, &fd, f);
            if (f)
                f->cb(loop, fd, events[i].events, f->arg);
        }
    }
    return 0;
}
