#include "common/base/duration.h"

#include <catch2/catch.hpp>

namespace kdns {

TEST_CASE("Go durations parse to milliseconds", "[duration]") {
  CHECK(ParseDurationMs("0") == 0u);
  CHECK(ParseDurationMs("500ms") == 500u);
  CHECK(ParseDurationMs("10s") == 10000u);
  CHECK(ParseDurationMs("1m30s") == 90000u);
  CHECK(ParseDurationMs("2h") == 7200000u);
  CHECK(ParseDurationMs("1.5s") == 1500u);
}

TEST_CASE("malformed durations are rejected", "[duration]") {
  for (const char* text : {"", "10", "s", "10x", "-1s", "1..5s", "1s2", " 1s", "1 s"}) {
    CAPTURE(text);
    CHECK_FALSE(ParseDurationMs(text).has_value());
  }
}

}  // namespace kdns
