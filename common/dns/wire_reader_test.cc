#include "common/dns/wire_reader.h"

#include <catch2/catch.hpp>

#include "common/dns/testing.h"

namespace kdns::dns {
namespace {

using testing::N;
using testing::Packet;

// Reads the name at `offset`, returning the error and (on success) the name.
ParseError ReadAt(const Packet& packet, size_t offset, Name* name, size_t* next = nullptr) {
  WireReader reader(packet.bytes(), offset, packet.size());
  ParseError error = reader.ReadName(name);
  if (next != nullptr) *next = reader.offset();
  return error;
}

TEST_CASE("Decompression follows the RFC 1035 section 4.1.4 example", "[dns][wire_reader]") {
  // F.ISI.ARPA at 20, FOO.F.ISI.ARPA at 40 (FOO + pointer to 20), ARPA as a pointer to 26,
  // and the root at 64.
  Packet packet;
  while (packet.size() < 20) packet.U8(0xEE);
  packet.Label("F").Label("ISI").Label("ARPA").U8(0);
  while (packet.size() < 40) packet.U8(0xEE);
  packet.Label("FOO").Pointer(20);
  packet.Pointer(26);
  while (packet.size() < 64) packet.U8(0xEE);
  packet.U8(0);

  Name name;
  size_t next = 0;
  REQUIRE(ReadAt(packet, 20, &name, &next) == ParseError::kOk);
  CHECK(name.ToText() == "F.ISI.ARPA.");
  CHECK(next == 32);
  REQUIRE(ReadAt(packet, 40, &name, &next) == ParseError::kOk);
  CHECK(name.ToText() == "FOO.F.ISI.ARPA.");
  CHECK(next == 46);  // just after the pointer, not where it led
  REQUIRE(ReadAt(packet, 46, &name, &next) == ParseError::kOk);
  CHECK(name.ToText() == "ARPA.");
  CHECK(next == 48);
  REQUIRE(ReadAt(packet, 64, &name, &next) == ParseError::kOk);
  CHECK(name.IsRoot());
  CHECK(next == 65);
}

TEST_CASE("Decompression rejects pointers that do not point strictly backwards",
          "[dns][wire_reader]") {
  Name name;
  SECTION("a pointer to itself is a loop") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Pointer(12);
    CHECK(ReadAt(packet, 12, &name) == ParseError::kPointerLoop);
  }
  SECTION("a pointer to the start of its own label sequence is a loop") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Label("a").Label("b").Pointer(12);
    CHECK(ReadAt(packet, 12, &name) == ParseError::kPointerLoop);
  }
  SECTION("two pointers to each other") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Pointer(14).Pointer(12);
    CHECK(ReadAt(packet, 14, &name) == ParseError::kPointerLoop);
    CHECK(ReadAt(packet, 12, &name) == ParseError::kBadPointer);  // forward from here
  }
  SECTION("a forward pointer, even to a valid name") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Pointer(14).Name("valid.");
    CHECK(ReadAt(packet, 12, &name) == ParseError::kBadPointer);
    CHECK(ReadAt(packet, 14, &name) == ParseError::kOk);
  }
  SECTION("a pointer into the header, even to a zero byte that reads as the root") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Pointer(11);
    CHECK(ReadAt(packet, 12, &name) == ParseError::kBadPointer);
  }
  SECTION("a pointer past the end of the message") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Label("a").Pointer(0x3FFF);
    CHECK(ReadAt(packet, 12, &name) == ParseError::kBadPointer);
  }
  SECTION("a pointer cut in half by the end of the message") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Label("a").U8(0xC0);
    CHECK(ReadAt(packet, 12, &name) == ParseError::kTruncated);
  }
}

TEST_CASE("Decompression gives up after too many pointer hops", "[dns][wire_reader]") {
  // Each pointer points at the previous one: strictly backwards, but a long chain.
  Packet packet;
  packet.Header(0, 0, 0, 0, 0, 0).U8(0);
  size_t target = 12;
  for (size_t i = 0; i < WireReader::kMaxPointerHops + 5; ++i) {
    size_t here = packet.size();
    packet.Pointer(static_cast<uint16_t>(target));
    target = here;
  }
  Name name;
  CHECK(ReadAt(packet, 13, &name) == ParseError::kOk);  // one hop
  CHECK(ReadAt(packet, target, &name) == ParseError::kPointerLoop);
}

