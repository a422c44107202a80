#include "common/metrics/text_merge.h"

#include <catch2/catch.hpp>

namespace kdns::metrics {
namespace {

constexpr std::string_view kBase =
    "# HELP process_cpu_seconds_total CPU.\n"
    "# TYPE process_cpu_seconds_total counter\n"
    "process_cpu_seconds_total 12\n"
    "# HELP kdns_build_info Build.\n"
    "# TYPE kdns_build_info gauge\n"
    "kdns_build_info{program=\"frontend-cache\",version=\"1\"} 1\n"
    "# HELP latency_seconds Latency.\n"
    "# TYPE latency_seconds histogram\n"
    "latency_seconds_bucket{le=\"+Inf\"} 3\n"
    "latency_seconds_sum 0.5\n"
    "latency_seconds_count 3\n";

TEST_CASE("a family both texts export gets the other's samples under one header",
          "[metrics][text_merge]") {
  std::string error;
  auto merged = MergeText(kBase,
                          "# HELP process_cpu_seconds_total CPU of the nanny.\n"
                          "# TYPE process_cpu_seconds_total counter\n"
                          "process_cpu_seconds_total{program=\"nanny\"} 0.5\n"
                          "# HELP kdns_nanny_config_error Error.\n"
                          "# TYPE kdns_nanny_config_error gauge\n"
                          "kdns_nanny_config_error 0\n"
                          "# HELP kdns_build_info Build.\n"
                          "# TYPE kdns_build_info gauge\n"
                          "kdns_build_info{program=\"nanny\",version=\"1\"} 1\n",
                          &error);
  REQUIRE(merged);
  CHECK(*merged ==
        "# HELP process_cpu_seconds_total CPU.\n"
        "# TYPE process_cpu_seconds_total counter\n"
        "process_cpu_seconds_total 12\n"
        "process_cpu_seconds_total{program=\"nanny\"} 0.5\n"
        "# HELP kdns_build_info Build.\n"
        "# TYPE kdns_build_info gauge\n"
        "kdns_build_info{program=\"frontend-cache\",version=\"1\"} 1\n"
        "kdns_build_info{program=\"nanny\",version=\"1\"} 1\n"
        "# HELP latency_seconds Latency.\n"
        "# TYPE latency_seconds histogram\n"
        "latency_seconds_bucket{le=\"+Inf\"} 3\n"
        "latency_seconds_sum 0.5\n"
        "latency_seconds_count 3\n"
        "# HELP kdns_nanny_config_error Error.\n"
        "# TYPE kdns_nanny_config_error gauge\n"
        "kdns_nanny_config_error 0\n");
}

TEST_CASE("a merge that would not be valid exposition is refused", "[metrics][text_merge]") {
  std::string error;
  // The same series in both.
  CHECK_FALSE(MergeText(kBase, "process_cpu_seconds_total 1\n", &error));
  CHECK(error.find("process_cpu_seconds_total") != std::string::npos);
  // Another type.
  CHECK_FALSE(MergeText(kBase,
                        "# TYPE process_cpu_seconds_total gauge\n"
                        "process_cpu_seconds_total{program=\"nanny\"} 1\n",
                        &error));
  CHECK(error == "process_cpu_seconds_total is a gauge here but a counter already");
  // Not exposition text at all.
  CHECK_FALSE(MergeText(kBase, "this is not {metrics\n", &error));
  CHECK_FALSE(error.empty());
  // Empty: the base as it is.
  auto same = MergeText(kBase, "", &error);
  REQUIRE(same);
  CHECK(*same == kBase);
}

}  // namespace
}  // namespace kdns::metrics
