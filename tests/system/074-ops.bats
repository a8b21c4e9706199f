#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: what a site's operator runs into (issue 31): the agent stops on
# SIGTERM at every moment, one agent per state folder, the url file names
# a URL that reaches the controller.

load lib/cluster

teardown() {
    shoal_cluster_stop
}

# A port nothing listens on: bound and closed again.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Start an agent that cannot reach its controller.
lonely_agent_start() {
    local name=$1
    shoal_tmp_init
    mkdir -p "$SHOAL_TEST_DIR/$name"
    "$SHOAL_AGENT" --controller "http://127.0.0.1:$(free_port)" \
        --join-token x --name "$name" --state "$SHOAL_TEST_DIR/${2:-$name}" \
        --no-gpus --nvml-lib /nonexistent.so \
        >>"$SHOAL_TEST_DIR/$name.log" 2>&1 &
    LONELY_PID=$!
    record_pid "$LONELY_PID"
}

@test "ops-001 an agent that cannot reach its controller stops on SIGTERM" {
    lonely_agent_start node1
    wait_for 10 grep -q retrying "$SHOAL_TEST_DIR/node1.log"
    kill -TERM "$LONELY_PID"
    # It ends at once (the retry wait is cut short), and cleanly.
    wait_for 5 sh -c "! kill -0 $LONELY_PID"
    wait "$LONELY_PID" && rc=0 || rc=$?
    [ "$rc" -eq 0 ]
    grep -q "signal 15: stopping" "$SHOAL_TEST_DIR/node1.log"
}

@test "ops-002 SIGINT stops it too" {
    lonely_agent_start node1
    wait_for 10 grep -q retrying "$SHOAL_TEST_DIR/node1.log"
    kill -INT "$LONELY_PID"
    wait_for 5 sh -c "! kill -0 $LONELY_PID"
}

@test "ops-003 a second agent on one state folder refuses to start" {
    lonely_agent_start node1
    wait_for 10 grep -q retrying "$SHOAL_TEST_DIR/node1.log"
    run "$SHOAL_AGENT" --controller http://127.0.0.1:1 --join-token x \
        --name node2 --state "$SHOAL_TEST_DIR/node1" --no-gpus \
        --nvml-lib /nonexistent.so
    [ "$status" -eq 1 ]
    [[ "$output" == *"another shoal-agent is running on $SHOAL_TEST_DIR/node1"* ]]
    # The first one runs on; once it stops, the folder is free again.
    kill -0 "$LONELY_PID"
    kill -TERM "$LONELY_PID"
    wait_for 5 sh -c "! kill -0 $LONELY_PID"
    lonely_agent_start node2 node1
    wait_for 10 grep -q retrying "$SHOAL_TEST_DIR/node2.log"
}

@test "ops-004 on 0.0.0.0 the url file names the host, not the wildcard" {
    shoal_tmp_init
    dir="$SHOAL_TEST_DIR/controller"
    mkdir -p "$dir"
    "$SHOALD" --state "$dir" --port 0 --listen 0.0.0.0 \
        >>"$SHOAL_TEST_DIR/shoald.log" 2>&1 &
    record_pid $!
    wait_for 15 test -s "$dir/url"
    url=$(cat "$dir/url")
    [[ "$url" == "http://$(hostname):"* ]]
    [[ "$url" != *0.0.0.0* ]]
}

@test "ops-005 the url file holds --advertise-url when given" {
    shoal_tmp_init
    dir="$SHOAL_TEST_DIR/controller"
    mkdir -p "$dir"
    "$SHOALD" --state "$dir" --port 0 --listen 0.0.0.0 \
        --advertise-url https://ctl.example.org:6820 \
        >>"$SHOAL_TEST_DIR/shoald.log" 2>&1 &
    record_pid $!
    wait_for 15 test -s "$dir/url"
    [ "$(cat "$dir/url")" = "https://ctl.example.org:6820" ]
}

# The units as meson configures them, with the build's programs.
units_configure() {
    local dir=$1
    mkdir -p "$dir/sbin" "$dir/units"
    ln -sf "$SHOALD" "$SHOAL_AGENT" "$dir/sbin/"
    for u in shoald shoal-agent; do
        sed -e "s|@sbindir@|$dir/sbin|g" -e "s|@sysconfdir@|/etc|g" \
            "$BATS_TEST_DIRNAME/../../dist/systemd/$u.service.in" \
            >"$dir/units/$u.service"
    done
}

