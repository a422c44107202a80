#include "common/base/port.h"

#include <catch2/catch.hpp>

namespace kdns {
namespace {

TEST_CASE("ParsePort takes decimal ports and nothing else", "[port]") {
  CHECK(ParsePort("1") == 1);
  CHECK(ParsePort("53") == 53);
  CHECK(ParsePort("65535") == 65535);
  CHECK(ParsePort("00053") == 53);
  CHECK_FALSE(ParsePort("0"));
  CHECK(ParsePort("0", PortZero::kAllow) == 0);
  CHECK_FALSE(ParsePort("65536"));
  CHECK_FALSE(ParsePort("000053"));
  CHECK_FALSE(ParsePort(""));
  CHECK_FALSE(ParsePort("5x"));
  CHECK_FALSE(ParsePort(" 53"));
  CHECK_FALSE(ParsePort("-1"));
  CHECK_FALSE(ParsePort("+53"));
  CHECK_FALSE(ParsePort("99999999999"));
}

}  // namespace
}  // namespace kdns
