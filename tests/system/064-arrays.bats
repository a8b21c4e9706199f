#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: job arrays as Slurm users know them: --array 0-5%2 makes one job
# per task, each with SHOAL_ARRAY_TASK_ID / SLURM_ARRAY_TASK_ID; at most
# %M run or queue at once; shoal queue shows pending tasks as one line;
# tasks are named ID_TASK; cancel ID stops the whole array.

load lib/cluster

teardown() { shoal_cluster_stop; }

running_tasks() {
    curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" \
        "$SHOAL_URL/v1/jobs?state=running" |
        jq "[.jobs[] | select(.array_id == $1)] | length"
}

@test "arr-001 an array runs each task with its index, at most %M at once" {
    shoal_cluster_start 1 4
    a=$(submit --gpus 1 --array 0-5%2 -- sh -c 'echo "task $SHOAL_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID"; sleep 4')
    wait_for 20 running_tasks_is "$a" 2
    run shoal queue
    echo "$output"
    echo "$output" | grep -q "^${a}_\[2-5\] .*array: waits for a place: at most 2 tasks of array $a"
    # Never more than 2 at once although 4 GPUs are free.
    for _ in 1 2 3 4 5 6; do
        [ "$(running_tasks "$a")" -le 2 ]
        sleep 0.5
    done
    prev=0
    for t in 0 1 2 3 4 5; do
        wait_job_state "${a}_$t" completed 60
        shoal logs "${a}_$t" | grep -qx "task $t of $a"
        # Places are given by index.
        s=$(job_field "${a}_$t" .start_ms)
        [ "$s" -ge "$prev" ]
        prev=$s
    done
}

running_tasks_is() { [ "$(running_tasks "$1")" = "$2" ]; }

@test "arr-002 ID_TASK names one task; cancel ID stops them all; bad arrays are refused" {
    shoal_cluster_start 1 2
    a=$(submit --gpus 1 --array 1,3,5-7 -- sleep 60)
    [ "$(job_field "${a}_5" .array_task)" = 5 ]
    [ "$(job_field "${a}_1" .id)" = "$a" ]
    run shoal show "${a}_4"
    [ "$status" -ne 0 ]
    [[ "$output" == *"job ${a}_4 not found"* ]]
    wait_for 20 running_tasks_is "$a" 2
    shoal cancel "${a}_7" >/dev/null
    [ "$(job_state "${a}_7")" = cancelled ]
    [ "$(job_state "${a}_6")" = pending ]
    shoal cancel "$a" >/dev/null
    for t in 1 3 5 6; do
        wait_job_state "${a}_$t" cancelled 20
    done
    run shoal submit --array 5-3 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"array: '5-3' is not N, A-B or A-B:STEP"* ]]
    run shoal submit --array 0-10000 -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"more than 10000 tasks"* ]]
}

@test "arr-003 an unchanged Slurm array script writes one result per task" {
    shoal_cluster_start 1 4
    cat >"$SHOAL_TEST_DIR/sweep.sbatch" <<EOS
#!/bin/bash
#SBATCH --gres=gpu:2
#SBATCH --array=0-3
echo "\$SLURM_ARRAY_TASK_ID \$CUDA_VISIBLE_DEVICES" >"$SHOAL_TEST_DIR/out_\$SLURM_ARRAY_TASK_ID.txt"
EOS
    chmod 0644 "$SHOAL_TEST_DIR/sweep.sbatch"
    a=$(submit "$SHOAL_TEST_DIR/sweep.sbatch")
    for t in 0 1 2 3; do
        wait_job_state "${a}_$t" completed 60
        [ "$(job_field "${a}_$t" .gpus)" = 2 ]
        grep -q "^$t GPU-[^,]*,GPU-" "$SHOAL_TEST_DIR/out_$t.txt"
    done
}

@test "arr-004 afterok on an array waits for every task; ID_N for one task" {
    shoal_cluster_start 1 4
    gate="$SHOAL_TEST_DIR/gate"
    a=$(submit --array 0-1 --gpus 1 -- bash -c \
        "[ \"\$SHOAL_ARRAY_TASK_ID\" = 0 ] || while [ ! -e '$gate' ]; do sleep 0.2; done")
    all=$(submit --dependency "afterok:$a" -- true)
    one=$(submit --dependency "afterok:${a}_0" -- true)
    # Task 0 ends; its own dependant runs; the array's still waits for task 1.
    wait_job_state "$one" completed 30
    [ "$(job_field "$((a + 1))" .state)" = running ]
    wait_job_reason "$all" "dependency: waiting for array $a (1 of 2 tasks to end"
    [ "$(job_state "$all")" = pending ]
    touch "$gate"
    wait_job_state "$all" completed 30
    # A task that fails makes afterok on the array impossible.
    b=$(submit --array 0-1 -- bash -c '[ "$SHOAL_ARRAY_TASK_ID" = 0 ]')
    never=$(submit --dependency "afterok:$b" -- true)
    notok=$(submit --dependency "afternotok:$b" -- true)
    wait_job_state "$notok" completed 30
    wait_job_reason "$never" "a task of array $b) ended failed, so afterok:$b can never be met"
    # A task that does not exist is refused.
    run shoal submit --dependency "afterok:${b}_7" -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"array $b has no task 7"* ]]
}
