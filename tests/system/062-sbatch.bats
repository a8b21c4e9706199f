#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: a Slurm batch script runs unchanged: its #SBATCH lines mean what
# Slurm says (GPUs, nodes, time, name, tasks), the job sees the SLURM_*
# variables scripts read, and an option Shoal does not have is refused
# naming it, never silently ignored.

load lib/cluster

teardown() { shoal_cluster_stop; }

@test "sb-001 an unchanged Slurm script gets its GPUs, limits and SLURM_* variables" {
    shoal_cluster_start 2 4
    cat >"$SHOAL_TEST_DIR/train.sbatch" <<'EOS'
#!/bin/bash
#SBATCH --job-name=train
#SBATCH --gres=gpu:2
#SBATCH -N 2 --ntasks-per-node=1
#SBATCH --time=0-00:10:00
#SBATCH --mem=1G
echo "gpus=$CUDA_VISIBLE_DEVICES"
echo "job=$SLURM_JOB_ID name=$SLURM_JOB_NAME nnodes=$SLURM_NNODES" \
     "nodeid=$SLURM_NODEID procid=$SLURM_PROCID localid=$SLURM_LOCALID" \
     "ntasks=$SLURM_NTASKS nodelist=$SLURM_JOB_NODELIST"
EOS
    job=$(submit "$SHOAL_TEST_DIR/train.sbatch")
    wait_job_state "$job" completed 30
    [ "$(job_field "$job" .gpus)" = 2 ]
    [ "$(job_field "$job" .nodes)" = 2 ]
    [ "$(job_field "$job" .time_limit)" = 600 ]
    [ "$(job_field "$job" .name)" = train ]
    out=$(shoal logs "$job")
    echo "$out"
    # Two GPUs on each node.
    [ "$(echo "$out" | grep -c '^gpus=[^,]*,[^,]*$')" = 2 ]
    echo "$out" | grep -q "job=$job name=train nnodes=2 nodeid=0 procid=0 localid=0 ntasks=2 nodelist=node"
    echo "$out" | grep -q "nodeid=1 procid=1 localid=0"
}

@test "sb-002 every bad directive is reported in one answer, each with its line" {
    shoal_cluster_start 1 1
    cat >"$SHOAL_TEST_DIR/bad.sbatch" <<'EOS'
#!/bin/bash
#SBATCH --gres=gpu:1 --frobnicate=3
#SBATCH --time=10
#SBATCH -N x
#SHOAL --nope
#SBATCH --gres=mps:1
echo hi
EOS
    run shoal submit "$SHOAL_TEST_DIR/bad.sbatch"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"bad.sbatch has 4 bad directives:"* ]]
    [[ "$output" == *"bad.sbatch:2: #SBATCH --frobnicate: Shoal has no such option"* ]]
    [[ "$output" == *"bad.sbatch:4: #SBATCH -N: 'x' is not a count"* ]]
    [[ "$output" == *"bad.sbatch:5: unknown option --nope"* ]]
    [[ "$output" == *"bad.sbatch:6: #SBATCH --gres: 'mps:1': Shoal schedules GPUs only"* ]]
    printf '#!/bin/bash\n#SBATCH --frobnicate=3\necho hi\n' \
        >"$SHOAL_TEST_DIR/f.sbatch"
    run shoal submit "$SHOAL_TEST_DIR/f.sbatch"
    [ "$status" -ne 0 ]
    [[ "$output" == *"f.sbatch:2: #SBATCH --frobnicate: Shoal has no such option"* ]]
    # Nothing was submitted.
    [ "$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs" | jq '.jobs | length')" = 0 ]
}
