#!/usr/bin/env bash
# Interoperability: the kit's exports run in LogGOPSim and SimGrid, and agree with the kit
# (tests/flashkit/interop.rs). Installs what is missing with apt (CI runs as root), builds LogGOPSim
# from ../shared/peers/loggopsim, then runs the test. Never skips: a missing tool fails.
set -euo pipefail
cd "$(dirname "$0")/.."
peers=../shared/peers/loggopsim
if [ ! -f "$peers/build.sh" ]; then
    echo "interop: $peers/build.sh not found (CI clones the repository beside shared/)" >&2
    exit 1
fi

need=()
for tool in g++ gengetopt re2c; do
    command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
dpkg -s libgraphviz-dev >/dev/null 2>&1 || need+=(libgraphviz-dev)
# Debian's python3-simgrid is for Debian's Python, whatever python3 is first on PATH.
python=/usr/bin/python3
"$python" -c 'import simgrid' >/dev/null 2>&1 || need+=(python3-simgrid)
if [ "${#need[@]}" -gt 0 ]; then
    echo "interop: installing ${need[*]}"
    if [ "$(id -u)" != 0 ]; then
        echo "interop: ${need[*]} missing, and only root may install them" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

bin=target/loggopsim
bash "$peers/build.sh" "$bin"
FLASHKIT_INTEROP=1 FLASHKIT_LOGGOPSIM="$bin" FLASHKIT_PYTHON="$python" \
    cargo test --release --test flashkit interop:: -- --nocapture --test-threads=1
