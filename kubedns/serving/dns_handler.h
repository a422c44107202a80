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
// A query forwarded or chased waits, and ends, in the layer both servers share
// (common/server/forwarding.h: only what its reply needs, within the process-wide budget of
// waiting queries, Shared::waiting; logged, counted through Sending); a waiting query whose
// TCP client closes its connection is dropped then.
//
// Failures answer SERVFAIL (skydns: SERVFAIL when forwarding fails or no nameserver is
// configured): no upstream at all, every upstream failing, timing out or known down, over
// a forwarding budget (Options::forwarder.budgets) of upstream queries (no queue), over the
// budget of waiting queries (at once, without forwarding). For a
// chase too: kube-dns drops the CNAME and answers NOERROR without records when the target
// does not resolve, which downstream caches keep as a negative answer; SERVFAIL is not
// cached as one and says what happened.
//
//   autopath         (--autopath, autopath.h) a query N.<ns>.svc.Z the records answer
//                    NXDOMAIN walks the rest of a pod's search path: each candidate is
//                    first answered from the thread's snapshot (the Answerer, as a client's
//                    query would be); what is not ours is routed and asked of the upstreams,
//                    an ExternalName target leaving Z chased as above. The first candidate
//                    that exists is answered as a CNAME to it plus its answer; when none
//                    does, or an upstream fails, the query's own NXDOMAIN (never SERVFAIL).
//
// Routing changes are published to every thread at once (Shared::routes, a SnapshotHolder
// as for the records); queries under way finish with the route they started with.
//
// With UDP receiver threads (server::UdpOptions::receiver_thread, --receiver-threads),
// AnswerOnReceiverThread answers on the socket's receiver thread every UDP query the records
// answer by themselves, from a snapshot reader of that thread's own, and leaves the rest to
// HandleQuery on the DNS thread: a name that is not ours with the decision to forward it on
// its route (server::Decision), which HandleQuery acts on without answering from the
// records or looking up the route again; a chase or an autopath walk's NXDOMAIN
// undecided (HandleQuery answers it from the start: the answer to continue from is a
// message, too large to hand over). A receiver thread sleeps
// in recvmmsg, so a batch of queries costs no epoll_wait (see frontend-cache/README.md, "Why
// a receiver thread").
//
// With --loadbalance=round_robin (Shared::loadbalance) an answer from the records rotates
// its A/AAAA RRsets one place per answer in the reply buffer (common/dns/loadbalance.h);
// off, it costs one branch.
//
// Thread: the DNS thread that created it (HandleQuery, the Forwarder's callbacks),
// except AnswerOnReceiverThread (its socket's receiver thread), which uses only the shared
// const Answerer, the thread-safe metrics and query log, and receiver_reader_.
// Queries still waiting are answered SERVFAIL when it is destroyed (Forwarding::CancelAll).
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
#include "common/dns/loadbalance.h"
#include "common/dns/message.h"
#include "common/server/forward_reply.h"
#include "common/server/forwarding.h"
#include "common/server/query_handler.h"
#include "common/server/query_log.h"
#include "common/server/waiting_queries.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/upstream_table.h"
#include "kubedns/answering/answerer.h"
#include "kubedns/answering/autopath.h"
#include "kubedns/answering/chase.h"
#include "kubedns/records/record_tree.h"
#include "kubedns/serving/autopath_metrics.h"
#include "kubedns/serving/forward_metrics.h"
#include "kubedns/serving/metrics.h"
#include "kubedns/serving/upstream_routes.h"

