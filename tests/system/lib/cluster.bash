# SPDX-License-Identifier: Apache-2.0
# Helpers for the system tests: start a real cluster (shoald, and agents with
# simulated GPUs) on loopback with a random free port and a temporary state
# folder; wait for readiness by polling, never by blind sleeps; record every
# PID we start and kill exactly those at teardown. State and logs are kept
# when a test fails (the path is printed).

SHOAL_BUILD=${SHOAL_BUILD:-build}
case "$SHOAL_BUILD" in
/*) ;;
*) SHOAL_BUILD="$BATS_TEST_DIRNAME/../../$SHOAL_BUILD" ;;
esac
SHOALD="$SHOAL_BUILD/src/shoald/shoald"
SHOAL_AGENT="$SHOAL_BUILD/src/agent/shoal-agent"
SHOAL_CLI="$SHOAL_BUILD/src/cmd/shoal"
SIMGPU_LIB="$SHOAL_BUILD/src/simgpu/libsimgpu.so"

# shoal CLI as a function so tests read naturally: run shoal queue
shoal() { "$SHOAL_CLI" "$@"; }

# Poll a command until it succeeds or the timeout (seconds) passes.
wait_for() {
    local timeout=$1
    shift
    local deadline=$((SECONDS + timeout))
    until "$@" >/dev/null 2>&1; do
        if [ $SECONDS -ge $deadline ]; then
            echo "timed out after ${timeout}s waiting for: $*" >&2
            return 1
        fi
        sleep 0.05
    done
}

shoal_tmp_init() {
    if [ -z "${SHOAL_TEST_DIR:-}" ]; then
        SHOAL_TEST_DIR=$(mktemp -d "${BATS_TMPDIR:-/tmp}/shoal-test.XXXXXX")
        export SHOAL_TEST_DIR
        : >"$SHOAL_TEST_DIR/pids"
        # Never touch the user's own client config.
        export XDG_CONFIG_HOME="$SHOAL_TEST_DIR/xdg"
        mkdir -p "$XDG_CONFIG_HOME"
    fi
}

record_pid() { echo "$1" >>"$SHOAL_TEST_DIR/pids"; }

# test_user NAME [UID]: the local account NAME (no home folder: /tmp, shell
# /bin/sh) for tests of jobs run as another user, made unless it exists,
# with UID when that is free. Files run in parallel (scripts/test.sh) may
# make the same account at once: the one that loses the race finds it made.
test_user() {
    local name=$1 uid=${2:-}
    id "$name" >/dev/null 2>&1 && return 0
    if [ -n "$uid" ] && useradd -M -d /tmp -s /bin/sh -u "$uid" "$name" 2>/dev/null; then
        return 0
    fi
    useradd -M -d /tmp -s /bin/sh "$name" 2>/dev/null || id "$name" >/dev/null 2>&1 || {
        echo "could not make the account $name" >&2
        return 1
    }
}

health_ok() { curl -sf "$SHOAL_URL/v1/health" >/dev/null; }

# ---- the store: SQLite (default) or PostgreSQL ----
# SHOAL_TEST_STORE=postgresql runs every controller that shoald_start starts
# on a PostgreSQL database of the test's own (created at its first start,
# kept across restarts within the test, dropped at shoal_cluster_stop), on
# the server SHOAL_TEST_PG_URL names (setup_suite.bash starts a throw-away
# one for the run when it is not set). A test that gives its own --store
# keeps it.
SHOAL_TEST_STORE=${SHOAL_TEST_STORE:-sqlite}

store_is_pg() { [ "$SHOAL_TEST_STORE" = postgresql ]; }

# Skip a test that looks into the SQLite file itself.
skip_unless_sqlite() {
    store_is_pg && skip "looks into the SQLite file (${1:-}): SHOAL_TEST_STORE=postgresql"
    return 0
}

# The URL of the test's store: the controller's SQLite file, or the test's
# PostgreSQL database (created here when it does not exist yet).
test_store_url() {
    shoal_tmp_init
    if ! store_is_pg; then
        echo "$SHOAL_TEST_DIR/controller/shoal.db"
        return 0
    fi
    if [ ! -s "$SHOAL_TEST_DIR/pg.db" ]; then
        if [ -z "${SHOAL_TEST_PG_URL:-}" ]; then
            echo "SHOAL_TEST_STORE=postgresql needs SHOAL_TEST_PG_URL (scripts/pg-test.sh start gives one)" >&2
            return 1
        fi
        local name
        name="shoal_t_$(basename "$SHOAL_TEST_DIR" | tr -c 'a-zA-Z0-9\n' _ | tr 'A-Z' 'a-z')"
        psql -q "$SHOAL_TEST_PG_URL" -c "CREATE DATABASE $name" >/dev/null ||
            return 1
        echo "$name" >"$SHOAL_TEST_DIR/pg.db"
    fi
    echo "${SHOAL_TEST_PG_URL%/*}/$(cat "$SHOAL_TEST_DIR/pg.db")"
}

# Everything the store holds, for tests that check a secret is not in it:
# the bytes of the SQLite file and its write-ahead log, or every record in
# the PostgreSQL database.
store_contents() {
    if store_is_pg; then
        psql -q -At "$(test_store_url)" \
            -c "SELECT record::text FROM objects UNION ALL SELECT record::text FROM jobs"
    else
        cat "$SHOAL_TEST_DIR"/controller/shoal.db*
    fi
}

# Drop the test's PostgreSQL database, if it made one.
test_store_drop() {
    [ -s "$SHOAL_TEST_DIR/pg.db" ] || return 0
    psql -q "$SHOAL_TEST_PG_URL" \
        -c "DROP DATABASE IF EXISTS $(cat "$SHOAL_TEST_DIR/pg.db") WITH (FORCE)" \
        >/dev/null 2>&1 || true
    rm -f "$SHOAL_TEST_DIR/pg.db"
}

# Start shoald on a free port. Extra arguments go to shoald.
shoald_start() {
    shoal_tmp_init
    local dir="$SHOAL_TEST_DIR/controller"
    mkdir -p "$dir"
    rm -f "$dir/url"
    local store=() url
    if store_is_pg; then
        url=$(test_store_url) || return 1
        store=(--store "$url")
    fi
    # A restarted controller keeps its port, as a real one would.
    "$SHOALD" --state "$dir" --port "${SHOALD_PORT:-0}" --heartbeat-timeout 3s \
        "${store[@]}" "$@" >>"$SHOAL_TEST_DIR/shoald.log" 2>&1 &
    SHOALD_PID=$!
    record_pid "$SHOALD_PID"
    wait_for 15 test -s "$dir/url"
    # The url file comes when the port is bound; the token once the leader
    # has loaded or initialised the cluster (slower on PostgreSQL).
    wait_for 15 test -s "$dir/admin.token"
    SHOAL_URL=$(cat "$dir/url")
    SHOAL_TOKEN=$(cat "$dir/admin.token")
    SHOALD_PORT=${SHOAL_URL##*:}
    export SHOAL_URL SHOAL_TOKEN SHOALD_PID SHOALD_PORT
    wait_for 15 health_ok
}

shoald_kill9() {
    kill -9 "$SHOALD_PID"
    wait "$SHOALD_PID" 2>/dev/null || true
}

shoald_stop() {
    kill -TERM "$SHOALD_PID"
    wait "$SHOALD_PID" 2>/dev/null || true
}

# Count nodes whose state is up.
nodes_up() {
    curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/nodes" |
        jq '[.nodes[] | select(.state == "up")] | length'
}

nodes_up_is() { [ "$(nodes_up)" = "$1" ]; }

# Start agent NAME with G simulated GPUs of MODEL; extra args to the agent.
# The simgpu config is in $SHOAL_TEST_DIR/NAME/simgpu.json.
agent_start() {
    local name=$1 gpus=${2:-4} model=${3:-H100-80GB}
    shift 3 2>/dev/null || shift $#
    local dir="$SHOAL_TEST_DIR/$name"
    mkdir -p "$dir"
    if [ ! -f "$dir/simgpu.json" ]; then
        echo "{\"count\": $gpus, \"model\": \"$model\", \"uuid_prefix\": \"$name\"}" \
            >"$dir/simgpu.json"
    fi
    local stop=--stop-jobs-on-exit
    [ -n "${AGENT_KEEP_JOBS:-}" ] && stop=
    # Jobs of the test's own account (root in CI) run unless a test sets
    # AGENT_ALLOW_JOB_USER to "" to see the uid rule refuse them.
    local allow=${AGENT_ALLOW_JOB_USER-$(id -un)}
    ${AGENT_PREFIX:-} env SIMGPU_CONFIG="$dir/simgpu.json" "$SHOAL_AGENT" \
        --controller "${AGENT_CONTROLLER:-$SHOAL_URL}" \
        --join-token-file "$SHOAL_TEST_DIR/controller/join.token" \
        --name "$name" --state "$dir" --nvml-lib "$SIMGPU_LIB" \
        --heartbeat 1s $stop --sim-device-dir "$dir/dev" \
        ${allow:+--allow-job-user "$allow"} "$@" \
        >>"$SHOAL_TEST_DIR/$name.log" 2>&1 &
    local pid=$!
    record_pid "$pid"
    eval "AGENT_PID_$(echo "$name" | tr -c 'a-zA-Z0-9\n' _)=$pid"
}

agent_pid() { eval "echo \$AGENT_PID_$(echo "$1" | tr -c 'a-zA-Z0-9\n' _)"; }

# Start a controller and N agents (node1..nodeN) with G GPUs each.
shoal_cluster_start() {
    local n=${1:-1} gpus=${2:-4} model=${3:-H100-80GB}
    shoald_start
    for i in $(seq 1 "$n"); do
        agent_start "node$i" "$gpus" "$model"
    done
    wait_for 20 nodes_up_is "$n"
}

# api METHOD PATH [JSON]: sets $status_code and $body (curl, raw HTTP).
api() {
    local method=$1 path=$2 data=${3:-}
    local out
    if [ -n "$data" ]; then
        out=$(curl -s -w '\n%{http_code}' -X "$method" \
            -H "Authorization: Bearer ${API_TOKEN:-$SHOAL_TOKEN}" \
            -H 'Content-Type: application/json' --data-binary "$data" \
            "$SHOAL_URL$path")
    else
        out=$(curl -s -w '\n%{http_code}' -X "$method" \
            -H "Authorization: Bearer ${API_TOKEN:-$SHOAL_TOKEN}" \
            "$SHOAL_URL$path")
    fi
    status_code=${out##*$'\n'}
    body=${out%$'\n'*}
}

# Submit with the CLI and print the id.
submit() { "$SHOAL_CLI" submit "$@"; }

job_field() {
    curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs/$1" |
        jq -r "$2"
}

# Wait until job ID reaches STATE.
job_state() {
    curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs/$1" |
        jq -r .state
}
job_state_is() { [ "$(job_state "$1")" = "$2" ]; }
wait_job_state() { wait_for "${3:-20}" job_state_is "$1" "$2"; }

# wait_job_reason ID TEXT [TIMEOUT]: until the job's reason holds TEXT.
job_reason_holds() { job_field "$1" .reason | grep -qF -- "$2"; }
wait_job_reason() {
    wait_for "${3:-20}" job_reason_holds "$1" "$2" || {
        echo "job $1 is $(job_state "$1"): $(job_field "$1" .reason)" >&2
        return 1
    }
}

# job_released ID: its nodes have given back what the job held (its
# processes are gone, mounts and GPUs released).
job_released() { [ "$(job_field "$1" .releasing)" = false ]; }

# ended_over_ms_ago ID MS: the job ended more than MS milliseconds ago.
ended_over_ms_ago() {
    local end
    end=$(job_field "$1" .end_ms)
    [ -n "$end" ] && [ "$end" != null ] && [ "$end" -gt 0 ] &&
        [ $(($(date +%s%3N) - end)) -gt "$2" ]
}

# wait_node_heartbeat NODE [TIMEOUT]: until the controller has had a
# heartbeat from NODE stamped in a later second than now, i.e. a whole
# report of the node's runs sent after this call.
node_heartbeat_after() {
    local hb
    hb=$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/nodes" | jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .last_heartbeat // ""')
    [ -n "$hb" ] && [[ "$hb" > "$2" ]]
}
# node_silent_for NODE SECS: the controller's last heartbeat from NODE is
# more than SECS seconds old.
node_silent_for() {
    local hb
    hb=$(curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/nodes" | jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .last_heartbeat // ""')
    [ -n "$hb" ] && [ $(($(date +%s) - $(date -d "$hb" +%s))) -gt "$2" ]
}
wait_node_heartbeat() {
    wait_for "${2:-20}" node_heartbeat_after "$1" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}

shoal_cluster_stop() {
    [ -n "${SHOAL_TEST_DIR:-}" ] || return 0
    local pid
    # Agents first (recorded after the controller), then the controller.
    for pid in $(tac "$SHOAL_TEST_DIR/pids"); do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in $(tac "$SHOAL_TEST_DIR/pids"); do
        local i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
            sleep 0.05
            i=$((i + 1))
        done
        kill -KILL "$pid" 2>/dev/null || true
    done
    test_store_drop
    # Under the sanitizers a report in any daemon's log fails the test,
    # even when the daemon's mistake did not show in what the test checked.
    local reports
    reports=$(grep -rlE 'runtime error:|ERROR: (Address|Leak)Sanitizer' \
        "$SHOAL_TEST_DIR" --include='*.log' 2>/dev/null || true)
    if [ -n "$reports" ]; then
        echo "# sanitizer reports in: $reports" >&3
        grep -hE -A12 'runtime error:|ERROR: (Address|Leak)Sanitizer' \
            $reports | head -60 | sed 's/^/#   /' >&3
        echo "# state and logs kept in $SHOAL_TEST_DIR" >&3
        unset SHOAL_TEST_DIR SHOALD_PORT
        return 1
    fi
    if [ -n "${BATS_TEST_COMPLETED:-}" ]; then
        rm -rf "$SHOAL_TEST_DIR"
    else
        echo "# state and logs kept in $SHOAL_TEST_DIR" >&3
    fi
    unset SHOAL_TEST_DIR SHOALD_PORT
}

# ---- network namespaces: agents on hosts of their own ----
# A bridge in the root namespace with the controller's address, and one
# namespace per agent joined to it by a veth pair, with its own address and
# a default route through the bridge. Needs root and iproute2.

netns_usable() {
    [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null &&
        ip netns add "shoalprobe$$" 2>/dev/null &&
        ip netns del "shoalprobe$$"
}

# netns_setup N: creates shoalN<pid>-<i> namespaces 10.77.X.(10+i), bridge
# 10.77.X.1, where X is derived from the test process so parallel runs do
# not collide. Sets NETNS_BRIDGE_IP and NETNS_PREFIX.
netns_setup() {
    local n=$1
    local tag=$(($$ % 200 + 20))
    NETNS_PREFIX="shn$tag"
    NETNS_BR="shbr$tag"
    NETNS_BRIDGE_IP="10.77.$tag.1"
    NETNS_COUNT=$n
    export NETNS_PREFIX NETNS_BR NETNS_BRIDGE_IP NETNS_COUNT
    # Leftovers of an interrupted run with the same names go first.
    netns_teardown
    NETNS_COUNT=$n
    ip link add "$NETNS_BR" type bridge
    ip addr add "$NETNS_BRIDGE_IP/24" dev "$NETNS_BR"
    ip link set "$NETNS_BR" up
    for i in $(seq 1 "$n"); do
        local ns="$NETNS_PREFIX-$i"
        ip netns add "$ns"
        ip link add "${NETNS_PREFIX}h$i" type veth peer name eth0 netns "$ns"
        ip link set "${NETNS_PREFIX}h$i" master "$NETNS_BR"
        ip link set "${NETNS_PREFIX}h$i" up
        ip -n "$ns" addr add "10.77.$tag.$((10 + i))/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
        ip -n "$ns" route add default via "$NETNS_BRIDGE_IP"
    done
}

netns_ip() { echo "10.77.$(($$ % 200 + 20)).$((10 + $1))"; }

# Cut or restore host i's link (the node "drops off the network").
netns_link() { ip link set "${NETNS_PREFIX}h$1" "$2"; }

netns_teardown() {
    [ -n "${NETNS_PREFIX:-}" ] || return 0
    for i in $(seq 1 "${NETNS_COUNT:-0}"); do
        ip netns del "$NETNS_PREFIX-$i" 2>/dev/null || true
        ip link del "${NETNS_PREFIX}h$i" 2>/dev/null || true
    done
    ip link del "$NETNS_BR" 2>/dev/null || true
    NETNS_COUNT=0
}
