#!/usr/bin/env bash
# kubedns next to NSD (Debian's /usr/sbin/nsd), serving the same cluster names, measured by
# the same client (dnsperf).
#
# A generator writes, into a temporary directory, a cluster of ~1000 services (20% headless,
# 10 endpoints each on average, one named port) as an objects file for kubedns, the
# cluster.local and in-addr.arpa zone files with the records kubedns gives for it (A for
# services and headless endpoints, SRV for the named port, PTR for cluster IPs and headless
# endpoints, the SOA and NS at the apex) for NSD, and a dnsperf query file (A of ClusterIP
# and headless services and of headless hosts, AAAA, SRV, PTR, NXDOMAIN names).
#
# Each server runs with one serving thread (kubedns --dns-threads=1, nsd server-count: 1) on
# free loopback ports, and dnsperf runs against it for DURATION seconds. Printed per server:
# queries/s (on 2 cores dnsperf itself may be the limit), and server CPU per query from the
# server's own accounting (utime+stime in /proc/PID/stat of the server and its child
# processes, before and after, over the queries completed): that is the comparable figure.
# Then the kubedns/nsd ratios. Figures only: nothing here passes or fails.
#
# Usage: test/bench/kubedns_nsd_bench.sh [BIN_DIR]   (BIN_DIR holds kubedns; default build/bin)
# Environment: DURATION (s per server, default 10), QPS (dnsperf -Q; default unlimited),
#              CLIENTS (dnsperf -c, default 4), SERVICES (default 1000), KEEP_TMP=1.
set -euo pipefail

bin_dir=${1:-build/bin}
kubedns=$bin_dir/kubedns
duration=${DURATION:-10}
clients=${CLIENTS:-4}
services=${SERVICES:-1000}
nsd=/usr/sbin/nsd

for tool in "$kubedns" "$nsd" /usr/bin/dnsperf /usr/bin/python3 /usr/bin/curl /usr/bin/dig; do
  if [[ ! -x $tool ]]; then
    echo "kubedns_nsd_bench: skipped: $tool is missing"
    exit 0
  fi
done

tmp=$(mktemp -d /tmp/kdns-nsd-bench.XXXXXX)
pids=()
# A process and all its descendants: `nsd -d` stays as xfrd, whose child is nsd's main
# process, whose children are the servers.
tree() {
  local child
  echo "$1"
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    tree "$child"
  done
}
cleanup() {
  local pid all=() _
  for pid in "${pids[@]}"; do
    all+=($(tree "$pid"))
  done
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  for _ in $(seq 20); do
    kill -0 "${all[@]}" 2>/dev/null || break
    sleep 0.1
  done
  for pid in "${all[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [[ ${KEEP_TMP:-0} == 1 ]]; then
    echo "kept $tmp"
  else
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT

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
with open(out + "/queries.txt", "w") as f:
    for _ in range(50000):
        name, qtype = rng.choices(mix, weights)[0][1]()
        f.write("%s %s\n" % (name, qtype))
print("generated: %d services (%d headless), %d endpoints, %d zone records, 50000 queries"
      % (services, len(headless_names), next_ep, len(fwd) + len(rev)))
PY

# Free loopback ports (UDP and TCP both free).
read -r dns_k healthz_k metrics_k dns_n < <(/usr/bin/python3 - <<'PY'
import socket
ports, held = [], []
while len(ports) < 4:
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.bind(("127.0.0.1", 0))
    port = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", port))
    except OSError:
        t.close()
        continue
    held += [t, u]
    ports.append(port)
print(*ports)
PY
)

# CPU ticks "utime stime" of a process and all its descendants (nsd's main and server
# processes; kubedns's threads are in its own line).
cpu_ticks() {
  local pid=$1 user=0 sys=0 p fields
  for p in $(tree "$pid"); do
    [[ -r /proc/$p/stat ]] || continue
    # Fields after the ")" of the command name: state is $1, utime $12, stime $13.
    fields=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null) || continue
    read -r u s <<<"$(awk '{print $12, $13}' <<<"$fields")"
    user=$((user + u))
    sys=$((sys + s))
  done
  echo "$user $sys"
}
hz=$(getconf CLK_TCK)

