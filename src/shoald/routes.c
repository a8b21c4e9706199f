/* SPDX-License-Identifier: Apache-2.0 */
/* The route table of the REST API: method, path pattern, handler, and who
 * may call it. Adding an endpoint is one line here plus its handler. */
#include "shoald/api_handlers.h"

const struct api_route api_routes[] = {
    {"GET", "/v1/health", api_health, API_ACCESS_PUBLIC},
    {"GET", "/v1/whoami", api_whoami, API_ACCESS_USER},
    {"POST", "/v1/jobs", api_jobs_submit, API_ACCESS_USER},
    {"GET", "/v1/jobs", api_jobs_list, API_ACCESS_USER},
    {"GET", "/v1/jobs/{}", api_jobs_show, API_ACCESS_USER},
    {"DELETE", "/v1/jobs/{}", api_jobs_cancel, API_ACCESS_USER},
    {"POST", "/v1/jobs/{}/cancel", api_jobs_cancel, API_ACCESS_USER},
    {"GET", "/v1/nodes", api_nodes_list, API_ACCESS_USER},
    {NULL, NULL, NULL, API_ACCESS_PUBLIC},
};
