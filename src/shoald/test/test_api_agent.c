/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: an agent's held work poll (api_agent.c) says nothing its node's
 * last change does not justify durably. When that change is still in the
 * open batch, a poll answered early (its deadline, a newer poll replacing
 * it) keeps its answer until the commit has ended. Over SQLite, through
 * the request harness (api_harness.h); the answer of a failed commit (503)
 * is test_commit's asynchronous fake store's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "api_harness.h"
#include "shoald/api_handlers.h"
#include "shoald/auth.h"
#include "shoald/engine.h"
#include "shoald/commit.h"
#include "shoald/nodes.h"
#include "shoald/nodetab.h"
#include "shoald/nodework.h"
#include "shoald/shoald.h"
#include "state_fixture.h"

static char dir[64];
static struct shoald d;
static const struct api_caller agent = {.role = API_AGENT, .node = "n1"};

static void setup(void)
{
    state_fixture_open(&d, dir, sizeof(dir), "shoal-agent-test");
    api_harness_set_commit(d.commit);
    struct sh_error err = {0};
    char token[AUTH_TOKEN_LEN + 1];
    json_t *gpus = json_array();
    struct nodes_reg r = {
        .name = "n1", .cpus = 8, .mem = 1 << 30, .gpus = gpus};
    struct node *n = NULL;
    cr_assert_eq(nodes_register(&d, &r, "127.0.0.9", "test", token, &n, &err),
                 0, "%s", err.msg);
    json_decref(gpus);
    cr_assert_eq(commit_flush(d.commit, &err), 0, "%s", err.msg);
}

static void teardown(void)
{
    api_harness_set_commit(NULL);
    state_fixture_close(&d, dir);
}

TestSuite(api_agent, .init = setup, .fini = teardown);

/* A poll held at the node's current generation. */
static struct api_req *hold_poll(void)
{
    char gen[32];
    snprintf(gen, sizeof(gen), "%llu",
             (unsigned long long)nodetab_rt(d.nodes, "n1")->generation);
    struct api_req *req = api_harness_req_create(&agent, NULL, NULL, NULL, 0);
    cr_assert_not_null(req);
    cr_assert_eq(api_harness_set_query(req, "generation", gen), 0);
    cr_assert_eq(api_harness_set_query(req, "wait", "30"), 0);
    api_agent_work(&d, req);
    cr_assert(api_harness_held(req), "status %d", api_harness_status(req));
    return req;
}

/* A change of node n1 (the pass's start) in the open batch. */
static void touch_n1(void)
{
    struct sh_error err = {0};
    cr_assert_eq(nodes_set_drain(&d, nodetab_get(d.nodes, "n1"), true, "admin",
                                 NULL, &err),
                 0, "%s", err.msg);
    cluster_node_touch(&d, "n1");
    cr_assert(commit_dirty(d.commit));
}

Test(api_agent, poll_deadline_before_the_commit_waits_for_it)
{
    struct api_req *req = hold_poll();
    touch_n1();
    api_agent_expire_polls(&d, true); /* its deadline */
    cr_assert(api_harness_held(req), "not told before the commit");
    struct sh_error err = {0};
    cr_assert_eq(commit_flush(d.commit, &err), 0, "%s", err.msg);
    cr_assert_not(api_harness_held(req));
    cr_assert_eq(api_harness_status(req), 200);
    api_harness_req_destroy(req);
}

Test(api_agent, replaced_poll_waits_for_the_commit)
{
    struct api_req *old = hold_poll();
    touch_n1();
    struct api_req *req = api_harness_req_create(&agent, NULL, NULL, NULL, 0);
    cr_assert_not_null(req);
    char gen[32];
    snprintf(gen, sizeof(gen), "%llu",
             (unsigned long long)nodetab_rt(d.nodes, "n1")->generation);
    cr_assert_eq(api_harness_set_query(req, "generation", gen), 0);
    cr_assert_eq(api_harness_set_query(req, "wait", "30"), 0);
    api_agent_work(&d, req); /* replaces the old poll */
    cr_assert(api_harness_held(req));
    cr_assert(api_harness_held(old), "not told before the commit");
    struct sh_error err = {0};
    cr_assert_eq(commit_flush(d.commit, &err), 0, "%s", err.msg);
    cr_assert_not(api_harness_held(old));
    cr_assert_eq(api_harness_status(old), 200);
    cr_assert_not(api_harness_held(req), "woken once the change is durable");
    cr_assert_eq(api_harness_status(req), 200);
    api_harness_req_destroy(old);
    api_harness_req_destroy(req);
}
