#!/usr/bin/env bash
# Builds the gridsched image without pulling anything: the binaries are built on this host with
# its Rust toolchain, then copied with the shared libraries they load (and a small set of
# utilities for jobs run by site agents: sh, sleep, echo, cat, env, true, false) into an image that
# starts `FROM scratch`. Used where the Docker engine has no image registry (CI, air-gapped hosts).
#
#   docker/build-offline.sh [--profile release|debug] [--tag gridsched:local]
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
tag=gridsched:local
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    *) echo "unknown argument: $1 (expected --profile, --tag)" >&2; exit 2 ;;
  esac
done
bins=(meta-scheduler local-scheduler site-agent gridctl gridsim)
flag=(); [ "$profile" = release ] && flag=(--release)
pkgs=(); for b in "${bins[@]}"; do pkgs+=(-p "$b"); done
cargo build "${flag[@]}" "${pkgs[@]}"
dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/$profile

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root="$ctx/rootfs"
mkdir -p "$root/usr/local/bin" "$root/bin" "$root/tmp" "$root/var/lib/gridsched" "$root/etc"
chmod 1777 "$root/tmp"
copy_with_libs() {
  local src="$1" dst="$2"
  cp -L "$src" "$root$dst"
  ldd "$src" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
  done
}
for b in "${bins[@]}"; do copy_with_libs "$dir/$b" "/usr/local/bin/$b"; done
for u in sh sleep echo cat env true false; do
  p=$(command -v "$u") && copy_with_libs "$p" "/bin/$u"
done
echo "gridsched:x:999:999::/var/lib/gridsched:/bin/sh" > "$root/etc/passwd"
echo "gridsched:x:999:" > "$root/etc/group"
chown -R 999:999 "$root/var/lib/gridsched" 2>/dev/null || true
cat > "$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY rootfs/ /
ENV PATH=/usr/local/bin:/bin
USER 999:999
WORKDIR /var/lib/gridsched
VOLUME ["/var/lib/gridsched"]
DOCKERFILE
docker build -q -t "$tag" "$ctx"
echo "built $tag from $dir"
