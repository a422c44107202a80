// One-shot timers for the Reflector and the API source, behind an interface so that their
// tests can run on simulated time (a ManualClock and timers that fire when the test
// advances it) instead of sleeping. LoopTimers is the real implementation on a libuv loop.
//
// A timer fires at most once per Start(); Start() replaces any pending schedule; destroying a
// timer cancels it. Callbacks run on the loop thread, never from inside Start() or Stop().
//
// Thread: the loop's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "common/loop/loop.h"
#include "common/loop/timer.h"

namespace kdns::k8s {

class OneShotTimer {
 public:
  virtual ~OneShotTimer() = default;
  virtual void Start(uint64_t delay_ms, std::function<void()> callback) = 0;
  virtual void Stop() = 0;
  virtual bool IsActive() const = 0;
};

class TimerFactory {
 public:
  virtual ~TimerFactory() = default;
  virtual std::unique_ptr<OneShotTimer> NewTimer() = 0;
};

// loop::Timer underneath. The loop must outlive the factory and its timers.
class LoopTimers final : public TimerFactory {
 public:
  explicit LoopTimers(loop::Loop& loop) : loop_(loop) {}
  std::unique_ptr<OneShotTimer> NewTimer() override;

 private:
  loop::Loop& loop_;
};

}  // namespace kdns::k8s
