#include "common/limits/limits.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics/registry.h"

namespace kdns::limits {
namespace {

TEST_CASE("every limit has its own non-empty name", "[limits]") {
  std::set<std::string_view> names;
  for (size_t i = 0; i < static_cast<size_t>(Limit::kCount); ++i) {
    const std::string_view name = LimitName(static_cast<Limit>(i));
    CHECK_FALSE(name.empty());
    CHECK(names.insert(name).second);
  }
  CHECK(LimitName(Limit::kCount) == "unknown");
}

TEST_CASE("a limit hit is counted and exported", "[limits]") {
  metrics::Registry registry;
  RegisterLimitMetrics(registry);
  const uint64_t before = LimitHits(Limit::kTcpFrameTimeout);
  for (int i = 0; i < 3; ++i) RecordLimitHit(Limit::kTcpFrameTimeout, "127.0.0.2");
  CHECK(LimitHits(Limit::kTcpFrameTimeout) == before + 3);
  const std::string text = registry.Render();
  CHECK(text.find("# TYPE kdns_limit_hits_total counter") != std::string::npos);
  CHECK(text.find("kdns_limit_hits_total{limit=\"tcp_frame_timeout\"} " +
                  std::to_string(before + 3)) != std::string::npos);
  CHECK(text.find("kdns_limit_hits_total{limit=\"shed_waiting_queries\"}") != std::string::npos);
}

TEST_CASE("hits from many threads at once are each counted", "[limits]") {
  const uint64_t before = LimitHits(Limit::kClientRate);
  constexpr int kThreads = 4;
  constexpr int kHits = 20'000;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < kHits; ++i) RecordLimitHit(Limit::kClientRate);
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(LimitHits(Limit::kClientRate) == before + uint64_t{kThreads} * kHits);
}

}  // namespace
}  // namespace kdns::limits
