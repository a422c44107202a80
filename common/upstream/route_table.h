// RouteTable: which route serves a name, for both DNS servers. A route is the caller's
// own type (frontend-cache: forward / local NXDOMAIN / REFUSED with dnsmasq's --server
// semantics; kubedns: a stubDomain or the default upstreams) with a `dns::Name domain`
// member; the table holds one route per domain and a default route, and Lookup returns
// the most specific domain route a name is under (longest suffix match by labels,
// case-insensitive), else the default. Each program builds its routes from its own
// configuration (frontend-cache/routing.h, kubedns/serving/upstream_routes.h).
//
// Immutable once built and safe to read from any thread; a reload builds a new table and
// publishes it as a snapshot. Lookup allocates nothing: it lower-cases the name on the
// stack (dns::Name is inline) and probes a hash map with each suffix, longest first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/dns/name.h"

namespace kdns::upstream {

// The lookup behind RouteTable: lower-cased domains to an index.
class DomainIndex {
 public:
  // Adds `domain` (compared lower-cased) as `index`; false if it is already there.
  bool Add(const dns::Name& domain, uint32_t index);
  // The index of the most specific domain `qname` is equal to or under.
  std::optional<uint32_t> Find(const dns::Name& qname) const;
  bool empty() const { return by_domain_.empty(); }

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };

  // Lower-cased wire form of each domain -> index.
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> by_domain_;
  size_t max_labels_ = 0;
};

template <typename Route>
class RouteTable {
 public:
  RouteTable() = default;
  // `routes` hold distinct domains (a repeated domain: the first one counts), in the
  // order domain_routes() keeps; `fallback` serves every other name.
  RouteTable(std::vector<Route> routes, Route fallback)
      : routes_(std::move(routes)), default_(std::move(fallback)) {
    for (size_t i = 0; i < routes_.size(); ++i) {
      (void)index_.Add(routes_[i].domain, static_cast<uint32_t>(i));
    }
  }

  // The route for `qname`: the most specific domain route, else the default route.
  const Route& Lookup(const dns::Name& qname) const {
    if (index_.empty()) return default_;
    const std::optional<uint32_t> found = index_.Find(qname);
    return found ? routes_[*found] : default_;
  }

  const Route& default_route() const { return default_; }
  std::span<const Route> domain_routes() const { return routes_; }

  // A route's index, as a server::Decision carries it from a receiver thread to the loop:
  // its place in domain_routes(), or kDefaultRoute. `route` is one of this table's.
  static constexpr uint32_t kDefaultRoute = UINT32_MAX;
  uint32_t IndexOf(const Route& route) const {
    if (&route >= routes_.data() && &route < routes_.data() + routes_.size()) {
      return static_cast<uint32_t>(&route - routes_.data());
    }
    return kDefaultRoute;
  }
  // The route IndexOf named, in this table (the same generation of the same routing).
  const Route& RouteAt(uint32_t index) const {
    return index == kDefaultRoute ? default_ : routes_[index];
  }

  friend bool operator==(const RouteTable& a, const RouteTable& b) {
    return a.routes_ == b.routes_ && a.default_ == b.default_;
  }

 private:
  std::vector<Route> routes_;
  Route default_;
  DomainIndex index_;
};

}  // namespace kdns::upstream
