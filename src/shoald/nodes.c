/* SPDX-License-Identifier: Apache-2.0 */
/* The controller's nodes (see nodes.h). */
#include "shoald/nodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/node_json.h"
#include "lib/util/log.h"
#include "shoald/acct.h"
#include "shoald/engine.h"
#include "shoald/jobs.h"
#include "shoald/jobtab.h"
#include "shoald/nodetab.h"
#include "shoald/nodework.h"
#include "shoald/slices.h"
#include "store/store.h"

#define AGENT_RUNS_MAX 4096

/* ---- records ---- */

static int persist_node(struct shoald *d, const struct node *n,
                        struct sh_error *err)
{
    json_t *rec = node_to_record(n);
    int rc = rec ? store_batch_put(shoald_batch(d), "node", n->name, rec) : -1;
    json_decref(rec);
    return rc < 0 ? sh_errorf(err, SH_EINTERNAL, "out of memory") : 0;
}

/* Build the node as the agent describes it (keeping the drain flag). */
static struct node *node_from_reg(struct shoald *d, const struct nodes_reg *r,
                                  const char *peer, struct sh_error *err)
{
    struct node *n = node_create(r->name);
    if (!n) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    struct node *old = nodetab_get(d->nodes, r->name);
    n->cpus = r->cpus;
    n->mem = (uint64_t)r->mem;
    n->mps = r->mps;
    n->drain = old ? old->drain : false;
    if (old)
        memcpy(n->drain_reason, old->drain_reason, sizeof(n->drain_reason));
    n->registered_ms = old ? old->registered_ms : shoald_now_ms(d);
    if (node_set_address(n, r->address ? r->address : peer) < 0 ||
        (r->labels &&
         labels_from_json(r->labels, &n->labels, &n->nlabels, err) < 0) ||
        gpus_from_json(r->gpus, &n->gpus, &n->ngpus, err) < 0) {
        node_destroy(n);
        return NULL;
    }
    return n;
}

/* Put n in the table in place of the node of the same name, keeping the
 * runtime record. */
static int node_replace(struct shoald *d, struct node *n)
{
    struct node *old = nodetab_get(d->nodes, n->name);
    if (!old)
        return nodetab_add(d->nodes, n);
    /* Swap contents so pointers to the table entry stay valid; the name
     * stays (the table is keyed by that very string). */
    struct node tmp = *old;
    *old = *n;
    *n = tmp;
    char *name = old->name;
    old->name = n->name;
    n->name = name;
    old->running = tmp.running;
    node_destroy(n);
    return 0;
}

/* ---- runs the agent reports ---- */

/* Is (id, attempt) a run this node should have? */
static bool run_wanted(struct shoald *d, const char *node, uint64_t id,
                       int attempt)
{
    const struct job *job = jobtab_get(d->jobs, id);
    if (!job || job_attempt(job) != attempt)
        return false;
    for (int a = 0; a < job->nalloc; a++) {
        if (strcmp(job->alloc[a].node, node) == 0 && !job->alloc[a].done)
            return true;
    }
    return false;
}

/* A running job's reason follows what its node says it is doing
 * (jobs_note_progress). */
static void apply_note(struct shoald *d, const char *node, json_int_t id,
                       json_int_t attempt, const char *note)
{
    struct job *job = jobtab_get(d->jobs, (uint64_t)id);
    if (!job || job_attempt(job) != attempt || job->state != JOB_RUNNING)
        return;
    jobs_note_progress(job, node, note);
}

/* The node has the job's run: its work goes on without the registry's
 * credentials (the pull took them from the first entry it got). */
static void run_reported(struct shoald *d, const char *node, json_int_t id,
                         json_int_t attempt)
{
    struct job *job = jobtab_get(d->jobs, (uint64_t)id);
    if (!job || job_attempt(job) != attempt || job->state != JOB_RUNNING)
        return;
    jobs_part_reported(job, node, true);
}

/* Is (id, attempt) in the list of runs (NULL: none)? */
static bool run_listed(const json_t *runs, uint64_t id, int attempt)
{
    size_t i;
    json_t *r;
    json_array_foreach (runs, i, r) {
        json_int_t rid, ratt;
        if (json_unpack((json_t *)r, "{s:I, s:I}", "id", &rid, "attempt",
                        &ratt) == 0 &&
            (uint64_t)rid == id && ratt == attempt)
            return true;
    }
    return false;
}

/* The node's runs it no longer lists (runs NULL: none, a registration
 * without runs) lose their mark: a run made again from its work gets the
 * registry's credentials again. */