@test "ops-010 systemd-analyze verify accepts the units, warnings included" {
    command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
    shoal_tmp_init
    units_configure "$SHOAL_TEST_DIR/u"
    run systemd-analyze verify --man=no "$SHOAL_TEST_DIR"/u/units/*.service
    echo "$output"
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    grep -qx "Type=notify" "$SHOAL_TEST_DIR/u/units/shoald.service"
    grep -qx "Type=notify" "$SHOAL_TEST_DIR/u/units/shoal-agent.service"
    grep -qx "KillMode=process" "$SHOAL_TEST_DIR/u/units/shoal-agent.service"
    # The check sees a bad setting (a warning, exit 0): the empty output
    # above means something.
    sed -i 's/^WatchdogSec=.*/WatchdogSec=soon/' "$SHOAL_TEST_DIR/u/units/shoald.service"
    run systemd-analyze verify --man=no "$SHOAL_TEST_DIR/u/units/shoald.service"
    [[ "$output" == *WatchdogSec* || "$output" == *"sec value"* ]]
}

# Listen as systemd would on $SHOAL_TEST_DIR/notify.sock.
notify_listen() {
    shoal_tmp_init
    NOTIFY_OUT="$SHOAL_TEST_DIR/notify.out"
    python3 "$BATS_TEST_DIRNAME/lib/notify_listen.py" \
        "$SHOAL_TEST_DIR/notify.sock" "$NOTIFY_OUT" &
    record_pid $!
    wait_for 10 grep -q listening "$NOTIFY_OUT"
}

@test "ops-011 shoald tells systemd READY once it serves, WATCHDOG, STOPPING" {
    notify_listen
    NOTIFY_SOCKET="$SHOAL_TEST_DIR/notify.sock" WATCHDOG_USEC=400000 \
        shoald_start
    wait_for 10 grep -q "^READY=1 STATUS=$SHOAL_URL" "$NOTIFY_OUT"
    # Half of WatchdogSec: several in a second.
    wait_for 10 sh -c "[ \$(grep -c '^WATCHDOG=1' $NOTIFY_OUT) -ge 3 ]"
    shoald_stop
    grep -q "^STOPPING=1" "$NOTIFY_OUT"
}

@test "ops-012 the agent is READY once it joined, not while it waits" {
    notify_listen
    NOTIFY_SOCKET="$SHOAL_TEST_DIR/notify.sock" lonely_agent_start node1
    wait_for 10 grep -q "^STATUS=waiting for the controller" "$NOTIFY_OUT"
    ! grep -q READY "$NOTIFY_OUT"
    kill -TERM "$LONELY_PID"
    wait_for 5 sh -c "! kill -0 $LONELY_PID"
    grep -q "^STOPPING=1" "$NOTIFY_OUT"
    : >"$NOTIFY_OUT"
    shoald_start
    NOTIFY_SOCKET="$SHOAL_TEST_DIR/notify.sock" WATCHDOG_USEC=400000 \
        agent_start node1 1
    wait_for 20 nodes_up_is 1
    wait_for 10 grep -q "^READY=1 STATUS=node node1 joined" "$NOTIFY_OUT"
    wait_for 10 grep -q "^WATCHDOG=1" "$NOTIFY_OUT"
}

@test "ops-020 shoald reads its options from a file; flags override it" {
    shoal_tmp_init
    conf="$SHOAL_TEST_DIR/shoald.conf"
    cat >"$conf" <<CONF
# a test controller
state = $SHOAL_TEST_DIR/from-file
port = 1
heartbeat-timeout = 3s
CONF
    # The flags' --port and --state win over the file's.
    shoald_start --config "$conf"
    [ -s "$SHOAL_TEST_DIR/controller/url" ]
    [ ! -e "$SHOAL_TEST_DIR/from-file" ]
    [ "$SHOALD_PORT" != 1 ]
    # The file's keys are used: a node is down after its 3 s.
    agent_start node1 1
    wait_for 20 nodes_up_is 1
    kill -9 "$(agent_pid node1)"
    wait_for 15 sh -c "curl -sf -H 'Authorization: Bearer $SHOAL_TOKEN' $SHOAL_URL/v1/nodes | jq -e '.nodes[0].state == \"down\"'"
}

