/* SPDX-License-Identifier: Apache-2.0 */
/* For the fuzz targets of API handlers: a small controller to run handlers
 * against, and a call that checks what every handler promises.
 *
 * A fuzz target calls a real handler of api_<resource>.c without HTTP
 * through the request stand-in shared with the handlers' unit tests
 * (shoald/test/api_harness.h), and never links api.c. The body is parsed
 * as api.c parses it.
 *
 * The controller holds auth, tenancy, a job table and an open store batch,
 * nothing else (no store, loop, HTTP server or engine): enough for the
 * tenancy handlers (api_tenancy.c). It starts with the cluster's defaults
 * and:
 *   users     alice (cluster admin, with a token), bob (member of default,
 *             admin of detect, default project detect);
 *   teams     vision: any GPU 8 guaranteed / 16 limit, H100-80GB 4 / 8;
 *   projects  detect in team vision: any GPU 2 guaranteed / 8 limit.
 */
#ifndef SHOAL_FUZZ_FUZZ_API_H
#define SHOAL_FUZZ_FUZZ_API_H

#include <stddef.h>
#include <stdint.h>

#include "shoald/api.h"

/* A new controller as above; fuzz_fail() when it cannot be built. */
struct shoald *fuzz_shoald_create(void);
/* Free it and everything it holds; NULL-safe. */
void fuzz_shoald_destroy(struct shoald *d);

/* Call handler h as the cluster admin alice with body (borrowed; size bytes,
 * may be empty) and the path parameters p0 and p1 (NULL when absent), then
 * check what every handler promises: it answered; the tenancy's invariants
 * hold; a refused request (an error answer) added nothing to the batch.
 * fuzz_fail() names the handler (name) when one does not. */
void fuzz_api_call(struct shoald *d, api_handler_f h, const char *name,
                   const char *p0, const char *p1, const uint8_t *body,
                   size_t size);

#endif
