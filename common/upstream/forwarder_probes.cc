// Forwarder, part 4: probes. Loop-detection probes (a TXT query for a fresh name under
// kdns-loop-check., see upstream_table.h) and health probes that bring a failed server
// back as soon as it answers.

#include <algorithm>
#include <string>
#include <utility>

#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_internal.h"

namespace kdns::upstream {

dns::Name Forwarder::ProbeForLoop(const Upstream& upstream) {
  dns::Name name = table_->NewLoopProbe(upstream, random_);
  Request request;
  request.qname = name;
  request.qtype = dns::RrType::kTxt;
  request.qclass = dns::RrClass::kIn;
  Job* job = StartJob(JobKind::kLoopProbe, request, {&GetServer(upstream)});
  ++resolve_depth_;  // no waiters, but keep any completion out of this call
  StartNextTry(job);
  --resolve_depth_;
  return name;
}

bool Forwarder::WantsProbe(const Server& server) {
  // max_fails=0: never down, so never health-checked (CoreDNS forward's max_fails 0); such a
  // server comes back with the first reply to a client query, which it is still sent.
  return server.health.failed() && server.health.max_fails() > 0 &&
         !server.entry.loop_disabled.load(std::memory_order_relaxed);
}

void Forwarder::UpdateProbeTimer() {
  // The timer ticks at the shortest interval of the servers that want a probe; each is
  // probed when its own interval has passed (ProbeFailedServers).
  uint64_t interval_ms = 0;
  for (const auto& [address, server] : servers_) {
    if (WantsProbe(*server)) {
      interval_ms = interval_ms == 0 ? server->probe_interval_ms
                                     : std::min(interval_ms, server->probe_interval_ms);
    }
  }
  if (interval_ms == 0) {
    probe_timer_.Stop();
  } else if (!probe_timer_.IsActive() || probe_timer_interval_ms_ != interval_ms) {
    probe_timer_interval_ms_ = interval_ms;
    probe_timer_.StartRepeating(interval_ms, [this] { ProbeFailedServers(); });
  }
}

void Forwarder::ProbeFailedServers() {
  loop_.UpdateTime();
  const uint64_t now = loop_.now_ms();
  std::vector<Server*> failed;
  for (const auto& [address, server] : servers_) {
    if (WantsProbe(*server) && !server->probing && now >= server->next_probe_ms) {
      failed.push_back(server.get());
    }
  }
  for (Server* server : failed) {
    server->probing = true;
    // Due again one interval on, less a tick's slack so a timer firing early still probes.
    server->next_probe_ms = now + server->probe_interval_ms - probe_timer_interval_ms_ / 2;
    Request request;
    request.qname = options_.probe_name;
    request.qtype = options_.probe_type;
    Job* job = StartJob(JobKind::kHealthProbe, request, {server});
    StartNextTry(job);
  }
  UpdateProbeTimer();
}

}  // namespace kdns::upstream
