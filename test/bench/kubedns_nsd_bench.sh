#!/usr/bin/env bash
# kubedns next to NSD (Debian's /usr/sbin/nsd), serving the same cluster names, measured by
# the same client (dnsperf).
#
# A generator writes, into a temporary directory, a cluster of SERVICES services (20%
# headless, 10 endpoints each on average, one named port) as an objects file for kubedns, the
# cluster.local and in-addr.arpa zone files with the records kubedns gives for it (A for
# services and headless endpoints, SRV for the named port, PTR for cluster IPs and headless
# endpoints, the SOA and NS at the apex) for NSD, and three dnsperf query files, the mixes:
#   a-hits  A of the services' names (every one a hit: cluster IPs, headless endpoints);
#   ndots   what a pod's resolver asks before the hit for a name with fewer than 5 dots
#           (ndots:5, search path ns.svc.Z svc.Z Z): A and AAAA of svc.ns.svc.Z.<ns>.svc.Z,
#           svc.ns.svc.Z.svc.Z and svc.ns.svc.Z.Z (NXDOMAIN), and AAAA of the IPv4-only
#           service itself (NODATA), all with the SOA in the authority section;
#   mixed   what pods ask in all: A, AAAA, SRV, PTR, headless hosts, search-path misses.
#
# Each server runs with one serving thread (kubedns --dns-threads=1, nsd server-count: 1) on
# free loopback ports, pinned with taskset to SERVER_CPU (the whole process: kubedns's
# other threads and nsd's other processes too), dnsperf pinned to CLIENT_CPU. Runs
# alternate, kubedns then nsd, for each mix, ROUNDS times: single runs on a shared VM vary
# by 10% and more, alternating and averaging tells a server's own cost from that. Each
# run is DURATION seconds of dnsperf after a second of warm-up. All of that at each offered
# load of RATES: unlimited (dnsperf as fast as the server answers), and a fixed rate, where
# the server wakes for a few queries at a time and its per-wake-up costs (the wait for the
# socket, the system calls of a batch) weigh more than at full load. Printed per run: queries/s
# and server CPU per query from the server's own accounting (utime+stime in /proc/PID/stat
# of the server and its child processes, before and after, over the queries completed):
# that is the comparable figure; and queries per wake-up (voluntary context switches of
# all the server's threads), which explains it at a fixed rate. Then, per mix, the
# kubedns/nsd ratio of CPU per query in each round and their mean and median, per rate.
# Figures only: nothing here passes or fails.
#
# PERF=1 records kubedns with `perf record -g` during one extra run of each of the a-hits
# and ndots mixes, at the last of RATES, and prints the top symbols (the profile behind the
# figures).
#
# Usage: test/bench/kubedns_nsd_bench.sh [BIN_DIR]   (BIN_DIR holds kubedns; default build/bin)
# Environment: DURATION (s per run, default 5), ROUNDS (default 3), MIXES (default "a-hits
#              ndots mixed"), RATES (offered loads, each "unlimited" or queries/s for
#              dnsperf -Q; default "unlimited 20000"), QPS (one rate: RATES=$QPS), CLIENTS (dnsperf -c,
#              default 4), SERVICES (default 10000), SERVER_CPU (default the last CPU),
#              CLIENT_CPU (default 0; with one CPU nothing is pinned), PERF=1, KEEP_TMP=1,
#              BASELINE_BIN (another build's binary directory: its kubedns is measured
#              in every round too, kubedns nsd baseline and baseline nsd kubedns in turn,
#              and the ratios kubedns/baseline say what a change saves).
set -euo pipefail

bin_dir=${1:-build/bin}
kubedns=$bin_dir/kubedns
duration=${DURATION:-5}
rounds=${ROUNDS:-3}
read -ra mixes <<<"${MIXES:-a-hits ndots mixed}"
read -ra rates <<<"${QPS:-${RATES:-unlimited 20000}}"
clients=${CLIENTS:-4}
services=${SERVICES:-10000}
nsd=/usr/sbin/nsd

for tool in "$kubedns" "$nsd" /usr/bin/dnsperf /usr/bin/python3 /usr/bin/curl /usr/bin/dig; do
  if [[ ! -x $tool ]]; then
    echo "kubedns_nsd_bench: skipped: $tool is missing"
    exit 0
  fi
done

# shellcheck source=test/bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
bench_start nsd-bench

# --- the cluster, the zones and the queries -----------------------------------------------
/usr/bin/python3 - "$tmp" "$services" <<'PY'
import json, random, sys

out, services = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
zone = "cluster.local"
ttl = 30

