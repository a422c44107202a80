# shellcheck shell=bash
# The plumbing the shell benchmarks share; sourced (bash), after the script's own checks.
#   bench_start NAME  makes $tmp (a temporary directory /tmp/kdns-NAME.XXXXXX) and the empty
#                     array pids (the processes the benchmark starts: append each one), and
#                     on exit stops every one of them with all its descendants (TERM, then
#                     KILL after 3 s) and removes $tmp (kept, and said, with KEEP_TMP=1).
#   tree PID          PID and all its descendants (nsd's xfrd, main and server processes,
#                     dnsmasq's TCP forks).
#   free_port [N]     N (default 1) distinct loopback ports free for both UDP and TCP (the
#                     servers bind both), from test/e2e/harness.py's free_ports.
#   cpu_ticks PID     "user sys": the clock ticks (utime, stime) of a process tree, from the
#                     kernel's accounting.
#   cpu_seconds PID   CPU seconds (utime+stime) of a process tree.
#   hz                the kernel's clock ticks per second (/proc/PID/stat counts in them).
#   calc FMT EXPR     EXPR (awk arithmetic) printed with printf FMT.
#   wait_answers PID PORT NAME [PATTERN]
#                     true once 127.0.0.1:PORT answers NAME A with a status matching PATTERN
#                     (default: any), false when PID exits or 10 s pass.
#   start_fixed_upstream BENCH DNSLOAD [PIN...]
#                     starts DNSLOAD (dnsload_bench) --serve, the fixed-answer responder, on a
#                     free port (prefixed with the PIN command, e.g. taskset -c 1) as a cheap
#                     upstream that answers any name; sets upstream_port and upstream_pid
#                     and adds it to pids, or exits 1 with its log when it does not answer
#                     (BENCH names the benchmark in that message).
#   stop_server PID   stops a server the benchmark started (TERM, then KILL of what is left of
#                     its tree) and forgets its pid (which the system may hand out again).
#   nsd_conf DIR PORT ZONE...
#                     writes DIR/nsd.conf: NSD on 127.0.0.1@PORT serving each ZONE from
#                     DIR/ZONE.zone (test/e2e/servers.py's write_nsd_conf, the one NSD set-up).
#   unbound_forwarder_conf DIR PORT UPSTREAM_PORT THREADS [LINE...]
#                     writes DIR/unbound.conf: unbound on 127.0.0.1@PORT forwarding everything
#                     to 127.0.0.1@UPSTREAM_PORT with THREADS threads, LINEs added to server:.
#   dnsperf_figures OUTPUT
#                     reads dnsperf's summary: sets dnsperf_completed, dnsperf_lost,
#                     dnsperf_qps (as printed), dnsperf_wall (its run time, s) and
#                     dnsperf_codes (the response codes line); each empty when missing.

bench_start() {
  tmp=$(mktemp -d "/tmp/kdns-$1.XXXXXX")
  pids=()
  trap bench_cleanup EXIT
}

tree() {
  local child
  echo "$1"
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    tree "$child"
  done
}

bench_cleanup() {
  local pid all=() _
  for pid in "${pids[@]}"; do
    all+=($(tree "$pid"))
  done
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for _ in $(seq 30); do
    kill -0 "${all[@]}" 2>/dev/null || break
    sleep 0.1
  done
  for pid in "${all[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  if [[ ${KEEP_TMP:-0} == 1 ]]; then
    echo "kept $tmp"
  else
    rm -rf "$tmp"
  fi
}

bench_lib_dir=$(dirname "${BASH_SOURCE[0]}")
free_port() {
  PYTHONPATH="$bench_lib_dir/../e2e" /usr/bin/python3 -c \
    'import sys; from harness import free_ports; print(*free_ports(int(sys.argv[1])))' \
    "${1:-1}"
}

hz=$(getconf CLK_TCK)
cpu_ticks() {
  local user=0 sys=0 p u s
  for p in $(tree "$1"); do
    # Fields after the ")" of the command name: state is $1, utime $12, stime $13.
    read -r u s < <(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12, $13}') ||
      continue
    user=$((user + ${u:-0}))
    sys=$((sys + ${s:-0}))
  done
  echo "$user $sys"
}
cpu_seconds() {
  local user sys
  read -r user sys < <(cpu_ticks "$1")
  awk -v t=$((user + sys)) -v hz="$hz" 'BEGIN {printf "%.2f", t / hz}'
}

calc() { awk "BEGIN {printf \"$1\", $2}"; }

wait_answers() {
  local pid=$1 port=$2 name=$3 pattern=${4:-status:} _
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 1
    dig +time=1 +tries=1 -p "$port" @127.0.0.1 "$name" A 2>/dev/null | grep -q "$pattern" &&
      return 0
    sleep 0.1
  done
  return 1
}

start_fixed_upstream() {
  local bench=$1 dnsload=$2
  shift 2
  upstream_port=$(free_port)
  "$@" "$dnsload" --serve "$upstream_port" >"$tmp/upstream.log" 2>&1 &
  upstream_pid=$!
  pids+=("$upstream_pid")
  if ! wait_answers "$upstream_pid" "$upstream_port" ready.probe.bench; then
    echo "$bench: the upstream (dnsload_bench --serve) did not start:"
    cat "$tmp/upstream.log"
    exit 1
  fi
}

stop_server() {
  local pid kept=() all
  all=$(tree "$1")
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  for pid in $all; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    [[ $pid == "$1" ]] || kept+=("$pid")
  done
  pids=("${kept[@]}")
}

nsd_conf() {
  /usr/bin/python3 "$bench_lib_dir/../e2e/servers.py" nsd-conf "$@" >/dev/null
}

unbound_forwarder_conf() {
  local dir=$1 port=$2 upstream_port=$3 threads=$4 line
  shift 4
  {
    cat <<EOF
server:
  interface: 127.0.0.1
  port: $port
  do-daemonize: no
  username: ""
  chroot: ""
  directory: "$dir"
  pidfile: "$dir/unbound.pid"
  use-syslog: no
  logfile: ""
  verbosity: 0
  num-threads: $threads
  do-ip6: no
  do-not-query-localhost: no
  access-control: 127.0.0.0/8 allow
  module-config: "iterator"
  qname-minimisation: no
  prefetch: no
  num-queries-per-thread: 1024
EOF
    for line in "$@"; do
      echo "  $line"
    done
    cat <<EOF
forward-zone:
  name: "."
  forward-addr: 127.0.0.1@$upstream_port
remote-control:
  control-enable: no
EOF
  } >"$dir/unbound.conf"
}

dnsperf_figures() {
  dnsperf_completed=$(awk '/Queries completed:/ {print $3}' <<<"$1")
  dnsperf_lost=$(awk '/Queries lost:/ {print $3}' <<<"$1")
  dnsperf_qps=$(awk '/Queries per second:/ {print $4}' <<<"$1")
  dnsperf_wall=$(awk '/Run time \(s\):/ {print $4}' <<<"$1")
  dnsperf_codes=$(awk '/Response codes:/ {sub(/.*Response codes: */, ""); print}' <<<"$1")
}