# Runs dnsperf against 127.0.0.1:$2 while measuring server process $1; sets qps, completed,
# cpu_s and us_per_query.
measure() {
  local pid=$1 port=$2 name=$3 before after out
  local rate=()
  [[ -n ${QPS:-} ]] && rate=(-Q "$QPS")
  # Warm-up pass (page faults, caches), not counted.
  /usr/bin/dnsperf -s 127.0.0.1 -p "$port" -d "$tmp/queries.txt" -l 1 -c "$clients" -e \
    "${rate[@]}" >/dev/null 2>&1 || true
  before=$(cpu_ticks "$pid")
  out=$(/usr/bin/dnsperf -s 127.0.0.1 -p "$port" -d "$tmp/queries.txt" -l "$duration" \
    -c "$clients" -e "${rate[@]}" 2>&1)
  after=$(cpu_ticks "$pid")
  echo "$out" >"$tmp/dnsperf-$name.txt"
  completed=$(awk '/Queries completed:/ {print $3}' <<<"$out")
  qps=$(awk '/Queries per second:/ {print $4}' <<<"$out")
  local lost
  lost=$(awk '/Queries lost:/ {print $3}' <<<"$out")
  local user_s sys_s
  read -r user_s sys_s <<<"$(awk -v a="$after" -v b="$before" -v hz="$hz" 'BEGIN {
    split(a, x, " "); split(b, y, " "); printf "%.2f %.2f", (x[1] - y[1]) / hz, (x[2] - y[2]) / hz }')"
  cpu_s=$(awk -v u="$user_s" -v s="$sys_s" 'BEGIN {printf "%.2f", u + s}')
  us_per_query=$(awk -v c="$cpu_s" -v n="$completed" 'BEGIN {printf "%.2f", (n > 0 ? c * 1e6 / n : 0)}')
  local codes
  codes=$(awk '/Response codes:/ {sub(/.*Response codes: */, ""); print}' <<<"$out")
  printf '%-8s %10.0f queries/s  %9s completed (%s lost)  server CPU %6s s (user %s, sys %s)  %6s us CPU/query\n' \
    "$name" "$qps" "$completed" "$lost" "$cpu_s" "$user_s" "$sys_s" "$us_per_query"
  printf '%-8s response codes: %s\n' "$name" "$codes"
}

# --- kubedns ---------------------------------------------------------------------------------
"$kubedns" --objects-file="$tmp/objects.json" --dns-bind-address=127.0.0.1 \
  --dns-port="$dns_k" --healthz-port="$healthz_k" --metrics-port="$metrics_k" \
  --http-bind-address=127.0.0.1 --dns-threads=1 --domain=cluster.local. --logtostderr \
  >"$tmp/kubedns.log" 2>&1 &
kubedns_pid=$!
pids+=("$kubedns_pid")
for _ in $(seq 100); do
  curl -sf -o /dev/null "http://127.0.0.1:$healthz_k/readiness" && break
  kill -0 "$kubedns_pid" 2>/dev/null || break
  sleep 0.1
done
if ! curl -sf -o /dev/null "http://127.0.0.1:$healthz_k/readiness"; then
  echo "kubedns did not become ready; its log:"
  tail -20 "$tmp/kubedns.log"
  exit 1
fi

# --- nsd -------------------------------------------------------------------------------------
cat >"$tmp/nsd.conf" <<EOF
server:
  ip-address: 127.0.0.1@$dns_n
  server-count: 1
  do-ip6: no
  username: ""
  chroot: ""
  zonesdir: "$tmp"
  pidfile: "$tmp/nsd.pid"
  database: ""
  zonelistfile: "$tmp/zone.list"
  xfrdfile: "$tmp/xfrd.state"
  logfile: "$tmp/nsd.log"
  hide-version: yes
  verbosity: 1
  # Response rate limiting is on by default (200 q/s per /24): off, every query comes from
  # 127.0.0.1 here. kubedns has no rate limiting either.
  rrl-ratelimit: 0
  rrl-whitelist-ratelimit: 0
remote-control:
  control-enable: no
zone:
  name: "cluster.local"
  zonefile: "cluster.local.zone"
zone:
  name: "in-addr.arpa"
  zonefile: "in-addr.arpa.zone"
EOF
"$nsd" -d -c "$tmp/nsd.conf" >"$tmp/nsd.stdout" 2>&1 &
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

# Same answers? A few spot checks (sizes of the answer sections), printed, not judged.
echo "spot check (kubedns | nsd answer counts):"
for q in "$(sed -n 1p "$tmp/queries.txt")" "$(grep -m1 ' SRV' "$tmp/queries.txt")" \
  "$(grep -m1 ' PTR' "$tmp/queries.txt")" "$(grep -m1 ' AAAA' "$tmp/queries.txt")"; do
  read -r qname qtype <<<"$q"
  k=$(dig +noall +answer -p "$dns_k" @127.0.0.1 "$qname" "$qtype" | grep -vc '^;' || true)
  n=$(dig +noall +answer -p "$dns_n" @127.0.0.1 "$qname" "$qtype" | grep -vc '^;' || true)
  printf '  %-60s %-5s %3s | %3s\n' "$qname" "$qtype" "$k" "$n"
done

echo "dnsperf: ${duration}s per server, $clients clients, EDNS, rate ${QPS:-unlimited}; one server thread each"
measure "$kubedns_pid" "$dns_k" kubedns
k_qps=$qps k_us=$us_per_query
measure "$nsd_pid" "$dns_n" nsd
n_qps=$qps n_us=$us_per_query

awk -v kq="$k_qps" -v nq="$n_qps" -v ku="$k_us" -v nu="$n_us" 'BEGIN {
  printf "ratio kubedns/nsd: queries/s %.2f; CPU per query %.2f  (target from the issue: kubedns CPU per query no higher than nsd'"'"'s, i.e. a ratio of at most 1.00)\n",
    (nq > 0 ? kq / nq : 0), (nu > 0 ? ku / nu : 0)
}'
