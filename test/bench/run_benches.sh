#!/usr/bin/env bash
# Runs every benchmark: the binaries in $1 and the test/bench/*_bench.sh scripts (which get
# the binary directory as their argument). Benchmarks print figures and ratios; none of
# them pass or fail on timing. scaling_bench.sh takes many minutes and has its own target
# (`make bench-scaling`): skipped here.
set -euo pipefail
bin=$1
for bench in "$bin"/*_bench; do
  [[ -x $bench ]] || continue
  echo "== $(basename "$bench")"
  "$bench"
done
for script in "$(dirname "$0")"/*_bench.sh; do
  [[ -x $script && $(basename "$script") != scaling_bench.sh ]] || continue
  echo "== $(basename "$script")"
  "$script" "$bin"
done
