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

}  // namespace
}  // namespace kdns::frontend
