#include "common/dns/query_testing.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "common/dns/parser.h"
#include "common/dns/testing.h"

namespace kdns::dns::testing {
namespace {

TEST_CASE("QuerySpec builds a stub's query unless told otherwise", "[dns][testing]") {
  const ParsedQuery parsed = QuerySpec().Parsed();
  CHECK(parsed.query.header.id == 0x4242);
  CHECK(parsed.query.header.rd);
  CHECK_FALSE(parsed.query.header.qr);
  CHECK(parsed.query.header.opcode == Opcode::kQuery);
  CHECK(parsed.query.qname.IdenticalTo(N("example.")));
  CHECK(parsed.query.qtype == RrType::kA);
  CHECK(parsed.query.qclass == RrClass::kIn);
  CHECK_FALSE(parsed.query.edns.has_value());
}

TEST_CASE("QuerySpec writes what a test sets, EDNS included", "[dns][testing]") {
  const uint8_t option[] = {0xfd, 0xe9, 0, 4, 'a', 'b', 'c', 'd'};
  const std::vector<uint8_t> bytes = QuerySpec("WwW.Example.COM.")
                                         .Type(RrType::kAaaa)
                                         .Class(RrClass::kCh)
                                         .Id(7)
                                         .Recursion(false)
                                         .Edns(4096)
                                         .DnssecOk()
                                         .EdnsVersion(1)
                                         .EdnsOptions(option)
                                         .Bytes();
  Query query;
  REQUIRE(ParseQuery(bytes, &query) == ParseError::kOk);
  CHECK(query.header.id == 7);
  CHECK_FALSE(query.header.rd);
  CHECK(query.qname.IdenticalTo(N("WwW.Example.COM.")));
  CHECK(query.qtype == RrType::kAaaa);
  CHECK(query.qclass == RrClass::kCh);
  REQUIRE(query.edns.has_value());
  CHECK(query.edns->udp_payload_size == 4096);
  CHECK(query.edns->dnssec_ok);
  CHECK(query.edns->version == 1);
  CHECK(std::vector<uint8_t>(query.edns->options.begin(), query.edns->options.end()) ==
        std::vector<uint8_t>(std::begin(option), std::end(option)));
}

TEST_CASE("QuerySpec sets the opcode for the admission tests", "[dns][testing]") {
  Query query;
  REQUIRE(ParseQuery(QuerySpec().Operation(Opcode::kNotify).Type(RrType::kSoa).Bytes(), &query) ==
          ParseError::kOk);
  CHECK(query.header.opcode == Opcode::kNotify);
}

}  // namespace
}  // namespace kdns::dns::testing
