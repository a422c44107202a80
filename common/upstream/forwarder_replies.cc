// Forwarder, part 3: replies. Matching a datagram or a TCP message to its try (wire.h:
// source, ID, QR, question), and what the rcode means: the answer, a retry over TCP or
// without EDNS, or the next server.

#include <glog/logging.h>

#include <algorithm>
#include <string>
#include <utility>

#include "common/dns/header.h"
#include "common/limits/limits.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_internal.h"

namespace kdns::upstream {

void Forwarder::OnDatagram(Attempt* attempt, std::span<const uint8_t> datagram) {
  if (attempt->closed || attempt->job->finished) return;
  size_t end = datagram.size();
  const dns::Name* qname_0x20 = attempt->sent_0x20 ? &attempt->qname_0x20 : nullptr;
  Match match = MatchReply(datagram, attempt->id, attempt->job->request, &reply_message_, &end,
                           options_.reply_decode, qname_0x20);
  if (match != Match::kOk) {
    (match == Match::kMalformed ? counters_.malformed : counters_.mismatched)
        .fetch_add(1, std::memory_order_relaxed);
    if (match == Match::kWrongCase) return OnWrongCase(attempt);
    LOG_EVERY_N(WARNING, 100) << "upstream " << attempt->server->address.ToString()
                              << ": dropped a reply (" << MatchName(match) << ") for "
                              << attempt->job->request.qname.ToText();
    return;
  }
  // Bytes after the last record are dropped here: the cache and every client get the
  // message alone (kubedns passes replies that fit as they are).
  std::span<const uint8_t> reply = datagram.first(end);
  if (qname_0x20 != nullptr) {
    // An error reply without a question (wire.h) echoed nothing.
    if (!reply_message_.questions.empty()) attempt->server->echo_0x20.OnEchoed(*qname_0x20);
    // The client's spelling back, in a copy: the datagram is the receive buffer's.
    const dns::Name& asked = attempt->job->request.qname;
    reply_0x20_.assign(reply.begin(), reply.end());
    Restore0x20(reply_0x20_, *qname_0x20, asked);
    Restore0x20(&reply_message_, *qname_0x20, asked);
    reply = reply_0x20_;
  }
  OnReply(attempt, reply, reply_message_);
}

void Forwarder::OnWrongCase(Attempt* attempt) {
  Job* job = attempt->job;
  Server* server = attempt->server;
  const std::string upstream = FormatUpstreamAddress(server->address);
  limits::RecordLimitHit(limits::Limit::kUpstream0x20Mismatch,
                         "upstream " + upstream + ", " + job->request.qname.ToText());
  switch (server->echo_0x20.OnWrongCase(loop_.now_ms())) {
    case Echo0x20::Verdict::kDrop:
      return;  // a spoof attempt: the real reply may still come
    case Echo0x20::Verdict::kFallBack:
      limits::RecordLimitHit(limits::Limit::kUpstream0x20Fallback,
                             "upstream " + upstream + " does not echo the 0x20 case");
      break;
    case Echo0x20::Verdict::kRetryPlain:
      break;
  }
  // Probably a server that does not echo case: the same try again with the client's
  // spelling (as a FORMERR to EDNS is retried without), on a fresh ID.
  const bool is_current = attempt == job->current || job->current == nullptr;
  CloseAttempt(attempt);
  job->no_0x20[attempt->candidate] = true;
  if (!is_current) return;
  SendTry(job, attempt->candidate, dns::Transport::kUdp, attempt->edns);
}

void Forwarder::OnTcpMessage(TcpSlot* slot, std::span<const uint8_t> message) {
  // Replies come in any order (RFC 7766 §7): matched by ID among this connection's tries.
  dns::Header header;
  Attempt* attempt = nullptr;
  if (dns::ParseHeader(message, &header) == dns::ParseError::kOk) {
    auto waiting = slot->waiting.find(header.id);
    if (waiting != slot->waiting.end()) attempt = waiting->second;
  }
  if (!slot->answered) {
    slot->answered = true;
    if (slot->client->tls_resumed()) slot->server->entry.tls_resumed.Inc();
  }
  if (attempt == nullptr) {
    // A reply to a try given up on, or garbage: RFC 7766 §7 lets a client drop it.
    counters_.mismatched.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  OnDatagram(attempt, message);
}

void Forwarder::OnTcpClosed(TcpSlot* closed, const std::string& reason) {
  std::vector<std::unique_ptr<TcpSlot>>& open = closed->server->tcp;
  auto it = std::find_if(open.begin(), open.end(),
                         [closed](const auto& slot) { return slot.get() == closed; });
  if (it == open.end()) return;
  // Destroyed on the next iteration: we are inside the connection's own callback.
  std::unique_ptr<TcpSlot> slot = std::move(*it);
  open.erase(it);
  // A server may close a reused connection just as we send on it (RFC 7766 §6.2.3 lets it
  // close idle connections): such queries get one more try on a fresh connection.
  const bool was_reused = slot->client->messages_received() > 0;
  // A failed TLS handshake (an untrusted certificate, the wrong name) is counted, and for a
  // health probe it is a probe timeout: the upstream is down until it proves itself.
  const bool handshake_failed = slot->client->tls_handshake_failed();
  if (handshake_failed) {
    slot->server->entry.tls_handshake_failures.Inc();
    LOG_EVERY_N(WARNING, 100) << "upstream " << FormatUpstreamAddress(slot->server->entry.address)
                              << ": " << reason;
  }
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
      SendTry(job, attempt->candidate, dns::Transport::kTcp, attempt->edns);
      continue;
    }
    const bool probe = job->kind == JobKind::kHealthProbe;
    OnAttemptFailed(attempt, /*timeout=*/handshake_failed && probe, reason.c_str());
  }
}

