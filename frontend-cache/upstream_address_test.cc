#include "frontend-cache/upstream_address.h"

#include <catch2/catch.hpp>
#include <string>

namespace kdns::frontend {
namespace {

TEST_CASE("Upstream addresses print as dnsmasq prints them", "[frontend][upstream]") {
  std::string error;
  CHECK(ParseUpstreamAddress("10.0.0.10", &error)->ToString() == "10.0.0.10#53");
  CHECK(ParseUpstreamAddress("[FD00::1]:5353", &error)->ToString() == "fd00::1#5353");
}

TEST_CASE("Ports are 1..65535", "[frontend][upstream]") {
  CHECK(ParsePort("1") == 1);
  CHECK(ParsePort("65535") == 65535);
  CHECK_FALSE(ParsePort("0"));
  CHECK(ParsePort("0", /*allow_zero=*/true) == 0);
  CHECK_FALSE(ParsePort("65536"));
  CHECK_FALSE(ParsePort(""));
  CHECK_FALSE(ParsePort("5x"));
  CHECK_FALSE(ParsePort("-1"));
}

}  // namespace
}  // namespace kdns::frontend
