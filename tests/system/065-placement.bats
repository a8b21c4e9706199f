#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: where a job may run, as Slurm users ask for it: --nodelist (exactly
# those nodes), --exclude, --constraint on agent labels (--label a100 or
# --label rack=r1; A&B, A|B) and --exclusive (whole nodes). An unknown node
# or a constraint no node has is refused at submission, as Slurm does; a
# wish no free node meets leaves the job pending with the reason.
# --gpus-total N (and #SBATCH --gpus without -N): the engine picks the
# shape, the fewest nodes with the same GPU count on each.

load lib/cluster

teardown() { shoal_cluster_stop; }

reason_matches() { job_field "$1" .reason | grep -qE -- "$2"; }
nodes_of() { job_field "$1" '[.placement[].node] | sort | join(",")'; }

start_labelled() {
    shoald_start
    agent_start node1 4 H100-80GB --label a100 --label rack=r1
    agent_start node2 4 H100-80GB --label ib --label rack=r2
    agent_start node3 4 H100-80GB --label a100 --label ib
    wait_for 20 nodes_up_is 3
}

@test "pl-001 nodelist, exclude and constraint choose the nodes; shoal nodes shows labels" {
    start_labelled
    run shoal nodes
    echo "$output"
    echo "$output" | grep -E "^node1 .*a100,rack=r1"
    a=$(submit --gpus 1 --nodelist node2 -- sleep 30)
    b=$(submit --gpus 1 -x node1,node2 -- sleep 30)
    c=$(submit --gpus 1 --constraint 'a100&ib' -- sleep 30)
    d=$(submit --gpus 1 -C 'rack=r1|zz' -- sleep 30)
    e=$(submit --gpus 1 --nodes 2 -w node1,node2 -- sleep 30)
    for j in $a $b $c $d $e; do wait_job_state "$j" running 20; done
    [ "$(nodes_of "$a")" = node2 ]
    [ "$(nodes_of "$b")" = node3 ]
    [ "$(nodes_of "$c")" = node3 ]
    [ "$(nodes_of "$d")" = node1 ]
    [ "$(nodes_of "$e")" = node1,node2 ]
    run shoal show "$c"
    echo "$output" | grep -E '^constraint: +a100&ib$'
    # A count of nodes is implied by the list.
    [ "$(job_field "$e" .nodes)" = 2 ]
}

@test "pl-002 an unknown node or a constraint no node has is refused at submission, naming the valid ones" {
    start_labelled
    before=$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs" | jq '.jobs | length')
    run shoal submit --gpus 1 --constraint h200 -- true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"no node satisfies 'h200' (the nodes' labels: a100,rack=r1,ib,rack=r2)"* ]]
    run shoal submit --gpus 1 --nodes 2 --nodelist node1,node9 -- true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"no node named node9 (the nodes: node1,node2,node3)"* ]]
    after=$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs" | jq '.jobs | length')
    [ "$before" = "$after" ]
    # Once a node has it, the same submission runs there.
    agent_start node9 2 H100-80GB --label h200
    wait_for 20 nodes_up_is 4
    j=$(submit --gpus 1 --constraint h200 -- true)
    wait_job_state "$j" completed 30
    [ "$(nodes_of "$j")" = node9 ]
}

@test "pl-003 bad wishes are refused with a clear error and change nothing" {
    start_labelled
    before=$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs" | jq '.jobs | length')
    run shoal submit --gpus 1 --constraint '(a100|ib)' -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"'(' is not supported"* ]]
    run shoal submit --gpus 1 --nodes 1 --nodelist node1,node2 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"nodelist names 2 nodes but the job asks for 1"* ]]
    run shoal submit --gpus 1 --nodelist 'node[1-2]' -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"ranges such as gpu[01-04] are not supported"* ]]
    run shoal submit --exclusive -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"exclusive needs gpus >= 1"* ]]
    after=$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs" | jq '.jobs | length')
    [ "$before" = "$after" ]
}

@test "pl-004 exclusive waits for an idle node and shares it with nobody" {
    shoal_cluster_start 1 4
    a=$(submit --gpus 1 -- sleep 60)
    wait_job_state "$a" running 20
    x=$(submit --gpus 1 --exclusive -- sleep 60)
    wait_for 20 reason_matches "$x" 'exclusive: whole idle nodes'
    shoal cancel "$a" >/dev/null
    wait_job_state "$x" running 30
    run shoal show "$x"
    echo "$output" | grep -E '^exclusive: +yes'
    # Three GPUs are free, but the node is the exclusive job's.
    b=$(submit --gpus 1 -- true)
    wait_for 20 reason_matches "$b" '^(resources|reservation):'
    [ "$(job_state "$b")" = pending ]
    shoal cancel "$x" >/dev/null
    wait_job_state "$b" completed 30
}

