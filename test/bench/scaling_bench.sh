#!/usr/bin/env bash
# Scaling with serving threads (issue 32): kubedns and frontend-cache at 1, 2, 4, 8 and 16
# serving threads, each at saturation, queries/s and the ratio to one thread's.
#
# The set-up of the issue's table: kubedns serves a generated cluster from --objects-file
# (SERVICES Services in 100 namespaces, one EndpointSlice of ENDPOINTS ready endpoints each:
# 10k / 150k by default, kubedns_scale_bench.py's "5000-node profile") and is asked A of
# every Service name; frontend-cache is asked A of HIT_NAMES (1,286) of those names, all in
# its cache (warmed first from a fixed-answer upstream, dnsload_bench --serve). The server
# with N threads is pinned to cores 0..N-1 (taskset, the whole process), dnsperf with
# CLIENT_THREADS threads (default: half the cores) to the upper half of the cores, so on a
# 16-core machine the servers up to 8 threads never share a core with the client. Thread
# counts above the cores are skipped; where the server's cores reach into the client's half
# (16 threads on 16 cores, 2 on 2), the line says "shared" and its q/s is the machine's, not
# the server's.
#
# Per run: queries/s (dnsperf), the ratio to the same server's one-thread run, server CPU
# per query (utime+stime of the process, /proc/PID/stat) and its cores' worth of CPU, and
# the per-thread accounting (/proc/PID/task/*/stat): the CPU by thread name (dns: the
# loops, dns-receiver: the UDP receiver threads) and the busiest receiver's share of all
# receivers' (1/N when the load is spread evenly). From three threads on, each thread has
# a SO_REUSEPORT socket of its own (server::DnsServer, "Sockets") and the kernel spreads
# clients over them by a hash of their address and port: dnsperf sends from CLIENTS
# sockets in turn, so use many (the default: 16 per client thread), or a few threads get
# most of the load. On a machine with fewer cores than threads asked for, the per-thread
# accounting is the method: with RATE set (dnsperf -Q), every thread count gets the same
# offered load, and CPU per query at N threads against one says what the threads cost each
# other (shared cache lines, locks), which saturated q/s on 2 cores cannot show.
#
# Figures only: nothing here passes or fails on timing. Not in `make bench`'s list (it
# takes minutes); `make bench-scaling` runs it.
#
# Usage: test/bench/scaling_bench.sh [BIN_DIR]   (kubedns, frontend-cache, dnsload_bench;
#        default build/bin)
# Environment: THREADS (default "1 2 4 8 16", those above the core count skipped),
#   SERVERS (default "kubedns frontend-cache"), DURATION (s per run, default 10),
#   RATE (dnsperf -Q per run; default none: saturated), CLIENT_THREADS (dnsperf -T, default
#   half the cores, at least 1), CLIENTS (dnsperf -c, default 16 per client thread),
#   OUTSTANDING (dnsperf -q, default 200 per client thread), SERVICES (default 10000),
#   ENDPOINTS (per Service, default 15), HIT_NAMES (default 1286), ROUNDS (default 1: each
#   server and thread count once; more alternate and every run is printed), KEEP_TMP=1.
set -euo pipefail

bin_dir=${1:-build/bin}
read -ra servers <<<"${SERVERS:-kubedns frontend-cache}"
duration=${DURATION:-10}
rate=${RATE:-}
cpus=$(nproc)
client_threads=${CLIENT_THREADS:-$((cpus / 2 > 1 ? cpus / 2 : 1))}
clients=${CLIENTS:-$((client_threads * 16))}
outstanding=${OUTSTANDING:-$((client_threads * 200))}
services=${SERVICES:-10000}
endpoints=${ENDPOINTS:-15}
hit_names=${HIT_NAMES:-1286}
rounds=${ROUNDS:-1}
threads_list=()
for n in ${THREADS:-1 2 4 8 16}; do
  ((n <= cpus)) && threads_list+=("$n")
done

for tool in "$bin_dir/kubedns" "$bin_dir/frontend-cache" "$bin_dir/dnsload_bench" \
  /usr/bin/dnsperf /usr/bin/taskset /usr/bin/python3 /usr/bin/curl /usr/bin/dig; do
  if [[ ! -x $tool ]]; then
    echo "scaling_bench: skipped: $tool is missing"
    exit 0
  fi