TEST_CASE("Decompression rejects bad labels and over-long names", "[dns][wire_reader]") {
  Name name;
  SECTION("reserved label types 0x40 and 0x80") {
    auto type = GENERATE(0x40, 0x41, 0x80, 0xBF);
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Label("ok").U8(static_cast<uint8_t>(type)).U8(0);
    CHECK(ReadAt(packet, 12, &name) == ParseError::kBadLabelType);
  }
  SECTION("a label longer than 63 octets has a reserved type") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Label(std::string(64, 'a')).U8(0);
    CHECK(ReadAt(packet, 12, &name) == ParseError::kBadLabelType);
  }
  SECTION("more than 255 octets once pointers are followed") {
    std::string label63(63, 'a');
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Label(label63).Label(label63).Label(label63).U8(0);
    size_t second = packet.size();
    packet.Label(std::string(61, 'b')).Pointer(12);  // 62 + 193 = 255: fits
    size_t third = packet.size();
    packet.Label(std::string(62, 'c')).Pointer(12);  // 63 + 193 = 256: too long
    REQUIRE(ReadAt(packet, second, &name) == ParseError::kOk);
    CHECK(name.wire_length() == 255);
    CHECK(ReadAt(packet, third, &name) == ParseError::kNameTooLong);
  }
  SECTION("a label running past the end") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).U8(5).U8('a').U8('b');
    CHECK(ReadAt(packet, 12, &name) == ParseError::kTruncated);
  }
  SECTION("a name without its root octet") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Label("abc");
    CHECK(ReadAt(packet, 12, &name) == ParseError::kTruncated);
  }
  SECTION("a reader limited to rdata stops at its end but follows pointers before it") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Name("target.example.").Label("x").Pointer(12);
    WireReader limited(packet.bytes(), 28, 30);  // only "1 x": the pointer is outside
    CHECK(limited.ReadName(&name) == ParseError::kTruncated);
    WireReader whole(packet.bytes(), 28, 32);
    REQUIRE(whole.ReadName(&name) == ParseError::kOk);
    CHECK(name == N("x.target.example."));
  }
}

TEST_CASE("Reading integers and bytes is bounds-checked", "[dns][wire_reader]") {
  const uint8_t bytes[] = {0x12, 0x34, 0x56, 0x78, 0x9A};
  WireReader reader(bytes);
  uint32_t u32 = 0;
  REQUIRE(reader.ReadU32(&u32));
  CHECK(u32 == 0x12345678);
  uint16_t u16 = 0;
  CHECK_FALSE(reader.ReadU16(&u16));
  CHECK(reader.offset() == 4);  // a failed read does not move
  uint8_t u8 = 0;
  REQUIRE(reader.ReadU8(&u8));
  CHECK(u8 == 0x9A);
  CHECK(reader.AtEnd());
  CHECK_FALSE(reader.ReadU8(&u8));
  CHECK_FALSE(reader.Skip(1));
  std::span<const uint8_t> view;
  CHECK_FALSE(reader.ReadBytes(1, &view));
  CHECK(reader.ReadBytes(0, &view));
}

TEST_CASE("Skipping a name checks its structure without following pointers", "[dns][wire_reader]") {
  Packet packet;
  packet.Header(0, 0, 0, 0, 0, 0).U8(0).Label("a").Pointer(0x3FFF).Label("b").U8(0x40);
  WireReader reader(packet.bytes(), 12, packet.size());
  bool is_root = false;
  REQUIRE(reader.SkipName(&is_root) == ParseError::kOk);
  CHECK(is_root);
  REQUIRE(reader.SkipName(&is_root) == ParseError::kOk);
  CHECK_FALSE(is_root);
  CHECK(reader.offset() == 17);
  CHECK(reader.SkipName() == ParseError::kBadLabelType);

  Packet cut;
  cut.Header(0, 0, 0, 0, 0, 0).U8(3).U8('a');
  WireReader cut_reader(cut.bytes(), 12, cut.size());
  CHECK(cut_reader.SkipName() == ParseError::kTruncated);
}

}  // namespace
}  // namespace kdns::dns