void Forwarder::OnReply(Attempt* attempt, std::span<const uint8_t> bytes, dns::Message& message) {
  Job* job = attempt->job;
  Server* server = attempt->server;
  const uint64_t now = clock_.NowMs();
  const uint64_t rtt_ms = now > attempt->sent_ms ? now - attempt->sent_ms : 0;
  if (server->health.down()) {
    LOG(INFO) << "upstream " << FormatUpstreamAddress(server->address) << " answers again";
  }
  server->health.OnReply(rtt_ms);  // it answered: reachable, whatever the rcode
  server->entry.rtt_seconds.Observe(static_cast<double>(rtt_ms) / 1000.0);
  UpdateProbeTimer();
  // With no try in flight (all sent, waiting for a late answer), a late reply is as good as
  // the current one.
  const bool is_current = attempt == job->current || job->current == nullptr;
  const dns::Rcode rcode = message.rcode();

  if (job->kind == JobKind::kHealthProbe) {
    FinishAnswer(job, attempt, bytes, message);
    return;
  }
  // Every reply to a client query, as CoreDNS's forward counts them (a truncated one and its
  // TCP retry are two), for --metrics-compat=coredns only.
  if (server->entry.replies && job->kind == JobKind::kClient) {
    (*server->entry.replies)[UpstreamTable::ReplyRcodeIndex(rcode)].Inc();
  }
  if (message.header.tc && attempt->transport == dns::Transport::kUdp) {
    CloseAttempt(attempt);
    if (!is_current) return;
    counters_.tcp_retries.fetch_add(1, std::memory_order_relaxed);
    job->force_tcp = true;
    SendTry(job, attempt->candidate, dns::Transport::kTcp, attempt->edns);
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
    std::swap(job->error_message, message);
    job->error_attempt = attempt;
    CloseAttempt(attempt);
    if (!is_current) return;
    job->current = nullptr;
    StartNextTry(job);
    return;
  }
  if (job->kind == JobKind::kClient) server->entry.answers.Inc();
  FinishAnswer(job, attempt, bytes, message);
}

}  // namespace kdns::upstream
