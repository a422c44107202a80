#include "common/k8s/reflector_timers.h"

#include <utility>

namespace kdns::k8s {
namespace {

class LoopTimer final : public OneShotTimer {
 public:
  explicit LoopTimer(loop::Loop& loop) : timer_(loop) {}
  void Start(uint64_t delay_ms, std::function<void()> callback) override {
    timer_.Start(delay_ms, std::move(callback));
  }
  void Stop() override { timer_.Stop(); }
  bool IsActive() const override { return timer_.IsActive(); }

 private:
  loop::Timer timer_;
};

}  // namespace

std::unique_ptr<OneShotTimer> LoopTimers::NewTimer() { return std::make_unique<LoopTimer>(loop_); }

}  // namespace kdns::k8s
