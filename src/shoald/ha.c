/* SPDX-License-Identifier: Apache-2.0 */
/* Leader or follower (see ha.h and doc/design/ha.md): the role at start,
 * the follower's answers and its tries to lead, the leader's checks, and
 * what a deposed leader does. */
#include "shoald/ha.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/loop/loop.h"
#include "lib/util/clock.h"
#include "lib/util/log.h"
#include "shoald/engine.h"
#include "shoald/commit.h"
#include "shoald/logs.h"
#include "shoald/nodetab.h"
#include "shoald/state.h"
#include "store/store.h"

/* A follower tries to lead, and a leader checks its leadership, this
 * often. */
#define HA_TICK_MS 1000
/* A waiting leader that got the lock back but cannot reload the state
 * this many ticks in a row steps down. */
#define HA_RELOAD_TRIES 5
/* At start, how long to wait for the session of our own previous run. */
#define HA_PREDECESSOR_WAIT_MS 15000

/* HA_WAITING: a leader whose leadership became unknown (its session to the
 * database ended: an outage, or a partition). It serves nothing and decides
 * nothing, and tries to lead again; if another controller leads meanwhile
 * it is deposed. */
enum ha_role { HA_FOLLOWER = 0, HA_LEADER, HA_WAITING, HA_DEPOSED };

struct ha {
    enum ha_role role;
    bool leadership; /* the store has leadership (else always leader) */
    uint64_t epoch;
    char my_url[512];
    char leader_url[512];
    int port;            /* bound: a deposed leader starts again on it */
    int reload_failures; /* a waiting leader's, in a row */
    int argc;
    char **argv;
};

/* Load the state and start serving: the same path as a controller that
 * starts alone. */
static int lead(struct shoald *d, struct sh_error *err)
{
    if (state_load(d, err) < 0 || cluster_create(d, err) < 0 ||
        state_init_cluster(d, err) < 0)
        return -1;
    d->logs = logs_create(d->cfg.state_dir, d->loop, &d->jobs, err);
    if (!d->logs)
        return -1;
    d->ha->role = HA_LEADER;
    snprintf(d->ha->leader_url, sizeof(d->ha->leader_url), "%s", d->ha->my_url);
    return 0;
}

static void lost(struct shoald *d, const char *why)
{
    struct ha *ha = d->ha;
    if (ha->role == HA_DEPOSED)
        return;
    ha->role = HA_DEPOSED;
    sh_log(LOG_CRIT, "ha",
           "leadership lost (epoch %llu): %s; stopping at once without "
           "committing anything more, then starting again as a follower",
           (unsigned long long)ha->epoch, why);
    d->stopping = true;
    loop_stop(d->loop);
}

/* A waiting leader: lead again (reloading everything from the store: another
 * controller may have led meanwhile), or step down. */
static int64_t wait_tick(struct shoald *d)
{
    struct ha *ha = d->ha;
    struct sh_error err;
    char leader[sizeof(ha->leader_url)];
    int rc = store_leader_try(d->store, ha->my_url, &ha->epoch, leader,
                              sizeof(leader), &err);
    if (rc < 0)
        return HA_TICK_MS;
    if (rc == 0) {
        lost(d, "another controller leads now");
        return HA_TICK_MS;
    }
    if (state_reload(d, &err) < 0) {
        /* The store's other session may still be reconnecting: try again
         * next tick, but do not hold the leadership for long uselessly. */
        sh_log(LOG_ERR, "ha", "cannot reload the state: %s", err.msg);
        if (++ha->reload_failures >= HA_RELOAD_TRIES)
            lost(d, "the state could not be reloaded");
        return HA_TICK_MS;
    }
    ha->reload_failures = 0;
    /* Nodes could not reach us meanwhile: one heartbeat timeout each. */
    nodetab_grace(d->nodes, shoald_now_ms(d), false);
    ha->role = HA_LEADER;
    sh_log(LOG_NOTICE, "ha", "leading again (epoch %llu), state reloaded",
           (unsigned long long)ha->epoch);
    return HA_TICK_MS;
}

static int64_t tick(struct loop *loop, void *arg)
{
    struct shoald *d = arg;
    struct ha *ha = d->ha;
    struct sh_error err;
    (void)loop;
    if (ha->role == HA_LEADER) {
        if (store_leader_check(d->store, &err) == 0)
            return HA_TICK_MS;
        if (err.code == SH_ECONFLICT) {
            lost(d, err.msg);
            return HA_TICK_MS;
        }
        /* Unknown: the store refuses our commits from now on (epoch 0). */
        ha->role = HA_WAITING;
        sh_log(LOG_ERR, "ha",
               "leadership unknown: %s; serving nothing until the database "
               "answers again",
               err.msg);
        return HA_TICK_MS;
    }
    if (ha->role == HA_WAITING)
        return wait_tick(d);
    if (ha->role != HA_FOLLOWER)
        return HA_TICK_MS;
    char leader[sizeof(ha->leader_url)];
    int rc = store_leader_try(d->store, ha->my_url, &ha->epoch, leader,
                              sizeof(leader), &err);
    if (rc < 0) {
        sh_log(LOG_WARNING, "ha", "cannot try to lead: %s", err.msg);
        return HA_TICK_MS;
    }
    if (rc == 0) {
        if (strcmp(leader, ha->leader_url) != 0)
            sh_log(LOG_NOTICE, "ha", "following the leader at %s",
                   leader[0] ? leader : "(unknown)");
        snprintf(ha->leader_url, sizeof(ha->leader_url), "%s", leader);
        return HA_TICK_MS;
    }
    sh_log(LOG_NOTICE, "ha", "leading now (epoch %llu): loading the state",
           (unsigned long long)ha->epoch);
    int64_t t0 = clock_mono_ms();
    if (lead(d, &err) < 0) {
        /* Half a state cannot serve: let the leadership go and start again
         * from nothing as a follower, which waits for the database when it
         * is down (it may be restarting: the lock was won while it went
         * down or came up). Never exit: the standby is still needed. */
        sh_log(LOG_ERR, "ha", "cannot load the state as the new leader: %s",
               err.msg);
        lost(d, "the state could not be loaded");
        return HA_TICK_MS;
    }
    sh_log(LOG_NOTICE, "ha",
           "took over as leader at %s (epoch %llu) in %lld ms after loading; "
           "nodes have %d s to reconnect",
           ha->my_url, (unsigned long long)ha->epoch,
           (long long)(clock_mono_ms() - t0), d->cfg.heartbeat_timeout_s);
    return HA_TICK_MS;
}

