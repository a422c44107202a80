#!/usr/bin/env bash
# The cache-miss path: CPU per forwarded query of frontend-cache next to dnsdist, dnsmasq and
# unbound, all forwarding to the same upstream (Debian's nsd, serving a wildcard zone, so any
# name has an answer), measured in the same run by the same client (dnsperf).
#
# Every query is a miss: each server is started fresh for each run, with its cache off where
# it has that setting (frontend-cache --cache-size=0, dnsmasq --cache-size=0, dnsdist without
# a packet cache; unbound always caches), and each run asks MISS_NAMES names never asked
# before in this benchmark, once each. The serving process runs pinned to one core (taskset,
# PIN_CPU), the client and nsd on the other(s), so the server's CPU per query is not diluted
# by sharing its core. ROUNDS rounds, the servers in a rotated order each round (a VM's noisy
# neighbours then hit each server in turn); per round and as means: queries/s, server CPU
# per forwarded query (utime+stime of the server's process tree from /proc/PID/stat over the
# queries answered), and the ratios ours/PEER of CPU per query (goal from issue 18: at most
# 1.00 against dnsdist). Figures only: nothing here passes or fails on timing.
#
# Each RATES entry is a set of rounds: "unlimited" (dnsperf as fast as the server answers,
# where batches are large) and fixed query rates (dnsperf -Q), where queries arrive a few at
# a time and what a server pays per wake-up shows. "fc-loops" is this build's frontend-cache
# with --receiver-threads=off (every datagram read by the loop: one thread wake-up fewer
# per miss, the receiver threads' hit-path gain given up).
#
# With BASELINE_BIN (another build's binary directory), that build's frontend-cache is
# measured in the same rounds as "fc-base", for before/after figures.
#
# Usage: test/bench/frontend_cache_miss_bench.sh [BIN_DIR]   (default build/bin)
# Environment: MISS_NAMES (names per run, default 100000), ROUNDS (default 3), CLIENTS
#   (dnsperf -c, default 4), OUTSTANDING (dnsperf -q, default 100), PEERS (default "dnsdist
#   dnsmasq unbound"), PIN_CPU (the server's core, default the last one; "" for no pinning),
#   RATES (default "unlimited 20000"), LOOPS=0 (leave out fc-loops),
#   BASELINE_BIN, FC_ARGS (more flags for this build's frontend-cache), PERF=1 (profile
#   frontend-cache in one extra run: the top symbols go to stdout), KEEP_TMP=1.
set -euo pipefail

bin_dir=${1:-build/bin}
frontend_cache=$bin_dir/frontend-cache
miss_names=${MISS_NAMES:-100000}
rounds=${ROUNDS:-3}
clients=${CLIENTS:-4}
outstanding=${OUTSTANDING:-100}
peers=${PEERS:-dnsdist dnsmasq unbound}
baseline_bin=${BASELINE_BIN:-}
fc_args=${FC_ARGS:-}
ncpu=$(nproc)
pin_cpu=${PIN_CPU-$((ncpu - 1))}
nsd=/usr/sbin/nsd
dnsperf=/usr/bin/dnsperf
declare -A tool=([dnsmasq]=/usr/sbin/dnsmasq [unbound]=/usr/sbin/unbound [dnsdist]=/usr/bin/dnsdist)

for needed in "$frontend_cache" "$nsd" "$dnsperf" /usr/bin/dig /usr/bin/python3; do
  if [[ ! -x $needed ]]; then
    echo "frontend_cache_miss_bench: skipped: $needed is missing"
    exit 0
  fi
done
if [[ -n $baseline_bin && ! -x $baseline_bin/frontend-cache ]]; then
  echo "frontend_cache_miss_bench: BASELINE_BIN=$baseline_bin has no frontend-cache"
  exit 1
fi
rates=${RATES:-unlimited 20000}
kinds=(frontend-cache)
[[ ${LOOPS:-1} == 1 ]] && kinds+=(fc-loops)
[[ -n $baseline_bin ]] && kinds+=(fc-base)
for peer in $peers; do
  if [[ -x ${tool[$peer]:-/nonexistent} ]]; then
    kinds+=("$peer")
  else
    echo "frontend_cache_miss_bench: skipped $peer: ${tool[$peer]:-unknown peer} is missing"
  fi
done
# The server on PIN_CPU, everything else on the other cores.
server_pin=()
other_pin=()
if [[ -n $pin_cpu && $ncpu -gt 1 && -x /usr/bin/taskset ]]; then
  others=$(seq -s, 0 $((ncpu - 1)) | tr ',' '\n' | grep -vx "$pin_cpu" | paste -sd,)
  server_pin=(/usr/bin/taskset -c "$pin_cpu")
  other_pin=(/usr/bin/taskset -c "$others")
