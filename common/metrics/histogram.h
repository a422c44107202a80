// A histogram with fixed upper bounds chosen at registration, sharded per thread like
// Counter: Observe() touches only the calling thread's shard, Collect() sums at scrape time.
// A value v lands in the first bucket whose upper bound b satisfies v <= b (Prometheus `le`
// semantics; a value exactly on a bound counts in that bucket), otherwise in the implicit
// +Inf bucket; NaN goes to +Inf, as in Prometheus's Go client. Any thread may call any
// method; nothing blocks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/metrics/shard.h"

namespace kdns::metrics {

// `count` bounds start, start*factor, start*factor^2, ...; for kube-dns's probe latency
// histogram (ms) ExponentialBuckets(0.25, 2, 16) gives 0.25, 0.5, 1, ..., 8192.
// CHECKs start > 0, factor > 1, count >= 1.
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// `count` bounds start, start+width, ...; CHECKs width > 0, count >= 1.
std::vector<double> LinearBuckets(double start, double width, int count);

class Histogram {
 public:
  struct Snapshot {
    std::vector<uint64_t> cumulative_counts;  // One per upper bound, then +Inf.
    uint64_t count = 0;                       // Equals cumulative_counts.back().
    double sum = 0;
  };

  // CHECKs that the bounds are strictly increasing and not NaN. A trailing +Inf is dropped
  // (the +Inf bucket is always there).
  explicit Histogram(std::vector<double> upper_bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Observe(double value);

  // Counts and sum over all threads. The count is derived from the buckets read, so the
  // +Inf bucket always equals the count; an Observe() racing with this call may be missing
  // from the sum while present in a bucket, or the reverse.
  Snapshot Collect() const;

  const std::vector<double>& upper_bounds() const { return upper_bounds_; }

 private:
  struct alignas(kCacheLineBytes) Line {
    static constexpr size_t kCells = kCacheLineBytes / sizeof(std::atomic<uint64_t>);
    std::atomic<uint64_t> cells[kCells] = {};
  };
  // Cells of one shard: a count per bucket (bounds, then +Inf), then the sum's bits.
  std::atomic<uint64_t>& Cell(size_t shard, size_t index) const;

  std::vector<double> upper_bounds_;
  size_t lines_per_shard_;
  std::unique_ptr<Line[]> lines_;  // kShards * lines_per_shard_, shard-major.
};

}  // namespace kdns::metrics
