#include "common/upstream/forwarder.h"

#include <glog/logging.h>
#include <uv.h>

#include <algorithm>
#include <string>
#include <utility>

#include "common/dns/header.h"

namespace kdns::upstream {

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kAnswer:
      return "answer";
    case Outcome::kServFail:
      return "servfail";
    case Outcome::kOverloaded:
      return "overloaded";
  }
  return "?";
}

const char* FailReasonName(FailReason reason) {
  switch (reason) {
    case FailReason::kNone:
      return "none";
    case FailReason::kTimeout:
      return "timeout";
    case FailReason::kUpstreamError:
      return "upstream error";
    case FailReason::kNetworkError:
      return "network error";
    case FailReason::kNoUpstreams:
      return "no upstreams";
    case FailReason::kShutdown:
      return "shutdown";
  }
  return "?";
}

// What this Forwarder knows about one upstream server.
struct Forwarder::Server {
  Server(const loop::SocketAddress& a, const UpstreamHealth::Options& o, UpstreamTable::Entry& e)
      : address(a), health(o), entry(e) {}
  loop::SocketAddress address;
  UpstreamHealth health;
  UpstreamTable::Entry& entry;
  bool probing = false;  // a health probe is outstanding
};

// One query sent to one server.
struct Forwarder::Attempt {
  Job* job = nullptr;
  Server* server = nullptr;
  size_t candidate = 0;
  Transport transport = Transport::kUdp;
  EdnsMode edns = EdnsMode::kWithEdns;
  uint16_t id = 0;
  uint64_t sent_ms = 0;
  bool closed = false;  // answered, failed or superseded: ignore what still arrives
  std::unique_ptr<UdpClient> udp;
  TcpSlot* tcp = nullptr;  // registered there under `id` while open
};

// One upstream query under way, with everyone waiting for it.
struct Forwarder::Job {
  explicit Job(loop::Loop& loop) : try_timer(loop), deadline_timer(loop) {}
  JobKind kind = JobKind::kClient;
  std::optional<Key> key;  // set for coalescable (client) jobs
  Request request;
  std::vector<Server*> candidates;
  std::vector<uint32_t> tries;  // per candidate
  std::vector<bool> done;       // per candidate: replied with an error, or refused us
  std::vector<bool> no_edns;    // per candidate: FORMERR to EDNS seen
  size_t next_candidate = 0;
  bool force_tcp = false;
  bool tcp_reconnected = false;  // one retry after a reused connection closed under us
  std::vector<std::unique_ptr<Attempt>> attempts;
  Attempt* current = nullptr;
  std::vector<Callback> waiters;
  uint64_t deadline_ms = 0;  // loop time
  uint32_t sent = 0;
  bool any_timeout = false;
  bool finished = false;
  // The last error reply (SERVFAIL, REFUSED...), reported if nothing better comes.
  std::vector<uint8_t> error_reply;
  dns::Message error_message;
  Attempt* error_attempt = nullptr;
  loop::Timer try_timer;
  loop::Timer deadline_timer;
};

// The reused TCP connection to one server, and the tries waiting on it by ID.
struct Forwarder::TcpSlot {
  std::unique_ptr<TcpClient> client;
  std::unordered_map<uint16_t, Attempt*> waiting;
};

size_t Forwarder::KeyHash::operator()(const Key& key) const {
  size_t hash = key.qname.Hash();
  hash = hash * 31 + static_cast<size_t>(key.qtype);
  hash = hash * 31 + static_cast<size_t>(key.qclass);
  hash = hash * 4 + (key.dnssec_ok ? 2 : 0) + (key.checking_disabled ? 1 : 0);
  return hash ^ key.upstreams.Hash();
}

Forwarder::Forwarder(loop::Loop& loop, const Options& options, std::shared_ptr<UpstreamTable> table,
                     const Clock& clock)
    : loop_(loop),
      options_(options),
      table_(table ? std::move(table) : std::make_shared<UpstreamTable>()),
      forward_cap_(options.forward_cap ? options.forward_cap : std::make_shared<ForwardCap>()),
      clock_(clock),
      receive_buffer_(65536),
      post_timer_(loop),
      probe_timer_(loop) {}

