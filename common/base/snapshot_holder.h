// SnapshotHolder: publishes immutable state from one writer thread to many reader threads,
// with no lock and no reference-count traffic on the readers' hot path.
//
// The writer Publish()es a std::shared_ptr<const T>; a generation counter goes up. Each
// reader thread keeps a Reader, which holds its own copy of the pointer and the generation
// it saw. Get() costs one atomic load while nothing changed; after a publish, the next
// Get() takes the mutex once to copy the new pointer (model: PowerDNS pdns/sholder.hh).
// An old snapshot is freed when the last Reader has moved past it. A Reader moves on only
// when its thread calls Get(), so a thread that goes idle would keep the snapshot it last
// saw alive indefinitely (a whole record tree, after a reload that changed everything): a
// thread that waits calls Release() first, and its next Get() takes the current snapshot
// again (one mutex and one reference count per release, never per read).
//
// Thread-safety: Publish and Current from any thread; each Reader belongs to one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

namespace kdns {

template <class T>
class SnapshotHolder {
 public:
  SnapshotHolder() = default;
  SnapshotHolder(const SnapshotHolder&) = delete;
  SnapshotHolder& operator=(const SnapshotHolder&) = delete;

  void Publish(std::shared_ptr<const T> value) {
    std::lock_guard lock(mutex_);
    value_ = std::move(value);
    generation_.fetch_add(1, std::memory_order_release);
  }

  // The current value, with a reference count (for occasional readers such as /cache).
  std::shared_ptr<const T> Current() const {
    std::lock_guard lock(mutex_);
    return value_;
  }

  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  class Reader {
   public:
    explicit Reader(const SnapshotHolder& holder) : holder_(holder) {}

    // Valid until the next Get() on this Reader. May be null before the first publish.
    const T* Get() {
      uint64_t generation = holder_.generation_.load(std::memory_order_acquire);
      if (generation != seen_) {
        std::lock_guard lock(holder_.mutex_);
        local_ = holder_.value_;
        seen_ = holder_.generation_.load(std::memory_order_relaxed);
      }
      return local_.get();
    }

    // The generation of the value Get() last returned (a server::Decision carries it, so
    // the loop's thread can tell it holds the very same value).
    uint64_t generation() const { return seen_; }

    // Lets go of this thread's copy, so that it does not keep an old snapshot alive while
    // the thread is idle; the next Get() takes the current one. Pointers Get() returned are
    // invalid afterwards. When it was the last holder, the snapshot is freed here, on this
    // thread.
    void Release() {
      local_.reset();
      seen_ = kReleased;
    }

   private:
    // No generation: Publish counts up from 0, and 2^64 publishes do not happen.
    static constexpr uint64_t kReleased = UINT64_MAX;
    const SnapshotHolder& holder_;
    std::shared_ptr<const T> local_;
    uint64_t seen_ = 0;
  };

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const T> value_;
  std::atomic<uint64_t> generation_{0};
};

}  // namespace kdns
