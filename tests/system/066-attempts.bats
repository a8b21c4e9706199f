#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: shoal logs -f ends with the job's status, as a script waiting on
# a job needs: 0 when it completed, non-zero with how it ended otherwise;
# and each attempt of a requeued job keeps its own output (logs --attempt).

load lib/cluster

teardown() { shoal_cluster_stop; }

@test "att-001 logs -f exits 0 for a completed job, non-zero with a message otherwise" {
    shoal_cluster_start 1 2
    ok=$(submit --gpus 1 -- sh -c 'sleep 1; echo done')
    run shoal logs -f "$ok"
    [ "$status" -eq 0 ]
    [[ "$output" == *done* ]]
    bad=$(submit --gpus 1 -- sh -c 'sleep 1; echo failing; exit 3')
    run shoal logs -f "$bad"
    [ "$status" -ne 0 ]
    [[ "$output" == *failing* ]]
    [[ "$output" == *"shoal: job $bad failed (exit 3)"* ]]
    long=$(submit --gpus 1 -- sleep 300)
    wait_job_state "$long" running 20
    "$SHOAL_CLI" logs -f "$long" >"$SHOAL_TEST_DIR/f.out" 2>&1 &
    follower=$!
    record_pid "$follower"
    shoal cancel "$long" >/dev/null
    rc=0
    wait "$follower" || rc=$?
    [ "$rc" -ne 0 ]
    grep -q "shoal: job $long cancelled" "$SHOAL_TEST_DIR/f.out"
    # Without -f, logs of a failed job still exit 0 (it printed them).
    run shoal logs "$bad"
    [ "$status" -eq 0 ]
}

job_attempt_is() { [ "$(job_field "$1" .attempt)" = "$2" ]; }
logs_have() { shoal logs "${@:3}" "$1" | grep -q "$2"; }

@test "att-002 each attempt keeps its own output, also after the job ended" {
    shoal_cluster_start 1 1
    j=$(submit --gpus 1 -- bash -c 'echo "out of attempt $SHOAL_ATTEMPT"; sleep 300')
    wait_for 20 logs_have "$j" "out of attempt 0"
    shoal requeue "$j" >/dev/null
    wait_for 20 job_attempt_is "$j" 1
    wait_for 20 logs_have "$j" "out of attempt 1"
    # Default: the latest attempt, and only its output.
    run shoal logs "$j"
    [ "$status" -eq 0 ]
    [[ "$output" == *"out of attempt 1"* ]]
    [[ "$output" != *"out of attempt 0"* ]]
    shoal cancel "$j" >/dev/null
    wait_job_state "$j" cancelled 20
    run shoal logs --attempt 0 "$j"
    [ "$status" -eq 0 ]
    [ "$output" = "out of attempt 0" ]
    run shoal logs --attempt 1 --stream out "$j"
    [ "$status" -eq 0 ]
    [ "$output" = "out of attempt 1" ]
    run shoal show "$j"
    [[ "$output" == *"attempts:"*"2, 0 to 1, each with its own output"* ]]
    # The API says which attempt it read and how many there were.
    api GET "/v1/jobs/$j/logs?attempt=0"
    [ "$status_code" = 200 ]
    [ "$(echo "$body" | jq -r '.attempt, .attempts, .eof' | tr '\n' ' ')" = "0 2 true " ]
    # An attempt the job never had is a clear error.
    run shoal logs --attempt 2 "$j"
    [ "$status" -ne 0 ]
    [[ "$output" == *"job $j has no attempt 2: its attempts are 0 to 1"* ]]
    run shoal logs --attempt x "$j"
    [ "$status" -ne 0 ]
    [[ "$output" == *"--attempt"* ]]
}

@test "att-003 logs -f follows a requeued job into its next attempt" {
    shoal_cluster_start 1 1
    j=$(submit --gpus 1 -- bash -c 'echo "run $SHOAL_ATTEMPT"; [ "$SHOAL_ATTEMPT" = 1 ] && exit 0; sleep 300')
    wait_for 20 logs_have "$j" "run 0"
    "$SHOAL_CLI" logs -f "$j" >"$SHOAL_TEST_DIR/f.out" 2>"$SHOAL_TEST_DIR/f.err" &
    follower=$!
    record_pid "$follower"
    # Requeued once the follower has attempt 0's output: before that, it
    # would start on attempt 1 (as it should) and the test would not see
    # it cross from one attempt into the next.
    wait_for 20 grep -q "run 0" "$SHOAL_TEST_DIR/f.out"
    shoal requeue "$j" >/dev/null
    rc=0
    wait "$follower" || rc=$?
    [ "$rc" -eq 0 ]
    [ "$(cat "$SHOAL_TEST_DIR/f.out")" = "$(printf 'run 0\nrun 1')" ]
    grep -q "job $j was requeued: attempt 1" "$SHOAL_TEST_DIR/f.err"
}

