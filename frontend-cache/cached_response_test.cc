#include "frontend-cache/cached_response.h"

#include <catch2/catch.hpp>
#include <vector>

#include "common/server/forward_reply_testing.h"
#include "frontend-cache/testing.h"

namespace kdns::frontend {
namespace {

using dns::RrClass;
using dns::RrType;
using dns::testing::N;
using dns::testing::Packet;

TEST_CASE("Analysis finds every TTL but the OPT record's", "[frontend][cached_response]") {
  testing::Reply reply;
  reply.qname = "www.example.com.";
  reply.answers = {"www.example.com. 300 IN A 192.0.2.1"};
  reply.authorities = {"example.com. 600 IN NS ns.example.com."};
  reply.additionals = {"ns.example.com. 900 IN A 192.0.2.53"};
  std::vector<uint8_t> bytes = testing::MakeReply(reply);
  std::vector<uint16_t> offsets;
  ResponseAnalysis analysis =
      AnalyzeResponse(bytes, N("WWW.example.com."), RrType::kA, RrClass::kIn, {}, &offsets);
  REQUIRE(analysis.result == Cacheability::kCacheable);
  CHECK(analysis.lifetime_s == 300);
  CHECK(offsets.size() == 3);
  CHECK(analysis.stored_size == bytes.size() - 11 - 6);  // OPT with a 6-octet NSID option

  std::vector<uint8_t> stored(bytes.begin(), bytes.begin() + analysis.stored_size);
  PrepareStoredResponse(stored, analysis, offsets, {});
  dns::Message message = testing::Parse(stored);
  CHECK_FALSE(message.edns);
  CHECK(message.additionals.size() == 1);
  CHECK(message.authorities[0].ttl_s == 600);
}

TEST_CASE("A TTL with the top bit set counts as 0 (RFC 2181 §8)", "[frontend][cached_response]") {
  Packet packet;
  packet.Header(1, 0x8180, 1, 1, 0, 0).Name("a.").U16(1).U16(1);
  packet.Pointer(12).Fixed(1, 1, 0x80000000u, 4).U32(0x01020304);
  std::vector<uint16_t> offsets;
  CHECK(AnalyzeResponse(packet.bytes(), N("a."), RrType::kA, RrClass::kIn, {}, &offsets).result ==
        Cacheability::kZeroTtl);
}

TEST_CASE("An OPT record before other records is not cached", "[frontend][cached_response]") {
  Packet packet;
  packet.Header(1, 0x8180, 1, 0, 0, 2).Name("a.").U16(1).U16(1);
  packet.U8(0).Fixed(41, 1232, 0, 0);
  packet.Pointer(12).Fixed(1, 1, 60, 4).U32(0x01020304);
  std::vector<uint16_t> offsets;
  CHECK(AnalyzeResponse(packet.bytes(), N("a."), RrType::kA, RrClass::kIn, {}, &offsets).result ==
        Cacheability::kOptNotLast);
}

TEST_CASE("Records cut short are malformed", "[frontend][cached_response]") {
  Packet packet;
  packet.Header(1, 0x8180, 1, 2, 0, 0).Name("a.").U16(1).U16(1);
  packet.Pointer(12).Fixed(1, 1, 60, 4).U32(0x01020304);
  std::vector<uint16_t> offsets;
  CHECK(AnalyzeResponse(packet.bytes(), N("a."), RrType::kA, RrClass::kIn, {}, &offsets).result ==
        Cacheability::kMalformed);
}

TEST_CASE("Uncached replies reach the client like cached ones", "[frontend][cached_response]") {
  dns::testing::ParsedQuery client = testing::MakeQuery("WWW.Example.com.", RrType::kA, 0x7777);
  std::vector<uint8_t> scratch;
  std::vector<uint16_t> offsets;
  std::vector<uint8_t> out(512);
  testing::Reply reply;
  reply.qname = "www.example.com.";

  SECTION("TTL 0: the client's ID and case, no OPT for a client without EDNS") {
    reply.answers = {"www.example.com. 0 IN A 192.0.2.1"};
    size_t size = WriteForwardedResponse(testing::MakeReply(reply), client.query, {}, &scratch,
                                         &offsets, out, 512);
    REQUIRE(size > 0);
    dns::Message message = testing::Parse(std::span(out.data(), size));
    CHECK(message.header.id == 0x7777);
    CHECK(message.questions[0].name.IdenticalTo(N("WWW.Example.com.")));
    CHECK_FALSE(message.edns);
    CHECK(message.answers.size() == 1);
  }
  SECTION("an upstream's TC stays set, with what it sent") {
    reply.answers = {"www.example.com. 60 IN A 192.0.2.1"};
    reply.tc = true;
    size_t size = WriteForwardedResponse(testing::MakeReply(reply), client.query, {}, &scratch,
                                         &offsets, out, 512);
    REQUIRE(size > 0);
    CHECK(testing::Parse(std::span(out.data(), size)).header.tc);
  }
  SECTION("a rcode that is never cached passes through") {
    reply.rcode = dns::Rcode::kNotImp;
    size_t size = WriteForwardedResponse(testing::MakeReply(reply), client.query, {}, &scratch,
                                         &offsets, out, 512);
    REQUIRE(size > 0);
    CHECK(testing::Parse(std::span(out.data(), size)).rcode() == dns::Rcode::kNotImp);
  }
  SECTION("a reply to another question is refused") {
    reply.qname = "other.example.com.";
    CHECK(WriteForwardedResponse(testing::MakeReply(reply), client.query, {}, &scratch, &offsets,
                                 out, 512) == 0);
  }
}

}  // namespace
// The bytes frontend-cache sends, as they were before the two servers shared FitReply: our
// header flags (AA clear, RA set, the client's RD), TTLs capped (here at 30 s) and, from the
// cache, aged (here by 7 s), our OPT with the client's DO bit instead of the upstream's, and
// as dnsmasq, the header and question alone with TC when the whole does not fit.
TEST_CASE(
    "frontend-cache's replies keep their bytes (ID, case, EDNS, empty TC, TCP), "
    "forwarded and cached",
    "[frontend][cached_response]") {
  using namespace server::testing;
  struct Pin {
    const char* what;
    std::optional<uint16_t> payload;
    bool dnssec_ok;
    dns::Transport transport;
    bool big;
    bool upstream_edns;
    size_t size;
    uint64_t forwarded_fnv;
    uint64_t cached_fnv;
    const char* forwarded_hex;  // spelt out when short
  };
  const Pin pin = GENERATE(
      Pin{"fits, both EDNS", 1232, false, dns::Transport::kUdp, false, true, 60, 0xa77a4e8a2b9e5879,
          0x05d4e084bfc98280,
          "beef8180000100010000000103577757074578616d706c6503434f4d0000010001c00c0001000100"
          "00001e0004c000020100002904d0000000000000"},
      Pin{"fits, no client EDNS", std::nullopt, false, dns::Transport::kUdp, false, true, 49,
          0xaf381b932bf2415b, 0x4cae4c9fd454be1c,
          "beef8180000100010000000003577757074578616d706c6503434f4d0000010001c00c0001000100"
          "00001e0004c0000201"},
      Pin{"fits, no upstream EDNS, the client's DO", 4096, true, dns::Transport::kUdp, false, false,
          60, 0xa4d052b5467ca0f9, 0x087edc59a4eb3a00,
          "beef8180000100010000000103577757074578616d706c6503434f4d0000010001c00c0001000100"
          "00001e0004c000020100002904d0000080000000"},
      Pin{"fits, neither EDNS", std::nullopt, false, dns::Transport::kUdp, false, false, 49,
          0xaf381b932bf2415b, 0x4cae4c9fd454be1c, nullptr},
      Pin{"too big for 512 over UDP: TC, no records", std::nullopt, false, dns::Transport::kUdp,
          true, true, 33, 0x0ea918be38bbb2ac, 0x0ea918be38bbb2ac,
          "beef8380000100000000000003424947076578616d706c6503636f6d0000010001"},
      Pin{"too big for 1232 over UDP with EDNS: TC, no records, our OPT", 4096, true,
          dns::Transport::kUdp, true, true, 44, 0x0230332a579ed230, 0x0230332a579ed230,
          "beef8380000100000000000103424947076578616d706c6503636f6d000001000100002904d00000"
          "80000000"},
      Pin{"over TCP without EDNS: whole", std::nullopt, false, dns::Transport::kTcp, true, true,
          1652, 0xea96b19ad9aad502, 0x5757423ef8ea76f3, nullptr},
      Pin{"over TCP with EDNS: whole, our OPT", 4096, false, dns::Transport::kTcp, true, true, 1663,
          0x5af05b23c9bcdf84, 0x965e3c1865f69ebf, nullptr});
  INFO(pin.what);
  const std::vector<uint8_t> bytes =
      PinQuery(pin.big ? "BIG.example.com." : "WwW.Example.COM.", pin.payload, pin.dnssec_ok);
  const server::Admission admission = PinAdmit(bytes, pin.transport);
  const dns::Query& query = admission.query;
  const upstream::Result result = PinUpstream(pin.big ? "big.example.com." : "www.example.com.",
                                              pin.big ? PinBig() : PinSmall(), pin.upstream_edns);
  CachePolicy policy;
  policy.max_ttl_s = 30;
  std::vector<uint8_t> scratch;
  std::vector<uint16_t> offsets;
  std::vector<uint8_t> out(dns::kMaxMessageSize);

  const size_t forwarded = WriteForwardedResponse(result.reply, query, policy, &scratch, &offsets,
                                                  out, admission.reply_limit_bytes);
  CHECK(forwarded == pin.size);
  CHECK(Fnv1a(std::span(out.data(), forwarded)) == pin.forwarded_fnv);
  if (pin.forwarded_hex != nullptr) {
    CHECK(Hex(std::span(out.data(), forwarded)) == pin.forwarded_hex);
  }

  const ResponseAnalysis analysis =
      AnalyzeResponse(result.reply, query.qname, query.qtype, query.qclass, policy, &offsets);
  REQUIRE(analysis.result == Cacheability::kCacheable);
  std::vector<uint8_t> stored(result.reply.begin(),
                              result.reply.begin() + static_cast<ptrdiff_t>(analysis.stored_size));
  PrepareStoredResponse(stored, analysis, offsets, policy);
  const size_t cached = WriteCachedResponse(stored, analysis.question_end, offsets, query,
                                            TtlRewrite{.age_s = 7, .fixed_ttl = std::nullopt}, out,
                                            admission.reply_limit_bytes);
  CHECK(cached == pin.size);
  CHECK(Fnv1a(std::span(out.data(), cached)) == pin.cached_fnv);
}

}  // namespace kdns::frontend

