#!/usr/bin/env bash
# Starts a PostgreSQL server for gridsched's tests and demos from Debian's packages: installs
# `postgresql` when it is missing, starts the first cluster (creating one if there is none),
# and makes sure of a role `gridsched` (password `gridsched`, allowed to create databases) with
# a database of its own. The last line printed is the URL to use, e.g. as
# `[store] url` of meta.toml or as GRIDSCHED_TEST_POSTGRES for the tests.
set -euo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
as_postgres() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi
}

if ! command -v pg_lsclusters >/dev/null 2>&1; then
    echo "== installing postgresql" >&2
    as_root apt-get update -qq >&2 || true
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends \
        postgresql >&2
fi

if [ -z "$(pg_lsclusters -h)" ]; then
    version=$(ls /usr/lib/postgresql | sort -n | tail -1)
    as_root pg_createcluster "$version" main >&2
fi
read -r version cluster port status _ <<<"$(pg_lsclusters -h | head -1)"
if [ "$status" != "online" ]; then
    as_root pg_ctlcluster "$version" "$cluster" start >&2
fi

as_postgres psql -q -p "$port" -v ON_ERROR_STOP=1 >&2 <<'SQL'
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gridsched') THEN
        CREATE ROLE gridsched LOGIN CREATEDB PASSWORD 'gridsched';
    END IF;
END $$;
SQL
if ! as_postgres psql -p "$port" -tAc "SELECT 1 FROM pg_database WHERE datname = 'gridsched'" \
    | grep -q 1; then
    as_postgres createdb -p "$port" -O gridsched gridsched >&2
fi
echo "postgres://gridsched:gridsched@127.0.0.1:$port/gridsched"
