#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: a site installs Shoal from its Debian packages (issue 31). Builds
# shoal-controller, shoal-agent and shoal-client (make deb), installs them
# with dpkg, checks the installed units with systemd-analyze verify, starts
# shoald and an agent with the exact command lines of their units
# (ExecStart, as the unit's User=; systemd is not PID 1 here), following
# doc/ops.md as far as this machine allows, runs a job, then purges the
# packages: nothing is left but the state the operator keeps.
#
# It installs packages on this machine: it runs only as root, with
# dpkg-buildpackage, when SHOAL_TEST_PACKAGES=1 (make test-packages; CI
# runs it as a step of its own, not in every pass of make test), and never
# where Shoal is installed already.

load lib/cluster

ROOT_DIR="$BATS_TEST_DIRNAME/../.."

# Why this file skips, or "" when it runs.
packages_skip_reason() {
    [ "${SHOAL_TEST_PACKAGES:-}" = 1 ] ||
        { echo "installs packages: make test-packages (SHOAL_TEST_PACKAGES=1)"; return; }
    [ "$(id -u)" = 0 ] || { echo "needs root"; return; }
    command -v dpkg-buildpackage >/dev/null || { echo "needs dpkg-buildpackage"; return; }
    local p
    for p in /etc/shoal /var/lib/shoal /usr/sbin/shoald; do
        [ -e "$p" ] && { echo "Shoal is installed here already ($p)"; return; }
    done
    getent passwd shoal >/dev/null && echo "a user shoal exists already"
    return 0
}

setup_file() {
    [ -z "$(packages_skip_reason)" ] || return 0
    export PKG_DIR="$BATS_FILE_TMPDIR/deb"
    make -C "$ROOT_DIR" deb DEB_BUILD="$PKG_DIR" >"$BATS_FILE_TMPDIR/make-deb.log" 2>&1 || {
        tail -40 "$BATS_FILE_TMPDIR/make-deb.log" >&3
        return 1
    }
}

setup() {
    local why
    why=$(packages_skip_reason)
    [ -z "$why" ] || skip "$why"
    PKG_INSTALLED=1
}

teardown() {
    [ -n "${PKG_INSTALLED:-}" ] || return 0
    local pid
    for pid in ${PKG_PIDS:-}; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in ${PKG_PIDS:-}; do
        wait_for 15 sh -c "! kill -0 $pid" || kill -KILL "$pid" 2>/dev/null || true
    done
    dpkg --purge shoal-client shoal-agent shoal-controller >/dev/null 2>&1 || true
    rm -rf /var/lib/shoal /run/shoal-pkgtest /etc/shoal
    getent passwd shoal >/dev/null && userdel shoal 2>/dev/null || true
    getent group shoal >/dev/null && groupdel shoal 2>/dev/null || true
}

# The command line of a unit: ExecStart of the installed file.
exec_start() { sed -n 's/^ExecStart=//p' "/lib/systemd/system/$1"; }
unit_value() { sed -n "s/^$2=//p" "/lib/systemd/system/$1"; }

