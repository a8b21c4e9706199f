/* SPDX-License-Identifier: Apache-2.0 */
/* A small controller for the fuzz targets of API handlers, which call them
 * through the request stand-in of shoald/test/api_harness.h (see
 * fuzz_api.h). */
#include "fuzz/fuzz_api.h"

#include <stdlib.h>

#include "fuzz/fuzz.h"
#include "lib/util/clock.h"
#include "shoald/auth.h"
#include "shoald/commit.h"
#include "shoald/jobtab.h"
#include "shoald/tenancy.h"
#include "shoald/test/api_harness.h"
#include "store/store.h"

static int seed(struct shoald *d, struct sh_error *err)
{
    static const struct tenancy_quota team_q[] = {
        {NULL, 8, 16},
        {"H100-80GB", 4, 8},
    };
    static const struct tenancy_quota project_q[] = {{NULL, 2, 8}};
    struct store_batch *b = commit_batch(d->commit);
    int64_t now = clock_wall_ms();
    char token[AUTH_TOKEN_LEN + 1];
    if (tenancy_init_defaults(d->tenancy, b, now, err) < 0 ||
        auth_user_create(d->auth, b, "alice", true, now, err) < 0 ||
        auth_token_issue(d->auth, b, AUTH_TOKEN_USER, "alice", now, 0, token,
                         err) < 0 ||
        auth_user_create(d->auth, b, "bob", false, now, err) < 0 ||
        tenancy_member_set(d->tenancy, b, TENANCY_DEFAULT_PROJECT, "bob",
                           TENANCY_ROLE_MEMBER, err) < 0 ||
        tenancy_team_create(d->tenancy, b, "vision", team_q, 2, now, err) < 0 ||
        tenancy_project_create(d->tenancy, b, "detect", "vision", project_q, 1,
                               now, err) < 0 ||
        tenancy_member_set(d->tenancy, b, "detect", "bob", TENANCY_ROLE_ADMIN,
                           err) < 0 ||
        auth_user_set_default_project(d->auth, b, "bob", "detect", err) < 0)
        return -1;
    return 0;
}

struct shoald *fuzz_shoald_create(void)
{
    struct sh_error err = {0};
    struct shoald *d = calloc(1, sizeof(*d));
    if (!d)
        fuzz_fail("out of memory");
    d->commit = commit_create(NULL, NULL, NULL, NULL, &err);
    d->auth = d->commit ? auth_create(&err) : NULL;
    d->tenancy = d->auth ? tenancy_create(&err) : NULL;
    d->jobs = jobtab_create();
    if (!d->commit || !d->auth || !d->tenancy || !d->jobs || seed(d, &err) < 0)
        fuzz_fail("cannot build the controller: %s", err.msg);
    return d;
}

void fuzz_shoald_destroy(struct shoald *d)
{
    if (!d)
        return;
    jobtab_destroy(d->jobs);
    tenancy_destroy(d->tenancy);
    auth_destroy(d->auth);
    commit_destroy(d->commit);
    free(d);
}

void fuzz_api_call(struct shoald *d, api_handler_f h, const char *name,
                   const char *p0, const char *p1, const uint8_t *body,
                   size_t size)
{
    static const struct api_caller alice = {
        .role = API_USER, .user = "alice", .admin = true};
    struct api_req *req =
        api_harness_req_create(&alice, p0, p1, (const char *)body, size);
    if (!req)
        fuzz_fail("out of memory");
    struct sh_error err = {0};
    int before = store_batch_count(commit_batch(d->commit));
    h(d, req);
    int status = api_harness_status(req);
    bool replied = api_replied(req);
    api_harness_req_destroy(req);
    if (!replied)
        fuzz_fail("%s did not answer", name);
    if (!tenancy_check_invariants(d->tenancy, &err))
        fuzz_fail("%s (answered %d) broke the tenancy: %s", name, status,
                  err.msg);
    if (status >= 400 && store_batch_count(commit_batch(d->commit)) != before)
        fuzz_fail("%s refused the request (%d) but changed the batch", name,
                  status);
}
