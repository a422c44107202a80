#include "common/k8s/rate_limiter.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace kdns::k8s {

RateLimitedTransport::RateLimitedTransport(ApiTransport& inner, TimerFactory& timers,
                                           const Clock& clock, Options options)
    : inner_(inner),
      clock_(clock),
      options_(std::move(options)),
      timer_(timers.NewTimer()),
      tokens_(std::max<uint32_t>(options.burst, 1)),
      refilled_ms_(clock.NowMs()) {}

RateLimitedTransport::~RateLimitedTransport() { timer_->Stop(); }

void RateLimitedTransport::Refill() {
  uint64_t now_ms = clock_.NowMs();
  if (now_ms <= refilled_ms_) return;
  double burst = std::max<uint32_t>(options_.burst, 1);
  tokens_ =
      std::min(burst, tokens_ + static_cast<double>(now_ms - refilled_ms_) * options_.qps / 1000.0);
  refilled_ms_ = now_ms;
}

bool RateLimitedTransport::TakeToken() {
  if (options_.qps <= 0) return true;
  Refill();
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

ApiTransport::RequestId RateLimitedTransport::Get(const std::string& path_and_query,
                                                  Callbacks callbacks, uint64_t timeout_ms) {
  Waiting request{++next_id_, path_and_query, std::move(callbacks), timeout_ms};
  RequestId id = request.id;
  // Waiting requests go first: a new one never overtakes them.
  if (waiting_.empty() && TakeToken()) {
    Send(std::move(request));
    return id;
  }
  delayed_.fetch_add(1, std::memory_order_relaxed);
  if (options_.on_delayed) options_.on_delayed();
  waiting_.push_back(std::move(request));
  ArmTimer();
  return id;
}

void RateLimitedTransport::Send(Waiting request) {
  RequestId id = request.id;
  Callbacks callbacks = std::move(request.callbacks);
  auto on_done = std::move(callbacks.on_done);
  callbacks.on_done = [this, id, on_done = std::move(on_done)](const ApiResult& result) {
    sent_.erase(id);
    on_done(result);
  };
  sent_[id] = inner_.Get(request.path_and_query, std::move(callbacks), request.timeout_ms);
}

void RateLimitedTransport::Cancel(RequestId id) {
  if (auto it = sent_.find(id); it != sent_.end()) {
    RequestId inner_id = it->second;
    sent_.erase(it);
    inner_.Cancel(inner_id);
    return;
  }
  auto it = std::find_if(waiting_.begin(), waiting_.end(),
                         [id](const Waiting& request) { return request.id == id; });
  if (it == waiting_.end()) return;
  waiting_.erase(it);
  if (waiting_.empty()) timer_->Stop();
}

void RateLimitedTransport::ArmTimer() {
  if (timer_->IsActive() || waiting_.empty()) return;
  Refill();
  // When the next whole token is due (at least 1 ms, so the clock has moved).
  double missing = std::max(0.0, 1.0 - tokens_);
  auto delay_ms = static_cast<uint64_t>(std::ceil(missing * 1000.0 / options_.qps));
  timer_->Start(std::max<uint64_t>(delay_ms, 1), [this] { OnTimer(); });
}

void RateLimitedTransport::OnTimer() {
  while (!waiting_.empty() && TakeToken()) {
    Waiting request = std::move(waiting_.front());
    waiting_.pop_front();
    Send(std::move(request));
  }
  ArmTimer();
}

}  // namespace kdns::k8s
