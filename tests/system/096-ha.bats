#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: highly available controllers on one PostgreSQL database
# (doc/design/ha.md). One leads, the other follows: the follower answers
# with the leader's URL and the clients follow it; when the leader is killed
# the follower takes over with every acknowledged job, under the same ids,
# and running jobs keep running; the old leader comes back as a follower.
# Skipped, saying why, without a PostgreSQL server (lib/ha.bash).

load lib/cluster
load lib/ha

setup_file() { ha_pg_setup_file; }
teardown_file() { ha_pg_teardown_file; }
teardown() { shoal_cluster_stop; }

acked_count() { cat "$SHOAL_TEST_DIR"/acked.* 2>/dev/null | wc -l; }
acked_at_least() { [ "$(acked_count)" -ge "$1" ]; }

# Submit held jobs with the CLI until killed, recording each id the CLI
# printed (an acknowledged job).
submit_loop() {
    local out=$1
    while :; do
        id=$(SHOAL_URL=$LIST "$SHOAL_CLI" submit --hold -- true 2>/dev/null) || continue
        [ -n "$id" ] && echo "$id" >>"$out"
    done
}

# The CLI with both controllers (the helpers of lib/cluster use curl on
# SHOAL_URL, one URL).
cli() { SHOAL_URL=$LIST "$SHOAL_CLI" "$@"; }

