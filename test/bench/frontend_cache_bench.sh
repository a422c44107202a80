#!/usr/bin/env bash
# frontend-cache next to Debian's dnsmasq, unbound and dnsdist, configured alike, measured in
# the same run by the same clients: dnsperf, and dnsload_bench (our sendmmsg/recvmmsg load
# generator) in case dnsperf is the first to saturate. dnsload_bench --serve, a fixed-answer
# recvmmsg/sendmmsg responder, is measured beside them as the machine's ceiling and serves as
# the upstream of every cache (it answers any name with an A record, TTL 86400, so it costs
# little and everything is cacheable).
#
# Per cache, one serving thread (frontend-cache --threads=1; dnsmasq; unbound num-threads: 1
# forwarding "." to the upstream; dnsdist with one UDP listener and a packet cache), each
# started fresh:
#   (e)+(c) RSS with an empty cache; then MISS_NAMES distinct names asked once by dnsperf:
#           the cache-miss forwarding throughput and server CPU per miss; then RSS again.
#           RSS per cached entry = (full - base) / MISS_NAMES, where base is the RSS of the
#           same server started with a 1000-entry cache (dnsmasq and dnsdist allocate their
#           whole cache at start-up; that memory belongs to the entries too);
#   (a)     cache hits over the first NAMES of those names, for DURATION s with dnsperf and
#           for DURATION s with dnsload: queries/s and server CPU per answered query;
#   (d)     p50/p99 latency and server CPU per query at each fixed rate in RATES (dnsload,
#           open loop).
# (b) The ceiling responder gets the same hit runs and the same fixed rates, and so does
#     fc-loop: frontend-cache with --receiver-threads=off (UDP received on its libuv loop),
#     to show what the receiver thread saves.
# Then two serving threads (frontend-cache --threads=2, unbound num-threads: 2, dnsdist with
# two listeners, the ceiling with two): warm, the same hit runs and fixed rates, CPU per
# query against one thread's. At a fixed rate the client leaves the server's share of the
# machine alone; at saturation, on a 2-core machine, a second server thread can only take
# CPU from the client (the ceiling shows what that costs).
#
# (f) The ceiling, frontend-cache on one thread and on two, in turn, THREAD_ROUNDS times:
#     the same hit runs and fixed-rate runs at THREAD_RATES, each round's ratios of CPU per
#     query (frontend-cache / ceiling on one thread; two threads / one), and their means.
#     Single runs of one configuration vary by 10% and more on a VM (a run now and then
#     costs a third more throughout); alternating and averaging is what tells a
#     server's own cost from that.
#     With BASELINE_BIN (another build's binary directory, e.g. the commit before a change),
#     each round also runs that build's frontend-cache on one thread (before or after ours,
#     in turn), and the ratios frontend-cache / baseline say what the change costs a cache
#     hit; COMPARE_ONLY=1 skips everything but these rounds (`make bench-compare
#     BASELINE=ref` builds the ref and does both).
#     THREAD_RATES leave out low rates: there a query costs mostly the wake-up of a sleeping
#     server thread, and on a VM that depends on where the scheduler puts the thread. At
#     20,000 q/s, measured with taskset: 9 us per query with the server on the client's
#     vCPU, 20 us on the other one (an idle vCPU is woken through the hypervisor), whatever
#     the thread count; unpinned runs land on either.
#
# CPU per query is the comparable figure: utime+stime of the server's process tree from
# /proc/PID/stat (its own accounting), before and after, over the queries answered. On a
# 2-core machine the client can saturate before the server; each hit run prints the
# server's and the client's CPU as a share of the wall time (dnsperf's from /usr/bin/time,
# dnsload's from its own getrusage) and which one was the limit, and the cores other
# processes used meanwhile (from /proc/stat): on a shared machine a run with "others" near
# the core count is disturbed, and CPU per query rises as batches shrink. Figures only:
# nothing here passes or fails on timing. Run it more than once.
#
# Usage: test/bench/frontend_cache_bench.sh [BIN_DIR]
#        (BIN_DIR holds frontend-cache and dnsload_bench; default build/bin)
# Environment: DURATION (s per timed run, default 10), NAMES (hit set, default 10000),
#   MISS_NAMES (distinct names for the miss run and RSS, default 100000), RATES (fixed
#   rates for the latency runs, default "20000 100000"; RATE sets a single one), CLIENTS (dnsperf -c, default 8), OUTSTANDING
#   (dnsperf -q and dnsload --concurrency, default 100), SOCKETS (dnsload --sockets,
#   default 8), PEERS (default "dnsmasq unbound dnsdist"), TWO_THREADS=0 to skip the
#   two-thread runs, THREAD_ROUNDS (rounds of (f), default 3; 0 skips them), THREAD_RATES
#   (fixed rates of (f), default "100000 200000"), BASELINE_BIN and COMPARE_ONLY (see (f)),
#   FC_ARGS (more flags for this build's frontend-cache, not the baseline's: e.g.
#   --client-rate-limit=10000000 to weigh the rate limiter against a build without it),
#   PERF=1 to profile the ceiling and frontend-cache in an extra hit run,
#   KEEP_TMP=1 to keep the temporary directory.
set -euo pipefail

