#include "common/k8s/backoff.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

namespace kdns::k8s {

Backoff::Random DefaultRandom() {
  auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
  return [engine] { return std::uniform_real_distribution<double>(0.0, 1.0)(*engine); };
}

Backoff::Backoff(Options options, Random random)
    : options_(options), random_(random ? std::move(random) : DefaultRandom()) {
  CHECK_GT(options_.base_ms, 0u) << "backoff base must be positive";
  CHECK_GE(options_.cap_ms, options_.base_ms) << "backoff cap below its base";
}

void Backoff::Succeeded(uint64_t now_ms) {
  if (!success_since_ms_) success_since_ms_ = now_ms;
}

uint64_t Backoff::CeilingMs() const {
  // base * 2^n without overflow: stop doubling once the cap is reached.
  uint64_t ceiling = options_.base_ms;
  for (uint32_t i = 0; i < failures_ && ceiling < options_.cap_ms; ++i) ceiling *= 2;
  return std::min(ceiling, options_.cap_ms);
}

uint64_t Backoff::Failed(uint64_t now_ms) {
  if (success_since_ms_ && now_ms - *success_since_ms_ >= options_.reset_after_ms) failures_ = 0;
  success_since_ms_.reset();
  uint64_t ceiling = CeilingMs();
  if (failures_ < UINT32_MAX) ++failures_;
  double unit = std::clamp(random_(), 0.0, 1.0);
  // Inclusive of the ceiling: a source returning values just below 1 can reach it.
  return std::min(ceiling,
                  static_cast<uint64_t>(std::floor(unit * static_cast<double>(ceiling + 1))));
}

}  // namespace kdns::k8s
