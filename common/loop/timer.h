// Timer: a one-shot or repeating libuv timer (uv_timer_t) with a callback. Owns its handle;
// destroying the Timer (also from inside its own callback) cancels it.
//
// Thread: the loop's thread only.
#pragma once

#include <cstdint>
#include <functional>

#include "common/loop/handle.h"
#include "common/loop/loop.h"

namespace kdns::loop {

class Timer {
 public:
  using Callback = std::function<void()>;

  explicit Timer(Loop& loop);
  // With the callback that Start(timeout_ms) uses.
  Timer(Loop& loop, Callback callback);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Fires once after timeout_ms (measured from the loop's cached time). Replaces any
  // previous schedule and callback.
  void Start(uint64_t timeout_ms, Callback callback);
  // Fires once after timeout_ms with the callback already set. Safe from inside that
  // callback (Start(timeout_ms, callback) would destroy the running callback), so an owner
  // that re-arms its timer from its timer's callback (c-ares's timeouts) uses this.
  void Start(uint64_t timeout_ms);
  // Fires every interval_ms, the first time after interval_ms.
  void StartRepeating(uint64_t interval_ms, Callback callback);
  // Re-arms with the last timeout (or interval) and callback, counting from now.
  void Restart();
  void Stop();
  bool IsActive() const;

 private:
  static void OnTimer(uv_timer_t* handle) noexcept;

  UvHandle<uv_timer_t> handle_;
  Callback callback_;
  uint64_t timeout_ms_ = 0;
  uint64_t repeat_ms_ = 0;
  internal::DeathWatch death_watch_;
};

}  // namespace kdns::loop
