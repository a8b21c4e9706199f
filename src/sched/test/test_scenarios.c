/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the scheduling rules, one scenario file each, from
 * tests/data/sched/ (format in its README.md). Each test runs one file
 * through the scenario runner, which checks the engine's invariants after
 * every line.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "sched/test/scn.h"

#ifndef SCHED_TEST_DATA
#error "SCHED_TEST_DATA must name tests/data/sched"
#endif

static void run(const char *file)
{
    char path[512];
    char msg[1024];
    snprintf(path, sizeof(path), "%s/%s", SCHED_TEST_DATA, file);
    int rc = scn_run_file(path, msg, sizeof(msg));
    cr_assert(rc == 0, "%s", msg);
}

Test(sched_scenario, single_node_jobs_go_best_fit)
{
    run("placement_bestfit.scn");
}

Test(sched_scenario, gpus_of_one_nvlink_group_preferred)
{
    run("placement_nvlink.scn");
}

Test(sched_scenario, gangs_are_all_or_nothing)
{
    run("gang.scn");
}

Test(sched_scenario, gangs_pack_into_one_topology_group)
{
    run("topology.scn");
}

Test(sched_scenario, queue_order_is_priority_fair_share_age_id)
{
    run("order.scn");
}

Test(sched_scenario, borrowing_stops_at_the_limit_with_a_reason)
{
    run("quota_limit.scn");
}

Test(sched_scenario, owner_reclaims_borrowed_gpus_by_preemption)
{
    run("quota_reclaim.scn");
}

Test(sched_scenario, reclaim_preempts_the_fewest_jobs)
{
    run("quota_reclaim_fewest.scn");
}

Test(sched_scenario, user_limits_hold_jobs_back)
{
    run("user_limits.scn");
}

Test(sched_scenario, backfill_never_delays_the_reservation)
{
    run("backfill.scn");
}

Test(sched_scenario, backfill_reserves_for_jobs_beyond_their_guarantee)
{
    run("backfill_quotas.scn");
}

Test(sched_scenario, every_pending_job_has_an_estimate_or_why_not)
{
    run("estimates.scn");
}

Test(sched_scenario, small_jobs_first_within_a_bounded_credit)
{
    run("short_credit.scn");
}

Test(sched_scenario, slices_profiles_memory_and_unfenced_gpus)
{
    run("slices.scn");
}

Test(sched_scenario, jobs_that_can_never_fit_are_rejected)
{
    run("never_fit.scn");
}

Test(sched_scenario, whole_gpu_jobs_never_fit_a_fully_sliced_cluster)
{
    run("never_fit_sliced.scn");
}

Test(sched_scenario, sliced_gpus_count_as_whole_when_the_caller_reslices)
{
    run("never_fit_sliced_reslice.scn");
}

Test(sched_scenario, fifo_policy_lets_nothing_pass_the_head)
{
    run("fifo.scn");
}

Test(sched_scenario, unavailable_nodes_get_nothing_new)
{
    run("nodes.scn");
}

Test(sched_scenario, freed_gpus_go_down_the_order_incrementally)
{
    run("incremental.scn");
}

Test(sched_scenario, team_guarantee_and_reclaim_across_teams)
{
    run("quota_team.scn");
}

Test(sched_scenario, several_reservations_do_not_overlap)
{
    run("reservations.scn");
}

Test(sched_scenario, restart_recovery_keeps_placements)
{
    run("recover.scn");
}

Test(sched_scenario, priority_classes_come_first)
{
    run("priority_classes.scn");
}

Test(sched_scenario, memory_jobs_unschedulable_gpus_and_slice_limits)
{
    run("slices_more.scn");
}

Test(sched_scenario, nodelist_exclude_constraint_and_exclusive)
{
    run("placement_wishes.scn");
}

Test(sched_scenario, siblings_in_a_team_give_back_guarantees)
{
    run("quota_siblings.scn");
}

Test(sched_scenario, las_orders_by_attained_service_with_a_starvation_guard)
{
    run("las_order.scn");
}

Test(sched_scenario, las_preempts_checkpointable_jobs_of_a_higher_level)
{
    run("las_preempt.scn");
}

Test(sched_scenario, las_keeps_guarantees)
{
    run("las_quota.scn");
}

Test(sched_scenario, las_guard_gives_a_promoted_job_a_safe_run)
{
    run("las_guard.scn");
}

Test(sched_scenario, las_hold_keeps_the_run_of_a_job_that_waited_long)
{
    run("las_hold.scn");
}

Test(sched_scenario, default_orders_checkpointable_jobs_by_level_first)
{
    run("default_las_order.scn");
}

Test(sched_scenario, default_preempts_only_checkpointable_jobs_by_level)
{
    run("default_las_preempt.scn");
}

Test(sched_scenario, default_rebuilt_engine_recovers_las_rules_and_holds)
{
    run("default_las_recover.scn");
}

Test(sched_scenario, default_quota_reclaim_keeps_its_order_with_las_rules)
{
    run("default_las_quota.scn");
}

Test(sched_scenario, host_cpus_and_memory_steer_placement)
{
    run("host_placement.scn");
}

Test(sched_scenario, gangs_need_host_memory_on_every_node)
{
    run("host_gang.scn");
}

Test(sched_scenario, backfill_keeps_a_reservations_host_memory)
{
    run("host_backfill.scn");
}

Test(sched_scenario, reclaim_frees_the_host_memory_a_job_needs)
{
    run("host_preempt.scn");
}
