#include "kubedns/serving/upstream_routes.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/dns/testing.h"

namespace kdns::kubedns {
namespace {

using dns::testing::N;

config::KubeDnsConfig Config(const std::string& stubs, const std::string& upstreams = "[]") {
  config::KubeDnsConfig config;
  std::string error;
  const bool ok = config::ParseKubeDnsConfig({stubs, upstreams}, &config, &error);
  INFO(error);
  REQUIRE(ok);
  return config;
}

loop::SocketAddress A(const char* text) { return *loop::SocketAddress::Parse(text); }

IpAddress Ip(const char* text) { return *IpAddress::Parse(text); }
loop::SocketAddress Up(const char* text) {
  return loop::SocketAddressOf(Ip(text), upstream::kDnsPort);
}

UpstreamRoutes Build(const RoutingInputs& inputs, std::vector<std::string>* warnings = nullptr) {
  std::vector<std::string> ignored;
  return BuildRoutes(
      inputs,
      [](const dns::Name& host, std::string* error) -> std::vector<IpAddress> {
        if (host == N("dns.acme.example.")) return {Ip("10.9.0.1"), Ip("fd00::9")};
        *error = "no such host";
        return {};
      },
      warnings != nullptr ? warnings : &ignored);
}

}  // namespace

TEST_CASE("the most specific stub domain wins, everything else goes to the default",
          "[kubedns][routing]") {
  RoutingInputs inputs;
  inputs.config = Config(R"({"acme.local": ["10.0.0.1"], "b.acme.local": ["10.0.0.2:5353"],
                             "example": ["10.0.0.3"]})",
                         R"(["8.8.8.8"])");
  UpstreamRoutes routes = Build(inputs);
  struct Case {
    const char* name;
    RouteKind kind;
    const char* domain;
    const char* upstreams;
  };
  auto c = GENERATE(Case{"acme.local.", RouteKind::kStub, "acme.local.", "10.0.0.1#53"},
                    Case{"x.ACME.local.", RouteKind::kStub, "acme.local.", "10.0.0.1#53"},
                    Case{"a.b.acme.local.", RouteKind::kStub, "b.acme.local.", "10.0.0.2#5353"},
                    Case{"B.Acme.Local.", RouteKind::kStub, "b.acme.local.", "10.0.0.2#5353"},
                    Case{"cacme.local.", RouteKind::kDefault, ".", "8.8.8.8#53"},
                    Case{"local.", RouteKind::kDefault, ".", "8.8.8.8#53"},
                    Case{"www.example.", RouteKind::kStub, "example.", "10.0.0.3#53"},
                    Case{"www.example.com.", RouteKind::kDefault, ".", "8.8.8.8#53"},
                    Case{".", RouteKind::kDefault, ".", "8.8.8.8#53"});
  CAPTURE(c.name);
  const UpstreamRoute& route = routes.Lookup(N(c.name));
  CHECK(route.kind == c.kind);
  CHECK(route.domain.ToText() == c.domain);
  CHECK(route.upstreams.ToString() == c.upstreams);
  CHECK(routes.ToString() ==
        "stubs: {b.acme.local.=[10.0.0.2#5353], acme.local.=[10.0.0.1#53], "
        "example.=[10.0.0.3#53]}; default (upstreamNameservers): [8.8.8.8#53]");
}

TEST_CASE("default upstreams: upstreamNameservers, else --nameservers, else resolv.conf",
          "[kubedns][routing]") {
  RoutingInputs inputs;
  inputs.flag_nameservers = {A("10.1.0.1:53"), A("10.1.0.2:5353")};
  inputs.resolv_conf = {Up("10.2.0.1"), Up("fd00::2")};
  SECTION("the ConfigMap's upstreams override the flag") {
    inputs.config = Config("{}", R"(["10.3.0.1", "10.3.0.1"])");
    UpstreamRoutes routes = Build(inputs);
    CHECK(routes.default_source() == DefaultSource::kConfigMap);
    CHECK(routes.default_route().upstreams.ToString() == "10.3.0.1#53");
  }
  SECTION("--nameservers without upstreamNameservers") {
    UpstreamRoutes routes = Build(inputs);
    CHECK(routes.default_source() == DefaultSource::kFlag);
    CHECK(routes.default_route().upstreams.ToString() == "10.1.0.1#53,10.1.0.2#5353");
  }
  SECTION("resolv.conf last") {
    inputs.flag_nameservers.clear();
    UpstreamRoutes routes = Build(inputs);
    CHECK(routes.default_source() == DefaultSource::kResolvConf);
    CHECK(routes.default_route().upstreams.ToString() == "10.2.0.1#53,fd00::2#53");
  }
  SECTION("nothing at all: an empty default route") {
    inputs.flag_nameservers.clear();
    inputs.resolv_conf.clear();
    UpstreamRoutes routes = Build(inputs);
    CHECK(routes.default_source() == DefaultSource::kNone);
    CHECK(routes.Lookup(N("www.example.")).upstreams.empty());
    CHECK(routes == UpstreamRoutes());
  }
}

