#include "common/metrics/gauge.h"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace kdns::metrics {
namespace {

TEST_CASE("a gauge is set, raised and lowered", "[metrics]") {
  Gauge gauge;
  CHECK(gauge.Value() == 0);
  gauge.Set(10);
  gauge.Inc();
  gauge.Dec(3);
  gauge.Add(0.5);
  CHECK(gauge.Value() == 8.5);
  gauge.Set(-2);
  CHECK(gauge.Value() == -2);
}

TEST_CASE("a gauge adds from several threads without losing updates", "[metrics]") {
  Gauge gauge;
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&gauge, t] {
      for (int i = 0; i < 10000; ++i) t % 2 == 0 ? gauge.Inc() : gauge.Dec(2);
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(gauge.Value() == -20000);
}

}  // namespace
}  // namespace kdns::metrics
