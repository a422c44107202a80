// ForwarderTotals: the counters of every thread's Forwarder, summed for the metrics, one
// implementation for both DNS servers. Each serving thread has its own Forwarder
// (forwarder.h), whose ForwarderCounters only that thread writes; the scrape reads them
// all. A Forwarder that goes away (its thread stops) leaves its counts in the totals, so a
// counter never goes down.
//
// RegisterForwarderMetrics exports the totals under one prefix, the same families for
// each program that forwards:
//
//   <prefix>_requests_total      queries handed to the forwarder
//   <prefix>_coalesced_total     queries that joined an identical upstream query in flight
//   <prefix>_rejected_total      not forwarded: a forwarding budget was full, or the client
//                                held its share (ForwardOutcome::kOverloaded)
//   <prefix>_failovers_total     tries sent to another upstream after a failure
//   <prefix>_tcp_retries_total   truncated UDP answers retried over TCP
//   <prefix>_bad_replies_total   upstream replies dropped: wrong ID, question, source, or
//                                not parseable
//   <prefix>_in_flight           distinct upstream queries under way
//
// (frontend-cache: kdns_frontend_forward_*; kubedns: kdns_kubedns_forwarder_*, beside its
// client-side kdns_kubedns_forward_* families.)
//
// Thread-safe: Add and Remove from the serving threads, Sum from any (the scrape).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/metrics/registry.h"

namespace kdns::upstream {

class Forwarder;

// The counters of every Forwarder, summed at one moment.
struct ForwardTotals {
  uint64_t requests = 0, coalesced = 0, overloaded = 0, tries = 0, timeouts = 0, failovers = 0,
           mismatched = 0, malformed = 0, tcp_retries = 0, in_flight = 0;
};

class ForwarderTotals {
 public:
  ForwarderTotals() = default;
  ForwarderTotals(const ForwarderTotals&) = delete;
  ForwarderTotals& operator=(const ForwarderTotals&) = delete;

  // `forwarder` counts in the totals until Remove.
  void Add(const Forwarder* forwarder);
  // Keeps what `forwarder` counted (but its in-flight gauge) and stops reading it.
  void Remove(const Forwarder* forwarder);
  ForwardTotals Sum() const;

 private:
  mutable std::mutex mu_;
  std::vector<const Forwarder*> forwarders_;  // Guarded by mu_.
  ForwardTotals retired_;                     // Guarded by mu_.
};

// The families above, read from `totals` at scrape time; `totals` outlives `registry`'s
// scrapes.
void RegisterForwarderMetrics(metrics::Registry& registry, const std::string& prefix,
                              const ForwarderTotals& totals);

}  // namespace kdns::upstream
