#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: host CPUs, memory and processes are resources (issue 29): the
# engine counts a job's memory on its node, a request no node can hold is
# refused at submission, a job that asks nothing still gets a memory and
# a process limit in its cgroup, a fork bomb ends at that limit, and an
# OOM kill is the job's reason.

load lib/cluster

teardown() { shoal_cluster_stop; }

node_json() { "$SHOAL_CLI" nodes --json | jq -r ".[0].$1"; }

running_count() {
    "$SHOAL_CLI" queue --json 2>/dev/null | jq '[.[] | select(.state == "running")] | length'
}

need_cgroups() {
    [ "$(id -u)" -eq 0 ] || skip "cgroups need root"
    grep -q "cgroup v" "$SHOAL_TEST_DIR/node1.log" || skip "no usable cgroups here"
}

@test "res-001 memory is scheduled: two of three jobs fit the node, the third waits for memory" {
    shoal_cluster_start 1 4
    mem=$(node_json memory)
    [ "$mem" -gt 0 ]
    # Each asks 42% of the node's memory (10G of 23.6G): two fit, not three.
    each=$((mem * 42 / 100 / 1048576))M
    a=$(submit --mem "$each" --gpus 1 -- sleep 20)
    b=$(submit --mem "$each" --gpus 1 -- sleep 20)
    c=$(submit --mem "$each" --gpus 1 -- sleep 20)
    wait_job_state "$a" running 20
    wait_job_state "$b" running 20
    wait_job_reason "$c" "memory on a node (largest free:" 20
    job_field "$c" .reason
    job_field "$c" .reason | grep -q '^resources: needs .* memory on a node'
    [ "$(job_state "$c")" = pending ]
    [ "$(running_count)" -le 2 ]
    # The node shows the memory its jobs hold.
    run "$SHOAL_CLI" nodes
    echo "$output"
    echo "$output" | grep -qE '^node1 +up +2/4 +H100-80GB +[0-9]+/[0-9]+ +[0-9.]+[KMGTP]/[0-9.]+[KMGTP] '
    [ "$(node_json memory_allocated)" -ge $((mem * 84 / 100 - 2097152)) ]
    # The request shows in the queue.
    run "$SHOAL_CLI" show "$c"
    echo "$output"
    shoal cancel "$a" >/dev/null
    wait_job_state "$c" running 30
    shoal cancel "$b" "$c" >/dev/null
}

@test "res-002 a request larger than any node is refused at submission with the largest node's figures" {
    shoal_cluster_start 1 2
    mem=$(node_json memory)
    big=$((mem / 1073741824 + 100))G
    run "$SHOAL_CLI" submit --mem "$big" -- true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"needs ${big} memory on a node but the largest node has"* ]]
    api POST /v1/jobs "{\"command\":[\"true\"],\"mem\":$((mem * 2)),\"gpus\":1,\"nodes\":1}"
    echo "$status_code $body"
    [ "$status_code" = 400 ]
    [ "$("$SHOAL_CLI" queue --json | jq length)" = 0 ]
}

