#!/usr/bin/env bash
# Builds the gridsched image without pulling anything: the binaries are built on this host with
# its Rust toolchain, then copied with the shared libraries they load (and a small set of
# utilities for jobs run by site agents: sh, sleep, echo, cat, env, true, false) into an image that
# starts `FROM scratch`. Used where the Docker engine has no image registry (CI, air-gapped hosts).
#
#   docker/build-offline.sh [--profile release|debug] [--tag gridsched:local]
#   docker/build-offline.sh --gridctl-bin PATH [--tag T]   # no cargo: one gridctl binary serves
#                                                          # every service (`gridctl __serve`)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
tag=gridsched:local
gridctl_bin=
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --gridctl-bin) gridctl_bin="$2"; shift 2 ;;
    *) echo "unknown argument: $1 (expected --profile, --tag, --gridctl-bin)" >&2; exit 2 ;;
  esac
done
bins=(meta-scheduler local-scheduler site-agent gridctl gridsim)
if [ -z "$gridctl_bin" ]; then
  flag=(); [ "$profile" = release ] && flag=(--release)
  pkgs=(); for b in "${bins[@]}"; do pkgs+=(-p "$b"); done
  cargo build "${flag[@]}" "${pkgs[@]}"
  dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/$profile
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root="$ctx/rootfs"
mkdir -p "$root/usr/local/bin" "$root/bin" "$root/tmp" "$root/etc" "$ctx/state/gridsched"
chmod 1777 "$root/tmp"
copy_with_libs() {
  local src="$1" dst="$2"
  cp -L "$src" "$root$dst"
  ldd "$src" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
  done
}
if [ -z "$gridctl_bin" ]; then
  for b in "${bins[@]}"; do copy_with_libs "$dir/$b" "/usr/local/bin/$b"; done
else
  dir=$(dirname "$gridctl_bin")
  copy_with_libs "$gridctl_bin" /usr/local/bin/gridctl
  for b in meta-scheduler local-scheduler site-agent; do
    printf '#!/bin/sh\nexec gridctl __serve %s "$@"\n' "$b" > "$root/usr/local/bin/$b"
    chmod 755 "$root/usr/local/bin/$b"
  done
fi
for u in sh sleep echo cat env true false; do
  p=$(type -P "$u") && copy_with_libs "$p" "/bin/$u"
done
echo "gridsched:x:999:999::/var/lib/gridsched:/bin/sh" > "$root/etc/passwd"
echo "gridsched:x:999:" > "$root/etc/group"
cat > "$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY rootfs/ /
COPY --chown=999:999 state/ /var/lib/
ENV PATH=/usr/local/bin:/bin
USER 999:999
WORKDIR /var/lib/gridsched
VOLUME ["/var/lib/gridsched"]
DOCKERFILE
docker build -q -t "$tag" "$ctx"
echo "built $tag from $dir"
