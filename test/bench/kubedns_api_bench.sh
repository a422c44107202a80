#!/usr/bin/env bash
# kubedns following the fake Kubernetes API server (test/fake_apiserver), at the sizes the
# issue names: 10k services / 100k endpoints and 100k services / 1M endpoints.
#
# For each size, the fake generates the cluster inside itself before kubedns starts (~20%
# headless services, ~10 endpoints each, at most 100 per EndpointSlice), and the driver
# (kubedns_api_bench.py next to this script, with kubedns_api_bench_lib.py) measures:
#   sync        exec of kubedns to the first 200 of /readiness (polled every 10 ms), LIST in
#               pages of 500 (kubedns's fixed page size, checked in the fake's request log);
#               peak RSS (VmHWM) after it, per endpoint; CPU of kubedns and of the fake, and
#               how long the fake alone takes to serve the same pages (walked first).
#   latency     while the fake's churn generator rewrites CHURN_RATE endpoint addresses per
#               second (PROBE_RATE of them on PROBES one-endpoint probe services), the time
#               from each probe write in the fake to the first UDP answer with the new address:
#               p50, p99, max; and the fake's own share, from a plain watch client.
#   throughput  dnsperf for DURATION s idle, then during the same churn: queries/s and the
#               ratio, and kubedns CPU per answered query (DNS thread, all threads) with its
#               ratio, which is what the rate would do if kubedns rather than dnsperf or the
#               fake (on 2 cores they all share the CPUs) were the limit.
#   re-LIST     VmHWM reset at steady state (clear_refs), the fake restarts (410 for every
#               watch), VmHWM once kubedns has listed both resources again, relative to the
#               steady VmRSS; two names asked every 5 ms meanwhile, failures counted.
# The issue's targets are printed beside the figures (sync of 10k/100k <= 2 s, churn
# throughput >= 90% of idle, event-to-answer p99 <= 50 ms, initial sync and re-LIST peaks
# <= 1.2 x steady; the sync line also gives the fake's etcd and watch-cache reads).
# Figures only: timings never fail this script; it exits non-zero only when something is
# broken (the fake or kubedns does not start, kubedns never syncs).
#
# Usage: test/bench/kubedns_api_bench.sh [BIN_DIR]   (BIN_DIR holds kubedns; default build/bin)
# Environment: SIZES (services[:endpoints] or a named workload, comma or space separated;
#              default "10000:100000 100000:1000000"; "5000node" is the Kubernetes 5,000-node
#              test's: 10,000 services in 100 namespaces, 15 endpoints each, every 10th
#              headless), DURATION (s per measured phase, default 10),
#              CHURN_RATE (endpoint changes/s, default 1000), PROBE_RATE (of those, on probe
#              services; default 100), PROBES (default 10), CLIENTS (dnsperf -c, default 4),
#              DNS_THREADS (kubedns --dns-threads, default 1), POLL_SLEEP_MS (pause between
#              rounds of probe queries, default 0.5), WATCH_OBSERVER (0: no plain watch
#              client), SYNC_TIMEOUT (s, default 300), KEEP_TMP=1.
set -euo pipefail

bin_dir=${1:-build/bin}
here=$(cd "$(dirname "$0")" && pwd)

for tool in "$bin_dir/kubedns" /usr/bin/dnsperf /usr/bin/python3 /usr/bin/openssl; do
  if [[ ! -x $tool ]]; then
    echo "kubedns_api_bench: skipped: $tool is missing"
    exit 0
  fi
done

# The driver starts the fake, kubedns and dnsperf, and stops them and removes its temporary
# directory however it ends (SIGTERM, SIGINT and SIGHUP included). This trap passes a
# signal sent to this script on to it.
driver=
cleanup() {
  if [[ -n $driver ]] && kill -0 "$driver" 2>/dev/null; then
    kill -TERM "$driver" 2>/dev/null || true
    wait "$driver" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

/usr/bin/python3 "$here/kubedns_api_bench.py" "$bin_dir" &
driver=$!
status=0
wait "$driver" || status=$?
driver=
exit "$status"
