#include "common/server/admission.h"

#include <algorithm>

#include "common/dns/builder.h"

namespace kdns::server {
namespace {}  // namespace

dns::Rcode RefusalRcode(Verdict verdict) {
  switch (verdict) {
    case Verdict::kFormErr:
      return dns::Rcode::kFormErr;
    case Verdict::kBadVers:
      return dns::Rcode::kBadVers;
    case Verdict::kNotImp:
      return dns::Rcode::kNotImp;
    case Verdict::kRefused:
      return dns::Rcode::kRefused;
    case Verdict::kAdmitted:
    case Verdict::kDrop:
      break;
  }
  return dns::Rcode::kNoError;
}

namespace {

bool OutsideInternet(const dns::Query& query) {
  return (query.qclass != dns::RrClass::kIn && query.qclass != dns::RrClass::kAny) ||
         query.qtype == dns::RrType::kAxfr || query.qtype == dns::RrType::kIxfr;
}

}  // namespace

QueryShape ShapeOf(const dns::Query& query, size_t packet_size) {
  const dns::Header& header = query.header;
  if (header.ancount != 0 || header.nscount != 0) return QueryShape::kAnswerOrAuthority;
  if (header.arcount != (query.edns ? 1 : 0)) return QueryShape::kExtraAdditional;
  if (query.message_end != packet_size) return QueryShape::kTrailingBytes;
  return QueryShape::kOk;
}

dns::Query Detach(const dns::Query& query) {
  dns::Query copy = query;
  if (copy.edns) copy.edns->options = {};
  return copy;
}

size_t ReplyLimit(const dns::Query& query, dns::Transport transport) {
  if (transport == dns::Transport::kTcp) return dns::kMaxMessageSize;
  if (!query.edns) return dns::kMaxUdpSizeWithoutEdns;
  return std::min<size_t>(query.edns->PayloadSize(), kMaxUdpReplyBytes);
}

void Admit(std::span<const uint8_t> packet, dns::Transport transport, const AdmissionPolicy& policy,
           Admission* admission) {
  admission->transport = transport;
  admission->shape = QueryShape::kOk;
  const dns::ParseError error = dns::ParseQuery(packet, &admission->query);
  const dns::Query& query = admission->query;
  admission->reply_limit_bytes = ReplyLimit(query, transport);
  if (packet.size() < dns::kHeaderSize || query.header.qr) {
    admission->verdict = Verdict::kDrop;
  } else if (error != dns::ParseError::kOk) {  // NOLINT(bugprone-branch-clone): the
    // checks' order is the verdicts' precedence, so two of them give FORMERR apart.
    admission->verdict = Verdict::kFormErr;
  } else if (query.edns && query.edns->version != 0) {
    admission->verdict = Verdict::kBadVers;
  } else if (query.header.opcode != dns::Opcode::kQuery) {
    admission->verdict = Verdict::kNotImp;
  } else if ((admission->shape = ShapeOf(query, packet.size())) != QueryShape::kOk) {
    admission->verdict = Verdict::kFormErr;
  } else if (policy.classes == ClassScope::kInternetOnly && OutsideInternet(query)) {
    admission->verdict = Verdict::kRefused;
  } else {
    admission->verdict = Verdict::kAdmitted;
  }
}

std::span<const uint8_t> WriteRefusal(const Admission& admission, std::span<uint8_t> out) {
  if (admission.verdict == Verdict::kFormErr) {
    const dns::Header& asked = admission.query.header;
    dns::MessageBuilder builder(out, dns::kMaxUdpSizeWithoutEdns);
    builder.header().id = asked.id;
    builder.header().qr = true;
    builder.header().opcode = asked.opcode;
    builder.header().rd = asked.rd;
    builder.header().rcode = dns::Rcode::kFormErr;
    return builder.Finish();
  }
  if (admission.verdict == Verdict::kAdmitted || admission.verdict == Verdict::kDrop) return {};
  return WriteEmptyResponse(admission.query, RefusalRcode(admission.verdict), /*aa=*/false, out);
}

std::span<const uint8_t> WriteEmptyResponse(const dns::Query& query, dns::Rcode rcode, bool aa,
                                            std::span<uint8_t> out) {
  // Header, question and OPT always fit in 512 bytes.
  dns::MessageBuilder builder(out, dns::kMaxUdpSizeWithoutEdns);
  if (builder.StartResponse(query) != dns::BuildError::kOk) return {};
  builder.header().ra = true;
  builder.header().aa = aa;
  builder.header().rcode = rcode;
  if (query.edns) (void)builder.SetEdns(dns::EdnsView{});
  return builder.Finish();
}

}  // namespace kdns::server