@test "att-004 a job with --output appends every attempt there; --attempt is refused" {
    shoal_cluster_start 1 1
    wd="$SHOAL_TEST_DIR/wd"
    mkdir -p "$wd"
    j=$(submit --gpus 1 -D "$wd" -o 'att_%j.txt' -- bash -c 'echo "file attempt $SHOAL_ATTEMPT"; sleep 300')
    f="$wd/att_$j.txt"
    wait_for 20 grep -q "file attempt 0" "$f"
    shoal requeue "$j" >/dev/null
    wait_for 20 grep -q "file attempt 1" "$f"
    grep -q "file attempt 0" "$f"
    run shoal logs --attempt 0 "$j"
    [ "$status" -ne 0 ]
    [[ "$output" == *"wrote its output to its --output file, where every attempt appends"* ]]
    # Without --attempt, logs says where the output went.
    run shoal logs "$j"
    [ "$status" -eq 0 ]
    [[ "$output" == *"att_$j.txt"* ]]
    shoal cancel "$j" >/dev/null
}

# The attempts of job J as "N STATE START END NODES" lines, from the API.
attempts_of() {
    api GET "/v1/jobs/$1"
    echo "$body" | jq -r '.attempts[] | "\(.attempt) \(.state) \(.start_ms) \(.end_ms) \(.nodes | join(","))"'
}

# Each attempt started after the one before it ended, and ended after it
# started: the lines of attempts_of, with the last one's end checked too.
attempt_times_ordered() {
    local prev_end=0 n state start end nodes
    while read -r n state start end nodes; do
        [ "$start" -gt 0 ] || return 1
        [ "$start" -ge "$prev_end" ] || return 1
        [ "$end" -ge "$start" ] || return 1
        prev_end=$end
    done
}

@test "att-005 every attempt keeps its own times and nodes, in show and history, across a restart" {
    shoal_cluster_start 1 1
    j=$(submit --gpus 1 -- bash -c 'echo "run $SHOAL_ATTEMPT"; [ "$SHOAL_ATTEMPT" = 2 ] && exit 0; sleep 300')
    wait_for 20 logs_have "$j" "run 0"
    shoal requeue "$j" >/dev/null
    wait_for 20 logs_have "$j" "run 1"
    # While the second attempt runs: the first has ended, the second has
    # started and not ended.
    run attempts_of "$j"
    [ "${#lines[@]}" -eq 2 ]
    [[ "${lines[0]}" == "0 preempted "*" node1" ]]
    [[ "${lines[1]}" == "1 running "*" 0 node1" ]]
    shoal requeue "$j" >/dev/null
    wait_job_state "$j" completed 30
    # The controller restarts: the attempts come back from the store.
    shoald_stop
    shoald_start
    run attempts_of "$j"
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq 3 ]
    [[ "${lines[0]}" == "0 preempted "*" node1" ]]
    [[ "${lines[1]}" == "1 preempted "*" node1" ]]
    [[ "${lines[2]}" == "2 completed "*" node1" ]]
    attempts_of "$j" | attempt_times_ordered
    api GET "/v1/jobs/$j"
    # The last attempt's times are the job's.
    [ "$(echo "$body" | jq '.attempts[2].start_ms == .start_ms and .attempts[2].end_ms == .end_ms')" = true ]
    [ "$(echo "$body" | jq -r '.attempts[0].reason')" = "requeued by $(id -un)" ]
    # shoal show lists each attempt with its own times.
    run shoal show "$j"
    [ "$status" -eq 0 ]
    [[ "$output" == *"3, 0 to 2, each with its own output"* ]]
    for n in 0 1; do
        start=$(echo "$body" | jq -r ".attempts[$n].start_time")
        end=$(echo "$body" | jq -r ".attempts[$n].end_time")
        echo "$output" | grep -q "attempt $n: preempted, $start to $end on node1"
    done
    echo "$output" | grep -q "attempt 2: completed, .* on node1, exit 0"
    # shoal history --attempts: a row per attempt, like sacct --duplicates.
    run shoal history --attempts --format id,attempt,state,nodelist
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c "^ *$j ")" -eq 3 ]
    echo "$output" | grep -Eq "^ *$j +0 +preempted +node1"
    echo "$output" | grep -Eq "^ *$j +1 +preempted +node1"
    echo "$output" | grep -Eq "^ *$j +2 +completed +node1"
    # Without it, one row per job (its last attempt).
    run shoal history --format id,attempt,state
    [ "$(echo "$output" | grep -c "^ *$j ")" -eq 1 ]
    echo "$output" | grep -Eq "^ *$j +2 +completed"
    # The history API carries the same attempts, in order.
    api GET "/v1/history"
    [ "$(echo "$body" | jq -r ".jobs[] | select(.id == $j) | [.attempts[].attempt] | join(\",\")")" = "0,1,2" ]
    echo "$body" | jq -r ".jobs[] | select(.id == $j) | .attempts[] | \"\(.attempt) \(.state) \(.start_ms) \(.end_ms) x\"" | attempt_times_ordered
    run shoal history --attempts --trace
    [ "$status" -ne 0 ]
}
