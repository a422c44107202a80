#include "kubedns/serving/dns_handler.h"

#include <glog/logging.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "common/dns/builder.h"

namespace kdns::kubedns {
namespace {

bool TcBit(std::span<const uint8_t> message) { return message.size() > 2 && (message[2] & 0x02); }

// The query log's line for an answer sent (sampled there); `source` is kLocal for our
// own records and refusals, kUpstream for what a forwarded query or a chase brought.
void LogQuery(server::QueryLog* log, const loop::SocketAddress& client, const dns::Query& query,
              dns::Transport transport, std::span<const uint8_t> response,
              server::AnswerSource source, std::chrono::steady_clock::time_point start) {
  if (log == nullptr || !log->Sample()) return;
  const auto elapsed = std::chrono::steady_clock::now() - start;
  log->LogAnswer(client, query, response, source, transport,
                 static_cast<uint64_t>(
                     std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count()));
}

}  // namespace

DnsHandler::DnsHandler(const server::ThreadContext& context, const Shared& shared)
    : shared_(shared),
      buffer_(context.response_buffer),
      reader_(shared.snapshots),
      receiver_reader_(shared.snapshots),
      routes_(shared.routes),
      waiting_(shared.waiting),
      candidate_buffer_(shared.autopath != nullptr ? dns::kMaxMessageSize : 0),
      forwarder_(context.loop, shared.forwarder, shared.table) {}

DnsHandler::~DnsHandler() {
  // The Forwarder (destroyed first) drops their callbacks; the Responders drop the queries.
  for (size_t i = 0; i < waiting_.size(); ++i) shared_.forward_metrics.Finished();
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

void DnsHandler::RecordLocal(const AnswerResult& result, const loop::SocketAddress& client,
                             const server::Admission& admission, Clock::time_point start) {
  if (!result.response.empty()) {
    const dns::Query& query = admission.query;
    LogQuery(shared_.query_log, client, query, admission.transport, result.response,
             server::AnswerSource::kLocal, start);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  shared_.dns_metrics.Record(result, result.response.size(), seconds);
}

void DnsHandler::HandleQuery(server::Request& request) {
  const Clock::time_point start = Clock::now();
  AnswerResult result =
      shared_.answerer.Answer(reader_.Get(), request.admission(), request.response_buffer());
  if (!AnsweredByRecords(result)) {
    if (result.kind == AnswerKind::kNotOurs) return Forward(request, result, start);
    if (result.kind == AnswerKind::kExternalTarget) return StartChase(request, result, start);
    if (StartWalk(request, result, start)) return;
  }
  if (!result.response.empty()) request.Reply(result.response);
  RecordLocal(result, request.client(), request.admission(), start);
}

size_t DnsHandler::AnswerOnReceiverThread(const server::Admission& admission,
                                          std::span<const uint8_t> query,
                                          const loop::SocketAddress& peer, std::span<uint8_t> out,
                                          server::Decision* decision) {
  (void)query;
  (void)decision;
  (void)peer;  // the query log names the client (admission.client)
  // The Answerer writes up to the reply limit (at most 1232 bytes over UDP); never less room.
  if (out.size() < admission.reply_limit_bytes) return 0;
  const Clock::time_point start = Clock::now();
  const AnswerResult result = shared_.answerer.Answer(receiver_reader_.Get(), admission, out);
  // A drop is HandleQuery's to count; the rest needs this handler's thread.
  if (result.response.empty() || !AnsweredByRecords(result)) return 0;
  RecordLocal(result, admission.client, admission, start);
  return result.response.size();
}

void DnsHandler::OnConnectionClosed(uint64_t connection_id) {
  // Dropped unanswered: no longer in flight.
  const size_t dropped = waiting_.DropConnection(connection_id);
  for (size_t i = 0; i < dropped; ++i) shared_.forward_metrics.Finished();
}

void DnsHandler::OnQueriesOverdue(uint64_t connection_id) {
  // The upstream query goes on (its answer, if any, finds no waiter): only the client's
  // wait ends here.
  for (Waiting& waiting : waiting_.TakeConnection(connection_id)) {
    Fail(waiting, upstream::ForwardFailure::kTimeout);
  }
}

void DnsHandler::Forward(server::Request& request, const AnswerResult& result,
                         Clock::time_point start) {
  const dns::Query& query = request.admission().query;
  const loop::SocketAddress client = request.client();  // the pod, also behind the cache
  const uint64_t id = waiting_.Add(request, Forwarding{start, result.reverse, nullptr, nullptr});
  if (id == 0) return FailNow(request, result, start);
  const UpstreamRoute& route = Routes().Lookup(query.qname);
  shared_.forward_metrics.Sent(route.kind, ForwardKind::kForward);
  shared_.forward_metrics.Started();
  forwarder_.Resolve(upstream::Request::FromQuery(query, request.admission().transport, client),
                     route.upstreams,
                     [this, id](const upstream::Result& reply) { OnForwarded(id, reply); });
}

void DnsHandler::StartChase(server::Request& request, const AnswerResult& result,
                            Clock::time_point start) {
  auto chase = std::make_unique<Chase>();
  if (dns::ParseMessage(result.response, &chase->partial) != dns::ParseError::kOk) {
    // Our own answer always parses; if it ever did not, the CNAME alone is still true.
    LOG_EVERY_N(ERROR, 1000) << "cannot parse our own answer for "
                             << request.admission().query.qname.ToText();
    request.Reply(result.response);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    shared_.dns_metrics.Record(result, result.response.size(), seconds);
    return;
  }
  chase->target = result.chase_target;
  const uint64_t id = waiting_.Add(request, Forwarding{start, false, std::move(chase), nullptr});
  if (id == 0) return FailNow(request, result, start);
  shared_.forward_metrics.Started();
  AskChaseTarget(id, *waiting_.Find(id));
}

void DnsHandler::FailNow(server::Request& request, const AnswerResult& result,
                         Clock::time_point start) {
  shared_.forward_metrics.Failed(upstream::ForwardFailure::kOverloaded);
  const std::span<const uint8_t> response = server::WriteEmptyResponse(
      request.admission().query, dns::Rcode::kServFail, /*aa=*/false, request.response_buffer());
  if (!response.empty()) {
    const dns::Query& query = request.admission().query;
    LogQuery(shared_.query_log, request.client(), query, request.transport(), response,
             server::AnswerSource::kLocal, start);
    request.Reply(response);
  }
  AnswerResult record = result;
  record.rcode = dns::Rcode::kServFail;
  record.truncated = false;
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  shared_.dns_metrics.Record(record, response.size(), seconds);
}

void DnsHandler::AskChaseTarget(uint64_t id, Waiting& waiting) {
  Chase& chase = *waiting.state.chase;
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
  forwarder_.Resolve(request, route.upstreams,
                     [this, id](const upstream::Result& reply) { OnChased(id, reply); });
}

void DnsHandler::OnForwarded(uint64_t id, const upstream::Result& result) {
  std::optional<Waiting> waiting = waiting_.Take(id);
  if (!waiting) return;  // its TCP client went away
  if (result.outcome != upstream::ForwardOutcome::kAnswer) {
    Fail(*waiting, upstream::ForwardFailureOf(result.outcome, result.reason));
    return;
  }
  const server::Fitted fitted = server::FitReply(
      server::ReplyToFit::From(result), waiting->client.query(), waiting->client.limit_bytes,
      server::Truncation::kWholeRRsets, buffer_, &reply_);
  if (fitted.bytes.empty()) {
    Fail(*waiting, upstream::ForwardFailure::kBadReply);
    return;
  }
  Finish(*waiting, fitted.bytes, result.message.rcode(), TcBit(fitted.bytes),
         server::AnswerSource::kUpstream);
}

void DnsHandler::OnChased(uint64_t id, const upstream::Result& result) {
  Waiting* waiting = waiting_.Find(id);
  if (waiting == nullptr) return;  // its TCP client went away
  Chase& chase = *waiting->state.chase;
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
  if (waiting->state.walk) {
    // A walk's candidate is an ExternalName service: its chain decides whether it exists.
    if (chase.partial.rcode() == dns::Rcode::kNxDomain) {
      waiting->state.chase.reset();
      NextCandidate(id);
    } else {
      WalkHit(id, chase.partial, AutopathSource::kUpstream);
    }
    return;
  }
  std::optional<Waiting> done = waiting_.Take(id);
  const dns::Message& partial = done->state.chase->partial;
  if (dns::BuildMessage(partial, done->client.limit_bytes, &reply_) != dns::BuildError::kOk) {
    Fail(*done, upstream::ForwardFailure::kBadReply);
    return;
  }
  Finish(*done, reply_, partial.rcode(), TcBit(reply_), server::AnswerSource::kUpstream);
}

void DnsHandler::ChaseFailed(uint64_t id, upstream::ForwardFailure failure) {
  const Waiting* waiting = waiting_.Find(id);
  if (waiting != nullptr && waiting->state.walk) return WalkMiss(id, AutopathMiss::kFailed);
  FailTaken(id, failure);
}

bool DnsHandler::StartWalk(server::Request& request, const AnswerResult& result,
                           Clock::time_point start) {
  std::optional<dns::Name> prefix = shared_.autopath->Prefix(request.admission().query.qname);
  if (!prefix) return false;
  shared_.autopath_metrics->Attempted();
  auto walk = std::make_unique<Walk>();
  walk->prefix = *prefix;
  walk->fallback.assign(result.response.begin(), result.response.end());
  const uint64_t id = waiting_.Add(request, Forwarding{start, false, nullptr, std::move(walk)});
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
  Waiting* waiting = waiting_.Find(id);
  if (waiting == nullptr) return;
  Walk& walk = *waiting->state.walk;
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
      forwarder_.Resolve(ask, route.upstreams,
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
    auto chase = std::make_unique<Chase>();
    chase->partial = std::move(reply);
    chase->target = local.chase_target;
    waiting->state.chase = std::move(chase);
    AskChaseTarget(id, *waiting);
    return;
  }
  WalkMiss(id, AutopathMiss::kNxDomain);
}

void DnsHandler::OnCandidate(uint64_t id, const upstream::Result& result) {
  if (waiting_.Find(id) == nullptr) return;  // its TCP client went away
  if (result.outcome != upstream::ForwardOutcome::kAnswer)
    return WalkMiss(id, AutopathMiss::kFailed);
  const dns::Rcode rcode = result.message.rcode();
  if (rcode == dns::Rcode::kNxDomain) return NextCandidate(id);
  if (rcode != dns::Rcode::kNoError) return WalkMiss(id, AutopathMiss::kFailed);
  WalkHit(id, result.message, AutopathSource::kUpstream);
}

void DnsHandler::WalkHit(uint64_t id, const dns::Message& reply, AutopathSource source) {
  // `reply` may live in the walk's Chase, which Take moves but does not free.
  std::optional<Waiting> done = waiting_.Take(id);
  if (!done) return;
  const Walk& walk = *done->state.walk;
  const dns::Message answer = ComposeAutopathAnswer(done->client.query(), walk.candidate, reply,
                                                    source, shared_.answerer.config().ttl_s);
  if (dns::BuildMessage(answer, done->client.limit_bytes, &reply_) != dns::BuildError::kOk) {
    shared_.autopath_metrics->Missed(AutopathMiss::kFailed);
    Finish(*done, done->state.walk->fallback, dns::Rcode::kNxDomain, false,
           server::AnswerSource::kLocal);
    return;
  }
  shared_.autopath_metrics->Hit(walk.suffix);
  // The candidate's answer came from our records or from an upstream: logged as such.
  Finish(*done, reply_, dns::Rcode::kNoError, TcBit(reply_),
         source == AutopathSource::kOurs ? server::AnswerSource::kLocal
                                         : server::AnswerSource::kUpstream);
}

void DnsHandler::WalkMiss(uint64_t id, AutopathMiss miss) {
  std::optional<Waiting> done = waiting_.Take(id);
  if (!done) return;
  shared_.autopath_metrics->Missed(miss);
  // The query's own NXDOMAIN, from our records.
  Finish(*done, done->state.walk->fallback, dns::Rcode::kNxDomain, false,
         server::AnswerSource::kLocal);
}

void DnsHandler::FailTaken(uint64_t id, upstream::ForwardFailure failure) {
  std::optional<Waiting> waiting = waiting_.Take(id);
  if (waiting) Fail(*waiting, failure);
}

void DnsHandler::Fail(Waiting& waiting, upstream::ForwardFailure failure) {
  shared_.forward_metrics.Failed(failure);
  std::span<const uint8_t> response = server::WriteEmptyResponse(
      waiting.client.query(), dns::Rcode::kServFail, /*aa=*/false, buffer_);
  Finish(waiting, response, dns::Rcode::kServFail, false, server::AnswerSource::kFailure);
}

void DnsHandler::Finish(Waiting& waiting, std::span<const uint8_t> response, dns::Rcode rcode,
                        bool truncated, server::AnswerSource source) {
  if (shared_.query_log != nullptr) {  // the question rebuilt only for a log
    LogQuery(shared_.query_log, waiting.responder.client(), waiting.client.query(),
             waiting.client.transport, response, source, waiting.state.start);
  }
  waiting.responder.Reply(response);
  const double seconds = std::chrono::duration<double>(Clock::now() - waiting.state.start).count();
  shared_.forward_metrics.Answered(seconds);
  shared_.forward_metrics.Finished();
  AnswerResult record;
  // A walk's answer is the answer to a name in Z ("auth"), wherever its candidate came from.
  record.kind = waiting.state.walk    ? AnswerKind::kAnswered
                : waiting.state.chase ? AnswerKind::kExternalTarget
                                      : AnswerKind::kNotOurs;
  record.rcode = rcode;
  record.qtype = waiting.client.qtype;
  record.truncated = truncated;
  record.reverse = waiting.state.reverse;
  shared_.dns_metrics.Record(record, response.size(), seconds);
}

}  // namespace kdns::kubedns
