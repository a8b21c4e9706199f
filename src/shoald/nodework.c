/* SPDX-License-Identifier: Apache-2.0 */
/* Each node's desired work (see nodework.h): the runs its agent must run or
 * stop and its slicing, built from the job and node tables, and the
 * wake-up of its held work poll once the change that moved it is durable. */
#include "shoald/nodework.h"

#include <stdbool.h>
#include <string.h>

#include "lib/model/job_container.h"
#include "lib/model/job_json.h"
#include "lib/util/log.h"
#include "shoald/commit.h"
#include "shoald/jobtab.h"
#include "shoald/nodetab.h"
#include "shoald/secrets.h"
#include "shoald/slices.h"
#include "shoald/steps.h"
#include "shoald/volumes.h"

static void wake_polls(bool ok, void *arg);

void nodework_wake(struct shoald *d, const struct node *n,
                   const struct sh_error *err)
{
    if (d->wake_agent)
        d->wake_agent(d, n, err);
}

void cluster_node_touch(struct shoald *d, const char *node)
{
    struct node_rt *rt = nodetab_rt(d->nodes, node);
    if (!rt)
        return;
    rt->generation++;
    rt->wake = true;
    rt->wake_batch = commit_open_batch(d->commit);
    if (!d->wake_registered && commit_after(d->commit, wake_polls, d) == 0)
        d->wake_registered = true;
}

/* The commit_done_f of the agent polls' wake-up; arg is the struct
 * shoald. The wake-up may have been registered for a commit that was
 * already under way when a later change touched a node: that node's answer
 * is composed now and waits for the batch open now (api_agent_answer_poll),
 * so no agent hears of a change before it is durable, and a node touched in
 * every batch waits at most one batch. When the commit failed and memory is
 * not the store's (fenced, or the reload failed) nothing is told from
 * memory: the held polls get 503 and the agents ask again. */
static void wake_polls(bool ok, void *arg)
{
    struct shoald *d = arg;
    d->wake_registered = false;
    struct sh_error lost;
    bool refuse = !ok && commit_memory_lost(d->commit);
    if (refuse)
        sh_errorf(&lost, SH_EUNAVAILABLE,
                  "the controller's state could not be stored; try again");
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n)) {
        struct node_rt *rt = nodetab_rt(d->nodes, n->name);
        if (!rt->wake)
            continue;
        rt->wake = false;
        nodework_wake(d, n, refuse ? &lost : NULL);
    }
}

static const char *stop_reason(const struct job *job)
{
    switch (job->state) {
    case JOB_CANCELLED:
        return "cancelled";
    case JOB_TIMEOUT:
        return "timeout";
    case JOB_PREEMPTED:
        return "preempted";
    case JOB_NODE_FAIL:
        return "node_fail";
    default:
        return "ended";
    }
}

/* A job pulling from a registry gets its project's credentials for that
 * registry, if a secret holds some (secrets_registry_auth): the agent
 * hands them to skopeo in a file of its own, never to the job, and keeps
 * them in no file of the run (work_entry sends them until the node
 * reports the run). */
static void add_registry_auth(struct shoald *d, const struct job *job,
                              json_t *e)
{
    char t[4200];
    if (job_image_transport(job->spec.container.image, t, sizeof(t)) < 0 ||
        strncmp(t, "docker://", 9) != 0)
        return;
    const char *host = t + 9;
    size_t n = strcspn(host, "/");
    if (!host[n])
        return;
    t[9 + n] = '\0';
    json_t *auth = secrets_registry_auth(d->secrets, job->spec.project, host);
    if (auth)
        json_object_set_new(e, "registry_auth", auth);
}

static json_t *work_entry(struct shoald *d, const struct job *job, int part)
{
    const struct job_alloc *al = &job->alloc[part];
    json_t *nodes = json_array();
    json_t *gpus = json_array();
    for (int a = 0; a < job->nalloc; a++)
        json_array_append_new(nodes, json_string(job->alloc[a].node));
    for (int g = 0; g < al->ngpus; g++)
        json_array_append_new(gpus, json_string(al->gpus[g]));
    const struct node *master = nodetab_get(d->nodes, job->alloc[0].node);
    bool run = job->state == JOB_RUNNING;
    /* "o" steals nodes, gpus and the spec */
    json_t *e = json_pack(
        "{s:I, s:i, s:s, s:i, s:o, s:o, s:s, s:i, s:I, s:i, s:o}", "id",
        (json_int_t)job->id, "attempt", job_attempt(job), "action",
        run ? "run" : "stop", "node_rank", part, "nodes", nodes, "gpus", gpus,
        "master_addr",
        master && master->address ? master->address : "127.0.0.1",
        "master_port", job->master_port, "start_ms", (json_int_t)job->start_ms,
        "grace_s", d->cfg.kill_grace_s, "spec", job_spec_to_json(&job->spec));
    if (e && !run)
        json_object_set_new(e, "stop_reason", json_string(stop_reason(job)));
    if (e && run && job->spec.nvolumes > 0)
        json_object_set_new(e, "mounts",
                            volumes_mounts(d->volumes, d->secrets, &job->spec));
    /* Only until the node has the run: the secret is not decrypted for
     * every poll of a running job, nor sent again. */
    if (e && run && job->spec.container.image && !al->reported)
        add_registry_auth(d, job, e);
    if (e && run && job->image_digest)
        json_object_set_new(e, "image_digest", json_string(job->image_digest));
    if (e && run)
        steps_work(d, job, part, e);
    if (e && job->array_id) {
        json_object_set_new(e, "array_id",
                            json_integer((json_int_t)job->array_id));
        json_object_set_new(e, "array_task", json_integer(job->array_task));
    }
    return e;
}

/* A part other than the first of a job in an image waits (its work is not
 * sent) until the first node reported the digest its reference resolved
 * to: then every node pulls that digest (nodes_count_stale takes it). A
 * reference that names its digest needs nobody's resolution. */
static bool part_held(const struct job *job, int part)
{
    return part > 0 && job->state == JOB_RUNNING && job->spec.container.image &&
           !job->image_digest &&
           !job_image_ref_pinned(job->spec.container.image);
}

json_t *cluster_node_work(struct shoald *d, const struct node *n)
{
    struct node_rt *rt = nodetab_rt(d->nodes, n->name);
    json_t *jobs = json_array();
    for (int i = 0; rt && i < rt->njobs; i++) {
        const struct job *job = jobtab_get(d->jobs, rt->jobs[i]);
        if (!job)
            continue;
        for (int a = 0; a < job->nalloc; a++) {
            if (strcmp(job->alloc[a].node, n->name) == 0 &&
                !job->alloc[a].done && !part_held(job, a))
                json_array_append_new(jobs, work_entry(d, job, a));
        }
    }
    /* "o" steals jobs and the slicing work */
    return json_pack("{s:I, s:b, s:o, s:o}", "generation",
                     (json_int_t)(rt ? rt->generation : 0), "drain", n->drain,
                     "jobs", jobs, "slices", slices_node_work(d, n));
}