namespace kdns::kubedns {

// An ExternalName chase under way: our answer so far, and the name being asked.
struct ChaseState {
  dns::Message partial;
  dns::Name target;
  int queries = 0;
};

// An autopath walk under way (autopath.h).
struct WalkState {
  dns::Name prefix;               // N
  size_t next = 0;                // index in Autopath::suffixes() of the next candidate
  size_t suffix = 0;              // index of the candidate being resolved
  dns::Name candidate;            // being resolved
  std::vector<uint8_t> fallback;  // the NXDOMAIN answered when no candidate exists
};

// What kubedns keeps of a query waiting for an upstream, besides its Responder and
// ClientQuery: a plain forward keeps no chase; a walk's chase is its candidate's.
struct WaitState {
  bool reverse = false;  // a reverse name (the skydns "reverse" system)
  std::unique_ptr<ChaseState> chase;
  std::unique_ptr<WalkState> walk;
};

class DnsHandler final : public server::QueryHandler,
                         private server::Forwarding<WaitState>::Policy {
 public:
  static constexpr int kMaxChaseQueries = 4;
  static constexpr size_t kMaxCnames = 8;

  // Shared by the handlers of every thread; they outlive the handlers.
  struct Shared {
    const Answerer& answerer;
    SnapshotHolder<Snapshot>& snapshots;
    // The forwarding routes (ConfigMap stub domains, upstream nameservers), published as
    // the records are; none yet: everything not ours is SERVFAIL.
    SnapshotHolder<UpstreamRoutes>& routes;
    DnsMetrics& dns_metrics;
    ForwardMetrics& forward_metrics;
    std::shared_ptr<upstream::UpstreamTable> table;
    upstream::Forwarder::Options forwarder;
    // The process's budget of waiting queries (--max-waiting-queries).
    std::shared_ptr<server::WaitingBudget> waiting;
    // --autopath: both set, or both null (off).
    const Autopath* autopath = nullptr;
    AutopathMetrics* autopath_metrics = nullptr;
    // --log-queries: one line per answer (common/server/query_log.h); null: off.
    server::QueryLog* query_log = nullptr;
    // Every thread's forwarder counters, summed for the metrics; null: not summed.
    upstream::ForwarderTotals* forwarder_totals = nullptr;
    // --loadbalance: answers from the records rotate their A/AAAA RRsets, a turn per answer
    // on a counter of the answering thread's own (common/dns/loadbalance.h).
    dns::LoadBalance loadbalance = dns::LoadBalance::kOff;
  };

  DnsHandler(const server::ThreadContext& context, const Shared& shared);
  ~DnsHandler() override;
  DnsHandler(const DnsHandler&) = delete;
  DnsHandler& operator=(const DnsHandler&) = delete;

  void HandleQuery(server::Request& request) override;
  void OnConnectionClosed(uint64_t connection_id) override;
  // As an upstream timeout: SERVFAIL.
  void OnQueriesOverdue(uint64_t connection_id) override;
  // What the records answer by themselves; a name not ours goes to HandleQuery decided
  // (forward on its route), the rest undecided.
  size_t AnswerOnReceiverThread(const server::Admission& admission, std::span<const uint8_t> query,
                                const loop::SocketAddress& peer, std::span<uint8_t> out,
                                server::Decision* decision) override;
  // Idle threads let go of their record and route snapshots, so a reload's old tree is
  // freed.
  void ReleaseSnapshots() override {
    reader_.Release();
    routes_.Release();
  }
  void ReleaseReceiverSnapshots() override {
    receiver_reader_.Release();
    receiver_routes_.Release();
  }

  size_t pending() const { return forwarding_.waiting(); }
  const upstream::Forwarder& forwarder() const { return forwarding_.forwarder(); }

 private:
  using Start = server::AnswerStart;
  using Waiting = server::Forwarding<WaitState>::Waiting;

  // The routes now (empty before the first publish).
  const UpstreamRoutes& Routes();
  // True when the records' `result` is the whole answer: no upstream and no autopath walk
  // is needed to finish it (HandleQuery's and AnswerOnReceiverThread's one rule).
  bool AnsweredByRecords(const AnswerResult& result) const;
  // --loadbalance on an answer from the records, written at the start of `buffer`.
  void Balance(const AnswerResult& result, std::span<uint8_t> buffer) const;
  // Logs and counts an answer the records gave (`result`), sent or dropped.
  void RecordLocal(const AnswerResult& result, const loop::SocketAddress& client,
                   const server::Admission& admission, const Start& start);
  // A name not ours (a reverse name when `reverse`), forwarded on `route`.
  void Forward(server::Request& request, const UpstreamRoute& route, bool reverse,
               const Start& start);
  void StartChase(server::Request& request, const AnswerResult& result, const Start& start);
  // Starts a walk for a query the records answered NXDOMAIN (`result`); false when the
  // query does not qualify (the caller answers `result` as usual).
  bool StartWalk(server::Request& request, const AnswerResult& result, const Start& start);
  // Resolves the walk's next candidates until one needs an upstream or the walk ends.
  void NextCandidate(uint64_t id);
  void OnCandidate(uint64_t id, const upstream::Result& result);
  // Answers the walk with its candidate's `reply`.
  void WalkHit(uint64_t id, const dns::Message& reply, AutopathSource source);
  // Answers the walk's query as without autopath.
  void WalkMiss(uint64_t id, AutopathMiss miss);
  void AskChaseTarget(uint64_t id, Waiting& waiting);
  // A chase step failed: SERVFAIL, or for a walk's candidate the walk's own answer.
  void ChaseFailed(uint64_t id, upstream::ForwardFailure failure);
  void OnChased(uint64_t id, const upstream::Result& result);
  void FailTaken(uint64_t id, upstream::ForwardFailure failure);

  // server::Forwarding's Policy: an upstream's answer passes with the client's ID and name
  // case, cut at a whole RRset when it does not fit (Truncation::kWholeRRsets); no answer is
  // SERVFAIL (no stale answers: kubedns keeps no cache). Every answer of a query that
  // waited is counted here, by the system it belongs to (DnsMetrics) and in the forwarding
  // metrics.
  std::span<uint8_t> FitAnswer(const dns::Query& query, size_t limit, WaitState& state,
                               const upstream::Result& result, std::span<uint8_t> out) override;
  void Sending(const server::SentAnswer& answer, const WaitState& state) override;

  const Shared& shared_;
  std::span<uint8_t> buffer_;  // the thread's response buffer
  SnapshotHolder<Snapshot>::Reader reader_;
  // The receiver thread's (AnswerOnReceiverThread's): a Reader belongs to one thread.
  SnapshotHolder<Snapshot>::Reader receiver_reader_;
  SnapshotHolder<UpstreamRoutes>::Reader routes_;
  SnapshotHolder<UpstreamRoutes>::Reader receiver_routes_;  // the receiver thread's
  std::vector<uint8_t> reply_;  // reused for answers encoded for the client (chase, re-encode)
  std::vector<uint8_t> candidate_buffer_;  // the records' answer to a walk's candidate
  // The queries waiting for upstreams, and the thread's Forwarder. Last: destroyed first,
  // so its callbacks (which use the members above) go before them.
  server::Forwarding<WaitState> forwarding_;
};

}  // namespace kdns::kubedns
