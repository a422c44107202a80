// Forwarding<State>: the queries a DNS server answers from its upstreams, from the moment
// its handler decides to forward one to the answer the client gets, written once for
// frontend-cache and kubedns (DESIGN §7). Each handler owns one, on its serving thread.
//
// A handler that decides to forward a query (its pure decision: frontend-cache's
// DnsHandler::Decide, kubedns's Answerer) calls Forward. The query waits
// (waiting_queries.h: its Responder and only what its reply needs, within the process's
// budget of waiting queries) while the thread's upstream::Forwarder asks the route's
// upstreams, and the outcome comes back here and goes one of two ways:
//
//   an answer    the Policy writes it for the client (FitAnswer: frontend-cache caches it
//                and writes it with its TTLs, kubedns passes it cut at a whole RRset,
//                forward_reply.h); one that cannot be written fails as kBadReply
//   no answer    every upstream failed or timed out, a forwarding budget is spent, the
//                client's TCP connection is overdue (OnQueriesOverdue), the server shuts
//                down (CancelAll): the Policy's answer instead, if it has one
//                (frontend-cache: an expired entry, RFC 8767), else SERVFAIL
//
// Over the budget of waiting queries, Forward answers the request at once the same way
// (ForwardFailure::kOverloaded). A waiting query whose TCP client closes its connection is
// dropped then (OnConnectionClosed).
//
// Every answer this layer sends leaves through one place (Send): the Policy sees it first
// (Sending: its metrics, and frontend-cache's last word on an NXDOMAIN its hosts know), the
// query log writes its line when the query was sampled at its start, and the Responder (or
// the Request, when answered at once) sends it.
//
// Queries that wait for more than one upstream answer (kubedns: an ExternalName chase, an
// autopath walk) wait the same way (Wait) and ask the upstreams through forwarder() with
// callbacks of their own; they end through Send and Fail like the rest.
//
// Per-thread totals: the thread's Forwarder counts in the process's ForwarderTotals
// (common/upstream/forwarder_totals.h) while it lives, and its counts stay there after.
//
// Thread: the handler's serving thread. Destroying it drops the queries still waiting
// without answering them; call CancelAll first to answer them (as a failure: kShutdown).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/base/clock.h"
#include "common/dns/message.h"
#include "common/server/forward_reply.h"
#include "common/server/query_handler.h"
#include "common/server/query_log.h"
#include "common/server/waiting_queries.h"
#include "common/upstream/forward_outcome.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_totals.h"
#include "common/upstream/upstream_set.h"
#include "common/upstream/upstream_table.h"

namespace kdns::server {

// One answer about to be sent, as the Policy sees it.
struct SentAnswer {
  const dns::Query& query;      // the client's (its ID, question as spelt)
  std::span<uint8_t> response;  // may be amended in place before it is sent
  AnswerSource source;          // where it came from (kFailure: a SERVFAIL of ours)
  upstream::ForwardFailure failure = upstream::ForwardFailure::kTimeout;  // with kFailure
  const AnswerStart& start;  // when the handler was given the query
  bool waited = true;        // false: answered at once, over the budget of waiting
};

// An answer a Policy gives instead of SERVFAIL; empty bytes: none.
struct FailureAnswer {
  std::span<uint8_t> bytes;
  AnswerSource source = AnswerSource::kStale;
};

template <class State>
class Forwarding {
 public:
  using Waiting = typename WaitingQueries<State>::Waiting;

