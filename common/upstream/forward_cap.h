// ForwardCap: the forward cap, the most distinct upstream queries in flight in one process
// (coalesced waiters do not count), as dnsmasq's --dns-forward-max means it. frontend-cache
// (--dns-forward-max) and kubedns (--forward-max) make one at start-up and hand it to the
// Forwarder of every serving thread (Forwarder::Options::forward_cap), so the cap is the
// same whatever the thread count. A query over the cap fails at once (kOverloaded: the
// caller answers SERVFAIL); there is no queue.
//
// Thread-safe: one atomic counter shared by every thread, taken without a lock.
#pragma once

#include <atomic>
#include <cstddef>

namespace kdns::upstream {

class ForwardCap {
 public:
  // dnsmasq's default --dns-forward-max, and kube-dns's --forward-max.
  static constexpr size_t kDefaultMax = 150;

  explicit ForwardCap(size_t max = kDefaultMax) : max_(max) {}
  ForwardCap(const ForwardCap&) = delete;
  ForwardCap& operator=(const ForwardCap&) = delete;

  // Takes a slot; false (and nothing taken) at the cap.
  [[nodiscard]] bool TryAcquire() {
    size_t now = in_flight_.load(std::memory_order_relaxed);
    do {
      if (now >= max_) return false;
    } while (!in_flight_.compare_exchange_weak(now, now + 1, std::memory_order_relaxed));
    return true;
  }
  // Gives back a slot TryAcquire took.
  void Release() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }

  size_t max() const { return max_; }
  size_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

 private:
  const size_t max_;
  std::atomic<size_t> in_flight_{0};
};

}  // namespace kdns::upstream