fi

# shellcheck source=test/bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
bench_start miss-bench

# --- the upstream: nsd, one server process, a wildcard zone -------------------------------
upstream_port=$(free_port)
cat >"$tmp/bench.example.zone" <<'EOF'
$ORIGIN bench.example.
$TTL 86400
@ IN SOA ns.bench.example. hostmaster.bench.example. 1 3600 600 86400 60
@ IN NS ns.bench.example.
ns IN A 192.0.2.53
* IN A 192.0.2.1
EOF
nsd_conf "$tmp" "$upstream_port" bench.example
"${other_pin[@]}" "$nsd" -d -c "$tmp/nsd.conf" >"$tmp/nsd.stdout" 2>&1 &
nsd_pid=$!
pids+=("$nsd_pid")
if ! wait_answers "$nsd_pid" "$upstream_port" ready.bench.example "status: NOERROR"; then
  echo "frontend_cache_miss_bench: nsd did not answer; its log:"
  tail -20 "$tmp/nsd.log" "$tmp/nsd.stdout" 2>/dev/null
  exit 1
fi

# --- the servers --------------------------------------------------------------------------
# start_server KIND PORT: starts it pinned, sets server_pid; false when it does not answer.
start_server() {
  local kind=$1 port=$2 dir=$tmp/$1
  mkdir -p "$dir"
  case $kind in
    frontend-cache | fc-loops | fc-base)
      local extra=()
      # shellcheck disable=SC2206
      [[ $kind != fc-base ]] && extra+=($fc_args)
      [[ $kind == fc-loops ]] && extra+=(--receiver-threads=off)
      "${server_pin[@]}" "$([[ $kind == fc-base ]] && echo "$baseline_bin" || echo "$bin_dir")/frontend-cache" \
        -k --no-resolv --listen-address=127.0.0.1 --port="$port" --threads=1 --cache-size=0 \
        --server="127.0.0.1#$upstream_port" --lameduck=0 --log-facility=- "${extra[@]}" \
        >"$dir/log" 2>&1 &
      ;;
    dnsmasq)
      "${server_pin[@]}" /usr/sbin/dnsmasq -k -C /dev/null --no-resolv --no-hosts --port="$port" \
        --listen-address=127.0.0.1 --bind-interfaces --user="$(id -un)" --pid-file= \
        --log-facility=- --cache-size=0 --server="127.0.0.1#$upstream_port" \
        --dns-forward-max=1000 >"$dir/log" 2>&1 &
      ;;
    unbound)
      unbound_forwarder_conf "$dir" "$port" "$upstream_port" 1
      "${server_pin[@]}" /usr/sbin/unbound -d -c "$dir/unbound.conf" >"$dir/log" 2>&1 &
      ;;
    dnsdist)  # one UDP listener thread, no packet cache
      {
        echo "setLocal('127.0.0.1:$port')"
        echo "newServer({address='127.0.0.1:$upstream_port', name='upstream'}):setUp()"
        echo "setSecurityPollSuffix('')"
      } >"$dir/dnsdist.conf"
      "${server_pin[@]}" /usr/bin/dnsdist --supervised --disable-syslog -C "$dir/dnsdist.conf" \
        >"$dir/log" 2>&1 &
      ;;
  esac
  server_pid=$!
  pids+=("$server_pid")
  if ! wait_answers "$server_pid" "$port" "ready-$kind.probe.bench.example" "status: NOERROR"; then
    echo "frontend_cache_miss_bench: $kind did not start; its log:"
    tail -5 "$dir/log" | sed 's/^/  /'
    stop_server "$server_pid"
    return 1
  fi
}

