#include "frontend-cache/cached_response.h"

#include <catch2/catch.hpp>
#include <vector>

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
  testing::TestQuery client = testing::MakeQuery("WWW.Example.com.", RrType::kA, 0x7777);
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
}  // namespace kdns::frontend
