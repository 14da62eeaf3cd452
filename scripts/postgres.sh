#!/usr/bin/env bash
# Provides a PostgreSQL server for the leaderboard tests on a Debian machine, as
# root: installs Debian's postgresql if missing, starts a cluster listening on
# 127.0.0.1 and its Unix socket, makes a user and a database for the tests, and
# prints their URL on stdout (everything else goes to stderr), so CI can do
#   export ENVGYM_TEST_POSTGRES_URL="$(bash scripts/postgres.sh)"
# Running it again reuses the cluster, user and database.
set -euo pipefail
DB_USER=${ENVGYM_PG_USER:-envgym}
DB_NAME=${ENVGYM_PG_DB:-envgym_test}
DB_PASSWORD=${ENVGYM_PG_PASSWORD:-envgym}
PORT=${ENVGYM_PG_PORT:-5432}
if [ "$(id -u)" != 0 ]; then
    echo "scripts/postgres.sh: needs root (apt-get, and running the server as postgres)" >&2
    exit 1
fi
if ! command -v pg_lsclusters >/dev/null || [ -z "$(ls /usr/lib/postgresql 2>/dev/null)" ]; then
    echo "installing postgresql" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
version=$(ls /usr/lib/postgresql | sort -V | tail -1)
if ! pg_lsclusters -h | awk '{print $1, $2}' | grep -qx "$version main"; then
    echo "creating cluster $version/main" >&2
    pg_createcluster "$version" main --port "$PORT" >&2
fi
# A container has no systemd; pg_ctlcluster starts the server directly.
if ! pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" {print $4}' | grep -qx online; then
    echo "starting PostgreSQL $version (log: /var/log/postgresql/postgresql-$version-main.log)" >&2
    pg_ctlcluster "$version" main start -- -o "-c listen_addresses=127.0.0.1" >&2 \
        || pg_ctlcluster "$version" main start >&2
fi
port=$(pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" {print $3}')
for _ in $(seq 30); do
    pg_isready -q -h 127.0.0.1 -p "$port" && break
    sleep 1
done
pg_isready -q -h 127.0.0.1 -p "$port" || { echo "PostgreSQL did not start" >&2; exit 1; }
psql_() { su postgres -c "psql -p $port -v ON_ERROR_STOP=1 -qtAc \"$1\""; }
if [ "$(psql_ "SELECT 1 FROM pg_roles WHERE rolname = '$DB_USER'")" != 1 ]; then
    psql_ "CREATE ROLE $DB_USER LOGIN PASSWORD '$DB_PASSWORD'" >&2
fi
# envgym/SQL-v0's PostgreSQL engine makes a read-only role per database it loads.
if [ "$(psql_ "SELECT rolcreaterole FROM pg_roles WHERE rolname = '$DB_USER'")" != t ]; then
    psql_ "ALTER ROLE $DB_USER CREATEROLE" >&2
fi
if [ "$(psql_ "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" != 1 ]; then
    psql_ "CREATE DATABASE $DB_NAME OWNER $DB_USER" >&2
fi
echo "PostgreSQL $version on 127.0.0.1:$port, database $DB_NAME" >&2
echo "postgresql+psycopg://$DB_USER:$DB_PASSWORD@127.0.0.1:$port/$DB_NAME"
