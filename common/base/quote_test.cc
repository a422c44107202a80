#include "common/base/quote.h"

#include <catch2/catch.hpp>
#include <string>

namespace kdns {
namespace {

TEST_CASE("a value quoted for a log line is escaped and cut", "[base]") {
  CHECK(QuoteForLog("a.b") == "\"a.b\"");
  CHECK(QuoteForLog("a\"b\\c\n\xff") == "\"a\\\"b\\\\c\\x0a\\xff\"");
  CHECK(QuoteForLog(std::string(40'000, 'a'), 8) == "\"aaaaaaaa\"...");
}

}  // namespace
}  // namespace kdns
