#include "common/metrics/process_metrics.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <ctime>
#include <string>

#include "common/base/version.h"
#include "common/metrics/text_parser.h"

namespace kdns::metrics {
namespace {

// The value of the sample line that starts with `series ` in `text`, or -1.
double Sample(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST_CASE("stat's start time is field 22, counted after the last parenthesis", "[metrics]") {
  // comm may hold spaces and ')': "(a) b)" must not shift the fields.
  const std::string stat =
      "42 (a) b) S 1 42 42 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 1000 200 "
      "18446744073709551615\n";
  CHECK(ParseStatStartTicks(stat) == 987654ULL);
  CHECK_FALSE(ParseStatStartTicks("42 (x) S 1 2"));
  CHECK_FALSE(ParseStatStartTicks("no parenthesis"));
}

TEST_CASE("/proc/stat's btime line is the boot time", "[metrics]") {
  CHECK(ParseBootTime("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n") == 1700000000ULL);
  CHECK_FALSE(ParseBootTime("cpu 1 2 3\n"));
  CHECK_FALSE(ParseBootTime("btime soon\n"));
}

TEST_CASE("statm gives virtual and resident pages", "[metrics]") {
  const auto pages = ParseStatm("2000 300 100 1 0 500 0\n");
  REQUIRE(pages);
  CHECK(pages->first == 2000ULL);
  CHECK(pages->second == 300ULL);
  CHECK_FALSE(ParseStatm(""));
}

TEST_CASE("process metrics and build info describe this process, in valid text format",
          "[metrics]") {
  Registry registry;
  RegisterProcessMetrics(registry, "unit-test");
  const std::string text = "\n" + registry.Render();
  std::string error;
  CHECK(ParseText(registry.Render(), &error).has_value());
  INFO(text);
  CHECK(Sample(text, "process_cpu_seconds_total") > 0);
  CHECK(Sample(text, "process_resident_memory_bytes") > 0);
  CHECK(Sample(text, "process_virtual_memory_bytes") >=
        Sample(text, "process_resident_memory_bytes"));
  CHECK(Sample(text, "process_open_fds") >= 3);  // at least stdin, stdout, stderr
  CHECK(Sample(text, "process_max_fds") >= Sample(text, "process_open_fds"));
  const double start = Sample(text, "process_start_time_seconds");
  const double now = static_cast<double>(std::time(nullptr));
  CHECK(start > 1e9);
  CHECK(start <= now + 1);
  CHECK(Sample(text, std::string("kdns_build_info{program=\"unit-test\",version=\"") + kVersion +
                         "\",revision=\"" + kRevision + "\"}") == 1);
}

TEST_CASE("open fds follow the descriptors the process holds", "[metrics]") {
  Registry registry;
  RegisterProcessMetrics(registry, "unit-test");
  const double before = Sample("\n" + registry.Render(), "process_open_fds");
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const double during = Sample("\n" + registry.Render(), "process_open_fds");
  close(fds[0]);
  close(fds[1]);
  CHECK(during == before + 2);
}

}  // namespace
}  // namespace kdns::metrics

namespace kdns::metrics {
namespace {

TEST_CASE("labelled process series carry the program, for a scrape shared with another",
          "[metrics]") {
  Registry registry;
  RegisterProcessMetrics(registry, "nanny", ProcessSeries::kProgramLabel);
  const std::string text = "\n" + registry.Render();
  std::string error;
  CHECK(ParseText(registry.Render(), &error).has_value());
  INFO(text);
  CHECK(Sample(text, "process_cpu_seconds_total{program=\"nanny\"}") > 0);
  CHECK(Sample(text, "process_resident_memory_bytes{program=\"nanny\"}") > 0);
  CHECK(Sample(text, "process_open_fds{program=\"nanny\"}") >= 3);
  CHECK(Sample(text, "process_start_time_seconds{program=\"nanny\"}") > 1e9);
  CHECK(text.find("\nprocess_cpu_seconds_total ") == std::string::npos);
}

}  // namespace
}  // namespace kdns::metrics
