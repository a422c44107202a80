// frontend-cache's forwarding options in dnsmasq's syntax: --server (an upstream, a local
// domain, or a domain sent to the default upstreams), --address (fixed addresses for a
// domain) and --servers-file (server= lines, what the nanny writes). Pure: parses text,
// reads no file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/ip_address.h"
#include "common/config/runtime_switches.h"
#include "common/dns/name.h"
#include "common/loop/socket_address.h"
#include "common/upstream/route_options.h"
#include "common/upstream/upstream_address.h"

namespace kdns::frontend {

// One --server value.
//   --server=ip[#port]             a default upstream (also [ipv6], [ipv6]#port, [ipv6]:port)
//   --server=tcp://ip[#port]       the same, asked over TCP only, on persistent pipelined
//                                  connections (RFC 7766); also after /domain/ (ours, not
//                                  dnsmasq's)
//   --server=/d1/d2/.../ip[#port]  upstream for those domains and the names below them
//   --server=/domain/              local only: never forwarded, answered NXDOMAIN (as
//                                  dnsmasq answers a local domain it has no data for)
//   --server=/domain/#             forwarded to the default upstreams (an exception under a
//                                  less specific --server=/parent/ip)
struct ServerOption {
  enum class Target : uint8_t { kUpstream, kLocal, kDefaultUpstreams };
  std::vector<dns::Name> domains;  // empty: a default upstream
  Target target = Target::kUpstream;
  upstream::Upstream upstream;  // for kUpstream

  friend bool operator==(const ServerOption&, const ServerOption&) = default;
};

[[nodiscard]] bool ParseServerOption(std::string_view value, ServerOption* server,
                                     std::string* error);

// One --address value with an address (dnsmasq's -A). Without one (--address=/domain/) it
// is --server=/domain/ (local: NXDOMAIN) and parses to a ServerOption instead.
//   --address=/d1/d2/.../ip   A (IPv4) or AAAA (IPv6) queries for those domains and every
//                             name below them are answered `ip`; repeat for more addresses
//   --address=/domain/#       both null addresses, 0.0.0.0 and ::
//   --address=/#/ip           every name (the root: "/#/" matches any domain)
// Queries of other types, and of the family with no address given, are routed as usual.
struct AddressOption {
  std::vector<dns::Name> domains;
  std::vector<IpAddress> addresses;

  friend bool operator==(const AddressOption&, const AddressOption&) = default;
};

// Parses an --address value into `address`, or into `server` for the empty form (`*local`
// says which). False with a one-line error.
[[nodiscard]] bool ParseAddressOption(std::string_view value, AddressOption* address,
                                      ServerOption* server, bool* local, std::string* error);

// A --servers-file (dnsmasq's format): one `server=...` per line (the --server value
// syntax), blank lines and `#` comments ignored. Appends to `servers`. Ours, when `switches`
// is given: `log-queries=true|extra|false` and `debug-data=true|false`, the kube-dns
// ConfigMap's runtime switches as the nanny hands them on (common/config/runtime_switches.h);
// and, when `route_options` is given, `route-options=ENTRY` (the --route-options value
// syntax, common/upstream/route_options.h: the ConfigMap's kdns.routeOptions); nothing else
// is allowed. False with a one-line error naming the line.
[[nodiscard]] bool ParseServersFile(
    std::string_view text, std::vector<ServerOption>* servers, std::string* error,
    config::RuntimeSwitches* switches = nullptr,
    std::vector<upstream::RouteOptionsEntry>* route_options = nullptr);

}  // namespace kdns::frontend
