#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: nodes joining and running jobs: the join token, the environment
# contract inside a job, output, exit codes, cancel and time limits stopping
# whole process trees, gangs all-or-nothing, GPUs handed on at once, a real
# distributed rendezvous across two agents, drain and resume, and how a
# shim gets its launch description (fork server request or launch.json).

load lib/cluster

teardown() { shoal_cluster_stop; }

# The job's pending reason matches an extended regex (what the scheduler
# decided about it, e.g. "^resources:"): what a test waits for instead of
# sleeping through a scheduling pass.
reason_matches() { job_field "$1" .reason | grep -qE -- "$2"; }

@test "agt-001 nodes join with the join token; a wrong one is refused" {
    shoal_cluster_start 2 4
    run shoal nodes --json
    [ "$(echo "$output" | jq length)" -eq 2 ]
    [ "$(echo "$output" | jq -r '.[0].name')" = node1 ]
    [ "$(echo "$output" | jq '.[0].gpus | length')" -eq 4 ]
    echo "$output" | jq -r '.[0].gpus[0].uuid' | grep -q '^GPU-'
    [ "$(echo "$output" | jq -r '.[0].gpus[0].model')" = H100-80GB ]
    # A wrong join token: the agent says so and exits.
    mkdir -p "$SHOAL_TEST_DIR/bad"
    echo '{"count": 1}' >"$SHOAL_TEST_DIR/bad/simgpu.json"
    echo shoal_wrongwrongwrongwrongwrongwrongwrongwrongwro >"$SHOAL_TEST_DIR/bad.token"
    run env SIMGPU_CONFIG="$SHOAL_TEST_DIR/bad/simgpu.json" timeout 20 \
        "$SHOAL_AGENT" --controller "$SHOAL_URL" --name bad \
        --join-token-file "$SHOAL_TEST_DIR/bad.token" \
        --state "$SHOAL_TEST_DIR/bad" --nvml-lib "$SIMGPU_LIB"
    [ "$status" -ne 0 ]
    [[ "$output" == *"join token was refused"* ]]
    run shoal nodes --json
    [ "$(echo "$output" | jq length)" -eq 2 ]
}