@test "pl-005 #SBATCH -w, -x, -C and --exclusive are read with Slurm's meaning" {
    start_labelled
    cat >"$SHOAL_TEST_DIR/job.sh" <<'SCRIPT'
#!/bin/sh
#SBATCH --gres=gpu:1
#SBATCH -C ib
#SBATCH -x node2
#SBATCH --exclusive
echo "on $SHOAL_NODELIST"
SCRIPT
    j=$(submit "$SHOAL_TEST_DIR/job.sh")
    wait_job_state "$j" completed 30
    shoal logs "$j" | grep -qx "on node3"
    [ "$(job_field "$j" .exclusive)" = true ]
}

@test "pl-006 --begin: not eligible before its time, with the reason; then it runs" {
    shoal_cluster_start 1 2
    j=$(submit --gpus 1 --begin now+4s -- true)
    begin=$(job_field "$j" .begin)
    [ "$begin" != null ]
    wait_for 10 reason_matches "$j" "^begin: eligible at $begin\$"
    [ "$(job_state "$j")" = pending ]
    run shoal show "$j"
    echo "$output" | grep -E "^begin: +$begin\$"
    wait_job_state "$j" completed 30
    # It started no earlier than asked.
    b_ms=$(( $(date -d "$begin" +%s) * 1000 ))
    [ "$(job_field "$j" .start_ms)" -ge "$b_ms" ]
    run shoal submit --begin someday -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"--begin: 'someday' is not a start time"* ]]
}

@test "pl-007 -o/--error patterns: the tasks write the files as the job's user; logs says where" {
    shoal_cluster_start 1 2
    wd="$SHOAL_TEST_DIR/wd"
    mkdir -p "$wd"
    j=$(submit --gpus 1 -D "$wd" -n train -o 'out_%j_%x_%N_%%.txt' -- sh -c 'echo to-out; echo to-err >&2')
    wait_job_state "$j" completed 30
    [ "$(cat "$wd/out_${j}_train_node1_%.txt" | sort | tr '\n' ' ')" = "to-err to-out " ]
    run shoal logs "$j"
    [[ "$output" == *"stdout and stderr went to out_${j}_train_node1_%.txt on node1"* ]]
    k=$(submit --gpus 1 -D "$wd" --output "$wd/o_%j" --error "$wd/e_%j" -- sh -c 'echo O; echo E >&2')
    wait_job_state "$k" completed 30
    [ "$(cat "$wd/o_$k")" = O ]
    [ "$(cat "$wd/e_$k")" = E ]
    # An array: %A and %a.
    a=$(submit --gpus 1 -D "$wd" --array 0-1 -o 'arr_%A_%a.txt' -- sh -c 'echo "t$SHOAL_ARRAY_TASK_ID"')
    wait_job_state "${a}_1" completed 30
    wait_job_state "${a}_0" completed 30
    [ "$(cat "$wd/arr_${a}_1.txt")" = t1 ]
    [ "$(cat "$wd/arr_${a}_0.txt")" = t0 ]
    run shoal submit -o 'out_%t.txt' -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"'%t' is not supported"* ]]
}

@test "pl-008 an output path the job's user may not write fails the job; root never follows its link" {
    [ "$(id -u)" = 0 ] || skip "needs root: the agent must switch users"
    u=shoalattk
    test_user "$u" 23456
    [ "$(id -u "$u")" -ge 1000 ] || skip "$u has a system uid"
    shoal_cluster_start 1 2
    chmod 0711 "$SHOAL_TEST_DIR"
    API_TOKEN=$SHOAL_TOKEN api POST /v1/users "{\"name\":\"$u\"}"
    wd="$SHOAL_TEST_DIR/priv"
    mkdir -p "$wd"
    chmod 0777 "$wd"
    # A link the job's user planted toward a root-only file: root writing
    # through it would overwrite the file.
    echo secret >"$wd/target"
    chmod 0600 "$wd/target"
    ln -s "$wd/target" "$wd/link.txt"
    j=$(submit --user "$u" -D /tmp -o "$wd/link.txt" -- echo overwritten)
    wait_job_state "$j" failed 30
    [ "$(cat "$wd/target")" = secret ]
    shoal logs "$j" 2>&1 | grep -q "cannot open the output file $wd/link.txt: Permission denied"
    # Where the user may write, the file is the user's.
    k=$(submit --user "$u" -D /tmp -o "$wd/mine.txt" -- echo hello)
    wait_job_state "$k" completed 30
    [ "$(cat "$wd/mine.txt")" = hello ]
    [ "$(stat -c %U "$wd/mine.txt")" = "$u" ]
}