bin_dir=${1:-build/bin}
frontend_cache=$bin_dir/frontend-cache
dnsload=$bin_dir/dnsload_bench
duration=${DURATION:-10}
names=${NAMES:-10000}
miss_names=${MISS_NAMES:-100000}
rates=${RATES:-${RATE:-20000 100000}}
clients=${CLIENTS:-8}
outstanding=${OUTSTANDING:-100}
sockets=${SOCKETS:-8}
peers=${PEERS:-dnsmasq unbound dnsdist}
two_threads=${TWO_THREADS:-1}
thread_rounds=${THREAD_ROUNDS:-3}
thread_rates=${THREAD_RATES:-100000 200000}
baseline_bin=${BASELINE_BIN:-}
fc_args=${FC_ARGS:-}
compare_only=${COMPARE_ONLY:-0}
if [[ -n $baseline_bin && ! -x $baseline_bin/frontend-cache ]]; then
  echo "frontend_cache_bench: BASELINE_BIN=$baseline_bin has no frontend-cache"
  exit 1
fi
if [[ $compare_only == 1 ]]; then
  [[ -n $baseline_bin ]] || { echo "frontend_cache_bench: COMPARE_ONLY=1 needs BASELINE_BIN"; exit 1; }
  two_threads=0
  peers=""
fi
# Room for every miss name and 10% more (so no shard or table evicts), not much more: dnsmasq
# and dnsdist allocate their whole cache at start-up.
cache_size=$((miss_names + miss_names / 10 > names ? miss_names + miss_names / 10 : names))
dnsperf=/usr/bin/dnsperf
declare -A tool=([dnsmasq]=/usr/sbin/dnsmasq [unbound]=/usr/sbin/unbound [dnsdist]=/usr/bin/dnsdist)

for needed in "$frontend_cache" "$dnsload" "$dnsperf" /usr/bin/time /usr/bin/dig /usr/bin/python3; do
  if [[ ! -x $needed ]]; then
    echo "frontend_cache_bench: skipped: $needed is missing"
    exit 0
  fi
done
available=()
for peer in $peers; do
  if [[ -x ${tool[$peer]:-/nonexistent} ]]; then
    available+=("$peer")
  else
    echo "frontend_cache_bench: skipped $peer: ${tool[$peer]:-unknown peer} is missing"
  fi
done

# shellcheck source=test/bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
bench_start cache-bench

# --- helpers ---------------------------------------------------------------------------------

# Resident set of a process tree, in kB.
rss_kb() {
  local total=0 p kb
  for p in $(tree "$1"); do
    kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null) || continue
    total=$((total + ${kb:-0}))
  done
  echo "$total"
}
# CPU seconds the whole machine spent busy (all cores), from /proc/stat.
machine_busy_seconds() {
  awk -v hz="$hz" '/^cpu / {printf "%.2f", ($2 + $3 + $4 + $7 + $8 + $9) / hz; exit}' /proc/stat
}
now() { date +%s.%N; }



# Results: R[label,key].
declare -A R
order=()

