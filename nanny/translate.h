// From a validated kube-dns ConfigMap to the child's configuration, as kube-dns's
// dnsmasq-nanny translates it (pkg/dnsmasq/nanny.go, Configure):
//   stubDomains {"acme.local": ["1.2.3.4", "5.6.7.8:5353", "ns.example"]}
//     -> --server=/acme.local/1.2.3.4  --server=/acme.local/5.6.7.8#5353
//        --server=/acme.local/<address of ns.example>
//   upstreamNameservers ["8.8.8.8", "[2001:db8::1]:53"]
//     -> --server=8.8.8.8  --server=[2001:db8::1]#53  --no-resolv
// The addresses are kube-dns's text with its "munge": the ':' before a port becomes
// dnsmasq's '#' (`ipv4:port`, `[ipv6]:port`, as upstream::kKubeDnsSyntax reads them);
// brackets stay.
// Stub domains come out sorted by name (kube-dns walks a Go map: any order), each
// domain's servers in the ConfigMap's order, then the upstreams in order.
//
// Host names are resolved by the caller (HostAddresses: the last known address of each
// name). A name with no known address is left out (kube-dns passed the name itself, which
// dnsmasq refuses); a stub domain left with no server at all becomes `/domain/` (answered
// NXDOMAIN locally), so a private domain is never sent to the public upstreams.
//
// Pure functions, no thread affinity.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/ip_address.h"
#include "common/config/kube_dns_config.h"

namespace kdns::nanny {

// The ConfigMap values as written (kube-dns translates the text, not a parsed form).
struct RawConfig {
  std::vector<std::pair<std::string, std::vector<std::string>>> stub_domains;  // sorted
  std::vector<std::string> upstream_nameservers;
  config::RuntimeSwitches switches;  // kdns.logQueries, kdns.debugData
  // kdns.routeOptions as --route-options entries ("/acme.local/force_tcp", "max_fails=3"
  // for "."), sorted by route.
  std::vector<std::string> route_options;

  friend bool operator==(const RawConfig&, const RawConfig&) = default;
};

// The raw values of data that ParseKubeDnsConfig accepted. False with *error when the
// JSON does not have the validated shape (only if called on unvalidated data).
[[nodiscard]] bool ExtractRawConfig(const config::ConfigDirData& data, RawConfig* raw,
                                    std::string* error);

// A short stable version of the values (kube-dns hashes the directory's files): 16 hex
// digits of FNV-1a 64 over each key's presence and value.
std::string ConfigVersion(const config::ConfigDirData& data);

// kube-dns's munge: "1.2.3.4:53" -> "1.2.3.4#53", "[fd00::1]:53" -> "[fd00::1]#53";
// "1.2.3.4", "fd00::1" and host names unchanged.
std::string MungeAddress(std::string_view address);

// Whether a stub server entry is a host name to resolve (not an IP, with or without port).
bool IsHostName(std::string_view server);

// The host names of the stub domains, sorted, without repeats.
std::vector<std::string> HostNames(const RawConfig& raw);

// Last known address of each host name.
using HostAddresses = std::map<std::string, IpAddress>;

struct ChildConfig {
  std::vector<std::string> servers;     // --server values, in order
  bool no_resolv = false;               // upstreamNameservers given
  std::vector<std::string> unresolved;  // host names left out: no address known
  // In-place mode: handed to frontend-cache in the servers file; restart mode: not applied.
  config::RuntimeSwitches switches;
  // In-place mode: `route-options=` lines of the servers file; restart mode: not applied.
  std::vector<std::string> route_options;

  friend bool operator==(const ChildConfig&, const ChildConfig&) = default;
};

ChildConfig Translate(const RawConfig& raw, const HostAddresses& hosts);

// Routes each zone kubedns serves besides the cluster zone (-kubednsZones: clusterset.local,
// slice.local) to kubedns, as the manifests route the cluster zone: "/zone/<kubedns>" (the
// address munged) before every stub domain, in the order given.
void AddKubednsZones(const std::vector<std::string>& zones, std::string_view kubedns_server,
                     ChildConfig* config);

// Node-local mode's cluster zones: the cluster domain, the reverse zones (in-addr.arpa,
// ip6.arpa), then `kubedns_zones` (lower case, without trailing dots; no repeats).
std::vector<std::string> ClusterZones(std::string_view cluster_domain,
                                      const std::vector<std::string>& kubedns_zones);

// Node-local mode: routes each cluster zone to the -upstreamsvc ClusterIP on port 53 over
// TCP (tcp://: persistent, pipelined connections), before every stub domain. The one place
// that writes the cluster zones' server lines.
void AddClusterZones(const std::vector<std::string>& zones, const IpAddress& cluster_ip,
                     ChildConfig* config);

// The child's generated arguments (restart mode): "--server=V"... then "--no-resolv".
std::vector<std::string> ToArguments(const ChildConfig& config);

// A --servers-file for frontend-cache (in-place mode): one `server=V` line per server, then
// `log-queries=true|extra|false` and `debug-data=true|false` for the switches set, and a
// `route-options=ENTRY` line per kdns.routeOptions route.
// --no-resolv has no line: frontend-cache asks resolv.conf only when no default upstream
// is configured, which is exactly when kube-dns leaves --no-resolv out.
std::string ToServersFile(const ChildConfig& config, std::string_view version);

}  // namespace kdns::nanny
