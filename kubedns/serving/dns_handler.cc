#include "kubedns/serving/dns_handler.h"

#include <glog/logging.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "common/dns/builder.h"
#include "common/dns/loadbalance.h"

namespace kdns::kubedns {
namespace {

bool TcBit(std::span<const uint8_t> message) { return message.size() > 2 && (message[2] & 0x02); }

}  // namespace

DnsHandler::DnsHandler(const server::ThreadContext& context, const Shared& shared)
    : shared_(shared),
      buffer_(context.response_buffer),
      reader_(shared.snapshots),
      receiver_reader_(shared.snapshots),
      routes_(shared.routes),
      receiver_routes_(shared.routes),
      candidate_buffer_(shared.autopath != nullptr ? dns::kMaxMessageSize : 0),
      forwarding_(*this, {context.loop, context.response_buffer, shared.forwarder, shared.table,
                          SteadyClock::Instance(), shared.waiting, shared.forwarder_totals,
                          shared.query_log}) {}

DnsHandler::~DnsHandler() {
  forwarding_.CancelAll();  // answers every waiting client SERVFAIL before the sockets go
}

const UpstreamRoutes& DnsHandler::Routes() {
  static const UpstreamRoutes kNone;
  const UpstreamRoutes* routes = routes_.Get();
  return routes != nullptr ? *routes : kNone;
}

bool DnsHandler::AnsweredByRecords(const AnswerResult& result) const {
  switch (result.kind) {
    case AnswerKind::kNotOurs:
    case AnswerKind::kExternalTarget:
      return false;
    case AnswerKind::kAnswered:
      // An NXDOMAIN may start a walk (StartWalk decides whether the name qualifies).
      return result.rcode != dns::Rcode::kNxDomain || shared_.autopath == nullptr;
    case AnswerKind::kFormErr:
    case AnswerKind::kDropped:
      return true;
  }
  return true;
}

void DnsHandler::Balance(const AnswerResult& result, std::span<uint8_t> buffer) const {
  if (shared_.loadbalance == dns::LoadBalance::kOff || result.kind != AnswerKind::kAnswered) {
    return;
  }
  DCHECK(result.response.data() == buffer.data());
  (void)dns::RotateAddressRrsets(buffer.first(result.response.size()), dns::NextRoundRobinTurn());
}

void DnsHandler::RecordLocal(const AnswerResult& result, const loop::SocketAddress& client,
                             const server::Admission& admission, const Start& start) {
  if (!result.response.empty() && shared_.query_log != nullptr) {
    shared_.query_log->LogAnswer(client, admission.query, result.response,
                                 server::AnswerSource::kLocal, admission.transport, start);
  }
  shared_.dns_metrics.Record(result, result.response.size(), start.ElapsedSeconds());
}

void DnsHandler::HandleQuery(server::Request& request) {
  const Start start = server::QueryLog::Start(shared_.query_log);
  const server::Decision& decision = request.decision();
  if (decision.kind == server::Decision::Kind::kForward) {
    // The receiver thread found the name is not ours and routed it: forward it, unless the
    // routes changed since (then answer from the start, below).
    const UpstreamRoutes& routes = Routes();
    if (routes_.generation() == decision.generation) {
      const dns::Name& qname = request.admission().query.qname;
      return Forward(request, routes.RouteAt(decision.route), shared_.answerer.IsReverse(qname),
                     start);
    }
  }
  AnswerResult result =
      shared_.answerer.Answer(reader_.Get(), request.admission(), request.response_buffer());
  if (!AnsweredByRecords(result)) {
    if (result.kind == AnswerKind::kNotOurs) {
      const UpstreamRoute& route = Routes().Lookup(request.admission().query.qname);
      return Forward(request, route, result.reverse, start);
    }
    if (result.kind == AnswerKind::kExternalTarget) return StartChase(request, result, start);
    if (StartWalk(request, result, start)) return;
  }
  Balance(result, request.response_buffer());
  if (!result.response.empty()) request.Reply(result.response);
  RecordLocal(result, request.client(), request.admission(), start);
}

size_t DnsHandler::AnswerOnReceiverThread(const server::Admission& admission,
                                          std::span<const uint8_t> query,
                                          const loop::SocketAddress& peer, std::span<uint8_t> out,
                                          server::Decision* decision) {
  (void)query;
  (void)peer;  // the query log names the client (admission.client)
  // The Answerer writes up to the reply limit (at most 1232 bytes over UDP); never less room.
  if (out.size() < admission.reply_limit_bytes) return 0;
  Start start{Start::Clock::now()};
  const AnswerResult result = shared_.answerer.Answer(receiver_reader_.Get(), admission, out);
  if (result.kind == AnswerKind::kNotOurs) {
    // Forwarded from the loop, on the route found here.
    if (const UpstreamRoutes* routes = receiver_routes_.Get()) {
      const UpstreamRoute& route = routes->Lookup(admission.query.qname);
      *decision = server::Decision{server::Decision::Kind::kForward, routes->IndexOf(route),
                                   receiver_routes_.generation()};
    }
    return 0;
  }
  // A drop is HandleQuery's to count; the rest needs this handler's thread.
  if (result.response.empty() || !AnsweredByRecords(result)) return 0;
  // Sampled for the query log only once answered here: the rest is sampled in HandleQuery.
  start.logged = shared_.query_log != nullptr && shared_.query_log->Sample();
  Balance(result, out);
  RecordLocal(result, admission.client, admission, start);
  return result.response.size();
}

void DnsHandler::OnConnectionClosed(uint64_t connection_id) {
  // Dropped unanswered: no longer in flight.
  const size_t dropped = forwarding_.OnConnectionClosed(connection_id);
  for (size_t i = 0; i < dropped; ++i) shared_.forward_metrics.Finished();
}

void DnsHandler::OnQueriesOverdue(uint64_t connection_id) {
  forwarding_.OnQueriesOverdue(connection_id);  // SERVFAIL, as an upstream's timeout
}

void DnsHandler::Forward(server::Request& request, const UpstreamRoute& route, bool reverse,
                         const Start& start) {
  if (forwarding_.Forward(request, route.upstreams, start, WaitState{reverse, nullptr, nullptr})) {
    shared_.forward_metrics.Sent(route.kind, ForwardKind::kForward);
    shared_.forward_metrics.Started();
  }
}

void DnsHandler::StartChase(server::Request& request, const AnswerResult& result,
                            const Start& start) {
  auto chase = std::make_unique<ChaseState>();
  if (dns::ParseMessage(result.response, &chase->partial) != dns::ParseError::kOk) {
    // Our own answer always parses; if it ever did not, the CNAME alone is still true.
    LOG_EVERY_N(ERROR, 1000) << "cannot parse our own answer for "
                             << request.admission().query.qname.ToText();
    request.Reply(result.response);
    shared_.dns_metrics.Record(result, result.response.size(), start.ElapsedSeconds());
    return;
  }
  chase->target = result.chase_target;
  WaitState state{false, std::move(chase), nullptr};
  const uint64_t id = forwarding_.Wait(request, start, state);
  if (id == 0) {
    return forwarding_.FailNow(request, start, state, upstream::ForwardFailure::kOverloaded);
  }
  shared_.forward_metrics.Started();
  AskChaseTarget(id, *forwarding_.Find(id));
}

void DnsHandler::AskChaseTarget(uint64_t id, Waiting& waiting) {
  ChaseState& chase = *waiting.state.chase;
  ++chase.queries;
  upstream::Request request;
  request.qname = chase.target;
  request.qtype = waiting.client.qtype;
  request.qclass = dns::RrClass::kIn;
  request.dnssec_ok = waiting.client.dnssec_ok;
  request.checking_disabled = waiting.client.cd;
  request.client_transport = waiting.client.transport;
  request.client = waiting.responder.client();
  const UpstreamRoute& route = Routes().Lookup(chase.target);
  shared_.forward_metrics.Sent(route.kind,
                               waiting.state.walk ? ForwardKind::kAutopath : ForwardKind::kChase);
  forwarding_.forwarder().Resolve(
      request, route.upstreams, [this, id](const upstream::Result& reply) { OnChased(id, reply); });
}

void DnsHandler::OnChased(uint64_t id, const upstream::Result& result) {
  Waiting* waiting = forwarding_.Find(id);
  if (waiting == nullptr) return;  // its TCP client went away
  WaitState& state = waiting->state;
  ChaseState& chase = *state.chase;
  if (result.outcome != upstream::ForwardOutcome::kAnswer) {
    ChaseFailed(id, upstream::ForwardFailureOf(result.outcome, result.reason));
    return;
  }
  dns::Name next;
  const ChaseStep step =
      AppendChase(result.message, chase.target, waiting->client.qtype, &chase.partial, &next);
  if (step == ChaseStep::kFollow) {
    const auto& answers = chase.partial.answers;
    const bool seen = std::any_of(answers.begin(), answers.end(), [&](const auto& record) {
      return record.owner == next && record.type == dns::RrType::kCname;
    });
    if (!seen && chase.queries < kMaxChaseQueries && CountCnames(chase.partial) < kMaxCnames &&
        !next.IsSubdomainOf(shared_.answerer.config().zone)) {
      chase.target = next;
      AskChaseTarget(id, *waiting);
      return;
    }
    // A loop, too long a chain, or a chain back into the cluster domain (which the upstream
    // cannot resolve and we do not follow from outside).
    ChaseFailed(id, upstream::ForwardFailure::kChain);
    return;
  }
  if (step == ChaseStep::kFailed) {
    ChaseFailed(id, upstream::ForwardFailure::kChain);
    return;
  }
  if (state.walk) {
    // A walk's candidate is an ExternalName service: its chain decides whether it exists.
    if (chase.partial.rcode() == dns::Rcode::kNxDomain) {
      state.chase.reset();
      NextCandidate(id);
    } else {
      WalkHit(id, chase.partial, AutopathSource::kUpstream);
    }
    return;
  }
  std::optional<Waiting> done = forwarding_.Take(id);
  const dns::Message& partial = done->state.chase->partial;
  if (dns::BuildMessage(partial, done->client.limit_bytes, &reply_) != dns::BuildError::kOk) {
    return forwarding_.Fail(*done, upstream::ForwardFailure::kBadReply);
  }
  forwarding_.Send(*done, reply_, server::AnswerSource::kUpstream);
}

void DnsHandler::ChaseFailed(uint64_t id, upstream::ForwardFailure failure) {
  const Waiting* waiting = forwarding_.Find(id);
  if (waiting != nullptr && waiting->state.walk) return WalkMiss(id, AutopathMiss::kFailed);
  FailTaken(id, failure);
}

bool DnsHandler::StartWalk(server::Request& request, const AnswerResult& result,
                           const Start& start) {
  std::optional<dns::Name> prefix = shared_.autopath->Prefix(request.admission().query.qname);
  if (!prefix) return false;
  shared_.autopath_metrics->Attempted();
  auto walk = std::make_unique<WalkState>();
  walk->prefix = *prefix;
  walk->fallback.assign(result.response.begin(), result.response.end());
  WaitState state{false, nullptr, std::move(walk)};
  const uint64_t id = forwarding_.Wait(request, start, state);
  if (id == 0) {
    // No room to wait: the answer without autopath, never SERVFAIL because of it.
    shared_.autopath_metrics->Missed(AutopathMiss::kOverloaded);
    return false;
  }
  shared_.forward_metrics.Started();
  NextCandidate(id);
  return true;
}

void DnsHandler::NextCandidate(uint64_t id) {
  Waiting* waiting = forwarding_.Find(id);
  if (waiting == nullptr) return;
  WalkState& walk = *waiting->state.walk;
  const std::vector<dns::Name>& suffixes = shared_.autopath->suffixes();
  while (walk.next < suffixes.size()) {
    walk.suffix = walk.next++;
    std::optional<dns::Name> candidate = dns::Name::Concat(walk.prefix, suffixes[walk.suffix]);
    if (!candidate) continue;  // over 255 octets: no such name
    walk.candidate = *candidate;
    // The records first, directly, as a client's query for the candidate is answered: they
    // own Z and the reverse names of the cluster's IPs.
    server::Admission admission;
    admission.verdict = server::Verdict::kAdmitted;
    admission.query.header.id = waiting->client.id;
    admission.query.header.rd = true;
    admission.query.qname = walk.candidate;
    admission.query.qtype = waiting->client.qtype;
    admission.query.qclass = waiting->client.qclass;
    admission.transport = waiting->client.transport;
    admission.reply_limit_bytes = candidate_buffer_.size();
    const AnswerResult local = shared_.answerer.Answer(reader_.Get(), admission, candidate_buffer_);
    if (local.kind == AnswerKind::kNotOurs) {
      upstream::Request ask;
      ask.qname = walk.candidate;
      ask.qtype = waiting->client.qtype;
      ask.qclass = waiting->client.qclass;
      ask.dnssec_ok = waiting->client.dnssec_ok;
      ask.checking_disabled = waiting->client.cd;
      ask.client_transport = waiting->client.transport;
      ask.client = waiting->responder.client();
      const UpstreamRoute& route = Routes().Lookup(walk.candidate);
      shared_.forward_metrics.Sent(route.kind, ForwardKind::kAutopath);
      forwarding_.forwarder().Resolve(
          ask, route.upstreams,
          [this, id](const upstream::Result& reply) { OnCandidate(id, reply); });
      return;
    }
    if (local.kind == AnswerKind::kAnswered && local.rcode == dns::Rcode::kNxDomain) continue;
    dns::Message reply;
    if ((local.kind != AnswerKind::kAnswered && local.kind != AnswerKind::kExternalTarget) ||
        local.rcode != dns::Rcode::kNoError || local.truncated ||
        dns::ParseMessage(local.response, &reply) != dns::ParseError::kOk) {
      return WalkMiss(id, AutopathMiss::kFailed);  // not synced, or cannot be: as without
    }
    if (local.kind == AnswerKind::kAnswered) return WalkHit(id, reply, AutopathSource::kOurs);
    // An ExternalName service whose chain leaves Z: completed upstream, as for a client.
    auto chase = std::make_unique<ChaseState>();
    chase->partial = std::move(reply);
    chase->target = local.chase_target;
    waiting->state.chase = std::move(chase);
    AskChaseTarget(id, *waiting);
    return;
  }
  WalkMiss(id, AutopathMiss::kNxDomain);
}

void DnsHandler::OnCandidate(uint64_t id, const upstream::Result& result) {
  if (forwarding_.Find(id) == nullptr) return;  // its TCP client went away
  if (result.outcome != upstream::ForwardOutcome::kAnswer)
    return WalkMiss(id, AutopathMiss::kFailed);
  const dns::Rcode rcode = result.message.rcode();
  if (rcode == dns::Rcode::kNxDomain) return NextCandidate(id);
  if (rcode != dns::Rcode::kNoError) return WalkMiss(id, AutopathMiss::kFailed);
  WalkHit(id, result.message, AutopathSource::kUpstream);
}

void DnsHandler::WalkHit(uint64_t id, const dns::Message& reply, AutopathSource source) {
  // `reply` may live in the walk's ChaseState, which Take moves but does not free.
  std::optional<Waiting> done = forwarding_.Take(id);
  if (!done) return;
  WalkState& walk = *done->state.walk;
  const dns::Message answer = ComposeAutopathAnswer(done->client.query(), walk.candidate, reply,
                                                    source, shared_.answerer.config().ttl_s);
  if (dns::BuildMessage(answer, done->client.limit_bytes, &reply_) != dns::BuildError::kOk) {
    shared_.autopath_metrics->Missed(AutopathMiss::kFailed);
    return forwarding_.Send(*done, walk.fallback, server::AnswerSource::kLocal);
  }
  shared_.autopath_metrics->Hit(walk.suffix);
  // The candidate's answer came from our records or from an upstream: logged as such.
  forwarding_.Send(*done, reply_,
                   source == AutopathSource::kOurs ? server::AnswerSource::kLocal
                                                   : server::AnswerSource::kUpstream);
}

void DnsHandler::WalkMiss(uint64_t id, AutopathMiss miss) {
  std::optional<Waiting> done = forwarding_.Take(id);
  if (!done) return;
  shared_.autopath_metrics->Missed(miss);
  // The query's own NXDOMAIN, from our records.
  forwarding_.Send(*done, done->state.walk->fallback, server::AnswerSource::kLocal);
}

void DnsHandler::FailTaken(uint64_t id, upstream::ForwardFailure failure) {
  std::optional<Waiting> waiting = forwarding_.Take(id);
  if (waiting) forwarding_.Fail(*waiting, failure);
}

std::span<uint8_t> DnsHandler::FitAnswer(const dns::Query& query, size_t limit, WaitState& state,
                                         const upstream::Result& result, std::span<uint8_t> out) {
  (void)state;
  return server::FitReply(server::ReplyToFit::From(result), query, limit,
                          server::Truncation::kWholeRRsets, out, &reply_)
      .bytes;
}

void DnsHandler::Sending(const server::SentAnswer& answer, const WaitState& state) {
  if (answer.source == server::AnswerSource::kFailure) {
    shared_.forward_metrics.Failed(answer.failure);
  }
  const double seconds = answer.start.ElapsedSeconds();
  if (answer.waited) {
    shared_.forward_metrics.Answered(seconds);
    shared_.forward_metrics.Finished();
  }
  AnswerResult record;
  // A walk's answer is the answer to a name in Z ("auth"), wherever its candidate came from.
  record.kind = state.walk    ? AnswerKind::kAnswered
                : state.chase ? AnswerKind::kExternalTarget
                              : AnswerKind::kNotOurs;
  record.rcode = dns::RcodeOf(answer.response);
  record.qtype = answer.query.qtype;
  record.truncated = TcBit(answer.response);
  record.reverse = state.reverse;
  shared_.dns_metrics.Record(record, answer.response.size(), seconds);
}

}  // namespace kdns::kubedns
