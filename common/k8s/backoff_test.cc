#include "common/k8s/backoff.h"

#include <catch2/catch.hpp>
#include <vector>

namespace kdns::k8s {
namespace {

Backoff::Options Defaults() { return Backoff::Options{}; }  // 500 ms, 30 s, reset after 120 s

TEST_CASE("backoff ceilings double from the base up to the cap", "[reflector][backoff]") {
  Backoff backoff(Defaults(), [] { return 0.999999; });  // always (nearly) the ceiling
  std::vector<uint64_t> delays;
  delays.reserve(9);
  for (int i = 0; i < 9; ++i) delays.push_back(backoff.Failed(0));
  CHECK(delays == std::vector<uint64_t>{500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000});
}

TEST_CASE("backoff delays are fully jittered within zero and the ceiling", "[reflector][backoff]") {
  Backoff backoff(Defaults());  // the real random source
  bool saw_low_half = false;
  bool saw_high_half = false;
  for (int i = 0; i < 200; ++i) {
    uint64_t ceiling = backoff.CeilingMs();
    uint64_t delay = backoff.Failed(0);
    REQUIRE(delay <= ceiling);
    if (ceiling == 30'000) {
      saw_low_half = saw_low_half || delay < 15'000;
      saw_high_half = saw_high_half || delay >= 15'000;
    }
  }
  CHECK(saw_low_half);
  CHECK(saw_high_half);
  Backoff zero(Defaults(), [] { return 0.0; });
  CHECK(zero.Failed(0) == 0);
}

TEST_CASE("backoff resets only after a stable period of success", "[reflector][backoff]") {
  Backoff backoff(Defaults(), [] { return 0.999999; });
  for (int i = 0; i < 5; ++i) (void)backoff.Failed(0);
  REQUIRE(backoff.CeilingMs() == 16000);

  SECTION("a short success keeps the count") {
    backoff.Succeeded(1'000);
    CHECK(backoff.Failed(1'000 + 119'999) == 16000);
  }
  SECTION("a long success starts again from the base") {
    backoff.Succeeded(1'000);
    backoff.Succeeded(50'000);  // still the same period
    CHECK(backoff.Failed(1'000 + 120'000) == 500);
  }
  SECTION("a failure ends the period of success") {
    backoff.Succeeded(1'000);
    (void)backoff.Failed(2'000);
    CHECK(backoff.Failed(200'000) == 30000);
  }
}

}  // namespace
}  // namespace kdns::k8s
