// RouteOptions: how one route's upstreams are asked, the choices of CoreDNS's `forward`
// plugin, per route (a stub domain, or the default upstreams), the same in frontend-cache
// and kubedns. One option text, written the same everywhere (the --route-options flag of
// both programs, and the values of the kube-dns ConfigMap's `kdns.routeOptions` key):
//
//   force_tcp          every upstream of the route asked over TCP only, as if written
//                      `tcp://` (CoreDNS force_tcp)
//   prefer_udp         over UDP even when the client came over TCP; TCP still for a
//                      truncated reply (CoreDNS prefer_udp)
//   policy=NAME        which healthy upstream is asked first (CoreDNS policy):
//                        random       a random order for each query
//                        round_robin  the next one for each query
//                        sequential   the order written
//                      Without it, the program's own order: the lowest smoothed RTT, or the
//                      order written under frontend-cache's --strict-order.
//   max_fails=N        unanswered health probes in a row that mark a failed upstream down
//                      (no client query is sent to it); 0: never down and never probed
//                      (CoreDNS max_fails).
//                      Default 1.
//   health_check=DUR   the interval of the health probes (". NS") to a failed upstream, a
//                      Go duration (`500ms`, `0.5s`); default the program's (5s)
//                      (CoreDNS health_check).
//
// Options are separated by commas. A list entry (ParseRouteOptionsEntry) names its routes
// the dnsmasq way, `/domain/[domain/...]OPTIONS`, or the default route with no domain:
//   --route-options=/acme.local/force_tcp,policy=sequential
//   --route-options=policy=round_robin,max_fails=3,health_check=1s
// Entries that name the same route add up, later ones winning option by option. A route's
// options are those written for its exact domain (not inherited by subdomains).
//
// Health (max_fails, health_check) belongs to an upstream, not to a route: an upstream
// listed in two routes with different values follows the route of the query that last used
// it. Values; no thread affinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/dns/name.h"

namespace kdns::upstream {

// Which healthy upstream of a route is asked first.
enum class RoutePolicy : uint8_t {
  kDefault,     // the program's order (Forwarder::Options::server_order)
  kRandom,      // a random order per query
  kRoundRobin,  // rotated by one per query
  kSequential,  // the order written
};
// How a route's upstreams are asked.
enum class RouteTransport : uint8_t {
  kDefault,    // UDP; TCP for a truncated reply or a client that came over TCP
  kForceTcp,   // TCP only (tcp:// for every upstream)
  kPreferUdp,  // UDP even for a client that came over TCP; TCP for a truncated reply
};

struct RouteOptions {
  RoutePolicy policy = RoutePolicy::kDefault;
  RouteTransport transport = RouteTransport::kDefault;
  std::optional<uint32_t> max_fails;        // unset: UpstreamHealth's default (1)
  std::optional<uint64_t> health_check_ms;  // unset: Forwarder::Options::probe_interval_ms

  bool IsDefault() const { return *this == RouteOptions(); }
  bool HasHealth() const { return max_fails.has_value() || health_check_ms.has_value(); }
  size_t Hash() const;
  // The option text ("force_tcp,policy=sequential,max_fails=3,health_check=500ms"); empty
  // for the defaults.
  std::string ToString() const;
  // `other`'s options that are set, over these.
  void MergeFrom(const RouteOptions& other);

  friend bool operator==(const RouteOptions&, const RouteOptions&) = default;
};

// The options of some routes: `domains` (lower case), or the default route.
struct RouteOptionsEntry {
  std::vector<dns::Name> domains;
  bool default_route = false;
  RouteOptions options;

  friend bool operator==(const RouteOptionsEntry&, const RouteOptionsEntry&) = default;
};

// "force_tcp,policy=sequential": false with a one-line error naming the bad option.
[[nodiscard]] bool ParseRouteOptions(std::string_view text, RouteOptions* options,
                                     std::string* error);
// One entry: `/domain/[domain/...]OPTIONS` or `OPTIONS` (the default route).
[[nodiscard]] bool ParseRouteOptionsEntry(std::string_view text, RouteOptionsEntry* entry,
                                          std::string* error);
// Entries separated by whitespace (kubedns's flag), appended to `entries`.
[[nodiscard]] bool ParseRouteOptionsList(std::string_view text,
                                         std::vector<RouteOptionsEntry>* entries,
                                         std::string* error);

// The options of the route for `domain` (the root: the default route), merged from every
// entry naming it, in order.
RouteOptions RouteOptionsFor(std::span<const RouteOptionsEntry> entries, const dns::Name& domain);

}  // namespace kdns::upstream