# --- the names and the upstream ----------------------------------------------------------------
awk -v n="$miss_names" 'BEGIN {for (i = 0; i < n; i++) printf "host-%d.bench.example A\n", i}' \
  >"$tmp/miss.txt"
head -n "$names" "$tmp/miss.txt" >"$tmp/hit.txt"

start_fixed_upstream frontend_cache_bench "$dnsload"

# --- the servers -------------------------------------------------------------------------------
# start_server KIND THREADS PORT [CACHE_ENTRIES]: starts it, sets server_pid; false when it
# does not answer. (unbound's caches are sized in bytes and grow as they fill: 256m each.)
start_server() {
  local kind=$1 threads=$2 port=$3 entries=${4:-$cache_size} dir=$tmp/$1-$2-${4:-$cache_size}
  mkdir -p "$dir"
  case $kind in
    ceiling)
      "$dnsload" --serve "$port" --threads "$threads" >"$dir/log" 2>&1 &
      ;;
    frontend-cache | fc-loop | fc-base)  # fc-loop: receiving on the serving loop (epoll), for
      # contrast; fc-base: the baseline build's frontend-cache (BASELINE_BIN)
      "$([[ $kind == fc-base ]] && echo "$baseline_bin" || echo "$bin_dir")/frontend-cache" -k --no-resolv --listen-address=127.0.0.1 --port="$port" \
        --threads="$threads" --cache-size="$entries" --server="127.0.0.1#$upstream_port" \
        --lameduck=0 --log-facility=- $([[ $kind == fc-loop ]] && echo --receiver-threads=off) \
        $([[ $kind != fc-base ]] && echo "$fc_args") \
        >"$dir/log" 2>&1 &
      ;;
    dnsmasq)  # single-threaded by design
      /usr/sbin/dnsmasq -k -C /dev/null --no-resolv --no-hosts --port="$port" \
        --listen-address=127.0.0.1 --bind-interfaces --user="$(id -un)" --pid-file= \
        --log-facility=- --cache-size="$entries" --server="127.0.0.1#$upstream_port" \
        >"$dir/log" 2>&1 &
      ;;
    unbound)
      unbound_forwarder_conf "$dir" "$port" "$upstream_port" "$threads" "so-reuseport: yes" \
        "msg-cache-size: 256m" "rrset-cache-size: 256m"
      /usr/sbin/unbound -d -c "$dir/unbound.conf" >"$dir/log" 2>&1 &
      ;;
    dnsdist)  # one UDP listener thread per setLocal/addLocal
      {
        echo "setLocal('127.0.0.1:$port', {reusePort=true})"
        for ((i = 1; i < threads; i++)); do
          echo "addLocal('127.0.0.1:$port', {reusePort=true})"
        done
        echo "newServer({address='127.0.0.1:$upstream_port', name='upstream'}):setUp()"
        echo "getPool(''):setCache(newPacketCache($entries, {maxTTL=86400}))"
        echo "setSecurityPollSuffix('')"
      } >"$dir/dnsdist.conf"
      /usr/bin/dnsdist --supervised --disable-syslog -C "$dir/dnsdist.conf" >"$dir/log" 2>&1 &
      ;;
  esac
  server_pid=$!
  pids+=("$server_pid")
  if ! wait_answers "$server_pid" "$port" ready.probe.bench; then
    echo "frontend_cache_bench: skipped $kind ($threads thread(s)): it did not start; its log:"
    tail -5 "$dir/log" | sed 's/^/  /'
    stop_server "$server_pid"
    return 1
  fi
}

# Which side limited a run: the one using nearly all of its share of the CPU.
limit_of() {  # server_util client_util (fractions of a core per thread)
  awk -v s="$1" -v c="$2" 'BEGIN {
    if (s >= 0.85 && s >= c) print "server"; else if (c >= 0.85) print "client";
    else print "neither" }'
}

