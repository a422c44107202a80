#include "common/dns/message.h"

#include <catch2/catch.hpp>

#include "common/dns/builder.h"
#include "common/dns/testing.h"

namespace kdns::dns {
namespace {

using testing::N;
using testing::Packet;
using testing::RR;

Message SampleResponse() {
  Message message;
  message.header.id = 0x1234;
  message.header.qr = true;
  message.header.rd = true;
  message.header.ra = true;
  message.questions.push_back(
      {N("_https._tcp.K.default.svc.cluster.local."), RrType::kSrv, RrClass::kIn});
  message.answers.push_back(
      RR("_https._tcp.K.default.svc.cluster.local. 30 IN SRV 10 100 443 "
         "k.default.svc.cluster.local."));
  message.authorities.push_back(RR("cluster.local. 30 IN NS ns.dns.cluster.local."));
  message.additionals.push_back(RR("k.default.svc.cluster.local. 30 IN A 10.96.0.1"));
  message.additionals.push_back(RR("k.default.svc.cluster.local. 30 IN AAAA fd00::1"));
  message.additionals.push_back(RR("x.example. 30 IN TYPE65280 \\# 3 c0ffee"));
  message.edns = Edns{};
  message.edns->dnssec_ok = true;
  return message;
}

std::vector<uint8_t> Build(const Message& message) {
  std::vector<uint8_t> bytes;
  REQUIRE(BuildMessage(message, kMaxMessageSize, &bytes) == BuildError::kOk);
  return bytes;
}

TEST_CASE("ParseMessage decodes every section and takes EDNS out", "[dns][message]") {
  Message original = SampleResponse();
  auto bytes = Build(original);
  Message message;
  REQUIRE(ParseMessage(bytes, &message) == ParseError::kOk);
  CHECK(message.header.qdcount == 1);
  CHECK(message.header.ancount == 1);
  CHECK(message.header.nscount == 1);
  CHECK(message.header.arcount == 4);  // the OPT record counts
  CHECK(message.additionals.size() == 3);
  REQUIRE(message.edns.has_value());
  CHECK(message.edns->dnssec_ok);
  CHECK(message.questions[0].name.ToText() == "_https._tcp.K.default.svc.cluster.local.");
  message.header.qdcount = message.header.ancount = 0;
  message.header.nscount = message.header.arcount = 0;
  CHECK(message == original);
  CHECK(message.section(Section::kAuthority).size() == 1);
}

TEST_CASE("ParseMessage round trips are byte-identical", "[dns][message]") {
  auto bytes = Build(SampleResponse());
  Message message;
  REQUIRE(ParseMessage(bytes, &message) == ParseError::kOk);
  CHECK(Build(message) == bytes);
}

TEST_CASE("ParseMessage fails on every strict prefix", "[dns][message]") {
  auto bytes = Build(SampleResponse());
  for (size_t size = 0; size < bytes.size(); ++size) {
    Message message;
    INFO(size);
    CHECK(ParseMessage(std::span<const uint8_t>(bytes.data(), size), &message) != ParseError::kOk);
  }
}

TEST_CASE("ParseMessage accepts only pointers to where an earlier name began", "[dns][message]") {
  Message message;
  // Question "www.example.com." at 12: labels at 12, 16, 24, 28 (the root); qtype at 29.
  auto start = [](Packet& packet, uint16_t ancount) -> Packet& {
    return packet.Header(1, 0x8000, 1, ancount, 0, 0).Name("www.example.com.").U16(16).U16(1);
  };
  SECTION("to the question's name, to a suffix of it, and to its root label") {
    auto target = GENERATE(12, 16, 24, 28);
    Packet packet;
    start(packet, 1).Pointer(static_cast<uint16_t>(target)).Fixed(1, 1, 30, 4).U32(0x0A000001);
    INFO(target);
    CHECK(ParseMessage(packet.bytes(), &message) == ParseError::kOk);
  }
  SECTION("to a name inside an earlier record's rdata (a CNAME target)") {
    Packet packet;
    start(packet, 2).Pointer(12).Fixed(5, 1, 30, 4).Label("x").Pointer(24);  // x.com. at 45
    packet.Pointer(45).Fixed(1, 1, 30, 4).U32(0x0A000001);
    REQUIRE(ParseMessage(packet.bytes(), &message) == ParseError::kOk);
    CHECK(message.answers[1].owner.ToText() == "x.com.");
  }
  SECTION("into the middle of a label, or a fixed field read as labels") {
    // 13 is inside "www"; 30 is qtype's low octet (16), which reads on as a 16-octet label
    // through the record's own TTL, so the name would change as the TTL counts down (found
    // by the reply-path fuzzer).
    auto target = GENERATE(13, 29, 30, 31);
    Packet packet;
    start(packet, 1).Pointer(static_cast<uint16_t>(target)).Fixed(16, 1, 30, 6).U8(5);
    packet.U8('h').U8('e').U8('l').U8('l').U8('o');
    INFO(target);
    CHECK(ParseMessage(packet.bytes(), &message) == ParseError::kBadPointer);
  }
}

TEST_CASE("ParseMessage enforces counts, trailing bytes and OPT rules", "[dns][message]") {
  Message message;
  auto question = [](Packet& packet) -> Packet& { return packet.Name("a.").U16(1).U16(1); };
  SECTION("more records claimed than present") {
    Packet packet;
    packet.Header(1, 0x8000, 1, 2, 0, 0);
    question(packet).Pointer(12).Fixed(1, 1, 30, 4).U32(0x0A000001);
    CHECK(ParseMessage(packet.bytes(), &message) == ParseError::kCountMismatch);
  }
  SECTION("more questions claimed than present") {
    Packet packet;
    packet.Header(1, 0x8000, 2, 0, 0, 0);
    question(packet);
    CHECK(ParseMessage(packet.bytes(), &message) == ParseError::kCountMismatch);
  }
  SECTION("fewer records claimed than present: trailing garbage unless ignored") {
    Packet packet;
    packet.Header(1, 0x8000, 1, 0, 0, 0);
    question(packet).Pointer(12).Fixed(1, 1, 30, 4).U32(0x0A000001);
    CHECK(ParseMessage(packet.bytes(), &message) == ParseError::kTrailingGarbage);
    CHECK(ParseMessage(packet.bytes(), &message, TrailingData::kIgnore) == ParseError::kOk);
    CHECK(message.answers.empty());
  }
  SECTION("a record cut inside its fixed part or rdata") {
    auto cut = GENERATE(1, 5, 10, 12);
    Packet packet;
    packet.Header(1, 0x8000, 1, 1, 0, 0);
    question(packet).Pointer(12).Fixed(1, 1, 30, 4).U32(0x0A000001);
    std::vector<uint8_t> bytes = packet.bytes();
    bytes.resize(bytes.size() - 16 + 2 + static_cast<size_t>(cut));
    CHECK(ParseMessage(bytes, &message) == ParseError::kTruncated);
  }
  SECTION("rdlength that does not match typed rdata") {
    Packet packet;
    packet.Header(1, 0x8000, 1, 1, 0, 0);
    question(packet).Pointer(12).Fixed(1, 1, 30, 5).U32(0x0A000001).U8(0);
    CHECK(ParseMessage(packet.bytes(), &message) == ParseError::kRdataLengthMismatch);
  }
  SECTION("two OPT records") {
    Packet packet;
    packet.Header(1, 0x8000, 1, 0, 0, 2);
    question(packet).U8(0).Fixed(41, 512, 0, 0).U8(0).Fixed(41, 512, 0, 0);
    CHECK(ParseMessage(packet.bytes(), &message) == ParseError::kMultipleOpt);
  }
  SECTION("OPT in the answer section") {
    Packet packet;
    packet.Header(1, 0x8000, 1, 1, 0, 0);
    question(packet).U8(0).Fixed(41, 512, 0, 0);
    CHECK(ParseMessage(packet.bytes(), &message) == ParseError::kOptNotInAdditional);
  }
  SECTION("OPT with an owner other than the root") {
    Packet packet;
    packet.Header(1, 0x8000, 1, 0, 0, 1);
    question(packet).Pointer(12).Fixed(41, 512, 0, 0);
    CHECK(ParseMessage(packet.bytes(), &message) == ParseError::kBadOpt);
  }
  SECTION("a lying count does not make the parser reserve memory for it") {
    Packet packet;
    packet.Header(1, 0x8000, 0, 0xFFFF, 0, 0);
    CHECK(ParseMessage(packet.bytes(), &message) == ParseError::kCountMismatch);
  }
}

TEST_CASE("Message rcode combines the header and EDNS bits", "[dns][message]") {
  Message message;
  message.header.rcode = Rcode::kNxDomain;
  CHECK(message.rcode() == Rcode::kNxDomain);
  message.header.rcode = Rcode::kNoError;
  message.edns = Edns{};
  message.edns->extended_rcode = 1;
  CHECK(message.rcode() == Rcode::kBadVers);
}

}  // namespace
}  // namespace kdns::dns
