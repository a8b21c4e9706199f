#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: real public GPU Slurm batch scripts (tests/data/slurm-scripts,
# their origins in SOURCES there), each submitted unchanged with `shoal
# submit SCRIPT` to a 2-node x 8-GPU cluster once the admin created the
# partitions, QOS and projects they name (and a notification command for
# --mail-type). Each is accepted, or refused
# with a reason a Slurm user would accept; the test holds the count and
# every refusal's reason, so a change in either is seen.

load lib/cluster

teardown() { shoal_cluster_stop; }

CORPUS="$BATS_TEST_DIRNAME/../data/slurm-scripts"

# What the scripts call, so that the accepted ones can run: stubs that
# say they ran.
make_stubs() {
    local bin="$SHOAL_TEST_DIR/stubs"
    mkdir -p "$bin"
    for c in python python3 torchrun module conda accelerate nvidia-smi \
        apptainer_wrapper crc-job-stats.py; do
        printf '#!/bin/sh\necho "stub %s $*"\n' "$c" >"$bin/$c"
        chmod +x "$bin/$c"
    done
    echo "$bin"
}

# The cluster as an admin sets it up for these scripts.
admin_setup() {
    shoal team create hpc --guaranteed 16 >/dev/null
    for p in project_2001659 m3562_g CAINES-SL2-GPU; do
        shoal project create "$p" --team hpc --guaranteed 1 >/dev/null
    done
    for p in gputest new rtx2080 defq A800 SCSEGPU_M2 a100 l40s dev_gpu_4 \
        gpu-h100-killable gpu ampere sched_mit_sloan_gpu_r8; do
        shoal partition create "$p" --nodes all >/dev/null
    done
    shoal qos create q_dmsai --priority normal >/dev/null
    shoal qos create debug_preempt --priority low >/dev/null
}

@test "corpus-001 public Slurm scripts: accepted unchanged, or refused with a Slurm user's reason" {
    # The admin's notification command for --mail-type.
    printf '#!/bin/sh\necho "$*" >>"%s/mails"\n' "$SHOAL_TEST_DIR" >"$SHOAL_TEST_DIR/notify"
    chmod +x "$SHOAL_TEST_DIR/notify"
    shoald_start --mail-program "$SHOAL_TEST_DIR/notify"
    # GPU servers as sites have them: 8 GPUs, 128 CPUs and 1 TiB offered
    # (this machine's own figures would refuse most scripts' --mem).
    agent_start node1 8 H100-80GB --label h100 --label gpu --cpus 128 --mem 1T
    agent_start node2 8 H100-80GB --label h100 --label gpu --cpus 128 --mem 1T
    wait_for 20 nodes_up_is 2
    admin_setup
    PATH="$(make_stubs):$PATH"
    work="$SHOAL_TEST_DIR/work"
    mkdir -p "$work"
    cd "$work"
    # Each script: "accepted", or what the refusal must say.
    declare -A want=(
        [4960a-crosscbr-submit-beluga-dblp.sh]=accepted
        [babylm-launch-slurm.wilkes3]="exclusive needs gpus >= 1 (jobs without GPUs share nodes)"
        [cifailing-job-within.sh]=accepted
        [cltransformers-l2-sweep.sh]=accepted
        [csc-run-accelerate-gpu8.sh]="unknown GPU model 'v100'"
        [csc-run-ddp-gpu4-smi-logging.sh]="unknown GPU model 'v100'"
        [csc-run-ddp-gpu4.sh]="unknown GPU model 'v100'"
        [csc-run-ddp-gpu8.sh]="unknown GPU model 'v100'"
        [csc-run-deepspeed-gpu8.sh]="unknown GPU model 'v100'"
        [csc-run-lightning-gpu4.sh]="unknown GPU model 'v100'"
        [csc-run-lightning-gpu8.sh]="unknown GPU model 'v100'"
        [ctnvae-signal-interrupt.sh]="#SBATCH -L: Shoal has no licenses"
        [cyclegan-vc2-run.sh]=accepted
        [gagt-run.sh]="unknown GPU model 'a800'"
        [gradw-irm-run.sh]="--nodelist: no node named ttnusa11 (the nodes: node1,node2)"
        [mace-sevennet-finetune-run.sh]=accepted
        [ndt3-launch-l40s-med.sh]="#SBATCH --cluster: Shoal runs one cluster"
        [quarkmeson-runbw.sh]="#SBATCH --signal: Shoal sends no signal before the time limit"
        [ribonanzanet2-job.sh]=accepted
        [ubinet-submit-job.sh]="#SBATCH --signal: Shoal sends no signal before the time limit"
        [urs-test.sh]=accepted
        [vitclouds-jim-bash.bash]=accepted
    )
    accepted=0
    total=0
    for f in "$CORPUS"/*; do
        name=$(basename "$f")
        [ "$name" = SOURCES ] && continue
        total=$((total + 1))
        [ -n "${want[$name]:-}" ] || { echo "$name: no expectation"; false; }
        if out=$("$SHOAL_CLI" submit "$f" 2>&1); then
            echo "$name: accepted as job $out"
            accepted=$((accepted + 1))
            [ "${want[$name]}" = accepted ] || { echo "  expected: ${want[$name]}"; false; }
            [ "$(job_field "$out" .state)" != null ]
        else
            echo "$name: refused: $out"
            [ "${want[$name]}" != accepted ]
            [[ "$out" == *"${want[$name]}"* ]]
        fi
    done
    echo "accepted $accepted of $total"
    [ "$total" -ge 20 ]
    [ "$accepted" = 8 ]
    # The partitions and QOS the accepted ones named are on their jobs.
    [ "$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs" |
        jq -r '[.jobs[].partition | select(. != null)] | unique | join(",")')" = "SCSEGPU_M2,a100,defq,gpu,rtx2080,sched_mit_sloan_gpu_r8" ]
}