  // What the server decides about its forwarded queries. Called on the serving thread.
  class Policy {
   public:
    virtual ~Policy() = default;
    // The upstream's answer (ForwardOutcome::kAnswer) to `query`, written for its client
    // into `out` within `limit` bytes; empty when it cannot be (the query fails as
    // kBadReply).
    virtual std::span<uint8_t> FitAnswer(const dns::Query& query, size_t limit, State& state,
                                         const upstream::Result& result,
                                         std::span<uint8_t> out) = 0;
    // No answer came (`failure`): an answer to send instead, written into `out`, or none
    // (SERVFAIL).
    virtual FailureAnswer AnswerInstead(const dns::Query& query, size_t limit,
                                        upstream::ForwardFailure failure, std::span<uint8_t> out) {
      (void)query, (void)limit, (void)failure, (void)out;
      return {};
    }
    // Every answer this layer sends, just before it is sent: counted by the server's
    // metrics, and amended if the server must.
    virtual void Sending(const SentAnswer& answer, const State& state) = 0;
  };

  // What a thread's Forwarding is made of besides its Policy: the process's parts, shared
  // by every thread, and the thread's loop and response buffer.
  struct Parts {
    loop::Loop& loop;
    std::span<uint8_t> buffer;  // the thread's ThreadContext::response_buffer
    const upstream::Forwarder::Options& options;
    std::shared_ptr<upstream::UpstreamTable> table;
    const Clock& clock;
    std::shared_ptr<WaitingBudget> budget;  // the budget of waiting queries
    upstream::ForwarderTotals* totals;      // null: not summed
    QueryLog* query_log;                    // null: no query log
  };

  Forwarding(Policy& policy, const Parts& parts)
      : policy_(policy),
        buffer_(parts.buffer),
        query_log_(parts.query_log),
        totals_(parts.totals),
        waiting_(parts.budget),
        forwarder_(parts.loop, parts.options, parts.table, parts.clock) {
    if (totals_ != nullptr) totals_->Add(&forwarder_);
  }
  ~Forwarding() {
    if (totals_ != nullptr) totals_->Remove(&forwarder_);
  }
  Forwarding(const Forwarding&) = delete;
  Forwarding& operator=(const Forwarding&) = delete;

  // Forwards `request`'s query on `upstreams`: it waits for their answer (true). Over the
  // budget of waiting queries it is answered at once (kOverloaded; false).
  bool Forward(Request& request, const upstream::UpstreamSet& upstreams, const AnswerStart& start,
               State&& state) {
    const Admission& admission = request.admission();
    // The client goes with the query to an upstream trusted with it (kubedns): the first
    // asker's, when the query is coalesced with others.
    const loop::SocketAddress client = request.client();
    const uint64_t id = Wait(request, start, state);
    if (id == 0) {
      FailNow(request, start, state, upstream::ForwardFailure::kOverloaded);
      return false;
    }
    forwarder_.Resolve(upstream::Request::FromQuery(admission.query, admission.transport, client),
                       upstreams,
                       [this, id](const upstream::Result& result) { OnResult(id, result); });
    return true;
  }

  // Keeps `request` waiting with `state` (moved from): the id to find it again, or 0 over
  // the budget of waiting queries (the request is still pending and `state` untouched).
  uint64_t Wait(Request& request, const AnswerStart& start, State& state) {
    return waiting_.Add(request, start, state);
  }

  // Answers `request` now for `failure`: the Policy's answer instead, else SERVFAIL.
  void FailNow(Request& request, const AnswerStart& start, const State& state,
               upstream::ForwardFailure failure) {
    const dns::Query& query = request.admission().query;
    Answer(request, query, request.admission().reply_limit_bytes, request.response_buffer(), start,
           state, failure);
  }

  // The waiting query under `id`, or nullptr (answered, dropped).
  Waiting* Find(uint64_t id) { return waiting_.Find(id); }
  // Removes it: the caller answers it (Send, Fail).
  std::optional<Waiting> Take(uint64_t id) { return waiting_.Take(id); }

  // Sends `response` (in the thread's buffer or the caller's) to a waiting query taken.
  void Send(Waiting& waiting, std::span<uint8_t> response, AnswerSource source) {
    const dns::Query query = waiting.client.query();
    Send(waiting.responder, query, response, source, upstream::ForwardFailure::kTimeout,
         waiting.start, waiting.state);
  }

