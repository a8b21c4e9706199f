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
