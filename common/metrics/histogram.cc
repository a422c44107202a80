#include "common/metrics/histogram.h"

#include <glog/logging.h>

#include <algorithm>
#include <bit>
#include <cmath>

namespace kdns::metrics {

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  CHECK_GT(start, 0) << "exponential buckets need a positive start";
  CHECK_GT(factor, 1) << "exponential buckets need a factor above 1";
  CHECK_GE(count, 1);
  std::vector<double> bounds;
  bounds.reserve(count);
  double bound = start;
  for (int i = 0; i < count; ++i) {
    bounds.push_back(bound);
    bound *= factor;
  }
  return bounds;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  CHECK_GT(width, 0) << "linear buckets need a positive width";
  CHECK_GE(count, 1);
  std::vector<double> bounds;
  bounds.reserve(count);
  for (int i = 0; i < count; ++i) bounds.push_back(start + width * i);
  return bounds;
}

Histogram::Histogram(std::vector<double> upper_bounds) : upper_bounds_(std::move(upper_bounds)) {
  if (!upper_bounds_.empty() && std::isinf(upper_bounds_.back()) && upper_bounds_.back() > 0)
    upper_bounds_.pop_back();
  for (size_t i = 0; i < upper_bounds_.size(); ++i) {
    CHECK(!std::isnan(upper_bounds_[i])) << "histogram bound " << i << " is NaN";
    CHECK(i == 0 || upper_bounds_[i - 1] < upper_bounds_[i])
        << "histogram bounds must increase strictly, at index " << i;
  }
  const size_t cells = upper_bounds_.size() + 2;  // Buckets, +Inf, sum.
  lines_per_shard_ = (cells + Line::kCells - 1) / Line::kCells;
  lines_ = std::make_unique<Line[]>(kShards * lines_per_shard_);
}

std::atomic<uint64_t>& Histogram::Cell(size_t shard, size_t index) const {
  return lines_[shard * lines_per_shard_ + index / Line::kCells].cells[index % Line::kCells];
}

void Histogram::Observe(double value) {
  // First bound b with value <= b; NaN compares false everywhere and so falls to +Inf.
  const auto it = std::partition_point(upper_bounds_.begin(), upper_bounds_.end(),
                                       [value](double bound) { return !(value <= bound); });
  const size_t bucket = static_cast<size_t>(it - upper_bounds_.begin());
  const size_t shard = ThisThreadShard();
  Cell(shard, bucket).fetch_add(1, std::memory_order_relaxed);

  // The sum is a double stored as bits in the shard's last cell, so counts and sum share the
  // shard's cache lines; a CAS loop adds to it.
  std::atomic<uint64_t>& sum = Cell(shard, upper_bounds_.size() + 1);
  uint64_t old_bits = sum.load(std::memory_order_relaxed);
  while (!sum.compare_exchange_weak(
      old_bits, std::bit_cast<uint64_t>(std::bit_cast<double>(old_bits) + value),
      std::memory_order_relaxed)) {
  }
}

Histogram::Snapshot Histogram::Collect() const {
  const size_t buckets = upper_bounds_.size() + 1;
  Snapshot snapshot;
  snapshot.cumulative_counts.assign(buckets, 0);
  for (size_t shard = 0; shard < kShards; ++shard) {
    for (size_t i = 0; i < buckets; ++i) {
      snapshot.cumulative_counts[i] += Cell(shard, i).load(std::memory_order_relaxed);
    }
    snapshot.sum += std::bit_cast<double>(Cell(shard, buckets).load(std::memory_order_relaxed));
  }
  for (size_t i = 1; i < buckets; ++i) {
    snapshot.cumulative_counts[i] += snapshot.cumulative_counts[i - 1];
  }
  snapshot.count = snapshot.cumulative_counts.back();
  return snapshot;
}

}  // namespace kdns::metrics
