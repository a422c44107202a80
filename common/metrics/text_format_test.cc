#include "common/metrics/text_format.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace kdns::metrics {
namespace {

TEST_CASE("metric names follow the Prometheus pattern", "[metrics]") {
  CHECK(IsValidMetricName("kubedns_dnsmasq_hits"));
  CHECK(IsValidMetricName("skydns_skydns_dns_request_count_total"));
  CHECK(IsValidMetricName("_leading_underscore"));
  CHECK(IsValidMetricName("recording:rule:name"));
  CHECK(IsValidMetricName("a1"));
  CHECK_FALSE(IsValidMetricName(""));
  CHECK_FALSE(IsValidMetricName("1abc"));
  CHECK_FALSE(IsValidMetricName("with-dash"));
  CHECK_FALSE(IsValidMetricName("with space"));
  CHECK_FALSE(IsValidMetricName("caf\xc3\xa9"));
}

TEST_CASE("label names exclude colons and the reserved double underscore", "[metrics]") {
  CHECK(IsValidLabelName("rcode"));
  CHECK(IsValidLabelName("_type"));
  CHECK(IsValidLabelName("le"));
  CHECK_FALSE(IsValidLabelName(""));
  CHECK_FALSE(IsValidLabelName("a:b"));
  CHECK_FALSE(IsValidLabelName("__name__"));
  CHECK_FALSE(IsValidLabelName("9lives"));
  CHECK_FALSE(IsValidLabelName("x.y"));
}

TEST_CASE("full names are joined from their non-empty parts", "[metrics]") {
  CHECK(BuildFqName("kubedns", "dnsmasq", "hits") == "kubedns_dnsmasq_hits");
  CHECK(BuildFqName("skydns", "skydns", "dns_request_count_total") ==
        "skydns_skydns_dns_request_count_total");
  CHECK(BuildFqName("", "probe", "errors") == "probe_errors");
  CHECK(BuildFqName("kubedns", "", "errors") == "kubedns_errors");
  CHECK(BuildFqName("kubedns", "dnsmasq", "") == "");
}

TEST_CASE("floats are formatted as the Prometheus Go client formats them", "[metrics]") {
  const double inf = std::numeric_limits<double>::infinity();
  const auto [value, text] = GENERATE_COPY(table<double, std::string>({
      {0.0, "0"},
      {-0.0, "0"},
      {1.0, "1"},
      {-1.0, "-1"},
      {0.25, "0.25"},
      {0.5, "0.5"},
      {8192.0, "8192"},
      {-1.5, "-1.5"},
      {0.1, "0.1"},
      {1.0 / 3, "0.3333333333333333"},
      {0.0001, "0.0001"},
      {0.00001, "1e-05"},
      {1e-9, "1e-09"},
      {123456.5, "123456.5"},
      {999999.0, "999999"},
      {1e6, "1e+06"},
      {1234567.0, "1.234567e+06"},
      {1e21, "1e+21"},
      {-2.5e-300, "-2.5e-300"},
      {inf, "+Inf"},
      {-inf, "-Inf"},
      {std::nan(""), "NaN"},
  }));
  CAPTURE(value);
  CHECK(FormatGoFloat(value) == text);
}

TEST_CASE("sample values print exact integers without an exponent", "[metrics]") {
  const auto [value, text] = GENERATE(table<double, std::string>({
      {0.0, "0"},
      {1.0, "1"},
      {1234567.0, "1234567"},
      {-42.0, "-42"},
      {9007199254740991.0, "9007199254740991"},
      {9007199254740992.0, "9.007199254740992e+15"},
      {1e21, "1e+21"},
      {0.25, "0.25"},
      {1e-9, "1e-09"},
  }));
  CAPTURE(value);
  CHECK(FormatValue(value) == text);
}

TEST_CASE("HELP escapes backslash and newline but not quotes", "[metrics]") {
  std::string out;
  AppendEscapedHelp(out, "a\\b\n\"c\"");
  CHECK(out == R"(a\\b\n"c")");
}

TEST_CASE("label values escape backslash, quote and newline", "[metrics]") {
  std::string out;
  AppendEscapedLabelValue(out, "a\\b\n\"c\"");
  CHECK(out == R"(a\\b\n\"c\")");
}

TEST_CASE("a sample line lists its labels in order and the extra label last", "[metrics]") {
  const std::vector<std::string> names = {"type", "rcode"};
  const std::vector<std::string> values = {"A", "NOERROR"};
  std::string out;
  AppendSampleLine(out, "q", names, values, "3");
  AppendSampleLine(out, "h_bucket", names, values, "1", "le", "0.25");
  AppendSampleLine(out, "plain", {}, {}, "7");
  AppendSampleLine(out, "only_le", {}, {}, "2", "le", "+Inf");
  CHECK(out ==
        "q{type=\"A\",rcode=\"NOERROR\"} 3\n"
        "h_bucket{type=\"A\",rcode=\"NOERROR\",le=\"0.25\"} 1\n"
        "plain 7\n"
        "only_le{le=\"+Inf\"} 2\n");
}

TEST_CASE("a family header has HELP then TYPE", "[metrics]") {
  std::string out;
  AppendFamilyHeader(out, "x_total", "Queries.\nAll of them.", "counter");
  CHECK(out == "# HELP x_total Queries.\\nAll of them.\n# TYPE x_total counter\n");
}

}  // namespace
}  // namespace kdns::metrics
