// Time sources. Code that makes decisions on time takes a Clock so tests can inject one;
// SteadyClock is the real monotonic clock. Thread-safe: SteadyClock has no state, and
// ManualClock is meant for single-threaded tests.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace kdns {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic milliseconds since an arbitrary epoch.
  virtual uint64_t NowMs() const = 0;
};

class SteadyClock final : public Clock {
 public:
  uint64_t NowMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  static const SteadyClock& Instance() {
    static const SteadyClock clock;
    return clock;
  }
};

// The steady clock in nanoseconds, for what is charged per packet (rate limits).
inline uint64_t SteadyNowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Thread-safe: tests move it while server threads read it.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(uint64_t now_ms = 0) : now_ms_(now_ms) {}
  uint64_t NowMs() const override { return now_ms_.load(std::memory_order_relaxed); }
  void AdvanceMs(uint64_t ms) { now_ms_.fetch_add(ms, std::memory_order_relaxed); }
  void SetMs(uint64_t ms) { now_ms_.store(ms, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> now_ms_;
};

}  // namespace kdns
