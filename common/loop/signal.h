// Signal: delivers a POSIX signal (SIGTERM, SIGHUP, ...) to a callback on the loop's thread
// through uv_signal_t, so the handler may do anything (no async-signal-safety limits).
//
// Thread: the loop's thread only.
#pragma once

#include <functional>

#include "common/loop/handle.h"
#include "common/loop/loop.h"

namespace kdns::loop {

class Signal {
 public:
  using Callback = std::function<void(int signum)>;

  explicit Signal(Loop& loop);
  ~Signal();
  Signal(const Signal&) = delete;
  Signal& operator=(const Signal&) = delete;

  // Starts watching signum; replaces any previous signal and callback.
  void Start(int signum, Callback callback);
  void Stop();

 private:
  static void OnSignal(uv_signal_t* handle, int signum) noexcept;

  UvHandle<uv_signal_t> handle_;
  Callback callback_;
};

}  // namespace kdns::loop
