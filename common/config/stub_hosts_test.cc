#include "common/config/stub_hosts.h"

#include <catch2/catch.hpp>
#include <vector>

namespace kdns::config {
namespace {

IpAddress Ip(const char* text) { return *IpAddress::Parse(text); }
dns::Name Host(const char* text) { return *dns::Name::FromText(text); }
std::vector<IpAddress> Known(const StubHostAddresses& hosts, const char* name) {
  const auto found = hosts.Find(Host(name));
  return std::vector<IpAddress>(found.begin(), found.end());
}

TEST_CASE("A stub host that does not resolve at first is used once it resolves",
          "[config][stub_hosts]") {
  StubHostAddresses hosts;
  CHECK(hosts.Record(Host("dns.corp.example."), {}) == HostUpdate::kUnresolved);
  CHECK_FALSE(hosts.Known(Host("dns.corp.example.")));
  CHECK(hosts.Find(Host("dns.corp.example.")).empty());
  // The next pass asks again, and this time it resolves.
  CHECK(hosts.Record(Host("dns.corp.example."), {Ip("10.0.0.53")}) == HostUpdate::kLearnt);
  CHECK(Known(hosts, "dns.corp.example.") == std::vector<IpAddress>{Ip("10.0.0.53")});
}

TEST_CASE("A stub host that resolved, then stops resolving, keeps its last addresses",
          "[config][stub_hosts]") {
  StubHostAddresses hosts;
  REQUIRE(hosts.Record(Host("dns.corp.example."), {Ip("10.0.0.53"), Ip("10.0.0.54")}) ==
          HostUpdate::kLearnt);
  CHECK(hosts.Record(Host("dns.corp.example."), {}) == HostUpdate::kKeptLast);
  CHECK(hosts.Record(Host("DNS.corp.example."), {}) == HostUpdate::kKeptLast);  // any case
  CHECK(Known(hosts, "dns.corp.example.") ==
        std::vector<IpAddress>{Ip("10.0.0.53"), Ip("10.0.0.54")});
  // Back, at a new address: the new one replaces the old.
  CHECK(hosts.Record(Host("dns.corp.example."), {Ip("10.0.0.99")}) == HostUpdate::kChanged);
  CHECK(Known(hosts, "dns.corp.example.") == std::vector<IpAddress>{Ip("10.0.0.99")});
  CHECK(hosts.Record(Host("dns.corp.example."), {Ip("10.0.0.99")}) == HostUpdate::kSame);
}

TEST_CASE("Stub host addresses list IPv4 first, each family in the resolver's order",
          "[config][stub_hosts]") {
  StubHostAddresses hosts;
  (void)hosts.Record(Host("dns.example."),
                     {Ip("fd00::2"), Ip("10.0.0.2"), Ip("fd00::1"), Ip("10.0.0.1")});
  CHECK(Known(hosts, "dns.example.") ==
        std::vector<IpAddress>{Ip("10.0.0.2"), Ip("10.0.0.1"), Ip("fd00::2"), Ip("fd00::1")});
}

TEST_CASE("A stub host that left the configuration is forgotten", "[config][stub_hosts]") {
  StubHostAddresses hosts;
  (void)hosts.Record(Host("a.example."), {Ip("10.0.0.1")});
  (void)hosts.Record(Host("b.example."), {Ip("10.0.0.2")});
  const std::vector<dns::Name> still = {Host("b.example.")};
  hosts.Retain(still);
  CHECK_FALSE(hosts.Known(Host("a.example.")));
  CHECK(hosts.Known(Host("b.example.")));
  // Back in the configuration but not resolving: nothing is kept from before.
  CHECK(hosts.Record(Host("a.example."), {}) == HostUpdate::kUnresolved);
}

}  // namespace
}  // namespace kdns::config
