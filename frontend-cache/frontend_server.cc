#include "frontend-cache/frontend_server.h"

#include <glog/logging.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <utility>

#include "common/dns/builder.h"
#include "common/dns/parser.h"
#include "common/http/response.h"
#include "common/loop/task_queue.h"
#include "common/metrics/text_parser.h"
#include "common/upstream/resolv_conf.h"
#include "frontend-cache/cached_response.h"
#include "frontend-cache/chaos.h"

namespace kdns::frontend {

namespace {

// Largest UDP answer we send, whatever larger size a client offers: 1232 avoids IP
// fragmentation (DNS flag day 2020), and is what we ask upstreams for.
constexpr size_t kMaxUdpAnswerBytes = 1232;

size_t ClientLimit(const dns::Query& query, server::Transport transport) {
  if (transport == server::Transport::kTcp) return dns::kMaxMessageSize;
  if (!query.edns) return dns::kMaxUdpSizeWithoutEdns;
  return std::clamp<size_t>(query.edns->PayloadSize(), dns::kMaxUdpSizeWithoutEdns,
                            kMaxUdpAnswerBytes);
}

// A response with no records: the question echoed, `rcode`, RA, and an OPT record when the
// client sent one.
std::span<const uint8_t> EmptyResponse(const dns::Query& query, dns::Rcode rcode, bool aa,
                                       std::span<uint8_t> out) {
  dns::MessageBuilder builder(out, dns::kMaxUdpSizeWithoutEdns);
  if (builder.StartResponse(query) != dns::BuildError::kOk) return {};
  builder.header().ra = true;
  builder.header().aa = aa;
  builder.header().rcode = rcode;
  if (query.edns) (void)builder.SetEdns(dns::EdnsView{});
  return builder.Finish();
}

// FORMERR for a query we could not parse: the ID echoed, no question.
std::span<const uint8_t> FormErr(const dns::Header& header, std::span<uint8_t> out) {
  dns::MessageBuilder builder(out, dns::kMaxUdpSizeWithoutEdns);
  builder.header().id = header.id;
  builder.header().qr = true;
  builder.header().opcode = header.opcode;
  builder.header().rd = header.rd;
  builder.header().rcode = dns::Rcode::kFormErr;
  return builder.Finish();
}

upstream::UpstreamSet ToSet(const std::vector<upstream::UpstreamAddress>& upstreams) {
  std::vector<loop::SocketAddress> addresses;
  addresses.reserve(upstreams.size());
  for (const auto& upstream : upstreams) {
    if (auto address =
            loop::SocketAddress::FromHostPort(upstream.address.ToString(), upstream.port)) {
      addresses.push_back(*address);
    }
  }
  return upstream::UpstreamSet(std::move(addresses));
}

// The (non-extended) rcode of a response we built; SERVFAIL for one too short to have it.
dns::Rcode RcodeOf(std::span<const uint8_t> response) {
  return response.size() >= dns::kHeaderSize ? static_cast<dns::Rcode>(response[3] & 0x0f)
                                             : dns::Rcode::kServFail;
}

upstream::Transport ToUpstream(server::Transport transport) {
  return transport == server::Transport::kTcp ? upstream::Transport::kTcp
                                              : upstream::Transport::kUdp;
}

}  // namespace

const upstream::UpstreamSet& RoutingState::SetFor(const Route& route) const {
  const auto routes = table.domain_routes();
  if (!routes.empty() && &route >= routes.data() && &route < routes.data() + routes.size()) {
    return domain_sets[static_cast<size_t>(&route - routes.data())];
  }
  return default_set;
}

// One per DNS thread: answers from the cache, CHAOS and routing at once, and forwards
// misses through the thread's Forwarder, keeping each client's Responder until the answer.
class FrontendServer::Handler final : public server::QueryHandler {
 public:
  Handler(FrontendServer& server, const server::ThreadContext& context)
      : server_(server),
        context_(context),
        thread_(std::this_thread::get_id()),
        routing_(server.routing_),
        receiver_routing_(server.routing_),
        forwarder_(context.loop, server.options_.forwarder, server.upstream_table_, server.clock_),
        tasks_(context.loop) {
    server_.AddHandler(this);
  }

  ~Handler() override {
    server_.RemoveHandler(this);
    forwarder_.CancelAll();  // answers every waiting client SERVFAIL before the sockets go
  }