static void runs_unreported(struct shoald *d, const char *node,
                            const json_t *runs)
{
    if (!nodetab_get(d->nodes, node))
        return;
    const struct node_rt *rt = nodetab_rt(d->nodes, node);
    for (int j = 0; j < rt->njobs; j++) {
        struct job *job = jobtab_get(d->jobs, rt->jobs[j]);
        if (job && !run_listed(runs, job->id, job_attempt(job)))
            jobs_part_reported(job, node, false);
    }
}

/* The digest the first node of a job in an image resolved its reference to
 * (runs_alive_json): the job keeps the first one it hears for this attempt
 * (stored, so a restarted controller sends the same) and its other nodes
 * get their work, naming it. A digest from any other node, or one that is
 * not sha256:HEX, is ignored. */
void nodes_job_digest(struct shoald *d, const char *node, json_int_t id,
                      json_int_t attempt, const char *digest)
{
    struct job *job = jobtab_get(d->jobs, (uint64_t)id);
    if (!digest || !job || job_attempt(job) != attempt ||
        job->state != JOB_RUNNING || !job->spec.container.image ||
        job->image_digest || job->nalloc < 1 ||
        strcmp(job->alloc[0].node, node) != 0)
        return;
    if (!job_image_digest_valid(digest)) {
        sh_log(LOG_WARNING, "agent",
               "node %s: job %lld: an image digest that is not sha256:HEX "
               "ignored",
               node, (long long)id);
        return;
    }
    struct sh_error err;
    if (jobs_set_image_digest(d, job, digest, &err) < 0) {
        if (!job->image_digest)
            return;
        sh_log(LOG_ERR, "agent", "job %lld: cannot store its image digest: %s",
               (long long)id, err.msg);
    }
    sh_log(LOG_INFO, "agent", "job %lld runs image %s on every node",
           (long long)id, digest);
    for (int a = 1; a < job->nalloc; a++)
        cluster_node_touch(d, job->alloc[a].node);
}

/* Count the reported runs we do not want; validate the list. */
int nodes_count_stale(struct shoald *d, const char *node, const json_t *runs,
                      int *stale, struct sh_error *err)
{
    *stale = 0;
    if (!runs)
        return 0;
    if (!json_is_array(runs) || json_array_size(runs) > AGENT_RUNS_MAX)
        return sh_errorf(err, SH_EINVAL, "running must be an array of runs");
    size_t i;
    json_t *r;
    json_array_foreach (runs, i, r) {
        json_int_t id, attempt;
        const char *note = NULL, *digest = NULL;
        if (json_unpack((json_t *)r, "{s:I, s:I, s?s, s?s}", "id", &id,
                        "attempt", &attempt, "note", &note, "digest",
                        &digest) < 0 ||
            id < 1 || attempt < 0)
            return sh_errorf(err, SH_EINVAL,
                             "each run needs an id and an attempt");
        if (!run_wanted(d, node, (uint64_t)id, (int)attempt))
            (*stale)++;
        else {
            run_reported(d, node, id, attempt);
            apply_note(d, node, id, attempt, note);
            nodes_job_digest(d, node, id, attempt, digest);
        }
    }
    runs_unreported(d, node, runs);
    return 0;
}

/* ---- register ---- */

/* Whether node n reports the GPUs of its last accepted registration
 * (old): the same count, and each GPU's UUID with the same model. A MIG
 * re-slice changes slices, not GPUs. When not, why goes in why. */
static bool same_gpus(const struct node *old, const struct node *n, char *why,
                      size_t size)
{
    if (old->ngpus != n->ngpus) {
        snprintf(why, size, "it had %d GPU(s) and now reports %d", old->ngpus,
                 n->ngpus);
        return false;
    }
    for (int i = 0; i < old->ngpus; i++) {
        const struct gpu_info *was = &old->gpus[i];
        const struct gpu_info *now = NULL;
        for (int j = 0; j < n->ngpus && !now; j++) {
            if (strcmp(n->gpus[j].uuid, was->uuid) == 0)
                now = &n->gpus[j];
        }
        if (!now) {
            snprintf(why, size, "its GPU %s (%s) is no longer reported",
                     was->uuid, was->model);
            return false;
        }
        if (strcmp(now->model, was->model) != 0) {
            snprintf(why, size, "its GPU %s was a %s and now reports %s",
                     was->uuid, was->model, now->model);
            return false;
        }
    }
    return true;
}