Forwarder::~Forwarder() {
  // Unregister TCP waiters before the jobs go, then drop everything without callbacks.
  for (auto& [job, owned] : jobs_) {
    for (auto& attempt : owned->attempts) attempt->tcp = nullptr;
  }
  jobs_.clear();
  graveyard_.clear();
  tcp_.clear();
  closed_tcp_.clear();
}

const UpstreamHealth* Forwarder::health(const loop::SocketAddress& upstream) const {
  auto it = servers_.find(upstream);
  return it == servers_.end() ? nullptr : &it->second->health;
}

Forwarder::Server& Forwarder::GetServer(const loop::SocketAddress& address) {
  auto it = servers_.find(address);
  if (it != servers_.end()) return *it->second;
  UpstreamHealth::Options health_options;
  health_options.min_try_timeout_ms = options_.min_try_timeout_ms;
  health_options.max_try_timeout_ms = options_.max_try_timeout_ms;
  health_options.failure_threshold = options_.failure_threshold;
  auto server = std::make_unique<Server>(address, health_options, table_->Get(address));
  Server& ref = *server;
  servers_.emplace(address, std::move(server));
  return ref;
}

void Forwarder::Resolve(const Request& request, const UpstreamSet& upstreams, Callback callback) {
  ++resolve_depth_;
  counters_.requests.fetch_add(1, std::memory_order_relaxed);
  Key key{
      request.qname, request.qtype, request.qclass, request.dnssec_ok, request.checking_disabled,
      upstreams};
  auto fail_now = [&](Outcome outcome, FailReason reason) {
    auto result = std::make_shared<Result>();
    result->outcome = outcome;
    result->reason = reason;
    std::vector<Callback> waiters;
    waiters.push_back(std::move(callback));
    Deliver(std::move(waiters), std::move(result));
  };
  if (auto it = coalesce_.find(key); it != coalesce_.end()) {
    Job* job = it->second;
    if (job->waiters.size() >= options_.max_waiters_per_query) {
      counters_.overloaded.fetch_add(1, std::memory_order_relaxed);
      fail_now(Outcome::kOverloaded, FailReason::kNone);
    } else {
      counters_.coalesced.fetch_add(1, std::memory_order_relaxed);
      job->waiters.push_back(std::move(callback));
    }
    --resolve_depth_;
    return;
  }
  if (!forward_cap_->TryAcquire()) {
    counters_.overloaded.fetch_add(1, std::memory_order_relaxed);
    fail_now(Outcome::kOverloaded, FailReason::kNone);
    --resolve_depth_;
    return;
  }
  // Healthy servers by SRTT (stable: ties keep the configured order), then failed ones.
  std::vector<Server*> candidates;
  for (const auto& address : upstreams.addresses()) {
    Server& server = GetServer(address);
    if (server.entry.loop_disabled.load(std::memory_order_relaxed)) continue;
    if (std::find(candidates.begin(), candidates.end(), &server) != candidates.end()) continue;
    candidates.push_back(&server);
  }
  if (candidates.empty()) {
    forward_cap_->Release();
    fail_now(Outcome::kServFail, FailReason::kNoUpstreams);
    --resolve_depth_;
    return;
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const Server* a, const Server* b) {
    if (a->health.failed() != b->health.failed()) return !a->health.failed();
    return a->health.SelectionRttMs() < b->health.SelectionRttMs();
  });
  Job* job = StartJob(JobKind::kClient, request, std::move(candidates));
  job->waiters.push_back(std::move(callback));
  job->key = std::move(key);
  coalesce_.emplace(*job->key, job);
  StartNextTry(job);
  --resolve_depth_;
}

Forwarder::Job* Forwarder::StartJob(JobKind kind, const Request& request,
                                    std::vector<Server*> candidates) {
  auto owned = std::make_unique<Job>(loop_);
  Job* job = owned.get();
  job->kind = kind;
  job->request = request;
  job->force_tcp = request.client_transport == Transport::kTcp;
  job->candidates = std::move(candidates);
  job->tries.assign(job->candidates.size(), 0);
  job->done.assign(job->candidates.size(), false);
  job->no_edns.assign(job->candidates.size(), false);
  loop_.UpdateTime();
  job->deadline_ms = loop_.now_ms() + options_.total_timeout_ms;
  job->deadline_timer.Start(options_.total_timeout_ms, [this, job] {
    if (job->current != nullptr && !job->current->closed) {
      OnAttemptFailed(job->current, /*timeout=*/true, "time budget spent");
      if (job->finished) return;
    }
    FinishFailed(job, FailReason::kTimeout);
  });
  jobs_.emplace(job, std::move(owned));
  if (kind == JobKind::kClient) {
    ++client_jobs_;
    counters_.in_flight.store(client_jobs_, std::memory_order_relaxed);
  }
  return job;
}

