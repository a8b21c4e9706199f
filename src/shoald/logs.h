/* SPDX-License-Identifier: Apache-2.0 */
/* Job output on the controller. Agents push what a job writes (they open
 * every connection, so this works behind NAT); the controller keeps it in
 * files under <state>/logs/<job>/ and serves it to `shoal logs`:
 *   <attempt>.<node>.out|err  one node's stream, byte for byte; its size is
 *                             the offset the agent resumes from
 *   <attempt>.all             everything of the attempt in arrival order
 * A job's output is capped (LOGS_JOB_MAX); past it, output is dropped with
 * one marker line. Appends are small writes without fsync: output is not
 * worth a disk flush per chunk.
 */
#ifndef SHOAL_SHOALD_LOGS_H
#define SHOAL_SHOALD_LOGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/model/job.h"
#include "lib/util/error.h"

struct loop;
struct jobtab;

#define LOGS_JOB_MAX (256ull << 20)
#define LOGS_READ_MAX (1u << 20)
#define LOGS_WAIT_MAX_S 60 /* the longest wait for news a reader may ask */

struct logs;

/* Output lives under <state_dir>/logs; loop runs the timer that ends
 * waits at their deadline; *jobs is the job table (read through jobs at
 * each use, as a reload after a failed commit replaces it). */
struct logs *logs_create(const char *state_dir, struct loop *loop,
                         struct jobtab *const *jobs, struct sh_error *err);
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

/* Read stream ("all", "out" or "err") of one attempt of the job (attempt
 * < 0: the current one; each attempt keeps its files, also after the job
 * ended) from offset, or its last tail bytes when tail > 0 (*start: where
 * the read starts): {"data" (UTF-8, invalid bytes replaced), "offset"
 * (where the next read starts), "more" (more is there already), "eof" (the
 * attempt will write no more), "attempt", "attempts"}. NULL and err for a
 * bad stream, an attempt the job never had (SH_ENOTFOUND), or an attempt
 * asked of a job with an output file (--output: every attempt appends
 * there, SH_EINVAL). */
json_t *logs_read(struct logs *l, const struct job *job, int attempt,
                  const char *stream, uint64_t offset, uint64_t tail,
                  uint64_t *start, struct sh_error *err);

/* Called once by logs_wait with a fresh read (owned by fn), or NULL when
 * the job is gone from memory. */
typedef void (*logs_wake_f)(uint64_t job_id, json_t *answer, void *arg);

/* Wait for news on the job: fn is called once with a read of stream at
 * offset when the job writes or changes, at deadline_ms, or at the latest
 * from logs_destroy. */
int logs_wait(struct logs *l, const struct job *job, int attempt,
              const char *stream, uint64_t offset, int64_t deadline_ms,
              logs_wake_f fn, void *arg, struct sh_error *err);

/* The job ended or changed: wake readers waiting on it. */
void logs_job_changed(struct logs *l, uint64_t job_id);

#endif
