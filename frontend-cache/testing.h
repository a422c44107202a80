// Helpers for frontend-cache's unit tests (header-only, not part of the library): client
// queries and upstream replies built with the codec.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/parser.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"

namespace kdns::frontend::testing {

enum class Edns : uint8_t { kNone, kPlain, kDnssecOk };

// A client's query (dns::testing::QuerySpec) and its parse, in this suite's terms.
inline dns::testing::ParsedQuery MakeQuery(std::string_view name, dns::RrType type,
                                           uint16_t id = 0x1234, Edns edns = Edns::kNone,
                                           dns::RrClass cls = dns::RrClass::kIn) {
  dns::testing::QuerySpec spec(name);
  spec.Type(type).Class(cls).Id(id);
  if (edns != Edns::kNone) spec.Edns();
  if (edns == Edns::kDnssecOk) spec.DnssecOk();
  return spec.Parsed();
}

struct Reply {
  std::string qname;
  dns::RrType type = dns::RrType::kA;
  dns::Rcode rcode = dns::Rcode::kNoError;
  std::vector<std::string> answers;  // presentation form, as RR()
  std::vector<std::string> authorities;
  std::vector<std::string> additionals;
  bool edns = true;
  bool tc = false;
  bool ad = false;
};

inline std::vector<uint8_t> MakeReply(const Reply& reply) {
  dns::Message message;
  message.header.id = 0x9999;
  message.header.qr = true;
  message.header.rd = true;
  message.header.ra = true;
  message.header.tc = reply.tc;
  message.header.ad = reply.ad;
  message.header.rcode = reply.rcode;
  message.questions.push_back({dns::testing::N(reply.qname), reply.type, dns::RrClass::kIn});
  for (const auto& text : reply.answers) message.answers.push_back(dns::testing::RR(text));
  for (const auto& text : reply.authorities) message.authorities.push_back(dns::testing::RR(text));
  for (const auto& text : reply.additionals) message.additionals.push_back(dns::testing::RR(text));
  if (reply.edns) {
    dns::Edns edns;
    edns.udp_payload_size = 4096;
    edns.options = {0, 3, 0, 2, 'n', 's'};  // NSID "ns": must not reach clients from cache
    message.edns = edns;
  }
  std::vector<uint8_t> bytes;
  REQUIRE(dns::BuildMessage(message, dns::kMaxMessageSize, &bytes) == dns::BuildError::kOk);
  return bytes;
}

inline dns::Message Parse(std::span<const uint8_t> bytes) {
  dns::Message message;
  REQUIRE(dns::ParseMessage(bytes, &message) == dns::ParseError::kOk);
  return message;
}

}  // namespace kdns::frontend::testing
