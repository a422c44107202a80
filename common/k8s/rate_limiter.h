// RateLimitedTransport: a client-side limit on requests to the Kubernetes API server, the
// token bucket of client-go (rest.Config QPS/Burst; CoreDNS's `apiserver_qps`). It wraps the
// process's ApiTransport and is shared by all of its reflectors, so a burst of LISTs and
// watches (start, an API-server restart) cannot exceed `qps` after the first `burst` requests.
//
// A request that finds a token is passed on at once; one that does not waits, in order of
// arrival, until a token is due (a timer), and is counted in delayed(). Cancel() of a waiting
// request drops it without a callback, as ApiTransport promises. Tokens refill continuously
// at `qps` per second, up to `burst`.
//
// Thread: the loop thread only, like the transport it wraps; delayed() may be read from any
// thread (metrics).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/base/clock.h"
#include "common/k8s/api_transport.h"
#include "common/k8s/reflector_timers.h"

namespace kdns::k8s {

class RateLimitedTransport final : public ApiTransport {
 public:
  struct Options {
    double qps = 5.0;                  // client-go's default; <= 0: no limit
    uint32_t burst = 10;               // client-go's default; at least 1 when qps > 0
    std::function<void()> on_delayed;  // each request that has to wait (a metric)
  };

  // `inner`, `timers` and `clock` must outlive this.
  RateLimitedTransport(ApiTransport& inner, TimerFactory& timers, const Clock& clock,
                       Options options);
  ~RateLimitedTransport() override;
  RateLimitedTransport(const RateLimitedTransport&) = delete;
  RateLimitedTransport& operator=(const RateLimitedTransport&) = delete;

  RequestId Get(const std::string& path_and_query, Callbacks callbacks,
                uint64_t timeout_ms) override;
  void Cancel(RequestId id) override;

  // Requests that had to wait for a token, since start.
  uint64_t delayed() const { return delayed_.load(std::memory_order_relaxed); }
  size_t waiting() const { return waiting_.size(); }

 private:
  struct Waiting {
    RequestId id = 0;
    std::string path_and_query;
    Callbacks callbacks;
    uint64_t timeout_ms = 0;
  };

  void Refill();
  bool TakeToken();
  void Send(Waiting request);
  void ArmTimer();
  void OnTimer();

  ApiTransport& inner_;
  const Clock& clock_;
  const Options options_;
  std::unique_ptr<OneShotTimer> timer_;
  double tokens_;
  uint64_t refilled_ms_;
  RequestId next_id_ = 0;
  std::deque<Waiting> waiting_;
  std::unordered_map<RequestId, RequestId> sent_;  // our id → the inner transport's
  std::atomic<uint64_t> delayed_{0};
};

}  // namespace kdns::k8s
