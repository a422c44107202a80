#include "common/base/ip_address.h"

#include <catch2/catch.hpp>
#include <unordered_set>

namespace kdns {
namespace {

TEST_CASE("IpAddress parses and formats v4 and canonical v6 text", "[ip_address]") {
  auto [input, canonical, family] = GENERATE(table<std::string, std::string, IpFamily>({
      {"10.0.0.1", "10.0.0.1", IpFamily::kV4},
      {"255.255.255.255", "255.255.255.255", IpFamily::kV4},
      {"2001:db8::1", "2001:db8::1", IpFamily::kV6},
      {"2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8::1", IpFamily::kV6},
      {"fd00:10:244::12", "fd00:10:244::12", IpFamily::kV6},
      {"2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1", IpFamily::kV6},
      {"::", "::", IpFamily::kV6},
      {"::ffff:10.0.0.1", "::ffff:10.0.0.1", IpFamily::kV6},
  }));
  auto address = IpAddress::Parse(input);
  REQUIRE(address.has_value());
  CHECK(address->family() == family);
  CHECK(address->ToString() == canonical);
  CHECK(address->bytes().size() == (family == IpFamily::kV4 ? 4u : 16u));
}

TEST_CASE("IpAddress rejects text that is not an address", "[ip_address]") {
  auto text =
      GENERATE(as<std::string>{}, "", "10.0.0", "10.0.0.256", "1.2.3.4 ", " 1.2.3.4",
               "fe80::1%eth0", "[::1]", "2001:db8:::1", "abc", "1.2.3.4.5", std::string(100, '1'));
  CHECK_FALSE(IpAddress::Parse(text).has_value());
}

TEST_CASE("IpAddress dashed names follow the Kubernetes host label form", "[ip_address]") {
  auto [input, dashed] = GENERATE(table<std::string, std::string>({
      {"10.0.0.1", "10-0-0-1"},
      {"2001:db8::1", "2001-db8--1"},
      {"fd00:10:244::12", "fd00-10-244--12"},
  }));
  CHECK(IpAddress::Parse(input)->DashedName() == dashed);
}

TEST_CASE("IpAddress converts from and to raw bytes", "[ip_address]") {
  const uint8_t v4[] = {10, 96, 0, 1};
  CHECK(IpAddress::FromBytes(v4)->ToString() == "10.96.0.1");
  const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  auto address = IpAddress::FromBytes(v6);
  REQUIRE(address);
  CHECK(address->ToString() == "2001:db8::1");
  CHECK(std::equal(address->bytes().begin(), address->bytes().end(), std::begin(v6)));
  const uint8_t five[5] = {};
  CHECK_FALSE(IpAddress::FromBytes(five).has_value());
}

TEST_CASE("IpAddress compares, orders and hashes by family and bytes", "[ip_address]") {
  auto a = *IpAddress::Parse("10.0.0.1");
  auto b = *IpAddress::Parse("10.0.0.2");
  auto v6 = *IpAddress::Parse("::a00:1");  // same low bytes as 10.0.0.1, other family
  CHECK(a == *IpAddress::Parse("10.0.0.1"));
  CHECK(a != b);
  CHECK(a < b);
  CHECK(b < v6);  // v4 sorts first
  CHECK(a != v6);
  std::unordered_set<IpAddress, IpAddressHash> set = {a, b, v6, a};
  CHECK(set.size() == 3);
  CHECK(IpAddress() == *IpAddress::Parse("0.0.0.0"));
}

}  // namespace
}  // namespace kdns