void Forwarder::StartNextTry(Job* job) {
  if (job->finished) return;
  const size_t count = job->candidates.size();
  const uint32_t max_tries =
      job->kind == JobKind::kClient ? std::max<uint32_t>(1, options_.max_tries_per_upstream) : 1;
  for (size_t step = 0; step < count; ++step) {
    size_t candidate = (job->next_candidate + step) % count;
    if (job->done[candidate] || job->tries[candidate] >= max_tries) continue;
    job->next_candidate = candidate + 1;
    if (job->sent > 0) counters_.failovers.fetch_add(1, std::memory_order_relaxed);
    SendTry(job, candidate, job->force_tcp ? Transport::kTcp : Transport::kUdp,
            job->no_edns[candidate] ? EdnsMode::kWithoutEdns : EdnsMode::kWithEdns);
    return;
  }
  // Nothing left to send. A try that timed out keeps listening: a slow upstream (a
  // recursive resolver working on an uncached name) may still answer, so wait for it until
  // the time budget is spent (the deadline timer), unless every try has definitively failed.
  const bool listening = std::any_of(job->attempts.begin(), job->attempts.end(),
                                     [](const auto& attempt) { return !attempt->closed; });
  if (listening) return;
  FinishFailed(job, job->error_attempt != nullptr ? FailReason::kUpstreamError
                    : job->any_timeout            ? FailReason::kTimeout
                                                  : FailReason::kNetworkError);
}

void Forwarder::SendTry(Job* job, size_t candidate, Transport transport, EdnsMode edns) {
  loop_.UpdateTime();
  const uint64_t now = loop_.now_ms();
  if (now >= job->deadline_ms) {
    FinishFailed(job, job->any_timeout ? FailReason::kTimeout : FailReason::kNetworkError);
    return;
  }
  Server* server = job->candidates[candidate];
  auto owned = std::make_unique<Attempt>();
  Attempt* attempt = owned.get();
  attempt->job = job;
  attempt->server = server;
  attempt->candidate = candidate;
  attempt->transport = transport;
  attempt->edns = edns;
  attempt->id = random_.Next16();
  attempt->sent_ms = clock_.NowMs();
  job->attempts.push_back(std::move(owned));
  job->current = attempt;
  ++job->tries[candidate];
  ++job->sent;
  counters_.tries.fetch_add(1, std::memory_order_relaxed);
  if (job->kind == JobKind::kClient) server->entry.sent.Inc();

  // A TCP try includes the handshake: allow it two round trips.
  uint64_t timeout = server->health.TryTimeoutMs();
  if (transport == Transport::kTcp) timeout *= 2;
  timeout = std::min(timeout, job->deadline_ms - now);
  job->try_timer.Start(timeout, [this, job] { OnTryTimeout(job); });

  std::vector<uint8_t> query;
  if (transport == Transport::kTcp) {
    // The ID must be unique among the queries pipelined on the connection.
    auto it = tcp_.find(server->address);
    if (it != tcp_.end()) {
      while (it->second->waiting.count(attempt->id) != 0) attempt->id = random_.Next16();
    }
  }
  if (!BuildQuery(job->request, attempt->id, edns, options_.edns_payload_bytes, &query)) {
    OnAttemptFailed(attempt, /*timeout=*/false, "query does not fit");
    return;
  }
  if (transport == Transport::kUdp) {
    SendUdp(attempt, query);
  } else {
    SendTcp(attempt, query);
  }
}

