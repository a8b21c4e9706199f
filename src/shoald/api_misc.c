/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/health and /v1/whoami. */
#include "shoald/api_handlers.h"
#include "shoald/auth.h"
#include "shoald/jobtab.h"
#include "shoald/nodetab.h"

void api_health(struct shoald *d, struct api_req *req)
{
    int counts[JOB_STATE_COUNT];
    jobtab_count_states(d->jobs, counts);
    int up = 0;
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n))
        up += node_state(n) != NODE_DOWN;
    api_reply_json(req, 200,
                   json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:i}", "status",
                             "ok", "version", SHOAL_VERSION, "cluster_id",
                             d->cluster_id, "nodes", nodetab_count(d->nodes),
                             "nodes_up", up, "pending", counts[JOB_PENDING],
                             "running", counts[JOB_RUNNING]));
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