int nodes_register(struct shoald *d, const struct nodes_reg *reg,
                   const char *peer, const char *join_id,
                   char token[AUTH_TOKEN_LEN + 1], struct node **out,
                   struct sh_error *err)
{
    const struct nodes_reg r = *reg;
    bool join = join_id != NULL;
    /* A join token enrolls a new name only: taking over an enrolled node
     * (its jobs' environment, output and exits) needs the node's own token,
     * which only an admin can re-issue (nodes_rekey). */
    if (join && nodetab_get(d->nodes, r.name)) {
        sh_log(LOG_WARNING, "agent",
               "node %s: a join token from %s tried to register an enrolled "
               "node; refused",
               r.name, peer);
        return sh_errorf(
            err, SH_ECONFLICT,
            "node %s is enrolled: a join token enrolls new names only. Lost "
            "node token? An admin runs 'shoal node rekey %s' (its token goes "
            "in the agent's STATE/token) or 'shoal node delete %s'",
            r.name, r.name, r.name);
    }
    struct node *n = node_from_reg(d, &r, peer, err);
    if (!n)
        return -1;
    int stale;
    if (nodes_count_stale(d, r.name, r.running, &stale, err) < 0) {
        node_destroy(n);
        return -1;
    }
    /* A node's GPUs are what it enrolled with: another inventory is not
     * trusted (a rogue node reporting eight H100s would draw 8-GPU jobs
     * and their secrets) until an admin checks it and resumes the node. */
    const struct node *old = nodetab_get(d->nodes, r.name);
    char why[NODE_REASON_MAX - 64];
    if (old && !same_gpus(old, n, why, sizeof(why))) {
        n->drain = true;
        snprintf(n->drain_reason, sizeof(n->drain_reason),
                 "GPU inventory changed: %s; check the node, then resume it",
                 why);
        sh_log(LOG_WARNING, "nodes",
               "node %s re-registered from %s with other GPUs (%s): drained "
               "until an admin resumes it",
               r.name, peer, why);
    }
    if (!r.running)
        runs_unreported(d, r.name, NULL);
    token[0] = '\0';
    int64_t now = shoald_now_ms(d);
    if (join) {
        /* A new node: tokens left by a forgotten node of that name go. */
        auth_token_revoke_all(d->auth, shoald_batch(d), AUTH_TOKEN_AGENT,
                              r.name);
        if (auth_token_issue(d->auth, shoald_batch(d), AUTH_TOKEN_AGENT, r.name,
                             now, 0, token, err) < 0 ||
            auth_join_used(d->auth, shoald_batch(d), join_id, err) < 0) {
            node_destroy(n);
            return -1;
        }
    }
    if (persist_node(d, n, err) < 0 || node_replace(d, n) < 0) {
        node_destroy(n);
        return -1;
    }
    n = nodetab_get(d->nodes, r.name);
    n->alive = true;
    n->last_heartbeat_ms = now;
    struct node_rt *rt = nodetab_rt(d->nodes, r.name);
    rt->stale = stale;
    slices_node_reported(d, n);
    cluster_node_changed(d, n);
    cluster_node_touch(d, n->name);
    sh_log(LOG_NOTICE, "agent", "node %s registered address=%s gpus=%d%s",
           n->name, n->address, n->ngpus, token[0] ? " (joined)" : "");
    *out = n;
    return 0;
}

/* ---- liveness ---- */

void nodes_heartbeat(struct shoald *d, struct node *n, bool samples, int stale)
{
    n->last_heartbeat_ms = shoald_now_ms(d);
    if (samples)
        acct_node_samples(d, n, n->last_heartbeat_ms);
    struct node_rt *rt = nodetab_rt(d->nodes, n->name);
    if (stale != rt->stale) {
        rt->stale = stale;
        cluster_node_changed(d, n);
    }
}

void nodes_check_heartbeats(struct shoald *d, int64_t now)
{
    int64_t limit = (int64_t)d->cfg.heartbeat_timeout_s * 1000;
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n)) {
        if (n->alive && now - n->last_heartbeat_ms > limit) {
            char why[96];
            snprintf(why, sizeof(why), "no heartbeat for %ds",
                     d->cfg.heartbeat_timeout_s);
            jobs_node_down(d, n, why);
        }
    }
}

/* ---- drain, resume, forget ---- */

