#include "common/base/ip_prefix.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace kdns {
namespace {

IpAddress Ip(std::string_view text) { return *IpAddress::Parse(text); }

TEST_CASE("IpPrefix parses CIDR blocks and bare addresses", "[ip_prefix]") {
  CHECK(IpPrefix::Parse("10.0.0.0/8")->ToString() == "10.0.0.0/8");
  CHECK(IpPrefix::Parse("10.1.2.3")->ToString() == "10.1.2.3/32");
  CHECK(IpPrefix::Parse("fd00::/8")->ToString() == "fd00::/8");
  CHECK(IpPrefix::Parse("2001:db8::1")->length() == 128);
  CHECK(IpPrefix::Parse("0.0.0.0/0")->length() == 0);
  CHECK(IpPrefix::Parse("10.0.0.0/31"));
  CHECK_FALSE(IpPrefix::Parse("10.0.0.1/8"));  // host bits set
  CHECK_FALSE(IpPrefix::Parse("10.0.0.0/33"));
  CHECK_FALSE(IpPrefix::Parse("fd00::/129"));
  CHECK_FALSE(IpPrefix::Parse("10.0.0.0/"));
  CHECK_FALSE(IpPrefix::Parse("10.0.0.0/+8"));
  CHECK_FALSE(IpPrefix::Parse("10.0.0.0/8x"));
  CHECK_FALSE(IpPrefix::Parse("host.example/8"));
  CHECK_FALSE(IpPrefix::Parse(""));
}

TEST_CASE("IpPrefix contains the addresses under it, of its family only", "[ip_prefix]") {
  const IpPrefix v4 = *IpPrefix::Parse("10.1.0.0/16");
  CHECK(v4.Contains(Ip("10.1.0.0")));
  CHECK(v4.Contains(Ip("10.1.255.255")));
  CHECK_FALSE(v4.Contains(Ip("10.2.0.0")));
  CHECK_FALSE(v4.Contains(Ip("::ffff:10.1.0.1")));
  const IpPrefix odd = *IpPrefix::Parse("192.168.1.128/25");
  CHECK(odd.Contains(Ip("192.168.1.200")));
  CHECK_FALSE(odd.Contains(Ip("192.168.1.127")));
  const IpPrefix v6 = *IpPrefix::Parse("2001:db8:0:1::/64");
  CHECK(v6.Contains(Ip("2001:db8:0:1:ffff::1")));
  CHECK_FALSE(v6.Contains(Ip("2001:db8:0:2::1")));
  CHECK_FALSE(v6.Contains(Ip("10.0.0.1")));
  CHECK(IpPrefix::Parse("0.0.0.0/0")->Contains(Ip("203.0.113.9")));
}

TEST_CASE("IpPrefix::Of keeps an address's first bits", "[ip_prefix]") {
  CHECK(IpPrefix::Of(Ip("10.1.2.3"), 24).ToString() == "10.1.2.0/24");
  CHECK(IpPrefix::Of(Ip("10.1.2.3"), 40).ToString() == "10.1.2.3/32");
  CHECK(IpPrefix::Of(Ip("2001:db8:1:2:3::4"), 64).ToString() == "2001:db8:1:2::/64");
  CHECK(IpPrefix::Of(Ip("2001:db8::ff"), 121).ToString() == "2001:db8::80/121");
}

TEST_CASE("a prefix list is parsed strictly", "[ip_prefix]") {
  std::vector<IpPrefix> prefixes;
  std::string error;
  CHECK(ParsePrefixList("", &prefixes, &error));
  CHECK(prefixes.empty());
  CHECK(ParsePrefixList("127.0.0.1,::1", &prefixes, &error));
  CHECK(prefixes.size() == 2);
  CHECK_FALSE(ParsePrefixList("10.0.0.1/8", &prefixes, &error));
  CHECK(error.find("10.0.0.1/8") != std::string::npos);
  CHECK_FALSE(ParsePrefixList("10.0.0.0/8,node-cache", &prefixes, &error));
  CHECK(error.find("node-cache") != std::string::npos);
}

}  // namespace
}  // namespace kdns
