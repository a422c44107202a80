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

void Forwarder::UpdateProbeTimer() {
  bool any_failed = false;
  for (const auto& [address, server] : servers_) {
    if (server->health.failed() && !server->entry.loop_disabled.load(std::memory_order_relaxed)) {
      any_failed = true;
      break;
    }
  }
  if (!any_failed) {
    probe_timer_.Stop();
  } else if (!probe_timer_.IsActive()) {
    probe_timer_.StartRepeating(options_.probe_interval_ms, [this] { ProbeFailedServers(); });
  }
}

void Forwarder::ProbeFailedServers() {
  std::vector<Server*> failed;
  for (const auto& [address, server] : servers_) {
    if (server->health.failed() && !server->probing &&
        !server->entry.loop_disabled.load(std::memory_order_relaxed)) {
      failed.push_back(server.get());
    }
  }
  for (Server* server : failed) {
    server->probing = true;
    Request request;
    request.qname = options_.probe_name;
    request.qtype = options_.probe_type;
    Job* job = StartJob(JobKind::kHealthProbe, request, {server});
    StartNextTry(job);
  }
  UpdateProbeTimer();
}

}  // namespace kdns::upstream
