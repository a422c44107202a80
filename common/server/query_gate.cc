#include "common/server/query_gate.h"

#include "common/base/clock.h"
#include "common/limits/limits.h"

namespace kdns::server {
namespace {

// How a limited reply to a query whose client came from `source` looks (LimitedReply): a
// forwarder's clients are refused, so that it answers them rather than retrying over TCP.
LimitedReply LimitedReplyFor(ClientSource source) {
  return source == ClientSource::kOption ? LimitedReply::kRefused : LimitedReply::kTruncated;
}

// Counts a client-address option that was ignored.
void CountIgnoredOption(const Admission& admission, const loop::SocketAddress& peer) {
  if (admission.client_source == ClientSource::kUntrusted) {
    limits::RecordLimitHit(limits::Limit::kClientAddressUntrusted, peer.HostString());
  } else if (admission.client_source == ClientSource::kMalformed) {
    limits::RecordLimitHit(limits::Limit::kClientAddressMalformed, peer.HostString());
  }
}

}  // namespace

uint64_t QueryGate::NowNs() const {
  return clients_ != nullptr || responses_ != nullptr ? SteadyNowNs() : 0;
}

QueryGate::Pass QueryGate::Enter(std::span<const uint8_t> packet, dns::Transport transport,
                                 const loop::SocketAddress& peer, uint64_t now_ns,
                                 Admission* admission, std::span<uint8_t> out,
                                 size_t* limited_reply_size) const {
  *limited_reply_size = 0;
  const bool udp = transport == dns::Transport::kUdp;
  // A trusted forwarder's datagrams meet the limiter once parsed, as their client's. TCP
  // is bounded by its connection caps instead.
  const bool from_forwarder = udp && client_address_.Trusts(peer);
  if (udp && !from_forwarder &&
      !PassClients(packet, peer, LimitedReply::kTruncated, now_ns, out, limited_reply_size)) {
    return Pass::kLimited;
  }
  Admit(packet, transport, admission_, admission);
  ResolveClient(peer, client_address_, admission);
  CountIgnoredOption(*admission, peer);
  // A forwarder's connection carries many clients: their queries meet the limiter as their
  // client's, over TCP too.
  const bool as_client = udp ? from_forwarder : admission->client_source == ClientSource::kOption;
  if (as_client &&
      !PassClients(packet, admission->client, LimitedReplyFor(admission->client_source), now_ns,
                   out, limited_reply_size)) {
    return Pass::kLimited;
  }
  return Pass::kHandle;
}

std::span<const uint8_t> QueryGate::Leave(const loop::SocketAddress& client, bool via_forwarder,
                                          std::span<const uint8_t> reply, uint64_t now_ns,
                                          std::span<uint8_t> slip) const {
  if (responses_ == nullptr) return reply;
  const ResponseVerdict verdict = responses_->Check(client, reply, now_ns);
  if (verdict == ResponseVerdict::kSend) return reply;
  limits::RecordLimitHit(limits::Limit::kResponseRate);
  const LimitedReply kind = via_forwarder ? LimitedReply::kRefused : LimitedReply::kTruncated;
  if (verdict == ResponseVerdict::kDrop && kind == LimitedReply::kTruncated) return {};
  return slip.first(WriteLimitedReply(reply, kind, slip));
}

bool QueryGate::PassClients(std::span<const uint8_t> packet, const loop::SocketAddress& client,
                            LimitedReply kind, uint64_t now_ns, std::span<uint8_t> out,
                            size_t* reply_size) const {
  if (clients_ == nullptr) return true;
  const ClientVerdict verdict = clients_->Check(client, now_ns);
  switch (verdict) {
    case ClientVerdict::kPass:
      return true;
    case ClientVerdict::kShed:
      limits::RecordLimitHit(clients_->shed_reason() == Overload::kWaitingQueries
                                 ? limits::Limit::kShedWaitingQueries
                                 : limits::Limit::kShedReceiveBacklog);
      break;
    case ClientVerdict::kSlip:
    case ClientVerdict::kLimited:
      limits::RecordLimitHit(limits::Limit::kClientRate);
      break;
  }
  // Only a query gets a reply: a response is never answered, so we reflect nothing.
  const bool is_query = packet.size() >= dns::kHeaderSize && (packet[2] & 0x80) == 0;
  if (is_query && (kind == LimitedReply::kRefused || verdict == ClientVerdict::kSlip)) {
    *reply_size = WriteLimitedReply(packet, kind, out);
  }
  return false;
}

}  // namespace kdns::server
