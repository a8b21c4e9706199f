/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the node records of shoald/nodes.c over a real SQLite store and a
 * whole controller state (no HTTP): registering (with the join token) adds
 * a durable, live node and issues its agent token; a bad registration
 * changes nothing; drain is durable; a node silent past the heartbeat
 * timeout goes down; only a down node without jobs can be forgotten, and
 * then it is gone from the store too. "Durable" is checked by reloading
 * memory from the store after the commit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/loop/loop.h"
#include "lib/model/job_json.h"
#include "shoald/auth.h"
#include "shoald/engine.h"
#include "shoald/commit.h"
#include "shoald/jobtab.h"
#include "shoald/nodes.h"
#include "shoald/nodetab.h"
#include "shoald/nodework.h"
#include "shoald/secrets.h"
#include "shoald/slices.h"
#include "shoald/state.h"
#include "shoald/tenancy.h"
#include "shoald/volumes.h"
#include "store/store.h"
#include "state_fixture.h"

static char dir[64];
static struct shoald d;

static void setup(void)
{
    state_fixture_open(&d, dir, sizeof(dir), "shoal-nodes-test");
}

static void teardown(void)
{
    state_fixture_close(&d, dir);
}

/* Commit the open batch, then rebuild memory from the store. */
static void commit_and_reload(void)
{
    struct sh_error err = {0};
    cr_assert_eq(commit_flush(d.commit, &err), 0, "%s", err.msg);
    cr_assert_eq(state_reload(&d, &err), 0, "%s", err.msg);
}

static int reg(const char *name, json_t *gpus, bool join, char *token,
               struct sh_error *err)
{
    struct nodes_reg r = {
        .name = name, .cpus = 8, .mem = 1 << 30, .gpus = gpus};
    struct node *n = NULL;
    int rc = nodes_register(&d, &r, "127.0.0.9", join ? "test" : NULL, token,
                            &n, err);
    if (rc == 0)
        cr_assert_eq(n, nodetab_get(d.nodes, name));
    return rc;
}

TestSuite(nodes, .init = setup, .fini = teardown);

Test(nodes, register_joins_a_live_durable_node)
{
    struct sh_error err = {0};
    char token[AUTH_TOKEN_LEN + 1];
    json_t *gpus = json_array();
    cr_assert_eq(reg("n1", gpus, true, token, &err), 0, "%s", err.msg);
    cr_assert_eq(strlen(token), AUTH_TOKEN_LEN, "a join issues a token");
    struct node *n = nodetab_get(d.nodes, "n1");
    cr_assert(n->alive);
    cr_assert_str_eq(n->address, "127.0.0.9", "the peer's address");
    commit_and_reload();
    n = nodetab_get(d.nodes, "n1");
    cr_assert_not_null(n, "the record is in the store");
    cr_assert_eq(n->cpus, 8);
    /* The agent's token names the node. */
    struct api_caller c;
    auth_identify(d.auth, token, shoald_now_ms(&d), &c);
    cr_assert_eq(c.role, API_AGENT);
    cr_assert_str_eq(c.node, "n1");
    /* Coming back with the node's own token issues none. */
    cr_assert_eq(reg("n1", gpus, false, token, &err), 0, "%s", err.msg);
    cr_assert_str_eq(token, "");
    cr_assert_eq(nodetab_count(d.nodes), 1);
    json_decref(gpus);
}

Test(nodes, bad_registration_changes_nothing)
{
    struct sh_error err = {0};
    char token[AUTH_TOKEN_LEN + 1];
    json_t *bad = json_string("two");
    cr_assert_eq(reg("n2", bad, true, token, &err), -1);
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert_not_null(strstr(err.msg, "gpus"), "%s", err.msg);
    cr_assert_null(nodetab_get(d.nodes, "n2"));
    cr_assert_not(commit_dirty(d.commit), "nothing added to the batch");
    json_decref(bad);
}

Test(nodes, drain_is_durable_and_kept_across_registration)
{
    struct sh_error err = {0};
    char token[AUTH_TOKEN_LEN + 1];
    json_t *gpus = json_array();
    cr_assert_eq(reg("n1", gpus, true, token, &err), 0, "%s", err.msg);
    struct node *n = nodetab_get(d.nodes, "n1");
    cr_assert_eq(nodes_set_drain(&d, n, true, "admin", NULL, &err), 0);
    commit_and_reload();
    cr_assert(nodetab_get(d.nodes, "n1")->drain);
    cr_assert_eq(reg("n1", gpus, false, token, &err), 0, "%s", err.msg);
    cr_assert(nodetab_get(d.nodes, "n1")->drain, "registering keeps drain");
    n = nodetab_get(d.nodes, "n1");
    cr_assert_eq(nodes_set_drain(&d, n, false, "admin", NULL, &err), 0);
    commit_and_reload();
    cr_assert_not(nodetab_get(d.nodes, "n1")->drain);
    json_decref(gpus);
}

