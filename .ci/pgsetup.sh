#!/usr/bin/env bash
# Starts the machine's PostgreSQL cluster and makes the role and database the
# store tests use. Idempotent: every step checks before it acts, so .ci/run can
# source or call it on every run. Prints the DATABASE_URL export line last.
set -euo pipefail

pg_version=${PG_VERSION:-15}
pg_cluster=${PG_CLUSTER:-main}
pg_role=${PG_ROLE:-mcpconform}
pg_password=${PG_PASSWORD:-mcpconform}
pg_db=${PG_DB:-mcpconform}

# The cluster's peer-authenticated superuser does the setup; TCP logins then
# use the password.
as_postgres() {
	if [ "$(id -un)" = postgres ]; then
		"$@"
	elif [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		sudo -n -u postgres -- "$@"
	fi
}

status=$(pg_lsclusters --no-header | awk -v v="$pg_version" -v c="$pg_cluster" '$1 == v && $2 == c { print $4 }')
if [ -z "$status" ]; then
	echo "pgsetup: no PostgreSQL cluster $pg_version/$pg_cluster on this machine" >&2
	false
fi
if [ "$status" != online ]; then
	pg_ctlcluster "$pg_version" "$pg_cluster" start
fi
pg_port=$(pg_lsclusters --no-header | awk -v v="$pg_version" -v c="$pg_cluster" '$1 == v && $2 == c { print $3 }')

wait_ready() {
	for _ in $(seq 1 30); do
		if pg_isready -q -h 127.0.0.1 -p "$pg_port"; then
			break
		fi
		sleep 1
	done
	pg_isready -h 127.0.0.1 -p "$pg_port" >/dev/null
}
wait_ready

psql_pg() { as_postgres psql -X -q -v ON_ERROR_STOP=1 -p "$pg_port" -d postgres "$@"; }

# make test runs its packages side by side, and each gateway they start
# keeps a pool of up to 16 connections (two processes a target): the
# default 100 can run out ("too many clients already"). The setting takes a
# restart, made only when it is below the wanted value.
max_conns=${PG_MAX_CONNECTIONS:-400}
if [ "$(psql_pg -tAc "SHOW max_connections")" -lt "$max_conns" ]; then
	psql_pg -c "ALTER SYSTEM SET max_connections = $max_conns"
	pg_ctlcluster "$pg_version" "$pg_cluster" restart
	wait_ready
fi

if [ "$(psql_pg -tAc "SELECT 1 FROM pg_roles WHERE rolname = '$pg_role'")" != 1 ]; then
	psql_pg -c "CREATE ROLE \"$pg_role\" LOGIN SUPERUSER PASSWORD '$pg_password'"
else
	# Re-set the password so a role left by an older run still logs in.
	psql_pg -c "ALTER ROLE \"$pg_role\" LOGIN SUPERUSER PASSWORD '$pg_password'"
fi
if [ "$(psql_pg -tAc "SELECT 1 FROM pg_database WHERE datname = '$pg_db'")" != 1 ]; then
	as_postgres createdb -p "$pg_port" -O "$pg_role" "$pg_db"
fi

export DATABASE_URL="postgres://$pg_role:$pg_password@127.0.0.1:$pg_port/$pg_db?sslmode=disable"
echo "export DATABASE_URL=$DATABASE_URL"