# dnsperf LABEL PID PORT FILE THREADS [dnsperf args]: one run; figures into R[LABEL,dnsperf_*].
run_dnsperf() {
  local label=$1 pid=$2 port=$3 file=$4 threads=$5
  shift 5
  local server_before upstream_before machine_before start end out
  server_before=$(cpu_seconds "$pid")
  upstream_before=$(cpu_seconds "$upstream_pid")
  machine_before=$(machine_busy_seconds)
  start=$(now)
  out=$(/usr/bin/time -f '%U %S' -o "$tmp/time.txt" "$dnsperf" -s 127.0.0.1 -p "$port" \
    -d "$file" -c "$clients" -q "$outstanding" "$@" 2>&1) || true
  end=$(now)
  echo "$out" >"$tmp/dnsperf-${label//\//_}-$(date +%s%N).txt"
  local completed lost qps wall server_s upstream_s client_s machine_s
  machine_s=$(calc %.2f "$(machine_busy_seconds) - $machine_before")
  dnsperf_figures "$out"
  completed=$dnsperf_completed
  lost=$dnsperf_lost
  [[ -z $dnsperf_qps ]] || qps=$(calc %.0f "$dnsperf_qps")
  wall=$dnsperf_wall
  server_s=$(calc %.2f "$(cpu_seconds "$pid") - $server_before")
  upstream_s=$(calc %.2f "$(cpu_seconds "$upstream_pid") - $upstream_before")
  client_s=$(awk '{printf "%.2f", $1 + $2}' "$tmp/time.txt" 2>/dev/null || echo 0)
  [[ -n $wall ]] || wall=$(calc %.2f "$end - $start")
  set_figures "$label" dnsperf "${qps:-0}" "${completed:-0}" "${lost:-?}" "$wall" "$server_s" \
    "$client_s" "$upstream_s" "$threads" "$machine_s"
  R[$label,dnsperf_codes]=$dnsperf_codes
}

# dnsload LABEL PID PORT FILE THREADS [dnsload args]: one run; figures into R[LABEL,dnsload_*].
run_dnsload() {
  local label=$1 pid=$2 port=$3 file=$4 threads=$5
  shift 5
  local server_before upstream_before machine_before out
  server_before=$(cpu_seconds "$pid")
  upstream_before=$(cpu_seconds "$upstream_pid")
  machine_before=$(machine_busy_seconds)
  out=$("$dnsload" --load "127.0.0.1:$port" --names "$file" --sockets "$sockets" "$@" 2>&1) || true
  local server_s upstream_s machine_s
  machine_s=$(calc %.2f "$(machine_busy_seconds) - $machine_before")
  server_s=$(calc %.2f "$(cpu_seconds "$pid") - $server_before")
  upstream_s=$(calc %.2f "$(cpu_seconds "$upstream_pid") - $upstream_before")
  field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$out"; }
  if [[ -z $(field answered) ]]; then
    echo "  $label: dnsload failed: $out"
    return 0
  fi
  set_figures "$label" dnsload "$(field qps)" "$(field answered)" "$(field lost)" \
    "$(field seconds)" "$server_s" "$(field client_cpu_s)" "$upstream_s" "$threads" "$machine_s"
  R[$label,dnsload_p50]=$(field p50_us)
  R[$label,dnsload_p99]=$(field p99_us)
  R[$label,dnsload_p999]=$(field p999_us)
  R[$label,dnsload_codes]="NOERROR $(field noerror) NXDOMAIN $(field nxdomain) SERVFAIL $(field servfail) other $(field other_rcode), $(field mismatched) mismatched"
}

