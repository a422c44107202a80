#include "common/dns/reverse.h"

#include <catch2/catch.hpp>

#include "common/dns/testing.h"

namespace kdns::dns {
namespace {

using testing::N;

TEST_CASE("Reverse names are built from v4 and v6 addresses and parsed back", "[dns][reverse]") {
  auto [address, name] = GENERATE(table<std::string, std::string>({
      {"10.96.0.1", "1.0.96.10.in-addr.arpa."},
      {"1.2.3.4", "4.3.2.1.in-addr.arpa."},
      {"0.0.0.0", "0.0.0.0.in-addr.arpa."},
      {"2001:db8::1", "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa."},
      {"fd00:10:244::12",
       "2.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.4.4.2.0.0.1.0.0.0.0.d.f.ip6.arpa."},
  }));
  auto ip = *IpAddress::Parse(address);
  CHECK(ReverseName(ip).ToText() == name);
  auto back = AddressFromReverseName(N(name));
  REQUIRE(back.has_value());
  CHECK(*back == ip);
}

TEST_CASE("Reverse names parse case-insensitively", "[dns][reverse]") {
  CHECK(AddressFromReverseName(N("4.3.2.1.IN-ADDR.Arpa.")) == IpAddress::Parse("1.2.3.4"));
  CHECK(AddressFromReverseName(
            N("1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.B.D.0.1.0.0.2.IP6.ARPA.")) ==
        IpAddress::Parse("2001:db8::1"));
}

TEST_CASE("Partial or malformed reverse names give no address", "[dns][reverse]") {
  auto name =
      GENERATE(as<std::string>{}, "3.2.1.in-addr.arpa.", "in-addr.arpa.", "5.4.3.2.1.in-addr.arpa.",
               "256.3.2.1.in-addr.arpa.", "01.3.2.1.in-addr.arpa.", "a.3.2.1.in-addr.arpa.",
               "4.3.2.1.example.", "4.3.2.1.in-addr.arpa.example.", "8.b.d.0.1.0.0.2.ip6.arpa.",
               "10.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.",
               "g.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.",
               "1.2.3.4.in-addr.arpa.ip6.arpa.");
  INFO(name);
  CHECK_FALSE(AddressFromReverseName(N(name)).has_value());
}

}  // namespace
}  // namespace kdns::dns