@test "pkg-001 install, run a job with the units' command lines, purge" {
    # doc/ops.md, "Install": the packages.
    run dpkg -i "$PKG_DIR"/shoal-controller_*.deb "$PKG_DIR"/shoal-agent_*.deb \
        "$PKG_DIR"/shoal-client_*.deb
    echo "$output"
    [ "$status" -eq 0 ]
    getent passwd shoal
    [ -x /usr/sbin/shoald ] && [ -x /usr/sbin/shoal-agent ] && [ -x /usr/bin/shoal ]
    [ -f /etc/shoal/shoald.conf ] && [ -f /etc/shoal/agent.conf ]
    [ -f /usr/share/bash-completion/completions/shoal ]
    man -w shoald shoal-agent shoal >/dev/null
    run systemd-analyze verify /lib/systemd/system/shoald.service /lib/systemd/system/shoal-agent.service
    echo "$output"
    [ "$status" -eq 0 ]
    [ -z "$output" ]

    # "The controller": its configuration, checked, then the service (here
    # its command line as its user, in the state folder systemd would make).
    cat >>/etc/shoal/shoald.conf <<CONF
listen = 127.0.0.1
port = 0
admin-user = root
keep-output = 30d
keep-history = 365d
CONF
    /usr/sbin/shoald --config /etc/shoal/shoald.conf --check-config
    [ "$(unit_value shoald.service User)" = shoal ]
    [ "$(unit_value shoald.service StateDirectory)" = shoal/controller ]
    install -d -o shoal -g shoal -m 700 /var/lib/shoal/controller
    # shellcheck disable=SC2046
    runuser -u shoal -- $(exec_start shoald.service) >"$BATS_TEST_TMPDIR/shoald.log" 2>&1 &
    PKG_PIDS="$!"
    wait_for 20 test -s /var/lib/shoal/controller/admin.token
    export SHOAL_URL SHOAL_TOKEN
    SHOAL_URL=$(cat /var/lib/shoal/controller/url)
    SHOAL_TOKEN=$(cat /var/lib/shoal/controller/admin.token)
    wait_for 15 health_ok

    # "The agents": the join token, the agent's configuration, the service.
    install -m 600 /var/lib/shoal/controller/join.token /etc/shoal/join.token
    mkdir -p /run/shoal-pkgtest/dev
    echo '{"count": 2, "model": "H100-80GB", "uuid_prefix": "pkg"}' >/run/shoal-pkgtest/simgpu.json
    cat >>/etc/shoal/agent.conf <<CONF
controller = $SHOAL_URL
join-token-file = /etc/shoal/join.token
name = pkgnode
heartbeat = 1s
allow-job-user = root
stop-jobs-on-exit = true
nvml-lib = /usr/lib/shoal/libsimgpu.so
sim-device-dir = /run/shoal-pkgtest/dev
CONF
    /usr/sbin/shoal-agent --config /etc/shoal/agent.conf --check-config
    [ -z "$(unit_value shoal-agent.service User)" ]
    install -d -m 711 /var/lib/shoal/agent
    # shellcheck disable=SC2046
    SIMGPU_CONFIG=/run/shoal-pkgtest/simgpu.json $(exec_start shoal-agent.service) \
        >"$BATS_TEST_TMPDIR/agent.log" 2>&1 &
    PKG_PIDS="$! $PKG_PIDS"
    wait_for 20 sh -c "/usr/bin/shoal nodes | grep -q 'pkgnode.*up'"

    # "Check": a job runs, with the installed client.
    id=$(/usr/bin/shoal submit --gpus 1 -- echo packaged-hello)
    wait_for 30 sh -c "/usr/bin/shoal show $id --json | grep -q '\"state\": \"completed\"'"
    wait_for 10 sh -c "/usr/bin/shoal logs $id | grep -q packaged-hello"
    # "Backups".
    /usr/bin/shoal admin backup /var/lib/shoal/controller/backup-test.db
    [ -s /var/lib/shoal/controller/backup-test.db.key ]

    # Stop the services as systemd would (SIGTERM), then purge.
    for pid in $PKG_PIDS; do kill -TERM "$pid"; done
    for pid in $PKG_PIDS; do wait_for 15 sh -c "! kill -0 $pid"; done
    PKG_PIDS=
    run dpkg --purge shoal-client shoal-agent shoal-controller
    echo "$output"
    [ "$status" -eq 0 ]
    for p in /usr/sbin/shoald /usr/sbin/shoal-agent /usr/sbin/shoal-nfs-fuse \
        /usr/bin/shoal /usr/bin/shoal-sim /usr/lib/shoal /etc/shoal \
        /lib/systemd/system/shoald.service /lib/systemd/system/shoal-agent.service \
        /usr/share/man/man8/shoald.8.gz /usr/share/bash-completion/completions/shoal \
        /usr/share/doc/shoal-controller; do
        [ ! -e "$p" ] || {
            echo "left behind: $p"
            return 1
        }
    done
    [ -z "$(dpkg -l 'shoal-*' 2>/dev/null | grep '^[a-z][a-z] ')" ]
    # The operator's state stays: the store, its key, the tokens.
    [ -s /var/lib/shoal/controller/shoal.db ]
    [ -s /var/lib/shoal/controller/secrets.key ]
}
