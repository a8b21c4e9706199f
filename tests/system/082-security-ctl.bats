#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: the controller's side of security round 3 (issue 27) and node
# enrollment (issue 31). Each test replays what a hostile node, user or
# local account did and checks what they get now.
#   ctl-001  the join token cannot take over an enrolled node (409 naming
#            the remedy); the real agent keeps its token and its jobs
#   ctl-002  an agent that lost its node token stops with a line saying to
#            rekey or delete; `shoal node rekey` gives it a token back, and
#            `shoal node delete` lets the name enroll afresh
#   ctl-003  join tokens an admin creates: use counts, expiry, revoke; the
#            default one is rotated (state/join.token rewritten)
#   ctl-004  priority above normal: project admins and cluster admins only
#   ctl-005  a per-user cap on pending jobs (arrays count each task)
#   ctl-006  GET /v1/jobs and /v1/history answer in bounded pages
#   ctl-007  store files 0600 in a 0700 state folder; a job's environment
#            values only for its owner and cluster admins
#   ctl-008  a control byte in a path (%00) is a 400
#   ctl-009  slow senders and slow readers are cut at the request deadline
#   ctl-010  a node re-registering with other GPUs is drained with a reason
#   ctl-011  secret names are per project
#   ctl-012  the history hides environment values as the job view does

load lib/cluster

teardown() { shoal_cluster_stop; }

# register TOKEN NAME: a registration as an agent would send it; sets
# $status_code and $body.
register() {
    API_TOKEN=$1 api POST /v1/agent/register \
        "{\"name\":\"$2\",\"cpus\":1,\"memory\":1000000,\"gpus\":[]}"
}

node_state_is() {
    [ "$(shoal nodes --json | jq -r --arg n "$1" '.[] | select(.name == $n) | .state')" = "$2" ]
}

err_msg() { echo "$body" | jq -r .error.message; }

@test "ctl-001 the join token cannot take over an enrolled node" {
    shoal_cluster_start 1 1
    id=$(submit --gpus 1 -e MY_API_KEY=s3cret -- sleep 600)
    wait_job_state "$id" running
    join=$(cat "$SHOAL_TEST_DIR/controller/join.token")
    register "$join" node1
    echo "$status_code $body"
    [ "$status_code" = 409 ]
    err_msg | grep -q "shoal node rekey node1"
    [ "$(echo "$body" | jq -r '.token // empty')" = "" ]
    grep -q "tried to register an enrolled node" "$SHOAL_TEST_DIR/shoald.log"
    # The real agent's token still works: its heartbeats go on, its job runs.
    wait_node_heartbeat node1
    wait_node_heartbeat node1
    nodes_up_is 1
    job_state_is "$id" running
    # A new name still joins with the join token.
    register "$join" rogue1
    [ "$status_code" = 200 ]
    [ -n "$(echo "$body" | jq -r .token)" ]
}

@test "ctl-002 a lost node token: the agent says rekey or delete; rekey and delete work" {
    shoal_cluster_start 1 1
    dir=$SHOAL_TEST_DIR/node1
    [ -s "$dir/token" ]
    old=$(cat "$dir/token")
    pid=$(agent_pid node1)
    kill -TERM "$pid"
    wait_for 10 sh -c "! kill -0 $pid 2>/dev/null"
    rm -f "$dir/token"
    # Restarted without its token: it stops with the remedy in its log.
    agent_start node1 1
    pid=$(agent_pid node1)
    wait_for 20 sh -c "! kill -0 $pid 2>/dev/null"
    grep -q "shoal node rekey node1" "$SHOAL_TEST_DIR/node1.log"
    grep -q "shoal node delete node1" "$SHOAL_TEST_DIR/node1.log"
    # An admin re-keys it: the old token stops working, the new one in the
    # token file brings the agent back.
    run shoal node rekey node1
    [ "$status" -eq 0 ]
    new=$output
    [[ "$new" == shoal_* ]]
    [ "$new" != "$old" ]
    register "$old" node1
    [ "$status_code" = 401 ]
    echo "$new" >"$dir/token"
    agent_start node1 1
    wait_for 20 nodes_up_is 1
    # Delete: a node still up is refused; a down one is forgotten and its
    # name may join again.
    run shoal node delete node1
    [ "$status" -ne 0 ]
    [[ "$output" == *"only a down node"* ]]
    pid=$(agent_pid node1)
    kill -TERM "$pid"
    wait_for 10 sh -c "! kill -0 $pid 2>/dev/null"
    wait_for 20 node_state_is node1 down
    run shoal node delete node1
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(shoal nodes --json | jq length)" = 0 ]
    register "$new" node1
    [ "$status_code" = 401 ]
    register "$(cat "$SHOAL_TEST_DIR/controller/join.token")" node1
    [ "$status_code" = 200 ]
}

