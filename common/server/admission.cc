#include "common/server/admission.h"

#include <glog/logging.h>

#include <algorithm>

#include "common/dns/builder.h"
#include "common/loop/socket_address.h"

namespace kdns::server {

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

std::vector<IpPrefix> DefaultClientAddressPeers() {
  std::vector<IpPrefix> prefixes;
  std::string error;
  CHECK(ParsePrefixList(kDefaultClientAddressPeers, &prefixes, &error)) << error;
  return prefixes;
}

bool ParseClientAddressOption(int64_t value, uint16_t* code, std::string* error) {
  if (value < dns::kMinPrivateOptionCode || value > dns::kMaxPrivateOptionCode) {
    *error = "--client-address-option=" + std::to_string(value) +
             ": must be a private-use EDNS option code, " +
             std::to_string(dns::kMinPrivateOptionCode) + ".." +
             std::to_string(dns::kMaxPrivateOptionCode);
    return false;
  }
  *code = static_cast<uint16_t>(value);
  return true;
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

bool ClientAddressPolicy::Trusts(const loop::SocketAddress& peer) const {
  if (trusted.empty() || (!peer.is_v4() && !peer.is_v6())) return false;
  const IpAddress address = loop::IpOf(peer);
  return std::any_of(trusted.begin(), trusted.end(),
                     [&](const IpPrefix& prefix) { return prefix.Contains(address); });
}

void ResolveClient(const loop::SocketAddress& peer, const ClientAddressPolicy& policy,
                   Admission* admission) {
  admission->client = peer;
  admission->client_source = ClientSource::kPeer;
  const std::optional<dns::EdnsView>& edns = admission->query.edns;
  if (policy.trusted.empty() || !edns || edns->options.empty()) return;
  dns::ClientAddress client;
  const dns::ClientAddressFound found =
      dns::FindClientAddress(edns->options, policy.option_code, &client);
  if (found == dns::ClientAddressFound::kAbsent) return;
  if (!policy.Trusts(peer)) {
    admission->client_source = ClientSource::kUntrusted;
  } else if (found == dns::ClientAddressFound::kMalformed) {
    admission->client_source = ClientSource::kMalformed;
  } else {
    admission->client = loop::SocketAddressOf(client.address, client.port);
    admission->client_source = ClientSource::kOption;
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
