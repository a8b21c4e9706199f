/* SPDX-License-Identifier: Apache-2.0 */
/* The node table (see nodetab.h): a uthash by name, sorted on insert so
 * iteration is in name order. */
#include "shoald/nodetab.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lib/util/log.h"
#include "shoald/jobtab.h"

struct node_entry {
    struct node *node;
    struct node_rt rt;
    UT_hash_handle hh;
};

struct nodetab {
    struct node_entry *by_name;
};

struct nodetab *nodetab_create(void)
{
    return calloc(1, sizeof(struct nodetab));
}

void nodetab_destroy(struct nodetab *t)
{
    if (!t)
        return;
    struct node_entry *e, *tmp;
    HASH_ITER (hh, t->by_name, e, tmp) {
        HASH_DEL(t->by_name, e);
        node_destroy(e->node);
        free(e->rt.jobs);
        free(e);
    }
    free(t);
}

static int by_name(const struct node_entry *a, const struct node_entry *b)
{
    return strcmp(a->node->name, b->node->name);
}

int nodetab_add(struct nodetab *t, struct node *n)
{
    if (nodetab_get(t, n->name))
        return -1;
    struct node_entry *e = calloc(1, sizeof(*e));
    if (!e)
        return -1;
    e->node = n;
    HASH_ADD_KEYPTR_INORDER(hh, t->by_name, n->name, strlen(n->name), e,
                            by_name);
    return 0;
}

struct node *nodetab_get(const struct nodetab *t, const char *name)
{
    struct node_entry *e;
    HASH_FIND_STR(t->by_name, name, e);
    return e ? e->node : NULL;
}

void nodetab_remove(struct nodetab *t, const char *name)
{
    struct node_entry *e;
    HASH_FIND_STR(t->by_name, name, e);
    if (!e)
        return;
    HASH_DEL(t->by_name, e);
    node_destroy(e->node);
    free(e->rt.jobs);
    free(e);
}

int nodetab_count(const struct nodetab *t)
{
    return (int)HASH_COUNT(t->by_name);
}

struct node *nodetab_next(const struct nodetab *t, const struct node *prev)
{
    struct node_entry *e;
    if (!prev) {
        e = t->by_name;
    } else {
        HASH_FIND_STR(t->by_name, prev->name, e);
        e = e ? e->hh.next : NULL;
    }
    return e ? e->node : NULL;
}

struct node_rt *nodetab_rt(const struct nodetab *t, const char *name)
{
    struct node_entry *e;
    HASH_FIND_STR(t->by_name, name, e);
    return e ? &e->rt : NULL;
}

int node_rt_add_job(struct node_rt *rt, uint64_t id)
{
    for (int i = 0; i < rt->njobs; i++) {
        if (rt->jobs[i] == id)
            return 0;
    }
    if (rt->njobs == rt->jobs_cap) {
        int cap = rt->jobs_cap ? rt->jobs_cap * 2 : 8;
        uint64_t *j = realloc(rt->jobs, (size_t)cap * sizeof(*j));
        if (!j)
            return -1;
        rt->jobs = j;
        rt->jobs_cap = cap;
    }
    rt->jobs[rt->njobs++] = id;
    return 0;
}

void node_rt_remove_job(struct node_rt *rt, uint64_t id)
{
    for (int i = 0; i < rt->njobs; i++) {
        if (rt->jobs[i] == id) {
            rt->jobs[i] = rt->jobs[--rt->njobs];
            return;
        }
    }
}

void nodetab_take_runtime(struct nodetab *t, struct nodetab *old)
{
    struct node_entry *e;
    for (e = t->by_name; e; e = e->hh.next) {
        struct node_entry *o;
        HASH_FIND_STR(old->by_name, e->node->name, o);
        if (!o)
            continue;
        e->rt = o->rt;
        memset(&o->rt, 0, sizeof(o->rt));
        e->node->alive = o->node->alive;
        e->node->last_heartbeat_ms = o->node->last_heartbeat_ms;
    }
}

void nodetab_each_gpu_part(const struct nodetab *t, const struct jobtab *jobs,
                           const struct node *n, nodetab_gpu_part_f fn,
                           void *arg)
{
    struct node_rt *rt = nodetab_rt(t, n->name);
    for (int i = 0; rt && i < rt->njobs; i++) {
        const struct job *job = jobtab_get(jobs, rt->jobs[i]);
        for (int a = 0; job && a < job->nalloc; a++) {
            const struct job_alloc *al = &job->alloc[a];
            if (al->done || strcmp(al->node, n->name) != 0)
                continue;
            for (int g = 0; g < al->ngpus; g++) {
                int slice;
                const struct gpu_info *gi =
                    node_find_gpu(n, al->gpus[g], &slice);
                if (gi)
                    fn(job, a, (int)(gi - n->gpus), slice, arg);
            }
        }
    }
}

void nodetab_grace(const struct nodetab *t, int64_t now_ms, bool revive)
{
    for (struct node *n = nodetab_next(t, NULL); n; n = nodetab_next(t, n)) {
        if (revive)
            n->alive = true;
        n->last_heartbeat_ms = now_ms;
    }
}

void nodetab_node_down(struct node *n, const char *why)
{
    n->alive = false;
    sh_log(LOG_WARNING, "cluster", "node %s is down: %s", n->name, why);
}