@test "ctl-003 join tokens: created with uses and expiry, listed, revoked; the default rotates" {
    shoald_start
    run shoal node token create --uses 1
    [ "$status" -eq 0 ]
    once=$output
    [[ "$once" == shoal_* ]]
    long=$(shoal node token create --expires 1h)
    short=$(shoal node token create --expires 1s)
    run shoal node token list
    echo "$output"
    [ "$(echo "$output" | grep -c '^[0-9a-f]\{12\} ')" -eq 4 ]
    [[ "$output" != *shoal_* ]]
    # --uses 1: one node, then refused.
    register "$once" n-once
    [ "$status_code" = 200 ]
    register "$once" n-twice
    [ "$status_code" = 401 ]
    # --expires: refused once past.
    sleep 1.1
    register "$short" n-late
    [ "$status_code" = 401 ]
    # Revoked: refused.
    id=$(shoal node token list --json | jq -r '[.[] | select(.default == false)][0].id')
    [ -n "$id" ]
    run shoal node token revoke "$id"
    [ "$status" -eq 0 ]
    register "$long" n-revoked
    [ "$status_code" = 401 ]
    run shoal node token revoke "$id"
    [ "$status" -ne 0 ]
    # Bad options are refused.
    run shoal node token create --uses 0
    [ "$status" -ne 0 ]
    run shoal node token create --expires soon
    [ "$status" -ne 0 ]
    run shoal node token list --uses 3
    [ "$status" -ne 0 ]
    # The default join token rotates: the old text is refused, the new one
    # (printed and in state/join.token) enrolls.
    old=$(cat "$SHOAL_TEST_DIR/controller/join.token")
    run shoal node token rotate-default
    [ "$status" -eq 0 ]
    new=$output
    [ "$new" != "$old" ]
    [ "$(cat "$SHOAL_TEST_DIR/controller/join.token")" = "$new" ]
    [ "$(stat -c %a "$SHOAL_TEST_DIR/controller/join.token")" = 600 ]
    register "$old" n-old
    [ "$status_code" = 401 ]
    register "$new" n-new
    [ "$status_code" = 200 ]
    # A user who is not an admin cannot make join tokens.
    bob=$(shoal user create bob | tail -n1)
    API_TOKEN=$bob api POST /v1/join-tokens '{}'
    [ "$status_code" = 403 ]
}

@test "ctl-004 priority above normal takes a project admin or a cluster admin" {
    shoald_start
    bob=$(shoal user create bob | tail -n1)
    carol=$(shoal user create carol | tail -n1)
    shoal project add-member default bob --role member >/dev/null
    shoal project add-member default carol --role admin >/dev/null
    run env SHOAL_TOKEN="$bob" "$SHOAL_CLI" submit --priority high -- true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"takes the admin role of project default"* ]]
    [ "$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs" | jq '.jobs | length')" = 0 ]
    id=$(SHOAL_TOKEN=$bob submit --priority low -- sleep 100)
    run env SHOAL_TOKEN="$bob" "$SHOAL_CLI" update "$id" --priority high
    [ "$status" -ne 0 ]
    [[ "$output" == *"admin role of project default"* ]]
    [ "$(job_field "$id" .priority)" = low ]
    SHOAL_TOKEN=$bob shoal update "$id" --priority normal
    [ "$(job_field "$id" .priority)" = normal ]
    # Bob may still change other fields of a job a project admin raised.
    SHOAL_TOKEN=$carol shoal update "$id" --priority high
    [ "$(job_field "$id" .priority)" = high ]
    SHOAL_TOKEN=$bob shoal update "$id" --name renamed
    [ "$(job_field "$id" .priority)" = high ]
    id2=$(SHOAL_TOKEN=$carol submit --priority high -- true)
    [ "$(job_field "$id2" .priority)" = high ]
    id3=$(submit --priority high -- true)
    [ "$(job_field "$id3" .priority)" = high ]
}

