#include "common/upstream/wire.h"

#include <algorithm>
#include <array>

#include "common/dns/builder.h"
#include "common/dns/header.h"
#include "common/loop/socket_address.h"

namespace kdns::upstream {

const char* MatchName(Match match) {
  switch (match) {
    case Match::kOk:
      return "ok";
    case Match::kMalformed:
      return "malformed";
    case Match::kNotResponse:
      return "not a response";
    case Match::kWrongId:
      return "wrong id";
    case Match::kWrongQuestion:
      return "wrong question";
    case Match::kWrongCase:
      return "wrong 0x20 case";
  }
  return "?";
}

Request Request::FromQuery(const dns::Query& query, dns::Transport client_transport,
                           const loop::SocketAddress& client) {
  Request request;
  request.qname = query.qname;
  request.qtype = query.qtype;
  request.qclass = query.qclass;
  request.dnssec_ok = query.edns && query.edns->dnssec_ok;
  request.checking_disabled = query.header.cd;
  request.client_transport = client_transport;
  request.client = client;
  return request;
}

bool BuildQuery(const Request& request, uint16_t id, EdnsMode edns, uint16_t udp_payload_bytes,
                std::vector<uint8_t>* out, const dns::Name* qname_0x20,
                std::optional<uint16_t> client_address_option) {
  // Header, the longest name, type and class, and the OPT record with its one option.
  std::array<uint8_t, dns::kHeaderSize + dns::Name::kMaxWireLength + 4 + dns::kOptFixedSize +
                          dns::kMaxClientAddressOptionBytes>
      buffer;
  std::array<uint8_t, dns::kMaxClientAddressOptionBytes> option;
  dns::MessageBuilder builder(buffer);
  builder.header().id = id;
  builder.header().rd = true;
  builder.header().cd = request.checking_disabled;
  if (edns == EdnsMode::kWithEdns) {
    dns::EdnsView view;
    view.udp_payload_size = udp_payload_bytes;
    view.dnssec_ok = request.dnssec_ok;
    if (client_address_option && (request.client.is_v4() || request.client.is_v6())) {
      const dns::ClientAddress client{loop::IpOf(request.client), request.client.port()};
      view.options = std::span<const uint8_t>(option).first(
          dns::WriteClientAddressOption(client, *client_address_option, option));
    }
    if (builder.SetEdns(view) != dns::BuildError::kOk) return false;
  }
  const dns::Name& qname = qname_0x20 != nullptr ? *qname_0x20 : request.qname;
  if (builder.AddQuestion(qname, request.qtype, request.qclass) != dns::BuildError::kOk) {
    return false;
  }
  std::span<const uint8_t> packet = builder.Finish();
  out->assign(packet.begin(), packet.end());
  return true;
}

namespace {

bool MayOmitQuestion(dns::Rcode rcode) {
  return rcode == dns::Rcode::kFormErr || rcode == dns::Rcode::kServFail ||
         rcode == dns::Rcode::kNotImp || rcode == dns::Rcode::kRefused;
}

// The question's name, type and class against ours; the name ignoring case, then, with 0x20,
// byte for byte.
Match MatchQuestion(const dns::Name& name, dns::RrType type, dns::RrClass cls,
                    const Request& request, const dns::Name* qname_0x20) {
  if (type != request.qtype || cls != request.qclass || !(name == request.qname)) {
    return Match::kWrongQuestion;
  }
  if (qname_0x20 != nullptr && !name.IdenticalTo(*qname_0x20)) return Match::kWrongCase;
  return Match::kOk;
}

// ReplyDecode::kQuestion for a reply with one question: the query fast path's decoder walks
// the same structure (it does not look at QR), with no record kept. Bytes after the last
// record are tolerated, as by ParseMessage with TrailingData::kIgnore.
Match MatchQuestionOnly(std::span<const uint8_t> reply, const Request& request,
                        const dns::Name* qname_0x20, dns::Message* parsed, size_t* reply_end) {
  dns::Query decoded;
  if (dns::ParseQuery(reply, &decoded) != dns::ParseError::kOk) return Match::kMalformed;
  const Match match =
      MatchQuestion(decoded.qname, decoded.qtype, decoded.qclass, request, qname_0x20);
  if (match != Match::kOk) return match;
  parsed->header = decoded.header;
  // Reused capacity: the caller's Message keeps its one question's room between replies.
  parsed->questions.resize(1);
  parsed->questions.front().name = decoded.qname;
  parsed->questions.front().type = decoded.qtype;
  parsed->questions.front().cls = decoded.qclass;
  parsed->answers.clear();
  parsed->authorities.clear();
  parsed->additionals.clear();
  parsed->edns.reset();
  if (decoded.edns.has_value()) parsed->edns = dns::Edns::FromView(*decoded.edns);
  if (reply_end != nullptr) *reply_end = decoded.message_end;
  return Match::kOk;
}

}  // namespace

Match MatchReply(std::span<const uint8_t> reply, uint16_t id, const Request& request,
                 dns::Message* parsed, size_t* reply_end, ReplyDecode decode,
                 const dns::Name* qname_0x20) {
  dns::Header header;
  if (dns::ParseHeader(reply, &header) != dns::ParseError::kOk) return Match::kMalformed;
  if (!header.qr || header.opcode != dns::Opcode::kQuery) return Match::kNotResponse;
  if (header.id != id) return Match::kWrongId;
  if (header.qdcount > 1) return Match::kWrongQuestion;
  if (decode == ReplyDecode::kQuestion && header.qdcount == 1) {
    return MatchQuestionOnly(reply, request, qname_0x20, parsed, reply_end);
  }
  // Bytes after the last record are tolerated, as some servers pad.
  if (dns::ParseMessage(reply, parsed, dns::TrailingData::kIgnore, reply_end) !=
      dns::ParseError::kOk) {
    return Match::kMalformed;
  }
  if (parsed->questions.empty()) {
    return MayOmitQuestion(parsed->rcode()) ? Match::kOk : Match::kWrongQuestion;
  }
  const dns::Question& question = parsed->questions.front();
  return MatchQuestion(question.name, question.type, question.cls, request, qname_0x20);
}

bool RewriteForClient(std::span<uint8_t> reply, uint16_t client_id, const dns::Name& client_qname) {
  if (reply.size() < dns::kHeaderSize) return false;
  reply[0] = static_cast<uint8_t>(client_id >> 8);
  reply[1] = static_cast<uint8_t>(client_id & 0xFF);
  const uint16_t qdcount = static_cast<uint16_t>(reply[4] << 8 | reply[5]);
  if (qdcount == 0) return true;
  std::span<const uint8_t> wire = client_qname.wire();
  if (reply.size() < dns::kHeaderSize + wire.size()) return true;
  std::span<uint8_t> name = reply.subspan(dns::kHeaderSize, wire.size());
  // Same label lengths at the same places (so no compression pointer) and the same
  // letters ignoring case: then only the case differs and the client's spelling fits.
  for (size_t i = 0; i < wire.size(); ++i) {
    if (dns::ToLowerAscii(name[i]) != dns::ToLowerAscii(wire[i])) return true;
  }
  std::copy(wire.begin(), wire.end(), name.begin());
  return true;
}

}  // namespace kdns::upstream
