# A throwaway PostgreSQL server for the scripts (sourced): a cluster in a
# folder of its own, listening on 127.0.0.1 at a free port and on a unix
# socket in the folder, nowhere else; Debian's `postgresql` package
# installed when missing. initdb refuses root: under root the cluster
# belongs to the `postgres` user (the package makes it).
#
#   pg_start DIR DB   starts it in DIR with the database DB; sets PG_URL (the
#                     owner's URL, password included: never print it),
#                     PG_SHOWN (the same without the password), PG_PORT and
#                     Otava's POSTGRES_* variables
#   pg_psql SQL       runs SQL as the owner through the socket
#   pg_stop           stops it (immediate) and removes DIR
# shellcheck shell=bash

pg_bin() {
	local bin
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
	if [[ -z $bin || ! -x $bin/initdb ]]; then
		"$(dirname "${BASH_SOURCE[0]}")/install-deps.sh" --postgresql >&2
		bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
	fi
	echo "$bin"
}

# as_owner CMD...: CMD as the cluster's owner.
as_owner() {
	if ((EUID == 0)); then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

pg_start() {
	PG_DIR=$1
	local db=$2 password
	PG_BIN=$(pg_bin)
	mkdir -p "$PG_DIR"
	((EUID == 0)) && chown postgres: "$PG_DIR"
	password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
	(umask 077 && printf '%s\n' "$password" >"$PG_DIR/pw")
	((EUID == 0)) && chown postgres: "$PG_DIR/pw"
	as_owner "$PG_BIN/initdb" -D "$PG_DIR/data" -U owner --no-sync -E UTF8 --locale=C \
		--auth-local=trust --auth-host=scram-sha-256 --pwfile="$PG_DIR/pw" >/dev/null
	rm -f "$PG_DIR/pw"
	PG_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -s \
		-o "-p $PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$PG_DIR -c fsync=off" start
	pg_psql "CREATE DATABASE $db" postgres
	PG_URL="postgresql://owner:$password@127.0.0.1:$PG_PORT/$db?sslmode=disable"
	PG_SHOWN="postgresql://owner@127.0.0.1:$PG_PORT/$db"
	export POSTGRES_HOSTNAME=127.0.0.1 POSTGRES_PORT=$PG_PORT POSTGRES_USERNAME=owner \
		POSTGRES_PASSWORD=$password POSTGRES_DATABASE=$db
	PG_DB=$db
}

# pg_psql SQL [DB]
pg_psql() {
	"$PG_BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$PG_DIR" -p "$PG_PORT" -U owner \
		-d "${2:-$PG_DB}" -c "$1"
}

pg_stop() {
	[[ -n ${PG_DIR:-} && -d $PG_DIR/data ]] || return 0
	as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -s stop || true
	rm -rf "$PG_DIR"
}
