#!/usr/bin/env bash
# Runs every benchmark binary in $1. Benchmarks print figures and ratios; none of them pass
# or fail on timing.
set -euo pipefail
bin=$1
for bench in "$bin"/*_bench; do
  [[ -x $bench ]] || continue
  echo "== $(basename "$bench")"
  "$bench"
done