int nodes_set_drain(struct shoald *d, struct node *n, bool drain,
                    const char *who, const char *reason, struct sh_error *err)
{
    const char *want = drain && reason ? reason : "";
    if (n->drain == drain && strcmp(n->drain_reason, want) == 0)
        return 0;
    if (strlen(want) >= sizeof(n->drain_reason))
        return sh_errorf(err, SH_EINVAL, "a drain reason has at most %zu bytes",
                         sizeof(n->drain_reason) - 1);
    char was[NODE_REASON_MAX];
    memcpy(was, n->drain_reason, sizeof(was));
    bool was_drain = n->drain;
    n->drain = drain;
    snprintf(n->drain_reason, sizeof(n->drain_reason), "%s", want);
    if (persist_node(d, n, err) < 0) {
        n->drain = was_drain;
        memcpy(n->drain_reason, was, sizeof(was));
        return -1;
    }
    if (was_drain == drain) /* a new reason only */
        return 0;
    sh_log(LOG_NOTICE, "nodes", "node %s %s by %s", n->name,
           drain ? "drained" : "resumed", who);
    cluster_node_changed(d, n);
    cluster_node_touch(d, n->name);
    return 0;
}

int nodes_rekey(struct shoald *d, struct node *n, const char *who,
                char token[AUTH_TOKEN_LEN + 1], struct sh_error *err)
{
    if (auth_token_revoke_all(d->auth, shoald_batch(d), AUTH_TOKEN_AGENT,
                              n->name) < 0 ||
        auth_token_issue(d->auth, shoald_batch(d), AUTH_TOKEN_AGENT, n->name,
                         shoald_now_ms(d), 0, token, err) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    sh_log(LOG_NOTICE, "nodes",
           "node %s re-keyed by %s: its agent needs the new token", n->name,
           who);
    return 0;
}

int nodes_forget(struct shoald *d, struct node *n, const char *who,
                 struct sh_error *err)
{
    if (nodetab_rt(d->nodes, n->name)->njobs > 0 || node_state(n) != NODE_DOWN)
        return sh_errorf(err, SH_ECONFLICT,
                         "node %s is %s with %d job(s); only a down node "
                         "without jobs can be forgotten",
                         n->name, node_state_name(node_state(n)), n->running);
    if (store_batch_del(shoald_batch(d), "node", n->name) < 0 ||
        auth_token_revoke_all(d->auth, shoald_batch(d), AUTH_TOKEN_AGENT,
                              n->name) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    sh_log(LOG_NOTICE, "nodes", "node %s forgotten by %s", n->name, who);
    cluster_node_removed(d, n->name);
    return 0;
}

/* ---- what a heartbeat reports ---- */

/* True when node runs a part of the job's current attempt. */
bool nodes_job_on(const struct job *job, const char *node)
{
    for (int i = 0; i < job->nalloc; i++) {
        if (strcmp(job->alloc[i].node, node) == 0)
            return true;
    }
    return false;
}

int nodes_gpu_samples(struct node *n, const json_t *gpus, struct sh_error *err)
{
    if (!gpus)
        return 0;
    if (!json_is_array(gpus) || json_array_size(gpus) > GPU_PER_NODE_MAX)
        return sh_errorf(err, SH_EINVAL, "gpus must be an array of samples");
    size_t i;
    json_t *s;
    json_array_foreach (gpus, i, s) {
        int index, util;
        json_int_t used;
        if (json_unpack((json_t *)s, "{s:i, s:i, s:I}", "index", &index,
                        "utilization", &util, "memory_used", &used) < 0 ||
            util < -1 || util > 100 || used < 0)
            return sh_errorf(err, SH_EINVAL,
                             "a GPU sample needs index, utilization (-1..100) "
                             "and memory_used");
        for (int g = 0; g < n->ngpus; g++) {
            if (n->gpus[g].index == index) {
                n->gpus[g].util_pct = util;
                n->gpus[g].mem_used = (uint64_t)used;
            }
        }
    }
    return 0;
}

int nodes_run_exited(struct shoald *d, struct node *n,
                     const struct nodes_run_exit *e, struct sh_error *err)
{
    struct job *job = jobtab_get(d->jobs, (uint64_t)e->id);
    if (!job || job_attempt(job) != e->attempt)
        return 0; /* an old run: the agent stops it by itself */
    sh_debug("agent", "node=%s job=%lld attempt=%lld exited code=%d signal=%d",
             n->name, (long long)e->id, (long long)e->attempt, e->exit_code,
             e->exit_signal);
    /* Only a node that runs a part of the job reports on it (and charges
     * usage to it). */
    if (!nodes_job_on(job, n->name))
        return sh_errorf(err, SH_EFORBIDDEN, "job %lld has no part on node %s",
                         (long long)e->id, n->name);
    acct_part_usage(job, e->cpu_ns, e->mem_peak);
    nodes_job_digest(d, n->name, e->id, e->attempt, e->digest);
    return jobs_part_exited(d, job, n->name, e->exit_code, e->exit_signal,
                            e->reason, e->error, err);
}
