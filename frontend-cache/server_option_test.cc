#include "frontend-cache/server_option.h"

#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/dns/testing.h"

namespace kdns::frontend {
namespace {

using dns::testing::N;

loop::SocketAddress Up(std::string_view ip, uint16_t port = 53) {
  return loop::SocketAddressOf(*IpAddress::Parse(ip), port);
}

TEST_CASE("--server forms", "[frontend][server_option]") {
  ServerOption server;
  std::string error;
  SECTION("default upstreams") {
    REQUIRE(ParseServerOption("10.0.0.10", &server, &error));
    CHECK(server.domains.empty());
    CHECK(server.upstream == Up("10.0.0.10"));
    REQUIRE(ParseServerOption("10.0.0.10#5353", &server, &error));
    CHECK(server.upstream == Up("10.0.0.10", 5353));
    REQUIRE(ParseServerOption("fd00::1#54", &server, &error));
    CHECK(server.upstream == Up("fd00::1", 54));
    REQUIRE(ParseServerOption("[fd00::1]#54", &server, &error));
    CHECK(server.upstream == Up("fd00::1", 54));
    REQUIRE(ParseServerOption("[fd00::1]:55", &server, &error));
    CHECK(server.upstream == Up("fd00::1", 55));
    REQUIRE(ParseServerOption("[fd00::1]", &server, &error));
    CHECK(server.upstream == Up("fd00::1", 53));
  }
  SECTION("domains") {
    REQUIRE(ParseServerOption("/Example.COM/corp.local./10.0.0.1#53", &server, &error));
    CHECK(server.target == ServerOption::Target::kUpstream);
    REQUIRE(server.domains.size() == 2);
    CHECK(server.domains[0].IdenticalTo(N("example.com.")));  // lower-cased
    CHECK(server.domains[1].IdenticalTo(N("corp.local.")));
  }
  SECTION("tcp:// upstreams, default and per domain") {
    const upstream::UpstreamTransport kTcp = upstream::UpstreamTransport::kTcp;
    REQUIRE(ParseServerOption("tcp://10.96.0.10", &server, &error));
    CHECK(server.domains.empty());
    CHECK(server.upstream == upstream::Upstream(Up("10.96.0.10"), kTcp));
    REQUIRE(ParseServerOption("/cluster.local/in-addr.arpa/tcp://10.96.0.10#53", &server, &error));
    CHECK(server.target == ServerOption::Target::kUpstream);
    CHECK(server.domains == std::vector{N("cluster.local."), N("in-addr.arpa.")});
    CHECK(server.upstream == upstream::Upstream(Up("10.96.0.10"), kTcp));
    REQUIRE(ParseServerOption("/cluster.local/tcp://[fd00::10]#5353", &server, &error));
    CHECK(server.upstream == upstream::Upstream(Up("fd00::10", 5353), kTcp));
    REQUIRE(ParseServerOption("/cluster.local/10.96.0.10", &server, &error));
    CHECK(server.upstream == upstream::Upstream(Up("10.96.0.10")));
    CHECK_FALSE(ParseServerOption("/cluster.local/tcp://", &server, &error));
    CHECK_FALSE(ParseServerOption("/cluster.local/udp://10.96.0.10", &server, &error));
    CHECK_FALSE(ParseServerOption("tcp://dns.example", &server, &error));
  }
  SECTION("tls:// upstreams, with and without a server name") {
    const upstream::UpstreamTransport kTls = upstream::UpstreamTransport::kTls;
    REQUIRE(ParseServerOption("tls://1.1.1.1", &server, &error));
    CHECK(server.upstream == upstream::Upstream(Up("1.1.1.1", 853), kTls));
    REQUIRE(
        ParseServerOption("/corp.example/tls://10.0.0.1#8853@dns.corp.example", &server, &error));
    CHECK(server.domains == std::vector{N("corp.example.")});
    CHECK(server.upstream == upstream::Upstream(Up("10.0.0.1", 8853), kTls, "dns.corp.example"));
    CHECK_FALSE(ParseServerOption("tls://10.0.0.1@bad_name", &server, &error));
    CHECK(error == "bad TLS server name \"bad_name\" in \"tls://10.0.0.1@bad_name\"");
    CHECK_FALSE(ParseServerOption("tls://dns.example", &server, &error));
  }
  SECTION("local and default-server domains") {
    REQUIRE(ParseServerOption("/local.lan/", &server, &error));
    CHECK(server.target == ServerOption::Target::kLocal);
    REQUIRE(ParseServerOption("/public.corp.example/#", &server, &error));
    CHECK(server.target == ServerOption::Target::kDefaultUpstreams);
    CHECK(server.domains == std::vector{N("public.corp.example.")});
  }
}

TEST_CASE("a servers file holds server lines and comments only", "[frontend][server_option]") {
  std::vector<ServerOption> servers;
  std::string error;
  REQUIRE(
      ParseServersFile("# stub domains\r\nserver=/acme.local/10.0.0.1#5353\n\n"
                       "  server=10.0.0.53  \nserver=/corp/\n",
                       &servers, &error));
  REQUIRE(servers.size() == 3);
  CHECK(servers[0].domains.size() == 1);
  CHECK(servers[0].upstream.address.port() == 5353);
  CHECK(servers[1].domains.empty());
  CHECK(servers[2].target == ServerOption::Target::kLocal);

  servers.clear();
  REQUIRE(ParseServersFile("server=/cluster.local/tcp://10.96.0.10#53\n", &servers, &error));
  REQUIRE(servers.size() == 1);
  CHECK(upstream::FormatUpstreamAddress(servers[0].upstream) == "tcp://10.96.0.10#53");

  servers.clear();
  CHECK_FALSE(ParseServersFile("server=10.0.0.1\ncache-size=5\n", &servers, &error));
  CHECK(error == "line 2: \"cache-size=5\": only server=... lines are allowed");
  CHECK_FALSE(ParseServersFile("server=/x/10.0.0.300\n", &servers, &error));
  CHECK(error.starts_with("line 1: server=/x/10.0.0.300: "));
}

TEST_CASE("a servers file may carry the runtime switches the nanny hands on",
          "[frontend][server_option]") {
  std::vector<ServerOption> servers;
  config::RuntimeSwitches switches;
  std::string error;
  REQUIRE(ParseServersFile("server=10.0.0.53\nlog-queries=extra\ndebug-data=true\n", &servers,
                           &error, &switches));
  CHECK(servers.size() == 1);
  CHECK(switches.log_queries == QueryLogDetail::kExtra);
  CHECK(switches.debug_data == true);
  CHECK_FALSE(ParseServersFile("log-queries=loud\n", &servers, &error, &switches));
  CHECK(error == "line 1: log-queries=loud: kdns.logQueries: \"loud\" is not true, extra or false");
  // Without a place for them (an operator's own --servers-file), they are refused.
  CHECK_FALSE(ParseServersFile("debug-data=true\n", &servers, &error));
  CHECK(error == "line 1: \"debug-data=true\": only server=... lines are allowed");
}

TEST_CASE("a servers file may carry route-options lines",
          "[frontend][server_option][route_options]") {
  std::vector<ServerOption> servers;
  std::vector<upstream::RouteOptionsEntry> route_options;
  std::string error;
  REQUIRE(ParseServersFile("server=/acme.local/10.0.0.1\nroute-options=/acme.local/force_tcp\n",
                           &servers, &error, nullptr, &route_options));
  REQUIRE(route_options.size() == 1);
  CHECK(route_options[0].options.transport == upstream::RouteTransport::kForceTcp);
  CHECK_FALSE(ParseServersFile("route-options=/acme.local/fast\n", &servers, &error, nullptr,
                               &route_options));
  CHECK(error.starts_with("line 1: route-options=/acme.local/fast: route option \"fast\""));
}

}  // namespace
}  // namespace kdns::frontend
