#!/usr/bin/env bash
# A Python with gRPC for gridsched's client tests and demos: a virtual environment (default
# target/python, or $1) with grpcio and grpcio-tools from PyPI, made once and reused. Installs
# Debian's python3-venv when venv is missing. The last line printed is the environment's
# python, e.g. as GRIDSCHED_TEST_PYTHON for the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-target/python}"
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if [ ! -x "$dir/bin/python" ]; then
    if ! python3 -m venv --help >/dev/null 2>&1; then
        echo "== installing python3-venv" >&2
        as_root apt-get update -qq >&2 || true
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends \
            python3-venv >&2
    fi
    python3 -m venv "$dir" >&2
fi
if ! "$dir/bin/python" -c "import grpc, grpc_tools" >/dev/null 2>&1; then
    echo "== installing grpcio and grpcio-tools into $dir" >&2
    "$dir/bin/python" -m pip install -q --disable-pip-version-check \
        "grpcio>=1.60,<2" "grpcio-tools>=1.60,<2" >&2
fi
echo "$(cd "$dir" && pwd)/bin/python"
