#include "nanny/crash_loop.h"

#include <algorithm>

namespace kdns::nanny {

CrashLoop::Decision CrashLoop::OnUnexpectedExit(uint64_t started_ms, uint64_t now_ms) {
  const uint64_t runtime_ms = now_ms >= started_ms ? now_ms - started_ms : 0;
  if (runtime_ms >= options_.healthy_runtime_ms) {
    fast_crashes_ = 0;
    return Decision{false, 0, 0};
  }
  ++fast_crashes_;
  Decision decision;
  decision.fast_crashes = fast_crashes_;
  if (fast_crashes_ >= options_.max_fast_crashes) {
    decision.give_up = true;
    return decision;
  }
  if (fast_crashes_ == 1) return decision;  // at once
  uint64_t delay = options_.initial_backoff_ms;
  for (int i = 2; i < fast_crashes_ && delay < options_.max_backoff_ms; ++i) delay *= 2;
  decision.delay_ms = std::min(delay, options_.max_backoff_ms);
  return decision;
}

}  // namespace kdns::nanny
