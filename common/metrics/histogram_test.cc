#include "common/metrics/histogram.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

namespace kdns::metrics {
namespace {

using Counts = std::vector<uint64_t>;

TEST_CASE("exponential buckets double from 0.25 to 8192 as kube-dns's sidecar uses", "[metrics]") {
  const std::vector<double> bounds = ExponentialBuckets(0.25, 2, 16);
  REQUIRE(bounds.size() == 16);
  CHECK(bounds.front() == 0.25);
  CHECK(bounds[2] == 1);
  CHECK(bounds.back() == 8192);
}

TEST_CASE("linear buckets step by their width", "[metrics]") {
  CHECK(LinearBuckets(1, 0.5, 4) == std::vector<double>{1, 1.5, 2, 2.5});
}

TEST_CASE("a value exactly on a bound counts in that bound's bucket", "[metrics]") {
  Histogram histogram({1, 2, 4});
  histogram.Observe(1);
  histogram.Observe(2);
  histogram.Observe(4);
  const Histogram::Snapshot snapshot = histogram.Collect();
  CHECK(snapshot.cumulative_counts == Counts{1, 2, 3, 3});
}

TEST_CASE("bucket counts are cumulative and +Inf equals the count", "[metrics]") {
  Histogram histogram({1, 2, 4});
  for (double value : {0.5, 0.9, 1.5, 3.0, 5.0, 100.0, -7.0}) histogram.Observe(value);
  const Histogram::Snapshot snapshot = histogram.Collect();
  CHECK(snapshot.cumulative_counts == Counts{3, 4, 5, 7});
  CHECK(snapshot.count == 7);
  CHECK(snapshot.cumulative_counts.back() == snapshot.count);
  CHECK(snapshot.sum == Approx(103.9));
}

TEST_CASE("NaN and infinities land where the Go client puts them", "[metrics]") {
  Histogram histogram({1});
  histogram.Observe(std::nan(""));
  histogram.Observe(std::numeric_limits<double>::infinity());
  histogram.Observe(-std::numeric_limits<double>::infinity());
  const Histogram::Snapshot snapshot = histogram.Collect();
  CHECK(snapshot.cumulative_counts == Counts{1, 3});
  CHECK(std::isnan(snapshot.sum));
}

TEST_CASE("a trailing +Inf bound is implied and dropped", "[metrics]") {
  Histogram histogram({1, std::numeric_limits<double>::infinity()});
  CHECK(histogram.upper_bounds() == std::vector<double>{1});
  CHECK(histogram.Collect().cumulative_counts.size() == 2);
}

TEST_CASE("a histogram with no bounds has only the +Inf bucket", "[metrics]") {
  Histogram histogram({});
  histogram.Observe(3);
  CHECK(histogram.Collect().cumulative_counts == Counts{1});
}

TEST_CASE("a histogram with many buckets spans several cache lines per shard", "[metrics]") {
  Histogram histogram(LinearBuckets(1, 1, 20));
  histogram.Observe(20);
  histogram.Observe(21);
  const Histogram::Snapshot snapshot = histogram.Collect();
  CHECK(snapshot.cumulative_counts[18] == 0);
  CHECK(snapshot.cumulative_counts[19] == 1);
  CHECK(snapshot.cumulative_counts[20] == 2);
  CHECK(snapshot.sum == 41);
}

TEST_CASE("a histogram sums observations from 4 threads exactly", "[metrics]") {
  constexpr int kThreads = 4;
  constexpr int kObservations = 100000;
  Histogram histogram({1, 2});
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&histogram, t] {
      for (int i = 0; i < kObservations; ++i) histogram.Observe(t % 3);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const Histogram::Snapshot snapshot = histogram.Collect();
  // Values 0, 1, 2, 0 per thread: the first bucket holds 0 and 1, the second adds the 2s.
  CHECK(snapshot.cumulative_counts == Counts{300000, 400000, 400000});
  CHECK(snapshot.sum == 300000);
}

}  // namespace
}  // namespace kdns::metrics
