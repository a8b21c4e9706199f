/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the JSON bodies of /v1/users (shoald/api_tenancy.c): the
 * input is the body of each request that takes one, handled in turn by the
 * real handlers on one small controller (fuzz_api.h): create a user, update
 * bob and alice (the last admin), replace and patch bob's limits, issue bob
 * a token. Properties (fuzz_api_call): every request is answered, the
 * tenancy stays consistent, and a refused request changes nothing.
 */
#include "fuzz/fuzz.h"
#include "fuzz/fuzz_api.h"
#include "shoald/api_handlers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct shoald *d = fuzz_shoald_create();
    fuzz_api_call(d, api_users_create, "POST /v1/users", NULL, NULL, data,
                  size);
    fuzz_api_call(d, api_users_update, "PATCH /v1/users/bob", "bob", NULL, data,
                  size);
    fuzz_api_call(d, api_users_update, "PATCH /v1/users/alice", "alice", NULL,
                  data, size);
    fuzz_api_call(d, api_users_limits_put, "PUT /v1/users/bob/limits", "bob",
                  NULL, data, size);
    fuzz_api_call(d, api_users_limits_patch, "PATCH /v1/users/bob/limits",
                  "bob", NULL, data, size);
    fuzz_api_call(d, api_users_tokens_issue, "POST /v1/users/bob/tokens", "bob",
                  NULL, data, size);
    fuzz_shoald_destroy(d);
    return 0;
}
