#!/usr/bin/env bash
# Installs every Debian package the project needs, and nothing when they are all present.
# Idempotent and fast: dpkg is asked first; apt-get update runs only when something is missing.
set -euo pipefail

packages=(
  # toolchain
  build-essential g++ make pkg-config clang clang-format clang-tidy libclang-rt-14-dev
  # libraries
  libuv1-dev libc-ares-dev libcurl4-openssl-dev rapidjson-dev libgflags-dev
  libgoogle-glog-dev catch2 libyaml-cpp-dev libssl-dev
  # test peers and clients
  bind9-dnsutils knot-dnsutils dnsperf nsd unbound dnsmasq-base dnsdist iproute2 procps
  # node-local mode's rules and addresses (test/e2e/node_local_test.py)
  nftables iptables
  util-linux python3 python3-h2 python3-yaml curl openssl
  # promtool (check rules, test rules, check metrics: test/e2e/monitoring_test.py)
  prometheus
  # capsh and setcap: a container's capabilities, emulated (test/e2e/manifests_port53_test.py)
  libcap2-bin
)
# kubectl (the real client-side apply: test/e2e/manifests_migration_test.py): Debian's
# kubernetes-client, unless a kubectl is installed already (another package may own it).
command -v kubectl >/dev/null || packages+=(kubernetes-client)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "deps: installing ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
