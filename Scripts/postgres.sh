#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests and benchmarks of OrchestraPostgres: a new cluster
# in a temporary folder, listening on 127.0.0.1 only, on a free port, with a password.
#
#   eval "$(Scripts/postgres.sh start)"   # installs the server if missing, starts a cluster, and
#                                         # prints: export ORCHESTRA_POSTGRES_URL=postgres://…
#                                         #         export ORCHESTRA_POSTGRES_DIR=/tmp/…
#   swift test --filter Postgres          # the tests that need it read ORCHESTRA_POSTGRES_URL
#   Scripts/postgres.sh restart           # stops and starts the same cluster (the fault tests)
#   Scripts/postgres.sh halt / resume     # stops the server, keeping the cluster / starts it again
#   Scripts/postgres.sh stop              # stops it and removes its folder
#
# ORCHESTRA_POSTGRES_MAX_CONNECTIONS=N at start sets the server's max_connections (default 200;
# the connection-budget tests start a cluster that takes fewer connections than they open).
# ORCHESTRA_POSTGRES_TLS_CERT=FILE and ORCHESTRA_POSTGRES_TLS_KEY=FILE (PEM) at start turn TLS on
# with that certificate (the sslmode tests: a server whose certificate a private CA signed).
#
# initdb refuses to run as root: as root, the cluster belongs to the `postgres` system user the
# Debian package creates. Everything it prints for `eval` goes to stdout; progress to stderr.
set -euo pipefail

command=${1:-start}
dir=${ORCHESTRA_POSTGRES_DIR:-}

find_bin() {
    local found
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    if [[ -z $found ]] && command -v initdb > /dev/null; then found=$(dirname "$(command -v initdb)"); fi
    echo "$found"
}

as_owner() {
    if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

bin=$(find_bin)
if [[ -z $bin && $command == start ]]; then
    echo "postgres.sh: installing the PostgreSQL server (Debian package postgresql)" >&2
    if [[ $(id -u) == 0 ]]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql > /dev/null
    else
        sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql > /dev/null
    fi
    bin=$(find_bin)
fi
[[ -n $bin ]] || { echo "postgres.sh: no PostgreSQL server (initdb) found" >&2; exit 1; }

case $command in
start)
    dir=$(mktemp -d /tmp/orchestra-postgres.XXXXXX)
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    password=orchestra-test
    echo "$password" > "$dir/password"
    if [[ $(id -u) == 0 ]]; then chown -R postgres "$dir"; fi
    as_owner "$bin/initdb" -D "$dir/data" -U orchestra --pwfile="$dir/password" -A scram-sha-256 \
        -E UTF8 --no-locale > "$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    cat >> "$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = ${ORCHESTRA_POSTGRES_MAX_CONNECTIONS:-200}
fsync = off
full_page_writes = off
CONF
    if [[ -n ${ORCHESTRA_POSTGRES_TLS_CERT:-} ]]; then
        cp "$ORCHESTRA_POSTGRES_TLS_CERT" "$dir/data/server.crt"
        cp "$ORCHESTRA_POSTGRES_TLS_KEY" "$dir/data/server.key"
        chmod 600 "$dir/data/server.key"
        if [[ $(id -u) == 0 ]]; then chown postgres "$dir/data/server.crt" "$dir/data/server.key"; fi
        echo "ssl = on" >> "$dir/data/postgresql.conf"
    fi
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start > /dev/null \
        || { cat "$dir/server.log" >&2; exit 1; }
    echo "postgres.sh: PostgreSQL on 127.0.0.1:$port, cluster in $dir" >&2
    echo "export ORCHESTRA_POSTGRES_URL=postgres://orchestra:$password@127.0.0.1:$port/postgres"
    echo "export ORCHESTRA_POSTGRES_DIR=$dir"
    ;;
restart)
    [[ -n $dir ]] || { echo "postgres.sh: ORCHESTRA_POSTGRES_DIR is not set" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 60 restart -l "$dir/server.log" > /dev/null
    ;;
halt)
    # The server stops (as in a crash); the cluster stays, for `resume` (the outage tests).
    [[ -n $dir ]] || { echo "postgres.sh: ORCHESTRA_POSTGRES_DIR is not set" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 60 stop > /dev/null
    ;;
resume)
    [[ -n $dir ]] || { echo "postgres.sh: ORCHESTRA_POSTGRES_DIR is not set" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start > /dev/null
    ;;
stop)
    [[ -n $dir ]] || { echo "postgres.sh: ORCHESTRA_POSTGRES_DIR is not set" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop > /dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
*)
    echo "usage: Scripts/postgres.sh start|restart|halt|resume|stop" >&2
    exit 2
    ;;
esac