  void HandleQuery(server::Request& request) override;
  // Cache hits of plain queries; everything else is left to HandleQuery.
  size_t AnswerOnReceiverThread(std::span<const uint8_t> query_bytes,
                                const loop::SocketAddress& peer, std::span<uint8_t> out) override;

  upstream::Forwarder& forwarder() { return forwarder_; }
  // The serving thread (handlers are made on it).
  std::thread::id thread() const { return thread_; }

 private:
  struct Pending {
    server::Responder responder;
    std::vector<uint8_t> query;  // the client's bytes, parsed again for the answer
    CacheKey key;
  };

  // `to` is the Request (answered now, the common case: no Responder is moved) or a kept
  // Responder (answered later).
  template <class To>
  void Reply(To& to, const dns::Query& query, std::span<const uint8_t> response);
  template <class To>
  void ReplyEmpty(To& to, const dns::Query& query, dns::Rcode rcode, bool aa = false);
  void Prefetch(const dns::Query& query, const CacheKey& key,
                const upstream::UpstreamSet& upstreams);
  void Complete(uint64_t id, const upstream::Result& result);

  FrontendServer& server_;
  const server::ThreadContext& context_;
  const std::thread::id thread_;
  SnapshotHolder<RoutingState>::Reader routing_;
  // The receiver thread's own reader (a Reader is not shared between threads).
  SnapshotHolder<RoutingState>::Reader receiver_routing_;
  std::unordered_map<uint64_t, Pending> pending_;
  uint64_t next_id_ = 1;
  std::vector<uint8_t> scratch_;
  std::vector<uint16_t> ttl_offsets_;
  // Destroyed before everything but tasks_, so no callback can reach pending_ once it is
  // gone.
  upstream::Forwarder forwarder_;
  // Prefetches asked for on the receiver thread run here. Last: destroyed first, dropping
  // any task not run yet.
  loop::TaskQueue tasks_;
};

void FrontendServer::Handler::HandleQuery(server::Request& request) {
  dns::Query query;
  const dns::ParseError error = dns::ParseQuery(request.query(), &query);
  if (request.query().size() < dns::kHeaderSize || query.header.qr) {
    server_.metrics_.Malformed();  // not a query at all: never answer (no reflection)
    return;
  }
  if (error != dns::ParseError::kOk) {
    server_.metrics_.Malformed();
    (void)request.Reply(FormErr(query.header, request.response_buffer()));
    return;
  }
  if (query.edns && query.edns->version != 0) {
    return ReplyEmpty(request, query, dns::Rcode::kBadVers);  // RFC 6891 §6.1.3
  }
  if (query.header.opcode != dns::Opcode::kQuery) {
    return ReplyEmpty(request, query, dns::Rcode::kNotImp);
  }
  if (query.qclass == dns::RrClass::kCh) {
    server_.metrics_.LocalAnswer(FrontendMetrics::Local::kChaos);
    const size_t limit = ClientLimit(query, request.transport());
    const size_t size =
        frontend::AnswerChaos(query, server_.ChaosStatsNow(), request.response_buffer(), limit);
    if (size == 0) return ReplyEmpty(request, query, dns::Rcode::kServFail);
    return Reply(request, query, request.response_buffer().first(size));
  }
  if (upstream::UpstreamTable::IsLoopProbeName(query.qname)) {
    // Our own loop probe came back: that upstream forwards to us. Never forward it again.
    server_.metrics_.LocalAnswer(FrontendMetrics::Local::kLoopProbe);
    if (auto upstream = server_.upstream_table_->MatchLoopProbe(query.qname)) {
      server_.upstream_table_->Disable(*upstream, "its queries come back to us (a loop)");
    }
    return ReplyEmpty(request, query, dns::Rcode::kRefused);
  }
  const RoutingState* routing = routing_.Get();
  const Route& route = routing->table.Lookup(query.qname);
  if (route.action == RouteAction::kNxDomain) {
    server_.metrics_.LocalAnswer(FrontendMetrics::Local::kNxDomain);
    return ReplyEmpty(request, query, dns::Rcode::kNxDomain, /*aa=*/true);
  }
  if (route.action == RouteAction::kRefused) {
    server_.metrics_.LocalAnswer(FrontendMetrics::Local::kRefused);
    return ReplyEmpty(request, query, dns::Rcode::kRefused);
  }
  const upstream::UpstreamSet& upstreams = routing->SetFor(route);
  const CacheKey key = CacheKey::FromQuery(query);
  const size_t limit = ClientLimit(query, request.transport());
  const LookupResult hit = server_.cache_.Lookup(key, query, request.response_buffer(), limit);
  if (hit.status == LookupStatus::kHit) {
    Reply(request, query, request.response_buffer().first(hit.size));
    if (hit.prefetch) Prefetch(query, key, upstreams);
    return;
  }
  // A miss: the right to answer is kept until the upstream's answer.
  uint64_t id = next_id_++;
  pending_.emplace(
      id, Pending{request.TakeResponder(),
                  std::vector<uint8_t>(request.query().begin(), request.query().end()), key});
  forwarder_.Resolve(upstream::Request::FromQuery(query, ToUpstream(request.transport())),
                     upstreams,
                     [this, id](const upstream::Result& result) { Complete(id, result); });
}

size_t FrontendServer::Handler::AnswerOnReceiverThread(std::span<const uint8_t> query_bytes,
                                                       const loop::SocketAddress& peer,
                                                       std::span<uint8_t> out) {
  (void)peer;
  dns::Query query;
  if (dns::ParseQuery(query_bytes, &query) != dns::ParseError::kOk || query.header.qr ||
      query.header.opcode != dns::Opcode::kQuery || query.qclass == dns::RrClass::kCh ||
      (query.edns && query.edns->version != 0) ||
      upstream::UpstreamTable::IsLoopProbeName(query.qname)) {
    return 0;
  }
  const RoutingState* routing = receiver_routing_.Get();
  if (routing == nullptr || routing->table.Lookup(query.qname).action != RouteAction::kForward) {
    return 0;
  }
  const CacheKey key = CacheKey::FromQuery(query);
  const size_t limit = std::min(ClientLimit(query, server::Transport::kUdp), out.size());
  const LookupResult hit = server_.cache_.Peek(key, query, out, limit);
  if (hit.status != LookupStatus::kHit) return 0;  // HandleQuery looks again and counts it
  server_.metrics_.Answered(query.qtype, RcodeOf(out.first(hit.size)));
  if (hit.prefetch) {
    // The forwarder lives on the serving thread: refresh the entry from there.
    tasks_.Post([this, bytes = std::vector<uint8_t>(query_bytes.begin(), query_bytes.end())] {
      dns::Query again;
      if (dns::ParseQuery(bytes, &again) != dns::ParseError::kOk) return;
      const RoutingState* state = routing_.Get();
      const Route& route = state->table.Lookup(again.qname);
      if (route.action != RouteAction::kForward) return;  // the routing changed meanwhile
      Prefetch(again, CacheKey::FromQuery(again), state->SetFor(route));
    });
  }
  return hit.size;
}

void FrontendServer::Handler::Prefetch(const dns::Query& query, const CacheKey& key,
                                       const upstream::UpstreamSet& upstreams) {
  forwarder_.Resolve(upstream::Request::FromQuery(query, upstream::Transport::kUdp), upstreams,
                     [this, key](const upstream::Result& result) {
                       if (result.outcome == upstream::Outcome::kAnswer) {
                         (void)server_.cache_.Insert(key, result.reply);
                       }
                     });
}

void FrontendServer::Handler::Complete(uint64_t id, const upstream::Result& result) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending pending = std::move(it->second);
  pending_.erase(it);
  dns::Query query;
  if (dns::ParseQuery(pending.query, &query) != dns::ParseError::kOk) return;  // cannot be
  const std::span<uint8_t> out = context_.response_buffer;
  const size_t limit = ClientLimit(query, pending.responder.transport());
  if (result.outcome == upstream::Outcome::kAnswer) {
    (void)server_.cache_.Insert(pending.key, result.reply);
    const size_t size = WriteForwardedResponse(result.reply, query, server_.cache_policy_,
                                               &scratch_, &ttl_offsets_, out, limit);
    if (size > 0) return Reply(pending.responder, query, out.first(size));
    server_.metrics_.BadReply();  // matched the question, yet not a whole message
    return ReplyEmpty(pending.responder, query, dns::Rcode::kServFail);
  }
  if (result.outcome == upstream::Outcome::kServFail &&
      result.reason != upstream::FailReason::kShutdown) {
    // RFC 8767: every upstream failed; an expired answer is better than none.
    const LookupResult stale = server_.cache_.LookupStale(pending.key, query, out, limit);
    if (stale.status == LookupStatus::kStale) {
      return Reply(pending.responder, query, out.first(stale.size));
    }
  }
  server_.metrics_.ServFail(result.outcome, result.reason);
  ReplyEmpty(pending.responder, query, dns::Rcode::kServFail);
}

