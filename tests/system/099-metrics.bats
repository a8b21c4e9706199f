#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: the Prometheus metrics people graph, on a real cluster with jobs
# running, pending and idle: each GPU (allocated, idle, utilization,
# memory), each project and user (GPUs used, pending jobs, guarantee,
# limit), pending jobs by reason kind and the scheduling pass histogram;
# the exposition passes `promtool check metrics`; the series that name
# users and projects need an admin's token; the Grafana dashboard in
# contrib/ parses and graphs only metrics that exist.

load lib/cluster

teardown() { shoal_cluster_stop; }

# set_util NODE PCT: the node's simulated GPUs report PCT from now on.
set_util() {
    local cfg="$SHOAL_TEST_DIR/$1/simgpu.json"
    jq ".util = $2" "$cfg" >"$cfg.new"
    mv "$cfg.new" "$cfg"
}

scrape() { curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/metrics"; }

# metric SERIES: the value of one series, exactly as written (name and
# labels), from a fresh scrape; nothing when absent.
metric() {
    scrape | series "$1"
}
# series SERIES: the same from the exposition on stdin.
series() { awk -v s="$1" 'substr($0, 1, length(s) + 1) == s " " { print $2 }'; }
metric_is() { [ "$(metric "$1")" = "$2" ]; }

reason_matches() { job_field "$1" .reason | grep -qE -- "$2"; }

promtool_check() {
    if ! command -v promtool >/dev/null; then
        skip "promtool is not installed (Debian package prometheus; scripts/install-deps.sh installs it)"
    fi
    run promtool check metrics <<<"$1"
    echo "$output"
    [ "$status" -eq 0 ]
}

start_metrics_cluster() {
    shoal_tmp_init
    shoald_start --idle-after 1s --idle-threshold 10
    agent_start node1 2 H100-80GB
    agent_start node2 2 H100-80GB
    wait_for 20 nodes_up_is 2
}

@test "met-001 GPUs, projects, users, reasons and passes are graphed with their values" {
    start_metrics_cluster
    set_util node1 0
    set_util node2 0
    me=$(id -un)
    shoal team create research --guaranteed 4
    shoal project create vision --team research --guaranteed 1 --limit 2
    shoal user set-limits "$me" --max-gpus 3
    a=$(submit --project vision --gpus 2 -- sleep 1000)
    wait_job_state "$a" running
    node=$(job_field "$a" '.placement[0].node')
    b=$(submit --project vision --gpus 1 -- sleep 1000)
    h=$(submit --hold --gpus 1 -- true)
    wait_for 10 reason_matches "$b" '^quota:'

    # Each GPU: the job's two are allocated, the other node's are not.
    for g in 0 1; do
        metric_is "shoal_gpu_allocated{node=\"$node\",gpu=\"$g\",model=\"H100-80GB\"}" 1
    done
    other=node1
    [ "$node" = node1 ] && other=node2
    metric_is "shoal_gpu_allocated{node=\"$other\",gpu=\"0\",model=\"H100-80GB\"}" 0
    total=$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/nodes/$node" |
        jq '.gpus[0].memory')
    [ "$total" -gt 0 ]
    metric_is "shoal_gpu_memory_total_bytes{node=\"$node\",gpu=\"0\",model=\"H100-80GB\"}" "$total"
    [ -n "$(metric "shoal_gpu_memory_used_bytes{node=\"$node\",gpu=\"0\",model=\"H100-80GB\"}")" ]
    wait_for 10 metric_is "shoal_gpu_utilization_percent{node=\"$node\",gpu=\"0\",model=\"H100-80GB\"}" 0
    # Idle: allocated and under the threshold for --idle-after (1s).
    wait_for 20 metric_is "shoal_gpu_idle{node=\"$node\",gpu=\"1\",model=\"H100-80GB\"}" 1
    metric_is "shoal_gpu_idle{node=\"$other\",gpu=\"1\",model=\"H100-80GB\"}" 0
    metric_is shoal_gpus_idle 2
    # ...and no longer idle once its GPUs work.
    set_util "$node" 90
    wait_for 20 metric_is shoal_gpus_idle 0
    metric_is "shoal_gpu_utilization_percent{node=\"$node\",gpu=\"0\",model=\"H100-80GB\"}" 90

    # Projects and users.
    metric_is 'shoal_project_gpus_used{project="vision"}' 2
    metric_is 'shoal_project_jobs_running{project="vision"}' 1
    metric_is 'shoal_project_jobs_pending{project="vision"}' 1
    metric_is 'shoal_project_jobs_pending{project="default"}' 1
    metric_is 'shoal_project_gpus_guaranteed{project="vision",team="research",gpu_model="any"}' 1
    metric_is 'shoal_project_gpus_limit{project="vision",team="research",gpu_model="any"}' 2
    metric_is "shoal_user_gpus_used{user=\"$me\"}" 2
    metric_is "shoal_user_jobs_pending{user=\"$me\"}" 2
    metric_is "shoal_user_gpus_limit{user=\"$me\"}" 3
    # No limit: no series (rather than a number that means "none").
    [ -z "$(metric "shoal_user_jobs_limit{user=\"$me\"}")" ]

    # Pending jobs by reason kind, and the scheduling passes.
    metric_is 'shoal_jobs_pending{reason="quota"}' 1
    metric_is 'shoal_jobs_pending{reason="held"}' 1
    metric_is 'shoal_jobs_pending{reason="dependency"}' 0
    out=$(scrape) # one scrape: passes go on meanwhile
    passes=$(series shoal_schedule_pass_seconds_count <<<"$out")
    [ "$passes" -ge 1 ]
    [ "$(series 'shoal_schedule_pass_seconds_bucket{le="+Inf"}' <<<"$out")" = "$passes" ]
    metric_is 'shoal_jobs{state="running"}' 1

    # Releasing the held job moves it out of "held".
    shoal release "$h"
    wait_for 10 metric_is 'shoal_jobs_pending{reason="held"}' 0
    shoal cancel "$a" "$b"
    wait_for 10 metric_is 'shoal_project_gpus_used{project="vision"}' 0
    metric_is 'shoal_project_jobs_pending{project="vision"}' 0
    out=$(scrape)
    promtool_check "$out"
}

@test "met-002 without an admin's token: cluster figures only, still valid" {
    shoal_cluster_start 1 2
    id=$(submit --gpus 1 -- sleep 1000)
    wait_job_state "$id" running
    out=$(curl -sf "$SHOAL_URL/metrics")
    [[ "$out" == *'shoal_gpus_allocated 1'* ]]
    [[ "$out" == *'shoal_jobs{state="running"} 1'* ]]
    [[ "$out" != *shoal_gpu_allocated* ]]
    [[ "$out" != *shoal_user_* ]]
    [[ "$out" != *shoal_project_* ]]
    # A user's token is not enough: user and project names stay hidden.
    bob=$(shoal user create bob | tail -n1)
    out=$(curl -sf -H "Authorization: Bearer $bob" "$SHOAL_URL/metrics")
    [[ "$out" != *shoal_user_* ]]
    promtool_check "$out"
}

@test "met-003 the Grafana dashboard parses and graphs only metrics that exist" {
    dash="$BATS_TEST_DIRNAME/../../contrib/grafana/shoal.json"
    jq -e '.panels | length > 0' "$dash"
    used=$(jq -r '.. | .expr? // empty, .query? // empty | strings' "$dash" |
        grep -oE 'shoal_[a-z_]+' | sort -u)
    [ -n "$used" ]
    shoal_cluster_start 1 2
    # Limits have series only where set.
    shoal team create research --guaranteed 2
    shoal project create vision --team research --guaranteed 1 --limit 2
    shoal user set-limits "$(id -un)" --max-gpus 2
    id=$(submit --project vision --gpus 1 -- sleep 1000)
    wait_job_state "$id" running
    have=$(scrape | grep -v '^#' | sed -E 's/[{ ].*//' | sort -u)
    missing=$(comm -23 <(echo "$used") <(echo "$have"))
    echo "missing: $missing"
    [ -z "$missing" ]
}
