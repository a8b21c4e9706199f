/* SPDX-License-Identifier: Apache-2.0 */
/* The shim: the supervisor of one run, `shoal-agent --shim RUN_DIR`. The
 * agent starts it in a session of its own; it takes the run's launch
 * description (launch.h) from the fork server's request, or else reads
 * RUN_DIR/launch.json, starts the run's tasks (as the job's user, in its cgroup, in a process
 * group of their own, with stdout and stderr appended to RUN_DIR/stdout and
 * RUN_DIR/stderr), waits for every task and writes RUN_DIR/status.json:
 * {"exit_code", "signal", "ended_ms", "error"}. Because the shim, not the
 * agent, is the tasks' parent, a run survives an agent restart with its
 * exit status intact.
 *
 * The run folder stays the agent's (root's when it runs as root): the
 * job's user can reach the script (theirs, read and execute only) and
 * nothing else in it. The tasks' process group is known to the shim from
 * fork only; the agent stops the tasks by signalling the shim, which
 * forwards: */
#ifndef SHOAL_AGENT_SHIM_H
#define SHOAL_AGENT_SHIM_H

#include <signal.h>

#define SHIM_SIG_TERM SIGUSR1 /* send SIGTERM to the tasks */
#define SHIM_SIG_KILL SIGUSR2 /* send SIGKILL to the tasks */

#include <stddef.h>

/* Every signal's disposition back to its default. The shim's tasks reset
 * only the dispositions the shim itself changes, so a shim must start from
 * defaults: the fork server calls this once at its start, shim_main (an
 * exec'd shim) at its own. */
void shim_reset_signals(void);

/* Run the shim with RUN_DIR/launch.json; returns the process exit status
 * (0 once status.json is written). */
int shim_main(const char *run_dir);

/* The same with the launch description LAUNCH (LEN bytes of JSON text,
 * from the fork server's request) instead of the file; the text is wiped
 * (explicit_bzero) as soon as it is parsed, as it may hold secrets.
 * LAUNCH NULL reads RUN_DIR/launch.json. */
int shim_main_launch(const char *run_dir, char *launch, size_t len);

#endif
