// Forwarder, part 1: the job table. Resolve coalesces identical queries, leaves out servers
// known down, takes the route's (for the client) and the process's budgets, orders the set's
// servers and starts a Job; Finish* complete it and deliver the result to every waiter, never
// from inside Resolve. Sending and failover are in forwarder_tries.cc, reply matching in
// forwarder_replies.cc, probes in forwarder_probes.cc.

#include "common/upstream/forwarder.h"

#include <uv.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "common/limits/limits.h"
#include "common/loop/socket_address.h"
#include "common/upstream/forwarder_internal.h"

namespace kdns::upstream {

namespace {

// Enough for a busy thread's in-flight queries; beyond, finished jobs are freed.
constexpr size_t kMaxFreeJobs = 4096;
constexpr size_t kMaxFreeAttempts = 2 * kMaxFreeJobs;

// An idle job keeps room for one question, never decoded records: a whole large reply
// decodes to hundreds of KiB (wire.h: ReplyDecode), and up to kMaxFreeJobs jobs wait idle.
void ClearKeepingQuestion(dns::Message& message) {
  message.header = dns::Header();
  message.questions.clear();
  std::vector<dns::ResourceRecord>().swap(message.answers);
  std::vector<dns::ResourceRecord>().swap(message.authorities);
  std::vector<dns::ResourceRecord>().swap(message.additionals);
  message.edns.reset();
}

}  // namespace

size_t Forwarder::KeyHash(const Request& request, const UpstreamSet& upstreams) {
  size_t hash = request.qname.Hash();
  hash = hash * 31 + static_cast<size_t>(request.qtype);
  hash = hash * 31 + static_cast<size_t>(request.qclass);
  hash = hash * 4 + (request.dnssec_ok ? 2 : 0) + (request.checking_disabled ? 1 : 0);
  return hash ^ upstreams.Hash();
}

Forwarder::Job* Forwarder::FindCoalesced(size_t hash, const Request& request,
                                         const UpstreamSet& upstreams) const {
  if (coalesce_.empty()) return nullptr;
  for (Job* job = coalesce_[hash & (coalesce_.size() - 1)]; job != nullptr;
       job = job->next_coalesced) {
    const Request& other = job->request;
    if (job->key_hash == hash && other.qname == request.qname && other.qtype == request.qtype &&
        other.qclass == request.qclass && other.dnssec_ok == request.dnssec_ok &&
        other.checking_disabled == request.checking_disabled && job->upstreams == upstreams) {
      return job;
    }
  }
  return nullptr;
}

void Forwarder::AddCoalesced(Job* job, size_t hash, const UpstreamSet& upstreams) {
  if (coalesced_jobs_ + 1 > coalesce_.size()) {
    // Grow (load factor at most 1) and rechain.
    std::vector<Job*> buckets(std::max<size_t>(64, coalesce_.size() * 2), nullptr);
    for (Job* head : coalesce_) {
      while (head != nullptr) {
        Job* next = head->next_coalesced;
        Job*& bucket = buckets[head->key_hash & (buckets.size() - 1)];
        head->next_coalesced = bucket;
        bucket = head;
        head = next;
      }
    }
    coalesce_ = std::move(buckets);
  }
  job->coalescable = true;
  job->key_hash = hash;
  job->upstreams = upstreams;  // copy-assigned: reuses the recycled job's capacity
  Job*& bucket = coalesce_[hash & (coalesce_.size() - 1)];
  job->next_coalesced = bucket;
  bucket = job;
  ++coalesced_jobs_;
}

void Forwarder::RemoveCoalesced(Job* job) {
  if (!job->coalescable) return;
  job->coalescable = false;
  for (Job** link = &coalesce_[job->key_hash & (coalesce_.size() - 1)]; *link != nullptr;
       link = &(*link)->next_coalesced) {
    if (*link == job) {
      *link = job->next_coalesced;
      job->next_coalesced = nullptr;
      --coalesced_jobs_;
      return;
    }
  }
}

void Forwarder::Job::Reset(std::vector<std::unique_ptr<Attempt>>& free_attempts,
                           size_t max_free_attempts) {
  kind = JobKind::kClient;
  index = 0;
  coalescable = false;
  key_hash = 0;
  next_coalesced = nullptr;
  request = Request();
  candidates.clear();
  tries.clear();
  done.clear();
  no_edns.clear();
  no_0x20.clear();
  client = kNoClient;
  route_hold.Release();
  process_hold.Release();
  upstream_holds.clear();
  upstream_refused = false;
  next_candidate = 0;
  force_tcp = false;
  tcp_reconnected = false;
  for (auto& attempt : attempts) {
    if (free_attempts.size() >= max_free_attempts) break;
    *attempt = Attempt();
    free_attempts.push_back(std::move(attempt));
  }
  attempts.clear();
  current = nullptr;
  waiters.clear();
  deadline_ms = 0;
  sent = 0;
  any_timeout = false;
  finished = false;
  error_reply.clear();
  error_message = dns::Message();
  error_attempt = nullptr;
  result.outcome = ForwardOutcome::kServFail;
  result.reason = FailReason::kNone;
  result.reply.clear();
  ClearKeepingQuestion(result.message);
  result.upstream = loop::SocketAddress();
  result.transport = dns::Transport::kUdp;
  result.rtt_ms = 0;
  result.tries = 0;
  try_timer.Stop();
  deadline_timer.Stop();
}

void Forwarder::Recycle(std::unique_ptr<Job> job) {
  if (free_jobs_.size() >= kMaxFreeJobs) return;  // freed here
  job->Reset(free_attempts_, kMaxFreeAttempts);
  free_jobs_.push_back(std::move(job));
}

Forwarder::Attempt* Forwarder::NewAttempt(Job* job) {
  std::unique_ptr<Attempt> owned;
  if (free_attempts_.empty()) {
    owned = std::make_unique<Attempt>();
  } else {
    owned = std::move(free_attempts_.back());
    free_attempts_.pop_back();
  }
  Attempt* attempt = owned.get();
  attempt->job = job;
  job->attempts.push_back(std::move(owned));
  return attempt;
}

Forwarder::Forwarder(loop::Loop& loop, const Options& options, std::shared_ptr<UpstreamTable> table,
                     const Clock& clock)
    : loop_(loop),
      options_(options),
      table_(table ? std::move(table) : std::make_shared<UpstreamTable>()),
      budgets_(options.budgets ? options.budgets : std::make_shared<ForwardBudgets>()),
      clock_(clock),
      receive_(UdpClient::kReceiveSliceBytes, kReceiveSlices),
      post_timer_(loop),
      probe_timer_(loop) {}

Forwarder::~Forwarder() {
  // Unregister TCP waiters before the jobs go, then drop everything without callbacks.
  for (auto& job : jobs_) {
    for (auto& attempt : job->attempts) attempt->tcp = nullptr;
  }
  jobs_.clear();
  graveyard_.clear();
  for (auto& [upstream, server] : servers_) server->tcp.clear();
  closed_tcp_.clear();
}

const UpstreamHealth* Forwarder::health(const Upstream& upstream) const {
  auto it = servers_.find(upstream);
  return it == servers_.end() ? nullptr : &it->second->health;
}

size_t Forwarder::open_tcp_connections() const {
  size_t open = 0;
  for (const auto& [upstream, server] : servers_) open += server->tcp.size();
  return open;
}

Forwarder::Server& Forwarder::GetServer(const Upstream& upstream) {
  auto it = servers_.find(upstream);
  if (it != servers_.end()) return *it->second;
  const loop::SocketAddress& address = upstream.address;
  UpstreamHealth::Options health_options;
  health_options.min_try_timeout_ms = options_.min_try_timeout_ms;
  health_options.max_try_timeout_ms = options_.max_try_timeout_ms;
  health_options.failure_threshold = options_.failure_threshold;
  auto server = std::make_unique<Server>(upstream, health_options, options_.dns0x20,
                                         table_->Get(upstream), budgets_->Upstream(address));
  server->probe_interval_ms = options_.probe_interval_ms;
  const IpAddress ip = loop::IpOf(address);
  server->gets_client_address =
      std::any_of(options_.client_address_to.begin(), options_.client_address_to.end(),
                  [&](const IpPrefix& prefix) { return prefix.Contains(ip); });
  UdpSocketPool::Callbacks callbacks;
  callbacks.on_datagram = [this](UdpSocketPool::Waiter* waiter, std::span<const uint8_t> datagram) {
    OnDatagram(static_cast<Attempt*>(waiter), datagram);
  };
  callbacks.on_malformed = [this] { counters_.malformed.fetch_add(1, std::memory_order_relaxed); };
  // A reply to a try already closed (a duplicate, a slower server's answer after the first,
  // an --all-servers loser) or a guess at our ID: either way not ours any more.
  callbacks.on_unknown = [this] { counters_.mismatched.fetch_add(1, std::memory_order_relaxed); };
  callbacks.on_error = [this](std::span<UdpSocketPool::Waiter* const> waiters, int status) {
    for (UdpSocketPool::Waiter* waiter : waiters) {
      OnAttemptFailed(static_cast<Attempt*>(waiter), /*timeout=*/false, uv_strerror(status));
    }
  };
  server->udp = std::make_unique<UdpSocketPool>(loop_, address, options_.udp_sockets, receive_,
                                                random_, std::move(callbacks));
  Server& ref = *server;
  servers_.emplace(upstream, std::move(server));
  return ref;
}

InFlightBudget& Forwarder::RouteBudget(const UpstreamSet& upstreams) {
  auto it = route_budgets_.find(upstreams);
  if (it == route_budgets_.end()) {
    it = route_budgets_.emplace(upstreams, &budgets_->Route(upstreams)).first;
  }
  return *it->second;
}

void Forwarder::Resolve(const Request& request, const UpstreamSet& upstreams, Callback callback) {
  ++resolve_depth_;
  counters_.requests.fetch_add(1, std::memory_order_relaxed);
  const size_t key_hash = KeyHash(request, upstreams);
  auto fail_now = [&](ForwardOutcome outcome, FailReason reason) {
    auto result = std::make_shared<Result>();
    result->outcome = outcome;
    result->reason = reason;
    std::vector<Callback> waiters;
    waiters.push_back(std::move(callback));
    Deliver(std::move(waiters), std::move(result));
  };
  auto refuse = [&](limits::Limit limit, FailReason reason, std::string_view detail) {
    counters_.overloaded.fetch_add(1, std::memory_order_relaxed);
    limits::RecordLimitHit(limit, detail);
    fail_now(ForwardOutcome::kOverloaded, reason);
    --resolve_depth_;
  };
  if (Job* job = FindCoalesced(key_hash, request, upstreams); job != nullptr) {
    if (job->waiters.size() >= options_.max_waiters_per_query) {
      refuse(limits::Limit::kWaitersPerQuery, FailReason::kWaitersPerQuery, request.qname.ToText());
      return;
    }
    counters_.coalesced.fetch_add(1, std::memory_order_relaxed);
    job->waiters.push_back(std::move(callback));
    --resolve_depth_;
    return;
  }
  // The set's usable servers: neither loop-disabled nor known down.
  std::vector<Server*>& candidates = candidates_;
  candidates.clear();
  bool any_down = false;
  bool any_room = false;
  const RouteOptions& route = upstreams.options();
  for (const auto& address : upstreams.addresses()) {
    Server& server = GetServer(address);
    if (route.HasHealth() || server.route_health) ApplyHealthOptions(server, route);
    if (server.entry.loop_disabled.load(std::memory_order_relaxed)) continue;
    if (std::find(candidates.begin(), candidates.end(), &server) != candidates.end()) continue;
    if (server.health.down()) {
      any_down = true;
      continue;
    }
    candidates.push_back(&server);
    any_room = any_room || !server.budget.full();
  }
  if (candidates.empty()) {
    if (any_down) {
      counters_.upstream_down.fetch_add(1, std::memory_order_relaxed);
      limits::RecordLimitHit(limits::Limit::kUpstreamDown, "route " + upstreams.ToString());
    }
    fail_now(ForwardOutcome::kServFail,
             any_down ? FailReason::kUpstreamDown : FailReason::kNoUpstreams);
    --resolve_depth_;
    return;
  }
  if (!any_room) {
    refuse(limits::Limit::kUpstreamInFlight, FailReason::kUpstreamBudget,
           "every upstream of route " + upstreams.ToString());
    return;
  }
  const ClientTag client = ClientTagOf(request.client);
  BudgetHold route_hold = RouteBudget(upstreams).TryAcquire(client);
  if (!route_hold) {
    if (route_hold.refusal() == Refusal::kClientShare) {
      refuse(limits::Limit::kRouteClientShare, FailReason::kRouteBudget,
             "client " + request.client.HostString() + ", route " + upstreams.ToString());
    } else {
      refuse(limits::Limit::kRouteInFlight, FailReason::kRouteBudget,
             "route " + upstreams.ToString());
    }
    return;
  }
  BudgetHold process_hold = budgets_->process().TryAcquire();
  if (!process_hold) {
    refuse(limits::Limit::kForwardInFlight, FailReason::kForwardMax,
           "route " + upstreams.ToString());
    return;
  }
  // Healthy servers by SRTT (stable: ties keep the configured order), then failed ones; a
  // route's policy reorders the healthy ones after.
  const bool by_rtt =
      options_.server_order == ServerOrder::kFastest && route.policy == RoutePolicy::kDefault;
  auto before = [by_rtt](const Server* a, const Server* b) {
    if (a->health.failed() != b->health.failed()) return !a->health.failed();
    return by_rtt && a->health.SelectionRttMs() < b->health.SelectionRttMs();
  };
  // A stable insertion sort: a set has a handful of servers, and std::stable_sort takes a
  // temporary buffer from the heap on every call (one allocation per miss).
  for (size_t i = 1; i < candidates.size(); ++i) {
    Server* server = candidates[i];
    size_t j = i;
    for (; j > 0 && before(server, candidates[j - 1]); --j) candidates[j] = candidates[j - 1];
    candidates[j] = server;
  }
  if (route.policy != RoutePolicy::kDefault) OrderByPolicy(upstreams, candidates);
  Job* job = StartJob(JobKind::kClient, request, candidates);
  if (route.transport == RouteTransport::kPreferUdp) job->force_tcp = false;
  job->client = client;
  job->route_hold = std::move(route_hold);
  job->process_hold = std::move(process_hold);
  job->waiters.push_back(std::move(callback));
  AddCoalesced(job, key_hash, upstreams);
  StartNextTry(job);
  --resolve_depth_;
}

Forwarder::Job* Forwarder::StartJob(JobKind kind, const Request& request,
                                    const std::vector<Server*>& candidates) {
  std::unique_ptr<Job> owned;
  if (free_jobs_.empty()) {
    owned = std::make_unique<Job>(loop_);
  } else {
    owned = std::move(free_jobs_.back());
    free_jobs_.pop_back();
  }
  Job* job = owned.get();
  job->kind = kind;
  job->request = request;
  job->force_tcp = request.client_transport == dns::Transport::kTcp;
  job->candidates.assign(candidates.begin(), candidates.end());
  job->tries.assign(job->candidates.size(), 0);
  job->done.assign(job->candidates.size(), false);
  job->no_edns.assign(job->candidates.size(), false);
  job->no_0x20.assign(job->candidates.size(), false);
  job->upstream_holds.resize(job->candidates.size());
  loop_.UpdateTime();
  job->deadline_ms = loop_.now_ms() + options_.total_timeout_ms;
  job->deadline_timer.Start(options_.total_timeout_ms, [this, job] {
    if (job->current != nullptr && !job->current->closed) {
      OnAttemptFailed(job->current, /*timeout=*/true, "time budget spent");
      if (job->finished) return;
    }
    FinishFailed(job, FailReason::kTimeout);
  });
  job->index = jobs_.size();
  jobs_.push_back(std::move(owned));
  if (kind == JobKind::kClient) {
    ++client_jobs_;
    counters_.in_flight.store(client_jobs_, std::memory_order_relaxed);
  }
  return job;
}

void Forwarder::FinishAnswer(Job* job, Attempt* attempt, std::span<const uint8_t> bytes,
                             dns::Message& message) {
  if (job->finished) return;
  Result& result = job->result;
  result.outcome = ForwardOutcome::kAnswer;
  result.reason = FailReason::kNone;
  result.reply.assign(bytes.begin(), bytes.end());
  std::swap(result.message, message);
  result.upstream = attempt->server->address;
  result.transport = attempt->transport;
  const uint64_t now = clock_.NowMs();
  result.rtt_ms = now > attempt->sent_ms ? now - attempt->sent_ms : 0;
  result.tries = job->sent;
  Finish(job);
}

void Forwarder::FinishFailed(Job* job, FailReason reason) {
  if (job->finished) return;
  Result& result = job->result;
  // Every server left was over its budget before any try was sent.
  result.outcome = reason == FailReason::kUpstreamBudget ? ForwardOutcome::kOverloaded
                                                         : ForwardOutcome::kServFail;
  result.reason = reason;
  result.reply.clear();
  result.message = dns::Message();
  result.upstream = loop::SocketAddress();
  result.transport = dns::Transport::kUdp;
  result.rtt_ms = 0;
  if (job->error_attempt != nullptr) {
    result.reply = std::move(job->error_reply);
    result.message = std::move(job->error_message);
    result.upstream = job->error_attempt->server->address;
    result.transport = job->error_attempt->transport;
  }
  result.tries = job->sent;
  Finish(job);
}

void Forwarder::Finish(Job* job) {
  if (job->finished) return;
  job->finished = true;
  job->try_timer.Stop();
  job->deadline_timer.Stop();
  for (auto& attempt : job->attempts) CloseAttempt(attempt.get());
  RemoveCoalesced(job);
  const Result& result = job->result;
  if (job->kind == JobKind::kClient) {
    --client_jobs_;
    counters_.in_flight.store(client_jobs_, std::memory_order_relaxed);
    // Every slot goes back here, whatever ended the job (answer, failure, time budget,
    // CancelAll); a job dropped by ~Forwarder gives them back in its destructor.
    job->route_hold.Release();
    job->process_hold.Release();
    for (BudgetHold& hold : job->upstream_holds) hold.Release();
    switch (result.outcome) {
      case ForwardOutcome::kAnswer:
        counters_.answers.fetch_add(1, std::memory_order_relaxed);
        break;
      case ForwardOutcome::kServFail:
        counters_.servfails.fetch_add(1, std::memory_order_relaxed);
        break;
      case ForwardOutcome::kOverloaded:
        counters_.overloaded.fetch_add(1, std::memory_order_relaxed);
        break;
    }
  } else if (job->kind == JobKind::kHealthProbe && !job->candidates.empty()) {
    job->candidates.front()->probing = false;
  }
  // Out of the table; reaped (recycled) on the next loop iteration, so it outlives the
  // callbacks below.
  const size_t index = job->index;
  graveyard_.push_back(std::move(jobs_[index]));
  if (index + 1 != jobs_.size()) {
    jobs_[index] = std::move(jobs_.back());
    jobs_[index]->index = index;
  }
  jobs_.pop_back();
  SchedulePost();
  if (job->waiters.empty()) return;
  if (resolve_depth_ > 0) {
    // Inside Resolve: the result must outlive the job; a copy (rare: failures found at once).
    deferred_.emplace_back(std::move(job->waiters), std::make_shared<const Result>(result));
    return;
  }
  // The job is finished and out of the coalescing table: callbacks that Resolve again start
  // other jobs and never touch these waiters.
  for (auto& waiter : job->waiters) {
    if (waiter) waiter(result);
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
  for (auto& job : graveyard_) Recycle(std::move(job));
  graveyard_.clear();
  closed_tcp_.clear();
  // Callbacks may Resolve again and so add to deferred_: take the batch first.
  auto batch = std::move(deferred_);
  deferred_.clear();
  for (auto& [waiters, result] : batch) Deliver(std::move(waiters), std::move(result));
}

void Forwarder::CancelAll() {
  std::vector<Job*> jobs;
  for (auto& job : jobs_) jobs.push_back(job.get());
  for (Job* job : jobs) FinishFailed(job, FailReason::kShutdown);
  auto batch = std::move(deferred_);
  deferred_.clear();
  for (auto& [waiters, result] : batch) {
    for (auto& waiter : waiters) {
      if (waiter) waiter(*result);
    }
  }
}

}  // namespace kdns::upstream
