/* SPDX-License-Identifier: Apache-2.0 */
/* Every API handler, for the route table in routes.c. Each lives in the
 * api_<resource>.c file of its resource. */
#ifndef SHOAL_SHOALD_API_HANDLERS_H
#define SHOAL_SHOALD_API_HANDLERS_H

#include "shoald/api.h"

extern const struct api_route api_routes[];

void api_health(struct shoald *d, struct api_req *req);
void api_whoami(struct shoald *d, struct api_req *req);

void api_jobs_submit(struct shoald *d, struct api_req *req);
void api_jobs_list(struct shoald *d, struct api_req *req);
void api_jobs_show(struct shoald *d, struct api_req *req);
void api_jobs_cancel(struct shoald *d, struct api_req *req);

void api_nodes_list(struct shoald *d, struct api_req *req);

#endif
