#include "common/loop/fd_watch.h"

#include <utility>

namespace kdns::loop {

std::unique_ptr<FdWatch> FdWatch::Open(Loop& loop, int fd, Callback callback, std::string* error) {
  std::unique_ptr<FdWatch> watch(new FdWatch(fd, std::move(callback)));
  int rc = watch->poll_.Open(watch.get(),
                             [&](uv_poll_t* h) { return uv_poll_init_socket(loop.get(), h, fd); });
  if (rc != 0) {
    *error = "watch fd " + std::to_string(fd) + ": " + uv_strerror(rc);
    return nullptr;
  }
  return watch;
}

int FdWatch::SetInterest(int events) {
  interest_ = events & (kReadable | kWritable);
  if (interest_ == 0) return uv_poll_stop(poll_.get());
  return uv_poll_start(poll_.get(), interest_, &FdWatch::OnPoll);
}

void FdWatch::OnPoll(uv_poll_t* handle, int status, int events) noexcept {
  auto* self = static_cast<FdWatch*>(handle->data);
  if (self == nullptr || !self->callback_) return;
  const int ready = status < 0 ? 0 : (events & (kReadable | kWritable));
  // Nothing is touched after the callback: it may destroy this FdWatch.
  internal::CallUser("FdWatch", [self, ready, status] { self->callback_(ready, status); });
}

}  // namespace kdns::loop
