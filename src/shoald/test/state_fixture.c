/* SPDX-License-Identifier: Apache-2.0 */
/* A whole controller state for unit tests (state_fixture.h). */
#include "state_fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/loop/loop.h"
#include "shoald/auth.h"
#include "shoald/cluster.h"
#include "shoald/commit.h"
#include "shoald/jobtab.h"
#include "shoald/nodetab.h"
#include "shoald/secrets.h"
#include "shoald/slices.h"
#include "shoald/state.h"
#include "shoald/tenancy.h"
#include "shoald/partitions.h"
#include "shoald/volumes.h"
#include "store/store.h"

void state_fixture_open(struct shoald *d, char *dir, size_t dir_size,
                        const char *prefix)
{
    struct sh_error err = {0};
    char url[200];
    memset(d, 0, sizeof(*d));
    snprintf(dir, dir_size, "/tmp/%s-XXXXXX", prefix);
    cr_assert_not_null(mkdtemp(dir));
    d->cfg.state_dir = dir;
    d->cfg.admin_user = "admin";
    d->cfg.heartbeat_timeout_s = 30;
    d->cfg.keep_finished_ms = 3600 * 1000;
    d->cfg.las_quantum_ms = -1; /* the engine defaults, as main.c */
    d->cfg.las_hold_ms = -1;
    d->cfg.las_starve_factor = -1;
    d->cfg.las_starve_max_ms = -1;
    d->cfg.las_hold_gpus = -1;
    snprintf(url, sizeof(url), "sqlite:%s/shoal.db", dir);
    d->loop = loop_create(&err);
    d->store = store_open(url, &err);
    cr_assert_not_null(d->store, "%s", err.msg);
    d->auth = auth_create(&err);
    d->slices = slices_create(&err);
    d->tenancy = tenancy_create(&err);
    d->volumes = volumes_create(&err);
    d->partitions = partitions_create(&err);
    d->secrets = secrets_create(dir, &err);
    d->commit = commit_create(d->store, d->loop, state_reload, d, &err);
    cr_assert(d->loop && d->auth && d->slices && d->tenancy && d->volumes &&
              d->secrets && d->commit);
    cr_assert_eq(state_load(d, &err), 0, "%s", err.msg);
    cr_assert_eq(cluster_create(d, &err), 0, "%s", err.msg);
    cr_assert_eq(state_init_cluster(d, &err), 0, "%s", err.msg);
    cr_assert_eq(commit_flush(d->commit, &err), 0, "%s", err.msg);
}

void state_fixture_close(struct shoald *d, const char *dir)
{
    cluster_destroy(d);
    commit_destroy(d->commit);
    jobtab_destroy(d->jobs);
    nodetab_destroy(d->nodes);
    auth_destroy(d->auth);
    tenancy_destroy(d->tenancy);
    volumes_destroy(d->volumes);
    partitions_destroy(d->partitions);
    secrets_destroy(d->secrets);
    slices_destroy(d->slices);
    store_close(d->store);
    loop_destroy(d->loop);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