@test "ctl-005 a per-user cap on pending jobs, arrays counting each task" {
    shoald_start --max-pending-per-user 5
    run "$SHOALD" --max-pending-per-user -1 --state "$SHOAL_TEST_DIR/x"
    [ "$status" -ne 0 ]
    "$SHOALD" --help | grep -q -- --max-pending-per-user
    bob=$(shoal user create bob | tail -n1)
    for i in 1 2 3 4; do SHOAL_TOKEN=$bob submit -- true >/dev/null; done
    run env SHOAL_TOKEN="$bob" "$SHOAL_CLI" submit --array 0-1 -- true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"has 4 pending job(s) and may have at most 5"* ]]
    last=$(SHOAL_TOKEN=$bob submit -- true)
    run env SHOAL_TOKEN="$bob" "$SHOAL_CLI" submit -- true
    [ "$status" -ne 0 ]
    # Another user has their own count.
    submit -- true >/dev/null
    # A cancelled job leaves the count; an admin raises bob's own cap.
    shoal cancel "$last" >/dev/null
    SHOAL_TOKEN=$bob submit -- true >/dev/null
    run shoal user set-limits bob --max-pending 8
    [ "$status" -eq 0 ]
    [[ "$output" == *"pending=8"* ]]
    SHOAL_TOKEN=$bob submit --array 0-2 -- true >/dev/null
    run env SHOAL_TOKEN="$bob" "$SHOAL_CLI" submit -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"at most 8"* ]]
    run shoal user set-limits bob --max-pending 0
    [ "$status" -ne 0 ]
    shoal user set-limits bob --max-pending default >/dev/null
    [ "$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/users/bob/limits" | jq .limits.max_pending)" = null ]
    # The count survives a restart of the controller.
    shoald_stop
    shoald_start --max-pending-per-user 5
    run env SHOAL_TOKEN="$bob" "$SHOAL_CLI" submit -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"has 8 pending job(s)"* ]]
}

@test "ctl-006 listings come in bounded pages: jobs and history" {
    shoald_start
    # 5001 pending jobs in one array: the default page holds 5000.
    api POST /v1/jobs '{"command":["true"],"array":"0-5000"}'
    [ "$status_code" = 201 ]
    curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs" >"$SHOAL_TEST_DIR/page.json"
    [ "$(jq '.jobs | length' "$SHOAL_TEST_DIR/page.json")" = 5000 ]
    [ "$(jq .more "$SHOAL_TEST_DIR/page.json")" = 1 ]
    api GET '/v1/jobs?limit=10001'
    [ "$status_code" = 400 ]
    # The CLI pages on: every job.
    [ "$(shoal queue --json | jq length)" = 5001 ]
    # History (jobs that ran and ended): five, two a page.
    shoal cancel "$(jq '.jobs[0].id' "$SHOAL_TEST_DIR/page.json")" >/dev/null
    agent_start node1 1
    wait_for 20 nodes_up_is 1
    arr=$(submit --array 0-4 -- true)
    wait_for 30 sh -c "curl -sf -H 'Authorization: Bearer $SHOAL_TOKEN' '$SHOAL_URL/v1/history' | jq -e '.jobs | length == 5'"
    api GET '/v1/history?limit=2'
    [ "$status_code" = 200 ]
    [ "$(echo "$body" | jq '[.jobs[].id]')" = "$(jq -n "[$arr, $arr + 1]")" ]
    [ "$(echo "$body" | jq .more)" = 3 ]
    api GET "/v1/history?limit=2&after=$((arr + 3))"
    [ "$(echo "$body" | jq -c '[.jobs[].id]')" = "[$((arr + 4))]" ]
    [ "$(echo "$body" | jq .more)" = 0 ]
    api GET '/v1/history?limit=5001'
    [ "$status_code" = 400 ]
    api GET '/v1/history?format=trace&limit=2'
    [ "$status_code" = 400 ]
    [ "$(shoal history --json | jq length)" = 5 ]
}