attempt_is() { [ "$(job_field "$1" .attempt)" = "$2" ]; }
shape_of() { job_field "$1" '[.placement[] | (.gpus | length)] | map(tostring) | join(",")'; }

@test "pl-009 --gpus-total: the engine picks the fewest nodes, the same count on each; the job sees it" {
    shoal_cluster_start 2 4
    env_line='echo "n=$SHOAL_NNODES g=$SHOAL_GPUS_PER_NODE s=$SLURM_NNODES w=$WORLD_SIZE"'
    one=$(submit --gpus-total 3 -- sh -c "$env_line")
    wait_job_state "$one" completed 30
    [ "$(shape_of "$one")" = 3 ]
    [ "$(shoal logs "$one")" = "n=1 g=3 s=1 w=1" ]
    [ "$(job_field "$one" .gpus_total)" = 3 ]
    two=$(submit --gpus-total 6 -- sh -c "$env_line")
    wait_job_state "$two" completed 30
    [ "$(shape_of "$two")" = 3,3 ]
    [ "$(shoal logs "$two" | sort -u)" = "n=2 g=3 s=2 w=2" ]
    run shoal show "$two"
    [[ "$output" == *"6 GPU(s) in all (--gpus-total), 2x3 GPU(s) on 2 node(s)"* ]]
    # Pending, the shape is not picked yet; queue and show say so.
    big=$(submit --gpus-total 8 --hold -- true)
    run shoal show "$big"
    [[ "$output" == *"8 any GPU(s) in all (--gpus-total)"* ]]
    shoal release "$big" >/dev/null
    wait_job_state "$big" completed 30
    [ "$(shape_of "$big")" = 4,4 ]
    # Slurm's --gpus without -N is the same total.
    cat >"$SHOAL_TEST_DIR/job.sh" <<'SCRIPT'
#!/bin/sh
#SBATCH --gpus=4
#SBATCH -t 10
echo "nodes $SLURM_NNODES gpus $SLURM_GPUS_ON_NODE"
SCRIPT
    j=$(submit "$SHOAL_TEST_DIR/job.sh")
    wait_job_state "$j" completed 30
    [ "$(shoal logs "$j")" = "nodes 1 gpus 4" ]
}

@test "pl-010 --gpus-total with a fixed shape, or more than the cluster holds, is a clear error" {
    shoal_cluster_start 2 4
    run shoal submit --gpus-total 4 --gpus 2 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"--gpus-total lets Shoal pick the nodes and the GPUs per node: not with --gpus"* ]]
    run shoal submit --gpus-total 4 --nodes 2 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"not with --nodes"* ]]
    run shoal submit --gpus-total 0 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"--gpus-total"* ]]
    api POST /v1/jobs '{"command":["true"],"gpus_total":4,"nodes":2}'
    [ "$status_code" = 400 ]
    [[ "$body" == *"gpus_total lets the engine pick the nodes"* ]]
    run shoal submit --gpus-total 9 -- true
    [ "$status" -ne 0 ]
    cat >"$SHOAL_TEST_DIR/job.sh" <<'SCRIPT'
#!/bin/sh
#SBATCH --gpus=4 --gpus-per-node=2
true
SCRIPT
    run shoal submit "$SHOAL_TEST_DIR/job.sh"
    [ "$status" -ne 0 ]
    [[ "$output" == *"keep one"* ]]
    [ "$(shoal queue --all --json | jq length)" = 0 ]
}

@test "pl-011 a --gpus-total job keeps its shape across a controller restart, and is requeued into a new one" {
    shoal_cluster_start 2 4
    j=$(submit --gpus-total 6 --requeue -- sleep 300)
    wait_job_state "$j" running 30
    [ "$(shape_of "$j")" = 3,3 ]
    before=$(job_field "$j" .placement)
    shoald_stop
    shoald_start
    wait_for 20 nodes_up_is 2
    wait_job_state "$j" running 20
    [ "$(job_field "$j" .placement)" = "$before" ]
    [ "$(job_field "$j" .gpus_total)" = 6 ]
    # The next attempt gets a shape of its own, with the same rule.
    shoal requeue "$j" >/dev/null
    wait_for 30 attempt_is "$j" 1
    wait_job_state "$j" running 30
    [ "$(shape_of "$j")" = 3,3 ]
    shoal cancel "$j" >/dev/null
}
