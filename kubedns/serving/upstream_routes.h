// Where kubedns sends the names it does not own (see answerer.h): the routing built from
// the kube-dns ConfigMap, --nameservers and /etc/resolv.conf.
//
//   - A name under a stubDomain goes to that stub's servers; the most specific domain wins
//     (longest match by labels, case-insensitive). A stub whose host names all failed to
//     resolve keeps its route with no server: its names get SERVFAIL rather than leak to the
//     default upstreams. A stub listed with no server at all is no route (kube-dns's nanny
//     writes no --server for it either).
//   - Every other name goes to the default upstreams: the ConfigMap's upstreamNameservers
//     when set, else --nameservers, else the nameservers of /etc/resolv.conf (skydns reads
//     resolv.conf when it has no nameservers). None at all: SERVFAIL, as skydns answers
//     ("can not forward, no nameservers defined").
//
// The lookup is upstream::RouteTable's (common/upstream/route_table.h), shared with
// frontend-cache's routing. A route's UpstreamSet also names its in-flight budget
// (common/upstream/forward_budgets.h): stub domains sent to the very same servers share
// one. An UpstreamRoutes is immutable once built; the config thread builds a new one on
// every change and hands it to each DNS thread. Lookup allocates nothing. No thread
// affinity.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/ip_address.h"
#include "common/config/kube_dns_config.h"
#include "common/dns/name.h"
#include "common/loop/socket_address.h"
#include "common/upstream/route_table.h"
#include "common/upstream/upstream_set.h"

namespace kdns::kubedns {

enum class RouteKind : uint8_t { kStub, kDefault };
const char* RouteKindName(RouteKind kind);  // "stub", "default"

// Where the default upstreams came from.
enum class DefaultSource : uint8_t { kNone, kConfigMap, kFlag, kResolvConf };
const char* DefaultSourceName(DefaultSource source);

struct UpstreamRoute {
  dns::Name domain;  // lower case; the root for the default route
  RouteKind kind = RouteKind::kDefault;
  upstream::UpstreamSet upstreams;

  friend bool operator==(const UpstreamRoute& a, const UpstreamRoute& b) {
    return a.domain.IdenticalTo(b.domain) && a.kind == b.kind && a.upstreams == b.upstreams;
  }
};

class UpstreamRoutes {
 public:
  // No stub domain and no default upstream: everything gets SERVFAIL.
  UpstreamRoutes() = default;
  UpstreamRoutes(std::vector<UpstreamRoute> stubs, upstream::UpstreamSet defaults,
                 DefaultSource source);

  // The most specific stub route `qname` is under, else the default route.
  const UpstreamRoute& Lookup(const dns::Name& qname) const { return table_.Lookup(qname); }

  const UpstreamRoute& default_route() const { return table_.default_route(); }
  DefaultSource default_source() const { return source_; }
  // Most labels first.
  std::span<const UpstreamRoute> stubs() const { return table_.domain_routes(); }
  // A route's index across threads (server::Decision): upstream::RouteTable's.
  uint32_t IndexOf(const UpstreamRoute& route) const { return table_.IndexOf(route); }
  const UpstreamRoute& RouteAt(uint32_t index) const { return table_.RouteAt(index); }
  // One line for logs: `stubs: acme.local.=[10.0.0.10#53]; default (resolv.conf): [...]`.
  std::string ToString() const;

  friend bool operator==(const UpstreamRoutes& a, const UpstreamRoutes& b) {
    return a.table_ == b.table_ && a.source_ == b.source_;
  }

 private:
  upstream::RouteTable<UpstreamRoute> table_;
  DefaultSource source_ = DefaultSource::kNone;
};

// What the routes are built from.
struct RoutingInputs {
  dns::Name cluster_zone;                            // for a warning only
  config::KubeDnsConfig config;                      // the ConfigMap in effect
  std::vector<upstream::Upstream> flag_nameservers;  // --nameservers
  std::vector<loop::SocketAddress> resolv_conf;      // /etc/resolv.conf (port 53)
  // --route-options; the ConfigMap's kdns.routeOptions (config.route_options) apply after.
  std::vector<upstream::RouteOptionsEntry> flag_route_options;
};

// Resolves a stub server's host name: its addresses; when the lookup failed, *error and
// the last known addresses (config::StubHostAddresses), or none if it never resolved.
using HostResolver =
    std::function<std::vector<IpAddress>(const dns::Name& host, std::string* error)>;

// Builds the routes. Host names of stub servers go through `resolve` (port 53); what could
// not be resolved, and stub domains inside the cluster domain (never forwarded, since
// kubedns answers those names itself), are reported in *warnings, one line each.
UpstreamRoutes BuildRoutes(const RoutingInputs& inputs, const HostResolver& resolve,
                           std::vector<std::string>* warnings);

// kube-dns's --nameservers (and --notify): comma-separated `ip`, `ip:port` or `[ipv6]:port`
// (and, ours, a bare IPv6 address, and `tcp://` before any of them where `syntax` takes it).
// nullopt with a one-line *error naming the bad entry.
std::optional<std::vector<upstream::Upstream>> ParseNameserversFlag(
    std::string_view text, const upstream::AddressSyntax& syntax, std::string* error);

}  // namespace kdns::kubedns
