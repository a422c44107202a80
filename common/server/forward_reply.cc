#include "common/server/forward_reply.h"

#include <glog/logging.h>

#include <algorithm>
#include <cstring>

#include "common/dns/builder.h"
#include "common/dns/edns.h"
#include "common/dns/header.h"
#include "common/upstream/wire.h"

namespace kdns::server {
namespace {

constexpr uint8_t kTcBit = 0x02;  // RFC 1035 §4.1.1, in the third header octet

void StoreU16(uint8_t* p, uint16_t value) {
  p[0] = static_cast<uint8_t>(value >> 8);
  p[1] = static_cast<uint8_t>(value);
}
uint16_t LoadU16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }

// Appends our OPT record (RFC 6891 §6.1.2: our payload size, rcode 0 as the reply carried
// none, version 0, the DO bit given, no options) at `message`'s end and counts it.
void AppendOpt(std::span<uint8_t> message, bool dnssec_ok) {
  uint8_t* opt = message.data() + message.size() - dns::kOptFixedSize;
  opt[0] = 0;  // root
  StoreU16(opt + 1, static_cast<uint16_t>(dns::RrType::kOpt));
  StoreU16(opt + 3, dns::kDefaultUdpPayloadSize);
  StoreU16(opt + 5, 0);
  StoreU16(opt + 7, dnssec_ok ? 0x8000u : 0u);
  StoreU16(opt + 9, 0);
  StoreU16(message.data() + 10, static_cast<uint16_t>(LoadU16(message.data() + 10) + 1));
}

// The client's ID and its spelling of the question name on `reply` (header and question).
bool EchoClient(std::span<uint8_t> reply, const dns::Query& query, QuestionEcho echo) {
  if (echo == QuestionEcho::kIfSameName) {
    return upstream::RewriteForClient(reply, query.header.id, query.qname);
  }
  const std::span<const uint8_t> name = query.qname.wire();
  DCHECK_GE(reply.size(), dns::kHeaderSize + name.size());
  StoreU16(reply.data(), query.header.id);
  std::memcpy(reply.data() + dns::kHeaderSize, name.data(), name.size());
  return true;
}

// Re-encodes `upstream_reply` for the client into *out, cut at a whole RRset (kWholeRRsets).
bool Reencode(const dns::Message& upstream_reply, const dns::Query& query, size_t limit_bytes,
              std::vector<uint8_t>* out) {
  dns::Message reply = upstream_reply;
  reply.header.id = query.header.id;
  if (!reply.questions.empty()) {
    const dns::Name shared = reply.questions.front().name;  // a coalesced query's spelling
    reply.questions.front().name = query.qname;
    for (auto* section : {&reply.answers, &reply.authorities, &reply.additionals}) {
      for (auto& record : *section) {
        if (record.owner.IdenticalTo(shared)) record.owner = query.qname;
      }
    }
  }
  dns::Rcode rcode = upstream_reply.rcode();
  if (query.edns.has_value()) {
    dns::Edns edns;  // ours: 1232, no options
    edns.dnssec_ok = upstream_reply.edns && upstream_reply.edns->dnssec_ok;
    edns.extended_rcode = static_cast<uint8_t>(static_cast<uint16_t>(rcode) >> 4);
    reply.edns = edns;
  } else {
    reply.edns.reset();
    if (static_cast<uint16_t>(rcode) > 15) rcode = dns::Rcode::kServFail;  // needs EDNS
  }
  reply.header.rcode = rcode;
  return dns::BuildMessage(reply, limit_bytes, out) == dns::BuildError::kOk;
}

}  // namespace

ClientQuery ClientQuery::From(const Admission& admission) {
  const dns::Query& query = admission.query;
  ClientQuery client;
  client.qname = query.qname;
  client.qtype = query.qtype;
  client.qclass = query.qclass;
  client.id = query.header.id;
  client.limit_bytes =
      static_cast<uint16_t>(std::min(admission.reply_limit_bytes, dns::kMaxMessageSize));
  client.rd = query.header.rd;
  client.cd = query.header.cd;
  client.edns = query.edns.has_value();
  client.dnssec_ok = query.edns && query.edns->dnssec_ok;
  client.transport = admission.transport;
  return client;
}

