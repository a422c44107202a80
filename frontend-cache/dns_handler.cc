#include "frontend-cache/dns_handler.h"

#include <glog/logging.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "common/dns/loadbalance.h"
#include "common/dns/message.h"
#include "common/dns/notify.h"
#include "common/limits/limits.h"
#include "common/loop/socket_address.h"
#include "common/server/admission.h"
#include "frontend-cache/cached_response.h"

namespace kdns::frontend {

namespace {

FrontendMetrics::Local LocalMetric(LocalAnswer::Reason reason) {
  switch (reason) {
    case LocalAnswer::Reason::kHosts:
      return FrontendMetrics::Local::kHosts;
    case LocalAnswer::Reason::kAddress:
      return FrontendMetrics::Local::kAddress;
    case LocalAnswer::Reason::kFilterAaaa:
      return FrontendMetrics::Local::kFilterAaaa;
    case LocalAnswer::Reason::kDomainNeeded:
      return FrontendMetrics::Local::kDomainNeeded;
    case LocalAnswer::Reason::kBogusPriv:
    case LocalAnswer::Reason::kNone:
      break;
  }
  return FrontendMetrics::Local::kBogusPriv;
}

}  // namespace

const upstream::UpstreamSet& RoutingState::SetFor(const Route& route) const {
  const uint32_t index = table.IndexOf(route);
  return index == RoutingTable::kDefaultRoute ? default_set : domain_sets[index];
}

void HandlerList::Add(DnsHandler* handler) {
  std::lock_guard lock(mu_);
  handlers_.push_back(handler);
}

void HandlerList::Remove(DnsHandler* handler) {
  std::lock_guard lock(mu_);
  std::erase(handlers_, handler);
}

DnsHandler* HandlerList::OnThisThread() const {
  std::lock_guard lock(mu_);
  for (DnsHandler* handler : handlers_) {
    if (handler->thread() == std::this_thread::get_id()) return handler;
  }
  return nullptr;
}

DnsHandler::DnsHandler(const server::ThreadContext& context, const Shared& shared)
    : shared_(shared),
      context_(context),
      thread_(std::this_thread::get_id()),
      routing_(shared.routing),
      receiver_routing_(shared.routing),
      forwarding_(*this,
                  {context.loop, context.response_buffer, shared.forwarder, shared.upstream_table,
                   shared.clock, shared.waiting, &shared.forwarder_totals, &shared.query_log}),
      tasks_(context.loop) {
  shared_.handlers.Add(this);
}

DnsHandler::~DnsHandler() {
  shared_.handlers.Remove(this);
  forwarding_.CancelAll();  // answers every waiting client before the sockets go
}

void DnsHandler::HandleQuery(server::Request& request) {
  using server::AnswerSource;
  const Start start = server::QueryLog::Start(&shared_.query_log);
  const server::Admission& admission = request.admission();
  const dns::Query& query = admission.query;
  const server::Decision& decision = request.decision();
  if (decision.kind == server::Decision::Kind::kForward) {
    // The receiver thread routed it and missed the cache: forward it, unless the routing
    // changed since (then decide again, below).
    const RoutingState* routing = routing_.Get();
    if (routing->generation == decision.generation) {
      return Forward(request, *routing, routing->SetFor(routing->table.RouteAt(decision.route)),
                     start);
    }
  }
  switch (admission.verdict) {
    case server::Verdict::kAdmitted:
      break;
    case server::Verdict::kDrop:
      shared_.metrics.Malformed();  // not a query at all: never answer (no reflection)
      return;
    case server::Verdict::kFormErr:
      shared_.metrics.Malformed();
      shared_.metrics.AnswerTime(AnswerSource::kLocal, start.at);
      (void)request.Reply(server::WriteRefusal(admission, request.response_buffer()));
      return;
    case server::Verdict::kNotImp:
      if (query.header.opcode == dns::Opcode::kNotify) return HandleNotify(request, start);
      [[fallthrough]];
    case server::Verdict::kBadVers:
    case server::Verdict::kRefused: {  // kRefused: not under our policy (ClassScope::kAny)
      const std::span<const uint8_t> refusal =
          server::WriteRefusal(admission, request.response_buffer());
      if (refusal.empty()) return;  // cannot happen for a parsed query; the client retries
      // Counted by the verdict's rcode: BADVERS is an extended rcode, not in the header.
      shared_.metrics.Answered(query.qtype, server::RefusalRcode(admission.verdict));
      shared_.metrics.AnswerTime(AnswerSource::kLocal, start.at);
      shared_.query_log.LogAnswer(request.client(), query, refusal, AnswerSource::kLocal,
                                  request.transport(), start);
      (void)request.Reply(refusal);
      return;
    }
  }
  const RoutingState* routing = routing_.Get();
  const CacheKey key = CacheKey::FromQuery(query);
  const Decided decided =
      Decide(query, key, *routing, request.response_buffer(), admission.reply_limit_bytes);
  switch (decided.kind) {
    case Decided::Kind::kChaos: {
      shared_.metrics.LocalAnswer(FrontendMetrics::Local::kChaos);
      const size_t size = frontend::AnswerChaos(query, ChaosStatsNow(), request.response_buffer(),
                                                admission.reply_limit_bytes);
      if (size == 0) {
        return ReplyEmpty(request, query, dns::Rcode::kServFail, AnswerSource::kLocal, start);
      }
      return Reply(request, query, request.response_buffer().first(size), AnswerSource::kLocal,
                   start);
    }
    case Decided::Kind::kLoopProbe:
      // Our own loop probe came back from its upstream's side: that upstream forwards to us.
      // Never forward such a name; a replayed, expired or foreign one disables nothing.
      shared_.metrics.LocalAnswer(FrontendMetrics::Local::kLoopProbe);
      if (auto upstream = shared_.upstream_table->MatchLoopProbe(query.qname, request.peer())) {
        shared_.upstream_table->Disable(*upstream, "its queries come back to us (a loop)");
      }
      return ReplyEmpty(request, query, dns::Rcode::kRefused, AnswerSource::kLocal, start);
    case Decided::Kind::kLocal: {
      shared_.metrics.LocalAnswer(LocalMetric(decided.local.reason));
      const size_t size = routing->local.Write(decided.local, query, request.response_buffer(),
                                               admission.reply_limit_bytes);
      if (size == 0) {
        return ReplyEmpty(request, query, dns::Rcode::kServFail, AnswerSource::kLocal, start);
      }
      // A name with several addresses in the hosts files (or --address) takes turns, as
      // a cached one does.
      Balance(request.response_buffer().first(size));
      return Reply(request, query, request.response_buffer().first(size), AnswerSource::kLocal,
                   start);
    }
    case Decided::Kind::kNxDomain:
      shared_.metrics.LocalAnswer(FrontendMetrics::Local::kNxDomain);
      return ReplyEmpty(request, query, dns::Rcode::kNxDomain, AnswerSource::kLocal, start,
                        /*aa=*/true);
    case Decided::Kind::kRefused:
      shared_.metrics.LocalAnswer(FrontendMetrics::Local::kRefused);
      return ReplyEmpty(request, query, dns::Rcode::kRefused, AnswerSource::kLocal, start);
    case Decided::Kind::kHit:
      Reply(request, query, request.response_buffer().first(decided.hit.size), AnswerSource::kCache,
            start);
      if (decided.hit.prefetch) {
        Prefetch(query, key, routing->SetFor(*decided.route), routing->generation);
      }
      return;
    case Decided::Kind::kForward:
      return Forward(request, *routing, routing->SetFor(*decided.route), start);
  }
}

DnsHandler::Decided DnsHandler::Decide(const dns::Query& query, const CacheKey& key,
                                       const RoutingState& routing, std::span<uint8_t> out,
                                       size_t limit) {
  Decided decided;
  if (query.qclass == dns::RrClass::kCh) {
    decided.kind = Decided::Kind::kChaos;
    return decided;
  }
  if (upstream::UpstreamTable::IsLoopProbeName(query.qname)) {
    decided.kind = Decided::Kind::kLoopProbe;
    return decided;
  }
  const Route& route = routing.table.Lookup(query.qname);
  decided.route = &route;
  if (!routing.local.empty()) {
    decided.local = routing.local.Lookup(query.qname, query.qtype, route.domain,
                                         &route == &routing.table.default_route());
    if (decided.local.kind != LocalAnswer::Kind::kNone) {
      decided.kind = Decided::Kind::kLocal;
      return decided;
    }
  }
  if (route.action == RouteAction::kNxDomain || route.action == RouteAction::kRefused) {
    decided.kind =
        route.action == RouteAction::kNxDomain ? Decided::Kind::kNxDomain : Decided::Kind::kRefused;
    return decided;
  }
  decided.hit = shared_.cache.Lookup(key, query, out, limit);
  // The copy in `out` is this client's: rotating it leaves the entry as it was received.
  if (decided.hit.status == LookupStatus::kHit) Balance(out.first(decided.hit.size));
  decided.kind =
      decided.hit.status == LookupStatus::kHit ? Decided::Kind::kHit : Decided::Kind::kForward;
  return decided;
}

void DnsHandler::Balance(std::span<uint8_t> answer) const {
  if (shared_.loadbalance == dns::LoadBalance::kRoundRobin) {
    (void)dns::RotateAddressRrsets(answer, dns::NextRoundRobinTurn());
  }
}

void DnsHandler::Forward(server::Request& request, const RoutingState& routing,
                         const upstream::UpstreamSet& upstreams, const Start& start) {
  forwarding_.Forward(request, upstreams, start, ForwardedMiss{routing.generation});
}

void DnsHandler::OnConnectionClosed(uint64_t connection_id) {
  (void)forwarding_.OnConnectionClosed(connection_id);
}

void DnsHandler::OnQueriesOverdue(uint64_t connection_id) {
  forwarding_.OnQueriesOverdue(connection_id);
}

size_t DnsHandler::AnswerOnReceiverThread(const server::Admission& admission,
                                          std::span<const uint8_t> query_bytes,
                                          const loop::SocketAddress& peer, std::span<uint8_t> out,
                                          server::Decision* decision) {
  (void)query_bytes;
  (void)peer;  // the query log names the client (admission.client)
  // Sampled for the query log only once the hit is known: a query left to HandleQuery is
  // sampled there.
  Start start{Start::Clock::now()};
  const dns::Query& query = admission.query;
  const RoutingState* routing = receiver_routing_.Get();
  if (routing == nullptr) return 0;
  const CacheKey key = CacheKey::FromQuery(query);
  const Decided decided =
      Decide(query, key, *routing, out, std::min(admission.reply_limit_bytes, out.size()));
  if (decided.kind == Decided::Kind::kForward) {
    // A miss (counted by the lookup): the loop forwards it on this route, not looking again.
    *decision = server::Decision{server::Decision::Kind::kForward,
                                 routing->table.IndexOf(*decided.route), routing->generation};
    return 0;
  }
  // Everything but a hit is the loop's to answer, count and log: it decides again there.
  if (decided.kind != Decided::Kind::kHit) return 0;
  const LookupResult& hit = decided.hit;
  start.logged = shared_.query_log.Sample();
  const std::span<const uint8_t> answer =
      Served(routing->local, admission.client, dns::Transport::kUdp, query, out.first(hit.size),
             server::AnswerSource::kCache, start);  // sent by the caller
  if (hit.prefetch) {
    // The forwarder lives on the serving thread: refresh the entry from there.
    tasks_.Post([this, again = server::Detach(query)] {
      const RoutingState* state = routing_.Get();
      const Route& route = state->table.Lookup(again.qname);
      if (route.action != RouteAction::kForward) return;  // the routing changed meanwhile
      Prefetch(again, CacheKey::FromQuery(again), state->SetFor(route), state->generation);
    });
  }
  return answer.size();
}

void DnsHandler::Prefetch(const dns::Query& query, const CacheKey& key,
                          const upstream::UpstreamSet& upstreams, uint64_t routing_generation) {
  forwarding_.forwarder().Resolve(
      // Ours, not the client's: a refresh of a name in use has no client share to keep.
      upstream::Request::FromQuery(query, dns::Transport::kUdp, loop::SocketAddress()), upstreams,
      [this, key, routing_generation](const upstream::Result& result) {
        if (result.outcome == upstream::ForwardOutcome::kAnswer && Cacheable(routing_generation)) {
          (void)shared_.cache.Insert(key, Filtered(result.reply));
        }
      });
}

std::span<uint8_t> DnsHandler::FitAnswer(const dns::Query& query, size_t limit, ForwardedMiss& miss,
                                         const upstream::Result& result, std::span<uint8_t> out) {
  const std::span<const uint8_t> reply = Filtered(result.reply);
  if (Cacheable(miss.routing_generation)) {
    (void)shared_.cache.Insert(CacheKey::FromQuery(query), reply);
  }
  // Empty when it matched the question yet is not a whole message: SERVFAIL (kBadReply).
  return out.first(WriteForwardedResponse(reply, query, shared_.cache_policy, &scratch_,
                                          &ttl_offsets_, out, limit));
}

server::FailureAnswer DnsHandler::AnswerInstead(const dns::Query& query, size_t limit,
                                                upstream::ForwardFailure failure,
                                                std::span<uint8_t> out) {
  // A reply that could not be written would not be written from the cache either, and
  // at shutdown there is no time to look.
  if (failure == upstream::ForwardFailure::kBadReply ||
      failure == upstream::ForwardFailure::kShutdown) {
    return {};
  }
  // RFC 8767: an expired answer is better than none (a fresh one, refreshed meanwhile by
  // another query, better still: a cache answer).
  const LookupResult stale =
      shared_.cache.LookupStale(CacheKey::FromQuery(query), query, out, limit);
  if (stale.status == LookupStatus::kMiss) return {};
  return {out.first(stale.size), stale.status == LookupStatus::kHit ? server::AnswerSource::kCache
                                                                    : server::AnswerSource::kStale};
}

void DnsHandler::Sending(const server::SentAnswer& answer, const ForwardedMiss& miss) {
  (void)miss;
  if (answer.source == server::AnswerSource::kFailure) shared_.metrics.ServFail(answer.failure);
  Counted(routing_.Get()->local, answer.query, answer.response, answer.source, answer.start);
}

std::span<const uint8_t> DnsHandler::Filtered(std::span<const uint8_t> reply) {
  if (!shared_.filter_aaaa || !StripAaaa(reply, &filtered_)) return reply;
  return filtered_;
}

bool DnsHandler::Cacheable(uint64_t routing_generation) {
  return routing_.Get()->generation == routing_generation;
}

std::span<const uint8_t> DnsHandler::Served(const LocalAnswers& local,
                                            const loop::SocketAddress& client,
                                            dns::Transport transport, const dns::Query& query,
                                            std::span<uint8_t> response,
                                            server::AnswerSource source, const Start& start) {
  Counted(local, query, response, source, start);
  shared_.query_log.LogAnswer(client, query, response, source, transport, start);
  return response;
}

void DnsHandler::Counted(const LocalAnswers& local, const dns::Query& query,
                         std::span<uint8_t> response, server::AnswerSource source,
                         const Start& start) {
  if (source != server::AnswerSource::kLocal && source != server::AnswerSource::kFailure) {
    local.ClearNxDomainOfKnownName(query.qname, response);
  }
  shared_.metrics.Answered(query.qtype, dns::RcodeOf(response));
  shared_.metrics.AnswerTime(source, start.at);
}

template <class To>
void DnsHandler::Reply(To& to, const dns::Query& query, std::span<uint8_t> response,
                       server::AnswerSource source, const Start& start) {
  (void)to.Reply(
      Served(routing_.Get()->local, to.client(), to.transport(), query, response, source, start));
}

template <class To>
void DnsHandler::ReplyEmpty(To& to, const dns::Query& query, dns::Rcode rcode,
                            server::AnswerSource source, const Start& start, bool aa) {
  const size_t size = server::WriteEmptyResponse(query, rcode, aa, context_.response_buffer).size();
  if (size == 0) return;  // cannot happen for a parsed query; the client retries
  Reply(to, query, context_.response_buffer.first(size), source, start);
}

void DnsHandler::HandleNotify(server::Request& request, const Start& start) {
  const dns::Query& notify = request.admission().query;
  const loop::SocketAddress peer = request.peer();  // never a client-address option's
  const bool trusted = (peer.is_v4() || peer.is_v6()) &&
                       std::any_of(shared_.notify_from.begin(), shared_.notify_from.end(),
                                   [address = loop::IpOf(peer)](const IpPrefix& prefix) {
                                     return prefix.Contains(address);
                                   });
  if (!trusted) {
    // Anyone could otherwise empty our negative cache at will, to load kubedns.
    limits::RecordLimitHit(limits::Limit::kNotifyUntrusted, peer.ToString());
    return ReplyEmpty(request, notify, dns::Rcode::kRefused, server::AnswerSource::kLocal, start);
  }
  if (notify.qtype != dns::RrType::kSoa) {  // RFC 1996 §3.7: the question names the zone
    return ReplyEmpty(request, notify, dns::Rcode::kFormErr, server::AnswerSource::kLocal, start);
  }
  (void)shared_.zone_serials.Notified(notify.qname.Lowercased());
  const size_t size = dns::WriteNotifyReply(notify, request.response_buffer()).size();
  if (size == 0) return;  // cannot happen for a parsed query; the sender does not retry
  Reply(request, notify, request.response_buffer().first(size), server::AnswerSource::kLocal,
        start);
}

void DnsHandler::StartSerialPoll(uint64_t interval_ms) {
  if (interval_ms == 0 || shared_.zone_serials.zones().empty()) return;
  serial_poll_ = std::make_unique<loop::Timer>(context_.loop);
  serial_poll_->StartRepeating(interval_ms, [this] { PollSerials(); });
}

void DnsHandler::PollSerials() {
  const RoutingState* routing = routing_.Get();
  for (const dns::Name& zone : shared_.zone_serials.ZonesToPoll()) {
    const Route& route = routing->table.Lookup(zone);
    if (route.action != RouteAction::kForward) continue;  // nobody to ask
    dns::Query query;
    query.header.rd = true;
    query.qname = zone;
    query.qtype = dns::RrType::kSoa;
    query.qclass = dns::RrClass::kIn;
    // Ours, not a client's (as a prefetch), and never cached: only its serial is wanted.
    forwarding_.forwarder().Resolve(
        upstream::Request::FromQuery(query, dns::Transport::kUdp, loop::SocketAddress()),
        routing->SetFor(route), [this, zone](const upstream::Result& result) {
          if (result.outcome != upstream::ForwardOutcome::kAnswer) return;  // asked again next time
          dns::Message message;
          if (dns::ParseMessage(result.reply, &message, dns::TrailingData::kIgnore) !=
              dns::ParseError::kOk) {
            return;
          }
          if (std::optional<uint32_t> serial = dns::SoaSerialOf(message, zone)) {
            (void)shared_.zone_serials.SerialSeen(zone, *serial);
          }
        });
  }
}

ChaosStats DnsHandler::ChaosStatsNow() const {
  const CacheStats stats = shared_.cache.Stats();
  ChaosStats chaos;
  chaos.cache_size = shared_.cache_size;
  chaos.insertions = stats.insertions;
  chaos.evictions = stats.evictions;
  chaos.misses = stats.misses;
  chaos.hits = stats.hits;
  // dnsmasq lists the servers it is configured with, in order.
  for (const upstream::Upstream& upstream : shared_.routing.Current()->listing_order) {
    UpstreamCounters counters;
    counters.address = upstream;
    const auto& entry = shared_.upstream_table->Get(upstream);
    counters.sent = entry.sent.Value();
    counters.failed = entry.failed.Value();
    chaos.servers.push_back(counters);
  }
  return chaos;
}

}  // namespace kdns::frontend
