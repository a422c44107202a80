#include "common/dns/rdata.h"

#include <catch2/catch.hpp>

#include "common/dns/header.h"
#include "common/dns/testing.h"

namespace kdns::dns {
namespace {

using testing::N;
using testing::Packet;

// Parses the rdata that follows the 12-byte header in `packet`.
ParseError Parse(const Packet& packet, RrType type, Rdata* rdata, RrClass cls = RrClass::kIn) {
  return ParseRdata(packet.bytes(), kHeaderSize, packet.size() - kHeaderSize, type, cls, rdata);
}

TEST_CASE("Typed rdata decodes each supported type", "[dns][rdata]") {
  Rdata rdata;
  SECTION("A and AAAA") {
    Packet a;
    a.Header(0, 0, 0, 0, 0, 0).U8(10).U8(96).U8(0).U8(1);
    REQUIRE(Parse(a, RrType::kA, &rdata) == ParseError::kOk);
    CHECK(std::get<RdataA>(rdata).address.ToString() == "10.96.0.1");
    Packet aaaa;
    aaaa.Header(0, 0, 0, 0, 0, 0).U32(0x20010db8).U32(0).U32(0).U32(1);
    REQUIRE(Parse(aaaa, RrType::kAaaa, &rdata) == ParseError::kOk);
    CHECK(std::get<RdataAaaa>(rdata).address.ToString() == "2001:db8::1");
  }
  SECTION("names in CNAME, PTR, NS and DNAME") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Name("Target.Example.");
    REQUIRE(Parse(packet, RrType::kCname, &rdata) == ParseError::kOk);
    CHECK(std::get<RdataCname>(rdata).target.IdenticalTo(N("Target.Example.")));
    REQUIRE(Parse(packet, RrType::kPtr, &rdata) == ParseError::kOk);
    CHECK(std::get<RdataPtr>(rdata).target == N("target.example."));
    REQUIRE(Parse(packet, RrType::kNs, &rdata) == ParseError::kOk);
    CHECK(std::get<RdataNs>(rdata).host == N("target.example."));
    REQUIRE(Parse(packet, RrType::kDname, &rdata) == ParseError::kOk);
    CHECK(std::get<RdataDname>(rdata).target == N("target.example."));
  }
  SECTION("SOA with every field") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Name("ns.dns.cluster.local.").Name("hostmaster.cluster.local.");
    packet.U32(1).U32(28800).U32(7200).U32(604800).U32(60);
    REQUIRE(Parse(packet, RrType::kSoa, &rdata) == ParseError::kOk);
    const auto& soa = std::get<RdataSoa>(rdata);
    CHECK(soa.mname == N("ns.dns.cluster.local."));
    CHECK(soa.rname == N("hostmaster.cluster.local."));
    CHECK(soa.serial == 1);
    CHECK(soa.refresh_s == 28800);
    CHECK(soa.retry_s == 7200);
    CHECK(soa.expire_s == 604800);
    CHECK(soa.minimum_s == 60);
  }
  SECTION("SRV and MX") {
    Packet srv;
    srv.Header(0, 0, 0, 0, 0, 0).U16(10).U16(100).U16(443).Name("k.default.svc.cluster.local.");
    REQUIRE(Parse(srv, RrType::kSrv, &rdata) == ParseError::kOk);
    CHECK(std::get<RdataSrv>(rdata) == RdataSrv{10, 100, 443, N("k.default.svc.cluster.local.")});
    Packet mx;
    mx.Header(0, 0, 0, 0, 0, 0).U16(5).Name("mail.example.");
    REQUIRE(Parse(mx, RrType::kMx, &rdata) == ParseError::kOk);
    CHECK(std::get<RdataMx>(rdata) == RdataMx{5, N("mail.example.")});
  }
  SECTION("TXT with several strings, including an empty one, and HINFO") {
    Packet txt;
    txt.Header(0, 0, 0, 0, 0, 0).Label("1.1.0").U8(0).Label("x");
    REQUIRE(Parse(txt, RrType::kTxt, &rdata) == ParseError::kOk);
    CHECK(std::get<RdataTxt>(rdata).strings == std::vector<std::string>{"1.1.0", "", "x"});
    REQUIRE(Parse(txt, RrType::kTxt, &rdata, RrClass::kCh) == ParseError::kOk);
    Packet hinfo;
    hinfo.Header(0, 0, 0, 0, 0, 0).Label("amd64").Label("linux");
    REQUIRE(Parse(hinfo, RrType::kHinfo, &rdata) == ParseError::kOk);
    CHECK(std::get<RdataHinfo>(rdata) == RdataHinfo{"amd64", "linux"});
  }
}

TEST_CASE("Names inside well-known rdata are decompressed", "[dns][rdata]") {
  Packet packet;
  packet.Header(0, 0, 0, 0, 0, 0).Name("cluster.local.");  // 12..26
  size_t rdata_at = packet.size();
  packet.U16(10).U16(50).U16(53).Label("ns").Pointer(12);
  Rdata rdata;
  REQUIRE(ParseRdata(packet.bytes(), rdata_at, packet.size() - rdata_at, RrType::kSrv, RrClass::kIn,
                     &rdata) == ParseError::kOk);
  CHECK(std::get<RdataSrv>(rdata).target == N("ns.cluster.local."));
}

