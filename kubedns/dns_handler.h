// DnsHandler: kubedns's QueryHandler, one per DNS thread. Every query is answered by the
// Answerer from the thread's current snapshot (no I/O); what the answerer says is not ours
// goes to the upstreams through the thread's upstream::Forwarder, and the handler answers
// later from the same thread:
//
//   kNotOurs         the name is outside the cluster domain, or the reverse name of an IP
//                    kubedns does not know: routed (UpstreamRoutes: stub domain or default
//                    upstreams) and forwarded; the upstream's answer goes back with the
//                    client's ID and name case, fitted to its buffer, cut at a whole RRset
//                    (common/server/forward_reply.h, Truncation::kWholeRRsets). Over TCP for
//                    TCP clients (the Forwarder's rule).
//   kExternalTarget  an ExternalName chain left the zone: the target is asked of the
//                    upstreams (routed by stub domains as well) for the client's type, and
//                    the answer appended to the CNAMEs. An authoritative upstream's own
//                    out-of-zone CNAME is followed too, up to kMaxChaseQueries queries and
//                    kMaxCnames CNAMEs in all (skydns's limit of 8).
//
// Failures answer SERVFAIL (skydns: SERVFAIL when forwarding fails or no nameserver is
// configured): no upstream at all, every upstream failing, timing out or known down, over
// a forwarding budget (Options::forwarder.budgets) of upstream queries (no queue). For a
// chase too: kube-dns drops the CNAME and answers NOERROR without records when the target
// does not resolve, which downstream caches keep as a negative answer; SERVFAIL is not
// cached as one and says what happened.
//
// Routing changes arrive through SetRoutes (DnsServer::Post from the config thread);
// queries under way finish with the route they started with.
//
// Thread: the DNS thread that created it (HandleQuery, SetRoutes, the Forwarder's callbacks).
// Pending answers are dropped (the clients retry) when it is destroyed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/base/snapshot_holder.h"
#include "common/dns/message.h"
#include "common/server/forward_reply.h"
#include "common/server/query_handler.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/upstream_table.h"
#include "kubedns/answerer.h"
#include "kubedns/chase.h"
#include "kubedns/forward_metrics.h"
#include "kubedns/metrics.h"
#include "kubedns/record_tree.h"
#include "kubedns/upstream_routes.h"

namespace kdns::kubedns {

class DnsHandler final : public server::QueryHandler {
 public:
  static constexpr int kMaxChaseQueries = 4;
  static constexpr size_t kMaxCnames = 8;

  // Shared by the handlers of every thread; they outlive the handlers.
  struct Shared {
    const Answerer& answerer;
    SnapshotHolder<Snapshot>& snapshots;
    DnsMetrics& dns_metrics;
    ForwardMetrics& forward_metrics;
    std::shared_ptr<upstream::UpstreamTable> table;
    upstream::Forwarder::Options forwarder;
  };

  DnsHandler(const server::ThreadContext& context, const Shared& shared,
             std::shared_ptr<const UpstreamRoutes> routes);
  ~DnsHandler() override;
  DnsHandler(const DnsHandler&) = delete;
  DnsHandler& operator=(const DnsHandler&) = delete;

  void HandleQuery(server::Request& request) override;

  void SetRoutes(std::shared_ptr<const UpstreamRoutes> routes);
  const UpstreamRoutes& routes() const { return *routes_; }
  size_t pending() const { return pending_.size(); }
  const upstream::Forwarder& forwarder() const { return forwarder_; }

 private:
  using Clock = std::chrono::steady_clock;

  // A client query waiting for an upstream.
  struct Pending {
    server::Responder responder;
    server::ClientQuery client;
    Clock::time_point start;
    bool reverse = false;
    // A chase: our answer so far, and the name being asked.
    std::optional<dns::Message> partial;
    dns::Name target;
    int chase_queries = 0;
  };

  void Forward(server::Request& request, const AnswerResult& result, Clock::time_point start);
  void StartChase(server::Request& request, const AnswerResult& result, Clock::time_point start);
  void AskChaseTarget(uint64_t id, Pending& pending);
  void OnForwarded(uint64_t id, const upstream::Result& result);
  void OnChased(uint64_t id, const upstream::Result& result);
  // Sends `response` (or SERVFAIL when empty) and records the metrics.
  void Finish(Pending& pending, std::span<const uint8_t> response, dns::Rcode rcode,
              bool truncated);
  void Fail(Pending& pending, ForwardFailure failure);
  void FailTaken(uint64_t id, ForwardFailure failure);
  std::optional<Pending> Take(uint64_t id);

  const Shared& shared_;
  std::span<uint8_t> buffer_;  // the thread's response buffer
  SnapshotHolder<Snapshot>::Reader reader_;
  std::shared_ptr<const UpstreamRoutes> routes_;
  std::unordered_map<uint64_t, Pending> pending_;
  uint64_t next_id_ = 1;
  std::vector<uint8_t> reply_;  // reused for answers encoded for the client (chase, re-encode)
  // Last: destroyed first, so its callbacks (which use the members above) go before them.
  upstream::Forwarder forwarder_;
};

}  // namespace kdns::kubedns
