#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: a preempted job can checkpoint. Every job gets SHOAL_PREEMPT_GRACE
# and SHOAL_PREEMPT_DEADLINE (a file path); the file is absent while the job
# runs normally and appears, holding the Unix second of the SIGKILL, before
# the SIGTERM of a preemption. The controller runs with --kill-grace 4s and
# an in-quota job takes back GPUs a borrowing job holds (as in quo-003).
#   pre-001 a job that traps SIGTERM reads its deadline (about now + grace),
#           exits 0 in time and is still recorded as preempted
#   pre-002 a job that ignores SIGTERM is killed at its deadline, not before;
#           it is requeued and its next attempt sees no deadline file
#   pre-003 (root) a job of an unprivileged user under a root agent reads
#           the file in the agent's run folder and can neither write,
#           remove nor replace it

load lib/cluster

GRACE=4

teardown() { shoal_cluster_stop; }

# One node with 4 GPUs; project owner is guaranteed 3 of them, borrower 1.
cluster_with_quotas() {
    shoald_start --kill-grace "${GRACE}s"
    agent_start node1 4
    wait_for 20 nodes_up_is 1
    shoal team create t --guaranteed 4
    shoal project create owner --team t --guaranteed 3 --limit 4
    shoal project create borrower --team t --guaranteed 1 --limit 4
}

# The borrowing job's script. Per attempt N it writes into $OUT: N.env (its
# variables), N.early ("absent" or "present": the deadline file at start),
# N.alive (a line of Unix ms every tenth of a second) and, on SIGTERM, N.term
# ("<ms at SIGTERM> <file contents>" or "... none"). $1: "exit" to exit 0 on
# SIGTERM, "ignore" to go on until killed. Attempts after the first exit 0.
write_job() {
    OUT="$SHOAL_TEST_DIR/out"
    mkdir -p "$OUT"
    cat >"$SHOAL_TEST_DIR/job.sh" <<EOF
#!/bin/bash
o="$OUT/\$SHOAL_ATTEMPT"
echo "\$SHOAL_PREEMPT_GRACE \$SHOAL_PREEMPT_DEADLINE" >"\$o.env"
if [ -e "\$SHOAL_PREEMPT_DEADLINE" ]; then echo present; else echo absent; fi >"\$o.early"
[ "\$SHOAL_ATTEMPT" -gt 0 ] && exit 0
on_term() {
    now=\$(date +%s%3N)
    if [ -f "\$SHOAL_PREEMPT_DEADLINE" ]; then
        echo "\$now \$(cat "\$SHOAL_PREEMPT_DEADLINE")" >"\$o.term"
    else
        echo "\$now none" >"\$o.term"
    fi
    [ "$1" = exit ] && exit 0
}
trap on_term TERM
while :; do date +%s%3N >>"\$o.alive"; sleep 0.1; done
EOF
    chmod +x "$SHOAL_TEST_DIR/job.sh"
}

# Start the borrower (3 GPUs, 2 of them borrowed); sets $job.
borrow() {
    job=$(submit --project borrower --gpus 3 "$@" "$SHOAL_TEST_DIR/job.sh")
    wait_job_state "$job" running
    wait_for 10 test -s "$OUT/0.alive"
}

logs_have() { shoal logs "$1" | grep -q "$2"; }

# The owner's job that takes its GPUs back; sets $own.
reclaim() { own=$(submit --project owner --gpus 3 -- true); }