@test "res-003 a job without --mem gets a memory share, a CPU quota and a process limit in its cgroup" {
    shoal_cluster_start 1 4
    need_cgroups
    mem=$(node_json memory)
    out="$SHOAL_TEST_DIR/limits"
    # The job reads its own cgroup's limits (v1 or v2).
    id=$(submit --gpus 1 -- sh -c '
        p=$(sed -n "s/^[0-9]*:memory:\(.*\)/\1/p" /proc/self/cgroup)
        if [ -n "$p" ]; then
            cat "/sys/fs/cgroup/memory$p/memory.limit_in_bytes"
            cat "/sys/fs/cgroup/pids$(sed -n "s/^[0-9]*:pids:\(.*\)/\1/p" /proc/self/cgroup)/pids.max"
            c=/sys/fs/cgroup/cpu$(awk -F: "\$2 ~ /(^|,)cpu(,|\$)/ {print \$3}" /proc/self/cgroup)
            echo "$(cat $c/cpu.cfs_quota_us) $(cat $c/cpu.cfs_period_us)"
        else
            p=$(sed -n "s/^0::\(.*\)/\1/p" /proc/self/cgroup)
            cat "/sys/fs/cgroup$p/memory.max" "/sys/fs/cgroup$p/pids.max" "/sys/fs/cgroup$p/cpu.max"
        fi >'"$out"'')
    wait_job_state "$id" completed 30
    cat "$out"
    limit=$(sed -n 1p "$out")
    pids=$(sed -n 2p "$out")
    # A quarter of the node (one GPU of four), never the whole node.
    [ "$limit" -gt 0 ]
    [ "$limit" -le $((mem / 4)) ]
    [ "$pids" = 4096 ]
    # No CPU count here (fewer CPUs than GPUs): at most the CPUs the node
    # offers jobs, as a quota.
    read -r quota period < <(sed -n 3p "$out")
    [ "$((quota / period))" = "$(node_json cpus)" ]
    # The request the engine counted is the job's.
    [ "$(job_field "$id" .mem)" = "$limit" ]
}

@test "res-004 a fork bomb ends at the job's process limit and the node stays up" {
    shoald_start
    agent_start node1 2 H100-80GB --max-pids 40
    wait_for 20 nodes_up_is 1
    need_cgroups
    # Bounded: at most 300 sleeps even without a limit.
    id=$(submit -- sh -c 'i=0; while [ $i -lt 300 ]; do sleep 60 & i=$((i + 1)); done; wait')
    wait_job_state "$id" failed 40
    run shoal logs "$id"
    echo "$output"
    [[ "$output" == *"ork"* ]] # "can't fork" / "Cannot fork"
    nodes_up_is 1
    ok=$(submit -- echo fine)
    wait_job_state "$ok" completed 30
}

@test "res-005 an OOM kill is the job's reason, with its limit" {
    shoal_cluster_start 1 1
    need_cgroups
    id=$(submit --mem 64M -- python3 -c 'x = b"x" * (512 << 20)')
    wait_job_state "$id" failed 30
    job_field "$id" .reason
    job_field "$id" .reason | grep -q '^out of memory: limit 64M on node1$'
}

@test "res-006 --cpus-per-task, --cpus-per-gpu, --mem-per-gpu, --mem-per-cpu resolve per node, in scripts too" {
    shoal_cluster_start 1 4
    a=$(submit --gpus 2 --mem-per-gpu 1G --cpus-per-gpu 1 -- true)
    [ "$(job_field "$a" .mem)" = $((2 << 30)) ]
    [ "$(job_field "$a" .cpus)" = 2 ]
    b=$(submit --cpus-per-task 1 --tasks-per-node 2 --mem-per-cpu 256M -- true)
    [ "$(job_field "$b" .cpus)" = 2 ]
    [ "$(job_field "$b" .mem)" = $((512 << 20)) ]
    script="$SHOAL_TEST_DIR/job.sbatch"
    printf '#!/bin/sh\n#SBATCH --gres=gpu:2\n#SBATCH --mem-per-gpu=300\n#SBATCH --cpus-per-gpu=1\ntrue\n' >"$script"
    c=$(submit "$script")
    [ "$(job_field "$c" .mem)" = $((600 << 20)) ]
    [ "$(job_field "$c" .cpus)" = 2 ]
    # The command line wins over the script's form.
    d=$(submit --mem 1G "$script")
    [ "$(job_field "$d" .mem)" = $((1 << 30)) ]
    run "$SHOAL_CLI" submit --mem 1G --mem-per-gpu 1G --gpus 1 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"--mem and --mem-per-gpu both give the memory"* ]]
    run "$SHOAL_CLI" submit --mem-per-gpu 1G -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"--mem-per-gpu needs GPUs"* ]]
    run "$SHOAL_CLI" submit --mem-per-cpu 1G --gpus 1 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"--mem-per-cpu needs a CPU count"* ]]
}
