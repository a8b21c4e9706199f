/* SPDX-License-Identifier: Apache-2.0 */
/* Opening a path as a job's user: a child process that becomes the user
 * (groups, gid, uid) opens it and hands the descriptor back over a socket
 * (SCM_RIGHTS). The root-running shim then holds an object the user's own
 * lookup and permissions reached, never one root's would. Used for
 * container mounts (shim_ctr.c) and local images (image.c). */
#ifndef SHOAL_AGENT_USER_OPEN_H
#define SHOAL_AGENT_USER_OPEN_H

#include <sys/types.h>

struct user_creds {
    uid_t uid;
    gid_t gid;
    const gid_t *groups;
    int ngroups;
};

/* path opened O_PATH as the user: a descriptor that pins what the user's
 * lookup found (for binding). The fd (close-on-exec), or -1 with the
 * errno of the user's lookup in *err. */
int user_open_path(const char *path, const struct user_creds *u, int *err);

/* path opened for reading as the user, only when it is of type (S_IFREG or
 * S_IFDIR): the type is checked on an O_PATH descriptor before the real
 * open (O_RDONLY | O_NONBLOCK), so a FIFO or a device is not opened, and
 * the real open must reach the same file (ESTALE when the path changed in
 * between). The child that opens it holds no descriptor of the shim and
 * stays non-dumpable, so the user cannot attach to it. The fd
 * (close-on-exec), or -1 with *err: the user's errno, EMEDIUMTYPE for
 * another type. u NULL: opened by this process, same checks. */
int user_open_read(const char *path, const struct user_creds *u, mode_t type,
                   int *err);

/* What user_run runs: a descriptor (the answer), or -1 with *err set;
 * *aux is a number that travels back with it. */
typedef int (*user_fn)(void *arg, int *aux, int *err);

/* Run fn(arg) as the user, in a child process that holds no descriptor of
 * the caller and becomes the user (groups, gid, uid) first; the
 * descriptor it returns comes back over a socket (SCM_RIGHTS), with *aux.
 * The child shares the caller's mount namespace, so it sees what the
 * caller sees with the user's rights. u NULL: fn runs in this process.
 * The fd, or -1 with *err (the user's errno); *aux is set either way. A
 * child that has not answered within USER_RUN_TIMEOUT_MS (a path through
 * a hung mount of the user's) is killed, and *err is ETIME. */
int user_run(const struct user_creds *u, user_fn fn, void *arg, int *aux,
             int *err);

#define USER_RUN_TIMEOUT_MS 30000

/* The deadline of user_run's child, in ms (tests shorten it). */
void user_run_set_timeout(int ms);

#endif
