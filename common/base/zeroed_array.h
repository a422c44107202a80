// ZeroedArray<T>: a fixed-size array of T whose memory comes straight from the kernel (an
// anonymous private mapping), so every byte starts 0 and a page counts in RSS only once
// something is written to it. It is for large tables that start empty and fill as they are
// used, such as the rate limiters' slots (common/server/rate_table.h): a std::vector would
// construct every element, writing the whole table and making it resident at start (2 MiB
// for the client limiter's 32,768 slots, most of which a quiet cluster never touches). The
// servers' per-thread buffers come from it for the same reason (datagram batches, response
// and read buffers: common/loop/udp_batch.h), so a thread that serves nothing costs little.
//
// T must be an implicit-lifetime type whose all-zero bytes are its empty value (an
// aggregate of atomics and integers, say); no constructor or destructor of T runs.
// Ownership: owns the mapping, unmapped on destruction. Thread: as T's own rules allow.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

namespace kdns {

template <class T>
class ZeroedArray {
  static_assert(std::is_aggregate_v<T> || std::is_trivially_default_constructible_v<T>,
                "zero bytes must be a T without running a constructor");
  static_assert(std::is_trivially_destructible_v<T>, "no destructor runs");
  static_assert(alignof(T) <= 4096, "the mapping is page-aligned");

 public:
  ZeroedArray() = default;
  // Throws std::bad_alloc when the kernel refuses the mapping.
  explicit ZeroedArray(size_t count) {
    if (count == 0) return;
    void* memory = mmap(nullptr, count * sizeof(T), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::bad_alloc();
    items_ = std::span<T>(static_cast<T*>(memory), count);
  }
  ~ZeroedArray() {
    if (!items_.empty()) munmap(items_.data(), items_.size_bytes());
  }
  ZeroedArray(ZeroedArray&& other) noexcept : items_(std::exchange(other.items_, {})) {}
  ZeroedArray& operator=(ZeroedArray&& other) noexcept {
    std::swap(items_, other.items_);
    return *this;
  }
  ZeroedArray(const ZeroedArray&) = delete;
  ZeroedArray& operator=(const ZeroedArray&) = delete;

  size_t size() const { return items_.size(); }
  T& operator[](size_t i) { return items_[i]; }
  const T& operator[](size_t i) const { return items_[i]; }
  std::span<T> items() { return items_; }
  std::span<const T> items() const { return items_; }

 private:
  std::span<T> items_;
};

}  // namespace kdns
