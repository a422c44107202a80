#include "common/config/runtime_switches.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/config/kube_dns_config.h"
#include "test/unit/temp_dir.h"

namespace kdns::config {
namespace {

using Detail = QueryLogDetail;

TEST_CASE("the query log switch reads true, extra and false, whitespace aside",
          "[config][switches]") {
  Detail detail = Detail::kOff;
  std::string error;
  REQUIRE(ParseLogQueriesSwitch("true", &detail, &error));
  CHECK(detail == Detail::kBasic);
  REQUIRE(ParseLogQueriesSwitch(" extra\n", &detail, &error));
  CHECK(detail == Detail::kExtra);
  REQUIRE(ParseLogQueriesSwitch("false", &detail, &error));
  CHECK(detail == Detail::kOff);
  CHECK_FALSE(ParseLogQueriesSwitch("yes", &detail, &error));
  CHECK(error == "kdns.logQueries: \"yes\" is not true, extra or false");
  for (Detail each : {Detail::kOff, Detail::kBasic, Detail::kExtra}) {
    REQUIRE(ParseLogQueriesSwitch(LogQueriesSwitchValue(each), &detail, &error));
    CHECK(detail == each);
  }
}

TEST_CASE("the debug data switch reads true and false", "[config][switches]") {
  bool on = false;
  std::string error;
  REQUIRE(ParseDebugDataSwitch("true\n", &on, &error));
  CHECK(on);
  REQUIRE(ParseDebugDataSwitch("false", &on, &error));
  CHECK_FALSE(on);
  CHECK_FALSE(ParseDebugDataSwitch("on", &on, &error));
  CHECK(error == "kdns.debugData: \"on\" is not true or false");
}

TEST_CASE("the switches come with the kube-dns ConfigMap, absent ones left to the flags",
          "[config][switches]") {
  testing::TempDir dir;
  std::ofstream(dir.File("kdns.logQueries")) << "true\n";
  ConfigDirData data;
  std::string error;
  REQUIRE(ReadConfigDir(dir.path(), &data, &error));
  KubeDnsConfig config;
  REQUIRE(ParseKubeDnsConfig(data, &config, &error));
  CHECK(config.switches.log_queries == Detail::kBasic);
  CHECK_FALSE(config.switches.debug_data.has_value());
  CHECK(config.ToString() == "stubDomains: {}; upstreamNameservers: []; kdns.logQueries=true");
  CHECK_FALSE(config.empty());
}

TEST_CASE("an invalid switch rejects the whole ConfigMap version, as any invalid value",
          "[config][switches]") {
  ConfigDirData data;
  data.upstream_nameservers = R"(["10.0.0.1"])";
  data.debug_data = "sometimes";
  KubeDnsConfig config;
  std::string error;
  CHECK_FALSE(ParseKubeDnsConfig(data, &config, &error));
  CHECK(error == "kdns.debugData: \"sometimes\" is not true or false");
}

}  // namespace
}  // namespace kdns::config
