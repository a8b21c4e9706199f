/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/nodes: list and show nodes with their GPUs and what is busy; drain,
 * resume and forget a node (cluster admins). */
#include <string.h>

#include "lib/model/node_json.h"
#include "lib/util/log.h"
#include "lib/util/utf8.h"
#include "shoald/api_handlers.h"
#include "shoald/auth.h"
#include "shoald/cluster.h"
#include "shoald/jobtab.h"
#include "shoald/nodetab.h"
#include "store/store.h"

struct node_view_ctx {
    json_t *gpus; /* the view's GPU array */
    int busy[GPU_PER_NODE_MAX];
};

static void list_holder(const struct job *job, int gpu, void *arg)
{
    struct node_view_ctx *c = arg;
    c->busy[gpu]++;
    json_t *gj = json_array_get(c->gpus, (size_t)gpu);
    json_t *jobs = json_object_get(gj, "jobs");
    if (!jobs) {
        jobs = json_array();
        json_object_set_new(gj, "jobs", jobs);
    }
    json_array_append_new(jobs, json_integer((json_int_t)job->id));
}

/* The node's view plus, per GPU, the jobs holding it. */
static json_t *node_view(struct shoald *d, const struct node *n)
{
    json_t *o = node_to_json(n);
    if (!o)
        return NULL;
    struct node_rt *rt = nodetab_rt(d->nodes, n->name);
    struct node_view_ctx c = {.gpus = json_object_get(o, "gpus")};
    cluster_each_gpu_holder(d, n, list_holder, &c);
    int *busy = c.busy;
    int nbusy = 0;
    for (int g = 0; g < n->ngpus; g++)
        nbusy += busy[g] > 0;
    json_object_set_new(o, "gpus_busy", json_integer(nbusy));
    json_object_set_new(o, "stale_runs", json_integer(rt->stale));
    return o;
}

void api_nodes_list(struct shoald *d, struct api_req *req)
{
    json_t *arr = json_array();
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n))
        json_array_append_new(arr, node_view(d, n));
    api_reply_json(req, 200, json_pack("{s:o}", "nodes", arr)); /* steals */
}

static struct node *path_node(struct shoald *d, struct api_req *req)
{
    struct node *n = nodetab_get(d->nodes, api_param(req, 0));
    if (!n)
        api_errorf(req, SH_ENOTFOUND, "node %.*s not found",
                   UTF8_CUT(api_param(req, 0), 64));
    return n;
}

void api_nodes_show(struct shoald *d, struct api_req *req)
{
    struct node *n = path_node(d, req);
    if (n)
        api_reply_json(req, 200, node_view(d, n));
}

static void set_drain(struct shoald *d, struct api_req *req, bool drain)
{
    struct node *n = path_node(d, req);
    if (!n)
        return;
    size_t len;
    api_body_raw(req, &len);
    if (len > 0) {
        json_t *body = api_body(req);
        json_error_t jerr;
        const char *reason = NULL;
        if (!body)
            return;
        if (json_unpack_ex(body, &jerr, JSON_STRICT, "{s?s}", "reason",
                           &reason) < 0) {
            api_errorf(req, SH_EINVAL, "%s", jerr.text);
            return;
        }
    }
    if (n->drain != drain) {
        n->drain = drain;
        json_t *rec = node_to_record(n);
        int rc =
            rec ? store_batch_put(shoald_batch(d), "node", n->name, rec) : -1;
        json_decref(rec);
        if (rc < 0) {
            n->drain = !drain;
            api_errorf(req, SH_EINTERNAL, "out of memory");
            return;
        }
        sh_log(LOG_NOTICE, "nodes", "node %s %s by %s", n->name,
               drain ? "drained" : "resumed", api_caller(req)->user);
        cluster_node_changed(d, n);
        cluster_node_touch(d, n->name);
    }
    api_reply_json(req, 200, node_view(d, n));
}

void api_nodes_drain(struct shoald *d, struct api_req *req)
{
    set_drain(d, req, true);
}

void api_nodes_resume(struct shoald *d, struct api_req *req)
{
    set_drain(d, req, false);
}

void api_nodes_delete(struct shoald *d, struct api_req *req)
{
    struct node *n = path_node(d, req);
    if (!n)
        return;
    if (nodetab_rt(d->nodes, n->name)->njobs > 0 ||
        node_state(n) != NODE_DOWN) {
        api_errorf(req, SH_ECONFLICT,
                   "node %s is %s with %d job(s); only a down node without "
                   "jobs can be forgotten",
                   n->name, node_state_name(node_state(n)), n->running);
        return;
    }
    if (store_batch_del(shoald_batch(d), "node", n->name) < 0 ||
        auth_token_revoke_all(d->auth, shoald_batch(d), AUTH_TOKEN_AGENT,
                              n->name) < 0) {
        api_errorf(req, SH_EINTERNAL, "out of memory");
        return;
    }
    sh_log(LOG_NOTICE, "nodes", "node %s forgotten by %s", n->name,
           api_caller(req)->user);
    json_t *ans = json_pack("{s:s, s:s}", "name", n->name, "state", "removed");
    cluster_node_removed(d, n->name);
    api_reply_json(req, 200, ans);
}
