// UpstreamHealth: what one Forwarder has learnt about one upstream server: its smoothed
// round-trip time, the retransmission timeout derived from it, and whether it is failed.
// Pure logic, driven by the Forwarder; times are milliseconds.
//
// RTT: RFC 6298 §2 (as unbound's rtt_update does): the first sample sets SRTT = R and
// RTTVAR = R/2, later ones SRTT += (R - SRTT)/8 and RTTVAR += (|SRTT - R| - RTTVAR)/4; the
// try timeout is SRTT + 4*RTTVAR clamped to [min_try_timeout_ms, max_try_timeout_ms], and
// max_try_timeout_ms before the first sample. Each timeout doubles the next try timeout
// (up to the maximum) until a reply arrives.
//
// Failure: `failure_threshold` consecutive tries without a usable reply (timeouts and
// network errors; not SERVFAIL, which is usually about one name) mark the upstream failed.
// A failed upstream is tried only after the healthy ones; the Forwarder probes it in the
// background and any reply marks it healthy again.
//
// Down: a failed upstream whose background probe (a query any live server answers at
// once, ". NS") timed out too is down: the Forwarder sends it no client query and
// fails queries whose every server is down at once, instead of letting each hold its
// budgets for the whole time budget. Failure alone is not enough: a live resolver that is
// slow on a few names (a broken delegation) times out on them, but it answers the probe.
// Any reply (a late one, or the next probe's) ends both states. How many unanswered probes
// in a row make it down is `max_fails` (CoreDNS forward's max_fails; a route's
// route_options.h): 1 by default; 0 never, and the Forwarder does not probe such a server
// at all (CoreDNS's meaning of max_fails 0).
//
// Thread: the owning Forwarder's loop thread.
#pragma once

#include <cstdint>
#include <optional>

namespace kdns::upstream {

class UpstreamHealth {
 public:
  struct Options {
    uint64_t min_try_timeout_ms = 100;
    uint64_t max_try_timeout_ms = 1500;
    uint32_t failure_threshold = 3;
    uint32_t max_fails = 1;  // unanswered probes in a row that make it down; 0: never
  };

  explicit UpstreamHealth(const Options& options) : options_(options) {}

  void OnReply(uint64_t rtt_ms);
  // A try that timed out or failed on the network.
  void OnFailure();
  // A background probe got an answer: healthy again, with a fresh RTT sample.
  void OnProbeSuccess(uint64_t rtt_ms) { OnReply(rtt_ms); }
  // A background probe timed out (one the network refused is an OnFailure: such a server
  // fails queries at once by itself).
  void OnProbeFailure() {
    OnFailure();
    if (probe_failures_ < UINT32_MAX) ++probe_failures_;
    down_ = options_.max_fails > 0 && probe_failures_ >= options_.max_fails;
  }
  // A route's max_fails (route_options.h); the state so far is kept, except that 0 ends
  // being down: such a server is never probed, so nothing else would.
  void set_max_fails(uint32_t max_fails) {
    options_.max_fails = max_fails;
    if (max_fails == 0) down_ = false;
  }
  uint32_t max_fails() const { return options_.max_fails; }

  uint64_t TryTimeoutMs() const;
  // Smoothed RTT; nullopt before the first reply.
  std::optional<uint64_t> srtt_ms() const;
  // The order key: SRTT, with 0 for an upstream never measured (so each one is measured
  // once before the fastest wins).
  uint64_t SelectionRttMs() const { return srtt_ms().value_or(0); }
  bool failed() const { return consecutive_failures_ >= options_.failure_threshold; }
  bool down() const { return down_; }
  uint32_t consecutive_failures() const { return consecutive_failures_; }

 private:
  Options options_;
  bool measured_ = false;
  // In 1/8 ms (SRTT) and 1/4 ms (RTTVAR) fixed point, as in RFC 6298's reference code.
  uint64_t srtt_x8_ = 0;
  uint64_t rttvar_x4_ = 0;
  uint32_t backoff_shift_ = 0;
  uint32_t consecutive_failures_ = 0;
  uint32_t probe_failures_ = 0;  // unanswered probes in a row
  bool down_ = false;
};

}  // namespace kdns::upstream
