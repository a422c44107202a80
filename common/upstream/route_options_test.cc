#include "common/upstream/route_options.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/dns/testing.h"
#include "common/upstream/upstream_set.h"

namespace kdns::upstream {
namespace {

using dns::testing::N;

TEST_CASE("Route options parse CoreDNS forward's choices and print back", "[upstream]") {
  RouteOptions options;
  std::string error;
  REQUIRE(ParseRouteOptions("force_tcp,policy=sequential,max_fails=3,health_check=0.5s", &options,
                            &error));
  CHECK(options.transport == RouteTransport::kForceTcp);
  CHECK(options.policy == RoutePolicy::kSequential);
  CHECK(options.max_fails == 3u);
  CHECK(options.health_check_ms == 500u);
  CHECK(options.ToString() == "force_tcp,policy=sequential,max_fails=3,health_check=500ms");

  REQUIRE(ParseRouteOptions("prefer_udp,policy=round_robin,max_fails=0,health_check=2s", &options,
                            &error));
  CHECK(options.transport == RouteTransport::kPreferUdp);
  CHECK(options.policy == RoutePolicy::kRoundRobin);
  CHECK(options.max_fails == 0u);
  CHECK(options.ToString() == "prefer_udp,policy=round_robin,max_fails=0,health_check=2s");
  REQUIRE(ParseRouteOptions("policy=random", &options, &error));
  CHECK(options.policy == RoutePolicy::kRandom);
  CHECK_FALSE(options.HasHealth());
}

TEST_CASE("Bad route options are refused with the option named", "[upstream]") {
  const char* bad = GENERATE("", "force_tcp,", "force_tcp,prefer_udp", "force_tcp=1",
                             "policy=fastest", "policy", "max_fails=-1", "max_fails=x",
                             "max_fails=", "health_check=0", "health_check=soon", "expire=10s");
  RouteOptions options;
  std::string error;
  CHECK_FALSE(ParseRouteOptions(bad, &options, &error));
  CHECK_FALSE(error.empty());
  CHECK(options.IsDefault());  // untouched
}

TEST_CASE("Route options entries name their routes the dnsmasq way", "[upstream]") {
  std::vector<RouteOptionsEntry> entries;
  std::string error;
  REQUIRE(ParseRouteOptionsList(
      "/Acme.Local/corp.example/force_tcp  policy=sequential\n/acme.local/policy=random", &entries,
      &error));
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].domains == std::vector<dns::Name>{N("acme.local."), N("corp.example.")});
  CHECK(entries[1].default_route);

  const RouteOptions acme = RouteOptionsFor(entries, N("acme.local."));
  CHECK(acme.transport == RouteTransport::kForceTcp);
  CHECK(acme.policy == RoutePolicy::kRandom);  // the later entry wins, option by option
  CHECK(RouteOptionsFor(entries, N("corp.example.")).policy == RoutePolicy::kDefault);
  CHECK(RouteOptionsFor(entries, dns::Name::Root()).policy == RoutePolicy::kSequential);
  // Exact domains only: a subdomain has a route of its own or none.
  CHECK(RouteOptionsFor(entries, N("x.acme.local.")).IsDefault());

  RouteOptionsEntry entry;
  CHECK_FALSE(ParseRouteOptionsEntry("//force_tcp", &entry, &error));
  CHECK_FALSE(ParseRouteOptionsEntry("/acme.local/nope", &entry, &error));
  CHECK(error.find("nope") != std::string::npos);
}

TEST_CASE("A force_tcp route asks each of its upstreams over TCP and is a set of its own",
          "[upstream]") {
  const Upstream udp = *ParseUpstreamAddress("10.0.0.1", kDnsmasqSyntax);
  const Upstream tcp = *ParseUpstreamAddress("tcp://10.0.0.2", kDnsmasqSyntax);
  RouteOptions force_tcp;
  force_tcp.transport = RouteTransport::kForceTcp;
  const UpstreamSet forced({udp, tcp}, force_tcp);
  CHECK(forced.ToString() == "tcp://10.0.0.1#53,tcp://10.0.0.2#53");
  const UpstreamSet plain({udp, tcp});
  const UpstreamSet same_with_defaults({udp, tcp}, RouteOptions());
  CHECK(plain == same_with_defaults);
  CHECK(plain.Hash() == same_with_defaults.Hash());
  RouteOptions sequential;
  sequential.policy = RoutePolicy::kSequential;
  const UpstreamSet ordered({udp, tcp}, sequential);
  CHECK_FALSE(plain == ordered);
  CHECK(ordered.options() == sequential);
}

}  // namespace
}  // namespace kdns::upstream
