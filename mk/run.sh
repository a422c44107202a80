#!/usr/bin/env bash
# `make run`: starts the pod locally on loopback against the demo cluster
# (kubedns/demo-cluster.json), or against a real cluster when KUBECONFIG is set. Today that
# is kubedns alone: frontend-cache, nanny and the sidecar are not wired yet (see the
# README's status table). Ctrl-C stops everything.
# Ports can be moved with KDNS_DNS_PORT, KDNS_HEALTHZ_PORT and KDNS_METRICS_PORT.
set -euo pipefail
cd "$(dirname "$0")/.."

dns_port=${KDNS_DNS_PORT:-10053}
healthz_port=${KDNS_HEALTHZ_PORT:-8081}
metrics_port=${KDNS_METRICS_PORT:-10055}
objects=${KDNS_OBJECTS_FILE:-kubedns/demo-cluster.json}
log=build/run-kubedns.log

if [[ -n ${KUBECONFIG:-} ]]; then
  source_flag=--kubecfg-file="${KUBECONFIG%%:*}"
  what="the cluster of $KUBECONFIG"
else
  source_flag=--objects-file="$objects"
  what="the demo cluster ($objects)"
fi

build/bin/kubedns "$source_flag" --domain=cluster.local. \
  --dns-bind-address=127.0.0.1 --dns-port="$dns_port" \
  --http-bind-address=127.0.0.1 --healthz-port="$healthz_port" --metrics-port="$metrics_port" \
  --logtostderr >"$log" 2>&1 &
kubedns=$!
trap 'kill $kubedns 2>/dev/null; wait $kubedns 2>/dev/null; echo; echo "stopped"' EXIT
trap 'exit 0' INT TERM

for _ in $(seq 300); do
  if curl -fs "http://127.0.0.1:$healthz_port/readiness" >/dev/null 2>&1; then break; fi
  if ! kill -0 $kubedns 2>/dev/null; then
    echo "kubedns failed to start:"; cat "$log"; exit 1
  fi
  sleep 0.1
done

cat <<TXT
kubedns is serving $what on 127.0.0.1:$dns_port (UDP and TCP).
Try:
  dig @127.0.0.1 -p $dns_port kubernetes.default.svc.cluster.local
  dig @127.0.0.1 -p $dns_port frontend.shop.svc.cluster.local AAAA
  dig @127.0.0.1 -p $dns_port redis.shop.svc.cluster.local
  dig @127.0.0.1 -p $dns_port _dns._udp.kube-dns.kube-system.svc.cluster.local SRV
  dig @127.0.0.1 -p $dns_port -x 10.96.0.10
  dig @127.0.0.1 -p $dns_port 10-244-1-5.default.pod.cluster.local
Readiness: curl http://127.0.0.1:$healthz_port/readiness
Metrics:   curl http://127.0.0.1:$metrics_port/metrics
Records:   curl http://127.0.0.1:$metrics_port/cache
Edit $objects and the answers follow. Log: $log. Ctrl-C stops.
TXT
wait $kubedns