@test "ops-021 --check-config names the file and line of a mistake" {
    shoal_tmp_init
    conf="$SHOAL_TEST_DIR/shoald.conf"
    printf 'state = %s/c\nport = 0\n' "$SHOAL_TEST_DIR" >"$conf"
    run "$SHOALD" --config "$conf" --check-config
    [ "$status" -eq 0 ]
    [[ "$output" == *"configuration in $conf is valid"* ]]
    [ ! -e "$SHOAL_TEST_DIR/c" ]
    printf 'idle-policy = sometimes\n' >>"$conf"
    run "$SHOALD" --config "$conf" --check-config
    [ "$status" -eq 2 ]
    [[ "$output" == *"$conf:3: --idle-policy must be none, warn"* ]]
    # The flag overrides the bad key: the file is not read for it.
    run "$SHOALD" --config "$conf" --idle-policy none --check-config
    [ "$status" -eq 0 ]
    printf 'kepp-finished = 1d\n' >>"$conf"
    run "$SHOALD" --config "$conf" --check-config
    [ "$status" -eq 2 ]
    [[ "$output" == *"$conf:4: unknown key 'kepp-finished'"* ]]
    run "$SHOALD" --config "$SHOAL_TEST_DIR/none.conf" --check-config
    [ "$status" -eq 2 ]
    [[ "$output" == *"cannot read $SHOAL_TEST_DIR/none.conf"* ]]
    # The agent alike.
    printf 'controller = http://127.0.0.1:1\nstate = /x\nlabel = a100\nmem = lots\n' >"$SHOAL_TEST_DIR/agent.conf"
    run "$SHOAL_AGENT" --config "$SHOAL_TEST_DIR/agent.conf" --check-config
    [ "$status" -eq 2 ]
    [[ "$output" == *"agent.conf:4: --mem"* ]]
}

@test "ops-022 the example files hold every option and are valid" {
    dist="$BATS_TEST_DIRNAME/../../dist/config"
    for prog in shoald:shoald.conf shoal-agent:agent.conf; do
        bin=$SHOALD
        [ "${prog%%:*}" = shoal-agent ] && bin=$SHOAL_AGENT
        file="$dist/${prog#*:}"
        for opt in $("$bin" --help | grep -oE '^ +(-h, )?--[a-z0-9-]+' | sed 's/.*--//'); do
            case $opt in help | config | check-config) continue ;; esac
            grep -qE "^#? ?$opt =" "$file" || {
                echo "$file lacks $opt"
                return 1
            }
        done
    done
    run "$SHOALD" --config "$dist/shoald.conf" --check-config
    [ "$status" -eq 0 ]
    run "$SHOAL_AGENT" --config "$dist/agent.conf" --controller http://h:1 --check-config
    [ "$status" -eq 0 ]
}

@test "ops-023 an agent joins with the options of its file" {
    shoald_start
    dir="$SHOAL_TEST_DIR/node1"
    mkdir -p "$dir"
    echo '{"count": 2, "model": "H100-80GB", "uuid_prefix": "n1"}' >"$dir/simgpu.json"
    cat >"$dir/agent.conf" <<CONF
controller = $SHOAL_URL
join-token-file = $SHOAL_TEST_DIR/controller/join.token
name = node1
state = $dir
nvml-lib = $SIMGPU_LIB
label = a100
label = switch=sw1
heartbeat = 1s
stop-jobs-on-exit = true
allow-job-user = $(id -un)
CONF
    SIMGPU_CONFIG="$dir/simgpu.json" "$SHOAL_AGENT" --config "$dir/agent.conf" \
        --label rack=r9 >>"$SHOAL_TEST_DIR/node1.log" 2>&1 &
    record_pid $!
    wait_for 20 nodes_up_is 1
    labels=$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/nodes" | jq -c '.nodes[0].labels')
    # The command line's --label replaces the file's labels.
    [ "$labels" = '{"rack":"r9"}' ]
}

