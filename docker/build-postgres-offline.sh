#!/usr/bin/env bash
# Builds a PostgreSQL image without pulling anything, for the replicated compose grid
# (docker/replicas.yml): the server of this host's Debian packages (installed by
# scripts/postgres.sh when missing) with the shared libraries it loads, its share and library
# directories and the time zones, in an image that starts `FROM scratch`.
#
# On first start the entry point creates the cluster in the volume (superuser POSTGRES_USER with
# POSTGRES_PASSWORD, database POSTGRES_DB, locale C, UTF-8), listening on every interface with
# password (SCRAM) authentication; later starts use it as it is.
#
#   docker/build-postgres-offline.sh [--tag gridsched-postgres:local]
set -euo pipefail
cd "$(dirname "$0")/.."
tag=gridsched-postgres:local
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="$2"; shift 2 ;;
    *) echo "unknown argument: $1 (expected --tag)" >&2; exit 2 ;;
  esac
done
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  bash scripts/postgres.sh >/dev/null
fi
ver=$(ls /usr/lib/postgresql | sort -V | tail -1)
pg=/usr/lib/postgresql/$ver

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root="$ctx/rootfs"
mkdir -p "$root/bin" "$root/tmp" "$root/etc" "$root/usr/share" "$root/usr/local/bin" \
  "$ctx/state/postgresql"
chmod 1777 "$root/tmp"
copy_libs() {
  { ldd "$1" 2>/dev/null || true; } | { grep -o '/[^ ]*' || true; } | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
  done
}
mkdir -p "$root$pg/bin"
for b in postgres initdb pg_isready; do
  cp -L "$pg/bin/$b" "$root$pg/bin/$b"
  copy_libs "$pg/bin/$b"
done
# Without the JIT provider (and LLVM, most of the size): PostgreSQL runs without JIT.
cp -a "$pg/lib" "$root$pg/lib"
rm -rf "$root$pg/lib/llvmjit"* "$root$pg/lib/bitcode"
for so in "$root$pg"/lib/*.so; do copy_libs "$so"; done
cp -a "/usr/share/postgresql" "$root/usr/share/postgresql"
cp -a /usr/share/zoneinfo "$root/usr/share/zoneinfo"
for u in sh cat echo rm; do
  p=$(type -P "$u") && cp -L "$p" "$root/bin/$u" && copy_libs "$p"
done
echo "postgres:x:999:999::/var/lib/postgresql:/bin/sh" > "$root/etc/passwd"
echo "postgres:x:999:" > "$root/etc/group"
cat > "$root/usr/local/bin/entrypoint" <<ENTRYPOINT
#!/bin/sh
set -e
export PATH=$pg/bin:/bin
data=/var/lib/postgresql/data
if [ ! -s "\$data/PG_VERSION" ]; then
  echo "\${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is needed}" > /tmp/pw
  initdb -D "\$data" -U "\${POSTGRES_USER:-postgres}" --pwfile=/tmp/pw --auth-local=trust \\
    --auth-host=scram-sha-256 --encoding=UTF8 --locale=C >/dev/null
  rm -f /tmp/pw
  echo "listen_addresses = '*'" >> "\$data/postgresql.conf"
  echo "unix_socket_directories = '/tmp'" >> "\$data/postgresql.conf"
  echo "host all all 0.0.0.0/0 scram-sha-256" >> "\$data/pg_hba.conf"
  if [ -n "\${POSTGRES_DB:-}" ]; then
    echo "CREATE DATABASE \$POSTGRES_DB" | postgres --single -D "\$data" postgres >/dev/null
  fi
fi
exec postgres -D "\$data"
ENTRYPOINT
chmod 755 "$root/usr/local/bin/entrypoint"
cat > "$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
COPY --chown=999:999 state/ /var/lib/
ENV PATH=$pg/bin:/bin
USER 999:999
WORKDIR /var/lib/postgresql
VOLUME ["/var/lib/postgresql"]
ENTRYPOINT ["/usr/local/bin/entrypoint"]
DOCKERFILE
docker build -q -t "$tag" "$ctx"
echo "built $tag from PostgreSQL $ver"
