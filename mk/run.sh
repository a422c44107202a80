#!/usr/bin/env bash
# `make run`: the whole pod on loopback, as in a cluster:
#   kubedns         127.0.0.1:10053, the demo cluster (kubedns/demo-cluster.json), or the
#                   cluster of $KUBECONFIG when it is set; readiness :8081, metrics :10055,
#                   debug data (/cache, /debug/top-clients) on --debug-address :10057
#   nanny           holds the cache's port (53 when root, else a free high port) and runs
#                   frontend-cache with kube-dns's arguments; the ConfigMap directory is
#                   build/run/kube-dns-config (edit stubDomains/upstreamNameservers there)
#   frontend-cache  cluster names to kubedns, the rest to /etc/resolv.conf's servers;
#                   metrics :10056, debug data (/debug/top-clients) on --debug-address
#                   :10058
#   the multicluster zones clusterset.local. (MCS) and slice.local. (kubeslice) are on:
#   kubedns serves them, and the nanny routes them to kubedns (-kubednsZones)
#   sidecar         probes both every 5 s; /healthcheck/<label> and metrics on :10054
# Every port is on loopback; the debug addresses are off in a cluster (they name other
# pods) and on here. Ctrl-C stops everything. Ports can be moved with KDNS_DNS_PORT (the
# cache's) and KDNS_OBJECTS_FILE picks another objects file.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=build/bin
run=build/run
mkdir -p "$run"
objects=${KDNS_OBJECTS_FILE:-kubedns/demo-cluster.json}
config=$run/kube-dns-config
mkdir -p "$config" "$run/nanny"

port_free() {  # UDP and TCP on 127.0.0.1
  ! ss -Hlnu "sport = :$1" | grep -q . && ! ss -Hlnt "sport = :$1" | grep -q .
}
if [[ -n ${KDNS_DNS_PORT:-} ]]; then
  dns_port=$KDNS_DNS_PORT
elif [[ $(id -u) -eq 0 ]] && port_free 53; then
  dns_port=53
else
  dns_port=10153
  while ! port_free "$dns_port"; do dns_port=$((dns_port + 1)); done
fi
for port in 10053 8081 10054 10055 10056 10057 10058; do
  if ! port_free "$port"; then
    echo "make run: port $port is in use on this machine; stop what holds it and retry"
    exit 1
  fi
done

if [[ -n ${KUBECONFIG:-} ]]; then
  source_flag=--kubecfg-file="${KUBECONFIG%%:*}"
  what="the cluster of $KUBECONFIG"
else
  source_flag=--objects-file="$objects"
  what="the demo cluster ($objects)"
fi

# Names outside the cluster go to this machine's resolvers, unless one of them is the
# very address we listen on (a loop): then they are refused.
resolv_flag=
if grep -Eq '^\s*nameserver\s+127\.0\.0\.1\s*$' /etc/resolv.conf 2>/dev/null && ((dns_port == 53)); then
  resolv_flag=--no-resolv
fi

pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo
  echo "stopped"
}
trap stop EXIT
trap 'exit 0' INT TERM

"$bin/kubedns" "$source_flag" --domain=cluster.local. \
  --multicluster-zone=clusterset.local. --kubeslice-zone=slice.local. \
  --dns-bind-address=127.0.0.1 --dns-port=10053 --config-dir="$config" \
  --http-bind-address=127.0.0.1 --healthz-port=8081 --prometheus-port=10055 \
  --debug-address=127.0.0.1:10057 \
  >"$run/kubedns.log" 2>&1 &
pids+=($!)

"$bin/nanny" -v=2 -logtostderr -configDir="$config" -restartDnsmasq=true \
  -dnsmasqExec="$PWD/$bin/frontend-cache" -runDir="$run/nanny" \
  -kubednsZones=clusterset.local,slice.local -- \
  -k --cache-size=1000 --no-negcache --dns-loop-detect --log-facility=- \
  --server=/cluster.local/127.0.0.1#10053 --server=/in-addr.arpa/127.0.0.1#10053 \
  --server=/ip6.arpa/127.0.0.1#10053 --listen-address=127.0.0.1 --port="$dns_port" \
  --prometheus-addr=127.0.0.1 --prometheus-port=10056 \
  --debug-address=127.0.0.1:10058 $resolv_flag \
  >"$run/nanny.log" 2>&1 &
pids+=($!)

"$bin/sidecar" --v=2 --logtostderr \
  --probe=kubedns,127.0.0.1:10053,kubernetes.default.svc.cluster.local,5,SRV \
  --probe=dnsmasq,127.0.0.1:"$dns_port",kubernetes.default.svc.cluster.local,5,SRV \
  --dnsmasq-addr=127.0.0.1 --dnsmasq-port="$dns_port" \
  --prometheus-addr=127.0.0.1 --prometheus-port=10054 \
  >"$run/sidecar.log" 2>&1 &
pids+=($!)

ready() {
  curl -fs http://127.0.0.1:8081/readiness >/dev/null 2>&1 &&
    dig @127.0.0.1 -p "$dns_port" kubernetes.default.svc.cluster.local +short +time=1 +tries=1 2>/dev/null | grep -q .
}
for _ in $(seq 300); do
  ready && break
  for pid in "${pids[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "the pod failed to start; logs:"
      tail -n 20 "$run"/*.log
      exit 1
    fi
  done
  sleep 0.1
done
if ! ready; then
  echo "the pod did not answer within 30 s; logs:"
  tail -n 20 "$run"/*.log
  exit 1
fi

p=$([[ $dns_port == 53 ]] && echo "" || echo " -p $dns_port")
cat <<TXT
The pod is serving $what.
DNS (frontend-cache under the nanny) on 127.0.0.1:$dns_port, UDP and TCP. Try:
  dig @127.0.0.1$p kubernetes.default.svc.cluster.local
  dig @127.0.0.1$p frontend.shop.svc.cluster.local AAAA
  dig @127.0.0.1$p redis.shop.svc.cluster.local
  dig @127.0.0.1$p _dns._udp.kube-dns.kube-system.svc.cluster.local SRV
  dig @127.0.0.1$p -x 10.96.0.10
  dig @127.0.0.1$p checkout.shop.svc.clusterset.local
  dig @127.0.0.1$p cart-0.west.cart.shop.svc.clusterset.local
  dig @127.0.0.1$p payments.shop.svc.slice.local
  dig @127.0.0.1$p CH TXT hits.bind
Health:  curl http://127.0.0.1:10054/healthcheck/kubedns   (and /healthcheck/dnsmasq)
         curl http://127.0.0.1:8081/readiness
Metrics: curl http://127.0.0.1:10054/metrics   (sidecar: kubedns_dnsmasq_*, kubedns_probe_*)
         curl http://127.0.0.1:10055/metrics   (kubedns: skydns_*, kdns_kubedns_*)
         curl http://127.0.0.1:10056/metrics   (frontend-cache and nanny: kdns_frontend_*, kdns_nanny_*)
Debug (on for make run, off by default in a cluster: --debug-address):
         curl http://127.0.0.1:10057/cache               (kubedns: the record tree)
         curl http://127.0.0.1:10057/debug/top-clients   (kubedns: the heaviest clients)
         curl http://127.0.0.1:10058/debug/top-clients   (frontend-cache: the heaviest clients)
Edit $objects and the answers follow; put stubDomains / upstreamNameservers JSON files in
$config and the cache applies them without dropping a query.
Logs: $run/{kubedns,nanny,sidecar}.log. Ctrl-C stops.
TXT
wait -n "${pids[@]}" || true
echo "a process of the pod exited; logs:"
tail -n 20 "$run"/*.log