Test(nodes, only_a_down_node_is_forgotten)
{
    struct sh_error err = {0};
    char token[AUTH_TOKEN_LEN + 1];
    json_t *gpus = json_array();
    cr_assert_eq(reg("n1", gpus, true, token, &err), 0, "%s", err.msg);
    commit_and_reload();
    struct node *n = nodetab_get(d.nodes, "n1");
    cr_assert_eq(nodes_forget(&d, n, "admin", &err), -1);
    cr_assert_eq(err.code, SH_ECONFLICT);
    cr_assert_not_null(strstr(err.msg, "only a down node"), "%s", err.msg);
    /* A heartbeat keeps it alive; silence past the timeout takes it down. */
    nodes_heartbeat(&d, n, false, 0);
    nodes_check_heartbeats(&d, n->last_heartbeat_ms + 29 * 1000);
    cr_assert(n->alive);
    nodes_check_heartbeats(&d, n->last_heartbeat_ms + 31 * 1000);
    cr_assert_not(n->alive);
    cr_assert_eq(nodes_forget(&d, n, "admin", &err), 0, "%s", err.msg);
    cr_assert_null(nodetab_get(d.nodes, "n1"));
    commit_and_reload();
    cr_assert_null(nodetab_get(d.nodes, "n1"), "gone from the store");
    struct api_caller c;
    auth_identify(d.auth, token, shoald_now_ms(&d), &c);
    cr_assert_eq(c.role, API_ANON, "its agent token is revoked");
    json_decref(gpus);
}

static json_t *run_report(uint64_t id, int attempt, const char *digest)
{
    return json_pack("[{s:I, s:i, s:s}]", "id", (json_int_t)id, "attempt",
                     attempt, "digest", digest);
}

static size_t work_count(const char *node)
{
    json_t *w = cluster_node_work(&d, nodetab_get(d.nodes, node));
    size_t n = json_array_size(json_object_get(w, "jobs"));
    json_decref(w);
    return n;
}

/* A job in image, running as admin on the nodes named (one part each). */
static struct job *running_image_job(const char *image, const char **nodes,
                                     int n)
{
    struct sh_error err = {0};
    json_t *o = json_pack("{s:[s], s:i, s:s}", "command", "true", "nodes", n,
                          "image", image);
    struct job_spec s;
    job_spec_init(&s);
    cr_assert_eq(job_spec_from_json(o, &s, &err), 0, "%s", err.msg);
    json_decref(o);
    s.user = strdup("admin");
    s.project = strdup("default");
    uint64_t id = jobtab_take_id(d.jobs);
    struct job *job = job_create(id, &s, 1);
    job->state = JOB_RUNNING;
    job->start_ms = 2;
    struct job_alloc *al = calloc((size_t)n, sizeof(*al));
    for (int i = 0; i < n; i++) {
        al[i].node = strdup(nodes[i]);
        al[i].exit_code = -1;
    }
    job_set_alloc(job, al, n);
    cr_assert_eq(jobtab_add(d.jobs, job), 0);
    for (int i = 0; i < n; i++)
        node_rt_add_job(nodetab_rt(d.nodes, nodes[i]), id);
    return job;
}

/* A 2-node job in an image: the second node's work waits for the digest
 * the first node resolved; a digest from another node, or one that is not
 * sha256:HEX, is ignored; the one taken is stored and sent on. */
Test(nodes, image_digest_of_the_first_node_releases_the_others)
{
    struct sh_error err = {0};
    char token[AUTH_TOKEN_LEN + 1];
    json_t *gpus = json_array();
    cr_assert_eq(reg("n1", gpus, true, token, &err), 0, "%s", err.msg);
    cr_assert_eq(reg("n2", gpus, true, token, &err), 0, "%s", err.msg);
    const char *on[] = {"n1", "n2"};
    struct job *job = running_image_job("reg.example.com/team/x:1", on, 2);
    uint64_t id = job->id;
    int attempt = job_attempt(job), stale;
    cr_assert_eq(work_count("n1"), 1);
    cr_assert_eq(work_count("n2"), 0, "held until the digest is known");
    const char *good = "sha256:0123456789abcdef0123456789abcdef"
                       "0123456789abcdef0123456789abcdef";
    const char *bad[] = {"sha256:../../x", "sha256:0123456789ABCDEF0123456789"
                                           "abcdef0123456789abcdef0123456789"
                                           "abcdef"};
    for (size_t i = 0; i < 2; i++) {
        json_t *r = run_report(id, attempt, bad[i]);
        cr_assert_eq(nodes_count_stale(&d, "n1", r, &stale, &err), 0);
        json_decref(r);
        cr_assert_null(job->image_digest, "%s refused", bad[i]);
    }
    json_t *r = run_report(id, attempt, good);
    cr_assert_eq(nodes_count_stale(&d, "n2", r, &stale, &err), 0);
    cr_assert_null(job->image_digest, "only the first node's digest counts");
    cr_assert_eq(nodes_count_stale(&d, "n1", r, &stale, &err), 0);
    json_decref(r);
    cr_assert_str_eq(job->image_digest, good);
    json_t *w = cluster_node_work(&d, nodetab_get(d.nodes, "n2"));
    json_t *e = json_array_get(json_object_get(w, "jobs"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(e, "image_digest")),
                     good);
    json_decref(w);
    /* Stored: a restarted controller sends the same digest. */
    commit_and_reload();
    cr_assert_str_eq(jobtab_get(d.jobs, id)->image_digest, good);
    json_decref(gpus);
}