# Results: R[kind,round] = CPU us per forwarded query; Q[kind,round] = queries/s.
declare -A R Q
run_id=0
# measure KIND ROUND: a fresh server, MISS_NAMES new names once each.
measure() {
  local kind=$1 round=$2 port out before after completed lost qps names
  run_id=$((run_id + 1))
  names=$tmp/names-$run_id.txt
  awk -v n="$miss_names" -v r="$run_id" \
    'BEGIN {for (i = 0; i < n; i++) printf "m%d-%d.bench.example A\n", r, i}' >"$names"
  port=$(free_port)
  start_server "$kind" "$port" || return 0
  before=$(cpu_seconds "$server_pid")
  local rate_flag=()
  [[ $rate == unlimited ]] || rate_flag=(-Q "$rate")
  out=$("${other_pin[@]}" "$dnsperf" -s 127.0.0.1 -p "$port" -d "$names" -c "$clients" \
    -q "$outstanding" -n 1 -t 5 "${rate_flag[@]}" 2>&1) || true
  after=$(cpu_seconds "$server_pid")
  if [[ ${PERF:-0} == 1 && $kind == frontend-cache && $round == 1 && $rate == "${rates%% *}" &&
    -x /usr/bin/perf ]]; then
    profile "$port" "$server_pid"
  fi
  stop_server "$server_pid"
  rm -f "$names"
  dnsperf_figures "$out"
  completed=$dnsperf_completed
  lost=$dnsperf_lost
  [[ -z $dnsperf_qps ]] || qps=$(calc %.0f "$dnsperf_qps")
  if [[ -z $completed || $completed == 0 ]]; then
    echo "  round $round $kind: no answers: $(tail -3 <<<"$out" | tr '\n' ' ')"
    return 0
  fi
  R[$kind,$round]=$(calc %.2f "($after - $before) * 1e6 / $completed")
  Q[$kind,$round]=$qps
  printf '  rate %s round %d  %-15s %8s q/s  %7s answered (%s lost)  server %6s us CPU per forwarded query\n' \
    "$rate" "$round" "$kind" "$qps" "$completed" "${lost:-?}" "${R[$kind,$round]}"
}

# PERF=1: one more miss run of frontend-cache under perf record (not counted).
profile() {
  local port=$1 pid=$2 names=$tmp/perf-names.txt
  awk -v n="$miss_names" 'BEGIN {for (i = 0; i < n; i++) printf "p-%d.bench.example A\n", i}' \
    >"$names"
  /usr/bin/perf record -q -g -o "$tmp/perf.data" -p "$pid" -- sleep 4 >/dev/null 2>&1 &
  local perf_pid=$!
  "${other_pin[@]}" "$dnsperf" -s 127.0.0.1 -p "$port" -d "$names" -c "$clients" \
    -q "$outstanding" -l 4 >/dev/null 2>&1 || true
  wait "$perf_pid" || true
  echo "  perf (frontend-cache, cache misses; self time):"
  /usr/bin/perf report -i "$tmp/perf.data" --no-children --percent-limit 1 --stdio -g none \
    --sort dso,symbol 2>/dev/null | grep '%' | head -30 | cut -c1-110 | sed 's/^/    /' || true
}

mean() {  # KIND ARRAY: mean over the rounds that have a figure
  local kind=$1 arr=$2 sum=0 n=0 round v
  for ((round = 1; round <= rounds; round++)); do
    eval "v=\${$arr[$kind,$round]:-}"
    [[ -n $v ]] || continue
    sum=$(calc %.4f "$sum + $v")
    n=$((n + 1))
  done
  [[ $n -gt 0 ]] && calc %.2f "$sum / $n" || echo ""
}
summary() {  # the means and ratios of the rounds at $rate
  echo
  echo "cache misses (upstream nsd) at rate $rate, means over $rounds rounds:"
  printf '  %-15s %9s %14s\n' server "q/s" "us CPU/query"
  for kind in "${kinds[@]}"; do
    printf '  %-15s %9s %14s\n' "$kind" "$(mean "$kind" Q)" "$(mean "$kind" R)"
  done
  ours=$(mean frontend-cache R)
  for kind in "${kinds[@]}"; do
    [[ $kind == frontend-cache ]] && continue
    theirs=$(mean "$kind" R)
    [[ -n $ours && -n $theirs ]] || continue
    per_round=""
    for ((round = 1; round <= rounds; round++)); do
      [[ -n ${R[frontend-cache,$round]:-} && -n ${R[$kind,$round]:-} ]] || continue
      per_round+=" $(calc %.2f "${R[frontend-cache,$round]} / ${R[$kind,$round]}")"
    done
    printf '  CPU per forwarded query  frontend-cache / %-8s %5s   (rounds:%s)%s\n' "$kind" \
      "$(calc %.2f "$ours / $theirs")" "$per_round" \
      "$([[ $kind == dnsdist ]] && echo "   (goal <= 1.00)")"
  done
}

echo "frontend_cache_miss_bench: $miss_names new names per run, $rounds rounds per rate (RATES:" \
  "$rates), dnsperf -c $clients -q $outstanding; upstream nsd; server pinned to CPU" \
  "${pin_cpu:-none} of $ncpu"
summaries=""
for rate in $rates; do
  R=()
  Q=()
  for ((round = 1; round <= rounds; round++)); do
    # Rotate the order each round.
    order=("${kinds[@]:$(((round - 1) % ${#kinds[@]}))}" "${kinds[@]:0:$(((round - 1) % ${#kinds[@]}))}")
    for kind in "${order[@]}"; do
      measure "$kind" "$round"
    done
  done
  summaries+=$(summary)$'\n'
done
echo
echo -n "$summaries"
