#include "sidecar/go_format.h"

#include <catch2/catch.hpp>
#include <limits>
#include <string>

namespace kdns::sidecar {
namespace {

TEST_CASE("Floats are written as Go's encoding/json writes float64", "[sidecar][go]") {
  // Expected texts from Go: json.Marshal(float64(x)).
  CHECK(GoJsonFloat(0) == "0");
  CHECK(GoJsonFloat(1) == "1");
  CHECK(GoJsonFloat(0.000412) == "0.000412");
  CHECK(GoJsonFloat(0.000123456789) == "0.000123456789");
  CHECK(GoJsonFloat(1.5) == "1.5");
  CHECK(GoJsonFloat(2.0015) == "2.0015");
  CHECK(GoJsonFloat(0.1) == "0.1");
  CHECK(GoJsonFloat(1e-6) == "0.000001");
  CHECK(GoJsonFloat(9.99e-7) == "9.99e-7");
  CHECK(GoJsonFloat(1e-7) == "1e-7");
  CHECK(GoJsonFloat(1.5e-10) == "1.5e-10");
  CHECK(GoJsonFloat(123456789) == "123456789");
  CHECK(GoJsonFloat(1e20) == "100000000000000000000");
  CHECK(GoJsonFloat(1e21) == "1e+21");
  CHECK(GoJsonFloat(-0.25) == "-0.25");
  CHECK(GoJsonFloat(std::numeric_limits<double>::quiet_NaN()) == "0");
}

TEST_CASE("Strings are written as Go's json.Marshal writes them", "[sidecar][go]") {
  CHECK(GoJsonString("") == "\"\"");
  CHECK(GoJsonString("waiting for first probe") == "\"waiting for first probe\"");
  CHECK(GoJsonString("no RRs for domain \"a.b.\"") == "\"no RRs for domain \\\"a.b.\\\"\"");
  CHECK(GoJsonString("back\\slash") == "\"back\\\\slash\"");
  CHECK(GoJsonString("a\nb\rc\td\be\ff") == "\"a\\nb\\rc\\td\\be\\ff\"");
  CHECK(GoJsonString(std::string("nul\0x", 5)) == "\"nul\\u0000x\"");
  CHECK(GoJsonString("\x1f") == "\"\\u001f\"");
  CHECK(GoJsonString("<a&b>") == "\"\\u003ca\\u0026b\\u003e\"");
  CHECK(GoJsonString("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
  CHECK(GoJsonString("bad\xff") == "\"bad\\ufffd\"");
  CHECK(GoJsonString("\xe2\x80\xa8") == "\"\\u2028\"");
  CHECK(GoJsonString("\xc0\xaf") == "\"\\ufffd\\ufffd\"");  // overlong '/'
}

TEST_CASE("Quoting follows strconv.Quote", "[sidecar][go]") {
  CHECK(GoQuote("nope.example.test.") == "\"nope.example.test.\"");
  CHECK(GoQuote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(GoQuote("tab\there") == "\"tab\\there\"");
  CHECK(GoQuote("\x01\x7f") == "\"\\x01\\x7f\"");
  CHECK(GoQuote("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
  CHECK(GoQuote("\xff") == "\"\\xff\"");
}

TEST_CASE("Durations convert to seconds as time.Duration.Seconds does", "[sidecar][go]") {
  CHECK(GoSeconds(0) == 0);
  CHECK(GoSeconds(412'000) == 0.000412);
  CHECK(GoSeconds(1'500'000'000) == 1.5);
  CHECK(GoJsonFloat(GoSeconds(123'456)) == "0.000123456");
  CHECK(GoJsonFloat(GoSeconds(2'000'000'001)) == "2.000000001");
}

}  // namespace
}  // namespace kdns::sidecar
