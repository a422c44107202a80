// Forwarder, part 5: a route's options (route_options.h) on the query path: the order of
// its healthy servers by policy, and its max_fails and health_check on its servers. Only
// routes that set them reach this file; the default path costs a branch on each.

#include <algorithm>
#include <utility>

#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_internal.h"

namespace kdns::upstream {

namespace {

// Round-robin positions are kept per set; a long-lived process that reloads often drops
// them all past this many sets (rotation restarts, nothing else changes).
constexpr size_t kMaxRoundRobinSets = 4096;

}  // namespace

void Forwarder::ApplyHealthOptions(Server& server, const RouteOptions& options) {
  server.route_health = options.HasHealth();
  server.health.set_max_fails(options.max_fails.value_or(UpstreamHealth::Options().max_fails));
  const uint64_t interval_ms = options.health_check_ms.value_or(options_.probe_interval_ms);
  if (server.probe_interval_ms != interval_ms) {
    server.probe_interval_ms = interval_ms;
    server.next_probe_ms = 0;
    if (server.health.failed()) UpdateProbeTimer();
  }
}

void Forwarder::OrderByPolicy(const UpstreamSet& upstreams, std::vector<Server*>& candidates) {
  // Only the healthy ones (first, in the order written) change places; failed ones stay last.
  const size_t healthy = static_cast<size_t>(
      std::find_if(candidates.begin(), candidates.end(),
                   [](const Server* server) { return server->health.failed(); }) -
      candidates.begin());
  if (healthy < 2) return;
  switch (upstreams.options().policy) {
    case RoutePolicy::kDefault:
    case RoutePolicy::kSequential:
      return;
    case RoutePolicy::kRandom:
      // Fisher-Yates; modulo bias over a handful of servers is of no consequence here.
      for (size_t i = healthy - 1; i > 0; --i) {
        std::swap(candidates[i], candidates[random_.Next16() % (i + 1)]);
      }
      return;
    case RoutePolicy::kRoundRobin: {
      if (round_robin_next_.size() >= kMaxRoundRobinSets &&
          round_robin_next_.count(upstreams) == 0) {
        round_robin_next_.clear();
      }
      uint32_t& next = round_robin_next_[upstreams];
      const size_t first = next % healthy;
      ++next;
      std::rotate(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(first),
                  candidates.begin() + static_cast<std::ptrdiff_t>(healthy));
      return;
    }
  }
}

}  // namespace kdns::upstream
