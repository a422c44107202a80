#!/usr/bin/env bash
# kill -9 of frontend-cache under load on sockets a parent keeps: queries lost per series
# of kills (the driver is frontend_cache_kill_bench.py next to this script; figures only).
# Usage: test/bench/frontend_cache_kill_bench.sh [BIN_DIR]   (default build/bin)
set -euo pipefail
export KDNS_BIN=${1:-build/bin}
exec /usr/bin/python3 "$(dirname "$0")/frontend_cache_kill_bench.py"
