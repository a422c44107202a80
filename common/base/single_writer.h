// Counters with one writing thread and any number of readers (the shape of PowerDNS's
// tcounters): the writer adds with a relaxed load and store instead of a locked
// read-modify-write, and readers load relaxed. Correct only while one thread writes.
#pragma once

#include <atomic>
#include <cstdint>

namespace kdns {

inline void AddSingleWriter(std::atomic<uint64_t>& counter, uint64_t by = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

inline uint64_t LoadRelaxed(const std::atomic<uint64_t>& counter) {
  return counter.load(std::memory_order_relaxed);
}

}  // namespace kdns