def ip(n):  # 10.0.0.0 + n
    n += 10 << 24
    return "%d.%d.%d.%d" % (n >> 24, (n >> 16) & 255, (n >> 8) & 255, n & 255)

items, fwd, rev = [], [], []
cluster_names, headless_names, host_names, srv_names, ptr_names = [], [], [], [], []
next_ep = 0
for i in range(services):
    ns, name = "ns-%d" % (i // 100), "svc-%d" % i
    headless = i % 5 == 0
    count = 6 + (i * 7) % 9  # 6..14, mean 10
    fqdn = "%s.%s.svc.%s." % (name, ns, zone)
    spec = {"type": "ClusterIP", "ports": [{"name": "http", "protocol": "TCP", "port": 80,
                                             "targetPort": 8080}]}
    if headless:
        spec["clusterIP"] = "None"
        spec["clusterIPs"] = ["None"]
    else:
        cip = ip((96 << 16) + 256 + i)
        spec["clusterIP"] = cip
        spec["clusterIPs"] = [cip]
    items.append({"apiVersion": "v1", "kind": "Service",
                  "metadata": {"name": name, "namespace": ns, "resourceVersion": str(100 + i)},
                  "spec": spec})
    ips = [ip((128 << 16) + next_ep + k) for k in range(count)]
    next_ep += count
    for part, begin in enumerate(range(0, count, 10)):
        items.append({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "%s-%d" % (name, part), "namespace": ns,
                         "resourceVersion": str(100000 + i),
                         "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [a], "conditions": {"ready": True},
                           "nodeName": "node-%d" % (k % 50)}
                          for k, a in enumerate(ips[begin:begin + 10])],
            "ports": [{"name": "http", "protocol": "TCP", "port": 8080}]})
    # The records kubedns answers for this service.
    srv = "_http._tcp." + fqdn
    srv_names.append(srv)
    if headless:
        headless_names.append(fqdn)
        weight = 100 // count
        for a in ips:
            host = "%s.%s" % (a.replace(".", "-"), fqdn)
            host_names.append(host)
            fwd.append("%s %d IN A %s" % (fqdn, ttl, a))
            fwd.append("%s %d IN A %s" % (host, ttl, a))
            fwd.append("%s %d IN SRV 10 %d 8080 %s" % (srv, ttl, weight, host))
            rev_name = ".".join(reversed(a.split("."))) + ".in-addr.arpa."
            rev.append("%s %d IN PTR %s" % (rev_name, ttl, host))
            ptr_names.append(rev_name)
    else:
        cluster_names.append(fqdn)
        fwd.append("%s %d IN A %s" % (fqdn, ttl, spec["clusterIP"]))
        fwd.append("%s %d IN SRV 10 100 80 %s" % (srv, ttl, fqdn))
        rev_name = ".".join(reversed(spec["clusterIP"].split("."))) + ".in-addr.arpa."
        rev.append("%s %d IN PTR %s" % (rev_name, ttl, fqdn))
        ptr_names.append(rev_name)

with open(out + "/objects.json", "w") as f:
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)

soa = "ns.dns.%s. hostmaster.%s. 1 28800 7200 604800 60" % (zone, zone)
with open(out + "/cluster.local.zone", "w") as f:
    f.write("$ORIGIN %s.\n" % zone)
    f.write("%s. %d IN SOA %s\n" % (zone, ttl, soa))
    f.write("%s. %d IN NS ns.dns.%s.\n" % (zone, ttl, zone))
    f.write("dns-version.%s. 28800 IN TXT \"1.1.0\"\n" % zone)
    f.write("\n".join(fwd) + "\n")
with open(out + "/in-addr.arpa.zone", "w") as f:
    f.write("in-addr.arpa. %d IN SOA %s\n" % (ttl, soa))
    f.write("in-addr.arpa. %d IN NS ns.dns.%s.\n" % (ttl, zone))
    f.write("\n".join(rev) + "\n")

# The query mix: what pods ask a cluster DNS server, search-path misses included.
mix = [(30, lambda: (rng.choice(cluster_names), "A")),
       (8, lambda: (rng.choice(headless_names), "A")),
       (7, lambda: (rng.choice(host_names), "A")),
       (15, lambda: (rng.choice(cluster_names), "AAAA")),
       (10, lambda: (rng.choice(srv_names), "SRV")),
       (10, lambda: (rng.choice(ptr_names), "PTR")),
       (20, lambda: (rng.choice(cluster_names) + "svc." + zone + ".", "A"))]  # NXDOMAIN