template <class To>
void FrontendServer::Handler::Reply(To& to, const dns::Query& query,
                                    std::span<const uint8_t> response) {
  server_.metrics_.Answered(query.qtype, RcodeOf(response));
  (void)to.Reply(response);
}

template <class To>
void FrontendServer::Handler::ReplyEmpty(To& to, const dns::Query& query, dns::Rcode rcode,
                                         bool aa) {
  std::span<const uint8_t> response = EmptyResponse(query, rcode, aa, context_.response_buffer);
  if (response.empty()) return;  // cannot happen for a parsed query; the client retries
  server_.metrics_.Answered(query.qtype, rcode);
  (void)to.Reply(response);
}

FrontendServer::FrontendServer(Options options, const Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      metrics_(registry_),
      cache_(ToCacheOptions(options_.flags), clock),
      cache_policy_(ToCacheOptions(options_.flags).policy),
      upstream_table_(std::make_shared<upstream::UpstreamTable>()) {
  options_.forwarder.forward_cap =
      std::make_shared<upstream::ForwardCap>(options_.flags.dns_forward_max);
  RegisterMetrics();
}

FrontendServer::~FrontendServer() { Stop(); }

bool FrontendServer::BuildRouting(RoutingState* state, std::string* error) const {
  const Options& o = options_;
  std::vector<ServerOption> servers = o.flags.servers;
  if (!o.flags.servers_file.empty()) {
    std::ifstream file(o.flags.servers_file);
    if (!file) {
      *error = "--servers-file " + o.flags.servers_file + ": cannot read it";
      return false;
    }
    std::stringstream text;
    text << file.rdbuf();
    if (!ParseServersFile(text.str(), &servers, error)) {
      *error = "--servers-file " + o.flags.servers_file + ": " + *error;
      return false;
    }
  }
  std::vector<upstream::UpstreamAddress> resolv;
  if (!o.flags.no_resolv) {
    upstream::ResolvConf conf;
    std::string resolv_error;
    if (upstream::LoadResolvConf(o.flags.resolv_file, &conf, &resolv_error)) {
      for (const auto& line : conf.skipped_lines) {
        LOG(WARNING) << o.flags.resolv_file << ": skipped \"" << line << "\"";
      }
      resolv = std::move(conf.nameservers);
    } else {
      // dnsmasq carries on without the file (it may appear later); so do we, loudly.
      LOG(WARNING) << resolv_error;
    }
  }
  state->table = RoutingTable::Build(servers, resolv);
  state->listing_order.clear();
  auto list = [&](const upstream::UpstreamAddress& address) {
    if (std::find(state->listing_order.begin(), state->listing_order.end(), address) ==
        state->listing_order.end()) {
      state->listing_order.push_back(address);
    }
  };
  for (const ServerOption& server : servers) {
    if (server.target == ServerOption::Target::kUpstream) list(server.upstream);
  }
  for (const upstream::UpstreamAddress& address : state->table.AllUpstreams()) list(address);
  if (o.inherited.empty()) {
    std::vector<IpAddress> listen = o.flags.listen_addresses;
    if (!CheckNoSelfLoop(state->table, listen, o.flags.port, o.local_addresses, error)) {
      return false;
    }
  }
  state->domain_sets.clear();
  for (const Route& route : state->table.domain_routes()) {
    state->domain_sets.push_back(ToSet(route.upstreams));
  }
  state->default_set = ToSet(state->table.default_route().upstreams);
  return true;
}

bool FrontendServer::Start(std::string* error) {
  auto state = std::make_shared<RoutingState>();
  if (!BuildRouting(state.get(), error)) return false;
  state->generation = ++routing_generation_;
  routing_.Publish(std::move(state));

  server::HandlerFactory factory = [this](const server::ThreadContext& context) {
    return std::make_unique<Handler>(*this, context);
  };
  // A burst waits in the socket, not on the floor, while a thread is off the CPU (the
  // kernel caps this at net.core.rmem_max).
  constexpr int kReceiveBufferBytes = 4 << 20;
  std::vector<server::DnsServer::Options> configs;
  if (!options_.inherited.empty()) {
    for (const auto& sockets : options_.inherited) {
      server::DnsServer::Options config;
      config.threads = options_.flags.threads;
      config.udp.receive_buffer_bytes = kReceiveBufferBytes;
      // The receivers of an inherited socket wait in poll, not in recvmmsg, so a kill -9
      // leaves the queue to the socket's next owner (loop::UdpSocket::ReceiveOnThread).
      config.udp.receiver_thread = options_.flags.receiver_threads != ReceiverThreads::kOff;
      config.inherited = sockets;
      configs.push_back(config);
    }
  } else {
    std::vector<IpAddress> listen = options_.flags.listen_addresses;
    if (listen.empty()) listen.push_back(*IpAddress::Parse("0.0.0.0"));
    for (const auto& ip : listen) {
      server::DnsServer::Options config;
      config.threads = options_.flags.threads;
      config.udp.receive_buffer_bytes = kReceiveBufferBytes;
      config.udp.receiver_thread = options_.flags.receiver_threads != ReceiverThreads::kOff;
      // One socket for all threads, so their receivers take turns (see DnsServer).
      config.shared_sockets = config.udp.receiver_thread;
      config.listen_address =
          *loop::SocketAddress::FromHostPort(ip.ToString(), options_.flags.port);
      configs.push_back(config);
    }
  }
  for (const auto& config : configs) {
    auto server = std::make_unique<server::DnsServer>(config, factory);
    if (!server->Start(error)) {
      Stop();
      return false;
    }
    servers_.push_back(std::move(server));
  }

  if (options_.flags.prometheus_port != 0) {
    http::Server::Options http_options;
    http_options.bind_address = *loop::SocketAddress::FromHostPort(
        options_.flags.prometheus_address.ToString(), options_.flags.prometheus_port);
    metrics_http_ = std::make_unique<http::ServerThread>(http_options);
    metrics_http_->Handle("/metrics", [this](const http::Request&) {
      http::Response response = http::Response::Text(200, RenderMetrics());
      response.content_type = "text/plain; version=0.0.4; charset=utf-8";
      return response;
    });
    metrics_http_->Handle("/healthz",
                          [](const http::Request&) { return http::Response::Text(200, "ok"); });
    if (!metrics_http_->Start(error)) {
      *error =
          "--prometheus-port " + std::to_string(options_.flags.prometheus_port) + ": " + *error;
      Stop();
      return false;
    }
  }
  if (options_.flags.dns_loop_detect) ProbeForLoops();
  return true;
}

bool FrontendServer::Reload(std::string* error) {
  auto state = std::make_shared<RoutingState>();
  if (!BuildRouting(state.get(), error)) {
    metrics_reload_rejected_->Inc();
    return false;
  }
  std::shared_ptr<const RoutingState> before = routing_.Current();
  const RoutingChange change = DiffRoutes(before->table, state->table);
  state->generation = ++routing_generation_;
  const uint64_t generation = state->generation;
  routing_.Publish(std::move(state));
  // After the swap, so no query routed the old way can refill what is flushed (except one
  // already in flight, whose answer is at most one TTL late).
  size_t flushed = 0;
  if (change.flush_all) {
    flushed = cache_.Flush();
  } else {
    for (const dns::Name& domain : change.domains) flushed += cache_.FlushDomain(domain);
  }
  metrics_reloads_->Inc();
  LOG(INFO) << "configuration " << generation << " applied: "
            << (change.flush_all ? std::string("default route changed, whole cache")
                                 : std::to_string(change.domains.size()) + " domain(s) changed")
            << ", " << flushed << " cache entries dropped";
  if (options_.flags.dns_loop_detect) {
    upstream_table_->ClearLoopDisabled();
    ProbeForLoops();
  }
  return true;
}

void FrontendServer::ProbeForLoops() {
  if (servers_.empty()) return;
  std::shared_ptr<const RoutingState> state = routing_.Current();
  std::vector<loop::SocketAddress> upstreams;
  auto add = [&](const upstream::UpstreamSet& set) {
    for (const auto& address : set.addresses()) {
      if (std::find(upstreams.begin(), upstreams.end(), address) == upstreams.end()) {
        upstreams.push_back(address);
      }
    }
  };
  add(state->default_set);
  for (const auto& set : state->domain_sets) add(set);
  // From the first thread's Forwarder: the answer (or our own query coming back) arrives
  // on whichever thread the kernel picks, and the shared table sees it there.
  (void)servers_.front()->Post(0, [this, upstreams] {
    Handler* here = nullptr;
    {
      std::lock_guard lock(handlers_mu_);
      for (Handler* handler : handlers_) {
        if (handler->thread() == std::this_thread::get_id()) here = handler;
      }
    }
    if (here == nullptr) return;  // shutting down
    for (const auto& address : upstreams) {
      dns::Name probe = here->forwarder().ProbeForLoop(address);
      VLOG(1) << "loop probe " << probe.ToText() << " sent to "
              << upstream::FormatUpstreamAddress(address);
    }
  });
}

void FrontendServer::Stop() {
  if (metrics_http_) metrics_http_->Stop();
  for (auto& server : servers_) server->Stop();
  servers_.clear();
}

server::ServerStats FrontendServer::server_stats() const {
  server::ServerStats total;
  for (const auto& server : servers_) total += server->stats();
  return total;
}

std::vector<loop::SocketAddress> FrontendServer::addresses() const {
  std::vector<loop::SocketAddress> out;
  for (const auto& server : servers_) out.push_back(server->local_address());
  return out;
}

const loop::SocketAddress& FrontendServer::metrics_address() const {
  static const loop::SocketAddress kNone;
  return metrics_http_ ? metrics_http_->local_address() : kNone;
}

void FrontendServer::AddHandler(Handler* handler) {
  std::lock_guard lock(handlers_mu_);
  handlers_.push_back(handler);
}

void FrontendServer::RemoveHandler(Handler* handler) {
  std::lock_guard lock(handlers_mu_);
  const upstream::ForwarderCounters& c = handler->forwarder().counters();
  retired_totals_.requests += c.requests.load();
  retired_totals_.coalesced += c.coalesced.load();
  retired_totals_.overloaded += c.overloaded.load();
  retired_totals_.tries += c.tries.load();
  retired_totals_.timeouts += c.timeouts.load();
  retired_totals_.failovers += c.failovers.load();
  retired_totals_.mismatched += c.mismatched.load();
  retired_totals_.malformed += c.malformed.load();
  retired_totals_.tcp_retries += c.tcp_retries.load();
  std::erase(handlers_, handler);
}

FrontendServer::ForwardTotals FrontendServer::forward_totals() const {
  std::lock_guard lock(handlers_mu_);
  ForwardTotals totals = retired_totals_;
  totals.in_flight = 0;
  for (Handler* handler : handlers_) {
    const upstream::ForwarderCounters& c = handler->forwarder().counters();
    totals.requests += c.requests.load(std::memory_order_relaxed);
    totals.coalesced += c.coalesced.load(std::memory_order_relaxed);
    totals.overloaded += c.overloaded.load(std::memory_order_relaxed);
    totals.tries += c.tries.load(std::memory_order_relaxed);
    totals.timeouts += c.timeouts.load(std::memory_order_relaxed);
    totals.failovers += c.failovers.load(std::memory_order_relaxed);
    totals.mismatched += c.mismatched.load(std::memory_order_relaxed);
    totals.malformed += c.malformed.load(std::memory_order_relaxed);
    totals.tcp_retries += c.tcp_retries.load(std::memory_order_relaxed);
    totals.in_flight += c.in_flight.load(std::memory_order_relaxed);
  }
  return totals;
}

ChaosStats FrontendServer::ChaosStatsNow() const {
  const CacheStats stats = cache_.Stats();
  ChaosStats chaos;
  chaos.cache_size = options_.flags.cache_size;
  chaos.insertions = stats.insertions;
  chaos.evictions = stats.evictions;
  chaos.misses = stats.misses;
  chaos.hits = stats.hits;
  // dnsmasq lists the servers it is configured with, in order.
  for (const upstream::UpstreamAddress& address : routing_.Current()->listing_order) {
    UpstreamCounters counters;
    counters.address = address;
    if (auto socket = loop::SocketAddress::FromHostPort(address.address.ToString(), address.port)) {
      const auto& entry = upstream_table_->Get(*socket);
      counters.sent = entry.sent.Value();
      counters.failed = entry.failed.Value();
    }
    chaos.servers.push_back(counters);
  }
  return chaos;
}

std::string FrontendServer::RenderMetrics() const {
  std::string text = registry_.Render();
  const std::string& path = options_.flags.metrics_textfile;
  if (path.empty()) return text;
  // Bounded, and only appended whole when it parses: a half-written or broken file must
  // not break the scrape of everything else.
  constexpr size_t kMaxTextfileBytes = 256 * 1024;
  std::ifstream file(path);
  if (!file) return text;  // not written yet
  std::string extra(kMaxTextfileBytes + 1, '\0');
  file.read(extra.data(), static_cast<std::streamsize>(extra.size()));
  extra.resize(static_cast<size_t>(file.gcount()));
  std::string error;
  if (extra.size() > kMaxTextfileBytes) {
    LOG_EVERY_N(WARNING, 100) << "--metrics-textfile " << path << ": over " << kMaxTextfileBytes
                              << " bytes, not exported";
  } else if (!metrics::ParseText(extra, &error)) {
    LOG_EVERY_N(WARNING, 100) << "--metrics-textfile " << path << ": not exported: " << error;
  } else {
    if (!extra.empty() && extra.back() != '\n') extra += '\n';
    text += extra;
  }
  return text;
}

std::string FrontendServer::StatsText() const {
  const CacheStats stats = cache_.Stats();
  std::ostringstream out;
  out << "cache size " << options_.flags.cache_size << ", " << stats.size << " entries, "
      << stats.evictions << "/" << stats.insertions
      << " cache insertions re-used unexpired cache entries; queries forwarded " << stats.misses
      << ", queries answered locally " << stats.hits << ", stale answers " << stats.stale_hits
      << ", prefetches " << stats.prefetches;
  for (const auto* entry : upstream_table_->Entries()) {
    out << "\nserver " << upstream::FormatUpstreamAddress(entry->address) << ": queries sent "
        << entry->sent.Value() << ", retried or failed " << entry->failed.Value() << ", timeouts "
        << entry->timeouts.Value() << (entry->loop_disabled.load() ? ", disabled: loop" : "");
  }
  return out.str();
}

void FrontendServer::RegisterMetrics() {
  auto cache_stat = [this](uint64_t CacheStats::*field) {
    return [this, field] { return static_cast<double>(cache_.Stats().*field); };
  };
  registry_.AddCallbackCounter("kdns_frontend_cache_hits_total",
                               "Answers served fresh from the cache.",
                               cache_stat(&CacheStats::hits));
  registry_.AddCallbackCounter("kdns_frontend_cache_misses_total",
                               "Cache lookups that found nothing fresh (forwarded).",
                               cache_stat(&CacheStats::misses));
  registry_.AddCallbackCounter("kdns_frontend_cache_stale_answers_total",
                               "Expired answers served because every upstream failed (RFC 8767).",
                               cache_stat(&CacheStats::stale_hits));
  registry_.AddCallbackCounter("kdns_frontend_cache_insertions_total", "Entries cached.",
                               cache_stat(&CacheStats::insertions));
  registry_.AddCallbackCounter("kdns_frontend_cache_evictions_total",
                               "Entries removed before their expiry to make room.",
                               cache_stat(&CacheStats::evictions));
  registry_.AddCallbackCounter("kdns_frontend_cache_prefetches_total",
                               "Popular entries refreshed shortly before they expire.",
                               cache_stat(&CacheStats::prefetches));
  registry_.AddCallbackGauge("kdns_frontend_cache_entries",
                             "Entries held (fresh, or expired and kept to serve stale).",
                             cache_stat(&CacheStats::size));
  registry_.AddCallbackGauge("kdns_frontend_cache_capacity_entries", "--cache-size.",
                             cache_stat(&CacheStats::capacity));

  auto forward = [this](uint64_t ForwardTotals::*field) {
    return [this, field] { return static_cast<double>(forward_totals().*field); };
  };
  registry_.AddCallbackCounter("kdns_frontend_forward_requests_total",
                               "Queries handed to the forwarder (cache misses and prefetches).",
                               forward(&ForwardTotals::requests));
  registry_.AddCallbackCounter("kdns_frontend_forward_coalesced_total",
                               "Queries that joined an identical upstream query in flight.",
                               forward(&ForwardTotals::coalesced));
  registry_.AddCallbackCounter(
      "kdns_frontend_forward_rejected_total",
      "Queries answered SERVFAIL at once because --dns-forward-max queries were in flight.",
      forward(&ForwardTotals::overloaded));
  registry_.AddCallbackCounter("kdns_frontend_forward_failovers_total",
                               "Tries sent to another upstream after a failure.",
                               forward(&ForwardTotals::failovers));
  registry_.AddCallbackCounter("kdns_frontend_forward_tcp_retries_total",
                               "Truncated UDP answers retried over TCP.",
                               forward(&ForwardTotals::tcp_retries));
  registry_.AddCallbackCounter(
      "kdns_frontend_forward_bad_replies_total",
      "Upstream replies dropped: wrong ID, question, source, or not parseable.", [this] {
        ForwardTotals totals = forward_totals();
        return static_cast<double>(totals.mismatched + totals.malformed);
      });
  registry_.AddCallbackGauge("kdns_frontend_forward_in_flight",
                             "Distinct upstream queries under way.",
                             forward(&ForwardTotals::in_flight));

  // Per upstream, from the table every thread's Forwarder shares.
  struct UpstreamCollector final : metrics::Collector {
    explicit UpstreamCollector(const upstream::UpstreamTable& t, int w) : table(t), which(w) {}
    void Collect(std::vector<metrics::Sample>& out) const override {
      for (const auto* entry : table.Entries()) {
        const metrics::Counter& counter = which == 0   ? entry->sent
                                          : which == 1 ? entry->failed
                                          : which == 2 ? entry->timeouts
                                                       : entry->answers;
        out.push_back({{upstream::FormatUpstreamAddress(entry->address)},
                       static_cast<double>(counter.Value())});
      }
    }
    const upstream::UpstreamTable& table;
    const int which;
  };
  const char* names[] = {
      "kdns_frontend_upstream_queries_total", "kdns_frontend_upstream_failures_total",
      "kdns_frontend_upstream_timeouts_total", "kdns_frontend_upstream_answers_total"};
  const char* helps[] = {
      "Queries sent to each upstream (every try, UDP or TCP).",
      "Tries to each upstream without a usable reply (timeouts, network errors, SERVFAIL, "
      "REFUSED, NOTIMP, FORMERR).",
      "Tries to each upstream that timed out.",
      "Replies from each upstream handed to clients.",
  };
  for (int i = 0; i < 4; ++i) {
    registry_.AddCollector(names[i], helps[i], metrics::MetricType::kCounter, {"upstream"},
                           std::make_shared<UpstreamCollector>(*upstream_table_, i));
  }
  registry_.AddHistogramCollector(
      "kdns_frontend_upstream_rtt_seconds", "Round-trip time of each upstream's replies.",
      {"upstream"}, [this](const metrics::Registry::HistogramVisitor& visit) {
        for (const auto* entry : upstream_table_->Entries()) {
          visit({upstream::FormatUpstreamAddress(entry->address)}, entry->rtt_seconds);
        }
      });
  registry_.AddCallbackGauge("kdns_frontend_upstreams_loop_disabled",
                             "Upstreams disabled because our queries came back to us.", [this] {
                               double count = 0;
                               for (const auto* entry : upstream_table_->Entries()) {
                                 count += entry->loop_disabled.load() ? 1 : 0;
                               }
                               return count;
                             });
  registry_.AddCallbackGauge(
      "kdns_frontend_config_generation",
      "Routing configurations applied: 1 at start, +1 for each accepted reload.", [this] {
        auto current = routing_.Current();
        return current ? static_cast<double>(current->generation) : 0.0;
      });
  metrics_reloads_ =
      &registry_.AddCounter("kdns_frontend_config_reloads_total", "Reloads (SIGHUP) applied.");
  metrics_reload_rejected_ =
      &registry_.AddCounter("kdns_frontend_config_reload_rejected_total",
                            "Reloads (SIGHUP) rejected; the previous configuration kept.");
}

}  // namespace kdns::frontend
