/* SPDX-License-Identifier: Apache-2.0 */
/* Retention: what the controller keeps of ended jobs, as the admin sets it.
 *   --keep-output DUR        a job's output (<state>/logs/<job>/, logs.h)
 *                            goes this long after its last write, once the
 *                            job has ended (0: kept forever, the default)
 *   --keep-output-size SIZE  ...and the oldest ended jobs' output goes while
 *                            all output together is over SIZE (0: no cap)
 *   --keep-history DUR       a job's record (the store's history: shoal
 *                            history, usage, shoal show) goes this long after
 *                            it ended (0: kept forever); at least
 *                            --keep-finished
 * The controller's cron (main.c) calls retention_tick; a pass runs every
 * --retention-interval (default 10m), on the leader, between commits. The
 * output of a job still pending or running is never pruned, whatever its
 * age or size. /metrics shows what is kept and what went
 * (retention_figures). */
#ifndef SHOAL_SHOALD_RETENTION_H
#define SHOAL_SHOALD_RETENTION_H

#include <stdint.h>

#include "lib/util/error.h"

struct shoald;
struct prom;

struct retention;

struct retention *retention_create(struct sh_error *err);
void retention_destroy(struct retention *r); /* NULL-safe */

/* Runs a pass when one is due (now: the controller's clock, ms). */
void retention_tick(struct shoald *d, int64_t now);

/* shoal_output_kept_bytes, shoal_output_kept_jobs, shoal_history_kept_jobs
 * (as of the last pass), shoal_output_pruned_jobs_total,
 * shoal_history_pruned_jobs_total. */
void retention_figures(const struct shoald *d, struct prom *p);

#endif
