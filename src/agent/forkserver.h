/* SPDX-License-Identifier: Apache-2.0 */
/* The shim fork server: a single-threaded helper, `shoal-agent
 * --fork-server`, started once with the agent, that forks a shim for each
 * run on request. The agent itself has a second thread (the long-poll), so
 * it cannot fork without exec; exec'ing `shoal-agent --shim` for every run
 * cost a process start and the dynamic loading of the agent's libraries per
 * job. The server's child is what that exec gave: a session of its own,
 * stdin and stdout on /dev/null, stderr appended to the run's shim.log, no
 * signal blocked or caught, no descriptor of the server's, and then
 * shim_main(RUN_DIR).
 *
 * Requests go over a SOCK_SEQPACKET socket pair: the agent sends the run
 * folder and, after a NUL, the run's launch description (launch.h), so no
 * launch.json is written for a run the server starts; the server answers
 * the shim's pid and passes a pidfd of it
 * (opened before the server can reap it, so the pid is never a reused
 * one). The server reaps its children as they exit, so a shim's end is
 * seen as the agent sees an adopted shim's (pidfd, /proc start time). It
 * exits when the agent's end of the socket closes; shims it started go on
 * (they are in sessions of their own, as before) and a restarted agent
 * adopts them from their run folders. The server is started with
 * LD_BIND_NOW=1, so the loader resolves every symbol once at its start and
 * no forked shim resolves (and writes into a copy of) the server's symbol
 * tables on its first calls; the server drops the variable from its
 * environment at once, so nothing it starts inherits it. When the server cannot be used the
 * agent falls back to posix_spawn of `shoal-agent --shim`, but never for a
 * run whose request reached the server (it may have forked that run's
 * shim): that run fails. The shim also locks its run folder (flock), so a
 * second shim for a run exits. */
#ifndef SHOAL_AGENT_FORKSERVER_H
#define SHOAL_AGENT_FORKSERVER_H

#include <stddef.h>
#include <sys/types.h>

#include "lib/util/error.h"

struct forkserver;

/* Start `SELF_EXE --fork-server RUNS_DIR`, which forks shims only for
 * RUNS_DIR/<id>.<attempt>; NULL (and ERR set) when it cannot. */
struct forkserver *forkserver_start(const char *self_exe, const char *runs_dir,
                                    struct sh_error *err);

/* What forkserver_spawn did. */
enum {
    FORKSERVER_OK = 0,
    /* The server answered that it started no shim (ERR says why); it is
     * still of use. */
    FORKSERVER_REFUSED = -1,
    /* The request was sent but no usable answer came (timeout, the server
     * gone, a pid without its pidfd): a shim may be running for RUN_DIR,
     * so none may be started for it by other means. */
    FORKSERVER_BROKEN = -2,
    /* The request never reached the server: no shim was forked, and the
     * server is gone (the socket's other end closed, or another error of
     * the socket). */
    FORKSERVER_UNSENT = -3,
    /* This request could not be sent (EMSGSIZE: over the socket's send
     * buffer, capped by net.core.wmem_max; ENOBUFS, ENOMEM): no shim was
     * forked, and the server is still of use, for a shorter request (the
     * run folder alone, its description in launch.json) or the next run. */
    FORKSERVER_NOT_SENT = -4,
};

/* The longest launch description sent inside a request; a longer one
 * goes to the shim in RUN_DIR/launch.json, as without the server. */
#define FORKSERVER_LAUNCH_MAX (60 * 1024)

/* Fork a shim for RUN_DIR, which reads RUN_DIR/launch.json: *PID, *PIDFD
 * (the caller owns it) and *START (its /proc start time) on FORKSERVER_OK;
 * else one of the codes above with ERR set. After BROKEN or UNSENT the
 * server is of no further use; after REFUSED or NOT_SENT it is. */
int forkserver_spawn(struct forkserver *fs, const char *run_dir, pid_t *pid,
                     int *pidfd, unsigned long long *start,
                     struct sh_error *err);

/* The same with the launch description LAUNCH (LEN bytes of JSON text, no
 * NUL; borrowed) sent in the request: the shim reads no launch.json and
 * wipes the text once it parsed it. LAUNCH NULL is forkserver_spawn. A
 * LEN above FORKSERVER_LAUNCH_MAX is refused before anything is sent
 * (FORKSERVER_REFUSED). The caller wipes its own copy. */
int forkserver_spawn_launch(struct forkserver *fs, const char *run_dir,
                            const char *launch, size_t len, pid_t *pid,
                            int *pidfd, unsigned long long *start,
                            struct sh_error *err);

/* Close the socket and SIGKILL the server, without waiting: whoever reaps
 * the process's children (the agent's SIGCHLD loop) reaps it. */
void forkserver_stop(struct forkserver *fs);

/* Field 22 of /proc/PID/stat, to tell a process from a later one with the
 * same pid; 0 when it is gone. */
unsigned long long forkserver_proc_start(pid_t pid);

/* The server's main loop, for `shoal-agent --fork-server RUNS_DIR` (its
 * socket is descriptor 3). A request it cannot serve (not a run folder of
 * RUNS_DIR, truncated, or the fork failed) is answered with its error and
 * the server goes on. Returns the process exit status. */
int forkserver_main(const char *runs_dir);

#endif
