/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in for the request side of shoald/api.c, so a test or a fuzz
 * target calls a real handler of api_<resource>.c without HTTP.
 *
 * api_harness.c defines struct api_req and the "for handlers" functions of
 * shoald/api.h (a caller, path parameters, query arguments, a body, the
 * answer), and never links api.c. The body is parsed as api.c parses it
 * (duplicate keys refused) and an error answer is the body api.c writes,
 * {"error": {"code", "message"}}, with the status api.c gives its code. The
 * whole-request size limit and the routing are api.c's and are not here.
 *
 * Used by the Criterion tests of the handlers (test_api_*.c) and by the
 * fuzz targets of src/fuzz (fuzz_api.c), so it depends on neither
 * Criterion nor libFuzzer.
 */
#ifndef SHOAL_SHOALD_TEST_API_HARNESS_H
#define SHOAL_SHOALD_TEST_API_HARNESS_H

#include <jansson.h>
#include <stddef.h>

#include "shoald/api.h"

/* Query arguments one request may carry. */
#define API_HARNESS_QUERY_MAX 8

/* A request from caller (copied; its strings borrowed until the request is
 * destroyed) with the path parameters p0 and p1 (borrowed, NULL when
 * absent) and body (borrowed, len bytes; NULL/0 for none). NULL on out of
 * memory. */
struct api_req *api_harness_req_create(const struct api_caller *caller,
                                       const char *p0, const char *p1,
                                       const char *body, size_t len);

/* Free req, its parsed body and its answer; NULL-safe. */
void api_harness_req_destroy(struct api_req *req);

/* Add the request header name: value (both borrowed). -1 when the
 * request already holds API_HARNESS_QUERY_MAX of them. */
int api_harness_set_header(struct api_req *req, const char *name,
                           const char *value);

/* Add the query argument key=value (both borrowed). -1 when the request
 * already holds API_HARNESS_QUERY_MAX of them. */
int api_harness_set_query(struct api_req *req, const char *key,
                          const char *value);

/* The answer's HTTP status; 0 while there is none. */
int api_harness_status(const struct api_req *req);

/* The answer's body as text; NULL while there is none. Borrowed. */
const char *api_harness_answer_text(const struct api_req *req);

/* The answer's body parsed as JSON (NULL when there is none or it is not
 * JSON). Borrowed until req is destroyed. */
json_t *api_harness_answer(struct api_req *req);

/* The message of an error answer ({"error": {"message"}}); NULL when the
 * answer is not one. Borrowed until req is destroyed. */
const char *api_harness_error_message(struct api_req *req);

/* Whether the handler held the request (api_hold) and has not released it
 * (api_release, or api_release_durable's commit has not ended). */
bool api_harness_held(const struct api_req *req);

struct commit;
/* The group commit api_release_durable waits on (as api.c waits on the
 * controller's); NULL (the default): it releases at once. */
void api_harness_set_commit(struct commit *c);

#endif