int ha_start(struct shoald *d, int port, int argc, char **argv,
             struct sh_error *err)
{
    struct ha *ha = calloc(1, sizeof(*ha));
    if (!ha)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    d->ha = ha;
    ha->argc = argc;
    ha->argv = argv;
    ha->port = port;
    const char *url = d->cfg.advertise_url ? d->cfg.advertise_url : d->url;
    if (strlen(url) >= sizeof(ha->my_url))
        return sh_errorf(err, SH_EINVAL, "--advertise-url is too long");
    snprintf(ha->my_url, sizeof(ha->my_url), "%s", url);
    ha->leadership = store_has_leadership(d->store);
    if (!ha->leadership)
        return lead(d, err);
    int rc = store_leader_try(d->store, ha->my_url, &ha->epoch, ha->leader_url,
                              sizeof(ha->leader_url), err);
    /* The leader is at our own URL: our previous run (this process holds
     * that port now, so it is gone), whose session the database has not
     * ended yet. Wait for it rather than follow a dead leader. */
    int64_t until = clock_mono_ms() + HA_PREDECESSOR_WAIT_MS;
    if (rc == 0 && strcmp(ha->leader_url, ha->my_url) == 0)
        sh_log(LOG_NOTICE, "ha",
               "the leader's URL is ours: waiting for the database to end "
               "our previous run's session");
    while (rc == 0 && strcmp(ha->leader_url, ha->my_url) == 0 &&
           clock_mono_ms() < until) {
        usleep(100000);
        rc = store_leader_try(d->store, ha->my_url, &ha->epoch, ha->leader_url,
                              sizeof(ha->leader_url), err);
    }
    if (rc < 0)
        return -1;
    if (rc == 1) {
        if (lead(d, err) < 0)
            return -1;
        sh_log(LOG_NOTICE, "ha", "leader at %s (epoch %llu)", ha->my_url,
               (unsigned long long)ha->epoch);
    } else {
        sh_log(LOG_NOTICE, "ha",
               "follower: the leader is at %s; serving /v1/health and "
               "pointing every other call there",
               ha->leader_url[0] ? ha->leader_url : "(unknown)");
    }
    if (loop_add_timer(d->loop, HA_TICK_MS, tick, d) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

bool ha_serving(const struct shoald *d)
{
    return d->ha && d->ha->role == HA_LEADER;
}

bool ha_deposed(const struct shoald *d)
{
    return d->ha && d->ha->role == HA_DEPOSED;
}

const char *ha_role(const struct shoald *d)
{
    if (!d->ha)
        return "starting";
    switch (d->ha->role) {
    case HA_LEADER:
        return "leader";
    case HA_FOLLOWER:
        return "follower";
    case HA_WAITING:
        return "waiting";
    default:
        return "deposed";
    }
}

const char *ha_leader_url(const struct shoald *d)
{
    return d->ha ? d->ha->leader_url : "";
}

void ha_fenced(void *arg, const char *why)
{
    struct shoald *d = arg;
    /* A waiting leader's commits are refused by the store itself. */
    if (d->ha && d->ha->leadership && d->ha->role == HA_LEADER)
        lost(d, why);
}

int ha_finish(struct shoald *d, int rc)
{
    struct ha *ha = d->ha;
    d->ha = NULL;
    if (!ha || ha->role != HA_DEPOSED) {
        free(ha);
        return rc;
    }
    /* Start again from nothing (every file and the database session are
     * closed by now), on the same port: it may have been chosen at random
     * (--port 0), and the advertised URL names it. */
    char port[32];
    char **argv = calloc((size_t)ha->argc + 2, sizeof(char *));
    if (argv) {
        for (int i = 0; i < ha->argc; i++)
            argv[i] = ha->argv[i];
        snprintf(port, sizeof(port), "--port=%d", ha->port);
        argv[ha->argc] = port;
        setenv(HA_RESTART_ENV, "1", 1);
        execv("/proc/self/exe", argv);
        sh_log(LOG_CRIT, "ha", "cannot start again as a follower: %m");
        free(argv);
    }
    free(ha);
    return HA_EXIT_DEPOSED;
}
