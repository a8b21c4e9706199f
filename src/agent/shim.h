/* SPDX-License-Identifier: Apache-2.0 */
/* The shim: the supervisor of one run, `shoal-agent --shim RUN_DIR`. The
 * agent starts it in a session of its own; it reads RUN_DIR/launch.json,
 * starts the run's tasks (as the job's user, in its cgroup, with stdout and
 * stderr appended to RUN_DIR/stdout and RUN_DIR/stderr), writes the tasks'
 * process group to RUN_DIR/pgid, waits for every task and writes
 * RUN_DIR/status.json: {"exit_code", "signal", "ended_ms", "error"}.
 * Because the shim, not the agent, is the tasks' parent, a run survives an
 * agent restart with its exit status intact. */
#ifndef SHOAL_AGENT_SHIM_H
#define SHOAL_AGENT_SHIM_H

/* Run the shim; returns the process exit status (0 once status.json is
 * written). */
int shim_main(const char *run_dir);

#endif