@test "agt-002 a job sees its GPUs, ranks and the distributed variables" {
    shoal_cluster_start 1 4
    id=$(submit --gpus 2 --tasks-per-node 2 --env FOO=bar -- \
        sh -c 'echo "T $LOCAL_RANK $RANK $WORLD_SIZE $CUDA_VISIBLE_DEVICES $NVIDIA_VISIBLE_DEVICES $SHOAL_JOB_ID $SHOAL_NNODES $SHOAL_NODE_RANK $SHOAL_GPUS_PER_NODE $MASTER_ADDR $MASTER_PORT $SHOAL_NODELIST $FOO"')
    wait_job_state "$id" completed
    run shoal logs "$id"
    echo "$output"
    [ "$(echo "$output" | grep -c '^T ')" -eq 2 ]
    uuids=$(job_field "$id" '.placement[0].gpus | join(",")')
    [[ "$uuids" == GPU-*,GPU-* ]]
    line0=$(echo "$output" | grep '^T 0 ')
    set -- $line0
    [ "$3" = 0 ] && [ "$4" = 2 ] && [ "$5" = "$uuids" ] && [ "$6" = "$uuids" ]
    [ "$7" = "$id" ] && [ "$8" = 1 ] && [ "$9" = 0 ] && [ "${10}" = 2 ]
    [ "${11}" = 127.0.0.1 ] && [ "${12}" -ge 29500 ] && [ "${13}" = node1 ]
    [ "${14}" = bar ]
    echo "$output" | grep -q '^T 1 1 2 '
    # Those UUIDs are GPUs of the node.
    shoal nodes --json | jq -r '.[0].gpus[].uuid' >"$SHOAL_TEST_DIR/uuids"
    for u in ${uuids//,/ }; do grep -qx "$u" "$SHOAL_TEST_DIR/uuids"; done
}

@test "agt-003 output, exit codes and signals are recorded" {
    shoal_cluster_start 1 2
    ok=$(submit -- sh -c 'echo out; echo err >&2')
    bad=$(submit -- sh -c 'exit 7')
    sig=$(submit -- sh -c 'kill -9 $$')
    nocmd=$(submit -- /nonexistent/program)
    wait_job_state "$ok" completed
    wait_job_state "$bad" failed
    wait_job_state "$sig" failed
    wait_job_state "$nocmd" failed
    [ "$(job_field "$bad" .exit_code)" = 7 ]
    [ "$(job_field "$sig" .exit_signal)" = 9 ]
    job_field "$nocmd" .reason | grep -q "cannot start /nonexistent/program"
    run shoal logs "$ok"
    [[ "$output" == *out* ]] && [[ "$output" == *err* ]]
    run shoal logs --stream err "$ok"
    [ "$output" = err ]
    run shoal logs "$nocmd"
    [[ "$output" == *"No such file"* ]]
}

@test "agt-004 logs -f follows a job until it ends" {
    shoal_cluster_start 1 1
    id=$(submit -- sh -c 'for i in 1 2 3; do echo line$i; sleep 0.3; done')
    run timeout 20 "$SHOAL_CLI" logs -f "$id"
    [ "$status" -eq 0 ]
    [ "$output" = "$(printf 'line1\nline2\nline3')" ]
}

@test "agt-005 cancel stops the whole process tree" {
    shoal_cluster_start 1 1
    beat="$SHOAL_TEST_DIR/beat"
    id=$(submit --gpus 1 -- sh -c "(while :; do date +%s%N >>$beat; sleep 0.1; done) & wait")
    wait_job_state "$id" running
    wait_for 10 test -s "$beat"
    shoal cancel "$id"
    wait_for 20 sh -c "[ \"\$(curl -sf -H 'Authorization: Bearer $SHOAL_TOKEN' $SHOAL_URL/v1/jobs/$id | jq .releasing)\" = false ]"
    [ "$(job_state "$id")" = cancelled ]
    # Nothing of the job is left to write to the file.
    [ -z "$(pgrep -f -- "$beat")" ]
    # The GPU is free again.
    id2=$(submit --gpus 1 -- true)
    wait_job_state "$id2" completed
}

@test "agt-006 a time limit ends a job as timeout" {
    shoal_cluster_start 1 1
    id=$(submit --time 2s -- sleep 60)
    wait_job_state "$id" timeout 30
    job_field "$id" .reason | grep -q "time limit"
}

@test "agt-007 freed GPUs go to the next job at once" {
    shoal_cluster_start 1 2
    # Long enough that a loaded machine still sees b waiting behind it.
    a=$(submit --gpus 2 -- sleep 3)
    b=$(submit --gpus 2 -- true)
    wait_job_state "$a" running
    [ "$(job_state "$b")" = pending ]
    # b waits for a's GPUs (and, as the next job, holds the reservation).
    job_field "$b" .reason | grep -Eq '^(resources|reservation):'
    wait_job_state "$b" completed
    end_a=$(job_field "$a" .end_time)
    start_b=$(job_field "$b" .start_time)
    # Within the same second or the next (times are shown in seconds).
    [ $(( $(date -d "$start_b" +%s) - $(date -d "$end_a" +%s) )) -le 1 ]
}

@test "agt-008 a gang starts on all its nodes or none" {
    shoal_cluster_start 2 2
    hold=$(submit --gpus 1 -- sleep 3)
    wait_job_state "$hold" running
    gang=$(submit --nodes 2 --gpus 2 -- sh -c 'echo rank $SHOAL_NODE_RANK')
    wait_for 10 reason_matches "$gang" '^(resources|reservation):'
    [ "$(job_state "$gang")" = pending ]
    # Nothing of the gang started anywhere meanwhile.
    [ "$(job_field "$gang" '.placement | length')" -eq 0 ]
    wait_job_state "$gang" completed 30
    [ "$(job_field "$gang" '.placement | length')" -eq 2 ]
    run shoal logs "$gang"
    [[ "$output" == *"rank 0"* ]] && [[ "$output" == *"rank 1"* ]]
}

@test "agt-009 a distributed program rendezvous across two agents" {
    shoal_cluster_start 2 1
    cat >"$SHOAL_TEST_DIR/rdv.py" <<'PY'
import os, socket, sys, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
if rank == 0:
    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("", port)); srv.listen(world)
    peers = []
    for _ in range(world - 1):
        c, _ = srv.accept(); peers.append(int(c.recv(16)))
        c.sendall(b"welcome")
    print("rank 0 met", sorted(peers), "world", world, flush=True)
else:
    for _ in range(200):
        try:
            c = socket.create_connection((addr, port), timeout=2); break
        except OSError:
            time.sleep(0.05)
    c.sendall(str(rank).encode()); print("rank", rank, "got", c.recv(16).decode(), flush=True)
PY
    id=$(submit --nodes 2 --gpus 1 -- python3 "$SHOAL_TEST_DIR/rdv.py")
    wait_job_state "$id" completed 60
    run shoal logs "$id"
    echo "$output"
    [[ "$output" == *"rank 0 met [1] world 2"* ]]
    [[ "$output" == *"rank 1 got welcome"* ]]
}

