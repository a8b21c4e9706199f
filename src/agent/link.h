/* SPDX-License-Identifier: Apache-2.0 */
/* Everything the agent says to the controller, and hears from it. The agent
 * opens every connection (so a node behind NAT joins with only the URL and
 * a join token):
 *   - registration (join with the join token the first time, then with the
 *     node's own token, kept in <state>/token),
 *   - heartbeats with GPU samples, the runs alive, and exit events,
 *   - output chunks of runs,
 *   - and, on a thread of its own, the long-poll for work, whose answers
 *     reach the loop through a mailbox and an eventfd.
 * When the controller is away, calls fail fast and are retried; running
 * jobs are not touched.
 */
#ifndef SHOAL_AGENT_LINK_H
#define SHOAL_AGENT_LINK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"

struct link *link_create(struct agent *a, struct sh_error *err);
/* Stop the poll thread and free. NULL-safe. */
void link_destroy(struct link *l);

/* Register (or come back). On success the desired work that came with the
 * answer is reconciled. -1 with err when the controller is unreachable or
 * refuses (SH_EUNAUTH/SH_EFORBIDDEN: the join token is wrong). */
int link_register(struct link *l, struct sh_error *err);

/* Send a heartbeat now. Re-registers when the controller has forgotten the
 * node. */
int link_heartbeat(struct link *l, struct sh_error *err);

/* Ask for a heartbeat before the loop next sleeps (an exit happened). */
void link_heartbeat_soon(struct link *l);
bool link_heartbeat_due(const struct link *l);

/* Push a chunk of a run's output read at offset. *stored is how much of
 * that stream the controller has. 0; 1 when the controller has less than
 * offset (it refused the hole; resend from *stored); -1 with err. */
int link_push_log(struct link *l, uint64_t id, int attempt, const char *stream,
                  uint64_t offset, const char *data, size_t len,
                  uint64_t *stored, struct sh_error *err);

/* One call to the controller from the loop (method, path; body
 * borrowed, may be NULL): 0 with *ans (new reference, may be NULL), or -1
 * with err (the controller's message when it answered). */
int link_call(struct link *l, const char *method, const char *path,
              const json_t *body, json_t **ans, struct sh_error *err);

/* Start the long-poll thread (after the first registration). */
int link_start_poll(struct link *l, struct sh_error *err);

/* The eventfd that becomes readable when work arrived; link_take_work()
 * returns the newest (new reference) or NULL. */
int link_work_fd(const struct link *l);
json_t *link_take_work(struct link *l);

/* True while the controller answered the last call. */
bool link_connected(const struct link *l);

#endif
