/* SPDX-License-Identifier: Apache-2.0 */
/* A whole controller state for unit tests (state_fixture.h). */
#include "state_fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shoald/auth.h"
#include "shoald/engine.h"
#include "shoald/commit.h"
#include "shoald/nodes.h"
#include "shoald/shoald_setup.h"
#include "shoald/state.h"

void state_fixture_open(struct shoald *d, char *dir, size_t dir_size,
                        const char *prefix)
{
    struct sh_error err = {0};
    static char url[200]; /* d->cfg.store_url points at it */
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
    d->cfg.store_url = url;
    cr_assert_eq(shoald_create(d, &err), 0, "%s", err.msg);
    cr_assert_eq(state_load(d, &err), 0, "%s", err.msg);
    cr_assert_eq(cluster_create(d, &err), 0, "%s", err.msg);
    cr_assert_eq(state_init_cluster(d, &err), 0, "%s", err.msg);
    cr_assert_eq(commit_flush(d->commit, &err), 0, "%s", err.msg);
}

void state_fixture_close(struct shoald *d, const char *dir)
{
    shoald_destroy(d);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

void state_fixture_add_node(struct shoald *d, const char *name, int ngpus,
                            const char *model, int64_t gpu_mem,
                            const char *uuid_tag)
{
    struct sh_error err = {0};
    char token[AUTH_TOKEN_LEN + 1];
    json_t *gpus = json_array();
    for (int i = 0; i < ngpus; i++) {
        char uuid[64];
        snprintf(uuid, sizeof(uuid), "GPU-%s-%d", uuid_tag, i);
        json_array_append_new(
            gpus,
            json_pack("{s:i, s:s, s:s, s:s, s:s, s:I, s:I, s:i, s:b, s:b, "
                      "s:i, s:[]}",
                      "index", i, "uuid", uuid, "name", model, "model", model,
                      "pci_bus_id", "0000:00:00.0", "memory",
                      (json_int_t)gpu_mem, "memory_used", (json_int_t)0,
                      "utilization", 0, "mig_capable", 0, "mig_enabled", 0,
                      "nvlink_group", 0, "slices"));
    }
    struct nodes_reg r = {
        .name = name, .cpus = 8, .mem = 1 << 30, .gpus = gpus};
    struct node *n = NULL;
    cr_assert_eq(nodes_register(d, &r, "127.0.0.9", "test", token, &n, &err), 0,
                 "%s", err.msg);
    json_decref(gpus);
}