@test "agt-010 a drained node takes no new job; resume gives it back" {
    shoal_cluster_start 1 1
    run shoal node drain node1
    [ "$status" -eq 0 ]
    [[ "$output" == *drained* ]]
    id=$(submit --gpus 1 -- true)
    wait_for 10 reason_matches "$id" '^resources:'
    [ "$(job_state "$id")" = pending ]
    run shoal nodes --json
    [ "$(echo "$output" | jq -r '.[0].state')" = drained ]
    shoal node resume node1
    wait_job_state "$id" completed
    run shoal node drain nosuchnode
    [ "$status" -ne 0 ]
    [[ "$output" == *"not found"* ]]
}

@test "agt-011 a job that can never fit is refused at submission" {
    shoal_cluster_start 1 2
    run shoal submit --gpus 4 -- true
    [ "$status" -ne 0 ]
    echo "$output"
    [[ "$output" == *4* ]]
    run shoal submit --gpus 1 --gpu-type A100-80GB -- true
    [ "$status" -ne 0 ]
    run shoal submit --nodes 3 --gpus 1 -- true
    [ "$status" -ne 0 ]
}

@test "agt-012 a job runs as its submitting Unix user when the agent is root" {
    [ "$(id -u)" -eq 0 ] || skip "the agent must run as root to switch users"
    id -u nobody >/dev/null 2>&1 || skip "no user nobody on this machine"
    shoal_cluster_start 1 1
    token=$(shoal user create nobody | tail -n1)
    id=$(SHOAL_TOKEN=$token "$SHOAL_CLI" submit --workdir /tmp -- sh -c 'id -un; pwd; echo $HOME')
    wait_job_state "$id" completed
    run shoal logs "$id"
    [ "${lines[0]}" = nobody ]
    [ "${lines[1]}" = /tmp ]
}

@test "agt-013 a job's memory request is enforced by its cgroup" {
    [ "$(id -u)" -eq 0 ] || skip "cgroups need root"
    shoal_cluster_start 1 1
    grep -q "cgroup v" "$SHOAL_TEST_DIR/node1.log" || skip "no usable cgroups here"
    id=$(submit --mem 64M -- python3 -c 'x = b"x" * (512 << 20); print("survived")')
    wait_job_state "$id" failed 30
    [ "$(job_field "$id" .exit_signal)" = 9 ]
    run shoal logs "$id"
    [[ "$output" != *survived* ]]
    ok=$(submit --mem 256M -- python3 -c 'x = b"x" * (64 << 20); print("fine")')
    wait_job_state "$ok" completed 30
}

