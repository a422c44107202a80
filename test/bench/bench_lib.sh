# shellcheck shell=bash
# The plumbing the shell benchmarks share; sourced (bash), after the script's own checks.
#   bench_start NAME  makes $tmp (a temporary directory /tmp/kdns-NAME.XXXXXX) and the empty
#                     array pids (the processes the benchmark starts: append each one), and
#                     on exit stops every one of them with all its descendants (TERM, then
#                     KILL after 3 s) and removes $tmp (kept, and said, with KEEP_TMP=1).
#   tree PID          PID and all its descendants (nsd's xfrd, main and server processes,
#                     dnsmasq's TCP forks).
#   free_port [N]     N (default 1) distinct loopback ports free for both UDP and TCP (the
#                     servers bind both), from the Python benches' free_ports.
#   cpu_ticks PID     "user sys": the clock ticks (utime, stime) of a process tree, from the
#                     kernel's accounting.
#   cpu_seconds PID   CPU seconds (utime+stime) of a process tree.
#   hz                the kernel's clock ticks per second (/proc/PID/stat counts in them).

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
  PYTHONPATH="$bench_lib_dir" /usr/bin/python3 -c \
    'import sys; from kubedns_api_bench_lib import free_ports; print(*free_ports(int(sys.argv[1])))' \
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
