#!/usr/bin/env bash
# Server CPU per query of a pod on the ndots mix, as the manifests configure it and as
# kube-dns did (--no-negcache): negcache_bench.py next to
# this script says what is measured and how. Figures and ratios only; nothing fails on them.
#
# Usage: test/bench/negcache_bench.sh [BIN_DIR]   (BIN_DIR holds kubedns and frontend-cache;
#        default build/bin)
# Environment: LOOKUPS (closed loop, default 10000), PODS (8), SERVICES (10000), DURATION
# (s per dnsperf run, 4), RATES (q/s, 0 = as fast as it goes; "5000 20000 0"), KEEP_TMP=1.
set -euo pipefail

bin_dir=${1:-build/bin}
here=$(cd "$(dirname "$0")" && pwd)
for tool in "$bin_dir/kubedns" "$bin_dir/frontend-cache" /usr/sbin/nsd /usr/bin/python3 \
    /usr/bin/dnsperf /usr/bin/dig; do
  if [[ ! -x $tool ]]; then
    echo "negcache_bench: skipped: $tool is missing"
    exit 0
  fi
done
exec /usr/bin/python3 "$here/negcache_bench.py" "$bin_dir"