weights = [w for w, _ in mix]
with open(out + "/queries-mixed.txt", "w") as f:
    for _ in range(50000):
        name, qtype = rng.choices(mix, weights)[0][1]()
        f.write("%s %s\n" % (name, qtype))
service_names = cluster_names + headless_names
with open(out + "/queries-a-hits.txt", "w") as f:
    for _ in range(50000):
        f.write("%s A\n" % rng.choice(service_names))
# A pod in namespace `own` looking up svc.ns.svc.Z (4 dots, under ndots:5) asks the search
# path first; with A and AAAA asked in parallel (glibc), each miss comes twice.
with open(out + "/queries-ndots.txt", "w") as f:
    for _ in range(50000):
        fqdn = rng.choice(cluster_names)
        own = "ns-%d" % rng.randrange(max(1, services // 100))
        candidates = [fqdn + own + ".svc." + zone + ".", fqdn + "svc." + zone + ".",
                      fqdn + zone + "."]
        if rng.random() < 1 / 7:
            f.write("%s AAAA\n" % fqdn)  # IPv4-only: NODATA
        else:
            f.write("%s %s\n" % (rng.choice(candidates), rng.choice(["A", "AAAA"])))
print("generated: %d services (%d headless), %d endpoints, %d zone records, 50000 queries per mix"
      % (services, len(headless_names), next_ep, len(fwd) + len(rev)))
PY

# Free loopback ports (UDP and TCP both free).
read -r dns_k healthz_k metrics_k dns_n dns_b healthz_b metrics_b < <(free_port 7)

# Wake-ups of a process and its descendants: the voluntary context switches of all their
# threads (each is a sleep in epoll_wait, recvmmsg or poll, and the wake-up after it). At a
# fixed rate they, not the queries, make most of the CPU: what one costs depends on whether
# the CPU went idle meanwhile, which the wake-up count does not, so it explains the figures.
wakeups() {
  local pid=$1 total=0 p status
  for p in $(tree "$pid"); do
    for status in /proc/"$p"/task/*/status; do
      [[ -r $status ]] || continue
      total=$((total + $(awk '/^voluntary_ctxt_switches:/ {print $2}' "$status" 2>/dev/null || echo 0)))
    done
  done
  echo "$total"
}

# Pinning: the servers on one CPU, dnsperf on another (on one CPU, nothing is pinned).
cpus=$(nproc)
server_cpu=${SERVER_CPU:-$((cpus - 1))}
client_cpu=${CLIENT_CPU:-0}
server_pin=() client_pin=()
if ((cpus > 1)) && [[ -x /usr/bin/taskset ]]; then
  server_pin=(/usr/bin/taskset -c "$server_cpu")
  client_pin=(/usr/bin/taskset -c "$client_cpu")
fi

# Runs dnsperf with the queries of mix $4 against 127.0.0.1:$2 while measuring server
# process $1, printed as $3, at offered load $5 (default unlimited); sets qps, completed,
# cpu_s and us_per_query.
measure() {
  local pid=$1 port=$2 name=$3 mix=$4 offered=${5:-unlimited} before after out woken
  local queries=$tmp/queries-$mix.txt
  local rate=()
  [[ $offered != unlimited ]] && rate=(-Q "$offered")
  # Warm-up pass (page faults, caches), not counted.
  "${client_pin[@]}" /usr/bin/dnsperf -s 127.0.0.1 -p "$port" -d "$queries" -l 1 \
    -c "$clients" -e "${rate[@]}" >/dev/null 2>&1 || true
  before=$(cpu_ticks "$pid")
  woken=$(wakeups "$pid")
  out=$("${client_pin[@]}" /usr/bin/dnsperf -s 127.0.0.1 -p "$port" -d "$queries" \
    -l "$duration" -c "$clients" -e "${rate[@]}" 2>&1)
  after=$(cpu_ticks "$pid")
  woken=$(($(wakeups "$pid") - woken))
  echo "$out" >"$tmp/dnsperf-$name-$mix.txt"
  dnsperf_figures "$out"
  completed=$dnsperf_completed
  qps=$dnsperf_qps
  local lost=$dnsperf_lost
  local user_s sys_s
  read -r user_s sys_s <<<"$(awk -v a="$after" -v b="$before" -v hz="$hz" 'BEGIN {
    split(a, x, " "); split(b, y, " "); printf "%.2f %.2f", (x[1] - y[1]) / hz, (x[2] - y[2]) / hz }')"
  cpu_s=$(awk -v u="$user_s" -v s="$sys_s" 'BEGIN {printf "%.2f", u + s}')
  us_per_query=$(awk -v c="$cpu_s" -v n="$completed" 'BEGIN {printf "%.2f", (n > 0 ? c * 1e6 / n : 0)}')
  local codes=$dnsperf_codes
  local queries_per_wakeup
  queries_per_wakeup=$(awk -v n="$completed" -v w="$woken" 'BEGIN {printf "%.1f", (w > 0 ? n / w : 0)}')
  printf '  %-8s %-7s %8.0f queries/s %8s completed (%s lost)  CPU %5s s (user %s, sys %s)  %5s us/query  %5s queries/wake-up  %s\n' \
    "$name" "$mix" "$qps" "$completed" "$lost" "$cpu_s" "$user_s" "$sys_s" "$us_per_query" \
    "$queries_per_wakeup" "$codes"
}

# --- kubedns ---------------------------------------------------------------------------------
# Starts kubedns binary $1 on DNS port $2 (healthz $3, metrics $4), logging to $5, and waits
# until it is ready; sets started_pid.
start_kubedns() {
  local binary=$1 dns=$2 healthz=$3 metrics=$4 log=$5
  "${server_pin[@]}" "$binary" --objects-file="$tmp/objects.json" --dns-bind-address=127.0.0.1 \
    --dns-port="$dns" --healthz-port="$healthz" --metrics-port="$metrics" \
    --http-bind-address=127.0.0.1 --dns-threads=1 --domain=cluster.local. --logtostderr \
    >"$log" 2>&1 &
  started_pid=$!
  pids+=("$started_pid")
  for _ in $(seq 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$healthz/readiness" && break
    kill -0 "$started_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! curl -sf -o /dev/null "http://127.0.0.1:$healthz/readiness"; then
    echo "$binary did not become ready; its log:"
    tail -20 "$log"
    exit 1
  fi
}
start_kubedns "$kubedns" "$dns_k" "$healthz_k" "$metrics_k" "$tmp/kubedns.log"
kubedns_pid=$started_pid
base_pid=
if [[ -n ${BASELINE_BIN:-} ]]; then
  start_kubedns "$BASELINE_BIN/kubedns" "$dns_b" "$healthz_b" "$metrics_b" "$tmp/kubedns-base.log"
  base_pid=$started_pid
fi

# --- nsd -------------------------------------------------------------------------------------
nsd_conf "$tmp" "$dns_n" cluster.local in-addr.arpa
"${server_pin[@]}" "$nsd" -d -c "$tmp/nsd.conf" >"$tmp/nsd.stdout" 2>&1 &
nsd_pid=$!
pids+=("$nsd_pid")
for _ in $(seq 100); do
  [[ -n $(dig +short +time=1 +tries=1 -p "$dns_n" @127.0.0.1 SOA cluster.local) ]] && break
  kill -0 "$nsd_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z $(dig +short +time=1 +tries=1 -p "$dns_n" @127.0.0.1 SOA cluster.local) ]]; then
  echo "nsd did not answer; its log:"
  tail -20 "$tmp/nsd.log" "$tmp/nsd.stdout" 2>/dev/null
  exit 1
fi

# Same answers? A few spot checks (sizes of the answer sections and rcodes), printed, not
# judged.
echo "spot check (kubedns | nsd: answer count, rcode):"
for q in "$(sed -n 1p "$tmp/queries-mixed.txt")" "$(grep -m1 ' SRV' "$tmp/queries-mixed.txt")" \
  "$(grep -m1 ' PTR' "$tmp/queries-mixed.txt")" "$(grep -m1 ' AAAA' "$tmp/queries-mixed.txt")" \
  "$(sed -n 1p "$tmp/queries-ndots.txt")" "$(sed -n 2p "$tmp/queries-ndots.txt")"; do
  read -r qname qtype <<<"$q"
  k=$(dig +noall +answer -p "$dns_k" @127.0.0.1 "$qname" "$qtype" | grep -vc '^;' || true)
  n=$(dig +noall +answer -p "$dns_n" @127.0.0.1 "$qname" "$qtype" | grep -vc '^;' || true)
  kr=$(dig -p "$dns_k" @127.0.0.1 "$qname" "$qtype" | sed -n 's/.*status: \([A-Z]*\).*/\1/p')
  nr=$(dig -p "$dns_n" @127.0.0.1 "$qname" "$qtype" | sed -n 's/.*status: \([A-Z]*\).*/\1/p')
  printf '  %-60s %-5s %3s %-8s | %3s %s\n' "$qname" "$qtype" "$k" "$kr" "$n" "$nr"
done

pinned="unpinned"
((${#server_pin[@]} > 0)) && pinned="servers on CPU $server_cpu, dnsperf on CPU $client_cpu"
echo "dnsperf: ${duration}s per run, $clients clients, EDNS, rates ${rates[*]}; one server thread each; $pinned"
divide() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }
mean() { tr ' ' '\n' <<<"$1" | awk 'NF {s += $1; n++} END {printf "%.2f", n ? s / n : 0}'; }
# The median too: at a fixed rate a run now and then lands while another process keeps the
# server's CPU from idling, which spares that server its wake-ups from idle (a ratio of
# 0.2 or 1.4 among 0.8s); the median is not moved by one such run, the mean is.
median() {
  tr ' ' '\n' <<<"$1" | awk 'NF' | sort -n |
    awk '{v[NR] = $1} END {printf "%.2f", NR ? (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) : 0}'
}
declare -A ratios=() base_ratios=() gains=()
for offered in "${rates[@]}"; do
  for round in $(seq "$rounds"); do
    echo "rate $offered, round $round:"
    for mix in "${mixes[@]}"; do
      # With a baseline, the order turns round every other round: at a fixed rate the server
      # measured right after another one pays differently for its wake-ups (5-20% here, the
      # same binary measured twice), which alternating cancels in the means.
      order=(kubedns nsd)
      if [[ -n $base_pid ]]; then
        order=(kubedns nsd baseline)
        ((round % 2 == 0)) && order=(baseline nsd kubedns)
      fi
      for server in "${order[@]}"; do
        case $server in
          kubedns) measure "$kubedns_pid" "$dns_k" kubedns "$mix" "$offered" && k_us=$us_per_query ;;
          nsd) measure "$nsd_pid" "$dns_n" nsd "$mix" "$offered" && n_us=$us_per_query ;;
          baseline) measure "$base_pid" "$dns_b" baseline "$mix" "$offered" && b_us=$us_per_query ;;
        esac
      done
      key="$offered $mix"
      ratio=$(divide "$k_us" "$n_us")
      ratios[$key]+="$ratio "
      printf '  %-8s %-7s CPU per query kubedns/nsd %s\n' ratio "$mix" "$ratio"
      if [[ -n $base_pid ]]; then
        base_ratios[$key]+="$(divide "$b_us" "$n_us") "
        gains[$key]+="$(divide "$k_us" "$b_us") "
        printf '  %-8s %-7s CPU per query baseline/nsd %s, kubedns/baseline %s\n' ratio "$mix" \
          "$(divide "$b_us" "$n_us")" "$(divide "$k_us" "$b_us")"
      fi
    done
  done
done
for offered in "${rates[@]}"; do
  echo "kubedns/nsd CPU per query at rate $offered, per mix (each round; mean; median) (target from the issue: at most 0.90):"
  for mix in "${mixes[@]}"; do
    key="$offered $mix"
    printf '  %-7s %s; mean %s; median %s\n' "$mix" "${ratios[$key]% }" "$(mean "${ratios[$key]}")" \
      "$(median "${ratios[$key]}")"
  done
  if [[ -n $base_pid ]]; then
    echo "baseline ($BASELINE_BIN/kubedns)/nsd and kubedns/baseline CPU per query at rate $offered (each round; mean; median):"
    for mix in "${mixes[@]}"; do
      key="$offered $mix"
      printf '  %-7s baseline/nsd %s; mean %s; median %s   kubedns/baseline %s; mean %s; median %s\n' \
        "$mix" "${base_ratios[$key]% }" "$(mean "${base_ratios[$key]}")" \
        "$(median "${base_ratios[$key]}")" "${gains[$key]% }" "$(mean "${gains[$key]}")" \
        "$(median "${gains[$key]}")"
    done
  fi
done

if [[ ${PERF:-0} == 1 && -x /usr/bin/perf ]]; then
  for mix in a-hits ndots; do
    /usr/bin/perf record -g -o "$tmp/perf-$mix.data" -p "$kubedns_pid" -- sleep "$((duration + 2))" \
      >/dev/null 2>&1 &
    perf_pid=$!
    measure "$kubedns_pid" "$dns_k" kubedns "$mix" "${rates[-1]}" >/dev/null
    wait "$perf_pid" || true
    echo "kubedns profile, $mix (perf, self time, top symbols):"
    /usr/bin/perf report -i "$tmp/perf-$mix.data" --no-children --sort sym --stdio -g none \
      --percent-limit 1 2>/dev/null | grep -v '^#' | grep -v '^$' | head -25
  done
fi
