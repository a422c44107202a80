// node-cache's flags (kubernetes-sigs/node-local-dns, formerly kubernetes/dns
// cmd/node-cache), so the node-local-dns DaemonSet's arguments keep working with the
// nanny: -localip turns node-local mode on (node_local.h). Checked and turned into the
// Nanny's options, each bad value one line naming the flag, as args.h does for the
// Deployment mode's flags.
//
// Pure functions, no thread affinity.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/ip_address.h"
#include "nanny/nanny.h"

namespace kdns::nanny {

// The node-cache flags as gflags holds them. Defaults are main.cc's.
struct NodeLocalFlags {
  std::string localip;  // comma list; empty: Deployment mode
  std::string upstreamsvc = "kube-dns-upstream";
  bool setupinterface = true;
  bool setupiptables = true;
  std::string interfacename = "nodelocaldns";
  bool skipteardown = false;
  int64_t health_port = 8080;
  std::string syncinterval = "60s";
  std::string kubednscm = "/etc/kube-dns";
  std::string metrics_listen_address = "0.0.0.0:9253";
  std::string firewall = "auto";
};

// Whether the flags ask for node-local mode.
inline bool NodeLocalMode(const NodeLocalFlags& flags) { return !flags.localip.empty(); }

// Node-local mode on top of what BuildOptions filled: options->node_local, the ConfigMap
// directory (-kubednscm), the held sockets (every -localip address on the child's --port),
// and the child's generated --listen-address, --prometheus-addr and --prometheus-port
// (from -metrics-listen-address). Refuses a restart-mode child and, after "--", the
// options the nanny now sets itself. False with a one-line *error naming the flag.
[[nodiscard]] bool BuildNodeLocalOptions(const NodeLocalFlags& flags,
                                         const std::vector<std::string>& child_args,
                                         Nanny::Options* options, std::string* error);

// The environment variable the kubelet sets to a Service's ClusterIP:
// kube-dns-upstream -> KUBE_DNS_UPSTREAM_SERVICE_HOST.
std::string ServiceHostVariable(std::string_view service);

// The ClusterIP of `service` from the environment (`getenv`). False with a one-line
// *error when it is unset or not an IP address.
[[nodiscard]] bool ServiceClusterIp(const std::string& service,
                                    const std::function<const char*(const char*)>& getenv,
                                    IpAddress* ip, std::string* error);

// The warning for node-cache flags with no meaning here (-conf, -basecorefile), given the
// names of those set; empty when none is.
std::string IgnoredFlagsWarning(const std::vector<std::string>& names);

}  // namespace kdns::nanny
