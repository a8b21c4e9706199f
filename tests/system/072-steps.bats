#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: Slurm's job model. A batch script runs once, on the first node of
# its allocation, with the whole allocation's variables; the other nodes
# hold their share. `shoal submit -- CMD` keeps one launch per task.

load lib/cluster

teardown() { shoal_cluster_stop; }

@test "st-001 a 2-node batch script runs its body once, on the first node" {
    shoal_cluster_start 2 2
    cat >"$SHOAL_TEST_DIR/two.sbatch" <<'EOS'
#!/bin/sh
#SBATCH -N 2 --ntasks-per-node=1 --gres=gpu:1
echo "body on $SHOAL_NODE_RANK of $SLURM_NNODES nodes, ntasks=$SLURM_NTASKS" \
     "nodelist=$SLURM_JOB_NODELIST world=$WORLD_SIZE"
EOS
    job=$(submit "$SHOAL_TEST_DIR/two.sbatch")
    wait_job_state "$job" completed 30
    wait_for 20 job_released "$job"
    out=$(shoal logs "$job")
    echo "$out"
    [ "$(echo "$out" | grep -c '^body on')" = 1 ]
    echo "$out" | grep -q '^body on 0 of 2 nodes, ntasks=2 nodelist=node[12],node[12] world=1$'
    [ "$(job_field "$job" .launch)" = batch ]
    # Both nodes held their share while it ran, and gave it back.
    [ "$(job_field "$job" '.placement | length')" = 2 ]
}

@test "st-002 a command keeps one launch per task; a failing batch script fails its job" {
    shoal_cluster_start 2 2
    job=$(submit --nodes 2 --tasks-per-node 2 -- sh -c 'echo "task $RANK"')
    wait_job_state "$job" completed 30
    [ "$(shoal logs "$job" | grep -c '^task ')" = 4 ]
    [ "$(job_field "$job" .launch)" = tasks ]
    printf '#!/bin/sh\n#SBATCH -N 2\nexit 3\n' >"$SHOAL_TEST_DIR/bad.sbatch"
    bad=$(submit "$SHOAL_TEST_DIR/bad.sbatch")
    wait_job_state "$bad" failed 30
    [ "$(job_field "$bad" .exit_code)" = 3 ]
}

@test "st-003 srun inside a 2-node batch script starts a task on each node" {
    shoal_cluster_start 2 2
    cat >"$SHOAL_TEST_DIR/srun.sbatch" <<'EOS'
#!/bin/sh
#SBATCH -N 2 --ntasks-per-node=1 --gres=gpu:1
echo "body once"
srun sh -c 'echo "proc $SLURM_PROCID of $SLURM_NTASKS on node $SLURM_NODEID of $SLURM_STEP_NUM_NODES step $SLURM_STEP_ID rank $RANK/$WORLD_SIZE"'
echo "srun said $?"
EOS
    job=$(submit "$SHOAL_TEST_DIR/srun.sbatch")
    wait_job_state "$job" completed 30
    wait_for 20 job_released "$job"
    out=$(shoal logs "$job")
    echo "$out"
    [ "$(echo "$out" | grep -c '^body once$')" = 1 ]
    echo "$out" | grep -qx 'proc 0 of 2 on node 0 of 2 step 0 rank 0/2'
    echo "$out" | grep -qx 'proc 1 of 2 on node 1 of 2 step 0 rank 1/2'
    [ "$(echo "$out" | grep -c '^proc ')" = 2 ]
    echo "$out" | grep -qx 'srun said 0'
}

@test "st-004 srun -l labels lines; its exit is the highest task's; -n spreads tasks" {
    shoal_cluster_start 2 2
    cat >"$SHOAL_TEST_DIR/lab.sbatch" <<'EOS'
#!/bin/sh
#SBATCH -N 2 --ntasks-per-node=2
srun -l sh -c 'echo "hi from $SLURM_PROCID"'
srun -n 3 sh -c 'exit $((SLURM_PROCID + 3))'
echo "exit $?"
srun -N 1 -n 1 true
echo "one $?"
EOS
    job=$(submit "$SHOAL_TEST_DIR/lab.sbatch")
    wait_job_state "$job" completed 40
    wait_for 20 job_released "$job"
    out=$(shoal logs "$job")
    echo "$out"
    for r in 0 1 2 3; do
        echo "$out" | grep -qx "$r: hi from $r"
    done
    echo "$out" | grep -qx 'exit 5'
    echo "$out" | grep -qx 'one 0'
}