done

# shellcheck source=test/bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
bench_start scaling-bench

# The client's cores: the upper half (the last core on one- and two-core machines).
client_first=$((cpus / 2 < cpus - 1 ? cpus / 2 : cpus - 1))
client_cpus=$client_first-$((cpus - 1))
client_pin=(/usr/bin/taskset -c "$client_cpus")
server_cpus() { echo "0-$(($1 - 1))"; }

# --- the cluster and the queries --------------------------------------------------------------
/usr/bin/python3 - "$(dirname "$0")" "$tmp" "$services" "$endpoints" "$hit_names" <<'PY'
import random, sys
sys.path.insert(0, sys.argv[1])
from kubedns_scale_bench import write_objects  # noqa: E402

out, services, endpoints, hits = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
write_objects(out + "/objects.json", services, 100, endpoints)
names = ["svc-%d.ns-%d.svc.cluster.local." % (i, i % 100) for i in range(services)]
rng = random.Random(1)
rng.shuffle(names)
with open(out + "/kubedns.txt", "w") as f:
    f.writelines("%s A\n" % n for n in names)
with open(out + "/hits.txt", "w") as f:
    f.writelines("%s A\n" % n for n in names[:hits])
PY

start_fixed_upstream scaling_bench "$bin_dir/dnsload_bench" "${client_pin[@]}"

# --- the servers --------------------------------------------------------------------------------
# start_server KIND THREADS: starts it pinned to cores 0..THREADS-1, sets server_pid and
# server_port; false when it does not answer.
start_server() {
  local kind=$1 threads=$2 healthz metrics log=$tmp/$1-$2.log
  read -r server_port healthz metrics < <(free_port 3)
  case $kind in
    kubedns)
      /usr/bin/taskset -c "$(server_cpus "$threads")" "$bin_dir/kubedns" \
        --objects-file="$tmp/objects.json" --dns-bind-address=127.0.0.1 --dns-port="$server_port" \
        --healthz-port="$healthz" --metrics-port="$metrics" --http-bind-address=127.0.0.1 \
        --dns-threads="$threads" --domain=cluster.local. --logtostderr >"$log" 2>&1 &
      ;;
    frontend-cache)
      /usr/bin/taskset -c "$(server_cpus "$threads")" "$bin_dir/frontend-cache" -k --no-resolv \
        --listen-address=127.0.0.1 --port="$server_port" --threads="$threads" \
        --cache-size=$((hit_names * 2)) --server="127.0.0.1#$upstream_port" --lameduck=0 \
        --log-facility=- >"$log" 2>&1 &
      ;;
  esac
  server_pid=$!
  pids+=("$server_pid")
  local probe=svc-0.ns-0.svc.cluster.local _
  for _ in $(seq 600); do  # kubedns loads the objects file first (seconds)
    dig +time=1 +tries=1 -p "$server_port" @127.0.0.1 "$probe" A 2>/dev/null |
      grep -q 'status: NOERROR' && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! dig +time=1 +tries=1 -p "$server_port" @127.0.0.1 "$probe" A 2>/dev/null |
    grep -q 'status: NOERROR'; then
    echo "scaling_bench: $kind with $threads thread(s) did not answer; its log:"
    tail -20 "$log"
    stop_server "$server_pid"
    return 1
  fi
}

