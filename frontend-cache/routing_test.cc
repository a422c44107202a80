#include "frontend-cache/routing.h"

#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/dns/testing.h"

namespace kdns::frontend {
namespace {

using dns::testing::N;

upstream::Upstream Up(std::string_view ip, uint16_t port = 53) {
  return loop::SocketAddressOf(*IpAddress::Parse(ip), port);
}

upstream::Upstream TcpUp(std::string_view ip, uint16_t port = 53) {
  return {loop::SocketAddressOf(*IpAddress::Parse(ip), port), upstream::UpstreamTransport::kTcp};
}

std::vector<ServerOption> Servers(const std::vector<std::string_view>& values) {
  std::vector<ServerOption> servers;
  for (std::string_view value : values) {
    ServerOption server;
    std::string error;
    INFO(value);
    REQUIRE(ParseServerOption(value, &server, &error));
    servers.push_back(server);
  }
  return servers;
}

RoutingTable Table(const std::vector<std::string_view>& values,
                   const std::vector<loop::SocketAddress>& resolv_conf = {}) {
  return RoutingTable::Build(Servers(values), resolv_conf);
}

TEST_CASE("The most specific domain wins, case-insensitively", "[frontend][routing]") {
  RoutingTable table = Table({"/cluster.local/127.0.0.1#10053", "/svc.cluster.local/10.0.0.2",
                              "/in-addr.arpa/127.0.0.1#10053", "8.8.8.8", "8.8.4.4#53"});
  CHECK(table.Lookup(N("web.default.svc.cluster.local.")).upstreams == std::vector{Up("10.0.0.2")});
  CHECK(table.Lookup(N("WEB.Default.SVC.Cluster.Local.")).upstreams == std::vector{Up("10.0.0.2")});
  CHECK(table.Lookup(N("x.pod.cluster.local.")).upstreams == std::vector{Up("127.0.0.1", 10053)});
  CHECK(table.Lookup(N("cluster.local.")).upstreams == std::vector{Up("127.0.0.1", 10053)});
  CHECK(table.Lookup(N("1.0.0.10.in-addr.arpa.")).domain.IdenticalTo(N("in-addr.arpa.")));
  // Not a label boundary: "xcluster.local" is not under "cluster.local".
  const Route& other = table.Lookup(N("xcluster.local."));
  CHECK(other.action == RouteAction::kForward);
  CHECK(other.upstreams == std::vector{Up("8.8.8.8"), Up("8.8.4.4")});
  CHECK(table.Lookup(N(".")).upstreams == other.upstreams);
}

TEST_CASE("Default upstreams come from --server=ip, else resolv.conf", "[frontend][routing]") {
  std::vector<loop::SocketAddress> resolv = {Up("10.96.0.10").address, Up("10.96.0.11").address};
  CHECK(Table({"1.1.1.1"}, resolv).default_route().upstreams == std::vector{Up("1.1.1.1")});
  CHECK(Table({"/corp/10.0.0.1"}, resolv).default_route().upstreams ==
        std::vector{Up("10.96.0.10"), Up("10.96.0.11")});
  CHECK(Table({"/corp/10.0.0.1"}).default_route().action == RouteAction::kRefused);
  CHECK(Table({}).Lookup(N("example.com.")).action == RouteAction::kRefused);
}

TEST_CASE("Local domains are NXDOMAIN and /domain/# uses the defaults", "[frontend][routing]") {
  RoutingTable table = Table({"/corp/10.0.0.1", "/public.corp/#", "/lan/", "9.9.9.9"});
  CHECK(table.Lookup(N("host.lan.")).action == RouteAction::kNxDomain);
  CHECK(table.Lookup(N("www.public.corp.")).upstreams == std::vector{Up("9.9.9.9")});
  CHECK(table.Lookup(N("db.corp.")).upstreams == std::vector{Up("10.0.0.1")});
  CHECK(Table({"/public.corp/#"}).Lookup(N("x.public.corp.")).action == RouteAction::kRefused);
}

TEST_CASE("Several --server options for a domain add up", "[frontend][routing]") {
  RoutingTable table = Table({"/corp/10.0.0.1", "/corp/other/10.0.0.2", "/corp/10.0.0.1"});
  CHECK(table.Lookup(N("a.corp.")).upstreams == std::vector{Up("10.0.0.1"), Up("10.0.0.2")});
  CHECK(table.Lookup(N("a.other.")).upstreams == std::vector{Up("10.0.0.2")});
  CHECK(table.AllUpstreams() == std::vector{Up("10.0.0.1"), Up("10.0.0.2")});
}

TEST_CASE("A tcp:// upstream is another upstream than the same address over UDP",
          "[frontend][routing]") {
  RoutingTable table = Table({"/cluster.local/tcp://10.96.0.10#53", "/cluster.local/10.96.0.10",
                              "tcp://10.0.0.1", "10.0.0.1#53"});
  CHECK(table.Lookup(N("a.cluster.local.")).upstreams ==
        std::vector{TcpUp("10.96.0.10"), Up("10.96.0.10")});
  CHECK(table.default_route().upstreams == std::vector{TcpUp("10.0.0.1"), Up("10.0.0.1")});
}

TEST_CASE("A reload flushes only the domains whose route changed", "[frontend][routing]") {
  RoutingTable before = Table({"/a/10.0.0.1", "/b/10.0.0.2", "/c/10.0.0.3", "8.8.8.8"});
  RoutingTable after = Table({"/a/10.0.0.1", "/b/10.0.0.9", "/d/10.0.0.4", "8.8.8.8"});
  RoutingChange change = DiffRoutes(before, after);
  CHECK_FALSE(change.flush_all);
  CHECK(change.domains == std::vector{N("b."), N("c."), N("d.")});
  CHECK(DiffRoutes(before, before).domains.empty());
  CHECK(DiffRoutes(before, Table({"/a/10.0.0.1", "1.1.1.1"})).flush_all);
}

TEST_CASE("An upstream that is this server is rejected", "[frontend][routing]") {
  const std::vector<IpAddress> none;
  const std::vector<IpAddress> host = {*IpAddress::Parse("192.168.1.5")};
  const std::vector<IpAddress> loopback = {*IpAddress::Parse("127.0.0.1")};
  const std::vector<IpAddress> any = {*IpAddress::Parse("0.0.0.0")};
  std::string error;
  SECTION("our own listening address and port") {
    CHECK_FALSE(CheckNoSelfLoop(Table({"127.0.0.1#53"}), loopback, 53, none, &error));
    CHECK(error ==
          "upstream 127.0.0.1#53 is this server itself (listening on 127.0.0.1 port 53): queries "
          "would loop");
    CHECK(CheckNoSelfLoop(Table({"127.0.0.1#10053"}), loopback, 53, none, &error));
    CHECK(CheckNoSelfLoop(Table({"127.0.0.2#53"}), loopback, 53, none, &error));
  }
  SECTION("a local address when listening on every address") {
    CHECK_FALSE(CheckNoSelfLoop(Table({"/corp/127.0.0.53"}), none, 53, none, &error));
    CHECK_FALSE(CheckNoSelfLoop(Table({"::1"}), any, 53, none, &error));
    CHECK_FALSE(CheckNoSelfLoop(Table({"192.168.1.5"}), none, 53, host, &error));
    CHECK(error ==
          "upstream 192.168.1.5#53 is this server itself (listening on every address port 53): "
          "queries would loop");
    CHECK(CheckNoSelfLoop(Table({"192.168.1.6"}), none, 53, host, &error));
    CHECK(CheckNoSelfLoop(Table({"/cluster.local/127.0.0.1#10053"}), none, 53, host, &error));
  }
  SECTION("port 0 cannot loop") {
    CHECK(CheckNoSelfLoop(Table({"127.0.0.1#53"}), none, 0, none, &error));
  }
}

}  // namespace
}  // namespace kdns::frontend