@test "st-005 scontrol show hostnames; shoal show lists steps; a process outside the job cannot start one" {
    shoal_cluster_start 2 1
    cat >"$SHOAL_TEST_DIR/host.sbatch" <<EOS
#!/bin/sh
#SBATCH -N 2
scontrol show hostnames
scontrol show hostnames 'gpu[08-10],login1'
scontrol show jobs; echo "scontrol other: \$?"
srun true
srun sh -c 'exit 3'
env > "$SHOAL_TEST_DIR/job.env"
sleep 300
EOS
    job=$(submit "$SHOAL_TEST_DIR/host.sbatch")
    wait_job_state "$job" running 30
    wait_for 20 test -s "$SHOAL_TEST_DIR/job.env"
    # The job's own variables, copied into a shell of the same user that
    # is not in the job: refused.
    run env -i $(cat "$SHOAL_TEST_DIR/job.env" | grep -E '^(SHOAL_|SLURM_|PATH=)' | tr '\n' ' ') srun true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"not inside a job on this node"* ]]
    # The job's steps, as shoal show lists them.
    run shoal show "$job"
    echo "$output"
    [[ "$output" == *"steps:"*"0: completed, exit 0, 2 tasks on node1,node2: true"* ]]
    [[ "$output" == *"1: failed, exit 3, 2 tasks on node1,node2: sh -c exit 3"* ]]
    shoal cancel "$job"
    wait_job_state "$job" cancelled 30
    out=$(shoal logs "$job")
    echo "$out"
    [ "$(echo "$out" | sed -n 1,2p | sort | tr '\n' ' ')" = "node1 node2 " ]
    echo "$out" | sed -n 3,6p | tr '\n' ' ' | grep -qx 'gpu08 gpu09 gpu10 login1 '
    echo "$out" | grep -q "scontrol: error: inside a Shoal job, scontrol answers only 'scontrol show hostnames"
    echo "$out" | grep -qx 'scontrol other: 1'
}

@test "st-006 the multi-node torchrun pattern works unchanged (a stub torchrun)" {
    shoal_cluster_start 2 2
    mkdir -p "$SHOAL_TEST_DIR/bin"
    # The stub checks what a real torchrun reads, and says it.
    cat >"$SHOAL_TEST_DIR/bin/torchrun" <<'EOS'
#!/bin/sh
echo "torchrun $* node=$SLURM_NODEID procid=$SLURM_PROCID gpus=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)"
EOS
    chmod +x "$SHOAL_TEST_DIR/bin/torchrun"
    cat >"$SHOAL_TEST_DIR/tr.sbatch" <<EOS
#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=1 --gpus-per-node=2
export PATH=$SHOAL_TEST_DIR/bin:\$PATH
head=\$(scontrol show hostnames | head -1)
srun torchrun --nnodes \$SLURM_NNODES --nproc-per-node 2 --rdzv-endpoint \$head:29500 train.py
EOS
    job=$(submit "$SHOAL_TEST_DIR/tr.sbatch")
    wait_job_state "$job" completed 30
    wait_for 20 job_released "$job"
    out=$(shoal logs "$job")
    echo "$out"
    echo "$out" | grep -qx 'torchrun --nnodes 2 --nproc-per-node 2 --rdzv-endpoint node1:29500 train.py node=0 procid=0 gpus=2'
    echo "$out" | grep -qx 'torchrun --nnodes 2 --nproc-per-node 2 --rdzv-endpoint node1:29500 train.py node=1 procid=1 gpus=2'
}

