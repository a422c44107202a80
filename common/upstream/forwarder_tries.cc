// Forwarder, part 2: tries. Which server is asked next (round robin over the ordered
// candidates, failover after a timeout or a failure, a server over its in-flight budget
// skipped), how a try is sent (a pooled UDP socket, or one of the server's reused TCP
// connections, always for a tcp:// upstream, over TLS for a tls:// one)
// and how a failed try counts against the server's health (an unanswered health probe
// marks it down).

#include <glog/logging.h>
#include <uv.h>

#include <algorithm>
#include <string>
#include <utility>

#include "common/limits/limits.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_internal.h"

namespace kdns::upstream {

void Forwarder::StartNextTry(Job* job) {
  if (job->finished) return;
  // --all-servers: the first try goes to every candidate; every attempt keeps listening, so
  // the first answer wins.
  const bool to_all = options_.first_try == FirstTry::kAllServers &&
                      job->kind == JobKind::kClient && job->sent == 0;
  bool sent_any = false;
  const size_t count = job->candidates.size();
  const uint32_t max_tries =
      job->kind == JobKind::kClient ? std::max<uint32_t>(1, options_.max_tries_per_upstream) : 1;
  const size_t start = job->next_candidate;
  for (size_t step = 0; step < count; ++step) {
    size_t candidate = (start + step) % count;
    if (job->done[candidate] || job->tries[candidate] >= max_tries) continue;
    if (job->kind == JobKind::kClient && !job->upstream_holds[candidate]) {
      Server* server = job->candidates[candidate];
      job->upstream_holds[candidate] = server->budget.TryAcquire(job->client);
      if (!job->upstream_holds[candidate]) {
        if (job->upstream_holds[candidate].refusal() == Refusal::kClientShare) {
          limits::RecordLimitHit(limits::Limit::kUpstreamClientShare,
                                 "client " + job->request.client.HostString() + ", upstream " +
                                     FormatUpstreamAddress(server->address));
        } else {
          limits::RecordLimitHit(limits::Limit::kUpstreamInFlight,
                                 "upstream " + FormatUpstreamAddress(server->address));
        }
        job->upstream_refused = true;
        job->done[candidate] = true;
        continue;
      }
    }
    job->next_candidate = candidate + 1;
    if (job->sent > 0 && !to_all) counters_.failovers.fetch_add(1, std::memory_order_relaxed);
    const uint32_t expected_sent = job->sent + 1;
    const bool tcp =
        job->force_tcp || job->candidates[candidate]->transport != UpstreamTransport::kUdp;
    SendTry(job, candidate, tcp ? dns::Transport::kTcp : dns::Transport::kUdp,
            job->no_edns[candidate] ? EdnsMode::kWithoutEdns : EdnsMode::kWithEdns);
    // One server at a time; or the job ended, or a failure inside SendTry already moved
    // it on (StartNextTry again).
    if (!to_all || job->finished || job->sent != expected_sent) return;
    sent_any = true;
  }
  if (sent_any) return;
  // Nothing left to send. A try that timed out keeps listening: a slow upstream (a
  // recursive resolver working on an uncached name) may still answer, so wait for it until
  // the time budget is spent (the deadline timer), unless every try has definitively failed.
  const bool listening = std::any_of(job->attempts.begin(), job->attempts.end(),
                                     [](const auto& attempt) { return !attempt->closed; });
  if (listening) return;
  FinishFailed(job, job->error_attempt != nullptr             ? FailReason::kUpstreamError
                    : job->any_timeout                        ? FailReason::kTimeout
                    : job->upstream_refused && job->sent == 0 ? FailReason::kUpstreamBudget
                                                              : FailReason::kNetworkError);
}

void Forwarder::SendTry(Job* job, size_t candidate, dns::Transport transport, EdnsMode edns) {
  loop_.UpdateTime();
  const uint64_t now = loop_.now_ms();
  if (now >= job->deadline_ms) {
    FinishFailed(job, job->any_timeout ? FailReason::kTimeout : FailReason::kNetworkError);
    return;
  }
  Server* server = job->candidates[candidate];
  Attempt* attempt = NewAttempt(job);
  attempt->server = server;
  attempt->candidate = candidate;
  attempt->transport = transport;
  attempt->edns = edns;
  attempt->sent_ms = clock_.NowMs();
  job->current = attempt;
  ++job->tries[candidate];
  ++job->sent;
  counters_.tries.fetch_add(1, std::memory_order_relaxed);
  if (job->kind == JobKind::kClient) server->entry.sent.Inc();

  // A TCP try includes the handshake: allow it two round trips.
  uint64_t timeout = server->health.TryTimeoutMs();
  if (transport == dns::Transport::kTcp) timeout *= 2;
  timeout = std::min(timeout, job->deadline_ms - now);
  job->try_timer.Start(timeout, [this, job] { OnTryTimeout(job); });

  TcpSlot* tcp = nullptr;
  if (transport == dns::Transport::kUdp) {
    // The pool picks the socket and draws the ID, unique among the queries on it.
    std::string error;
    if (!server->udp->Acquire(attempt, now, &error)) {
      LOG_EVERY_N(WARNING, 100) << "upstream " << error;
      OnAttemptFailed(attempt, /*timeout=*/false, "socket");
      return;
    }
  } else {
    tcp = PickTcpSlot(server);
    if (tcp == nullptr) {
      OnAttemptFailed(attempt, /*timeout=*/false, "tcp connect");
      return;
    }
    // The ID must be unique among the queries pipelined on the connection.
    do {
      attempt->id = random_.Next16();
    } while (tcp->waiting.count(attempt->id) != 0);
  }
  // 0x20 over UDP only (TCP cannot be spoofed off-path), for client queries (probes' names
  // are checked elsewhere or have no letters).
  attempt->sent_0x20 = transport == dns::Transport::kUdp && job->kind == JobKind::kClient &&
                       !job->no_0x20[candidate] && server->echo_0x20.Use(now);
  if (attempt->sent_0x20) attempt->qname_0x20 = Randomize0x20(job->request.qname, random_);
  const std::optional<uint16_t> client_address =
      server->gets_client_address ? std::optional(options_.client_address_option) : std::nullopt;
  if (!BuildQuery(job->request, attempt->id, edns, options_.edns_payload_bytes, &query_,
                  attempt->sent_0x20 ? &attempt->qname_0x20 : nullptr, client_address)) {
    OnAttemptFailed(attempt, /*timeout=*/false, "query does not fit");
    return;
  }
  if (transport == dns::Transport::kUdp) {
    SendUdp(attempt, query_);
  } else {
    SendTcp(attempt, tcp, query_);
  }
}

void Forwarder::SendUdp(Attempt* attempt, std::span<const uint8_t> query) {
  if (int status = attempt->server->udp->Send(attempt, query); status != 0) {
    OnAttemptFailed(attempt, /*timeout=*/false, uv_strerror(status));
  }
}

Forwarder::TcpSlot* Forwarder::PickTcpSlot(Server* server) {
  // The least busy open connection, unless each has a full pipeline and there is room for
  // another (RFC 7766 §6.2.2: few connections, each reused for many queries).
  TcpSlot* least_busy = nullptr;
  for (const auto& slot : server->tcp) {
    if (least_busy == nullptr || slot->waiting.size() < least_busy->waiting.size()) {
      least_busy = slot.get();
    }
  }
  const size_t max_connections = std::max<size_t>(1, options_.tcp_connections_per_upstream);
  if (least_busy != nullptr && (least_busy->waiting.size() < options_.tcp_queries_per_connection ||
                                server->tcp.size() >= max_connections)) {
    return least_busy;
  }
  auto slot = std::make_unique<TcpSlot>();
  slot->server = server;
  TcpSlot* raw = slot.get();
  TcpClient::Callbacks callbacks;
  callbacks.on_message = [this, raw](std::span<const uint8_t> message) {
    OnTcpMessage(raw, message);
  };
  callbacks.on_closed = [this, raw](const std::string& reason) { OnTcpClosed(raw, reason); };
  std::string error;
  if (server->transport != UpstreamTransport::kTls) {
    slot->client = TcpClient::Connect(loop_, server->address, options_.tcp_idle_timeout_ms,
                                      std::move(callbacks), &error);
  } else if (options_.tls_context == nullptr) {
    error = server->address.ToString() + ": no TLS context";  // never in the clear
  } else {
    const loop::TlsPeer peer{server->server_name, loop::IpOf(server->address),
                             server->address.port()};
    slot->client =
        TcpClient::ConnectTls(loop_, server->address, *options_.tls_context, peer,
                              options_.tcp_idle_timeout_ms, std::move(callbacks), &error);
  }
  if (slot->client == nullptr) {
    LOG_EVERY_N(WARNING, 100) << "upstream " << error;
    return least_busy;  // the open ones still take queries; nullptr when none is open
  }
  counters_.tcp_connections.fetch_add(1, std::memory_order_relaxed);
  server->tcp.push_back(std::move(slot));
  return raw;
}

void Forwarder::SendTcp(Attempt* attempt, TcpSlot* slot, std::span<const uint8_t> query) {
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
  OnServerFailure(job, attempt->server, /*timeout=*/true);
  if (job->kind == JobKind::kClient) {
    attempt->server->entry.timeouts.Inc();
    attempt->server->entry.failed.Inc();
  }
  UpdateProbeTimer();
  job->current = nullptr;
  StartNextTry(job);
}

void Forwarder::OnAttemptFailed(Attempt* attempt, bool timeout, const char* why) {
  Job* job = attempt->job;
  if (attempt->closed || job->finished) return;
  CloseAttempt(attempt);
  OnServerFailure(job, attempt->server, timeout);
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

void Forwarder::OnServerFailure(Job* job, Server* server, bool timeout) {
  // Only silence makes a server down: one that refuses (ICMP port unreachable, a reset)
  // fails each query at once by itself, holding no budget, and answers as soon as it is
  // back (kubedns restarting), without waiting for a probe.
  if (job->kind == JobKind::kHealthProbe) server->entry.health_check_failures.Inc();
  if (job->kind != JobKind::kHealthProbe || !timeout) {
    server->health.OnFailure();
    return;
  }
  const bool was_down = server->health.down();
  server->health.OnProbeFailure();
  if (!was_down && server->health.down()) {
    server->entry.marked_down.Inc();
    LOG(WARNING) << "upstream " << FormatUpstreamAddress(server->address)
                 << " is down (no reply to a probe): queries to it fail at once until it "
                    "answers a probe";
  }
}

void Forwarder::CloseAttempt(Attempt* attempt) {
  attempt->closed = true;
  if (attempt->tcp != nullptr) {
    attempt->tcp->waiting.erase(attempt->id);
    attempt->tcp = nullptr;
  }
  // Frees its ID on the socket; what still arrives for it is counted as mismatched.
  attempt->server->udp->Release(attempt);
}

}  // namespace kdns::upstream
