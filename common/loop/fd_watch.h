// FdWatch: watches a file descriptor someone else opened and owns (a socket of curl or
// c-ares, an inotify descriptor) for readability and writability on a loop, through one
// uv_poll_t. The C library says what it wants to wait for (SetInterest), the loop tells
// the callback what is ready, and the library does the reading and writing itself.
//
// Ownership: the FdWatch owns its poll handle (UvHandle), never the fd. Destroy the FdWatch
// (or SetInterest(0)) before the fd is closed: uv_close removes the fd from epoll at once,
// so the fd may be closed right after the FdWatch is destroyed. Destroying the FdWatch from
// inside its own callback is fine; no callback follows.
//
// Thread: the loop's thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/loop/handle.h"
#include "common/loop/loop.h"

namespace kdns::loop {

class FdWatch {
 public:
  // Interest and readiness bits.
  static constexpr int kReadable = UV_READABLE;
  static constexpr int kWritable = UV_WRITABLE;

  // `ready` holds kReadable and/or kWritable; on a poll error `status` is a negative libuv
  // code and `ready` is 0 (the library should then look at the fd itself to find the error).
  using Callback = std::function<void(int ready, int status)>;

  // nullptr with *error if the fd cannot be polled (e.g. a regular file).
  [[nodiscard]] static std::unique_ptr<FdWatch> Open(Loop& loop, int fd, Callback callback,
                                                     std::string* error);
  ~FdWatch() = default;
  FdWatch(const FdWatch&) = delete;
  FdWatch& operator=(const FdWatch&) = delete;

  // What to wait for: kReadable | kWritable, or 0 to stop waiting. Replaces the previous
  // interest. A libuv error code on failure (logged by the caller's policy), else 0.
  int SetInterest(int events);
  int interest() const { return interest_; }
  int fd() const { return fd_; }

 private:
  FdWatch(int fd, Callback callback) : fd_(fd), callback_(std::move(callback)) {}
  static void OnPoll(uv_poll_t* handle, int status, int events) noexcept;

  int fd_;
  int interest_ = 0;
  Callback callback_;
  UvHandle<uv_poll_t> poll_;
};

}  // namespace kdns::loop
