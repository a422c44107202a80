#include "kubedns/records/cache_dump.h"

#include <rapidjson/document.h>

#include <catch2/catch.hpp>

#include "common/k8s/decode.h"
#include "kubedns/records/records_testing.h"

namespace kdns::kubedns {
using testing::ConformanceSnapshot;

TEST_CASE("the cache dump is valid JSON describing every service", "[kubedns][cache_dump]") {
  auto snapshot = ConformanceSnapshot();
  rapidjson::Document doc;
  std::string json = CacheJson(snapshot.get(), 1000, 2000);
  REQUIRE_FALSE(doc.Parse(json.c_str()).HasParseError());
  CHECK(doc["synced"].GetBool());
  CHECK(doc["generation"].GetUint64() == 1);
  CHECK(doc["services"].Size() == 12);
  CHECK(doc["stats"]["services"].GetUint64() == 12);
  CHECK_FALSE(doc["truncated"].GetBool());
  const auto& first = doc["services"][0];
  CHECK(std::string(first["namespace"].GetString()) == "apps");
  CHECK(std::string(first["name"].GetString()) == "noready");
  CHECK(std::string(first["kind"].GetString()) == "Headless");
}

TEST_CASE("the cache dump is bounded in services and hosts", "[kubedns][cache_dump]") {
  auto snapshot = ConformanceSnapshot();
  rapidjson::Document doc;
  std::string json = CacheJson(snapshot.get(), 3, 10);
  REQUIRE_FALSE(doc.Parse(json.c_str()).HasParseError());
  CHECK(doc["services"].Size() == 3);
  CHECK(doc["truncated"].GetBool());
  json = CacheJson(snapshot.get(), 1000, 10);
  REQUIRE_FALSE(doc.Parse(json.c_str()).HasParseError());
  for (const auto& service : doc["services"].GetArray()) CHECK(service["hosts"].Size() <= 10);
  CHECK(doc["truncated"].GetBool());  // big.load has 1000 hosts
}

TEST_CASE("the cache dump before any snapshot says so", "[kubedns][cache_dump]") {
  rapidjson::Document doc;
  std::string json = CacheJson(nullptr);
  REQUIRE_FALSE(doc.Parse(json.c_str()).HasParseError());
  CHECK_FALSE(doc["synced"].GetBool());
}

TEST_CASE("the cache dump shows the multicluster zones' records", "[kubedns]") {
  auto list = k8s::DecodeList(testing::ReadFile("test/conformance/multicluster_objects.json"));
  REQUIRE(list.ok());
  RecordTreeWriter writer;
  writer.multicluster().SetKubesliceZone("slice.local");
  writer.ReplaceAll({list.value().services, list.value().endpoint_slices, list.value().endpoints,
                     list.value().service_imports, list.value().kubeslice_service_imports});
  auto snapshot = writer.Publish();
  rapidjson::Document doc;
  doc.Parse(CacheJson(snapshot.get()).c_str());
  REQUIRE(doc.IsObject());
  REQUIRE(doc["service_imports"].Size() == 4);
  const auto& db = doc["service_imports"][1];
  CHECK(std::string(db["name"].GetString()) == "db");
  CHECK(std::string(db["kind"].GetString()) == "Headless");
  CHECK(std::string(db["hosts"][0].GetString()) == "10-1-0-6.east 10.1.0.6");
  CHECK(doc["kubeslice_names"]["iperf-server.iperf.svc.slice.local"].Size() == 3);
  CHECK_FALSE(doc["truncated"].GetBool());
}

}  // namespace kdns::kubedns