# set_figures LABEL CLIENT QPS ANSWERED LOST WALL SERVER_S CLIENT_S UPSTREAM_S THREADS MACHINE_S
# (MACHINE_S: CPU seconds the whole machine was busy; what the server, the client and the
# upstream did not use went to other processes: their share, in cores, says how much the
# run was disturbed.)
set_figures() {
  local l=$1 c=$2
  R[$l,${c}_qps]=$3
  R[$l,${c}_answered]=$4
  R[$l,${c}_lost]=$5
  R[$l,${c}_wall]=$6
  R[$l,${c}_server_s]=$7
  R[$l,${c}_client_s]=$8
  R[$l,${c}_upstream_s]=$9
  R[$l,${c}_us]=$(calc %.2f "($4 > 0 ? $7 * 1e6 / $4 : 0)")
  R[$l,${c}_client_us]=$(calc %.2f "($4 > 0 ? $8 * 1e6 / $4 : 0)")
  R[$l,${c}_upstream_us]=$(calc %.2f "($4 > 0 ? $9 * 1e6 / $4 : 0)")
  R[$l,${c}_server_util]=$(calc %.2f "($6 > 0 ? $7 / $6 / ${10} : 0)")
  R[$l,${c}_client_util]=$(calc %.2f "($6 > 0 ? $8 / $6 : 0)")
  R[$l,${c}_limit]=$(limit_of "${R[$l,${c}_server_util]}" "${R[$l,${c}_client_util]}")
  R[$l,${c}_others]=$(calc %.2f "($6 > 0 && ${11} > $7 + $8 + $9 ? (${11} - $7 - $8 - $9) / $6 : 0)")
  printf '  %-19s %-7s %7s q/s %8s answered (%s lost)  server %5s us/q (%3.0f%% of %s core)  client %5s us/q (%3.0f%%)  upstream %s s  others %s cores  limit: %s\n' \
    "$l" "$c" "$3" "$4" "$5" "${R[$l,${c}_us]}" "$(calc %.0f "${R[$l,${c}_server_util]} * 100")" \
    "${10}" "${R[$l,${c}_client_us]}" "$(calc %.0f "${R[$l,${c}_client_util]} * 100")" "$9" \
    "${R[$l,${c}_others]}" "${R[$l,${c}_limit]}"
}

# The hit runs (a)/(b): dnsperf, then dnsload, DURATION s each over the hit names.
hit_runs() {
  local label=$1 pid=$2 port=$3 threads=$4
  run_dnsperf "$label" "$pid" "$port" "$tmp/hit.txt" "$threads" -l "$duration"
  run_dnsload "$label" "$pid" "$port" "$tmp/hit.txt" "$threads" --seconds "$duration" \
    --concurrency "$outstanding"
}

# Warms a server's cache: every hit name once (the upstream answers).
warm() {
  "$dnsload" --load "127.0.0.1:$1" --names "$tmp/hit.txt" --once --sockets "$sockets" \
    --concurrency "$outstanding" >/dev/null
}

# (d) latency and CPU per query at each fixed rate (default: RATES), open loop.
# rate_runs LABEL PID PORT THREADS [RATE...]
rate_runs() {
  local label=$1 pid=$2 port=$3 threads=$4 rate
  shift 4
  for rate in ${@:-$rates}; do
    run_dnsload "$label/rate/$rate" "$pid" "$port" "$tmp/hit.txt" "$threads" --seconds "$duration" \
      --qps "$rate"
  done
}

# PERF=1: one more dnsload hit run (not counted: perf costs the server CPU) under perf
# record; the top symbols by self time go into $tmp/perf-NAME.txt.
profile_hits() {
  local name=$1 pid=$2 port=$3 seconds=$((duration < 5 ? duration : 5))
  [[ ${PERF:-0} == 1 && -x /usr/bin/perf ]] || return 0
  /usr/bin/perf record -q -g -o "$tmp/perf.data" -p "$pid" -- sleep "$seconds" >/dev/null 2>&1 &
  local perf_pid=$!
  "$dnsload" --load "127.0.0.1:$port" --names "$tmp/hit.txt" --sockets "$sockets" \
    --seconds "$seconds" --concurrency "$outstanding" >/dev/null
  wait "$perf_pid" || true
  /usr/bin/perf report -i "$tmp/perf.data" --no-children --percent-limit 1 --stdio -g none \
    --sort dso,symbol 2>/dev/null | grep '%' | head -30 | cut -c1-110 >"$tmp/perf-$name.txt" || true
}

# --- one thread ---------------------------------------------------------------------------------
echo "frontend_cache_bench: ${duration}s per timed run; $names hit names, $miss_names miss names," \
  "cache size $cache_size; dnsperf -c $clients -q $outstanding; dnsload $sockets sockets," \
  "$outstanding outstanding; fixed rates $rates q/s; $(nproc) cores"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "one serving thread:"
