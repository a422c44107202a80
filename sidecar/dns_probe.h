// DnsProbe: one --probe. Sends its query to its server through an ares::Channel
// (common/ares), first after a random delay within the interval (so probes started together
// do not fire together), then every interval minus the last probe's latency, one query at
// a time (kube-dns's defaultLoopDelayer). Each outcome updates the status /healthcheck/<label>
// reports and the metrics:
//
//   <ns>_probe_<label>_latency_ms  histogram, ms, buckets 0.25 doubling to 8192 (successes)
//   <ns>_probe_<label>_errors      counter (failures)
//   kdns_sidecar_probe_rcode_total{probe,rcode}            replies by rcode
//   kdns_sidecar_probe_failures_total{probe,reason}        failures by reason
//   kdns_sidecar_probe_last_success_timestamp_seconds{probe}
//
// A probe fails on a transport error (refused, timeout, a reply c-ares or our parser
// rejects) or an answer section with no records; the rcode alone does not decide (an
// NXDOMAIN with no answer fails as "no RRs", a SERVFAIL carrying records passes), exactly
// as kube-dns's sidecar decides.
//
// EvaluateProbeReply() is that decision, pure; DnsProbe is the I/O around it.
//
// Thread: the loop's thread only (the sidecar has one loop; its HTTP handlers read status()
// there too).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/ares/channel.h"
#include "common/dns/types.h"
#include "common/loop/loop.h"
#include "common/loop/timer.h"
#include "common/metrics/registry.h"
#include "sidecar/health.h"
#include "sidecar/probe_option.h"

namespace kdns::sidecar {

enum class ProbeFailure : uint8_t { kNone, kTimeout, kRefused, kNetwork, kMalformed, kNoAnswer };

// "timeout", "refused", "network", "malformed", "no_answer" (the reason label).
std::string_view ProbeFailureText(ProbeFailure failure);

struct ProbeOutcome {
  ProbeFailure failure = ProbeFailure::kNone;
  std::optional<dns::Rcode> rcode;  // when a reply was parsed
  std::string error;                // empty when the probe passed
};

// The outcome of one probe from what c-ares handed back (status and reply bytes).
ProbeOutcome EvaluateProbeReply(const ProbeOption& option, int ares_status,
                                std::span<const uint8_t> reply);

// kube-dns's latency buckets in ms: 0.25 doubling through 8192 (16 bounds, then +Inf).
std::vector<double> ProbeLatencyBucketsMs();

// How long to wait before the next probe: the interval minus the last probe's latency,
// nothing when the probe took the whole interval or longer (kube-dns's loopDelayer.Sleep).
uint64_t NextProbeDelayMs(uint64_t interval_ms, uint64_t latency_ns);

// The query a probe sends: RD set, class IN, no EDNS (as kube-dns's Go client sends it).
std::vector<uint8_t> BuildProbeQuery(const ProbeOption& option);

// The kdns_sidecar_probe_* families, shared by every probe; register once per registry.
struct ProbeFamilies {
  explicit ProbeFamilies(metrics::Registry& registry);
  metrics::CounterFamily& rcodes;
  metrics::CounterFamily& failures;
  metrics::GaugeFamily& last_success_s;
};

class DnsProbe {
 public:
  // The first probe's delay, in [0, interval_ms). Tests pass a fixed one.
  using FirstDelay = std::function<uint64_t(uint64_t interval_ms)>;
  static uint64_t RandomFirstDelay(uint64_t interval_ms);

  struct Options {
    ProbeOption probe;
    std::string prometheus_namespace = "kubedns";
    uint64_t timeout_ms = 2000;  // per try; kube-dns's Go client waits 2 s
    FirstDelay first_delay = &RandomFirstDelay;
  };

  // Registers <ns>_probe_<label>_latency_ms and _errors in `registry`; labels must be
  // distinct (a duplicate metric name CHECK-fails).
  DnsProbe(loop::Loop& loop, Options options, metrics::Registry& registry, ProbeFamilies& families);
  ~DnsProbe();
  DnsProbe(const DnsProbe&) = delete;
  DnsProbe& operator=(const DnsProbe&) = delete;

  // Sets up c-ares and schedules the first probe. False with *error.
  [[nodiscard]] bool Start(std::string* error);

  const ProbeStatus& status() const { return status_; }
  const ProbeOption& option() const { return options_.probe; }
  uint64_t probes_done() const { return probes_done_; }
  // The wait scheduled after the last probe (NextProbeDelayMs).
  uint64_t next_delay_ms() const { return next_delay_ms_; }

 private:
  void Send();
  void OnReply(ares::Channel::Reply reply);

  loop::Loop& loop_;
  Options options_;
  std::vector<uint8_t> query_;
  metrics::Histogram& latency_ms_;
  metrics::Counter& errors_;
  ProbeFamilies& families_;
  metrics::Gauge& last_success_s_;
  std::unique_ptr<ares::Channel> channel_;
  loop::Timer timer_;
  ProbeStatus status_;
  uint64_t probes_done_ = 0;
  uint64_t next_delay_ms_ = 0;
};

}  // namespace kdns::sidecar
