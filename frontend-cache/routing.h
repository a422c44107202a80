// Where frontend-cache sends a query: the routing table built from --server options and
// resolv.conf, as a upstream::RouteTable (common/upstream/route_table.h: the most specific
// --server=/domain/ wins, longest suffix match by labels, case-insensitive). Names under no
// configured domain go to the default upstreams (--server=ip), or, when there are none, to
// resolv.conf's nameservers (unless --no-resolv). A domain configured with --server=/domain/
// alone is local: answered NXDOMAIN, never forwarded (what dnsmasq answers for a local
// domain it has no data for). With no upstream at all, queries are REFUSED (as dnsmasq
// does with no servers).
//
// A route's upstreams, as the Forwarder's UpstreamSet, also name its in-flight budget
// (common/upstream/forward_budgets.h): domains sent to the very same servers (the cluster
// zone and the reverse zones, all to kubedns) share one.
//
// A RoutingTable is immutable once built and safe to read from any thread; a reload
// builds a new one and publishes it as a snapshot. Lookup allocates nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/ip_address.h"
#include "common/dns/name.h"
#include "common/loop/socket_address.h"
#include "common/upstream/route_table.h"
#include "frontend-cache/options.h"

namespace kdns::frontend {

enum class RouteAction : uint8_t {
  kForward,   // send to `upstreams`, in order of preference
  kNxDomain,  // a local-only domain (--server=/domain/)
  kRefused,   // nowhere to send it
};

struct Route {
  dns::Name domain;  // lower-cased; the root for the default route
  RouteAction action = RouteAction::kRefused;
  std::vector<upstream::Upstream> upstreams;

  friend bool operator==(const Route& a, const Route& b) {
    return a.domain.IdenticalTo(b.domain) && a.action == b.action && a.upstreams == b.upstreams;
  }
};

class RoutingTable {
 public:
  // Everything refused.
  RoutingTable() = default;

  // `resolv_conf` holds resolv.conf's nameservers, or nothing under --no-resolv. Several
  // --server options for one domain add up; `/domain/#` adds the default upstreams after
  // the domain's own.
  static RoutingTable Build(std::span<const ServerOption> servers,
                            std::span<const loop::SocketAddress> resolv_conf);

  // The route for `qname`: the most specific domain route, else the default route.
  const Route& Lookup(const dns::Name& qname) const { return table_.Lookup(qname); }

  const Route& default_route() const { return table_.default_route(); }
  std::span<const Route> domain_routes() const { return table_.domain_routes(); }
  // A route's index across threads (server::Decision): upstream::RouteTable's.
  static constexpr uint32_t kDefaultRoute = upstream::RouteTable<Route>::kDefaultRoute;
  uint32_t IndexOf(const Route& route) const { return table_.IndexOf(route); }
  const Route& RouteAt(uint32_t index) const { return table_.RouteAt(index); }
  // Every distinct upstream, default ones first, in configuration order (servers.bind).
  std::vector<upstream::Upstream> AllUpstreams() const;

 private:
  upstream::RouteTable<Route> table_;
};

// What a reload must drop from the cache: everything when the default route changed, else
// the domains whose route was added, removed or changed (Cache::FlushDomain each).
struct RoutingChange {
  bool flush_all = false;
  std::vector<dns::Name> domains;
};
RoutingChange DiffRoutes(const RoutingTable& before, const RoutingTable& after);

// Start-up check that no upstream is this server itself: an upstream on our port at one of
// our listening addresses, or, when we listen on every address (no --listen-address, or
// 0.0.0.0 / ::), at a loopback address or one of `local_addresses` (the host's interface
// addresses, gathered by the caller). Skipped for port 0. False with a one-line error.
[[nodiscard]] bool CheckNoSelfLoop(const RoutingTable& table,
                                   std::span<const IpAddress> listen_addresses, uint16_t port,
                                   std::span<const IpAddress> local_addresses, std::string* error);

}  // namespace kdns::frontend