static bool work_has_auth(const char *node)
{
    json_t *w = cluster_node_work(&d, nodetab_get(d.nodes, node));
    json_t *e = json_array_get(json_object_get(w, "jobs"), 0);
    bool has = json_object_get(e, "registry_auth") != NULL;
    json_decref(w);
    return has;
}

static json_t *run_listed_once(uint64_t id, int attempt)
{
    return json_pack("[{s:I, s:i}]", "id", (json_int_t)id, "attempt", attempt);
}

/* The registry's credentials go in a run's work only until its node
 * reports the run; a node that lists it no more (it lost the run), or
 * registers again without it, gets them again with the work. */
Test(nodes, registry_auth_again_for_a_run_the_node_lost)
{
    struct sh_error err = {0};
    char token[AUTH_TOKEN_LEN + 1];
    json_t *gpus = json_array();
    cr_assert_eq(reg("n1", gpus, true, token, &err), 0, "%s", err.msg);
    json_t *c = json_pack("{s:s, s:s, s:s}", "registry", "r.example",
                          "username", "u", "password", "p");
    struct store_batch *b = store_batch_create();
    cr_assert_eq(secrets_add(d.secrets, b, "r", NULL, c, "admin", 1, &err), 0,
                 "%s", err.msg);
    store_batch_destroy(b);
    json_decref(c);
    const char *on[] = {"n1"};
    struct job *job = running_image_job("docker://r.example/team/x:1", on, 1);
    uint64_t id = job->id;
    int attempt = job_attempt(job), stale;
    cr_assert(work_has_auth("n1"));
    json_t *r = run_listed_once(id, attempt);
    cr_assert_eq(nodes_count_stale(&d, "n1", r, &stale, &err), 0);
    json_decref(r);
    cr_assert_not(work_has_auth("n1"), "the node has the run");
    json_t *none = json_array();
    cr_assert_eq(nodes_count_stale(&d, "n1", none, &stale, &err), 0);
    json_decref(none);
    cr_assert(work_has_auth("n1"), "the node lost the run");
    r = run_listed_once(id, attempt);
    cr_assert_eq(nodes_count_stale(&d, "n1", r, &stale, &err), 0);
    json_decref(r);
    cr_assert_not(work_has_auth("n1"));
    cr_assert_eq(reg("n1", gpus, false, token, &err), 0, "%s", err.msg);
    cr_assert(work_has_auth("n1"), "registered again without the run");
    json_decref(gpus);
}

Test(nodes, a_join_token_cannot_take_over_an_enrolled_node)
{
    struct sh_error err = {0};
    char token[AUTH_TOKEN_LEN + 1], again[AUTH_TOKEN_LEN + 1];
    json_t *gpus = json_array();
    cr_assert_eq(reg("n1", gpus, true, token, &err), 0, "%s", err.msg);
    cr_assert_eq(reg("n1", gpus, true, again, &err), -1);
    cr_assert_eq(err.code, SH_ECONFLICT);
    cr_assert(strstr(err.msg, "shoal node rekey n1"), "%s", err.msg);
    struct api_caller c;
    auth_identify(d.auth, token, 0, &c);
    cr_assert_eq(c.role, API_AGENT, "the node's own token still works");
    cr_assert_eq(reg("n1", gpus, false, again, &err), 0, "%s", err.msg);
    char fresh[AUTH_TOKEN_LEN + 1];
    cr_assert_eq(
        nodes_rekey(&d, nodetab_get(d.nodes, "n1"), "admin", fresh, &err), 0);
    auth_identify(d.auth, token, 0, &c);
    cr_assert_eq(c.role, API_ANON, "a rekey revokes the old token");
    auth_identify(d.auth, fresh, 0, &c);
    cr_assert_eq(c.role, API_AGENT);
    json_decref(gpus);
}
