#include "common/upstream/forwarder_totals.h"

#include <algorithm>
#include <atomic>

#include "common/upstream/forwarder.h"

namespace kdns::upstream {
namespace {

// Adds what `counters` say now to `totals` (but the in-flight gauge when `gauges` is false).
void AddCounters(const ForwarderCounters& c, bool gauges, ForwardTotals& totals) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  totals.requests += c.requests.load(kRelaxed);
  totals.coalesced += c.coalesced.load(kRelaxed);
  totals.overloaded += c.overloaded.load(kRelaxed);
  totals.tries += c.tries.load(kRelaxed);
  totals.timeouts += c.timeouts.load(kRelaxed);
  totals.failovers += c.failovers.load(kRelaxed);
  totals.mismatched += c.mismatched.load(kRelaxed);
  totals.malformed += c.malformed.load(kRelaxed);
  totals.tcp_retries += c.tcp_retries.load(kRelaxed);
  if (gauges) totals.in_flight += c.in_flight.load(kRelaxed);
}

}  // namespace

void ForwarderTotals::Add(const Forwarder* forwarder) {
  std::lock_guard lock(mu_);
  forwarders_.push_back(forwarder);
}

void ForwarderTotals::Remove(const Forwarder* forwarder) {
  std::lock_guard lock(mu_);
  AddCounters(forwarder->counters(), /*gauges=*/false, retired_);
  std::erase(forwarders_, forwarder);
}

ForwardTotals ForwarderTotals::Sum() const {
  std::lock_guard lock(mu_);
  ForwardTotals totals = retired_;
  for (const Forwarder* forwarder : forwarders_) {
    AddCounters(forwarder->counters(), /*gauges=*/true, totals);
  }
  return totals;
}

void RegisterForwarderMetrics(metrics::Registry& registry, const std::string& prefix,
                              const ForwarderTotals& totals) {
  auto read = [&totals](uint64_t ForwardTotals::*field) {
    return [&totals, field] { return static_cast<double>(totals.Sum().*field); };
  };
  registry.AddCallbackCounter(prefix + "_requests_total",
                              "Queries handed to the forwarder (frontend-cache: cache misses and "
                              "prefetches; kubedns: names it does not own, chases, autopath).",
                              read(&ForwardTotals::requests));
  registry.AddCallbackCounter(prefix + "_coalesced_total",
                              "Queries that joined an identical upstream query in flight.",
                              read(&ForwardTotals::coalesced));
  registry.AddCallbackCounter(
      prefix + "_rejected_total",
      "Queries not forwarded because a forwarding budget was full (--dns-forward-max or "
      "--forward-max, --forward-max-per-route, --forward-max-per-upstream) or the client held "
      "its share (--forward-client-reserve).",
      read(&ForwardTotals::overloaded));
  registry.AddCallbackCounter(prefix + "_failovers_total",
                              "Tries sent to another upstream after a failure.",
                              read(&ForwardTotals::failovers));
  registry.AddCallbackCounter(prefix + "_tcp_retries_total",
                              "Truncated UDP answers retried over TCP.",
                              read(&ForwardTotals::tcp_retries));
  registry.AddCallbackCounter(
      prefix + "_bad_replies_total",
      "Upstream replies dropped: wrong ID, question, source, or not parseable.", [&totals] {
        const ForwardTotals sum = totals.Sum();
        return static_cast<double>(sum.mismatched + sum.malformed);
      });
  registry.AddCallbackGauge(prefix + "_in_flight", "Distinct upstream queries under way.",
                            read(&ForwardTotals::in_flight));
}

}  // namespace kdns::upstream