for kind in ceiling frontend-cache fc-loop "${available[@]}"; do
  [[ $compare_only == 1 ]] && break
  port=$(free_port)
  start_server "$kind" 1 "$port" || continue
  pid=$server_pid
  order+=("$kind")
  if [[ $kind == fc-loop ]]; then
    # Only the hit runs: misses and memory are frontend-cache's.
    warm "$port"
  elif [[ $kind != ceiling ]]; then
    # (e) and (c): RSS empty, every miss name once, RSS full. The baseline is the same
    # server with a 1000-entry cache: what a full-size empty cache adds (allocated up front
    # by dnsmasq and dnsdist) is part of the cost of its entries.
    base_port=$(free_port)
    if start_server "$kind" 1 "$base_port" 1000; then
      R[$kind,rss_base]=$(rss_kb "$server_pid")
      stop_server "$server_pid"
    fi
    R[$kind,rss_empty]=$(rss_kb "$pid")
    run_dnsperf "$kind/miss" "$pid" "$port" "$tmp/miss.txt" 1 -n 1 -l $((duration * 6))
    sleep 0.5
    R[$kind,rss_full]=$(rss_kb "$pid")
  fi
  hit_runs "$kind" "$pid" "$port" 1
  [[ $kind == frontend-cache || $kind == ceiling ]] && profile_hits "$kind" "$pid" "$port"
  rate_runs "$kind" "$pid" "$port" 1
  stop_server "$pid"
done

# --- two threads --------------------------------------------------------------------------------
if [[ $two_threads == 1 ]]; then
  echo "two serving threads:"
  for kind in ceiling frontend-cache "${available[@]}"; do
    [[ $kind == dnsmasq ]] && continue  # single-threaded
    port=$(free_port)
    start_server "$kind" 2 "$port" || continue
    pid=$server_pid
    order+=("$kind/2")
    warm "$port"
    hit_runs "$kind/2" "$pid" "$port" 2
    rate_runs "$kind/2" "$pid" "$port" 2
    stop_server "$pid"
  done
fi

# --- (f) frontend-cache: one thread and two, alternating ---------------------------------------
thread_labels=()
if [[ ($two_threads == 1 || -n $baseline_bin) && $thread_rounds -gt 0 ]]; then
  echo "the ceiling, frontend-cache on one serving thread$([[ $two_threads == 1 ]] && echo " and on two")$([[ -n $baseline_bin ]] && echo ", the baseline's on one"), in turn ($thread_rounds rounds):"
  for ((round = 1; round <= thread_rounds; round++)); do
    runs=(ceiling:1:ceil-t1 frontend-cache:1:fc-t1)
    if [[ -n $baseline_bin ]]; then
      # The baseline runs before ours every other round: neither always follows the ceiling.
      if ((round % 2 == 1)); then
        runs+=(fc-base:1:fc-b1)
      else
        runs=(ceiling:1:ceil-t1 fc-base:1:fc-b1 frontend-cache:1:fc-t1)
      fi
    fi
    [[ $two_threads == 1 ]] && runs+=(frontend-cache:2:fc-t2)
    for run in "${runs[@]}"; do
      IFS=: read -r kind threads label <<<"$run"
      port=$(free_port)
      start_server "$kind" "$threads" "$port" || continue
      pid=$server_pid
      warm "$port"
      hit_runs "$label/$round" "$pid" "$port" "$threads"
      rate_runs "$label/$round" "$pid" "$port" "$threads" $thread_rates
      stop_server "$pid"
    done
    thread_labels+=("$round")
  done
fi

