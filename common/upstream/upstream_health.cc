#include "common/upstream/upstream_health.h"

#include <algorithm>

namespace kdns::upstream {

void UpstreamHealth::OnReply(uint64_t rtt_ms) {
  const uint64_t sample_x8 = rtt_ms * 8;
  if (!measured_) {
    srtt_x8_ = sample_x8;
    rttvar_x4_ = rtt_ms * 2;  // R/2 in quarters
    measured_ = true;
  } else {
    const uint64_t delta_x8 = sample_x8 > srtt_x8_ ? sample_x8 - srtt_x8_ : srtt_x8_ - sample_x8;
    // RTTVAR = 3/4 RTTVAR + 1/4 |delta|; in quarters: rttvar_x4 += |delta| - rttvar.
    const uint64_t delta_x4 = delta_x8 / 2;
    rttvar_x4_ = rttvar_x4_ - rttvar_x4_ / 4 + delta_x4 / 4;
    // SRTT = 7/8 SRTT + 1/8 R.
    srtt_x8_ = srtt_x8_ - srtt_x8_ / 8 + rtt_ms;
  }
  backoff_shift_ = 0;
  consecutive_failures_ = 0;
  probe_failures_ = 0;
  down_ = false;
}

void UpstreamHealth::OnFailure() {
  if (backoff_shift_ < 8) ++backoff_shift_;
  if (consecutive_failures_ < UINT32_MAX) ++consecutive_failures_;
}

std::optional<uint64_t> UpstreamHealth::srtt_ms() const {
  if (!measured_) return std::nullopt;
  return srtt_x8_ / 8;
}

uint64_t UpstreamHealth::TryTimeoutMs() const {
  uint64_t timeout = options_.max_try_timeout_ms;
  if (measured_) timeout = srtt_x8_ / 8 + rttvar_x4_;  // SRTT + 4 * RTTVAR
  timeout <<= backoff_shift_;
  return std::clamp(timeout, options_.min_try_timeout_ms,
                    std::max(options_.min_try_timeout_ms, options_.max_try_timeout_ms));
}

}  // namespace kdns::upstream
