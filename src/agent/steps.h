/* SPDX-License-Identifier: Apache-2.0 */
/* Job steps on this node (Slurm's srun inside a batch job): a unix socket,
 * <state>/step.sock, that the processes of a job reach and nothing else
 * may use. A caller is authorised as the job it runs in: the agent takes
 * its pid from the socket (SO_PEERCRED) and looks for a live run whose
 * shim is an ancestor; a process outside every job (the same user's
 * shell, with the job's variables copied) is refused. No token is handed
 * to the job.
 *   - srun (shoal-step) in a batch script on the job's first node asks
 *     for a step: the agent passes it to the controller, which gives it a
 *     number and hands each other node its part; srun starts this node's
 *     part itself, says when it ended, and hears when the other parts
 *     ended (the highest exit).
 *   - On a batch job's other nodes, the run's task is `shoal-step --serve`:
 *     it asks for the parts of steps its node must run and says how each
 *     ended; the agent reports that to the controller.
 * The links srun and scontrol to shoal-step are kept in <state>/bin, which
 * launch.c puts first on a job's PATH. doc/design/agent.md, "Steps". */
#ifndef SHOAL_AGENT_STEPS_H
#define SHOAL_AGENT_STEPS_H

#include <jansson.h>

#include "agent/agent.h"

struct steps;

/* Bind the socket, make the links (to step_bin, the shoal-step program)
 * and watch the socket in the agent's loop. NULL with err. */
struct steps *steps_create(struct agent *a, const char *step_bin,
                           struct sh_error *err);
/* NULL-safe. */
void steps_destroy(struct steps *s);

/* The socket's path and the folder of links (for the job's environment). */
const char *steps_socket_path(const struct steps *s);
const char *steps_bin_dir(const struct steps *s);
/* The shoal-step program. */
const char *steps_program(const struct steps *s);

/* New desired work from the controller (borrowed): hand steps to the step
 * servers of this node's runs, and tell waiting sruns their steps' other
 * parts ended. */
void steps_work(struct steps *s, const json_t *work);

#endif
