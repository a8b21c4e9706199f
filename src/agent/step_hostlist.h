/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's host lists ("gpu[01-03,07],login1") expanded to names, for
 * `scontrol show hostnames` inside a job (shoal-step). Pure. */
#ifndef SHOAL_AGENT_STEP_HOSTLIST_H
#define SHOAL_AGENT_STEP_HOSTLIST_H

#include <stdio.h>

#include "lib/util/error.h"

/* Write the names of list, one per line, to out. A range keeps the width
 * of its first bound ("[08-10]": 08 09 10); several bracket groups in one
 * name multiply ("r[1-2]n[1-2]"). 0, or -1 with err for a list that is
 * not one (an unclosed bracket, a range backwards, more than
 * HOSTLIST_NAMES_MAX names). */
#define HOSTLIST_NAMES_MAX 65536
int step_hostlist_print(const char *list, FILE *out, struct sh_error *err);

#endif
