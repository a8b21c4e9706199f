/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the JSON bodies of /v1/projects, and of /v1/teams whose
 * quota bodies are the same (shoald/api_tenancy.c): the input is the body
 * of each request that takes one, handled in turn by the real handlers on
 * one small controller (fuzz_api.h): create a project, update detect,
 * replace and patch its quotas, set bob's role in it, create a team,
 * replace and patch vision's quotas. Properties (fuzz_api_call): every
 * request is answered, the tenancy stays consistent (quota pools included),
 * and a refused request changes nothing.
 */
#include "fuzz/fuzz.h"
#include "fuzz/fuzz_api.h"
#include "shoald/api_handlers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct shoald *d = fuzz_shoald_create();
    fuzz_api_call(d, api_projects_create, "POST /v1/projects", NULL, NULL, data,
                  size);
    fuzz_api_call(d, api_projects_update, "PATCH /v1/projects/detect", "detect",
                  NULL, data, size);
    fuzz_api_call(d, api_projects_quota_put, "PUT /v1/projects/detect/quota",
                  "detect", NULL, data, size);
    fuzz_api_call(d, api_projects_quota_patch,
                  "PATCH /v1/projects/detect/quota", "detect", NULL, data,
                  size);
    fuzz_api_call(d, api_projects_member_set,
                  "PUT /v1/projects/detect/members/bob", "detect", "bob", data,
                  size);
    fuzz_api_call(d, api_teams_create, "POST /v1/teams", NULL, NULL, data,
                  size);
    fuzz_api_call(d, api_teams_quota_put, "PUT /v1/teams/vision/quota",
                  "vision", NULL, data, size);
    fuzz_api_call(d, api_teams_quota_patch, "PATCH /v1/teams/vision/quota",
                  "vision", NULL, data, size);
    fuzz_shoald_destroy(d);
    return 0;
}
