#include "common/loop/timer.h"

#include <glog/logging.h>

#include <utility>

namespace kdns::loop {

Timer::Timer(Loop& loop) : handle_(internal::NewHandle<uv_timer_t>(this)) {
  CHECK_EQ(uv_timer_init(loop.get(), handle_), 0);
}

Timer::~Timer() { internal::CloseHandle(handle_); }

void Timer::Start(uint64_t timeout_ms, Callback callback) {
  callback_ = std::move(callback);
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
  uv_timer_start(handle_, &Timer::OnTimer, timeout_ms_, repeat_ms_);
}

void Timer::Stop() { uv_timer_stop(handle_); }

bool Timer::IsActive() const {
  return uv_is_active(reinterpret_cast<const uv_handle_t*>(handle_)) != 0;
}

void Timer::OnTimer(uv_timer_t* handle) noexcept {
  auto* self = static_cast<Timer*>(handle->data);
  if (self == nullptr || !self->callback_) return;
  internal::CallUser("Timer", [self] { self->callback_(); });
}

}  // namespace kdns::loop
