#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: partitions and QOS a cluster admin defines, so Slurm scripts'
# -p/--partition and --qos work: a partition restricts the job's nodes
# (a label selector), gives and caps its time limit, may be kept for some
# projects and may be the default; a QOS gives the priority class and
# caps the time. Unknown names are refused listing the valid ones; only
# admins create and delete them; they survive a controller restart.

load lib/cluster

teardown() { shoal_cluster_stop; }

nodes_of() { job_field "$1" '[.placement[].node] | sort | join(",")'; }

@test "pq-001 -p and --qos: nodes, time limits, projects, default, priority" {
    shoald_start
    agent_start node1 2 H100-80GB --label a100
    agent_start node2 2 H100-80GB --label h100
    wait_for 20 nodes_up_is 2
    shoal team create research --guaranteed 4
    shoal project create vision --team research --guaranteed 2
    shoal partition create gpu --nodes all --default --default-time 1h --max-time 2h
    shoal partition create big --nodes a100 --projects vision --max-time 4h
    shoal qos create urgent --priority high --max-time 30m
    run shoal partition list
    echo "$output"
    echo "$output" | grep -E '^big +a100 +- +4h00m +vision$'
    echo "$output" | grep -E '^gpu +yes +all +1h00m +2h00m +\(all\)$'
    run shoal qos list
    echo "$output" | grep -E '^urgent +high +30m00s +-$'
    # A second default, or a bad selector, is refused.
    run shoal partition create other --nodes all --default
    [ "$status" -ne 0 ]
    [[ "$output" == *"partition gpu is the default already"* ]]
    run shoal partition create bad --nodes '(a100)'
    [ "$status" -ne 0 ]
    [[ "$output" == *"nodes: "* ]]

    cat >"$SHOAL_TEST_DIR/big.sbatch" <<'EOS'
#!/bin/bash
#SBATCH -p big
#SBATCH -A vision
#SBATCH --gres=gpu:1
echo on $(hostname)
EOS
    j=$(submit "$SHOAL_TEST_DIR/big.sbatch")
    wait_job_state "$j" completed 30
    [ "$(nodes_of "$j")" = node1 ]
    [ "$(job_field "$j" .partition)" = big ]
    [ "$(job_field "$j" .time_limit)" = 14400 ] # the partition's max
    run shoal show "$j"
    echo "$output" | grep -E '^partition: +big$'
    # No -p: the default partition and its default time.
    k=$(submit --gpus 1 -- true)
    [ "$(job_field "$k" .partition)" = gpu ]
    [ "$(job_field "$k" .time_limit)" = 3600 ]
    # Past the partition's limit; a project it is not for; unknown names.
    run shoal submit --partition gpu --time 3h -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"partition gpu allows a time limit of at most 2h00m"* ]]
    run shoal submit --partition big --gpus 1 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"partition big is not open to project default"* ]]
    run shoal submit --partition gpux -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"partition gpux does not exist (the partitions: big, gpu)"* ]]
    run shoal submit --qos fast -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"qos fast does not exist (urgent)"* ]]
    # The QOS: its class, its cap (tighter than the partition's default).
    q=$(submit --qos urgent --time 20m -- true)
    [ "$(job_field "$q" .priority)" = high ]
    [ "$(job_field "$q" .qos)" = urgent ]
    run shoal submit --qos urgent -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"qos urgent allows a time limit of at most 30m00s"* ]]
    wait_job_state "$q" completed 30
}

@test "pq-002 only admins define them; kept across a restart; not deleted under a job" {
    shoal_cluster_start 1 1
    shoal partition create gpu --nodes all --default
    shoal qos create low --priority low
    tok=$(API_TOKEN=$SHOAL_TOKEN api POST /v1/users '{"name":"bob"}' >/dev/null; echo "$body" | jq -r .token)
    API_TOKEN=$tok api POST /v1/partitions '{"name":"mine","nodes":"all"}'
    [ "$status_code" = 403 ]
    API_TOKEN=$tok api GET /v1/partitions
    [ "$status_code" = 200 ]
    [ "$(echo "$body" | jq -r '.partitions[0].name')" = gpu ]
    j=$(submit --qos low --gpus 1 -- sleep 60)
    run shoal partition delete gpu
    [ "$status" -ne 0 ]
    [[ "$output" == *"pending or running jobs use partition gpu (job $j first)"* ]]
    shoal cancel "$j" >/dev/null
    wait_job_state "$j" cancelled 20
    shoald_stop
    shoald_start
    run shoal partition show gpu
    echo "$output" | grep -E '^gpu +yes +all'
    run shoal qos show low
    echo "$output" | grep -E '^low +low'
    shoal partition delete gpu
    shoal qos delete low
    [ "$(shoal partition list --json | jq length)" = 0 ]
}

@test "pq-003 a QOS's GPUs per user: the next job waits, a bigger one is refused" {
    shoal_cluster_start 1 4
    shoal qos create small --priority normal --max-gpus-per-user 2
    run shoal qos list
    echo "$output" | grep -E '^small +normal +- +2$'
    a=$(submit --qos small --gpus 2 -- sleep 60)
    wait_job_state "$a" running 20
    b=$(submit --qos small --gpus 1 -- true)
    wait_job_reason "$b" "qos small: user $(id -un) has 2 of its 2 GPUs per user in use or ahead"
    [ "$(job_state "$b")" = pending ]
    # Outside the QOS the same user's job runs on the free GPUs.
    c=$(submit --gpus 1 -- true)
    wait_job_state "$c" completed 30
    run shoal submit --qos small --gpus 3 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"qos small allows a user 2 GPUs at once; the job asks for 3"* ]]
    shoal cancel "$a" >/dev/null
    wait_job_state "$b" completed 30
}
