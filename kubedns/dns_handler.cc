#include "kubedns/dns_handler.h"

#include <glog/logging.h>

#include <algorithm>
#include <utility>

#include "common/dns/builder.h"

namespace kdns::kubedns {
namespace {

bool TcBit(std::span<const uint8_t> message) { return message.size() > 2 && (message[2] & 0x02); }

}  // namespace

DnsHandler::DnsHandler(const server::ThreadContext& context, const Shared& shared,
                       std::shared_ptr<const UpstreamRoutes> routes)
    : shared_(shared),
      buffer_(context.response_buffer),
      reader_(shared.snapshots),
      routes_(routes ? std::move(routes) : std::make_shared<const UpstreamRoutes>()),
      forwarder_(context.loop, shared.forwarder, shared.table) {}

DnsHandler::~DnsHandler() {
  // The Forwarder (destroyed first) drops their callbacks; the Responders drop the queries.
  for (size_t i = 0; i < pending_.size(); ++i) shared_.forward_metrics.Finished();
}

void DnsHandler::SetRoutes(std::shared_ptr<const UpstreamRoutes> routes) {
  if (routes) routes_ = std::move(routes);
}

void DnsHandler::HandleQuery(server::Request& request) {
  const Clock::time_point start = Clock::now();
  AnswerResult result =
      shared_.answerer.Answer(reader_.Get(), request.admission(), request.response_buffer());
  if (result.outcome == Outcome::kNotOurs) {
    Forward(request, result, start);
    return;
  }
  if (result.outcome == Outcome::kExternalTarget) {
    StartChase(request, result, start);
    return;
  }
  if (!result.response.empty()) request.Reply(result.response);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  shared_.dns_metrics.Record(result, result.response.size(), seconds);
}

void DnsHandler::Forward(server::Request& request, const AnswerResult& result,
                         Clock::time_point start) {
  const dns::Query& query = request.admission().query;
  Pending pending;
  pending.client = server::ClientQuery::From(request.admission());
  pending.responder = request.TakeResponder();
  pending.start = start;
  pending.reverse = result.reverse;
  const UpstreamRoute& route = routes_->Lookup(query.qname);
  const uint64_t id = next_id_++;
  pending_.emplace(id, std::move(pending));
  shared_.forward_metrics.Sent(route.kind, ForwardKind::kForward);
  shared_.forward_metrics.Started();
  forwarder_.Resolve(upstream::Request::FromQuery(query, request.admission().transport),
                     route.upstreams,
                     [this, id](const upstream::Result& reply) { OnForwarded(id, reply); });
}

void DnsHandler::StartChase(server::Request& request, const AnswerResult& result,
                            Clock::time_point start) {
  Pending pending;
  pending.partial.emplace();
  if (dns::ParseMessage(result.response, &*pending.partial) != dns::ParseError::kOk) {
    // Our own answer always parses; if it ever did not, the CNAME alone is still true.
    LOG_EVERY_N(ERROR, 1000) << "cannot parse our own answer for "
                             << request.admission().query.qname.ToText();
    request.Reply(result.response);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    shared_.dns_metrics.Record(result, result.response.size(), seconds);
    return;
  }
  pending.client = server::ClientQuery::From(request.admission());
  pending.responder = request.TakeResponder();
  pending.start = start;
  pending.target = result.chase_target;
  const uint64_t id = next_id_++;
  auto it = pending_.emplace(id, std::move(pending)).first;
  shared_.forward_metrics.Started();
  AskChaseTarget(id, it->second);
}

void DnsHandler::AskChaseTarget(uint64_t id, Pending& pending) {
  ++pending.chase_queries;
  upstream::Request request;
  request.qname = pending.target;
  request.qtype = pending.client.query.qtype;
  request.qclass = dns::RrClass::kIn;
  request.dnssec_ok = pending.client.query.edns && pending.client.query.edns->dnssec_ok;
  request.checking_disabled = pending.client.query.header.cd;
  request.client_transport = pending.client.transport;
  const UpstreamRoute& route = routes_->Lookup(pending.target);
  shared_.forward_metrics.Sent(route.kind, ForwardKind::kChase);
  forwarder_.Resolve(request, route.upstreams,
                     [this, id](const upstream::Result& reply) { OnChased(id, reply); });
}

std::optional<DnsHandler::Pending> DnsHandler::Take(uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return std::nullopt;
  std::optional<Pending> pending(std::move(it->second));
  pending_.erase(it);
  return pending;
}

void DnsHandler::OnForwarded(uint64_t id, const upstream::Result& result) {
  std::optional<Pending> pending = Take(id);
  if (!pending) return;
  if (result.outcome != upstream::Outcome::kAnswer) {
    Fail(*pending, FailureOf(result));
    return;
  }
  const server::Fitted fitted = server::FitReply(
      server::ReplyToFit::From(result), pending->client.query, pending->client.limit_bytes,
      server::Truncation::kWholeRRsets, buffer_, &reply_);
  if (fitted.bytes.empty()) {
    Fail(*pending, ForwardFailure::kBadReply);
    return;
  }
  Finish(*pending, fitted.bytes, result.message.rcode(), TcBit(fitted.bytes));
}

void DnsHandler::OnChased(uint64_t id, const upstream::Result& result) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending& pending = it->second;
  if (result.outcome != upstream::Outcome::kAnswer) {
    FailTaken(id, FailureOf(result));
    return;
  }
  dns::Name next;
  const ChaseStep step = AppendChase(result.message, pending.target, pending.client.query.qtype,
                                     &*pending.partial, &next);
  if (step == ChaseStep::kFollow) {
    const auto& answers = pending.partial->answers;
    const bool seen = std::any_of(answers.begin(), answers.end(), [&](const auto& record) {
      return record.owner == next && record.type == dns::RrType::kCname;
    });
    if (!seen && pending.chase_queries < kMaxChaseQueries &&
        CountCnames(*pending.partial) < kMaxCnames &&
        !next.IsSubdomainOf(shared_.answerer.config().zone)) {
      pending.target = next;
      AskChaseTarget(id, pending);
      return;
    }
    // A loop, too long a chain, or a chain back into the cluster domain (which the upstream
    // cannot resolve and we do not follow from outside).
    FailTaken(id, ForwardFailure::kChain);
    return;
  }
  if (step == ChaseStep::kFailed) {
    FailTaken(id, ForwardFailure::kChain);
    return;
  }
  std::optional<Pending> done = Take(id);
  if (dns::BuildMessage(*done->partial, done->client.limit_bytes, &reply_) !=
      dns::BuildError::kOk) {
    Fail(*done, ForwardFailure::kBadReply);
    return;
  }
  Finish(*done, reply_, done->partial->rcode(), TcBit(reply_));
}

void DnsHandler::FailTaken(uint64_t id, ForwardFailure failure) {
  std::optional<Pending> pending = Take(id);
  if (pending) Fail(*pending, failure);
}

void DnsHandler::Fail(Pending& pending, ForwardFailure failure) {
  shared_.forward_metrics.Failed(failure);
  std::span<const uint8_t> response = server::WriteEmptyResponse(
      pending.client.query, dns::Rcode::kServFail, /*aa=*/false, buffer_);
  Finish(pending, response, dns::Rcode::kServFail, false);
}

void DnsHandler::Finish(Pending& pending, std::span<const uint8_t> response, dns::Rcode rcode,
                        bool truncated) {
  pending.responder.Reply(response);
  const double seconds = std::chrono::duration<double>(Clock::now() - pending.start).count();
  shared_.forward_metrics.Answered(seconds);
  shared_.forward_metrics.Finished();
  AnswerResult record;
  record.outcome = pending.partial ? Outcome::kExternalTarget : Outcome::kNotOurs;
  record.rcode = rcode;
  record.qtype = pending.client.query.qtype;
  record.truncated = truncated;
  record.reverse = pending.reverse;
  shared_.dns_metrics.Record(record, response.size(), seconds);
}

}  // namespace kdns::kubedns