  // Answers a waiting query taken for `failure`: the Policy's answer instead, else SERVFAIL.
  void Fail(Waiting& waiting, upstream::ForwardFailure failure) {
    const dns::Query query = waiting.client.query();
    Answer(waiting.responder, query, waiting.client.limit_bytes, buffer_, waiting.start,
           waiting.state, failure);
  }

  // The client closed TCP connection `connection_id`: its waiting queries are dropped.
  // Returns how many.
  size_t OnConnectionClosed(uint64_t connection_id) {
    return waiting_.DropConnection(connection_id);
  }

  // The queries waiting on TCP connection `connection_id` are overdue: answered now as an
  // upstream's timeout. Their upstream queries go on; an answer finds no waiter.
  void OnQueriesOverdue(uint64_t connection_id) {
    for (Waiting& waiting : waiting_.TakeConnection(connection_id)) {
      Fail(waiting, upstream::ForwardFailure::kTimeout);
    }
  }

  // Answers every waiting query as a failure (kShutdown), before the sockets go.
  void CancelAll() { forwarder_.CancelAll(); }

  upstream::Forwarder& forwarder() { return forwarder_; }
  const upstream::Forwarder& forwarder() const { return forwarder_; }
  size_t waiting() const { return waiting_.size(); }

 private:
  void OnResult(uint64_t id, const upstream::Result& result) {
    std::optional<Waiting> waiting = waiting_.Take(id);
    if (!waiting) return;  // its TCP client went away
    if (result.outcome != upstream::ForwardOutcome::kAnswer) {
      return Fail(*waiting, upstream::ForwardFailureOf(result.outcome, result.reason));
    }
    const dns::Query query = waiting->client.query();
    const std::span<uint8_t> answer =
        policy_.FitAnswer(query, waiting->client.limit_bytes, waiting->state, result, buffer_);
    if (answer.empty()) {
      return Answer(waiting->responder, query, waiting->client.limit_bytes, buffer_, waiting->start,
                    waiting->state, upstream::ForwardFailure::kBadReply);
    }
    Send(waiting->responder, query, answer, AnswerSource::kUpstream,
         upstream::ForwardFailure::kTimeout, waiting->start, waiting->state);
  }

  // The failure's answer: the Policy's instead, else SERVFAIL written into `out`.
  template <class To>
  void Answer(To& to, const dns::Query& query, size_t limit, std::span<uint8_t> out,
              const AnswerStart& start, const State& state, upstream::ForwardFailure failure) {
    const FailureAnswer instead = policy_.AnswerInstead(query, limit, failure, out);
    if (!instead.bytes.empty()) {
      return Send(to, query, instead.bytes, instead.source, failure, start, state);
    }
    const size_t size = WriteEmptyResponse(query, dns::Rcode::kServFail, /*aa=*/false, out).size();
    // Cannot fail for a parsed query; the client retries.
    Send(to, query, out.first(size), AnswerSource::kFailure, failure, start, state);
  }

  template <class To>
  void Send(To& to, const dns::Query& query, std::span<uint8_t> response, AnswerSource source,
            upstream::ForwardFailure failure, const AnswerStart& start, const State& state) {
    // A Request is answered at once; a Responder was kept while the query waited.
    constexpr bool kWaited = !std::is_same_v<To, Request>;
    policy_.Sending(SentAnswer{query, response, source, failure, start, kWaited}, state);
    if (response.empty()) return;
    if (query_log_ != nullptr) {
      query_log_->LogAnswer(to.client(), query, response, source, to.transport(), start);
    }
    (void)to.Reply(response);
  }

  Policy& policy_;
  const std::span<uint8_t> buffer_;
  QueryLog* const query_log_;
  upstream::ForwarderTotals* const totals_;
  WaitingQueries<State> waiting_;
  // Last: destroyed first, dropping its callbacks (which use the members above).
  upstream::Forwarder forwarder_;
};

}  // namespace kdns::server
