#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: the everyday commands as Slurm users type them: shoal queue
# --format (squeue -o fields) and shoal cancel with scancel's filters
# (-u, -n, -t, -p, -A); --signal is refused with the reason.

load lib/cluster

teardown() { shoal_cluster_stop; }

@test "qc-001 queue --format prints squeue's fields" {
    shoal_cluster_start 1 2
    shoal partition create gpu --nodes all
    a=$(submit --partition gpu --gpus 1 --time 1h --name train -- sleep 60)
    b=$(submit --gpus 2 --name wait -- true)
    wait_job_state "$a" running 20
    run shoal queue --format '%.5i %8j %.3t %P %l %D %R'
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "JOBID NAME      ST PARTITION TIME_LIMIT NODES NODELIST(REASON)" ]
    echo "$output" | grep -E "^ +$a train +R gpu 1:00:00 1 node1$"
    echo "$output" | grep -E "^ +$b wait +PD  UNLIMITED 1 \\((resources|reservation)"
    run shoal queue --noheader --format '%i:%T'
    [ "${lines[0]}" = "$a:RUNNING" ]
    run shoal queue --format '%i %Z'
    [ "$status" -ne 0 ]
    [[ "$output" == *"'%Z' is not a field"* ]]
    shoal cancel "$a" "$b" >/dev/null
}

@test "qc-002 cancel -u/-n/-t/-p: the jobs that match every filter" {
    shoal_cluster_start 1 1
    shoal partition create gpu --nodes all
    a=$(submit --name sweep --gpus 1 -- sleep 60)
    b=$(submit --name sweep --gpus 1 -- sleep 60)
    c=$(submit --name other --gpus 1 -- sleep 60)
    d=$(submit --name sweep --partition gpu --gpus 1 -- sleep 60)
    wait_job_state "$a" running 20
    run shoal cancel --name sweep -t pending -p gpu
    echo "$output"
    [ "$output" = "cancelled job $d" ]
    run shoal cancel -u me -n sweep
    echo "$output"
    [[ "$output" == *"cancelled job $a"* ]]
    [[ "$output" == *"cancelled job $b"* ]]
    wait_job_state "$a" cancelled 20
    [ "$(job_state "$b")" = cancelled ]
    [ "$(job_state "$c")" != cancelled ]
    run shoal cancel -n nothing
    [ "$output" = "no job matches" ]
    run shoal cancel --signal USR1 -n other
    [ "$status" -ne 0 ]
    [[ "$output" == *"Shoal signals a job only as it ends"* ]]
    [ "$(job_state "$c")" != cancelled ]
    shoal cancel "$c" >/dev/null
}

@test "qc-003 nodes --format prints sinfo's fields" {
    shoald_start
    agent_start node1 2 H100-80GB --label a100
    wait_for 20 nodes_up_is 1
    run shoal nodes --format '%N %t %G %f %g'
    echo "$output"
    [ "${lines[0]}" = "NODELIST STATE GRES AVAIL_FEATURES GPUS(FREE/TOTAL)" ]
    [ "${lines[1]}" = "node1 idle gpu:H100-80GB:2 a100 2/2" ]
    j=$(submit --gpus 1 -- sleep 60)
    wait_job_state "$j" running 20
    run shoal nodes --noheader --format '%N %t %g %j'
    [ "$output" = "node1 mix 1/2 1" ]
    run shoal nodes --format '%N %Q'
    [ "$status" -ne 0 ]
    [[ "$output" == *"'%Q' is not a field"* ]]
    shoal cancel "$j" >/dev/null
}
