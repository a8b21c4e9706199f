#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: shoal update: a pending job's size, limit and priority change and
# it is scheduled anew; a running job's time limit can be lowered and the
# agent enforces the new one; what cannot change is refused with why.

load lib/cluster

teardown() { shoal_cluster_stop; }

@test "upd-001 a pending job is changed and scheduled as it now is" {
    shoal_cluster_start 1 2
    r=$(submit --gpus 2 -- sleep 3)
    p=$(submit --gpus 2 --time 10m -- true)
    wait_job_state "$r" running
    run shoal update "$p" --gpus 1 --time 5m --priority high --name small
    [ "$status" -eq 0 ]
    [[ "$output" == "updated job $p" ]]
    [ "$(job_field "$p" .gpus)" = 1 ]
    [ "$(job_field "$p" .time_limit)" = 300 ]
    [ "$(job_field "$p" .priority)" = high ]
    [ "$(job_field "$p" .name)" = small ]
    wait_job_state "$p" completed 20
    [ "$(job_field "$p" '.placement[0].gpus | length')" = 1 ]
}

@test "upd-002 what cannot change is refused and changes nothing" {
    shoal_cluster_start 1 2
    r=$(submit --gpus 2 -- sleep 30)
    p=$(submit --gpus 1 -- true)
    wait_job_state "$r" running
    run shoal update "$p" --gpus 8
    [ "$status" -ne 0 ]
    [[ "$output" == *"never fit"* ]] || [[ "$output" == *"largest node"* ]]
    [ "$(job_field "$p" .gpus)" = 1 ]
    api PATCH "/v1/jobs/$p" '{"command":["ls"]}'
    [ "$status_code" = 400 ]
    [[ "$body" == *"'command' cannot be updated"* ]]
    run shoal update "$r" --gpus 1
    [ "$status" -ne 0 ]
    [[ "$output" == *"is running: only its time limit can change"* ]]
    run shoal update "$p"
    [ "$status" -ne 0 ]
    [[ "$output" == *"nothing to change"* ]]
    shoal cancel "$p" >/dev/null
    run shoal update "$p" --time 1h
    [ "$status" -ne 0 ]
    [[ "$output" == *"only pending or running jobs can be updated"* ]]
    shoal cancel "$r" >/dev/null
}

@test "upd-003 a running job's lowered time limit is enforced by its agent" {
    shoal_cluster_start 1 1
    j=$(submit --gpus 1 --time 10m -- sleep 120)
    wait_job_state "$j" running
    run shoal update "$j" --time 2s
    [ "$status" -eq 0 ]
    [ "$(job_field "$j" .time_limit)" = 2 ]
    wait_job_state "$j" timeout 20
}

@test "req-001 shoal requeue: a running job is stopped and runs again, an ended one too" {
    shoal_cluster_start 1 1
    j=$(submit --gpus 1 -- bash -c 'echo "attempt $SHOAL_ATTEMPT"; sleep 30')
    wait_job_state "$j" running
    run shoal requeue "$j"
    [ "$status" -eq 0 ]
    [[ "$output" == "requeued job $j" ]]
    wait_for 20 job_attempt_is "$j" 1
    wait_job_state "$j" running 20
    [ "$(job_field "$j" .requeues)" = 1 ]
    shoal cancel "$j" >/dev/null
    wait_job_state "$j" cancelled 20
    # An ended job goes back at once, and runs.
    run shoal requeue "$j"
    [ "$status" -eq 0 ]
    wait_for 20 job_attempt_is "$j" 2
    wait_job_state "$j" running 20
    run shoal requeue 999999
    [ "$status" -ne 0 ]
    shoal cancel "$j" >/dev/null
}

job_attempt_is() { [ "$(job_field "$1" .attempt)" = "$2" ]; }

@test "upd-004 --gpus-total on a pending job: the engine picks its shape; conflicts are named" {
    shoal_cluster_start 2 2
    r=$(submit --gpus 2 --nodes 2 -- sleep 30)
    wait_job_state "$r" running
    p=$(submit --gpus 1 -- true)
    run shoal update "$p" --gpus-total 4
    [ "$status" -eq 0 ]
    [ "$(job_field "$p" .gpus_total)" = 4 ]
    [ "$(job_field "$p" .gpus)" = 0 ]
    # With a fixed shape in the same update: refused, naming it.
    run shoal update "$p" --gpus-total 2 --gpus 1
    [ "$status" -ne 0 ]
    [[ "$output" == *"--gpus-total lets Shoal pick the nodes and the GPUs per node: not with --gpus"* ]]
    api PATCH "/v1/jobs/$p" '{"gpus_total":2,"nodes":2}'
    [ "$status_code" = 400 ]
    [[ "$body" == *"not with nodes (--nodes)"* ]]
    api PATCH "/v1/jobs/$p" '{"gpus_total":0}'
    [ "$status_code" = 400 ]
    [[ "$body" == *"gpus_total must be 1..65536"* ]]
    # More than the cluster holds: as at submit.
    run shoal update "$p" --gpus-total 9
    [ "$status" -ne 0 ]
    [ "$(job_field "$p" .gpus_total)" = 4 ]
    # A job with a node list or a slice cannot take it.
    nl=$(submit --gpus 1 --nodelist node2 -- true)
    run shoal update "$nl" --gpus-total 1
    [ "$status" -ne 0 ]
    [[ "$output" == *"--nodelist node2"* ]]
    sl=$(submit --slice shared --hold -- true)
    run shoal update "$sl" --gpus-total 1
    [ "$status" -ne 0 ]
    [[ "$output" == *"--slice shared"* ]]
    # Back to a fixed shape needs --gpus.
    run shoal update "$p" --nodes 2
    [ "$status" -ne 0 ]
    [[ "$output" == *"give gpus (--gpus) per node"* ]]
    # A running job: refused.
    run shoal update "$r" --gpus-total 1
    [ "$status" -ne 0 ]
    [[ "$output" == *"only its time limit can change"* ]]
    # It runs with the shape the engine picked: 2 nodes x 2 GPUs.
    shoal cancel "$r" >/dev/null
    wait_job_state "$p" completed 30
    [ "$(job_field "$p" '.placement | length')" = 2 ]
    [ "$(job_field "$p" '[.placement[].gpus | length] | add')" = 4 ]
    # Back from gpus_total to a fixed shape.
    q=$(submit --gpus-total 2 --hold -- true)
    run shoal update "$q" --gpus 1
    [ "$status" -eq 0 ]
    [ "$(job_field "$q" '.gpus_total // 0')" = 0 ]
    [ "$(job_field "$q" .gpus)" = 1 ]
    [ "$(job_field "$q" .nodes)" = 1 ]
}
