/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's --mail-type and --mail-user on a job: which events the admin's
 * notification command is run for (shoald/notify.c runs it). This module
 * parses and prints the event list and checks the address; no I/O.
 *
 * Events: BEGIN (the job starts), END (it ends, however), FAIL (it ends
 * failed, timed out or on a node failure), REQUEUE (it goes back to the
 * queue), INVALID_DEPEND (cancelled as its dependency can never be met);
 * ALL is all of them, NONE none. ARRAY_TASKS is accepted: Shoal notifies
 * per task of an array always. TIME_LIMIT* and STAGE_OUT are refused. */
#ifndef SHOAL_MODEL_JOB_MAIL_H
#define SHOAL_MODEL_JOB_MAIL_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/util/error.h"

enum job_mail_event {
    JOB_MAIL_BEGIN = 1 << 0,
    JOB_MAIL_END = 1 << 1,
    JOB_MAIL_FAIL = 1 << 2,
    JOB_MAIL_REQUEUE = 1 << 3,
    JOB_MAIL_INVALID_DEPEND = 1 << 4,
    JOB_MAIL_ALL = (1 << 5) - 1,
};

#define JOB_MAIL_USER_MAX 256

/* "END,FAIL" into *events (0 for NONE). SH_EINVAL naming the item. */
int job_mail_parse(const char *text, int *events, struct sh_error *err);

/* The canonical list ("BEGIN,END"; "NONE" for 0) into buf; returns buf. */
const char *job_mail_format(int events, char *buf, size_t size);

/* The one event's name ("BEGIN"). */
const char *job_mail_event_name(enum job_mail_event e);

/* An address the command is given as one argument: 1..JOB_MAIL_USER_MAX
 * of letters, digits and ._%+-@, not starting with '-'. */
bool job_mail_user_valid(const char *s);

#endif
