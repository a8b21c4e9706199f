/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/nodes: list and show nodes with their GPUs and what is busy; drain,
 * resume and forget a node (cluster admins; nodes.c does it). */
#include <string.h>

#include "lib/model/node_json.h"
#include "lib/util/utf8.h"
#include "shoald/resources.h"
#include "shoald/api_handlers.h"
#include "shoald/engine.h"
#include "shoald/jobtab.h"
#include "shoald/nodes.h"
#include "shoald/nodetab.h"

struct node_view_ctx {
    json_t *gpus; /* the view's GPU array */
    int busy[GPU_PER_NODE_MAX];
};

static void list_holder(const struct job *job, int part, int gpu, int slice,
                        void *arg)
{
    (void)part;
    (void)slice;
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
    nodetab_each_gpu_part(d->nodes, d->jobs, n, list_holder, &c);
    int *busy = c.busy;
    int nbusy = 0;
    for (int g = 0; g < n->ngpus; g++)
        nbusy += busy[g] > 0;
    json_object_set_new(o, "gpus_busy", json_integer(nbusy));
    int cpus;
    uint64_t mem;
    resources_node_allocated(d, n->name, &cpus, &mem);
    json_object_set_new(o, "cpus_allocated", json_integer(cpus));
    json_object_set_new(o, "memory_allocated", json_integer((json_int_t)mem));
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
    const char *reason = NULL;
    api_body_raw(req, &len);
    if (len > 0) {
        json_t *body = api_body(req);
        json_error_t jerr;
        if (!body)
            return;
        if (json_unpack_ex(body, &jerr, JSON_STRICT, "{s?s}", "reason",
                           &reason) < 0) {
            api_errorf(req, SH_EINVAL, "%s", jerr.text);
            return;
        }
    }
    struct sh_error err;
    if (nodes_set_drain(d, n, drain, api_caller(req)->user, reason, &err) < 0) {
        api_reply_error(req, &err);
        return;
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
    struct sh_error err;
    json_t *ans = json_pack("{s:s, s:s}", "name", n->name, "state", "removed");
    if (nodes_forget(d, n, api_caller(req)->user, &err) < 0) {
        json_decref(ans);
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 200, ans);
}
