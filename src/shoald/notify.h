/* SPDX-License-Identifier: Apache-2.0 */
/* Notifications for Slurm's --mail-type/--mail-user: the controller runs
 * the command an admin configured (shoald --mail-program PATH) as
 *   PATH JOB_ID USER EVENT MAIL_USER STATE
 * (EVENT: BEGIN, END, FAIL, REQUEUE, INVALID_DEPEND; MAIL_USER the
 * job's --mail-user, else its user; STATE the job's state), in the
 * background with no input, detached (its exit is not waited for). A job
 * asking for mail on a controller without the command is refused at
 * submission. */
#ifndef SHOAL_SHOALD_NOTIFY_H
#define SHOAL_SHOALD_NOTIFY_H

#include "lib/model/job.h"
#include "lib/util/error.h"

/* SH_EINVAL when spec asks for mail and program is NULL. */
int notify_check_submit(const char *program, const struct job_spec *spec,
                        struct sh_error *err);

/* After job went from `from` to its state: run program for the event the
 * job asked for, if any (NULL program: nothing). */
void notify_transition(const char *program, const struct job *job,
                       enum job_state from);

#endif
