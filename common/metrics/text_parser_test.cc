#include "common/metrics/text_parser.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

namespace kdns::metrics {
namespace {

TEST_CASE("parsed text lists each series with its labels unescaped, in order", "[metrics]") {
  const std::optional<ParsedText> parsed =
      ParseText("up 1\nq_total{to=\"a\\\"b\",rcode=\"NOERROR\"} 3\n");
  REQUIRE(parsed);
  REQUIRE(parsed->series.size() == 2);
  CHECK(parsed->series[0].name == "up");
  CHECK(parsed->series[0].labels.empty());
  CHECK(parsed->series[1].name == "q_total");
  CHECK(parsed->series[1].Label("to") == "a\"b");
  CHECK(parsed->series[1].Label("rcode") == "NOERROR");
  CHECK(parsed->series[1].Label("zone").empty());
  CHECK(parsed->series[1].value == 3);
}

TEST_CASE("parsed text maps series to values and families to HELP and TYPE", "[metrics]") {
  std::string error;
  const std::optional<ParsedText> parsed = ParseText(
      "# HELP q_total Queries.\n"
      "# TYPE q_total counter\n"
      "q_total{type=\"A\",rcode=\"NOERROR\"} 12\n"
      "q_total{type=\"AAAA\",rcode=\"NOERROR\",} 1.5e+06 1700000000000\n"
      "\n"
      "# a free comment\n"
      "up 1\n"
      "h_bucket{le=\"+Inf\"} +Inf\n"
      "g -Inf\n"
      "n NaN\n",
      &error);
  INFO(error);
  REQUIRE(parsed);
  CHECK(parsed->helps.at("q_total") == "Queries.");
  CHECK(parsed->types.at("q_total") == "counter");
  CHECK(parsed->samples.at("q_total{type=\"A\",rcode=\"NOERROR\"}") == 12);
  CHECK(parsed->samples.at("q_total{type=\"AAAA\",rcode=\"NOERROR\"}") == 1.5e6);
  CHECK(parsed->samples.at("up") == 1);
  CHECK(std::isinf(parsed->samples.at("h_bucket{le=\"+Inf\"}")));
  CHECK(parsed->samples.at("g") < 0);
  CHECK(std::isnan(parsed->samples.at("n")));
}

TEST_CASE("escaped label values read back to the same key", "[metrics]") {
  const std::optional<ParsedText> parsed = ParseText("x{v=\"a\\\\b\\n\\\"c\\\"\"} 1\n");
  REQUIRE(parsed);
  CHECK(parsed->samples.count("x{v=\"a\\\\b\\n\\\"c\\\"\"}") == 1);
}

TEST_CASE("malformed lines are rejected with their line number", "[metrics]") {
  const auto [text, reason] = GENERATE(table<std::string, std::string>({
      {"1bad 1\n", "bad metric name"},
      {"x{a=\"1\" 1\n", "unterminated labels"},
      {"x{a=1} 1\n", "bad label"},
      {"x{__a=\"1\"} 1\n", "bad label"},
      {"x{a=\"\\t\"} 1\n", "bad label value"},
      {"x\n", "no value"},
      {"x one\n", "bad value"},
      {"x inf\n", "bad value"},
      {"x 1 2 3\n", "bad timestamp"},
      {"x 1\nx 2\n", "repeated series"},
      {"# TYPE x counter\n# TYPE x gauge\n", "second TYPE"},
      {"# TYPE x widget\n", "unknown type"},
      {"# HELP x a\n# HELP x b\n", "second HELP"},
  }));
  std::string error;
  CAPTURE(text);
  CHECK_FALSE(ParseText(text, &error));
  CHECK_THAT(error, Catch::Contains(reason) && Catch::StartsWith("line "));
}

}  // namespace
}  // namespace kdns::metrics
