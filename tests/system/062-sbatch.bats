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
    # Slurm's batch step: the script ran once, on the first node, which
    # holds two GPUs (072-steps.bats: srun reaches the second).
    [ "$(echo "$out" | grep -c '^gpus=')" = 1 ]
    echo "$out" | grep -q '^gpus=[^,]*,[^,]*$'
    echo "$out" | grep -q "job=$job name=train nnodes=2 nodeid=0 procid=0 localid=0 ntasks=2 nodelist=node"
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

@test "sb-003 --export: the submitter's environment, PATH included, by default; NONE; a list; never SHOAL_TOKEN" {
    shoal_cluster_start 1 1
    mkdir -p "$SHOAL_TEST_DIR/venv/bin"
    printf '#!/bin/sh\necho "venv tool ran"\n' >"$SHOAL_TEST_DIR/venv/bin/venv-tool"
    chmod +x "$SHOAL_TEST_DIR/venv/bin/venv-tool"
    cat >"$SHOAL_TEST_DIR/env.sbatch" <<'EOS'
#!/bin/bash
#SBATCH -J envtest
venv-tool || echo "no venv tool"
echo "foo=${FOO-unset} bar=${BAR-unset} token=${SHOAL_TOKEN-unset} jobid=$SLURM_JOB_ID shoaljob=$SHOAL_JOB_ID"
EOS
    job=$(PATH="$SHOAL_TEST_DIR/venv/bin:$PATH" FOO=1 SLURM_JOB_ID=999 SHOAL_JOB_ID=998 \
        submit "$SHOAL_TEST_DIR/env.sbatch")
    wait_job_state "$job" completed 30
    out=$(shoal logs "$job")
    echo "$out"
    echo "$out" | grep -qx "venv tool ran"
    echo "$out" | grep -qx "foo=1 bar=unset token=unset jobid=$job shoaljob=$job"
    # The submitter's token is in no job record either.
    [ -z "$(shoal show --json "$job" | grep -F "$SHOAL_TOKEN")" ]
    # NONE: nothing of the submitter's, the node's default PATH.
    job=$(PATH="$SHOAL_TEST_DIR/venv/bin:$PATH" FOO=1 \
        submit --export=NONE "$SHOAL_TEST_DIR/env.sbatch")
    wait_job_state "$job" completed 30
    out=$(shoal logs "$job")
    echo "$out" | grep -qx "no venv tool"
    echo "$out" | grep -qx "foo=unset bar=unset token=unset jobid=$job shoaljob=$job"
    # A list in the script: only those; the job's own SLURM_* win.
    sed -i 's/^#SBATCH -J envtest$/#SBATCH -J envtest --export=FOO,BAR=2,SLURM_JOB_ID=5/' \
        "$SHOAL_TEST_DIR/env.sbatch"
    job=$(FOO=3 QUX=4 submit "$SHOAL_TEST_DIR/env.sbatch")
    wait_job_state "$job" completed 30
    out=$(shoal logs "$job")
    echo "$out"
    echo "$out" | grep -qx "foo=3 bar=2 token=unset jobid=$job shoaljob=$job"
    [ "$(job_field "$job" '.env.QUX // "none"')" = none ]
    # Naming the token is refused.
    run shoal submit --export=ALL,SHOAL_TOKEN "$SHOAL_TEST_DIR/env.sbatch"
    [ "$status" -ne 0 ]
    [[ "$output" == *"SHOAL_TOKEN is your credential and never travels with a job"* ]]
    # An environment past the limits is refused, saying what to do.
    BIG="$(head -c 40000 /dev/zero | tr "\0" x)" run "$SHOAL_CLI" submit --export=ALL "$SHOAL_TEST_DIR/env.sbatch"
    [ "$status" -ne 0 ]
    [[ "$output" == *"BIG is 40000 bytes, more than the 32768 a job's variable may hold"* ]]
}

@test "sb-004 --mail-type runs the admin's notification command; refused where there is none" {
    shoal_cluster_start 1 1
    printf '#!/bin/bash\n#SBATCH --mail-type=BEGIN,END --mail-user=ann@example.org\ntrue\n' \
        >"$SHOAL_TEST_DIR/mail.sbatch"
    run shoal submit "$SHOAL_TEST_DIR/mail.sbatch"
    [ "$status" -ne 0 ]
    [[ "$output" == *"this cluster sends no notifications (an admin configures a command with shoald --mail-program)"* ]]
    shoald_stop
    printf '#!/bin/sh\necho "$*" >>"%s/mails"\n' "$SHOAL_TEST_DIR" >"$SHOAL_TEST_DIR/notify"
    chmod +x "$SHOAL_TEST_DIR/notify"
    shoald_start --mail-program "$SHOAL_TEST_DIR/notify"
    j=$(submit "$SHOAL_TEST_DIR/mail.sbatch")
    wait_job_state "$j" completed 30
    [ "$(job_field "$j" .mail_type)" = BEGIN,END ]
    wait_for 10 test "$(wc -l <"$SHOAL_TEST_DIR/mails" 2>/dev/null)" = 2
    cat "$SHOAL_TEST_DIR/mails"
    grep -qx "$j $(id -un) BEGIN ann@example.org running" "$SHOAL_TEST_DIR/mails"
    grep -qx "$j $(id -un) END ann@example.org completed" "$SHOAL_TEST_DIR/mails"
    # FAIL only: a failed job, and nothing at its start.
    k=$(submit --mail-type FAIL -- false)
    wait_job_state "$k" failed 30
    wait_for 10 grep -qx "$k $(id -un) FAIL $(id -un) failed" "$SHOAL_TEST_DIR/mails"
    [ "$(grep -c "^$k " "$SHOAL_TEST_DIR/mails")" = 1 ]
}
