/* SPDX-License-Identifier: Apache-2.0 */
/* JSON codecs for jobs (jansson): the strict request parser for submissions,
 * the view users get from the API, and the record the store keeps.
 *
 * A submission is {"command": [...], "gpus": 2, ...}; every field is checked
 * for its type and range, and unknown fields are refused, so a typo never
 * silently becomes a default. Sizes and durations may be numbers (bytes,
 * seconds) or strings ("16G", "2h").
 */
#ifndef SHOAL_MODEL_JOB_JSON_H
#define SHOAL_MODEL_JOB_JSON_H

#include <jansson.h>

#include "lib/model/job.h"
#include "lib/util/strbuf.h"

/* Fill spec (initialised by the caller) from a submission object. The spec
 * is validated with job_spec_validate() except for user and project, which
 * the controller fills afterwards. On failure spec is left empty.
 * obj is borrowed. */
int job_spec_from_json(const json_t *obj, struct job_spec *spec,
                       struct sh_error *err);

/* The spec as a submission object (round-trips through job_spec_from_json).
 * New reference, NULL on out of memory. */
json_t *job_spec_to_json(const struct job_spec *spec);

/* The user's view of a job: flat fields, ISO times, placement.
 * New reference, NULL on out of memory. */
json_t *job_to_json(const struct job *job);

/* What a listing adds to a job's view: the reason and estimated start of
 * the moment (NULL / 0: the job's own), and a note when there is no
 * estimate (NULL or "": none). */
struct job_view_extra {
    const char *reason;
    int64_t est_start_ms;
    const char *estimate;
    bool hide_env; /* env and container_env values as JOB_ENV_HIDDEN */
};

/* What a job's environment values read as to those who may not see them
 * (the names stay). */
#define JOB_ENV_HIDDEN "(hidden)"

/* The view's "attempts": every attempt the job keeps, oldest first, the
 * current one last; each {"attempt", "state", "start_time", "end_time",
 * "start_ms", "end_ms", "nodes": [...], "exit_code", "exit_signal",
 * "reason"}. New reference. */
json_t *job_attempts_to_json(const struct job *job);

/* Append json_dumps(job_to_json(job), JSON_COMPACT) to sb, with x's fields
 * set as a listing sets them (job_json_write.c), now_ms for the GPU
 * seconds of a running job. -1 (sb unchanged) when out of memory. */
int job_json_write(struct strbuf *sb, const struct job *job,
                   const struct job_view_extra *x, int64_t now_ms);

/* The store's record of a job ({"spec": {...}, "state": ..., ...}) and its
 * inverse. job_from_record returns a new job or NULL with err filled. */
json_t *job_to_record(const struct job *job);
struct job *job_from_record(const json_t *rec, struct sh_error *err);

/* Placement codec shared by the record, the view and the agent protocol:
 * [{"node": "n1", "gpus": ["GPU-..", ...]}, ...]. */
json_t *job_alloc_to_json(const struct job_alloc *alloc, int n);
int job_alloc_from_json(const json_t *arr, struct job_alloc **alloc, int *n,
                        struct sh_error *err);

#endif
