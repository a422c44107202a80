// The kube-dns ConfigMap (`kube-system/kube-dns`), as kubedns and the nanny read it from
// its mounted directory: `stubDomains` (a JSON object, domain -> list of nameservers) and
// `upstreamNameservers` (a JSON list of at most three nameservers). Other keys are ignored
// (`federations` belonged to the removed Kubernetes federation v1), but for three of ours,
// kdns.logQueries and kdns.debugData (runtime_switches.h), and kdns.routeOptions: a JSON
// object of route to option text (common/upstream/route_options.h), a route being one of
// the stubDomains keys or "." for the default upstreams:
//   kdns.routeOptions: '{"acme.local": "force_tcp,policy=sequential", ".": "max_fails=3"}'
// Its options for a route add to (and override, option by option) the program's
// --route-options for that route.
//
// Reading (ReadConfigDir). The kubelet writes a ConfigMap volume as a timestamped
// directory, points the `..data` symlink at it with an atomic rename, then removes the old
// directory; each key is a symlink `<key> -> ..data/<key>`. We resolve `..data` once and read
// every key from that one target directory, then check that `..data` still points there
// (otherwise the kubelet swapped it, and may have removed what we read, while we read: we
// start over). So the keys always come from one version of the ConfigMap. A directory
// without `..data` (tests, `make run`) is read as plain files. A missing key is an absent
// value; an empty directory is the empty config.
//
// Validation (ParseKubeDnsConfig) follows kube-dns's (pkg/dns/config/config.go), so the
// same ConfigMaps are accepted and rejected:
//   - stubDomains keys are DNS-1123 subdomains (lower case, no trailing dot); each
//     nameserver is an IP (`10.0.0.10`, `fd00::10`), an IP with a port (`10.0.0.10:5353`,
//     `[fd00::10]:5353`) or a DNS-1123 host name (port 53; resolving it is the caller's job).
//   - upstreamNameservers: at most three, each an IP with an optional port.
//   Ours, beyond kube-dns: `tcp://` before an IP form in either (`tcp://10.0.0.1:53`): that
//   upstream is asked over TCP only (a host name takes no scheme).
// The addresses are parsed by common/upstream/upstream_address.h (kKubeDnsSyntax).
// One bad value rejects the whole config with a one-line error, and the caller keeps the
// configuration it had. Two differences, both stricter, for values that cannot work
// anyway: a domain whose labels do not fit DNS (over 63 octets) and port 0 are refused.
// An invalid JSON value, also an empty one, is an error (kube-dns too); JSON `null` is the
// same as an absent key.
//
// Plain functions and values, no thread affinity. Independent of the programs: kubedns
// and the nanny both use it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config/runtime_switches.h"
#include "common/dns/name.h"
#include "common/loop/socket_address.h"
#include "common/upstream/route_options.h"
#include "common/upstream/upstream_address.h"

namespace kdns::config {

// The ConfigMap keys we read.
inline constexpr std::string_view kStubDomainsKey = "stubDomains";
inline constexpr std::string_view kUpstreamNameserversKey = "upstreamNameservers";
inline constexpr std::string_view kRouteOptionsKey = "kdns.routeOptions";
// kube-dns's limit on upstreamNameservers.
inline constexpr size_t kMaxUpstreamNameservers = 3;
// A ConfigMap holds at most 1 MiB; a larger file is not one.
inline constexpr size_t kMaxValueBytes = 1 << 20;

// The raw values of one snapshot of the directory (nullopt: key absent).
struct ConfigDirData {
  std::optional<std::string> stub_domains;
  std::optional<std::string> upstream_nameservers;
  // Ours (runtime_switches.h): kdns.logQueries, kdns.debugData.
  std::optional<std::string> log_queries = std::nullopt;
  std::optional<std::string> debug_data = std::nullopt;
  std::optional<std::string> route_options = std::nullopt;  // kdns.routeOptions

  friend bool operator==(const ConfigDirData&, const ConfigDirData&) = default;
};

// Reads `dir` as one snapshot (see the header comment). False with a one-line error
// ("/etc/kube-dns: cannot open: No such file or directory") when it cannot be read.
[[nodiscard]] bool ReadConfigDir(const std::string& dir, ConfigDirData* data, std::string* error);

// One nameserver of a stub domain: an address, or a host name to resolve (port 53).
struct StubServer {
  std::optional<upstream::Upstream> address;
  dns::Name host;  // when !address: lower case

  bool is_host() const { return !address.has_value(); }
  // As kube-dns's nanny writes it for dnsmasq: `10.0.0.10#53`, `fd00::10#53`, `dns.example`.
  std::string ToString() const;
  friend bool operator==(const StubServer&, const StubServer&) = default;
};

struct StubDomain {
  dns::Name domain;  // lower case, e.g. acme.local.
  std::vector<StubServer> servers;

  friend bool operator==(const StubDomain&, const StubDomain&) = default;
};

struct KubeDnsConfig {
  std::vector<StubDomain> stub_domains;  // sorted by domain as written (no final dot);
                                         // one entry per domain
  std::vector<upstream::Upstream> upstream_nameservers;
  RuntimeSwitches switches;  // kdns.logQueries, kdns.debugData
  // kdns.routeOptions, sorted by route ("." first as the default route).
  std::vector<upstream::RouteOptionsEntry> route_options;

  bool empty() const {
    return stub_domains.empty() && upstream_nameservers.empty() && switches.empty() &&
           route_options.empty();
  }
  // One line for logs: `stubDomains: acme.local.=[10.0.0.10#53]; upstreamNameservers: [...]`,
  // then `; kdns.logQueries=true ...` when a switch is set.
  std::string ToString() const;
  friend bool operator==(const KubeDnsConfig&, const KubeDnsConfig&) = default;
};

// Parses and validates the values. False with a one-line error naming the key and value.
[[nodiscard]] bool ParseKubeDnsConfig(const ConfigDirData& data, KubeDnsConfig* config,
                                      std::string* error);

// ReadConfigDir, then ParseKubeDnsConfig.
[[nodiscard]] bool LoadKubeDnsConfig(const std::string& dir, KubeDnsConfig* config,
                                     std::string* error);

// Kubernetes' IsDNS1123Subdomain: at most 253 characters, dot-separated labels of lower
// case letters, digits and '-', each starting and ending with a letter or digit.
bool IsDns1123Subdomain(std::string_view text);
// Kubernetes' IsDNS1123Label: one such label, at most 63 characters.
bool IsDns1123Label(std::string_view text);

}  // namespace kdns::config