void Forwarder::SendUdp(Attempt* attempt, std::span<const uint8_t> query) {
  std::string error;
  attempt->udp = UdpClient::Open(
      loop_, attempt->server->address, receive_buffer_,
      [this, attempt](std::span<const uint8_t> datagram) { OnDatagram(attempt, datagram); },
      [this, attempt](int status) {
        if (attempt->closed || attempt->job->finished) return;
        if (status == UV_EMSGSIZE) {
          counters_.malformed.fetch_add(1, std::memory_order_relaxed);
          return;
        }
        OnAttemptFailed(attempt, /*timeout=*/false, uv_strerror(status));
      },
      &error);
  if (attempt->udp == nullptr) {
    LOG_EVERY_N(WARNING, 100) << "upstream " << error;
    OnAttemptFailed(attempt, /*timeout=*/false, "socket");
    return;
  }
  if (int status = attempt->udp->Send(query); status != 0) {
    OnAttemptFailed(attempt, /*timeout=*/false, uv_strerror(status));
  }
}

void Forwarder::SendTcp(Attempt* attempt, std::span<const uint8_t> query) {
  const loop::SocketAddress& address = attempt->server->address;
  auto it = tcp_.find(address);
  if (it == tcp_.end()) {
    auto slot = std::make_unique<TcpSlot>();
    TcpClient::Callbacks callbacks;
    callbacks.on_message = [this, address](std::span<const uint8_t> message) {
      OnTcpMessage(address, message);
    };
    callbacks.on_closed = [this, address](const std::string& reason) {
      OnTcpClosed(address, reason);
    };
    std::string error;
    slot->client = TcpClient::Connect(loop_, address, options_.tcp_idle_timeout_ms,
                                      std::move(callbacks), &error);
    if (slot->client == nullptr) {
      LOG_EVERY_N(WARNING, 100) << "upstream " << error;
      OnAttemptFailed(attempt, /*timeout=*/false, "tcp connect");
      return;
    }
    counters_.tcp_connections.fetch_add(1, std::memory_order_relaxed);
    it = tcp_.emplace(address, std::move(slot)).first;
  }
  TcpSlot* slot = it->second.get();
  if (!slot->client->Send(query)) {
    OnAttemptFailed(attempt, /*timeout=*/false, "tcp write");
    return;
  }
  slot->waiting.emplace(attempt->id, attempt);
  attempt->tcp = slot;
}

void Forwarder::OnTryTimeout(Job* job) {
  if (job->finished || job->current == nullptr) return;
  Attempt* attempt = job->current;
  // The socket keeps listening (a late answer still counts); the query moves on.
  job->any_timeout = true;
  counters_.timeouts.fetch_add(1, std::memory_order_relaxed);
  attempt->server->health.OnFailure();
  if (job->kind == JobKind::kClient) {
    attempt->server->entry.timeouts.Inc();
    attempt->server->entry.failed.Inc();
  }
  UpdateProbeTimer();
  job->current = nullptr;
  StartNextTry(job);
}

void Forwarder::OnDatagram(Attempt* attempt, std::span<const uint8_t> datagram) {
  if (attempt->closed || attempt->job->finished) return;
  dns::Message message;
  Match match = MatchReply(datagram, attempt->id, attempt->job->request, &message);
  if (match != Match::kOk) {
    (match == Match::kMalformed ? counters_.malformed : counters_.mismatched)
        .fetch_add(1, std::memory_order_relaxed);
    LOG_EVERY_N(WARNING, 100) << "upstream " << attempt->server->address.ToString()
                              << ": dropped a reply (" << MatchName(match) << ") for "
                              << attempt->job->request.qname.ToText();
    return;
  }
  OnReply(attempt, datagram, std::move(message));
}

