# shellcheck shell=bash
# The plumbing the shell benchmarks share; sourced (bash), after the script's own checks.
#   bench_start NAME  makes $tmp (a temporary directory /tmp/kdns-NAME.XXXXXX) and the empty
#                     array pids (the processes the benchmark starts: append each one), and
#                     on exit stops every one of them with all its descendants (TERM, then
#                     KILL after 3 s) and removes $tmp (kept, and said, with KEEP_TMP=1).
#   tree PID          PID and all its descendants (nsd's xfrd, main and server processes,
#                     dnsmasq's TCP forks).
#   free_port         a loopback port free for both UDP and TCP (the servers bind both).
#   cpu_seconds PID   CPU seconds (utime+stime) of a process tree, from the kernel's accounting.
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

free_port() {
  /usr/bin/python3 - <<'PY'
import socket
while True:
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.bind(("127.0.0.1", 0))
    port = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", port))
    except OSError:
        continue
    print(port)
    break
PY
}

hz=$(getconf CLK_TCK)
cpu_seconds() {
  local total=0 p ticks
  for p in $(tree "$1"); do
    # Fields after the ")" of the command name: state is $1, utime $12, stime $13.
    ticks=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}') || continue
    total=$((total + ${ticks:-0}))
  done
  awk -v t="$total" -v hz="$hz" 'BEGIN {printf "%.2f", t / hz}'
}
