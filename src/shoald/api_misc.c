/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/health, /v1/whoami and /v1/openapi.json. */
#include "shoald/api_handlers.h"
#include "shoald/auth.h"
#include "shoald/ha.h"
#include "shoald/jobtab.h"
#include "shoald/nodetab.h"
#include "sched/sched.h"

void api_health(struct shoald *d, struct api_req *req)
{
    const char *leader = ha_leader_url(d);
    if (!ha_serving(d)) {
        /* A follower holds no state: its role and where the leader is. */
        api_reply_json(req, 200,
                       json_pack("{s:s, s:s, s:s, s:s?}", "status", "ok",
                                 "version", SHOAL_VERSION, "role", ha_role(d),
                                 "leader", leader[0] ? leader : NULL));
        return;
    }
    int counts[JOB_STATE_COUNT];
    jobtab_count_states(d->jobs, counts);
    int up = 0;
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n))
        up += node_state(n) != NODE_DOWN;
    api_reply_json(
        req, 200,
        json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:s, s:s?, s:s}",
                  "status", "ok", "version", SHOAL_VERSION, "cluster_id",
                  d->cluster_id, "nodes", nodetab_count(d->nodes), "nodes_up",
                  up, "pending", counts[JOB_PENDING], "running",
                  counts[JOB_RUNNING], "role", ha_role(d), "leader",
                  leader[0] ? leader : NULL, "policy",
                  sched_policy_name((enum sched_policy)d->cfg.policy)));
}

void api_whoami(struct shoald *d, struct api_req *req)
{
    const struct api_caller *c = api_caller(req);
    const struct auth_user *u = auth_user_get(d->auth, c->user);
    api_reply_json(req, 200,
                   json_pack("{s:s, s:b, s:s?}", "user", c->user, "admin",
                             c->admin, "default_project",
                             u ? u->default_project : NULL));
}

void api_openapi(struct shoald *d, struct api_req *req)
{
    (void)d;
    /* The document says which version it describes: this server's. */
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)api_openapi_json,
                             api_openapi_json_len, 0, &jerr);
    json_t *info = json_object_get(doc, "info");
    if (!json_is_object(info) ||
        json_object_set_new(info, "version", json_string(SHOAL_VERSION)) < 0) {
        json_decref(doc);
        api_errorf(req, SH_EINTERNAL,
                   "the built-in API document is broken: %s at line %d",
                   doc ? "no info object" : jerr.text, jerr.line);
        return;
    }
    api_reply_json(req, 200, doc);
}