# --- tables ---------------------------------------------------------------------------------------
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
# ratio A B KEY: A's figure over B's, or "-".
ratio() {
  local a=${R[$1,$3]:-} b=${R[$2,$3]:-}
  [[ -n $a && -n $b ]] || { echo -; return; }
  calc %.2f "($b > 0 ? $a / $b : 0)"
}
if [[ $compare_only != 1 ]]; then
  echo "(a, b) cache hits: queries/s and server CPU per answered query (us); util = CPU / wall (per server"
  echo "       thread for the server); limit = the side near 100%; oth = cores used by other processes meanwhile"
  printf '  %-18s | %-49s | %-49s\n' "" "dnsperf" "dnsload (sendmmsg)"
  printf '  %-18s | %8s %7s %5s %7s %5s %4s %-7s | %8s %7s %5s %7s %5s %4s %-7s\n' server q/s srv_us \
    util cli_us util oth limit q/s srv_us util cli_us util oth limit
  for l in "${order[@]}"; do
    line=$(printf '  %-18s' "$l")
    for c in dnsperf dnsload; do
      line+=$(printf ' | %8s %7s %5s %7s %5s %4s %-7s' "${R[$l,${c}_qps]:--}" "${R[$l,${c}_us]:--}" \
        "${R[$l,${c}_server_util]:--}" "${R[$l,${c}_client_us]:--}" "${R[$l,${c}_client_util]:--}" \
        "${R[$l,${c}_others]:--}" "${R[$l,${c}_limit]:--}")
    done
    echo "$line"
  done

  echo
  echo "(c) cache misses (dnsperf, $miss_names distinct names once each; upstream = dnsload --serve)"
  echo "(e) RSS: base = a 1000-entry cache, empty = a $cache_size-entry cache before any query, full = after the misses;"
  echo "    per entry = (full - base) / $miss_names, and (full - empty) / $miss_names what filling alone added"
  printf '  %-16s %8s %6s %8s %8s | %9s %9s %9s %8s %8s\n' server "q/s" lost "srv_us" "upstr_us" \
    "base_kB" "empty_kB" "full_kB" "B/entry" "B/fill"
  for l in "${order[@]}"; do
    [[ -n ${R[$l/miss,dnsperf_qps]:-} ]] || continue
    base=${R[$l,rss_base]:-${R[$l,rss_empty]}}
    printf '  %-16s %8s %6s %8s %8s | %9s %9s %9s %8s %8s\n' "$l" "${R[$l/miss,dnsperf_qps]}" \
      "${R[$l/miss,dnsperf_lost]}" "${R[$l/miss,dnsperf_us]}" "${R[$l/miss,dnsperf_upstream_us]}" \
      "$base" "${R[$l,rss_empty]}" "${R[$l,rss_full]}" \
      "$(calc %.0f "(${R[$l,rss_full]} - $base) * 1024 / $miss_names")" \
      "$(calc %.0f "(${R[$l,rss_full]} - ${R[$l,rss_empty]}) * 1024 / $miss_names")"
  done

  echo
  echo "(d) latency and server CPU per query at fixed rates (dnsload, open loop, $sockets sockets)"
  printf '  %-16s %9s %9s %8s %9s %9s %9s %10s\n' server rate "q/s" lost "p50_us" "p99_us" "p99.9_us" \
    "srv_us/q"
  for rate in $rates; do
    for l in "${order[@]}"; do
      r=$l/rate/$rate
      [[ -n ${R[$r,dnsload_qps]:-} ]] || continue
      printf '  %-16s %9s %9s %8s %9s %9s %9s %10s\n' "$l" "$rate" "${R[$r,dnsload_qps]}" \
        "${R[$r,dnsload_lost]}" "${R[$r,dnsload_p50]}" "${R[$r,dnsload_p99]}" \
        "${R[$r,dnsload_p999]}" "${R[$r,dnsload_us]}"
    done
  done

  echo
  echo "answers seen in the hit runs (a sanity check: all NOERROR, none lost or mismatched):"
  for l in "${order[@]}"; do
    printf '  %-16s dnsperf: %s | dnsload: %s\n' "$l" "${R[$l,dnsperf_codes]:--}" "${R[$l,dnsload_codes]:--}"
  done

  echo
  echo "ratios, frontend-cache on one thread (targets from the issue beside them):"
  for c in dnsperf dnsload; do
    echo "  with $c:"
    printf '    CPU/hit  frontend-cache / ceiling  %5s   (target <= 1.25)\n' "$(ratio frontend-cache ceiling ${c}_us)"
    printf '    CPU/hit  dnsmasq / frontend-cache  %5s   (target >= 1.60)\n' "$(ratio dnsmasq frontend-cache ${c}_us)"
    printf '    CPU/hit  dnsdist / frontend-cache  %5s   (target >= 1.25)\n' "$(ratio dnsdist frontend-cache ${c}_us)"
    printf '    CPU/hit  unbound / frontend-cache  %5s\n' "$(ratio unbound frontend-cache ${c}_us)"
    printf '    CPU/hit  fc-loop / ceiling         %5s   (frontend-cache --receiver-threads=off)\n' "$(ratio fc-loop ceiling ${c}_us)"
    printf '    q/s      frontend-cache / ceiling  %5s   (target >= 0.80 when the client is not the limit)\n' "$(ratio frontend-cache ceiling ${c}_qps)"
    printf '    q/s      frontend-cache / dnsmasq  %5s   (target >= 1.60 when the client is not the limit)\n' "$(ratio frontend-cache dnsmasq ${c}_qps)"
    printf '    q/s      frontend-cache / dnsdist  %5s   (target >= 1.25 when the client is not the limit)\n' "$(ratio frontend-cache dnsdist ${c}_qps)"
  done
  echo "  two threads vs one, CPU per hit (target for frontend-cache: <= 1.00); saturated, then"
  echo "  at each fixed rate:"
  for kind in ceiling frontend-cache unbound dnsdist; do
    [[ -n ${R[$kind/2,dnsload_us]:-} ]] || continue
    line=$(printf '    %-16s dnsperf %5s  dnsload %5s' "$kind" "$(ratio "$kind/2" "$kind" dnsperf_us)" \
      "$(ratio "$kind/2" "$kind" dnsload_us)")
    for rate in $rates; do
      line+=$(printf '  %s q/s %5s' "$rate" "$(ratio "$kind/2/rate/$rate" "$kind/rate/$rate" dnsload_us)")
    done
    echo "$line"
  done
