#include "common/metrics/counter.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace kdns::metrics {
namespace {

TEST_CASE("a counter starts at zero and adds what it is given", "[metrics]") {
  Counter counter;
  CHECK(counter.Value() == 0);
  counter.Inc();
  counter.Inc(41);
  CHECK(counter.Value() == 42);
}

TEST_CASE("a counter sums increments from 4 threads exactly", "[metrics]") {
  constexpr int kThreads = 4;
  constexpr int kIncrements = 100000;
  Counter counter;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counter] {
      for (int i = 0; i < kIncrements; ++i) counter.Inc();
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(counter.Value() == uint64_t{kThreads} * kIncrements);
}

TEST_CASE("a counter read during increments never goes backwards", "[metrics]") {
  Counter counter;
  std::atomic<bool> done{false};
  std::vector<std::thread> writers;
  writers.reserve(2);
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&counter] {
      for (int i = 0; i < 50000; ++i) counter.Inc();
    });
  }
  bool monotonic = true;  // Written by the reader only; Catch2 assertions are not thread-safe.
  std::thread reader([&] {
    uint64_t last = 0;
    while (!done.load()) {
      const uint64_t now = counter.Value();
      monotonic = monotonic && now >= last;
      last = now;
    }
  });
  for (std::thread& writer : writers) writer.join();
  done = true;
  reader.join();
  CHECK(monotonic);
  CHECK(counter.Value() == 100000);
}

TEST_CASE("more threads than shards still count exactly", "[metrics]") {
  constexpr int kThreads = static_cast<int>(kShards) + 5;
  Counter counter;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counter] {
      for (int i = 0; i < 1000; ++i) counter.Inc(2);
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(counter.Value() == uint64_t{kThreads} * 2000);
}

}  // namespace
}  // namespace kdns::metrics
