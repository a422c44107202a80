#!/usr/bin/env bash
# Memory per DNS thread: idle RSS of frontend-cache and kubedns at 1, 2, 16 and 64 threads
# and MiB per thread (thread_memory_bench.py says how). Prints figures; never fails on them.
#
# Usage: test/bench/thread_memory_bench.sh [BIN_DIR]   (default build/bin)
# Environment: KDNS_THREAD_COUNTS (default "1 2 16 64").
set -euo pipefail

bin_dir=${1:-build/bin}
for tool in "$bin_dir/kubedns" "$bin_dir/frontend-cache" /usr/bin/python3; do
  if [[ ! -x $tool ]]; then
    echo "thread_memory_bench: skipped: $tool is missing"
    exit 0
  fi
done
exec /usr/bin/python3 "$(dirname "$0")/thread_memory_bench.py" "$bin_dir"
