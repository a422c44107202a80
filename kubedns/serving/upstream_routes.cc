#include "kubedns/serving/upstream_routes.h"

#include <algorithm>
#include <utility>

namespace kdns::kubedns {
namespace {

void AddUnique(std::vector<upstream::Upstream>* list, const upstream::Upstream& address) {
  if (std::find(list->begin(), list->end(), address) == list->end()) list->push_back(address);
}

std::string_view Trim(std::string_view text) {
  size_t start = text.find_first_not_of(" \t");
  if (start == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(" \t");
  return text.substr(start, end - start + 1);
}

}  // namespace

const char* RouteKindName(RouteKind kind) { return kind == RouteKind::kStub ? "stub" : "default"; }

const char* DefaultSourceName(DefaultSource source) {
  switch (source) {
    case DefaultSource::kNone:
      return "none";
    case DefaultSource::kConfigMap:
      return "upstreamNameservers";
    case DefaultSource::kFlag:
      return "--nameservers";
    case DefaultSource::kResolvConf:
      return "resolv.conf";
  }
  return "?";
}

namespace {

std::vector<UpstreamRoute> SortedStubs(std::vector<UpstreamRoute> stubs) {
  for (auto& stub : stubs) {
    stub.domain = stub.domain.Lowercased();
    stub.kind = RouteKind::kStub;
  }
  // Most specific first, as stubs() lists them; the lookup does not depend on the order.
  std::stable_sort(stubs.begin(), stubs.end(), [](const auto& a, const auto& b) {
    return a.domain.label_count() > b.domain.label_count();
  });
  return stubs;
}

// The route's options: --route-options, then the ConfigMap's kdns.routeOptions over them.
upstream::RouteOptions RouteOptionsFor(const RoutingInputs& inputs, const dns::Name& domain) {
  upstream::RouteOptions options = upstream::RouteOptionsFor(inputs.flag_route_options, domain);
  options.MergeFrom(upstream::RouteOptionsFor(inputs.config.route_options, domain));
  return options;
}

}  // namespace

UpstreamRoutes::UpstreamRoutes(std::vector<UpstreamRoute> stubs, upstream::UpstreamSet defaults,
                               DefaultSource source)
    : table_(SortedStubs(std::move(stubs)),
             UpstreamRoute{dns::Name::Root(), RouteKind::kDefault, std::move(defaults)}),
      source_(source) {}

std::string UpstreamRoutes::ToString() const {
  std::string out = "stubs: {";
  const auto stub_routes = stubs();
  for (size_t i = 0; i < stub_routes.size(); ++i) {
    if (i > 0) out += ", ";
    out += stub_routes[i].domain.ToText() + "=[" + stub_routes[i].upstreams.ToString() + "]";
  }
  out += "}; default (";
  out += DefaultSourceName(source_);
  out += "): [" + default_route().upstreams.ToString() + "]";
  return out;
}

UpstreamRoutes BuildRoutes(const RoutingInputs& inputs, const HostResolver& resolve,
                           std::vector<std::string>* warnings) {
  std::vector<UpstreamRoute> stubs;
  for (const config::StubDomain& stub : inputs.config.stub_domains) {
    if (stub.servers.empty()) continue;  // no route, as kube-dns's nanny
    if (!inputs.cluster_zone.IsRoot() && stub.domain.IsSubdomainOf(inputs.cluster_zone)) {
      warnings->push_back("stub domain " + stub.domain.ToText() +
                          " is inside the cluster domain: kubedns answers those names itself "
                          "and never forwards them");
    }
    std::vector<upstream::Upstream> addresses;
    for (const config::StubServer& server : stub.servers) {
      if (!server.is_host()) {
        AddUnique(&addresses, *server.address);
        continue;
      }
      std::string error;
      std::vector<IpAddress> ips =
          resolve ? resolve(server.host, &error) : std::vector<IpAddress>();
      if (ips.empty()) {
        warnings->push_back("stub domain " + stub.domain.ToText() + ": cannot resolve " +
                            server.ToString() + (error.empty() ? "" : ": " + error));
        continue;
      }
      if (!error.empty()) {
        warnings->push_back("stub domain " + stub.domain.ToText() + ": cannot resolve " +
                            server.ToString() + ": " + error + "; keeping its last addresses");
      }
      for (const IpAddress& ip : ips) {
        AddUnique(&addresses, loop::SocketAddressOf(ip, upstream::kDnsPort));
      }
    }
    stubs.push_back(UpstreamRoute{
        stub.domain, RouteKind::kStub,
        upstream::UpstreamSet(std::move(addresses), RouteOptionsFor(inputs, stub.domain))});
  }

  std::vector<upstream::Upstream> defaults;
  DefaultSource source = DefaultSource::kNone;
  if (!inputs.config.upstream_nameservers.empty()) {
    source = DefaultSource::kConfigMap;
    for (const auto& address : inputs.config.upstream_nameservers) AddUnique(&defaults, address);
  } else if (!inputs.flag_nameservers.empty()) {
    source = DefaultSource::kFlag;
    for (const auto& address : inputs.flag_nameservers) AddUnique(&defaults, address);
  } else if (!inputs.resolv_conf.empty()) {
    source = DefaultSource::kResolvConf;
    for (const auto& address : inputs.resolv_conf) AddUnique(&defaults, address);
  }
  return UpstreamRoutes(
      std::move(stubs),
      upstream::UpstreamSet(std::move(defaults), RouteOptionsFor(inputs, dns::Name::Root())),
      source);
}

std::optional<std::vector<upstream::Upstream>> ParseNameserversFlag(
    std::string_view text, const upstream::AddressSyntax& syntax, std::string* error) {
  std::vector<upstream::Upstream> addresses;
  if (Trim(text).empty()) return addresses;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view entry = Trim(text.substr(start, comma - start));
    auto address = upstream::ParseUpstreamAddress(entry, syntax);
    if (!address) {
      *error = "not an IP address with an optional port: \"" + std::string(entry) + "\"";
      return std::nullopt;
    }
    AddUnique(&addresses, *address);
    start = comma + 1;
  }
  return addresses;
}

}  // namespace kdns::kubedns
