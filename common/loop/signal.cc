#include "common/loop/signal.h"

#include <glog/logging.h>

#include <utility>

namespace kdns::loop {

Signal::Signal(Loop& loop) {
  CHECK_EQ(handle_.Open(this, [&](uv_signal_t* h) { return uv_signal_init(loop.get(), h); }), 0);
}

Signal::~Signal() = default;

void Signal::Start(int signum, Callback callback) {
  callback_ = std::move(callback);
  int rc = uv_signal_start(handle_.get(), &Signal::OnSignal, signum);
  // Only an invalid signal number fails: a programming error.
  CHECK_EQ(rc, 0) << "uv_signal_start(" << signum << "): " << uv_strerror(rc);
}

void Signal::Stop() { uv_signal_stop(handle_.get()); }

void Signal::OnSignal(uv_signal_t* handle, int signum) noexcept {
  auto* self = static_cast<Signal*>(handle->data);
  if (self == nullptr || !self->callback_) return;
  internal::CallUser("Signal", [self, signum] { self->callback_(signum); });
}

}  // namespace kdns::loop