@test "ctl-007 the store is 0600 in a 0700 folder; env values only for the owner and admins" {
    shoald_start
    dir=$SHOAL_TEST_DIR/controller
    bob=$(shoal user create bob | tail -n1)
    carol=$(shoal user create carol | tail -n1)
    shoal project add-member default carol --role viewer >/dev/null
    id=$(SHOAL_TOKEN=$bob submit -e WANDB_API_KEY=s3cret-value -- true)
    # The harness made the folder 0755 (mkdir -p): shoald tightened it.
    [ "$(stat -c %a "$dir")" = 700 ]
    [ "$(stat -c %a "$dir/logs")" = 700 ]
    # The SQLite store's files (on PostgreSQL there are none here).
    if ! store_is_pg; then
        for f in shoal.db shoal.db-wal shoal.db-shm; do
            [ -e "$dir/$f" ]
            [ "$(stat -c %a "$dir/$f")" = 600 ]
        done
    fi
    # A store left readable by an older shoald is tightened on start.
    shoald_stop
    store_is_pg || chmod 0644 "$dir/shoal.db"
    chmod 0755 "$dir"
    shoald_start
    store_is_pg || [ "$(stat -c %a "$dir/shoal.db")" = 600 ]
    [ "$(stat -c %a "$dir")" = 700 ]
    grep -q "made 0700 (was 0755)" "$SHOAL_TEST_DIR/shoald.log"
    # A project viewer sees the names, not the values, in the job and in
    # the listing; the owner and a cluster admin see the values.
    API_TOKEN=$carol api GET "/v1/jobs/$id"
    [ "$status_code" = 200 ]
    [ "$(echo "$body" | jq -r .env.WANDB_API_KEY)" = "(hidden)" ]
    [[ "$body" != *s3cret-value* ]]
    API_TOKEN=$carol api GET "/v1/jobs"
    [ "$(echo "$body" | jq -r ".jobs[] | select(.id == $id) | .env.WANDB_API_KEY")" = "(hidden)" ]
    [[ "$body" != *s3cret-value* ]]
    API_TOKEN=$bob api GET "/v1/jobs/$id"
    [ "$(echo "$body" | jq -r .env.WANDB_API_KEY)" = s3cret-value ]
    API_TOKEN=$bob api GET "/v1/jobs"
    [ "$(echo "$body" | jq -r ".jobs[] | select(.id == $id) | .env.WANDB_API_KEY")" = s3cret-value ]
    api GET "/v1/jobs/$id"
    [ "$(echo "$body" | jq -r .env.WANDB_API_KEY)" = s3cret-value ]
}

@test "ctl-008 a control byte in a path is refused (400), not read as a shorter path" {
    shoald_start
    id=$(submit -- true)
    for p in "/v1/jobs/$id%00" "/v1/jobs/$id%00x" "/v1/jobs/$id%0a" "/v1/jobs/$id%7F" \
        "/v1/nodes/n%01" "/v1/users/root%00"; do
        api GET "$p"
        echo "$p -> $status_code $body"
        [ "$status_code" = 400 ]
        err_msg | grep -q "control character"
    done
    api DELETE "/v1/jobs/$id%00"
    [ "$status_code" = 400 ]
    job_state_is "$id" pending
    # A raw control byte in the request line: refused as well.
    run python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /v1/health\x01 HTTP/1.1\r\nHost: x\r\n\r\n")
print(s.recv(4096).split(b"\r\n")[0].decode())' "$SHOALD_PORT"
    echo "$output"
    [[ "$output" == *" 400 "* ]]
    # Ordinary paths and query values still work.
    api GET "/v1/jobs/$id"
    [ "$status_code" = 200 ]
    api GET "/v1/jobs?state=pending"
    [ "$status_code" = 200 ]
}