# The agent's fork server of node1 (shoal-agent --fork-server), by pid.
fork_server_pid() {
    local c
    for c in $(cat /proc/"$(agent_pid node1)"/task/*/children 2>/dev/null); do
        if grep -qa -- --fork-server "/proc/$c/cmdline" 2>/dev/null; then
            echo "$c"
        fi
    done
}

@test "agt-014 the launch description goes in the fork server's request; launch.json only for a long one or without the server" {
    shoal_cluster_start 1 2
    runs="$SHOAL_TEST_DIR/node1/runs"
    a=$(submit -- sh -c 'echo small')
    wait_job_state "$a" completed
    [ -s "$runs/$a.0/status.json" ]
    [ ! -e "$runs/$a.0/launch.json" ]
    # Over 60 KiB (FORKSERVER_LAUNCH_MAX): the shim reads it from the file.
    v=$(head -c 30000 /dev/zero | tr '\0' x)
    b=$(submit --env B1="$v" --env B2="$v" --env B3="$v" -- sh -c 'echo "len ${#B1} ${#B3}"')
    wait_job_state "$b" completed
    [ -s "$runs/$b.0/launch.json" ]
    run shoal logs "$b"
    [ "$output" = "len 30000 30000" ]
    # Without the server the agent starts the shim itself, from the file.
    fs=$(fork_server_pid)
    [ -n "$fs" ]
    kill -9 "$fs"
    wait_for 10 sh -c "! grep -q '^State:.*[RS]' /proc/$fs/status 2>/dev/null"
    c=$(submit -- sh -c 'echo after')
    wait_job_state "$c" completed
    [ -s "$runs/$c.0/launch.json" ]
    run shoal logs "$c"
    [ "$output" = after ]
    grep -q "starting shims without it" "$SHOAL_TEST_DIR/node1.log"
}

@test "agt-015 a shim that cannot be started leaves no launch.json behind" {
    shoal_cluster_start 1 2
    runs="$SHOAL_TEST_DIR/node1/runs"
    a=$(submit -- true)
    wait_job_state "$a" completed
    # The next job's run folder, planted with a shim.log that is a link:
    # the fork server will not open it (O_NOFOLLOW), so no shim starts.
    next=$((a + 1))
    mkdir -p "$runs/$next.0"
    ln -s /nonexistent "$runs/$next.0/shim.log"
    # Over 60 KiB: the description (and any credentials) go to launch.json.
    v=$(head -c 30000 /dev/zero | tr '\0' x)
    b=$(submit --env B1="$v" --env B2="$v" --env B3="$v" -- true)
    [ "$b" = "$next" ]
    wait_job_state "$b" failed 30
    [ -s "$runs/$b.0/work.json" ]
    [ ! -e "$runs/$b.0/launch.json" ]
}

@test "agt-016 a job's command is looked up on the job's PATH, not the agent's" {
    # A command only on the agent's PATH is not found for a job...
    mkdir -p "$BATS_TEST_TMPDIR/agentbin" "$BATS_TEST_TMPDIR/jobbin"
    printf '#!/bin/sh\necho agent-only\n' >"$BATS_TEST_TMPDIR/agentbin/shoal-probe-agent"
    printf '#!/bin/sh\necho job-path\n' >"$BATS_TEST_TMPDIR/jobbin/shoal-probe-job"
    chmod 755 "$BATS_TEST_TMPDIR/agentbin/shoal-probe-agent" "$BATS_TEST_TMPDIR/jobbin/shoal-probe-job"
    PATH="$BATS_TEST_TMPDIR/agentbin:$PATH" shoal_cluster_start 1 1
    hidden=$(submit -- shoal-probe-agent)
    wait_job_state "$hidden" failed
    job_field "$hidden" .reason | grep -q "cannot start shoal-probe-agent"
    # ...and one on the PATH the job sets is.
    found=$(submit --env "PATH=$BATS_TEST_TMPDIR/jobbin:/usr/bin:/bin" -- shoal-probe-job)
    wait_job_state "$found" completed
    run shoal logs "$found"
    [ "$output" = job-path ]
}

@test "agt-017 output over several ticks' budget is collected whole after its job ended" {
    shoal_cluster_start 1 1
    # 3 MiB and 1.5 MiB, written at once by a job that then ends: the
    # agent sends at most 1 MiB a tick, so most of it goes after the exit,
    # and the files must be looked at until every byte is sent.
    id=$(submit -- sh -c 'head -c 3145728 /dev/zero | tr "\0" o; head -c 1572864 /dev/zero | tr "\0" e >&2')
    wait_job_state "$id" completed
    out_bytes() { [ "$("$SHOAL_CLI" logs --stream out "$id" | wc -c)" -eq 3145728 ]; }
    err_bytes() { [ "$("$SHOAL_CLI" logs --stream err "$id" | wc -c)" -eq 1572864 ]; }
    wait_for 20 out_bytes
    wait_for 20 err_bytes
    [ "$("$SHOAL_CLI" logs --stream out "$id" | tr -d o | wc -c)" -eq 0 ]
}

@test "agt-018 a job's CPU time and memory peak are read from its cgroup at its end" {
    [ "$(id -u)" -eq 0 ] || skip "cgroups need root"
    shoal_cluster_start 1 1
    grep -q "cgroup v" "$SHOAL_TEST_DIR/node1.log" || skip "no usable cgroups here"
    id=$(submit -- python3 -c 'x = b"x" * (48 << 20); n = sum(range(3000000))')
    wait_job_state "$id" completed 30
    # At least the 48 MiB it held, and some CPU (the cgroup's, counted up
    # to its removal: the agent reads it before).
    [ "$(job_field "$id" '.mem_peak >= 50331648')" = true ]
    [ "$(job_field "$id" '.cpu_seconds > 0.01')" = true ]
}

@test "agt-019 the job's PATH is searched as execvp would: scripts without #!, files not executable, missing commands" {
    d="$BATS_TEST_TMPDIR/pathbin"
    mkdir -p "$d/first" "$d/second"
    chmod 755 "$BATS_TEST_TMPDIR" "$d" "$d/first" "$d/second"
    # A script without "#!" runs with /bin/sh, its arguments passed on.
    printf 'echo "no-shebang $1 $2"\n' >"$d/second/shoal-probe-sh"
    chmod 755 "$d/second/shoal-probe-sh"
    # A file of that name that is not executable, earlier on the PATH, is
    # skipped for the next one.
    printf 'echo wrong\n' >"$d/first/shoal-probe-sh"
    chmod 644 "$d/first/shoal-probe-sh"
    # Only a non-executable file: refused, as execvp refuses it.
    printf 'echo never\n' >"$d/first/shoal-probe-noexec"
    chmod 644 "$d/first/shoal-probe-noexec"
    shoal_cluster_start 1 1
    jp="PATH=$d/first:$d/second:/usr/bin:/bin"
    ok=$(submit --env "$jp" -- shoal-probe-sh a b)
    denied=$(submit --env "$jp" -- shoal-probe-noexec)
    missing=$(submit --env "$jp" -- shoal-probe-missing)
    wait_job_state "$ok" completed
    run shoal logs "$ok"
    [ "$output" = "no-shebang a b" ]
    wait_job_state "$denied" failed
    job_field "$denied" .reason | grep -q "cannot start shoal-probe-noexec: Permission denied"
    run shoal logs "$denied"
    [[ "$output" == *"shoal: cannot run shoal-probe-noexec: Permission denied"* ]]
    wait_job_state "$missing" failed
    job_field "$missing" .reason | grep -q "cannot start shoal-probe-missing: No such file or directory"
    [ "$(job_field "$missing" .exit_code)" = 127 ]
}