@test "pre-001 a preempted job reads its SIGKILL deadline, exits in time and stays preempted" {
    cluster_with_quotas
    write_job exit
    borrow
    # Running normally: the variables are set and the file does not exist.
    read -r grace path <"$OUT/0.env"
    [ "$grace" = "$GRACE" ]
    [ -n "$path" ]
    [ "$(cat "$OUT/0.early")" = absent ]
    wait_node_heartbeat node1
    [ ! -e "$path" ]
    [ ! -e "$OUT/0.term" ]
    reclaim
    wait_job_state "$job" preempted 30
    wait_job_state "$own" completed 30
    # The SIGTERM came, and the file was there before it, on one line.
    [ -s "$OUT/0.term" ]
    read -r term_ms deadline <"$OUT/0.term"
    [[ "$deadline" =~ ^[0-9]+$ ]]
    [ "$(wc -l <"$path")" -eq 1 ]
    [ "$(cat "$path")" = "$deadline" ]
    # The deadline is the SIGTERM + grace (a whole second, rounded up).
    left_ms=$((deadline * 1000 - term_ms))
    echo "# deadline $deadline, $left_ms ms after the SIGTERM" >&3
    [ "$left_ms" -gt $(((GRACE - 1) * 1000)) ]
    [ "$left_ms" -le $(((GRACE + 1) * 1000)) ]
    # The agent's file, read-only to everyone else.
    [ "$(stat -c '%u %a' "$path")" = "$(id -u) 644" ]
    # Exiting 0 in time does not make a preempted job completed.
    [ "$(job_state "$job")" = preempted ]
    [ "$(job_field "$job" .requeues)" = 0 ]
    job_field "$job" .reason | grep -q "preempted: project owner"
}

@test "pre-002 a job that ignores SIGTERM is killed at its deadline and requeued" {
    cluster_with_quotas
    write_job ignore
    borrow --requeue
    reclaim
    wait_for 30 test -s "$OUT/0.term"
    read -r term_ms deadline <"$OUT/0.term"
    [[ "$deadline" =~ ^[0-9]+$ ]]
    # Killed: it stops writing, and is requeued for a new attempt.
    wait_for 30 test -s "$OUT/1.early"
    last_ms=$(tail -n 1 "$OUT/0.alive")
    echo "# deadline $deadline, last alive at $last_ms" >&3
    # It lived on past the SIGTERM until the deadline, not past it.
    [ "$last_ms" -ge $((deadline * 1000 - 700)) ]
    [ "$last_ms" -le $((deadline * 1000 + 1500)) ]
    [ "$(job_field "$job" .requeues)" -ge 1 ]
    # The next attempt runs normally: no deadline file in its view.
    [ "$(cat "$OUT/1.early")" = absent ]
    wait_job_state "$job" completed 30
    [ "$(job_state "$own")" = completed ]
}

@test "pre-003 under a root agent a job of another user reads its deadline and cannot change it" {
    [ "$(id -u)" = 0 ] || skip "needs root: the agent must switch users"
    local u=shoalpre
    test_user "$u" 23458
    [ "$(id -u "$u")" -ge 1000 ] || usermod -u 23458 "$u"
    cluster_with_quotas
    chmod 0711 "$SHOAL_TEST_DIR" # the job's user reaches its run folder
    API_TOKEN=$SHOAL_TOKEN api POST /v1/users "{\"name\":\"$u\"}"
    [ "$status_code" = 201 ] || [ "$status_code" = 409 ]
    cat >"$SHOAL_TEST_DIR/user-job.sh" <<'EOF'
#!/bin/bash
f=$SHOAL_PREEMPT_DEADLINE
on_term() {
    echo "deadline=$(cat "$f")"
    echo 1 >"$f" 2>/dev/null && echo WROTE
    rm -f "$f" 2>/dev/null && echo REMOVED
    ln -sf /etc/passwd "$f" 2>/dev/null && echo LINKED
    echo "after=$(cat "$f")"
    exit 0
}
trap on_term TERM
echo started
while :; do sleep 0.1; done
EOF
    chmod 0644 "$SHOAL_TEST_DIR/user-job.sh"
    job=$(submit --user "$u" -D /tmp --project borrower --gpus 3 \
        "$SHOAL_TEST_DIR/user-job.sh")
    wait_job_state "$job" running
    wait_for 10 logs_have "$job" started
    reclaim
    wait_job_state "$job" preempted 30
    wait_for 10 logs_have "$job" after=
    out=$(shoal logs "$job")
    deadline=$(echo "$out" | sed -n 's/^deadline=//p')
    [[ "$deadline" =~ ^[0-9]+$ ]]
    [ "$(echo "$out" | sed -n 's/^after=//p')" = "$deadline" ]
    if echo "$out" | grep -qE 'WROTE|REMOVED|LINKED'; then false; fi
}
