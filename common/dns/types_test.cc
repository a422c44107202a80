#include "common/dns/types.h"

#include <catch2/catch.hpp>

namespace kdns::dns {
namespace {

TEST_CASE("Type mnemonics round-trip, with the generic form for unknown types", "[dns][types]") {
  auto [type, text] = GENERATE(table<RrType, std::string>({
      {RrType::kA, "A"},
      {RrType::kAaaa, "AAAA"},
      {RrType::kSrv, "SRV"},
      {RrType::kOpt, "OPT"},
      {static_cast<RrType>(123), "TYPE123"},
      {static_cast<RrType>(65535), "TYPE65535"},
  }));
  CHECK(RrTypeToText(type) == text);
  CHECK(RrTypeFromText(text) == type);
}

TEST_CASE("Type and class parsing ignores case and accepts generic forms", "[dns][types]") {
  CHECK(RrTypeFromText("aaaa") == RrType::kAaaa);
  CHECK(RrTypeFromText("type1") == RrType::kA);
  CHECK(RrClassFromText("in") == RrClass::kIn);
  CHECK(RrClassFromText("CLASS3") == RrClass::kCh);
  CHECK(RrClassToText(RrClass::kCh) == "CH");
  CHECK(RrClassToText(static_cast<RrClass>(42)) == "CLASS42");
}

TEST_CASE("Type and class parsing rejects unknown words and out-of-range numbers", "[dns][types]") {
  auto text =
      GENERATE(as<std::string>{}, "", "BOGUS", "TYPE", "TYPE65536", "TYPE-1", "TYPE1x", "CLASS1");
  CHECK_FALSE(RrTypeFromText(text).has_value());
  CHECK_FALSE(RrClassFromText(text == "CLASS1" ? "CLASSX" : text).has_value());
}

TEST_CASE("Rcodes, opcodes and sections have dig's names", "[dns][types]") {
  CHECK(RcodeToText(Rcode::kNxDomain) == "NXDOMAIN");
  CHECK(RcodeToText(Rcode::kBadVers) == "BADVERS");
  CHECK(RcodeToText(static_cast<Rcode>(23)) == "RCODE23");
  CHECK(OpcodeToText(Opcode::kQuery) == "QUERY");
  CHECK(OpcodeToText(static_cast<Opcode>(9)) == "OPCODE9");
  CHECK(SectionToText(Section::kAdditional) == "ADDITIONAL");
}

}  // namespace
}  // namespace kdns::dns
