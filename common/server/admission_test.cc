#include "common/server/admission.h"

#include <catch2/catch.hpp>
#include <optional>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"

namespace kdns::server {
namespace {

using dns::testing::N;
using dns::testing::Parse;

using dns::testing::QuerySpec;

// The query the tests vary: Example.com. A IN, ID 0x1234 (the echo keeps the name's case).
QuerySpec Asked() {
  QuerySpec asked("Example.com.");
  asked.Id(0x1234);
  return asked;
}
QuerySpec Edns(std::optional<uint16_t> payload, uint8_t version = 0) {
  QuerySpec asked = Asked();
  if (payload) asked.Edns(*payload).EdnsVersion(version);
  return asked;
}
QuerySpec OfClass(dns::RrClass cls) { return Asked().Class(cls); }
QuerySpec OfType(dns::RrType type, std::optional<uint16_t> payload = std::nullopt) {
  return Edns(payload).Type(type);
}
QuerySpec WithOpcode(dns::Opcode opcode) { return Asked().Operation(opcode); }

Admission AdmitBytes(std::span<const uint8_t> packet,
                     dns::Transport transport = dns::Transport::kUdp,
                     ClassScope classes = ClassScope::kAny) {
  Admission admission;
  Admit(packet, transport, AdmissionPolicy{classes}, &admission);
  return admission;
}

TEST_CASE("a well-formed query is admitted with its parsed question", "[server][admission]") {
  auto packet = Asked().Bytes();
  Admission admission = AdmitBytes(packet);
  CHECK(admission.admitted());
  CHECK(admission.query.qname.IdenticalTo(N("Example.com.")));
  CHECK(admission.query.header.id == 0x1234);
  std::vector<uint8_t> out(512);
  CHECK(WriteRefusal(admission, out).empty());
}

TEST_CASE("what is not a query is dropped without a reply", "[server][admission]") {
  const uint8_t short_packet[5] = {1, 2, 3, 4, 5};
  CHECK(AdmitBytes(short_packet).verdict == Verdict::kDrop);
  auto response = Asked().Bytes();
  response[2] |= 0x80;  // QR
  Admission admission = AdmitBytes(response);
  CHECK(admission.verdict == Verdict::kDrop);
  std::vector<uint8_t> out(512);
  CHECK(WriteRefusal(admission, out).empty());
}

TEST_CASE("a malformed query gets FORMERR with its ID and no question", "[server][admission]") {
  auto packet = Asked().Bytes();
  packet.resize(packet.size() - 3);
  Admission admission = AdmitBytes(packet);
  REQUIRE(admission.verdict == Verdict::kFormErr);
  std::vector<uint8_t> out(512);
  dns::Message reply = Parse(WriteRefusal(admission, out));
  CHECK(reply.header.id == 0x1234);
  CHECK(reply.header.qr);
  CHECK(reply.header.rd);
  CHECK(reply.rcode() == dns::Rcode::kFormErr);
  CHECK(reply.questions.empty());
}

// `packet` with one more A record for example.com. in `section` (1 answer, 2 authority,
// 3 additional), before any OPT so that OPT stays last, and its count raised.
std::vector<uint8_t> WithRecord(std::vector<uint8_t> packet, int section) {
  const uint8_t record[] = {0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1};
  Admission parsed = AdmitBytes(packet);
  const size_t at = parsed.query.question_end;
  packet.insert(packet.begin() + static_cast<ptrdiff_t>(at), std::begin(record), std::end(record));
  const size_t count_at = 4 + 2 * static_cast<size_t>(section);
  packet[count_at + 1] = static_cast<uint8_t>(packet[count_at + 1] + 1);
  return packet;
}

TEST_CASE("a query that carries more than its question and OPT gets FORMERR",
          "[server][admission]") {
  const bool edns = GENERATE(false, true);
  CAPTURE(edns);
  const auto packet = Edns(edns ? std::optional<uint16_t>(1232) : std::nullopt).Bytes();
  REQUIRE(AdmitBytes(packet).admitted());
  struct Case {
    const char* what;
    std::vector<uint8_t> bytes;
    QueryShape shape;
  };
  std::vector<uint8_t> trailing = packet;
  trailing.insert(trailing.end(), {0, 0, 0, 0});
  std::vector<uint8_t> padded = packet;  // a query padded up to a large size with zeros
  padded.resize(60'000, 0);
  const std::vector<Case> cases = {
      {"an answer record", WithRecord(packet, 1), QueryShape::kAnswerOrAuthority},
      {"an authority record", WithRecord(packet, 2), QueryShape::kAnswerOrAuthority},
      {"an additional record besides OPT", WithRecord(packet, 3), QueryShape::kExtraAdditional},
      {"four bytes after the last record", trailing, QueryShape::kTrailingBytes},
      {"zeros up to 60000 bytes", padded, QueryShape::kTrailingBytes},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    for (auto transport : {dns::Transport::kUdp, dns::Transport::kTcp}) {
      Admission admission = AdmitBytes(c.bytes, transport, ClassScope::kInternetOnly);
      REQUIRE(admission.verdict == Verdict::kFormErr);
      CHECK(admission.shape == c.shape);
      std::vector<uint8_t> out(512);
      dns::Message reply = Parse(WriteRefusal(admission, out));
      CHECK(reply.rcode() == dns::Rcode::kFormErr);
      CHECK(reply.header.id == 0x1234);
    }
  }
}

TEST_CASE("a second OPT, or an OPT outside the additional section, gets FORMERR",
          "[server][admission]") {
  const auto packet = Edns(1232).Bytes();
  const std::vector<uint8_t> opt(packet.end() - 11, packet.end());
  std::vector<uint8_t> two = packet;
  two.insert(two.end(), opt.begin(), opt.end());
  two[11] = 2;
  CHECK(AdmitBytes(two).verdict == Verdict::kFormErr);
  std::vector<uint8_t> in_answer = packet;
  in_answer[7] = 1;  // the OPT counted as an answer
  in_answer[11] = 0;
  CHECK(AdmitBytes(in_answer).verdict == Verdict::kFormErr);
}

TEST_CASE("other opcodes get NOTIMP even with records in their sections", "[server][admission]") {
  auto notify = WithRecord(WithOpcode(dns::Opcode::kNotify).Bytes(), 1);  // RFC 1996: SOA
  CHECK(AdmitBytes(notify).verdict == Verdict::kNotImp);
}

TEST_CASE("EDNS version, opcode and (for kInternetOnly) class decide the refusal",
          "[server][admission]") {
  struct Case {
    QuerySpec asked;
    ClassScope classes;
    Verdict verdict;
    dns::Rcode rcode;
  };
  auto c = GENERATE(
      Case{Edns(1232, 1), ClassScope::kAny, Verdict::kBadVers, dns::Rcode::kBadVers},
      Case{WithOpcode(dns::Opcode::kStatus), ClassScope::kAny, Verdict::kNotImp,
           dns::Rcode::kNotImp},
      Case{Edns(1232, 1), ClassScope::kInternetOnly, Verdict::kBadVers, dns::Rcode::kBadVers},
      Case{OfClass(dns::RrClass::kCh), ClassScope::kInternetOnly, Verdict::kRefused,
           dns::Rcode::kRefused},
      Case{OfType(dns::RrType::kAxfr), ClassScope::kInternetOnly, Verdict::kRefused,
           dns::Rcode::kRefused},
      Case{OfType(dns::RrType::kIxfr, 1232), ClassScope::kInternetOnly, Verdict::kRefused,
           dns::Rcode::kRefused},
      Case{OfClass(dns::RrClass::kCh), ClassScope::kAny, Verdict::kAdmitted, dns::Rcode::kNoError},
      Case{OfType(dns::RrType::kAxfr), ClassScope::kAny, Verdict::kAdmitted, dns::Rcode::kNoError},
      Case{OfClass(dns::RrClass::kAny), ClassScope::kInternetOnly, Verdict::kAdmitted,
           dns::Rcode::kNoError});
  auto packet = c.asked.Bytes();
  Admission admission = AdmitBytes(packet, dns::Transport::kUdp, c.classes);
  REQUIRE(admission.verdict == c.verdict);
  CHECK(RefusalRcode(admission.verdict) == c.rcode);
  if (c.verdict == Verdict::kAdmitted) return;
  std::vector<uint8_t> out(512);
  dns::Message reply = Parse(WriteRefusal(admission, out));
  CHECK(reply.rcode() == c.rcode);
  CHECK(reply.header.id == 0x1234);
  CHECK(reply.header.ra);
  CHECK_FALSE(reply.header.aa);
  REQUIRE(reply.questions.size() == 1);
  CHECK(reply.questions[0].name.IdenticalTo(N("Example.com.")));
  CHECK(reply.edns.has_value() == c.asked.has_edns());  // OPT only when asked with one
}

TEST_CASE("the reply limit follows the transport and the client's EDNS size",
          "[server][admission]") {
  struct Case {
    std::optional<uint16_t> payload;
    dns::Transport transport;
    size_t limit;
  };
  auto c = GENERATE(Case{std::nullopt, dns::Transport::kUdp, 512},
                    Case{100, dns::Transport::kUdp, 512},  // below 512 counts as 512
                    Case{1000, dns::Transport::kUdp, 1000},
                    Case{4096, dns::Transport::kUdp, 1232},  // capped: no fragments
                    Case{std::nullopt, dns::Transport::kTcp, 65535},
                    Case{4096, dns::Transport::kTcp, 65535});
  auto packet = Edns(c.payload).Bytes();
  Admission admission = AdmitBytes(packet, c.transport);
  CHECK(admission.transport == c.transport);
  CHECK(admission.reply_limit_bytes == c.limit);
}

TEST_CASE("WriteEmptyResponse echoes the question with RA, AA as asked, and OPT when sent",
          "[server][admission]") {
  const bool edns = GENERATE(false, true);
  auto packet = Edns(edns ? std::optional<uint16_t>(4096) : std::nullopt).Bytes();
  Admission admission = AdmitBytes(packet);
  std::vector<uint8_t> out(512);
  dns::Message reply =
      Parse(WriteEmptyResponse(admission.query, dns::Rcode::kNxDomain, /*aa=*/true, out));
  CHECK(reply.rcode() == dns::Rcode::kNxDomain);
  CHECK(reply.header.aa);
  CHECK(reply.header.ra);
  CHECK(reply.answers.empty());
  CHECK(reply.edns.has_value() == edns);
  if (edns) CHECK(reply.edns->udp_payload_size == 1232);
}

TEST_CASE("a detached query keeps the question and drops the EDNS options", "[server][admission]") {
  auto packet = Edns(1232).Bytes();
  Admission admission = AdmitBytes(packet);
  dns::Query copy = Detach(admission.query);
  CHECK(copy.qname.IdenticalTo(admission.query.qname));
  REQUIRE(copy.edns.has_value());
  CHECK(copy.edns->options.empty());
}

// A query carrying the client-address option for `client` (code 65432).
std::vector<uint8_t> FromClient(const char* client, uint16_t port) {
  std::vector<uint8_t> option(dns::kMaxClientAddressOptionBytes);
  option.resize(dns::WriteClientAddressOption({*IpAddress::Parse(client), port},
                                              dns::kDefaultClientAddressOption, option));
  QuerySpec asked = Edns(1232);
  asked.EdnsOptions(option);
  return asked.Bytes();
}

loop::SocketAddress Peer(const char* text) { return *loop::SocketAddress::Parse(text); }

ClientAddressPolicy Trusting(const std::vector<const char*>& prefixes) {
  ClientAddressPolicy policy;
  for (const char* prefix : prefixes) policy.trusted.push_back(*IpPrefix::Parse(prefix));
  return policy;
}

Admission AdmitFrom(std::span<const uint8_t> packet, const char* peer,
                    const ClientAddressPolicy& policy) {
  Admission admission = AdmitBytes(packet);
  ResolveClient(Peer(peer), policy, &admission);
  return admission;
}

TEST_CASE("a trusted peer's client-address option names the client", "[server][admission]") {
  const auto packet = FromClient("10.1.2.3", 41000);
  const Admission admission =
      AdmitFrom(packet, "127.0.0.1:5353", Trusting({"127.0.0.0/8", "::1/128"}));
  CHECK(admission.admitted());
  CHECK(admission.client_source == ClientSource::kOption);
  CHECK(admission.client == Peer("10.1.2.3:41000"));
}

TEST_CASE("an untrusted peer's client-address option is ignored", "[server][admission]") {
  const auto packet = FromClient("10.1.2.3", 41000);
  const Admission admission = AdmitFrom(packet, "127.0.0.2:5353", Trusting({"127.0.0.1/32"}));
  CHECK(admission.admitted());
  CHECK(admission.client_source == ClientSource::kUntrusted);
  CHECK(admission.client == Peer("127.0.0.2:5353"));
}

TEST_CASE("with no trusted peer the client-address option is not looked at",
          "[server][admission]") {
  const auto packet = FromClient("10.1.2.3", 41000);
  const Admission admission = AdmitFrom(packet, "127.0.0.1:5353", ClientAddressPolicy{});
  CHECK(admission.client_source == ClientSource::kPeer);
  CHECK(admission.client == Peer("127.0.0.1:5353"));
}

TEST_CASE("a malformed client-address option from a trusted peer leaves the peer the client",
          "[server][admission]") {
  const uint8_t option[] = {0xFF, 0x98, 0, 5, 0, 1, 0, 53, 10};  // one address byte
  QuerySpec asked = Edns(1232);
  asked.EdnsOptions(option);
  const auto packet = asked.Bytes();
  const Admission admission = AdmitFrom(packet, "127.0.0.1:5353", Trusting({"127.0.0.0/8"}));
  CHECK(admission.admitted());  // answered as usual
  CHECK(admission.client_source == ClientSource::kMalformed);
  CHECK(admission.client == Peer("127.0.0.1:5353"));
}

TEST_CASE("a query without the client-address option is the peer's", "[server][admission]") {
  const bool edns = GENERATE(false, true);
  const auto packet = Edns(edns ? std::optional<uint16_t>(1232) : std::nullopt).Bytes();
  const Admission admission = AdmitFrom(packet, "[::1]:5353", Trusting({"::1/128"}));
  CHECK(admission.client_source == ClientSource::kPeer);
  CHECK(admission.client == Peer("[::1]:5353"));
}

TEST_CASE("a non-default option code is the only one believed", "[server][admission]") {
  const auto packet = FromClient("10.1.2.3", 41000);
  ClientAddressPolicy policy = Trusting({"127.0.0.0/8"});
  policy.option_code = 65001;
  const Admission admission = AdmitFrom(packet, "127.0.0.1:5353", policy);
  CHECK(admission.client_source == ClientSource::kPeer);
}

}  // namespace
}  // namespace kdns::server