# A controller state folder holding the store of the previous release
# (schema version 1: tests/data/store/schema-v1.sql, dumped from a cluster
# of that release after three jobs: completed, failed, held).
old_store_setup() {
    shoal_tmp_init
    local dir="$SHOAL_TEST_DIR/controller" data="$BATS_TEST_DIRNAME/../data/store"
    mkdir -p "$dir"
    chmod 700 "$dir"
    sqlite3 "$dir/shoal.db" <"$data/schema-v1.sql"
    install -m 600 "$data/schema-v1.admin.token" "$dir/admin.token"
}

db_value() { sqlite3 "$SHOAL_TEST_DIR/controller/${2:-shoal.db}" "$1"; }

@test "ops-030 a store of the previous schema is migrated on start, nothing lost" {
    skip_unless_sqlite "migrates the SQLite file"
    old_store_setup
    [ "$(db_value "SELECT value FROM meta WHERE key = 'schema_version'")" = 1 ]
    before_objects=$(db_value "SELECT kind, key, record FROM objects ORDER BY 1, 2" | grep -v '^node|' | md5sum)
    before_jobs=$(db_value "SELECT id, state, record FROM jobs ORDER BY id" | md5sum)
    shoald_start
    grep -q "migrated .*shoal.db from schema version 1 to 2" "$SHOAL_TEST_DIR/shoald.log"
    # The jobs as they were, through the API.
    [ "$(job_field 1 .state)" = completed ]
    [ "$(job_field 2 .state)" = failed ]
    [ "$(job_field 2 .name)" = kept ]
    [ "$(job_field 2 .exit_code)" = 3 ]
    [ "$(job_field 3 .state)" = pending ]
    [ "$(job_field 3 .held)" = true ]
    # The old admin token still works; new jobs number on from 4.
    shoal queue --all | grep -q kept
    shoald_stop
    [ "$(db_value "SELECT value FROM meta WHERE key = 'schema_version'")" = 2 ]
    [ "$(db_value "SELECT name FROM sqlite_master WHERE name = 'jobs_start'")" = jobs_start ]
    [ "$(db_value "SELECT id, state, record FROM jobs WHERE id <= 3 ORDER BY id" | md5sum)" = "$before_jobs" ]
    [ "$(db_value "SELECT kind, key, record FROM objects WHERE kind IN ('cluster','member','project','team','token','user') ORDER BY 1, 2" | md5sum)" = "$before_objects" ]
    # The copy made before the migration is the old store, whole.
    [ "$(db_value "SELECT value FROM meta WHERE key = 'schema_version'" shoal.db.schema-1)" = 1 ]
    [ "$(db_value "SELECT COUNT(*) FROM jobs" shoal.db.schema-1)" = 3 ]
    # A second start has nothing to migrate.
    shoald_start
    shoald_stop
    [ "$(grep -c "migrated" "$SHOAL_TEST_DIR/shoald.log")" = 1 ]
    [ "$(ls "$SHOAL_TEST_DIR/controller" | grep -c 'schema-')" = 1 ]
}

@test "ops-031 a store of a newer schema is refused, and left as it is" {
    skip_unless_sqlite "writes the SQLite file"
    old_store_setup
    db_value "UPDATE meta SET value = '99' WHERE key = 'schema_version'"
    run "$SHOALD" --state "$SHOAL_TEST_DIR/controller" --port 0
    [ "$status" -ne 0 ]
    [[ "$output" == *"schema version 99, newer than this shoald understands (2)"* ]]
    [ "$(db_value "SELECT COUNT(*) FROM jobs")" = 3 ]
}