fi
# round_ratios TITLE NUMERATOR DENOMINATOR KEY...: per round of (f), NUMERATOR's figure over
# DENOMINATOR's (labels without the round), then the mean over the rounds.
round_ratios() {
  local title=$1 num=$2 den=$3 key round value
  shift 3
  local -A sums=() counts=()
  echo
  echo "$title"
  printf '    %-6s' round
  for key in "$@"; do printf ' %12s' "${key%_us}"; done
  echo
  for round in "${thread_labels[@]}"; do
    printf '    %-6s' "$round"
    for key in "$@"; do
      if [[ $key == rate/* ]]; then
        value=$(ratio "$num/$round/$key" "$den/$round/$key" dnsload_us)
      else
        value=$(ratio "$num/$round" "$den/$round" "$key")
      fi
      printf ' %12s' "$value"
      if [[ $value != - ]]; then
        sums[$key]=$(calc %.4f "${sums[$key]:-0} + $value")
        counts[$key]=$((${counts[$key]:-0} + 1))
      fi
    done
    echo
  done
  printf '    %-6s' mean
  for key in "$@"; do
    printf ' %12s' "$(calc %.2f "(${counts[$key]:-0} > 0 ? ${sums[$key]:-0} / ${counts[$key]:-1} : 0)")"
  done
  echo
}
if [[ ${#thread_labels[@]} -gt 0 ]]; then
  rate_keys=()
  for rate in $thread_rates; do rate_keys+=("rate/$rate"); done
  round_ratios "(f) frontend-cache / ceiling, one thread, CPU per query, alternating rounds (target <= 1.25):" \
    fc-t1 ceil-t1 dnsperf_us dnsload_us "${rate_keys[@]}"
  if [[ $two_threads == 1 ]]; then
    round_ratios "(f) frontend-cache, two threads / one, CPU per query, alternating rounds (target <= 1.00):" \
      fc-t2 fc-t1 dnsperf_us dnsload_us "${rate_keys[@]}"
  fi
  if [[ -n $baseline_bin ]]; then
    round_ratios "(f) frontend-cache / the baseline's ($baseline_bin), one thread, CPU per query, alternating rounds (no change: 1.00 within noise):" \
      fc-t1 fc-b1 dnsperf_us dnsload_us "${rate_keys[@]}"
  fi
fi
for name in ceiling frontend-cache; do
  if [[ -s $tmp/perf-$name.txt ]]; then
    echo
    echo "perf: where $name's CPU went during an extra dnsload hit run (self time):"
    sed 's/^/  /' "$tmp/perf-$name.txt"
  fi
done
