/* SPDX-License-Identifier: Apache-2.0 */
/* Creating, wiring and destroying a controller context (shoald_setup.h).
 * The top of src/shoald below main.c: it calls every module's create and
 * destroy, and it alone sets the call-backs by which a lower module calls
 * a higher one. */
#include "shoald/nodework.h"
#include "shoald/shoald_setup.h"

#include <stdlib.h>
#include <unistd.h>

#include "lib/loop/loop.h"
#include "lib/util/log.h"
#include "shoald/api_handlers.h"
#include "shoald/auth.h"
#include "shoald/engine.h"
#include "shoald/commit.h"
#include "shoald/ha.h"
#include "shoald/jobs.h"
#include "shoald/jobtab.h"
#include "shoald/logs.h"
#include "shoald/nodetab.h"
#include "shoald/partitions.h"
#include "shoald/retention.h"
#include "shoald/secrets.h"
#include "shoald/slices.h"
#include "shoald/state.h"
#include "shoald/steps.h"
#include "shoald/tenancy.h"
#include "shoald/volumes.h"
#include "store/store.h"

/* d->job_transition: the cluster's way in (a start, a preemption, a
 * dependency that can never be met). */
static int lifecycle_transition(struct shoald *d, struct job *job, int to,
                                const char *reason, struct sh_error *err)
{
    return jobs_transition(d, job, (enum job_state)to, reason, err);
}

int shoald_create(struct shoald *d, struct sh_error *err)
{
    d->loop = loop_create(err);
    if (!d->loop)
        return -1;
    d->store = store_open(d->cfg.store_url, err);
    /* A deposed leader starting again as a follower waits for the database
     * (it may be why leadership was lost) instead of giving up. */
    while (!d->store && err->code == SH_EUNAVAILABLE &&
           getenv(HA_RESTART_ENV)) {
        sh_log(LOG_WARNING, "main", "%s; trying again in 1 s", err->msg);
        sleep(1);
        d->store = store_open(d->cfg.store_url, err);
    }
    if (!d->store)
        return -1;
    store_set_leader_lease(d->store, d->cfg.leader_lease_ms);
    d->auth = auth_create(err);
    if (!d->auth)
        return -1;
    /* Steps wake the nodes they start on (nodework.c). */
    d->steps = steps_create(cluster_node_touch, err);
    if (!d->steps)
        return -1;
    d->slices = slices_create(err);
    if (!d->slices)
        return -1;
    /* Slicing tells the engine's bridge through these (engine.c reads
     * the plans, so slices.c does not call into it). */
    const struct slices_hooks slice_hooks = {
        .node_changed = cluster_node_changed,
        .node_touch = cluster_node_touch,
        .job_reason = cluster_job_reason,
    };
    slices_attach(d->slices, &slice_hooks);
    d->tenancy = tenancy_create(err);
    if (!d->tenancy)
        return -1;
    d->volumes = volumes_create(err);
    if (!d->volumes)
        return -1;
    d->partitions = partitions_create(err);
    if (!d->partitions)
        return -1;
    d->retention = retention_create(err);
    if (!d->retention)
        return -1;
    d->secrets = secrets_create(d->cfg.state_dir, err);
    if (!d->secrets)
        return -1;
    d->commit = commit_create(d->store, d->loop, state_reload, d, err);
    if (!d->commit)
        return -1;
    commit_on_fenced(d->commit, ha_fenced, d);
    d->job_transition = lifecycle_transition;
    d->wake_agent = api_agent_answer_poll;
    return 0;
}

void shoald_destroy(struct shoald *d)
{
    logs_destroy(d->logs);
    d->logs = NULL;
    if (d->cluster)
        cluster_destroy(d);
    commit_destroy(d->commit);
    jobtab_destroy(d->jobs);
    nodetab_destroy(d->nodes);
    auth_destroy(d->auth);
    tenancy_destroy(d->tenancy);
    volumes_destroy(d->volumes);
    partitions_destroy(d->partitions);
    retention_destroy(d->retention);
    d->retention = NULL;
    secrets_destroy(d->secrets);
    slices_destroy(d->slices);
    steps_destroy(d->steps);
    d->steps = NULL;
    store_close(d->store);
    loop_destroy(d->loop);
}
