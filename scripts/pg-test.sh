#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A throw-away PostgreSQL server for tests and benchmarks: a fresh cluster
# (initdb) in a temporary folder, listening on 127.0.0.1 only on a free port,
# trust authentication for the user "shoal", fsync on. initdb refuses to run
# as root, so the server runs as the "postgres" user (Debian's postgresql
# package makes it), or "nobody".
#   scripts/pg-test.sh start [DIR]   start (DIR: a new temporary folder when
#                                    not given, or an existing one to start
#                                    again on its port); prints DIR and the URL
#                                    as DIR=... and URL=... lines
#   scripts/pg-test.sh url DIR       the URL of the server in DIR
#   scripts/pg-test.sh stop DIR      stop the server, keep DIR
#   scripts/pg-test.sh kill DIR      stop it at once (pg_ctl -m immediate), as
#                                    a crash would: for outage tests
#   scripts/pg-test.sh destroy DIR   stop the server and remove DIR
# The URL names the database "postgres"; tests create their own.
set -euo pipefail

pg_bindir() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
            echo "$d"
            return 0
        fi
    done
    if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
        dirname "$(command -v pg_ctl)"
        return 0
    fi
    echo "pg-test: PostgreSQL server binaries not found (apt-get install postgresql)" >&2
    return 1
}

BIN=$(pg_bindir)
RUNAS=
if [ "$(id -u)" -eq 0 ]; then
    if id postgres >/dev/null 2>&1; then RUNAS=postgres; else RUNAS=nobody; fi
fi

as_owner() {
    if [ -n "$RUNAS" ]; then
        # cd /: the caller's folder may be closed to the server's user.
        (cd / && runuser -u "$RUNAS" -- "$@")
    else
        "$@"
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

url_of() { echo "postgresql://shoal@127.0.0.1:$(cat "$1/port")/postgres"; }

pg_start() {
    local dir=${1:-}
    if [ -z "$dir" ]; then
        dir=$(mktemp -d "${TMPDIR:-/tmp}/shoal-pg.XXXXXX")
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ -n "$RUNAS" ] && chown "$RUNAS" "$dir"
    chmod 700 "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        as_owner "$BIN/initdb" -D "$dir/data" -U shoal -A trust -E UTF8 \
            --locale=C --no-sync >"$dir/initdb.log" 2>&1 || {
            cat "$dir/initdb.log" >&2
            return 1
        }
    fi
    local tries=0
    while :; do
        [ -f "$dir/port" ] || free_port >"$dir/port"
        # fsync and synchronous_commit stay on: commits are durable, as in
        # production, so benchmarks measure the real cost.
        if as_owner "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
            -o "-p $(cat "$dir/port") -c listen_addresses=127.0.0.1 \
                -k $dir -c fsync=on -c synchronous_commit=on \
                -c max_connections=200" start >/dev/null; then
            break
        fi
        tries=$((tries + 1))
        if [ $tries -ge 3 ]; then
            tail -20 "$dir/server.log" >&2
            return 1
        fi
        rm -f "$dir/port" # the port was taken meanwhile: another one
    done
    echo "DIR=$dir"
    echo "URL=$(url_of "$dir")"
}

pg_stop() {
    local dir=$1 mode=$2
    [ -f "$dir/data/postmaster.pid" ] || return 0
    as_owner "$BIN/pg_ctl" -D "$dir/data" -m "$mode" -w -t 30 stop >/dev/null
}

case "${1:-}" in
start) pg_start "${2:-}" ;;
url) url_of "${2:?DIR}" ;;
stop) pg_stop "${2:?DIR}" fast ;;
kill) pg_stop "${2:?DIR}" immediate ;;
destroy)
    dir=${2:?DIR}
    pg_stop "$dir" immediate || true
    # Only what this script made: a folder with a cluster or a port file.
    if [ -f "$dir/port" ] || [ -d "$dir/data" ]; then
        rm -rf "$dir"
    fi
    ;;
*)
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