void Forwarder::OnTcpMessage(const loop::SocketAddress& peer, std::span<const uint8_t> message) {
  auto it = tcp_.find(peer);
  if (it == tcp_.end()) return;
  dns::Header header;
  Attempt* attempt = nullptr;
  if (dns::ParseHeader(message, &header) == dns::ParseError::kOk) {
    auto waiting = it->second->waiting.find(header.id);
    if (waiting != it->second->waiting.end()) attempt = waiting->second;
  }
  if (attempt == nullptr) {
    // A reply to a try given up on, or garbage: RFC 7766 §7 lets a client drop it.
    counters_.mismatched.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  OnDatagram(attempt, message);
}

void Forwarder::OnTcpClosed(const loop::SocketAddress& peer, const std::string& reason) {
  auto it = tcp_.find(peer);
  if (it == tcp_.end()) return;
  // Destroyed on the next iteration: we are inside the connection's own callback.
  std::unique_ptr<TcpSlot> slot = std::move(it->second);
  tcp_.erase(it);
  // A server may close a reused connection just as we send on it (RFC 7766 §6.2.3 lets it
  // close idle connections): such queries get one more try on a fresh connection.
  const bool was_reused = slot->client->messages_received() > 0;
  std::vector<Attempt*> waiting;
  for (auto& [id, attempt] : slot->waiting) {
    attempt->tcp = nullptr;
    waiting.push_back(attempt);
  }
  slot->waiting.clear();
  closed_tcp_.push_back(std::move(slot));
  SchedulePost();
  for (Attempt* attempt : waiting) {
    Job* job = attempt->job;
    if (attempt->closed || job->finished) continue;
    if (was_reused && attempt == job->current && !job->tcp_reconnected) {
      job->tcp_reconnected = true;
      CloseAttempt(attempt);
      SendTry(job, attempt->candidate, Transport::kTcp, attempt->edns);
      continue;
    }
    OnAttemptFailed(attempt, /*timeout=*/false, reason.c_str());
  }
}

void Forwarder::OnReply(Attempt* attempt, std::span<const uint8_t> bytes, dns::Message message) {
  Job* job = attempt->job;
  Server* server = attempt->server;
  const uint64_t now = clock_.NowMs();
  const uint64_t rtt_ms = now > attempt->sent_ms ? now - attempt->sent_ms : 0;
  server->health.OnReply(rtt_ms);  // it answered: reachable, whatever the rcode
  server->entry.rtt_seconds.Observe(static_cast<double>(rtt_ms) / 1000.0);
  UpdateProbeTimer();
  // With no try in flight (all sent, waiting for a late answer), a late reply is as good as
  // the current one.
  const bool is_current = attempt == job->current || job->current == nullptr;
  const dns::Rcode rcode = message.rcode();

  if (job->kind == JobKind::kHealthProbe) {
    FinishAnswer(job, attempt, bytes, std::move(message));
    return;
  }
  if (message.header.tc && attempt->transport == Transport::kUdp) {
    CloseAttempt(attempt);
    if (!is_current) return;
    counters_.tcp_retries.fetch_add(1, std::memory_order_relaxed);
    job->force_tcp = true;
    SendTry(job, attempt->candidate, Transport::kTcp, attempt->edns);
    return;
  }
  if (rcode == dns::Rcode::kFormErr && attempt->edns == EdnsMode::kWithEdns) {
    CloseAttempt(attempt);
    if (!is_current) return;
    counters_.edns_fallbacks.fetch_add(1, std::memory_order_relaxed);
    job->no_edns[attempt->candidate] = true;
    SendTry(job, attempt->candidate, attempt->transport, EdnsMode::kWithoutEdns);
    return;
  }
  if (rcode == dns::Rcode::kServFail || rcode == dns::Rcode::kRefused ||
      rcode == dns::Rcode::kNotImp || rcode == dns::Rcode::kFormErr) {
    if (job->kind == JobKind::kClient) server->entry.failed.Inc();
    job->done[attempt->candidate] = true;
    job->error_reply.assign(bytes.begin(), bytes.end());
    job->error_message = std::move(message);
    job->error_attempt = attempt;
    CloseAttempt(attempt);
    if (!is_current) return;
    job->current = nullptr;
    StartNextTry(job);
    return;
  }
  if (job->kind == JobKind::kClient) server->entry.answers.Inc();
  FinishAnswer(job, attempt, bytes, std::move(message));
}

void Forwarder::OnAttemptFailed(Attempt* attempt, bool timeout, const char* why) {
  Job* job = attempt->job;
  if (attempt->closed || job->finished) return;
  CloseAttempt(attempt);
  attempt->server->health.OnFailure();
  if (job->kind == JobKind::kClient) {
    attempt->server->entry.failed.Inc();
    if (timeout) attempt->server->entry.timeouts.Inc();
  }
  if (timeout) {
    job->any_timeout = true;
    counters_.timeouts.fetch_add(1, std::memory_order_relaxed);
  } else {
    // Refused or unreachable: trying this server again for this query will not help.
    job->done[attempt->candidate] = true;
  }
  VLOG(1) << "upstream " << attempt->server->address.ToString() << " failed for "
          << job->request.qname.ToText() << ": " << why;
  UpdateProbeTimer();
  if (attempt != job->current) {
    // Waiting for late answers only: this was one of them, maybe the last.
    if (job->current == nullptr) StartNextTry(job);
    return;
  }
  job->current = nullptr;
  if (timeout) return;  // the deadline timer finishes the job
  StartNextTry(job);
}

void Forwarder::CloseAttempt(Attempt* attempt) {
  attempt->closed = true;
  if (attempt->tcp != nullptr) {
    attempt->tcp->waiting.erase(attempt->id);
    attempt->tcp = nullptr;
  }
  // The UDP socket stays open until the job is reaped: we may be inside its callback.
}

void Forwarder::FinishAnswer(Job* job, Attempt* attempt, std::span<const uint8_t> bytes,
                             dns::Message message) {
  Result result;
  result.outcome = Outcome::kAnswer;
  result.reply.assign(bytes.begin(), bytes.end());
  result.message = std::move(message);
  result.upstream = attempt->server->address;
  result.transport = attempt->transport;
  const uint64_t now = clock_.NowMs();
  result.rtt_ms = now > attempt->sent_ms ? now - attempt->sent_ms : 0;
  result.tries = job->sent;
  Finish(job, std::move(result));
}

void Forwarder::FinishFailed(Job* job, FailReason reason) {
  if (job->finished) return;
  Result result;
  result.outcome = Outcome::kServFail;
  result.reason = reason;
  if (job->error_attempt != nullptr) {
    result.reply = std::move(job->error_reply);
    result.message = std::move(job->error_message);
    result.upstream = job->error_attempt->server->address;
    result.transport = job->error_attempt->transport;
  }
  result.tries = job->sent;
  Finish(job, std::move(result));
}

void Forwarder::Finish(Job* job, Result result) {
  if (job->finished) return;
  job->finished = true;
  job->try_timer.Stop();
  job->deadline_timer.Stop();
  for (auto& attempt : job->attempts) CloseAttempt(attempt.get());
  if (job->key) coalesce_.erase(*job->key);
  if (job->kind == JobKind::kClient) {
    --client_jobs_;
    counters_.in_flight.store(client_jobs_, std::memory_order_relaxed);
    forward_cap_->Release();
    (result.outcome == Outcome::kAnswer ? counters_.answers : counters_.servfails)
        .fetch_add(1, std::memory_order_relaxed);
  } else if (job->kind == JobKind::kHealthProbe && !job->candidates.empty()) {
    job->candidates.front()->probing = false;
  }
  std::vector<Callback> waiters = std::move(job->waiters);
  auto it = jobs_.find(job);
  if (it != jobs_.end()) {
    graveyard_.push_back(std::move(it->second));
    jobs_.erase(it);
  }
  SchedulePost();
  if (!waiters.empty()) {
    Deliver(std::move(waiters), std::make_shared<const Result>(std::move(result)));
  }
}

void Forwarder::Deliver(std::vector<Callback> waiters, std::shared_ptr<const Result> result) {
  if (resolve_depth_ > 0) {
    deferred_.emplace_back(std::move(waiters), std::move(result));
    SchedulePost();
    return;
  }
  for (auto& waiter : waiters) {
    if (waiter) waiter(*result);
  }
}

void Forwarder::SchedulePost() {
  if (!post_timer_.IsActive()) post_timer_.Start(0, [this] { RunPosted(); });
}

void Forwarder::RunPosted() {
  graveyard_.clear();
  closed_tcp_.clear();
  // Callbacks may Resolve again and so add to deferred_: take the batch first.
  auto batch = std::move(deferred_);
  deferred_.clear();
  for (auto& [waiters, result] : batch) Deliver(std::move(waiters), std::move(result));
}

void Forwarder::CancelAll() {
  std::vector<Job*> jobs;
  for (auto& [job, owned] : jobs_) jobs.push_back(job);
  for (Job* job : jobs) FinishFailed(job, FailReason::kShutdown);
  auto batch = std::move(deferred_);
  deferred_.clear();
  for (auto& [waiters, result] : batch) {
    for (auto& waiter : waiters) {
      if (waiter) waiter(*result);
    }
  }
}

dns::Name Forwarder::ProbeForLoop(const loop::SocketAddress& upstream) {
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