TEST_CASE("Unknown types stay opaque and are never decompressed", "[dns][rdata]") {
  Packet packet;
  packet.Header(0, 0, 0, 0, 0, 0).Pointer(0x3FFF).U8(0xFF);  // nonsense as a name
  Rdata rdata;
  REQUIRE(Parse(packet, static_cast<RrType>(65280), &rdata) == ParseError::kOk);
  CHECK(std::get<RdataOpaque>(rdata).bytes == std::vector<uint8_t>{0xFF, 0xFF, 0xFF});
  SECTION("and so do class-specific types in other classes") {
    Packet ch;
    ch.Header(0, 0, 0, 0, 0, 0).U8(1).U8(2);
    REQUIRE(Parse(ch, RrType::kA, &rdata, RrClass::kCh) == ParseError::kOk);
    CHECK(std::holds_alternative<RdataOpaque>(rdata));
  }
}

TEST_CASE("Typed rdata must use exactly RDLENGTH octets", "[dns][rdata]") {
  Rdata rdata;
  auto [type, length] = GENERATE(table<RrType, int>({
      {RrType::kA, 3},
      {RrType::kA, 5},
      {RrType::kAaaa, 4},
      {RrType::kAaaa, 17},
  }));
  Packet packet;
  packet.Header(0, 0, 0, 0, 0, 0);
  for (int i = 0; i < length; ++i) packet.U8(1);
  CHECK(Parse(packet, type, &rdata) == ParseError::kRdataLengthMismatch);

  SECTION("a name followed by extra bytes") {
    Packet cname;
    cname.Header(0, 0, 0, 0, 0, 0).Name("a.example.").U8(0);
    CHECK(Parse(cname, RrType::kCname, &rdata) == ParseError::kRdataLengthMismatch);
  }
  SECTION("a name running past RDLENGTH") {
    Packet cname;
    cname.Header(0, 0, 0, 0, 0, 0).Name("a.example.");
    CHECK(ParseRdata(cname.bytes(), 12, cname.size() - 13, RrType::kCname, RrClass::kIn, &rdata) ==
          ParseError::kRdataLengthMismatch);
  }
  SECTION("SOA without its minimum") {
    Packet soa;
    soa.Header(0, 0, 0, 0, 0, 0).Name("a.").Name("b.").U32(1).U32(2).U32(3).U32(4);
    CHECK(Parse(soa, RrType::kSoa, &rdata) == ParseError::kRdataLengthMismatch);
  }
  SECTION("SRV shorter than its fixed fields") {
    Packet srv;
    srv.Header(0, 0, 0, 0, 0, 0).U16(1).U16(2);
    CHECK(Parse(srv, RrType::kSrv, &rdata) == ParseError::kRdataLengthMismatch);
  }
  SECTION("rdata running past the message") {
    Packet a;
    a.Header(0, 0, 0, 0, 0, 0).U8(1);
    CHECK(ParseRdata(a.bytes(), 12, 4, RrType::kA, RrClass::kIn, &rdata) == ParseError::kTruncated);
  }
}

TEST_CASE("TXT and HINFO reject bad character-strings", "[dns][rdata]") {
  Rdata rdata;
  SECTION("empty TXT rdata") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0);
    CHECK(Parse(packet, RrType::kTxt, &rdata) == ParseError::kBadRdata);
  }
  SECTION("a string length past the rdata") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).U8(5).U8('a').U8('b');
    CHECK(Parse(packet, RrType::kTxt, &rdata) == ParseError::kBadRdata);
  }
  SECTION("HINFO with one string") {
    Packet packet;
    packet.Header(0, 0, 0, 0, 0, 0).Label("cpu");
    CHECK(Parse(packet, RrType::kHinfo, &rdata) == ParseError::kBadRdata);
  }
}

TEST_CASE("Rdata matches its type only with the right struct", "[dns][rdata]") {
  auto v4 = *IpAddress::Parse("10.0.0.1");
  auto v6 = *IpAddress::Parse("::1");
  CHECK(RdataMatches(RdataA{v4}, RrType::kA, RrClass::kIn));
  CHECK_FALSE(RdataMatches(RdataA{v6}, RrType::kA, RrClass::kIn));
  CHECK_FALSE(RdataMatches(RdataAaaa{v4}, RrType::kAaaa, RrClass::kIn));
  CHECK_FALSE(RdataMatches(RdataA{v4}, RrType::kAaaa, RrClass::kIn));
  CHECK_FALSE(RdataMatches(RdataA{v4}, RrType::kA, RrClass::kCh));
  CHECK(RdataMatches(RdataOpaque{{1, 2, 3, 4}}, RrType::kA, RrClass::kIn));
  CHECK(RdataMatches(RdataTxt{{"x"}}, RrType::kTxt, RrClass::kCh));
  CHECK_FALSE(RdataMatches(RdataTxt{{"x"}}, static_cast<RrType>(999), RrClass::kIn));
}

}  // namespace
}  // namespace kdns::dns