@test "st-007 a script finds SLURM_SUBMIT_DIR, its GPUs and memory, and SHOAL_GPU_UUIDS" {
    shoal_cluster_start 1 2
    mkdir -p "$SHOAL_TEST_DIR/sub"
    cat >"$SHOAL_TEST_DIR/sub/env.sbatch" <<'EOS'
#!/bin/sh
#SBATCH --gres=gpu:2 --mem=1G -c 2 -D /tmp
cd "$SLURM_SUBMIT_DIR" && echo "submit $(pwd)"
echo "gpus $SLURM_GPUS_PER_NODE mem $SLURM_MEM_PER_NODE cpt $SLURM_CPUS_PER_TASK node $SLURMD_NODENAME"
echo "uuids $SHOAL_GPU_UUIDS cuda $CUDA_VISIBLE_DEVICES"
EOS
    job=$(cd "$SHOAL_TEST_DIR/sub" && submit env.sbatch)
    wait_job_state "$job" completed 30
    out=$(shoal logs "$job")
    echo "$out"
    echo "$out" | grep -qx "submit $SHOAL_TEST_DIR/sub"
    echo "$out" | grep -qx 'gpus 2 mem 1024 cpt 2 node node1'
    echo "$out" | grep -qx 'uuids GPU-[^,]*,GPU-[^,]* cuda GPU-[^,]*,GPU-[^,]*'
}

@test "st-008 srun refuses what it cannot do, saying why" {
    shoal_cluster_start 2 1
    # A command job runs its command as its tasks: no steps there.
    cmd=$(submit -- srun true)
    wait_job_state "$cmd" failed 30
    shoal logs "$cmd" | grep -q 'srun: error: srun starts steps inside a batch job (shoal submit SCRIPT)'
    cat >"$SHOAL_TEST_DIR/bad.sbatch" <<'EOS'
#!/bin/sh
#SBATCH -N 2
srun --mpi=pmix true; echo "mpi $?"
srun -N 3 true; echo "three $?"
srun --gpus-per-task=2 true; echo "gpt $?"
srun; echo "none $?"
EOS
    job=$(submit "$SHOAL_TEST_DIR/bad.sbatch")
    wait_job_state "$job" completed 30
    out=$(shoal logs "$job")
    echo "$out"
    echo "$out" | grep -q "srun: error: Shoal's srun does not take '--mpi=pmix'"
    echo "$out" | grep -qx 'mpi 1'
    echo "$out" | grep -q 'srun: error: 3 nodes asked, the job has 2'
    echo "$out" | grep -q 'srun: error: 1 tasks on a node with --gpus-per-task=2 need 2 GPUs; the job has 0 per node'
    echo "$out" | grep -qx 'gpt 1'
    echo "$out" | grep -q 'srun: error: no command given'
}

@test "st-009 srun -K: a task failing on one node ends the step's tasks on the others" {
    shoal_cluster_start 2 1
    cat >"$SHOAL_TEST_DIR/k.sbatch" <<'EOS'
#!/bin/sh
#SBATCH -N 2
# A task on the second node fails: the first node's is killed...
srun -K sh -c '[ "$SLURM_PROCID" = 1 ] && exit 3; sleep 60; echo survived'
echo "remote failed: $?"
# ...and the other way round.
srun --kill-on-bad-exit sh -c '[ "$SLURM_PROCID" = 0 ] && exit 4; sleep 60; echo survived'
echo "local failed: $?"
# Without -K the others run on.
srun sh -c '[ "$SLURM_PROCID" = 1 ] && exit 5; echo "ran on"'
echo "no -K: $?"
EOS
    job=$(submit "$SHOAL_TEST_DIR/k.sbatch")
    wait_job_state "$job" completed 50
    wait_for 20 job_released "$job"
    out=$(shoal logs "$job")
    echo "$out"
    ! echo "$out" | grep -q survived
    echo "$out" | grep -Eqx 'remote failed: (3|137|143)'
    echo "$out" | grep -Eqx 'local failed: (4|137|143)'
    echo "$out" | grep -qx 'ran on'
    echo "$out" | grep -qx 'no -K: 5'
}
