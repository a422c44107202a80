#include "common/metrics/shard.h"

#include <atomic>

namespace kdns::metrics::internal {

size_t AssignShard() {
  static std::atomic<size_t> next_slot{0};
  return next_slot.fetch_add(1, std::memory_order_relaxed) % kShards;
}

}  // namespace kdns::metrics::internal
