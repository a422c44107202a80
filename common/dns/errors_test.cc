#include "common/dns/errors.h"

#include <catch2/catch.hpp>

namespace kdns::dns {
namespace {

TEST_CASE("Every error has a readable description", "[dns][types]") {
  for (int i = 0; i <= static_cast<int>(ParseError::kBadText); ++i) {
    CHECK_FALSE(ToString(static_cast<ParseError>(i)).empty());
    CHECK(ToString(static_cast<ParseError>(i)) != "unknown parse error");
  }
  for (int i = 0; i <= static_cast<int>(BuildError::kBadOrder); ++i) {
    CHECK(ToString(static_cast<BuildError>(i)) != "unknown build error");
  }
}

}  // namespace
}  // namespace kdns::dns
