// CrashLoop: when to restart a child that exited on its own, and when to give up.
//
// A child that ran for at least `healthy_runtime_ms` before it died is restarted at once
// and the count starts over. A child that died sooner is a fast crash: the first one is
// restarted at once too (a kill -9 must cost as little as possible), the next ones after
// an exponential backoff (`initial_backoff_ms`, doubling, at most `max_backoff_ms`), and
// once `max_fast_crashes` fast crashes came in a row the nanny gives up (exits non-zero,
// so the kubelet sees a crash-looping container instead of a nanny quietly retrying).
//
// Pure: times are passed in (monotonic milliseconds). No thread affinity.
#pragma once

#include <cstdint>

namespace kdns::nanny {

class CrashLoop {
 public:
  struct Options {
    uint64_t healthy_runtime_ms = 10'000;
    int max_fast_crashes = 5;
    uint64_t initial_backoff_ms = 100;
    uint64_t max_backoff_ms = 5'000;
  };

  struct Decision {
    bool give_up = false;
    uint64_t delay_ms = 0;  // before the restart (when !give_up)
    int fast_crashes = 0;   // in a row, this one included
  };

  explicit CrashLoop(Options options) : options_(options) {}

  // The child started at started_ms exited unasked at now_ms.
  Decision OnUnexpectedExit(uint64_t started_ms, uint64_t now_ms);

  int fast_crashes() const { return fast_crashes_; }
  const Options& options() const { return options_; }

 private:
  Options options_;
  int fast_crashes_ = 0;
};

}  // namespace kdns::nanny
