#include "common/dns/parser.h"

#include <catch2/catch.hpp>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"
#include "test/unit/allocation_counter.h"

namespace kdns::dns {
namespace {

using testing::N;
using testing::Packet;

using testing::QuerySpec;

// A stub's query: EDNS with 1232 bytes and DO.
QuerySpec StubQuery(std::string_view name) {
  QuerySpec spec(name);
  spec.Edns(1232).DnssecOk();
  return spec;
}

TEST_CASE("ParseQuery reads the header, the question and EDNS", "[dns][parser]") {
  auto bytes = StubQuery("Kubernetes.Default.svc.cluster.local.").Type(RrType::kAaaa).Bytes();
  Query query;
  REQUIRE(ParseQuery(bytes, &query) == ParseError::kOk);
  CHECK(query.header.id == 0x4242);
  CHECK(query.header.rd);
  CHECK(query.qname.ToText() == "Kubernetes.Default.svc.cluster.local.");
  CHECK(query.qtype == RrType::kAaaa);
  CHECK(query.qclass == RrClass::kIn);
  CHECK(query.question_end == 12 + query.qname.wire_length() + 4);
  REQUIRE(query.edns.has_value());
  CHECK(query.edns->udp_payload_size == 1232);
  CHECK(query.edns->dnssec_ok);
  CHECK(query.edns->version == 0);
  CHECK(query.edns->options.empty());
}

TEST_CASE("ParseQuery clamps tiny EDNS payload sizes to 512", "[dns][parser]") {
  auto bytes = QuerySpec("a.example.").Edns(100).DnssecOk().Bytes();
  Query query;
  REQUIRE(ParseQuery(bytes, &query) == ParseError::kOk);
  CHECK(query.edns->PayloadSize() == 512);
}

TEST_CASE("ParseQuery without EDNS has no OPT", "[dns][parser]") {
  auto bytes = QuerySpec("a.example.").Bytes();
  Query query;
  query.edns = EdnsView{};  // stale state from an earlier packet is cleared
  REQUIRE(ParseQuery(bytes, &query) == ParseError::kOk);
  CHECK_FALSE(query.edns.has_value());
}

TEST_CASE("ParseQuery allocates nothing", "[dns][parser]") {
  auto bytes = StubQuery("kubernetes.default.svc.cluster.local.").Bytes();
  Query query;
  size_t before = kdns::testing::AllocationCount();
  ParseError error = ParseQuery(bytes, &query);
  size_t after = kdns::testing::AllocationCount();
  REQUIRE(error == ParseError::kOk);
  CHECK(after == before);
  // The counter works: a vector allocates.
  std::vector<int> probe(4);
  CHECK(kdns::testing::AllocationCount() > after);
}

TEST_CASE("ParseQuery asks for FORMERR on question counts other than one", "[dns][parser]") {
  Query query;
  Packet none;
  none.Header(7, 0x0100, 0, 0, 0, 0);
  CHECK(ParseQuery(none.bytes(), &query) == ParseError::kNoQuestion);
  CHECK(query.header.id == 7);  // the header is there to echo in the FORMERR
  Packet two;
  two.Header(8, 0, 2, 0, 0, 0).Name("a.").U16(1).U16(1).Name("b.").U16(1).U16(1);
  CHECK(ParseQuery(two.bytes(), &query) == ParseError::kTooManyQuestions);
  CHECK(query.header.id == 8);
}

TEST_CASE("ParseQuery rejects truncated and lying packets", "[dns][parser]") {
  auto bytes = StubQuery("a.example.").Bytes();
  Query query;
  SECTION("every strict prefix fails") {
    for (size_t size = 0; size < bytes.size(); ++size) {
      INFO(size);
      CHECK(ParseQuery(std::span<const uint8_t>(bytes.data(), size), &query) != ParseError::kOk);
    }
  }
  SECTION("a header alone is a count mismatch; a cut question is truncated") {
    CHECK(ParseQuery(std::span<const uint8_t>(bytes.data(), 12), &query) ==
          ParseError::kCountMismatch);
    CHECK(ParseQuery(std::span<const uint8_t>(bytes.data(), 20), &query) == ParseError::kTruncated);
  }
  SECTION("more additional records claimed than present") {
    bytes[11] = 2;
    CHECK(ParseQuery(bytes, &query) == ParseError::kCountMismatch);
  }
  SECTION("trailing bytes after the last record are left to the caller: message_end") {
    const size_t end = bytes.size();
    bytes.push_back(0);
    bytes.push_back(0);
    CHECK(ParseQuery(bytes, &query) == ParseError::kOk);
    CHECK(query.message_end == end);
  }
}

TEST_CASE("ParseQuery enforces the OPT rules of RFC 6891", "[dns][parser]") {
  Query query;
  auto opt = [](Packet& packet) -> Packet& { return packet.U8(0).Fixed(41, 1232, 0, 0); };
  SECTION("two OPT records") {
    Packet packet;
    packet.Header(1, 0, 1, 0, 0, 2).Name("a.").U16(1).U16(1);
    opt(opt(packet));
    CHECK(ParseQuery(packet.bytes(), &query) == ParseError::kMultipleOpt);
  }
  SECTION("OPT in the answer or authority section") {
    auto [an, ns] = GENERATE(table<uint16_t, uint16_t>({{1, 0}, {0, 1}}));
    Packet packet;
    packet.Header(1, 0, 1, an, ns, 0).Name("a.").U16(1).U16(1);
    opt(packet);
    CHECK(ParseQuery(packet.bytes(), &query) == ParseError::kOptNotInAdditional);
  }
  SECTION("OPT with a non-root owner") {
    Packet packet;
    packet.Header(1, 0, 1, 0, 0, 1).Name("a.").U16(1).U16(1).Name("x.").Fixed(41, 512, 0, 0);
    CHECK(ParseQuery(packet.bytes(), &query) == ParseError::kBadOpt);
  }
  SECTION("OPT with malformed options") {
    Packet packet;
    packet.Header(1, 0, 1, 0, 0, 1).Name("a.").U16(1).U16(1).U8(0).Fixed(41, 512, 0, 3);
    packet.U8(0).U8(1).U8(0);
    CHECK(ParseQuery(packet.bytes(), &query) == ParseError::kBadRdata);
  }
  SECTION("OPT after other additional records, with extended rcode and options") {
    Packet packet;
    packet.Header(1, 0, 1, 0, 0, 2).Name("a.").U16(1).U16(1);
    packet.Name("key.").Fixed(250, 255, 0, 2).U16(0);  // a TSIG-like record
    packet.U8(0).Fixed(41, 4096, 0x02018000, 6).U16(10).U16(2).U16(0xABCD);
    REQUIRE(ParseQuery(packet.bytes(), &query) == ParseError::kOk);
    REQUIRE(query.edns);
    CHECK(query.edns->extended_rcode == 2);
    CHECK(query.edns->version == 1);
    CHECK(query.edns->dnssec_ok);
    CHECK(query.edns->options.size() == 6);
  }
  SECTION("answer and authority records are tolerated and skipped") {
    Packet packet;
    packet.Header(1, 0, 1, 1, 1, 0).Name("a.").U16(1).U16(1);
    packet.Pointer(12).Fixed(1, 1, 30, 4).U32(0x0A000001);
    packet.Pointer(12).Fixed(2, 1, 30, 2).Pointer(12);
    CHECK(ParseQuery(packet.bytes(), &query) == ParseError::kOk);
  }
}

TEST_CASE("ParseQuery reports bad names in the question", "[dns][parser]") {
  Query query;
  Packet packet;
  packet.Header(1, 0, 1, 0, 0, 0).Pointer(12).U16(1).U16(1);
  CHECK(ParseQuery(packet.bytes(), &query) == ParseError::kPointerLoop);
}

}  // namespace
}  // namespace kdns::dns