# Two controllers, A (leader, state in "controller" as lib/cluster's agents
# expect) and B (follower). SHOAL_URL is A, LIST is "A,B".
two_controllers() {
    shoal_tmp_init
    ha_db
    ha_ctl_start controller
    if ! wait_for 15 test -s "$SHOAL_TEST_DIR/controller/admin.token"; then
        skip "shoald cannot use a PostgreSQL store: $(tail -n1 "$SHOAL_TEST_DIR/controller.log")"
    fi
    A=$HA_URL_controller
    SHOALD_PID=$HA_PID_controller
    A_PORT=${A##*:}
    export SHOAL_URL=$A SHOAL_TOKEN=$(cat "$SHOAL_TEST_DIR/controller/admin.token")
    wait_for 15 role_is "$A" leader
    ha_ctl_start ctl2
    B=$HA_URL_ctl2
    wait_for 10 role_is "$B" follower
    [ "$(health_of "$B" leader)" = "$A" ]
    LIST="$A,$B"
}

@test "ha-001 kill -9 the leader: the follower takes over with every acknowledged job, running jobs keep running" {
    two_controllers
    AGENT_CONTROLLER="$A,$B" agent_start node1 4
    AGENT_CONTROLLER="$A,$B" agent_start node2 4
    wait_for 30 nodes_up_is 2
    # Two long jobs; each writes its pid once per start.
    for i in 1 2; do
        id=$(cli submit --gpus 2 -- sh -c "echo \$\$ >>$SHOAL_TEST_DIR/run.$i; exec sleep 600")
        echo "$id" >"$SHOAL_TEST_DIR/long.$i"
    done
    l1=$(cat "$SHOAL_TEST_DIR/long.1")
    l2=$(cat "$SHOAL_TEST_DIR/long.2")
    wait_job_state "$l1" running 30
    wait_job_state "$l2" running 30
    wait_for 20 test -s "$SHOAL_TEST_DIR/run.1"
    wait_for 20 test -s "$SHOAL_TEST_DIR/run.2"
    s1=$(job_field "$l1" .start_ms)
    s2=$(job_field "$l2" .start_ms)
    for i in 1 2 3 4; do
        submit_loop "$SHOAL_TEST_DIR/acked.$i" &
        record_pid $!
    done
    wait_for 60 acked_at_least 40
    t0=$(date +%s%N)
    kill -9 "$SHOALD_PID"
    wait "$SHOALD_PID" 2>/dev/null || true
    # Within 10 s (the heartbeat timeout, 3 s, is the nodes' grace and
    # comes after).
    wait_for 10 role_is "$B" leader
    t1=$(date +%s%N)
    echo "# takeover: $(((t1 - t0) / 1000000)) ms from kill -9 to the follower leading" >&3
    # The clients carry on with the new leader.
    n=$(acked_count)
    wait_for 60 acked_at_least $((n + 20))
    for pid in $(tail -n 4 "$SHOAL_TEST_DIR/pids"); do kill "$pid" 2>/dev/null || true; done
    for pid in $(tail -n 4 "$SHOAL_TEST_DIR/pids"); do
        wait_for 10 sh -c "! kill -0 $pid"
    done
    export SHOAL_URL=$B
    # Every acknowledged job is there with its id; no id was given twice.
    cat "$SHOAL_TEST_DIR"/acked.* | sort -n >"$SHOAL_TEST_DIR/acked"
    [ -z "$(uniq -d "$SHOAL_TEST_DIR/acked")" ]
    api GET '/v1/jobs?state=pending&limit=10000'
    [ "$status_code" = 200 ]
    echo "$body" | jq '.jobs[].id' | sort -n >"$SHOAL_TEST_DIR/present"
    # Acknowledged ids not present (numeric order suits comm only below
    # a new digit, so a plain set difference).
    missing=$(grep -vxFf "$SHOAL_TEST_DIR/present" "$SHOAL_TEST_DIR/acked" || true)
    [ -z "$missing" ]
    # Both agents reconnect to the new leader within their grace, and the
    # long jobs were never restarted: same start, one start each.
    wait_for 20 nodes_up_is 2
    for i in 1 2; do
        id=$(cat "$SHOAL_TEST_DIR/long.$i")
        [ "$(job_state "$id")" = running ]
        [ "$(job_field "$id" .requeues)" = 0 ]
        [ "$(wc -l <"$SHOAL_TEST_DIR/run.$i")" = 1 ]
        kill -0 "$(cat "$SHOAL_TEST_DIR/run.$i")"
    done
    [ "$(job_field "$l1" .start_ms)" = "$s1" ]
    [ "$(job_field "$l2" .start_ms)" = "$s2" ]
    # A new job after the takeover gets an id above every earlier one.
    max=$(tail -n1 "$SHOAL_TEST_DIR/present")
    new=$(cli submit --hold -- true)
    [ "$new" -gt "$max" ]
    # The old leader comes back as a follower of B and never leads.
    PORT=$A_PORT ha_ctl_start ctl1again
    [ "$HA_URL_ctl1again" = "$A" ]
    wait_for 10 role_is "$A" follower
    [ "$(health_of "$A" leader)" = "$B" ]
    run grep -q "leading now\|leader at" "$SHOAL_TEST_DIR/ctl1again.log"
    [ "$status" -eq 1 ]
    # ...and sends the CLI on to the leader (both configured, A first).
    id=$(SHOAL_URL="$A,$B" shoal submit --hold -- true)
    [ "$id" -gt "$new" ]
}

@test "ha-002 a follower sends clients to the leader and serves only its health" {
    two_controllers
    # Raw HTTP: 503 naming the leader.
    SHOAL_URL=$B api GET /v1/jobs
    [ "$status_code" = 503 ]
    [ "$(echo "$body" | jq -r .leader)" = "$A" ]
    [ "$(echo "$body" | jq -r .error.code)" = unavailable ]
    # The CLI configured with the follower alone does not send its token
    # to a URL only the answer gave: it names the leader to add.
    run env SHOAL_URL=$B "$SHOAL_CLI" submit --hold -- true
    [ "$status" -ne 0 ]
    [[ "$output" == *"follows $A, which is not among the controller URLs"* ]]
    # Configured with both, the follower first, it goes to the leader.
    id=$(SHOAL_URL="$B,$A" shoal submit --hold -- true)
    [ -n "$id" ]
    SHOAL_URL=$A api GET "/v1/jobs/$id"
    [ "$status_code" = 200 ]
    # A config file with both URLs, the follower first, works too.
    mkdir -p "$XDG_CONFIG_HOME/shoal"
    printf 'url = %s, %s\ntoken = %s\n' "$B" "$A" "$SHOAL_TOKEN" >"$XDG_CONFIG_HOME/shoal/config"
    run env -u SHOAL_URL -u SHOAL_TOKEN "$SHOAL_CLI" show "$id"
    [ "$status" -eq 0 ]
    [[ "$output" == *"$id"* ]]
}

@test "ha-003 a bad --advertise-url is refused with a clear error" {
    shoal_tmp_init
    mkdir -p "$SHOAL_TEST_DIR/bad"
    run "$SHOALD" --state "$SHOAL_TEST_DIR/bad" --port 0 --advertise-url ftp://x
    [ "$status" -eq 2 ]
    [[ "$output" == *"--advertise-url must start with http:// or https://"* ]]
    run "$SHOALD" --state "$SHOAL_TEST_DIR/bad" --port 0 --advertise-url "http://a:1,http://b:2"
    [ "$status" -eq 2 ]
    [[ "$output" == *"one URL"* ]]
}

one_leader() {
    local ra rb
    ra=$(health_of "$A" role)
    rb=$(health_of "$B" role)
    if [ "$ra" = leader ] && [ "$rb" = follower ]; then
        [ "$(health_of "$B" leader)" = "$A" ]
    elif [ "$rb" = leader ] && [ "$ra" = follower ]; then
        [ "$(health_of "$A" leader)" = "$B" ]
    else
        return 1
    fi
}

@test "ha-004 a leader whose leadership session ends stops without committing and comes back as a follower" {
    two_controllers
    AGENT_CONTROLLER="$A,$B" agent_start node1 2
    wait_for 30 nodes_up_is 1
    a=$(cli submit --hold -- true)
    # End the leader's database session that holds the advisory lock (as a
    # network partition from the database would).
    psql -q -At "$HA_DB" -c "SELECT pg_terminate_backend(pid) FROM pg_locks
        WHERE locktype = 'advisory' AND granted
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())" >/dev/null
    wait_for 20 grep -q "leadership lost" "$SHOAL_TEST_DIR/controller.log"
    # The same process starts again from nothing; one controller leads and
    # the other follows it.
    kill -0 "$HA_PID_controller"
    wait_for 20 one_leader
    # Nothing acknowledged is lost, ids go on.
    b=$(cli submit --hold -- true)
    [ "$b" -gt "$a" ]
    [ "$(SHOAL_URL=$LIST "$SHOAL_CLI" show "$a" >/dev/null && echo ok)" = ok ]
    # The agent follows the leader, whichever it is.
    if role_is "$A" leader; then SHOAL_URL=$A; else SHOAL_URL=$B; fi
    wait_for 20 nodes_up_is 1
}

