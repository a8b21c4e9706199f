/* SPDX-License-Identifier: Apache-2.0 */
/* Binding jobs to nodes (see cluster.h). */
#include "shoald/cluster.h"

#include <stdbool.h>
#include <stdlib.h>

#include "lib/util/parse.h"
#include "shoald/auth.h"

struct cluster {
    bool schedule_pending; /* a pass is due before the loop sleeps */
};

int cluster_create(struct shoald *d, struct sh_error *err)
{
    d->cluster = calloc(1, sizeof(*d->cluster));
    if (!d->cluster)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

void cluster_destroy(struct shoald *d)
{
    free(d->cluster);
    d->cluster = NULL;
}

void cluster_tenants_changed(struct shoald *d)
{
    shoald_schedule_soon(d);
}

void cluster_reloaded(struct shoald *d)
{
    shoald_schedule_soon(d);
}

void shoald_schedule_soon(struct shoald *d)
{
    if (d->cluster)
        d->cluster->schedule_pending = true;
}

int cluster_check_submit(struct shoald *d, const struct job_spec *spec,
                         struct sh_error *err)
{
    const struct auth_user *u = auth_user_get(d->auth, spec->user);
    if (u && u->limits.max_time_s > 0) {
        char lim[32];
        format_duration(u->limits.max_time_s, lim, sizeof(lim));
        if (spec->time_limit == 0)
            return sh_errorf(err, SH_EQUOTA,
                             "limit: user %s must give a time limit of at "
                             "most %s (--time)",
                             spec->user, lim);
        if (spec->time_limit > u->limits.max_time_s)
            return sh_errorf(err, SH_EQUOTA,
                             "limit: user %s may run jobs for at most %s",
                             spec->user, lim);
    }
    return 0;
}

void cluster_job_added(struct shoald *d, struct job *job)
{
    (void)job;
    shoald_schedule_soon(d);
}

void cluster_job_changed(struct shoald *d, struct job *job,
                         enum job_state from)
{
    (void)job;
    (void)from;
    shoald_schedule_soon(d);
}

double cluster_slice_share_sum(const struct shoald *d, const struct job *job)
{
    (void)d;
    double gpus = 0.0;
    for (int i = 0; i < job->nalloc; i++)
        gpus += job->alloc[i].ngpus;
    return gpus;
}

void cluster_before_sleep(struct shoald *d)
{
    if (!d->cluster->schedule_pending)
        return;
    d->cluster->schedule_pending = false;
}
