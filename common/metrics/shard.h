// Per-thread shard selection for the metric types that the DNS hot path writes (Counter,
// Histogram). The model is PowerDNS's pdns/tcounters.hh: each thread increments its own
// cache line and a scrape sums the lines, so threads never contend on one atomic.
//
// A thread takes a slot index on its first increment (round-robin over a process-wide
// counter) and keeps it for life; the shard is that index modulo kShards. The first kShards
// threads to touch a metric therefore never share a shard; more threads than that share
// shards, which stays correct because every shard is an atomic updated with fetch_add, and
// only costs contention between the threads that collide. Thread-safe; no locks.
//
// A DNS serving thread and its UDP receiver thread count the same queries' metrics, the
// receiver most of them: the receiver counts into its loop thread's shard (UseShard), so a
// pod's serving threads take one shard per pair, and 16 shards serve 16 serving threads
// (32 threads that count per query) before two pairs meet on one shard.
#pragma once

#include <cstddef>

namespace kdns::metrics {

// Shards per metric. 16 covers the DNS threads of one pod (one loop per core) with room;
// each shard of a Counter costs one cache line.
inline constexpr size_t kShards = 16;

// Bytes per cache line on the CPUs we run on (x86-64, arm64). Used instead of
// std::hardware_destructive_interference_size, whose value g++ warns may change.
inline constexpr size_t kCacheLineBytes = 64;

namespace internal {

inline constexpr size_t kNoShard = ~size_t{0};

// Picks the calling thread's shard; called once per thread.
size_t AssignShard();

inline constinit thread_local size_t tls_shard = kNoShard;

}  // namespace internal

// Makes the calling thread count into `shard` (< kShards) from now on: the shard of another
// thread that counts the same work, taken there with ThisThreadShard().
inline void UseShard(size_t shard) { internal::tls_shard = shard % kShards; }

// The calling thread's shard, in [0, kShards).
inline size_t ThisThreadShard() {
  size_t shard = internal::tls_shard;
  if (shard == internal::kNoShard) [[unlikely]] {
    shard = internal::AssignShard();
    internal::tls_shard = shard;
  }
  return shard;
}

}  // namespace kdns::metrics