db_jobs() { psql -q -At "$HA_DB" -c "SELECT count(*) FROM jobs"; }

@test "ha-005 a stopped leader is taken over within its lease and, resumed, writes nothing" {
    two_controllers
    AGENT_CONTROLLER="$A,$B" agent_start node1 2
    wait_for 30 nodes_up_is 1
    a=$(cli submit --hold -- true)
    # A stopped process keeps its database sessions open (its kernel still
    # answers), so only the lease (10 s by default) ends its leadership.
    kill -STOP "$HA_PID_controller"
    t0=$(date +%s%N)
    wait_for 15 role_is "$B" leader
    t1=$(date +%s%N)
    echo "# takeover: $(((t1 - t0) / 1000000)) ms from SIGSTOP to the follower leading" >&3
    grep -q "renewed nothing" "$SHOAL_TEST_DIR/ctl2.log"
    b=$(SHOAL_URL=$B shoal submit --hold -- true)
    [ "$b" -gt "$a" ]
    # A request reaches the stopped leader's socket, then it is resumed:
    # whatever it does then is fenced (nothing of it is committed).
    n=$(db_jobs)
    SHOAL_TOKEN=$SHOAL_TOKEN curl -s -m 30 -o "$SHOAL_TEST_DIR/late.out" \
        -w '%{http_code}' -H "Authorization: Bearer $SHOAL_TOKEN" \
        -H 'Content-Type: application/json' -X POST "$A/v1/jobs" \
        -d '{"command":["true"],"hold":true}' >"$SHOAL_TEST_DIR/late.code" &
    late=$!
    sleep 0.5
    kill -CONT "$HA_PID_controller"
    wait "$late" || true
    [ "$(cat "$SHOAL_TEST_DIR/late.code")" != 201 ]
    wait_for 20 grep -q "leadership lost" "$SHOAL_TEST_DIR/controller.log"
    kill -0 "$HA_PID_controller"
    wait_for 20 one_leader
    role_is "$B" leader
    [ "$(db_jobs)" = "$n" ]
    # Nothing acknowledged is lost; the agent follows B.
    SHOAL_URL=$B shoal show "$a" >/dev/null
    SHOAL_URL=$B shoal show "$b" >/dev/null
    SHOAL_URL=$B wait_for 20 nodes_up_is 1
}
