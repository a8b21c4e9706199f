/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal queue --format` and `shoal nodes --format`: squeue's and sinfo's
 * -o format of a job or node line. Fields are
 * %[.][WIDTH]X: '.' right-justifies, WIDTH pads (and, as squeue does,
 * cuts) to that many characters; text between fields is kept; %% is a
 * percent sign. The fields (squeue's letters):
 *   %i  job id (ID_TASK for an array task)   %j  name
 *   %u  user       %a  account (project)     %P  partition
 *   %q  QOS        %p  priority class        %T  state (RUNNING)
 *   %t  compact state (PD R CD F CA PR TO NF)
 *   %M  time used  %l  time limit            %D  node count
 *   %R  nodes when placed, else the reason   %N  nodes (placed)
 *   %b  GPUs (per node, or NxG)              %V  submit time
 *   %S  start time (or its estimate)         %e  end time
 * Node fields (sinfo's letters, a line per node):
 *   %N  name       %T  state (up, down, draining, drained)
 *   %t  sinfo's state word (idle, mix, alloc, drng, drain, down)
 *   %a  up/down    %G  gres (gpu:MODEL:N)    %c  CPUs
 *   %m  memory (MB)  %f  labels (features)   %g  GPUs free/total
 *   %j  running jobs
 * Nothing here talks to the controller. */
#ifndef SHOAL_CMD_FORMAT_H
#define SHOAL_CMD_FORMAT_H

#include <jansson.h>
#include <stdint.h>

#include "lib/util/error.h"
#include "lib/util/strbuf.h"

/* The job members the fields read (for the CLI to fetch). */
extern const char *const queue_format_keys[];

/* SH_EINVAL naming an unknown field. */
int queue_format_check(const char *fmt, struct sh_error *err);

/* The header line (squeue's column names) into out. */
void queue_format_header(const char *fmt, struct strbuf *out);

/* One job's line into out; now_ms for the time used by running jobs. */
void queue_format_row(const char *fmt, const json_t *job, int64_t now_ms,
                      struct strbuf *out);

/* The same for nodes. */
int nodes_format_check(const char *fmt, struct sh_error *err);
void nodes_format_header(const char *fmt, struct strbuf *out);
void nodes_format_row(const char *fmt, const json_t *node, struct strbuf *out);

#endif
