#include "common/dns/header.h"

#include <array>
#include <catch2/catch.hpp>

namespace kdns::dns {
namespace {

TEST_CASE("Header round-trips every flag and field", "[dns][header]") {
  Header header;
  header.id = 0xBEEF;
  header.qr = GENERATE(false, true);
  header.opcode = GENERATE(Opcode::kQuery, Opcode::kNotify, static_cast<Opcode>(15));
  header.aa = GENERATE(false, true);
  header.tc = true;
  header.rd = GENERATE(false, true);
  header.ra = true;
  header.z = GENERATE(false, true);
  header.ad = true;
  header.cd = GENERATE(false, true);
  header.rcode = Rcode::kNxDomain;
  header.qdcount = 1;
  header.ancount = 2;
  header.nscount = 3;
  header.arcount = 0xFFFF;
  std::array<uint8_t, kHeaderSize> bytes{};
  WriteHeader(header, bytes);
  Header parsed;
  REQUIRE(ParseHeader(bytes, &parsed) == ParseError::kOk);
  CHECK(parsed == header);
}

TEST_CASE("Header bits sit where RFC 1035 puts them", "[dns][header]") {
  const uint8_t bytes[] = {0x12, 0x34, 0x81, 0xA3, 0, 1, 0, 2, 0, 3, 0, 4};
  Header header;
  REQUIRE(ParseHeader(bytes, &header) == ParseError::kOk);
  CHECK(header.id == 0x1234);
  CHECK(header.qr);
  CHECK(header.opcode == Opcode::kQuery);
  CHECK(header.rd);
  CHECK_FALSE(header.aa);
  CHECK(header.ra);
  CHECK(header.ad);
  CHECK_FALSE(header.cd);
  CHECK(header.rcode == Rcode::kNxDomain);
  CHECK(header.qdcount == 1);
  CHECK(header.arcount == 4);
}

TEST_CASE("Header writes only the low 4 bits of an extended rcode", "[dns][header]") {
  Header header;
  header.rcode = Rcode::kBadVers;  // 16
  std::array<uint8_t, kHeaderSize> bytes{};
  WriteHeader(header, bytes);
  CHECK((bytes[3] & 0x0F) == 0);
}

TEST_CASE("Header parsing rejects fewer than 12 octets", "[dns][header]") {
  const uint8_t bytes[11] = {};
  Header header;
  CHECK(ParseHeader(bytes, &header) == ParseError::kTruncated);
  CHECK(ParseHeader({}, &header) == ParseError::kTruncated);
}

}  // namespace
}  // namespace kdns::dns