TEST_CASE("stub host names are resolved; failures keep the stub's names off the default",
          "[kubedns][routing]") {
  RoutingInputs inputs;
  inputs.cluster_zone = N("cluster.local.");
  inputs.config = Config(R"({"acme.local": ["dns.acme.example", "10.0.0.1", "10.9.0.1"],
                             "gone.example": ["nope.example"],
                             "empty.example": [],
                             "svc.cluster.local": ["10.0.0.5"]})");
  inputs.resolv_conf = {Up("10.2.0.1")};
  std::vector<std::string> warnings;
  UpstreamRoutes routes = Build(inputs, &warnings);
  CHECK(routes.Lookup(N("a.acme.local.")).upstreams.ToString() ==
        "10.9.0.1#53,fd00::9#53,10.0.0.1#53");
  const UpstreamRoute& gone = routes.Lookup(N("x.gone.example."));
  CHECK(gone.kind == RouteKind::kStub);
  CHECK(gone.upstreams.empty());
  // A stub listed without servers is no route at all.
  CHECK(routes.Lookup(N("x.empty.example.")).kind == RouteKind::kDefault);
  CHECK(warnings == std::vector<std::string>{
                        "stub domain gone.example.: cannot resolve nope.example: no such host",
                        "stub domain svc.cluster.local. is inside the cluster domain: kubedns "
                        "answers those names itself and never forwards them"});
}

TEST_CASE("a stub host that stopped resolving is routed to its last known addresses",
          "[kubedns][routing]") {
  RoutingInputs inputs;
  inputs.config = Config(R"({"acme.local": ["dns.acme.example"]})");
  std::vector<std::string> warnings;
  // The resolver's answer after a failed lookup: the addresses config::StubHostAddresses
  // kept, and the lookup's error.
  const UpstreamRoutes routes = BuildRoutes(
      inputs,
      [](const dns::Name&, std::string* error) -> std::vector<IpAddress> {
        *error = "timeout";
        return {Ip("10.9.0.1")};
      },
      &warnings);
  CHECK(routes.Lookup(N("a.acme.local.")).upstreams.ToString() == "10.9.0.1#53");
  CHECK(warnings == std::vector<std::string>{"stub domain acme.local.: cannot resolve "
                                             "dns.acme.example: timeout; keeping its last "
                                             "addresses"});
}

TEST_CASE("route options come from --route-options, then kdns.routeOptions over them",
          "[kubedns][routing][route_options]") {
  RoutingInputs inputs;
  config::ConfigDirData data;
  data.stub_domains = R"({"acme.local": ["10.0.0.1"], "corp.example": ["10.0.0.2"]})";
  data.upstream_nameservers = R"(["8.8.8.8"])";
  data.route_options = R"({"acme.local": "policy=random"})";
  std::string error;
  REQUIRE(config::ParseKubeDnsConfig(data, &inputs.config, &error));
  REQUIRE(upstream::ParseRouteOptionsList("/acme.local/force_tcp,policy=sequential max_fails=0",
                                          &inputs.flag_route_options, &error));
  const UpstreamRoutes routes = Build(inputs);
  const UpstreamRoute& acme = routes.Lookup(N("x.acme.local."));
  CHECK(acme.upstreams.options().policy == upstream::RoutePolicy::kRandom);  // the ConfigMap's
  CHECK(acme.upstreams.ToString() == "tcp://10.0.0.1#53");                   // the flag's
  CHECK(routes.Lookup(N("x.corp.example.")).upstreams.options().IsDefault());
  CHECK(routes.default_route().upstreams.options().max_fails == 0u);
  // Options are part of the routes: a change is a new routing.
  inputs.config.route_options.clear();
  CHECK_FALSE(Build(inputs) == routes);
}

TEST_CASE("two builds from the same inputs are equal; a changed server is not",
          "[kubedns][routing]") {
  RoutingInputs inputs;
  inputs.config = Config(R"({"acme.local": ["10.0.0.1"]})");
  CHECK(Build(inputs) == Build(inputs));
  RoutingInputs changed = inputs;
  changed.config = Config(R"({"acme.local": ["10.0.0.2"]})");
  CHECK_FALSE(Build(inputs) == Build(changed));
}

TEST_CASE("--nameservers takes kube-dns's comma-separated forms", "[kubedns][routing]") {
  std::string error;
  auto parsed =
      ParseNameserversFlag("10.0.0.1,10.0.0.2:5353, [fd00::1]:53,fd00::2,tcp://10.0.0.3:53",
                           upstream::kKubeDnsSyntax, &error);
  REQUIRE(parsed);
  REQUIRE(parsed->size() == 5);
  CHECK(upstream::FormatUpstreamAddress((*parsed)[0]) == "10.0.0.1#53");
  CHECK(upstream::FormatUpstreamAddress((*parsed)[1]) == "10.0.0.2#5353");
  CHECK(upstream::FormatUpstreamAddress((*parsed)[2]) == "fd00::1#53");
  CHECK(upstream::FormatUpstreamAddress((*parsed)[3]) == "fd00::2#53");
  // Ours: asked over TCP only.
  CHECK(upstream::FormatUpstreamAddress((*parsed)[4]) == "tcp://10.0.0.3#53");
  CHECK(ParseNameserversFlag("", upstream::kKubeDnsSyntax, &error)->empty());
  CHECK_FALSE(ParseNameserversFlag("10.0.0.1,,10.0.0.2", upstream::kKubeDnsSyntax, &error));
  CHECK(error == "not an IP address with an optional port: \"\"");
  CHECK_FALSE(ParseNameserversFlag("dns.example:53", upstream::kKubeDnsSyntax, &error));
  CHECK(error == "not an IP address with an optional port: \"dns.example:53\"");
}

}  // namespace kdns::kubedns
