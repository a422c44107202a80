// AtomicBudget: a count with a maximum, taken and given back by any thread without a lock:
// the one mechanism behind every process-wide bound that threads share (DESIGN §7): the
// forwarding budgets (in-flight upstream queries per process, route and upstream), the
// waiting-query budget, the DNS/TCP connection total and unread-output bytes, and the
// cache's byte budget. Each owner names what it counts; this is how it is counted.
//
// TryTake never lets the count pass the maximum, even for an instant (a compare-and-swap
// loop, not an optimistic add and undo), so a reading thread never sees more taken than
// allowed.
//
// Thread-safe: relaxed atomics (the count guards no other memory).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace kdns {

class AtomicBudget {
 public:
  // kUnbounded: only counted. 0 allows nothing.
  static constexpr size_t kUnbounded = SIZE_MAX;
  explicit AtomicBudget(size_t max) : max_(max) {}
  AtomicBudget(const AtomicBudget&) = delete;
  AtomicBudget& operator=(const AtomicBudget&) = delete;

  // Takes `amount` if it fits under the maximum; false (nothing taken) otherwise.
  [[nodiscard]] bool TryTake(size_t amount = 1) {
    size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (amount > max_ || used > max_ - amount) return false;
    } while (!used_.compare_exchange_weak(used, used + amount, std::memory_order_relaxed));
    return true;
  }
  // Gives back what TryTake took.
  void Give(size_t amount = 1) { used_.fetch_sub(amount, std::memory_order_relaxed); }

  size_t used() const { return used_.load(std::memory_order_relaxed); }
  size_t max() const { return max_; }
  bool full() const { return used() >= max_; }

 private:
  const size_t max_;
  std::atomic<size_t> used_{0};
};

}  // namespace kdns
