#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: failures. A node that drops off is marked down and its jobs end as
# node_fail (or go back to pending with --requeue); when it comes back,
# nothing runs twice. An agent restart keeps its jobs; a controller killed
# with -9 learns what happened meanwhile. Agents in network namespaces of
# their own (real addresses and routes) run a distributed job.

load lib/cluster

teardown() {
    # Processes first (agents run inside the namespaces), then the network.
    shoal_cluster_stop_tree
    netns_teardown
}

# Also end processes jobs left (the agents were killed with -9 here).
shoal_cluster_stop_tree() {
    [ -n "${SHOAL_TEST_DIR:-}" ] || return 0
    # A run's processes are in the session of its shim.
    local f sid
    for f in "$SHOAL_TEST_DIR"/*/runs/*/run.json; do
        [ -f "$f" ] || continue
        sid=$(jq -r .shim_pid "$f")
        [ "$sid" -gt 1 ] 2>/dev/null && pkill -9 -s "$sid" 2>/dev/null || true
    done
    shoal_cluster_stop
}

@test "res-001 a node that drops off: node_fail, requeue, nothing runs twice" {
    shoal_cluster_start 2 1
    marks="$SHOAL_TEST_DIR/marks"
    # Each run appends its node; a requeued job runs again elsewhere.
    id=$(submit --gpus 1 --requeue -- sh -c "echo \$SHOAL_NODELIST-\$SHOAL_ATTEMPT >>$marks; sleep 1000")
    plain=$(submit --gpus 1 -- sleep 1000)
    wait_job_state "$id" running
    wait_job_state "$plain" running
    first=$(job_field "$id" '.placement[0].node')
    other=$(job_field "$plain" '.placement[0].node')
    pid=$(agent_pid "$first")
    kill -9 "$pid"
    # Heartbeat timeout is 3 s in the tests.
    wait_for 20 sh -c "curl -sf -H 'Authorization: Bearer $SHOAL_TOKEN' $SHOAL_URL/v1/nodes | jq -e '.nodes[] | select(.name == \"$first\" and .state == \"down\")'"
    # The requeued job is pending again (the other node is busy).
    wait_job_state "$id" pending
    [ "$(job_field "$id" .requeues)" = 1 ]
    # Free the other node: the job runs there, attempt 1.
    shoal cancel "$plain"
    wait_job_state "$id" running 20
    [ "$(job_field "$id" '.placement[0].node')" = "$other" ]
    # The old node comes back: its stale run is stopped, the new one goes on.
    agent_start "$first" 1 H100-80GB
    wait_for 20 nodes_up_is 2
    stale_sid=$(jq -r .shim_pid "$SHOAL_TEST_DIR/$first/runs/$id.0/run.json")
    wait_for 20 sh -c "! pgrep -s $stale_sid >/dev/null"
    wait_node_heartbeat "$first"
    [ "$(job_state "$id")" = running ]
    [ "$(grep -c . "$marks")" -eq 2 ]
    grep -qx "$first-0" "$marks"
    grep -qx "$other-1" "$marks"
}

@test "res-002 a job without --requeue on a lost node ends node_fail" {
    shoal_cluster_start 1 1
    id=$(submit --gpus 1 -- sleep 1000)
    wait_job_state "$id" running
    kill -9 "$(agent_pid node1)"
    wait_job_state "$id" node_fail 20
    job_field "$id" .reason | grep -q "node node1"
}

@test "res-003 an agent restart keeps its running jobs and reports them" {
    AGENT_KEEP_JOBS=1 shoal_cluster_start 1 1
    id=$(submit --gpus 1 -- sh -c 'sleep 3; echo done; exit 4')
    wait_job_state "$id" running
    kill -9 "$(agent_pid node1)"
    # A heartbeat missed (one a second; down after 3 s): the job runs on.
    wait_for 10 node_silent_for node1 1
    [ "$(job_state "$id")" = running ]
    AGENT_KEEP_JOBS=1 agent_start node1 1 H100-80GB
    wait_job_state "$id" failed 30
    [ "$(job_field "$id" .exit_code)" = 4 ]
    run shoal logs "$id"
    [ "$output" = done ]
    grep -q "adopted run $id.0" "$SHOAL_TEST_DIR/node1.log"
}

@test "res-004 a controller killed with -9 learns what happened meanwhile" {
    shoal_cluster_start 1 2
    a=$(submit --gpus 1 -- sh -c 'sleep 2; echo finished-while-away')
    b=$(submit --gpus 1 -- sleep 1000)
    wait_job_state "$a" running
    wait_job_state "$b" running
    shoald_kill9
    wait_for 20 test -s "$SHOAL_TEST_DIR/node1/runs/$a.0/status.json"
    shoald_start
    # The agent reconnects by itself; job a ended while the controller was
    # away; job b still runs.
    wait_job_state "$a" completed 30
    [ "$(job_state "$b")" = running ]
    run shoal logs "$a"
    [ "$output" = finished-while-away ]
    shoal cancel "$b"
    wait_job_state "$b" cancelled
}

@test "res-005 agents in network namespaces run a distributed job" {
    netns_usable || skip "needs root and network namespaces"
    shoal_tmp_init
    netns_setup 2
    shoald_start --listen "$NETNS_BRIDGE_IP"
    for i in 1 2; do
        AGENT_PREFIX="ip netns exec $NETNS_PREFIX-$i" agent_start "node$i" 1
    done
    wait_for 20 nodes_up_is 2
    run shoal nodes --json
    [ "$(echo "$output" | jq -r '.[0].address')" = "$(netns_ip 1)" ]
    [ "$(echo "$output" | jq -r '.[1].address')" = "$(netns_ip 2)" ]
    cat >"$SHOAL_TEST_DIR/rdv.py" <<'PY'
import os, socket, time
rank, port = int(os.environ["RANK"]), int(os.environ["MASTER_PORT"])
addr = os.environ["MASTER_ADDR"]
if rank == 0:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port)); s.listen(1); c, peer = s.accept()
    print("rank 0 on", addr, "met rank", c.recv(8).decode(), "from", peer[0], flush=True)
else:
    for _ in range(200):
        try:
            c = socket.create_connection((addr, port), timeout=2); break
        except OSError:
            time.sleep(0.05)
    c.sendall(b"1")
PY
    id=$(submit --nodes 2 --gpus 1 -- python3 "$SHOAL_TEST_DIR/rdv.py")
    wait_job_state "$id" completed 60
    run shoal logs "$id"
    echo "$output"
    # Rank 0 on either host (the engine's pick), rank 1 on the other.
    [[ "$output" == *"rank 0 on $(netns_ip 1) met rank 1 from $(netns_ip 2)"* ]] ||
        [[ "$output" == *"rank 0 on $(netns_ip 2) met rank 1 from $(netns_ip 1)"* ]]
    # Host 2 drops off the network, then comes back.
    netns_link 2 down
    wait_for 20 sh -c "curl -sf -H 'Authorization: Bearer $SHOAL_TOKEN' $SHOAL_URL/v1/nodes | jq -e '.nodes[] | select(.name == \"node2\" and .state == \"down\")'"
    netns_link 2 up
    wait_for 30 nodes_up_is 2
}
