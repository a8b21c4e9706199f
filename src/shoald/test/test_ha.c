/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: leadership (shoald/ha.c) on a store without leadership (SQLite),
 * on its own: a controller made by shoald_create and started with
 * ha_start leads at once, loads the state (a new cluster's tokens), names
 * itself or its advertised URL as the leader, refuses an advertised URL
 * too long to keep, is not deposed by a fenced commit it cannot have, and
 * ha_finish hands back the exit status. (Failover between controllers
 * needs PostgreSQL: tests/system/096-ha.bats.) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shoald/ha.h"
#include "shoald/shoald_setup.h"

static char dir[64];
static char url[128];
static struct shoald d;

static void setup(void)
{
    struct sh_error err = {0};
    memset(&d, 0, sizeof(d));
    snprintf(dir, sizeof(dir), "/tmp/shoal-ha-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(url, sizeof(url), "sqlite:%s/shoal.db", dir);
    d.cfg.state_dir = dir;
    d.cfg.store_url = url;
    d.cfg.admin_user = "admin";
    d.cfg.heartbeat_timeout_s = 30;
    d.cfg.keep_finished_ms = 3600 * 1000;
    d.cfg.las_quantum_ms = -1;
    d.cfg.las_hold_ms = -1;
    d.cfg.las_starve_factor = -1;
    d.cfg.las_starve_max_ms = -1;
    d.cfg.las_hold_gpus = -1;
    cr_assert_eq(shoald_create(&d, &err), 0, "%s", err.msg);
    snprintf(d.url, sizeof(d.url), "http://127.0.0.1:6820");
}

static void teardown(void)
{
    char cmd[128];
    shoald_destroy(&d);
    ha_finish(&d, 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(ha, .init = setup, .fini = teardown);

Test(ha, before_start_it_is_starting_and_serves_nothing)
{
    cr_assert_str_eq(ha_role(&d), "starting");
    cr_assert_not(ha_serving(&d));
    cr_assert_not(ha_deposed(&d));
    cr_assert_str_eq(ha_leader_url(&d), "");
}

Test(ha, on_sqlite_it_leads_at_once_and_loads_the_state)
{
    struct sh_error err = {0};
    cr_assert_eq(ha_start(&d, 6820, 0, NULL, &err), 0, "%s", err.msg);
    cr_assert(ha_serving(&d));
    cr_assert_str_eq(ha_role(&d), "leader");
    cr_assert_str_eq(ha_leader_url(&d), "http://127.0.0.1:6820");
    cr_assert_not_null(d.cluster, "the engine's bridge was made");
    cr_assert_not_null(d.logs);
    char path[128];
    snprintf(path, sizeof(path), "%s/admin.token", dir);
    cr_assert_eq(access(path, F_OK), 0, "a new cluster got its tokens");
}

Test(ha, the_advertised_url_names_the_leader)
{
    struct sh_error err = {0};
    d.cfg.advertise_url = "https://ctl1.example:6820";
    cr_assert_eq(ha_start(&d, 6820, 0, NULL, &err), 0, "%s", err.msg);
    cr_assert_str_eq(ha_leader_url(&d), "https://ctl1.example:6820");
}

Test(ha, an_advertised_url_too_long_is_refused)
{
    struct sh_error err = {0};
    static char longurl[600];
    memset(longurl, 'a', sizeof(longurl) - 1);
    d.cfg.advertise_url = longurl;
    cr_assert_eq(ha_start(&d, 6820, 0, NULL, &err), -1);
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert_not(ha_serving(&d));
}

Test(ha, a_leader_without_leadership_is_not_deposed_by_a_fence)
{
    struct sh_error err = {0};
    cr_assert_eq(ha_start(&d, 6820, 0, NULL, &err), 0, "%s", err.msg);
    ha_fenced(&d, "another controller leads");
    cr_assert(ha_serving(&d));
    cr_assert_not(ha_deposed(&d));
}

Test(ha, finish_hands_back_the_status_and_frees)
{
    struct sh_error err = {0};
    cr_assert_eq(ha_start(&d, 6820, 0, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(ha_finish(&d, 7), 7);
    cr_assert_null(d.ha);
    cr_assert_str_eq(ha_role(&d), "starting");
}
