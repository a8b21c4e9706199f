/* SPDX-License-Identifier: Apache-2.0 */
/* Job output on the controller. Agents push what a job writes (they open
 * every connection, so this works behind NAT); the controller keeps it in
 * files under <state>/logs/<job>/ and serves it to `shoal logs`:
 *   <attempt>.<node>.out|err  one node's stream, byte for byte; its size is
 *                             the offset the agent resumes from
 *   <attempt>.all             everything of the attempt in arrival order
 * An attempt's output is capped (LOGS_JOB_MAX); past it, output is dropped with
 * one marker line. Appends are small writes without fsync: output is not
 * worth a disk flush per chunk.
 */
#ifndef SHOAL_SHOALD_LOGS_H
#define SHOAL_SHOALD_LOGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/model/job.h"
#include "shoald/api.h"
#include "shoald/shoald.h"

#define LOGS_JOB_MAX (256ull << 20)
#define LOGS_READ_MAX (1u << 20)

struct logs;

struct logs *logs_create(struct shoald *d, struct sh_error *err);
/* Answers every held read and frees. NULL-safe. */
void logs_destroy(struct logs *l);

/* Append data that the agent of node read at offset of its stream ("out"
 * or "err") of the job's current attempt. Data already received (below the
 * stored size) is skipped, so a resent chunk is harmless; data past the
 * stored size would leave a hole and is refused (SH_ECONFLICT: the agent
 * asks for the size, offset 0 and no data, and resends from there).
 * *stored is the stream's size afterwards. Wakes held readers. */
int logs_append(struct logs *l, const struct job *job, const char *node,
                const char *stream, uint64_t offset, const char *data,
                size_t len, uint64_t *stored, struct sh_error *err);

/* Answer GET /v1/jobs/{id}/logs: ?offset=N&stream=all|out|err&wait=S
 * &attempt=A (default: the current attempt; each attempt keeps its files,
 * also after the job ended). Holds the request up to S seconds when there
 * is nothing new and the attempt may still write. An attempt the job never
 * had is SH_ENOTFOUND; asking a job with an output file (--output) for an
 * attempt is SH_EINVAL, since it keeps none here. */
void logs_serve(struct logs *l, const struct job *job, struct api_req *req);

/* The job ended or changed: wake readers waiting on it. */
void logs_job_changed(struct logs *l, uint64_t job_id);

#endif