dns::Query ClientQuery::query() const {
  dns::Query query;
  query.header.id = id;
  query.header.opcode = dns::Opcode::kQuery;  // admitted: nothing else reaches a handler
  query.header.rd = rd;
  query.header.cd = cd;
  query.header.qdcount = 1;
  query.header.arcount = edns ? 1 : 0;
  query.qname = qname;
  query.qtype = qtype;
  query.qclass = qclass;
  if (edns) {
    dns::EdnsView view;
    view.dnssec_ok = dnssec_ok;
    query.edns = view;
  }
  query.question_end = dns::kHeaderSize + qname.wire().size() + 4;
  return query;
}

ReplyToFit ReplyToFit::From(const upstream::Result& result) {
  const dns::Message& message = result.message;
  ReplyToFit reply;
  reply.wire = result.reply;
  reply.question_end = dns::kHeaderSize;
  if (!message.questions.empty()) {
    reply.question_end += message.questions.front().name.wire().size() + 4;
  }
  reply.has_opt = message.edns.has_value();
  reply.dnssec_ok = message.edns && message.edns->dnssec_ok;
  reply.message = &message;
  return reply;
}

Fitted FitReply(const ReplyToFit& reply, const dns::Query& query, size_t limit_bytes,
                Truncation truncation, std::span<uint8_t> out, std::vector<uint8_t>* scratch) {
  const size_t limit = std::min({limit_bytes, out.size(), dns::kMaxMessageSize});
  if (reply.echo == QuestionEcho::kKnownSame &&
      reply.question_end != dns::kHeaderSize + query.qname.wire().size() + 4) {
    return {};
  }
  const bool client_edns = query.edns.has_value();
  // kEmpty appends our OPT to a reply that has none; kWholeRRsets passes the reply's own.
  DCHECK(truncation != Truncation::kEmpty || !reply.has_opt);
  const size_t opt_size = truncation == Truncation::kEmpty && client_edns ? dns::kOptFixedSize : 0;
  const bool opt_as_is = truncation == Truncation::kEmpty || reply.has_opt == client_edns;

  if (opt_as_is && reply.wire.size() + opt_size <= limit) {
    // The common case: the bytes as they are, with the client's ID and question case.
    const size_t size = reply.wire.size() + opt_size;
    std::memcpy(out.data(), reply.wire.data(), reply.wire.size());
    if (!EchoClient(out.first(reply.wire.size()), query, reply.echo)) return {};
    if (opt_size > 0) AppendOpt(out.first(size), reply.dnssec_ok);
    return {out.first(size), false};
  }

  switch (truncation) {
    case Truncation::kWholeRRsets: {
      // Too big for the client, or EDNS to add or remove: re-encode.
      DCHECK(reply.message != nullptr && scratch != nullptr);
      if (reply.message == nullptr || scratch == nullptr ||
          !Reencode(*reply.message, query, limit_bytes, scratch)) {
        return {};
      }
      const bool cut = scratch->size() > 2 && ((*scratch)[2] & kTcBit) && !reply.message->header.tc;
      return {*scratch, cut};
    }
    case Truncation::kEmpty: {
      const size_t size = reply.question_end + opt_size;
      if (size > limit || reply.question_end < dns::kHeaderSize ||
          reply.question_end > reply.wire.size()) {
        return {};
      }
      std::memcpy(out.data(), reply.wire.data(), reply.question_end);
      if (!EchoClient(out.first(reply.question_end), query, reply.echo)) return {};
      out[2] |= kTcBit;
      std::memset(out.data() + 6, 0, 6);  // ANCOUNT, NSCOUNT, ARCOUNT
      if (opt_size > 0) AppendOpt(out.first(size), reply.dnssec_ok);
      return {out.first(size), true};
    }
  }
  return {};
}

}  // namespace kdns::server