@test "ops-040 shoal admin backup: a consistent copy and the key, restorable" {
    skip_unless_sqlite "copies the SQLite store"
    shoal_cluster_start 1 1
    id=$(submit --gpus 1 --name before-backup -- echo hi)
    wait_job_state "$id" completed
    shoal secret create s3cred access_key=AK secret_key=SK >/dev/null
    mkdir -p "$SHOAL_TEST_DIR/backups"
    cd "$SHOAL_TEST_DIR/backups"
    run shoal admin backup nightly.db
    echo "$output"
    [ "$status" -eq 0 ]
    b="$SHOAL_TEST_DIR/backups/nightly.db"
    [[ "$output" == *"store: $b ("*" bytes)"* ]]
    [[ "$output" == *"sealed secrets' key: $b.key"* ]]
    [ "$(stat -c %a "$b")" = 600 ]
    [ "$(stat -c %a "$b.key")" = 600 ]
    cmp "$b.key" "$SHOAL_TEST_DIR/controller/secrets.key"
    [ "$(sqlite3 "$b" 'PRAGMA integrity_check')" = ok ]
    [ "$(sqlite3 "$b" "SELECT value FROM meta WHERE key = 'schema_version'")" = 2 ]
    # An existing file is never written over.
    run shoal admin backup "$b"
    [ "$status" -ne 0 ]
    [[ "$output" == *"cannot create $b: File exists"* ]]
    # Restore into a fresh state folder: the job and the secret are there.
    shoald_stop
    r="$SHOAL_TEST_DIR/restored"
    mkdir -m 700 "$r"
    cp "$b" "$r/shoal.db"
    cp "$b.key" "$r/secrets.key"
    chmod 600 "$r/secrets.key"
    "$SHOALD" --state "$r" --port 0 >>"$SHOAL_TEST_DIR/restored.log" 2>&1 &
    record_pid $!
    wait_for 15 test -s "$r/url"
    SHOAL_URL=$(cat "$r/url")
    wait_for 15 health_ok
    [ "$(job_field "$id" .name)" = before-backup ]
    [ "$(job_field "$id" .state)" = completed ]
    shoal secret show s3cred | grep -q access_key
}