# slow.py PORT SOURCE COUNT MODE: COUNT connections from SOURCE that never
# finish: "headers" sends the request line then a header byte a second;
# "line" trickles the request line itself; "reader" asks for a large answer
# and reads 64 bytes a second. Prints "closed N of COUNT after S s" once
# the server has closed them all (or after 40 s).
slow_py() {
    python3 - "$@" <<'PY'
import socket, sys, time
port, source, count, mode = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
token = sys.argv[5] if len(sys.argv) > 5 else ""
socks = []
for _ in range(count):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    if mode == "headers":
        s.send(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
    elif mode == "reader":
        s.send(("GET /v1/jobs?limit=10000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % token).encode())
    socks.append(s)
start = time.time()
closed = set()
line = b"GET /v1/health HTTP/1.1\r\n"
i = 0
while len(closed) < count and time.time() - start < 40:
    for s in socks:
        if s in closed:
            continue
        try:
            if mode == "headers":
                s.send(b"X")
            elif mode == "line":
                s.send(line[i % len(line):i % len(line) + 1])
            else:
                if s.recv(64) == b"":
                    closed.add(s)
        except BlockingIOError:
            pass
        except OSError:
            closed.add(s)
            continue
        try:
            if mode != "reader" and s.recv(4096) == b"":
                closed.add(s)
        except BlockingIOError:
            pass
        except OSError:
            closed.add(s)
    i += 1
    time.sleep(1)
print("closed %d of %d after %d s" % (len(closed), count, round(time.time() - start)))
PY
}

# readers_are N: the controller holds N connections to 127.0.0.5.
readers_are() {
    [ "$(ss -Htn state established "( sport = :$SHOALD_PORT and dst 127.0.0.5 )" | wc -l)" = "$1" ]
}

@test "ctl-009 a request trickling in is closed at its deadline; others from that address go on" {
    shoald_start --request-timeout 3s --request-deadline 3s
    slow_py "$SHOALD_PORT" 127.0.0.3 60 headers >"$SHOAL_TEST_DIR/headers.out" &
    slow=$!
    # While the 60 trickle, a client from the same address is served.
    sleep 1
    code=$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.3 "$SHOAL_URL/v1/health")
    [ "$code" = 200 ]
    code=$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.3 \
        -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs")
    [ "$code" = 200 ]
    wait "$slow"
    cat "$SHOAL_TEST_DIR/headers.out"
    n=$(awk '{print $2}' "$SHOAL_TEST_DIR/headers.out")
    secs=$(awk '{print $6}' "$SHOAL_TEST_DIR/headers.out")
    [ "$n" = 60 ]
    # The deadline, not the silence, closed them: a byte a second never
    # let the 3 s timeout fire; 3 s after the request line and the tick.
    [ "$secs" -ge 2 ] && [ "$secs" -le 8 ]
    grep -q "past the request deadline" "$SHOAL_TEST_DIR/shoald.log"
    # A request line trickled byte by byte: closed after the silence
    # allowed plus the deadline.
    run slow_py "$SHOALD_PORT" 127.0.0.4 10 line
    echo "$output"
    [[ "$output" == "closed 10 of 10 after "* ]]
    secs=$(echo "$output" | awk '{print $6}')
    [ "$secs" -le 11 ]
    # A slow reader of a large answer (10,000 jobs, more than the kernel's
    # buffers hold): the controller drops it within 4 deadlines (what the
    # client already holds in its buffer it may still read: the server's
    # side of the connection is what counts).
    api POST /v1/jobs '{"command":["true","a-long-argument-to-make-the-answer-larger-than-the-socket-buffers"],"array":"0-9999"}'
    [ "$status_code" = 201 ]
    slow_py "$SHOALD_PORT" 127.0.0.5 3 reader "$SHOAL_TOKEN" >/dev/null &
    slow=$!
    wait_for 10 readers_are 3
    t0=$(date +%s)
    wait_for 25 readers_are 0
    secs=$(($(date +%s) - t0))
    echo "readers dropped after ${secs}s"
    [ "$secs" -le 15 ]
    kill "$slow" 2>/dev/null || true
    wait "$slow" 2>/dev/null || true
    health_ok
    "$SHOALD" --help | grep -q -- --request-deadline
    run "$SHOALD" --request-deadline 2h --state "$SHOAL_TEST_DIR/x"
    [ "$status" -ne 0 ]
}

@test "ctl-010 a node re-registering with other GPUs is drained until an admin resumes it" {
    shoal_cluster_start 1 2
    stop_node1() {
        local pid
        pid=$(agent_pid node1)
        kill -TERM "$pid"
        wait_for 10 sh -c "! kill -0 $pid 2>/dev/null"
    }
    # The same GPUs again: nothing to see.
    stop_node1
    agent_start node1 2
    wait_node_heartbeat node1
    [ "$(shoal nodes --json | jq -r '.[0].drain')" = false ]
    # Eight "H100s" instead of two: drained, with the reason, and logged.
    stop_node1
    echo '{"count": 8, "model": "H100-80GB", "uuid_prefix": "rogue"}' \
        >"$SHOAL_TEST_DIR/node1/simgpu.json"
    agent_start node1 8
    wait_for 20 sh -c "$SHOAL_CLI nodes --json | jq -e '.[0].drain == true'"
    reason=$(shoal nodes --json | jq -r '.[0].drain_reason')
    echo "$reason"
    [[ "$reason" == "GPU inventory changed: it had 2 GPU(s) and now reports 8"* ]]
    grep -q "re-registered from .* with other GPUs" "$SHOAL_TEST_DIR/shoald.log"
    id=$(submit --gpus 8 -- true)
    wait_node_heartbeat node1
    wait_node_heartbeat node1
    job_state_is "$id" pending
    # An admin resumes it: the new inventory is accepted.
    shoal node resume node1
    wait_job_state "$id" completed 30
    [ "$(shoal nodes --json | jq -r '.[0].drain_reason // "none"')" = none ]
    # An admin's drain reason is kept and shown.
    shoal node drain node1 --reason "disk swap"
    [ "$(shoal nodes --json | jq -r '.[0].drain_reason')" = "disk swap" ]
}

@test "ctl-011 secret names are per project: no collision, nothing revealed" {
    shoald_start
    shoal team create t1 >/dev/null
    shoal project create pa --team t1 >/dev/null
    shoal project create pb --team t1 >/dev/null
    alice=$(shoal user create alice --project pa | tail -n1)
    bob=$(shoal user create bob --project pb | tail -n1)
    shoal project add-member pa alice --role admin >/dev/null
    shoal project add-member pb bob --role admin >/dev/null
    SHOAL_TOKEN=$alice shoal secret create cred --project pa access_key=A secret_key=A >/dev/null
    # Bob's project may use the same name: another secret, no "exists".
    run env SHOAL_TOKEN="$bob" "$SHOAL_CLI" secret create cred --project pb access_key=B secret_key=B
    echo "$output"
    [ "$status" -eq 0 ]
    # Bob sees his own; pa's is as absent as a name nobody has.
    API_TOKEN=$bob api GET /v1/secrets/cred
    [ "$(echo "$body" | jq -r .project)" = pb ]
    API_TOKEN=$bob api GET '/v1/secrets/cred?project=pa'
    [ "$status_code" = 404 ]
    theirs=$(err_msg)
    API_TOKEN=$bob api GET '/v1/secrets/nosuch?project=pa'
    [ "$status_code" = 404 ]
    [ "$(err_msg)" = "${theirs/cred/nosuch}" ]
    [ "$(API_TOKEN=$bob api GET /v1/secrets; echo "$body" | jq -c '[.secrets[].project]')" = '["pb"]' ]
    # A cluster admin sees both: the name alone is ambiguous.
    api GET /v1/secrets/cred
    [ "$status_code" = 409 ]
    api GET '/v1/secrets/cred?project=pa'
    [ "$(echo "$body" | jq -r .project)" = pa ]
    # A volume of pb naming "cred" uses pb's: pb's cannot go, pa's can.
    SHOAL_TOKEN=$bob shoal volume create data --project pb --s3 http://127.0.0.1:9/bucket1 --secret cred >/dev/null
    run env SHOAL_TOKEN="$bob" "$SHOAL_CLI" secret delete cred
    [ "$status" -ne 0 ]
    [[ "$output" == *"used by volume data"* ]]
    run env SHOAL_TOKEN="$alice" "$SHOAL_CLI" secret delete cred
    [ "$status" -eq 0 ]
    run shoal secret show cred --project pb
    [ "$status" -eq 0 ]
    # Survives a restart: both scopes load.
    SHOAL_TOKEN=$alice shoal secret create cred --project pa access_key=A secret_key=A >/dev/null
    shoald_stop
    shoald_start
    [ "$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/secrets" | jq -c '[.secrets[].project] | sort')" = '["pa","pb"]' ]
}

@test "ctl-012 the history shows a job's environment values to its owner and admins only" {
    shoal_cluster_start 1 1
    bob=$(shoal user create bob | tail -n1)
    carol=$(shoal user create carol | tail -n1)
    shoal project add-member default carol --role viewer >/dev/null
    # bob has no Unix account here: the run fails, and ends in the history
    # all the same.
    id=$(SHOAL_TOKEN=$bob submit -e HF_TOKEN=hf-s3cret -- true)
    wait_for 20 sh -c "curl -sf -H 'Authorization: Bearer $SHOAL_TOKEN' '$SHOAL_URL/v1/history' | jq -e '.jobs | length == 1'"
    API_TOKEN=$carol api GET /v1/history
    [ "$status_code" = 200 ]
    [ "$(echo "$body" | jq -r ".jobs[] | select(.id == $id) | .spec.env.HF_TOKEN")" = "(hidden)" ]
    [[ "$body" != *hf-s3cret* ]]
    API_TOKEN=$bob api GET /v1/history
    [ "$(echo "$body" | jq -r ".jobs[] | select(.id == $id) | .spec.env.HF_TOKEN")" = hf-s3cret ]
    api GET /v1/history
    [ "$(echo "$body" | jq -r ".jobs[] | select(.id == $id) | .spec.env.HF_TOKEN")" = hf-s3cret ]
}
