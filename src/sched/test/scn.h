/* SPDX-License-Identifier: Apache-2.0 */
/* Scheduler scenario files (tests/data/sched/NAME.scn, format in
 * tests/data/sched/README.md): a cluster, tenants, a queue, actions at
 * given times and the decisions and reasons expected after each run. The
 * runner drives a real engine and calls sched_check_invariants() after
 * every step. Test-only code.
 */
#ifndef SHOAL_SCHED_TEST_SCN_H
#define SHOAL_SCHED_TEST_SCN_H

#include <stddef.h>

/* Run the scenario file at path. 0 when every expectation held; -1 with
 * "file:line: what went wrong" in msg otherwise. */
int scn_run_file(const char *path, char *msg, size_t size);

/* Run a scenario given as text (name is used in messages). */
int scn_run_text(const char *name, const char *text, char *msg, size_t size);

#endif