@test "ops-041 shoal admin backup is for cluster admins, with an absolute path" {
    shoald_start
    run curl -s -X POST -H "Authorization: Bearer $SHOAL_TOKEN" \
        -d '{"path": "relative.db"}' "$SHOAL_URL/v1/admin/backup"
    [[ "$output" == *"path must be absolute"* ]]
    shoal user create bob >/dev/null
    bob=$(shoal user token bob 2>/dev/null | grep -o 'shoal_[A-Za-z0-9_-]*' | head -1)
    [ -n "$bob" ]
    run curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $bob" \
        -d "{\"path\": \"$SHOAL_TEST_DIR/b.db\"}" "$SHOAL_URL/v1/admin/backup"
    [ "$output" = 403 ]
    [ ! -e "$SHOAL_TEST_DIR/b.db" ]
}

metric() {
    curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/metrics" |
        awk -v m="$1" '$1 == m { print $2 }'
}
metric_is() { [ "$(metric "$1")" = "$2" ]; }

@test "ops-050 --keep-output: an ended job's output goes, a running one's stays" {
    shoald_start --keep-output 2s --retention-interval 1s
    agent_start node1 2
    wait_for 20 nodes_up_is 1
    running=$(submit --gpus 1 -- sh -c 'echo still-running; sleep 1000')
    # The running job's output is written first: the pass that finds the
    # ended job's output over 2 s old finds the running one's older still.
    wait_for 10 test -s "$SHOAL_TEST_DIR/controller/logs/$running/0.all"
    ended=$(submit --gpus 1 -- echo done-early)
    wait_job_state "$ended" completed
    wait_for 10 test -d "$SHOAL_TEST_DIR/controller/logs/$ended"
    wait_for 15 sh -c "! test -d $SHOAL_TEST_DIR/controller/logs/$ended"
    wait_for 10 metric_is shoal_output_pruned_jobs_total 1
    test -d "$SHOAL_TEST_DIR/controller/logs/$running"
    shoal logs "$running" | grep -q still-running
    metric_is shoal_output_kept_jobs 1
    [ "$(metric shoal_output_kept_bytes)" -gt 0 ]
    if command -v promtool >/dev/null; then
        curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/metrics" |
            promtool check metrics
    fi
}

@test "ops-051 --keep-output-size: the oldest ended jobs' output goes first" {
    shoald_start --keep-output-size 3K --retention-interval 1s
    agent_start node1 1
    wait_for 20 nodes_up_is 1
    # About 1.6 KiB each (the stream and the attempt's copy).
    for i in 1 2 3; do
        id=$(submit --gpus 1 -- sh -c "head -c 800 /dev/zero | tr '\\0' $i")
        wait_job_state "$id" completed
        wait_for 10 test -s "$SHOAL_TEST_DIR/controller/logs/$id/0.all"
        ids="$ids $id"
    done
    set -- $ids
    wait_for 15 sh -c "! test -d $SHOAL_TEST_DIR/controller/logs/$1"
    test -d "$SHOAL_TEST_DIR/controller/logs/$3"
    [ "$(metric shoal_output_kept_bytes)" -le 3072 ]
}

@test "ops-052 --keep-history: old jobs leave the store; it must cover --keep-finished" {
    run "$SHOALD" --state "$BATS_TEST_TMPDIR/x" --keep-history 1d --check-config
    [ "$status" -ne 0 ]
    [[ "$output" == *"--keep-history must be at least --keep-finished"* ]]
    shoald_start --keep-finished 1s --keep-history 2s --retention-interval 1s
    agent_start node1 1
    wait_for 20 nodes_up_is 1
    id=$(submit --gpus 1 -- true)
    wait_job_state "$id" completed
    wait_for 20 metric_is shoal_history_pruned_jobs_total 1
    metric_is shoal_history_kept_jobs 0
    if ! store_is_pg; then
        [ "$(sqlite3 "$SHOAL_TEST_DIR/controller/shoal.db" "SELECT COUNT(*) FROM jobs WHERE id = $id")" = 0 ]
    fi
}

@test "ops-060 man pages: one per program, every option, no warnings" {
    command -v scdoc >/dev/null || skip "scdoc is not installed"
    for page in shoal.1 shoald.8 shoal-agent.8; do
        [ -s "$SHOAL_BUILD/dist/$page" ]
        run sh -c "LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l '$SHOAL_BUILD/dist/$page' 2>&1 >/dev/null"
        [ -z "$output" ]
    done
    text=$(MANWIDTH=200 man -l "$SHOAL_BUILD/dist/shoald.8" 2>/dev/null)
    for opt in $("$SHOALD" --help | grep -oE '^ +--[a-z0-9-]+' | sed 's/ *--//'); do
        grep -q -- "--$opt" <<<"$text" || {
            echo "shoald(8) lacks --$opt"
            return 1
        }
    done
    MANWIDTH=200 man -l "$SHOAL_BUILD/dist/shoal.1" 2>/dev/null | grep -q "shoal admin backup FILE"
    MANWIDTH=200 man -l "$SHOAL_BUILD/dist/shoal-agent.8" 2>/dev/null | grep -q -- "--stop-jobs-on-exit"
}

# Complete the command line "$@" (the last word is the one completed).
complete_words() {
    COMP_WORDS=("$SHOAL_CLI" "$@")
    COMP_CWORD=$#
    COMPREPLY=()
    _shoal
    printf '%s\n' "${COMPREPLY[@]}"
}

@test "ops-061 bash completion: commands, options, job ids, node names" {
    source "$BATS_TEST_DIRNAME/../../dist/completion/shoal.bash"
    shoal_cluster_start 1 1
    id=$(submit --gpus 1 -- sleep 1000)
    wait_job_state "$id" running
    [ "$(complete_words sub)" = submit ]
    complete_words "" | grep -qx admin
    complete_words queue --a | grep -qx -- --all
    complete_words cancel "" | grep -qx "$id"
    complete_words logs "" | grep -qx "$id"
    complete_words node "" | grep -qx drain
    [ "$(complete_words node drain no)" = node1 ]
    [ "$(complete_words team cr)" = create ]
    complete_words admin "" | grep -qx backup
}

@test "ops-042 on PostgreSQL shoal admin backup copies the key and says how to pg_dump" {
    store_is_pg || skip "the store is SQLite here (SHOAL_TEST_STORE=postgresql runs it)"
    shoald_start
    b="$SHOAL_TEST_DIR/pg-backup.dump"
    run shoal admin backup "$b"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"the store is on PostgreSQL: back it up with"* ]]
    cmp "$b.key" "$SHOAL_TEST_DIR/controller/secrets.key"
    [ "$(stat -c %a "$b.key")" = 600 ]
    [ ! -e "$b" ]
    # The printed command works as it is.
    cmd=$(grep -o "pg_dump .*" <<<"$output")
    sh -c "$cmd"
    pg_restore --list "$b" | grep -q "TABLE public jobs"
}
