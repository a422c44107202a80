// A monotonic counter for hot paths: Inc() touches only the calling thread's shard (see
// shard.h), and Value() sums the shards at scrape time. Any thread may call any method;
// nothing blocks. Each shard only grows, so two Value() calls in sequence never go
// backwards. Counters are created by a Registry (or a CounterFamily) and live as long as it;
// callers keep the reference.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "common/metrics/shard.h"

namespace kdns::metrics {

class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void Inc(uint64_t n = 1) {
    shards_[ThisThreadShard()].value.fetch_add(n, std::memory_order_relaxed);
  }

  // The sum over all threads. Increments racing with this call may or may not be included.
  uint64_t Value() const {
    uint64_t sum = 0;
    for (const Shard& shard : shards_) sum += shard.value.load(std::memory_order_relaxed);
    return sum;
  }

 private:
  struct alignas(kCacheLineBytes) Shard {
    std::atomic<uint64_t> value{0};
  };
  std::array<Shard, kShards> shards_;
};

}  // namespace kdns::metrics
