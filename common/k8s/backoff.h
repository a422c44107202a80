// Backoff: exponential backoff with full jitter for retrying requests to the Kubernetes API
// server, and a reset after a stable period of success.
//
// The n-th consecutive failure (n counts from 0) waits a uniformly random time in
// [0, min(cap, base * 2^n)] ("full jitter", which spreads the retries of many clients best:
// AWS Architecture Blog, "Exponential Backoff And Jitter"). Success does not reset the
// count at once: a request that succeeds and then fails again at once (a watch that gets an
// ERROR event straight after its headers) must keep backing off. Only a period of success of
// at least reset_after_ms, with no failure in it, starts the next failure from n = 0 again.
//
// The random source is injectable so that tests can pin the jitter. Plain value; one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

namespace kdns::k8s {

class Backoff {
 public:
  struct Options {
    uint64_t base_ms = 500;
    uint64_t cap_ms = 30'000;
    uint64_t reset_after_ms = 120'000;
  };
  // Returns a uniformly distributed value in [0, 1).
  using Random = std::function<double()>;

  // An empty `random` uses a std::mt19937_64 seeded from std::random_device.
  explicit Backoff(Options options, Random random = nullptr);

  // A request succeeded at now_ms: starts a period of success unless one is running.
  void Succeeded(uint64_t now_ms);
  // A request failed at now_ms: returns how long to wait before the next attempt.
  [[nodiscard]] uint64_t Failed(uint64_t now_ms);
  // The upper bound of the delay the next Failed() draws from (no reset considered).
  uint64_t CeilingMs() const;
  // Consecutive failures since the last reset (the n of the next Failed() call).
  uint32_t failures() const { return failures_; }

  const Options& options() const { return options_; }

 private:
  Options options_;
  Random random_;
  uint32_t failures_ = 0;
  std::optional<uint64_t> success_since_ms_;
};

// A uniform [0, 1) source from a std::mt19937_64 seeded from std::random_device.
Backoff::Random DefaultRandom();

}  // namespace kdns::k8s
