#include "common/loop/timer.h"

#include <glog/logging.h>

#include <utility>

namespace kdns::loop {

Timer::Timer(Loop& loop) {
  CHECK_EQ(handle_.Open(this, [&](uv_timer_t* h) { return uv_timer_init(loop.get(), h); }), 0);
}

Timer::Timer(Loop& loop, Callback callback) : Timer(loop) { callback_ = std::move(callback); }

Timer::~Timer() = default;

void Timer::Start(uint64_t timeout_ms, Callback callback) {
  callback_ = std::move(callback);
  timeout_ms_ = timeout_ms;
  repeat_ms_ = 0;
  Restart();
}

void Timer::Start(uint64_t timeout_ms) {
  timeout_ms_ = timeout_ms;
  repeat_ms_ = 0;
  Restart();
}

void Timer::StartRepeating(uint64_t interval_ms, Callback callback) {
  callback_ = std::move(callback);
  timeout_ms_ = interval_ms;
  repeat_ms_ = interval_ms;
  Restart();
}

void Timer::Restart() {
  DCHECK(callback_) << "Restart() before Start()";
  uv_timer_start(handle_.get(), &Timer::OnTimer, timeout_ms_, repeat_ms_);
}

void Timer::Stop() { uv_timer_stop(handle_.get()); }

bool Timer::IsActive() const { return uv_is_active(handle_.base()) != 0; }

void Timer::OnTimer(uv_timer_t* handle) noexcept {
  auto* self = static_cast<Timer*>(handle->data);
  if (self == nullptr || !self->callback_) return;
  internal::CallUser("Timer", [self] { self->callback_(); });
}

}  // namespace kdns::loop
