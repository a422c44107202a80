#!/usr/bin/env bash
# The objects-file scale benchmark (kubedns_scale_bench.py): the "5000-node profile"
# (10k Services / 150k endpoints) and 100k / 1M, memory beside DESIGN section 9's targets.
# KDNS_SCALE_LARGE=0 skips the 1M workload. Prints figures; never fails on them.
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/kubedns_scale_bench.py" "$1"