# Per-thread CPU ticks of process $1: "NAME TICKS" per thread, the name as the kernel has it.
thread_ticks() {
  local stat
  for stat in /proc/"$1"/task/*/stat; do
    sed 's/^[0-9]* (\(.*\)) /\1 /' "$stat" 2>/dev/null | awk '{print $1, $13 + $14}' || true
  done
}

# The threads' share of a run, from two thread_ticks listings: cores by thread name (the
# names that used any), and the busiest receiver thread's share of all receivers' CPU.
thread_summary() {
  awk -v hz="$hz" -v wall="$3" '
    FNR == NR { before[FNR] = $2; next }
    {
      used = $2 - before[FNR]; by_name[$1] += used
      if ($1 == "dns-receiver") { receivers += used; if (used > busiest) busiest = used }
    }
    END {
      line = ""
      for (n in by_name) if (by_name[n] > 0) line = line sprintf("%s %.2f, ", n, by_name[n] / hz / wall)
      printf "cores by thread: %sbusiest receiver %.0f%% of receivers", line,
        (receivers > 0 ? busiest * 100 / receivers : 0)
    }' <(echo "$1") <(echo "$2")
}

declare -A qps us cores
# run KIND THREADS ROUND: one measured run; figures into qps/us/cores[KIND,THREADS].
run() {
  local kind=$1 threads=$2 file=$tmp/kubedns.txt before after ticks_before ticks_after out
  [[ $kind == frontend-cache ]] && file=$tmp/hits.txt
  start_server "$kind" "$threads" || return 0
  # Warm-up (the cache fills from the upstream; page faults, branch predictors), not counted.
  "${client_pin[@]}" /usr/bin/dnsperf -s 127.0.0.1 -p "$server_port" -d "$file" -l 2 \
    -T "$client_threads" -c "$clients" -q "$outstanding" >/dev/null 2>&1 || true
  local limit=()
  [[ -n $rate ]] && limit=(-Q "$rate")
  before=$(cpu_ticks "$server_pid")
  ticks_before=$(thread_ticks "$server_pid")
  out=$("${client_pin[@]}" /usr/bin/dnsperf -s 127.0.0.1 -p "$server_port" -d "$file" \
    -l "$duration" -T "$client_threads" -c "$clients" -q "$outstanding" "${limit[@]}" 2>&1) || true
  after=$(cpu_ticks "$server_pid")
  ticks_after=$(thread_ticks "$server_pid")
  stop_server "$server_pid"
  dnsperf_figures "$out"
  local cpu_s wall=${dnsperf_wall:-$duration}
  cpu_s=$(awk -v a="$after" -v b="$before" -v hz="$hz" 'BEGIN {
    split(a, x, " "); split(b, y, " "); printf "%.2f", (x[1] + x[2] - y[1] - y[2]) / hz }')
  qps[$kind,$threads]=$(calc %.0f "${dnsperf_qps:-0}")
  us[$kind,$threads]=$(calc %.2f "(${dnsperf_completed:-0} > 0 ? $cpu_s * 1e6 / ${dnsperf_completed:-1} : 0)")
  cores[$kind,$threads]=$(calc %.2f "$cpu_s / $wall")
  local shared=""
  ((threads > client_first)) && shared=" (shared with the client's cores)"
  printf '  %-15s %2d thread(s) round %d: %8s q/s  %6s us/query  server %5s cores%s  %s lost  %s\n' \
    "$kind" "$threads" "$3" "${qps[$kind,$threads]}" "${us[$kind,$threads]}" \
    "${cores[$kind,$threads]}" "$shared" "${dnsperf_lost:-?}" \
    "$(thread_summary "$ticks_before" "$ticks_after" "$wall")"
}

echo "scaling_bench: $cpus cores; servers on cores 0..N-1, dnsperf -T $client_threads -c $clients" \
  "-q $outstanding on cores $client_cpus; ${duration}s per run$([[ -n $rate ]] && echo ", offered $rate q/s");" \
  "$services services x $endpoints endpoints, $hit_names cache-hit names"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((round = 1; round <= rounds; round++)); do
  for kind in "${servers[@]}"; do
    for threads in "${threads_list[@]}"; do
      run "$kind" "$threads" "$round"
    done
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "scaling (the last round): q/s, ratio to one thread, server CPU per query (us)"
printf '  %7s' threads
for kind in "${servers[@]}"; do printf ' | %-15s %8s %5s %6s' "$kind" q/s ratio us/q; done
echo
for threads in "${threads_list[@]}"; do
  printf '  %7s' "$threads"
  for kind in "${servers[@]}"; do
    one=${qps[$kind,1]:-0} n=${qps[$kind,$threads]:-}
    printf ' | %-15s %8s %5s %6s' "" "${n:--}" \
      "$([[ -n $n && $one -gt 0 ]] && calc %.2f "$n / $one" || echo -)" "${us[$kind,$threads]:--}"
  done
  echo
done
