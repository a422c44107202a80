#include "common/dns/edns.h"

#include <catch2/catch.hpp>

namespace kdns::dns {
namespace {

TEST_CASE("OPT fields decode into EDNS values", "[dns][edns]") {
  const uint8_t options[] = {0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8};  // a COOKIE option
  EdnsView edns;
  // Extended rcode 1, version 0, DO set, one more Z bit.
  REQUIRE(ParseOpt(4096, 0x01008001, options, &edns) == ParseError::kOk);
  CHECK(edns.udp_payload_size == 4096);
  CHECK(edns.PayloadSize() == 4096);
  CHECK(edns.extended_rcode == 1);
  CHECK(edns.version == 0);
  CHECK(edns.dnssec_ok);
  CHECK(edns.z == 1);
  CHECK(edns.options.size() == sizeof(options));

  Edns owned = Edns::FromView(edns);
  CHECK(owned.options.size() == sizeof(options));
  CHECK(owned.WireSize() == kOptFixedSize + sizeof(options));
  CHECK(Edns::FromView(owned.View()) == owned);
}

TEST_CASE("EDNS payload sizes below 512 count as 512", "[dns][edns]") {
  auto [advertised, effective] = GENERATE(table<uint16_t, uint16_t>({
      {0, 512},
      {100, 512},
      {512, 512},
      {1232, 1232},
      {65535, 65535},
  }));
  EdnsView edns;
  REQUIRE(ParseOpt(advertised, 0, {}, &edns) == ParseError::kOk);
  CHECK(edns.udp_payload_size == advertised);
  CHECK(edns.PayloadSize() == effective);
}

TEST_CASE("OPT options must be whole TLVs", "[dns][edns]") {
  EdnsView edns;
  const uint8_t short_header[] = {0, 10, 0};
  CHECK(ParseOpt(512, 0, short_header, &edns) == ParseError::kBadRdata);
  const uint8_t short_data[] = {0, 10, 0, 8, 1, 2, 3};
  CHECK(ParseOpt(512, 0, short_data, &edns) == ParseError::kBadRdata);
  const uint8_t empty_option[] = {0, 12, 0, 0};
  CHECK(ParseOpt(512, 0, empty_option, &edns) == ParseError::kOk);
}

}  // namespace
}  // namespace kdns::dns
