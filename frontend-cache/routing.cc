#include "frontend-cache/routing.h"

#include <algorithm>
#include <map>

#include "common/upstream/upstream_address.h"

namespace kdns::frontend {
namespace {

std::string WireKey(const dns::Name& name) {
  const auto wire = name.wire();
  return std::string(reinterpret_cast<const char*>(wire.data()), wire.size());
}

void AddUnique(std::vector<upstream::Upstream>* list, const upstream::Upstream& upstream) {
  if (std::find(list->begin(), list->end(), upstream) == list->end()) list->push_back(upstream);
}

bool IsLoopback(const IpAddress& address) {
  const auto bytes = address.bytes();
  if (address.is_v4()) return bytes[0] == 127;
  return address == *IpAddress::Parse("::1");
}

bool IsUnspecified(const IpAddress& address) {
  const auto bytes = address.bytes();
  return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
}

}  // namespace

RoutingTable RoutingTable::Build(std::span<const ServerOption> servers,
                                 std::span<const loop::SocketAddress> resolv_conf) {
  std::vector<upstream::Upstream> defaults;
  for (const ServerOption& server : servers) {
    if (server.domains.empty()) AddUnique(&defaults, server.upstream);
  }
  if (defaults.empty()) {
    for (const loop::SocketAddress& upstream : resolv_conf) AddUnique(&defaults, upstream);
  }
  Route fallback;
  fallback.action = defaults.empty() ? RouteAction::kRefused : RouteAction::kForward;
  fallback.upstreams = defaults;

  struct Pending {
    std::vector<upstream::Upstream> upstreams;
    bool use_defaults = false;
  };
  std::vector<std::pair<dns::Name, Pending>> pending;  // configuration order
  for (const ServerOption& server : servers) {
    for (const dns::Name& domain : server.domains) {
      const dns::Name lower = domain.Lowercased();
      auto it = std::find_if(pending.begin(), pending.end(),
                             [&](const auto& entry) { return entry.first.IdenticalTo(lower); });
      if (it == pending.end()) it = pending.insert(pending.end(), {lower, Pending{}});
      if (server.target == ServerOption::Target::kUpstream) {
        AddUnique(&it->second.upstreams, server.upstream);
      } else if (server.target == ServerOption::Target::kDefaultUpstreams) {
        it->second.use_defaults = true;
      }
    }
  }
  std::vector<Route> routes;
  for (auto& [domain, entry] : pending) {
    Route route;
    route.domain = domain;
    route.upstreams = std::move(entry.upstreams);
    if (entry.use_defaults) {
      for (const upstream::Upstream& upstream : defaults) AddUnique(&route.upstreams, upstream);
    }
    if (!route.upstreams.empty()) {
      route.action = RouteAction::kForward;
    } else {
      route.action = entry.use_defaults ? RouteAction::kRefused : RouteAction::kNxDomain;
    }
    routes.push_back(std::move(route));
  }
  RoutingTable table;
  table.table_ = upstream::RouteTable<Route>(std::move(routes), std::move(fallback));
  return table;
}

std::vector<upstream::Upstream> RoutingTable::AllUpstreams() const {
  std::vector<upstream::Upstream> all = default_route().upstreams;
  for (const Route& route : domain_routes()) {
    for (const upstream::Upstream& upstream : route.upstreams) AddUnique(&all, upstream);
  }
  return all;
}

RoutingChange DiffRoutes(const RoutingTable& before, const RoutingTable& after) {
  RoutingChange change;
  if (!(before.default_route() == after.default_route())) {
    change.flush_all = true;
    return change;
  }
  std::map<std::string, std::pair<const Route*, const Route*>> domains;
  for (const Route& route : before.domain_routes()) domains[WireKey(route.domain)].first = &route;
  for (const Route& route : after.domain_routes()) domains[WireKey(route.domain)].second = &route;
  for (const auto& [key, routes] : domains) {
    const auto& [old_route, new_route] = routes;
    if (old_route != nullptr && new_route != nullptr && *old_route == *new_route) continue;
    change.domains.push_back(old_route != nullptr ? old_route->domain : new_route->domain);
  }
  return change;
}

bool CheckNoSelfLoop(const RoutingTable& table, std::span<const IpAddress> listen_addresses,
                     uint16_t port, std::span<const IpAddress> local_addresses,
                     std::string* error) {
  if (port == 0) return true;
  const bool wildcard =
      listen_addresses.empty() ||
      std::any_of(listen_addresses.begin(), listen_addresses.end(), IsUnspecified);
  for (const upstream::Upstream& upstream : table.AllUpstreams()) {
    if (upstream.address.port() != port) continue;
    const IpAddress address = loop::IpOf(upstream.address);
    const bool listened = std::find(listen_addresses.begin(), listen_addresses.end(), address) !=
                          listen_addresses.end();
    const bool local =
        IsLoopback(address) || IsUnspecified(address) ||
        std::find(local_addresses.begin(), local_addresses.end(), address) != local_addresses.end();
    if (listened || (wildcard && local)) {
      *error = "upstream " + upstream::FormatUpstreamAddress(upstream) +
               " is this server itself (listening on " +
               (wildcard ? std::string("every address") : address.ToString()) + " port " +
               std::to_string(port) + "): queries would loop";
      return false;
    }
  }
  return true;
}

}  // namespace kdns::frontend
