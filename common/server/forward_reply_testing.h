// Test inputs shared by the byte pins of reply fitting: common/server/forward_reply_test.cc
// pins kubedns's style (Truncation::kWholeRRsets) and frontend-cache/cached_response_test.cc
// pins frontend-cache's (Truncation::kEmpty, over its cached form) from the same client
// queries and upstream replies, so the two styles read side by side. The pinned bytes were
// taken from the implementations before the two were unified (kubedns's ClientReply,
// frontend-cache's own writer). UpstreamReply builds an upstream's answer for the kubedns
// fitting and chase tests. Header-only; tests only; no thread affinity.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/parser.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"
#include "common/server/admission.h"
#include "common/upstream/forwarder.h"

namespace kdns::server::testing {

// FNV-1a, 64 bits: a short fingerprint of replies too long to spell out.
inline uint64_t Fnv1a(std::span<const uint8_t> bytes) {
  uint64_t hash = 0xcbf29ce484222325u;
  for (uint8_t byte : bytes) hash = (hash ^ byte) * 0x100000001b3u;
  return hash;
}

inline std::string Hex(std::span<const uint8_t> bytes) {
  std::string out;
  char digits[3];
  for (uint8_t byte : bytes) {
    std::snprintf(digits, sizeof digits, "%02x", byte);
    out += digits;
  }
  return out;
}

// A client's A query for `name` (ID 0xbeef, RD), with EDNS (`payload`, DO) when given.
inline std::vector<uint8_t> PinQuery(const char* name, std::optional<uint16_t> payload,
                                     bool dnssec_ok = false) {
  dns::testing::QuerySpec spec(name);
  spec.Id(0xbeef);
  if (payload) spec.Edns(*payload);
  if (payload && dnssec_ok) spec.DnssecOk();
  return spec.Bytes();
}

// `bytes` admitted over `transport` (the reply limit follows from both).
inline Admission PinAdmit(std::span<const uint8_t> bytes, dns::Transport transport) {
  Admission admission;
  Admit(bytes, transport, AdmissionPolicy{}, &admission);
  REQUIRE(admission.admitted());
  return admission;
}

// An upstream's reply (ID 0x1111, AA RD RA) for `name` as the upstream spells it, with
// `answers`, and its OPT (payload 4096, DO, an NSID option "ns") when `edns`.
inline upstream::Result PinUpstream(const char* name, const std::vector<std::string>& answers,
                                    bool edns) {
  upstream::Result result;
  result.outcome = upstream::ForwardOutcome::kAnswer;
  dns::Message m;
  m.header.id = 0x1111;
  m.header.qr = true;
  m.header.aa = true;
  m.header.rd = true;
  m.header.ra = true;
  m.questions.push_back({dns::testing::N(name), dns::RrType::kA, dns::RrClass::kIn});
  for (const auto& text : answers) m.answers.push_back(dns::testing::RR(text));
  if (edns) {
    dns::Edns opt;
    opt.udp_payload_size = 4096;
    opt.dnssec_ok = true;
    opt.options = {0, 3, 0, 2, 'n', 's'};
    m.edns = opt;
  }
  REQUIRE(dns::BuildMessage(m, dns::kMaxMessageSize, &result.reply) == dns::BuildError::kOk);
  REQUIRE(dns::ParseMessage(result.reply, &result.message) == dns::ParseError::kOk);
  return result;
}

// One address for www.example.com.
inline std::vector<std::string> PinSmall() { return {"www.example.com. 60 IN A 192.0.2.1"}; }

// big.example.com.: a CNAME and 100 addresses, 1600 bytes and more on the wire.
inline std::vector<std::string> PinBig() {
  std::vector<std::string> records = {"big.example.com. 60 IN CNAME pool.example.com."};
  for (int i = 0; i < 100; ++i) {
    records.push_back("pool.example.com. 60 IN A 198.51.100." + std::to_string(i));
  }
  return records;
}

// An upstream's reply to `name` (as the upstream spelt it), with `records` as its answers.
inline upstream::Result UpstreamReply(const char* name, dns::RrType type,
                                      std::vector<dns::ResourceRecord> records, bool edns,
                                      dns::Rcode rcode = dns::Rcode::kNoError,
                                      std::vector<dns::ResourceRecord> authorities = {}) {
  upstream::Result result;
  result.outcome = upstream::ForwardOutcome::kAnswer;
  dns::Message& m = result.message;
  m.header.id = 0x1111;
  m.header.qr = true;
  m.header.rd = true;
  m.header.ra = true;
  m.header.rcode = rcode;
  m.questions.push_back({dns::testing::N(name), type, dns::RrClass::kIn});
  m.answers = std::move(records);
  m.authorities = std::move(authorities);
  if (edns) m.edns = dns::Edns{};
  REQUIRE(dns::BuildMessage(m, dns::kMaxMessageSize, &result.reply) == dns::BuildError::kOk);
  REQUIRE(dns::ParseMessage(result.reply, &m) == dns::ParseError::kOk);
  return result;
}

}  // namespace kdns::server::testing