namespace kdns::frontend {
namespace {

TEST_CASE("--filter-AAAA strips AAAA records from every section of a reply",
          "[frontend][cached_response]") {
  testing::Reply reply;
  reply.qname = "www.example.com.";
  reply.type = dns::RrType::kAny;
  reply.answers = {"www.example.com. 300 IN A 192.0.2.1",
                   "www.example.com. 300 IN AAAA 2001:db8::1",
                   "www.example.com. 300 IN TXT \"kept\""};
  reply.authorities = {"example.com. 600 IN NS ns.example.com."};
  reply.additionals = {"ns.example.com. 900 IN A 192.0.2.53",
                       "ns.example.com. 900 IN AAAA 2001:db8::53"};
  reply.ad = true;
  const std::vector<uint8_t> bytes = testing::MakeReply(reply);
  std::vector<uint8_t> stripped;
  REQUIRE(StripAaaa(bytes, &stripped));
  const dns::Message before = testing::Parse(bytes);
  const dns::Message after = testing::Parse(stripped);
  CHECK(after.header.id == before.header.id);
  CHECK(after.header.ad);
  CHECK(after.questions == before.questions);
  REQUIRE(after.answers.size() == 2);
  CHECK(after.answers[0] == before.answers[0]);
  CHECK(after.answers[1] == before.answers[2]);
  CHECK(after.authorities == before.authorities);
  REQUIRE(after.additionals.size() == 1);
  CHECK(after.additionals[0] == before.additionals[0]);
  CHECK(after.edns == before.edns);

  // Nothing to strip, or not a message: the reply is used as it is.
  testing::Reply plain;
  plain.qname = "www.example.com.";
  plain.answers = {"www.example.com. 300 IN A 192.0.2.1"};
  std::vector<uint8_t> untouched = {1, 2, 3};
  CHECK_FALSE(StripAaaa(testing::MakeReply(plain), &untouched));
  CHECK_FALSE(StripAaaa(std::vector<uint8_t>{0, 1, 2}, &untouched));
  CHECK(untouched == std::vector<uint8_t>({1, 2, 3}));
}

}  // namespace
}  // namespace kdns::frontend
