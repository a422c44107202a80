#!/usr/bin/env bash
# The per-client rate limiter's price (issue 16), in two figures:
#   (a) cache-hit CPU per query of frontend-cache on one thread with a limit no client
#       reaches (--client-rate-limit=10000000) against the same binary without one,
#       alternating ROUNDS rounds (frontend_cache_bench.sh's (f) with this build as its own
#       baseline). Shedding's tracking runs in both: it is always on.
#   (b) the limiter's memory at 100,000 distinct clients: frontend-cache's RSS before and
#       after one query from each of 100,000 loopback addresses, and the clients tracked
#       (the table is fixed: 32,768 slots of 64 bytes, allocated at start).
# Figures only; nothing passes or fails on timing.
# Usage: test/bench/client_limit_bench.sh [BIN_DIR]   Environment: ROUNDS (default 4).
set -euo pipefail
bin_dir=${1:-build/bin}
here=$(dirname "$0")

echo "(a) limiter on (a limit no client reaches) / off, cache hits, one thread:"
BASELINE_BIN=$bin_dir COMPARE_ONLY=1 FC_ARGS="--client-rate-limit=10000000" \
  THREAD_ROUNDS=${ROUNDS:-4} DURATION=${DURATION:-6} TWO_THREADS=0 \
  "$here/frontend_cache_bench.sh" "$bin_dir" | sed -n '/frontend-cache \/ the baseline/,$p'

echo "(b) memory at 100,000 distinct clients:"
KDNS_BIN=$bin_dir KDNS_ONLY=hundred_thousand /usr/bin/python3 "$here/../e2e/abuse_rate_test.py" |
  grep -E "clients:|passed"
