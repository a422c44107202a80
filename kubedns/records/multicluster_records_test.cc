#include "kubedns/records/multicluster_records.h"

#include <catch2/catch.hpp>

#include "common/k8s/decode.h"
#include "common/limits/limits.h"

namespace kdns::kubedns {
namespace {

k8s::ServiceImport Import(const char* json) {
  auto import = k8s::DecodeServiceImport(json);
  REQUIRE(import.ok());
  return import.value();
}

k8s::EndpointSlice Slice(const std::string& name, const std::string& import,
                         const std::string& cluster, const std::string& endpoints,
                         const std::string& ns = "shop") {
  std::string labels = R"("multicluster.kubernetes.io/service-name":")" + import + "\"";
  if (!cluster.empty()) {
    labels += R"(,"multicluster.kubernetes.io/source-cluster":")" + cluster + "\"";
  }
  auto slice = k8s::DecodeEndpointSlice(
      R"({"metadata":{"name":")" + name + R"(","namespace":")" + ns + R"(","labels":{)" + labels +
      R"(}},"addressType":"IPv4","endpoints":)" + endpoints +
      R"(,"ports":[{"name":"pg","protocol":"TCP","port":5432}]})");
  REQUIRE(slice.ok());
  return slice.value();
}

dns::Name Name(const char* text) { return *dns::Name::FromText(text); }

std::vector<std::string> Addresses(const McsImportRecords& records) {
  std::vector<std::string> out;
  for (const auto& ip : records.addresses()) out.push_back(ip.ToString());
  return out;
}

constexpr const char* kHeadless = R"({"metadata":{"name":"db","namespace":"shop"},
  "spec":{"type":"Headless","ports":[{"name":"pg","protocol":"TCP","port":5432}]}})";

}  // namespace

TEST_CASE("an MCS import is built from its slices of every cluster, ready endpoints only",
          "[kubedns][multicluster]") {
  MulticlusterWriter writer;
  writer.UpsertSlice(Slice("db-east", "db", "East",
                           R"([{"addresses":["10.1.0.5"],"hostname":"DB-0"},)"
                           R"({"addresses":["10.1.0.7"],"conditions":{"ready":false}}])"));
  // Slices before their import answer nothing.
  CHECK_FALSE(writer.snapshot().FindImport("shop", "db")->answerable());
  CHECK_FALSE(writer.snapshot().HasImportNamespace("shop"));
  writer.UpsertServiceImport(Import(kHeadless));
  writer.UpsertSlice(Slice("db-west", "db", "west", R"([{"addresses":["10.2.0.5"]}])"));
  const McsImportRecords* records = writer.snapshot().FindImport("shop", "db");
  REQUIRE(records != nullptr);
  CHECK(records->headless());
  CHECK(Addresses(*records) == std::vector<std::string>{"10.1.0.5", "10.2.0.5"});
  CHECK(records->FindHosts("east", "db-0").size() == 1);  // cluster and hostname lower-cased
  CHECK(records->FindHosts("west", "10-2-0-5").size() == 1);
  CHECK(records->FindHosts("east", "10-1-0-7").empty());  // not ready
  CHECK(records->HasCluster("west"));
  CHECK_FALSE(records->HasCluster("north"));
  REQUIRE(records->FindSrv("pg", "tcp") != nullptr);
  CHECK(records->TargetPort(*records->FindSrv("pg", "tcp"), "east") == 5432);
  CHECK(writer.snapshot().stats().mcs_imports == 1);
  CHECK(writer.snapshot().stats().mcs_endpoints == 3);
  CHECK(writer.snapshot().HasImportNamespace("shop"));
}

TEST_CASE("an MCS slice that moves, loses its label or its cluster updates both imports",
          "[kubedns][multicluster]") {
  MulticlusterWriter writer;
  writer.UpsertServiceImport(Import(kHeadless));
  writer.UpsertServiceImport(Import(R"({"metadata":{"name":"other","namespace":"shop"},
    "spec":{"type":"Headless"}})"));
  writer.UpsertSlice(Slice("s1", "db", "east", R"([{"addresses":["10.1.0.5"]}])"));
  writer.UpsertSlice(Slice("s1", "other", "east", R"([{"addresses":["10.1.0.5"]}])"));
  CHECK(writer.snapshot().FindImport("shop", "db")->hosts().empty());
  CHECK(writer.snapshot().FindImport("shop", "other")->hosts().size() == 1);

  writer.UpsertSlice(Slice("s1", "other", "", R"([{"addresses":["10.1.0.5"]}])"));
  CHECK(writer.snapshot().FindImport("shop", "other")->hosts().empty());  // cannot be named
  CHECK(writer.snapshot().stats().unnamed_slices == 1);

  writer.UpsertSlice(Slice("s2", "db", "east.example", R"([{"addresses":["10.1.0.6"]}])"));
  CHECK(writer.snapshot().FindImport("shop", "db")->hosts().empty());  // not one label
  CHECK(writer.snapshot().stats().unnamed_slices == 2);

  writer.ReplaceSlices({});
  CHECK(writer.snapshot().stats().unnamed_slices == 0);
  CHECK(writer.snapshot().stats().mcs_endpoints == 0);

  writer.ReplaceServiceImports({Import(kHeadless)});
  CHECK(writer.snapshot().FindImport("shop", "other") == nullptr);
  writer.DeleteServiceImport("shop", "db");
  CHECK(writer.snapshot().FindImport("shop", "db") == nullptr);
  CHECK_FALSE(writer.snapshot().HasImportNamespace("shop"));
  CHECK(writer.snapshot().stats().mcs_imports == 0);
}

TEST_CASE("a headless MCS SRV target has its own cluster's port, found when asked",
          "[kubedns][multicluster]") {
  auto slice = [](const std::string& name, const std::string& cluster, int port) {
    auto decoded = k8s::DecodeEndpointSlice(
        R"({"metadata":{"name":")" + name +
        R"(","namespace":"shop","labels":{)"
        R"("multicluster.kubernetes.io/service-name":"db",)"
        R"("multicluster.kubernetes.io/source-cluster":")" +
        cluster +
        R"("}},)"
        R"("addressType":"IPv4","endpoints":[{"addresses":["10.9.0.)" +
        std::to_string(port % 250) + R"("]}],"ports":[{"name":"PG","protocol":"TCP","port":)" +
        std::to_string(port) + "}]}");
    REQUIRE(decoded.ok());
    return decoded.value();
  };
  MulticlusterWriter writer;
  writer.UpsertServiceImport(Import(kHeadless));
  writer.UpsertSlice(slice("a-east", "east", 6000));
  writer.UpsertSlice(slice("b-east", "east", 6001));  // the last slice by name wins
  writer.UpsertSlice(slice("west", "west", 7000));
  const McsImportRecords* records = writer.snapshot().FindImport("shop", "db");
  REQUIRE(records != nullptr);
  const auto* set = records->FindSrv("pg", "tcp");
  REQUIRE(set != nullptr);
  CHECK(records->TargetPort(*set, "east") == 6001);
  CHECK(records->TargetPort(*set, "west") == 7000);
  CHECK(records->TargetPort(*set, "north") == 5432);  // no slice port: the import's
}

TEST_CASE("an MCS import or hostname that is not a DNS label is not served, and counted",
          "[kubedns][multicluster]") {
  using limits::Limit;
  MulticlusterWriter writer;
  const uint64_t before = limits::LimitHits(Limit::kImportInvalid);
  // A custom resource's name need only be a DNS subdomain: "a.b" would never be asked for.
  writer.UpsertServiceImport(Import(R"({"metadata":{"name":"db.x","namespace":"shop"},
    "spec":{"type":"Headless"}})"));
  CHECK(writer.snapshot().FindImport("shop", "db.x") == nullptr);
  CHECK(limits::LimitHits(Limit::kImportInvalid) - before == 1);

  writer.UpsertServiceImport(Import(kHeadless));
  const std::string huge(40'000, 'h');
  writer.UpsertSlice(Slice("db-east", "db", "east",
                           R"([{"addresses":["10.1.0.5"],"hostname":")" + huge +
                               R"("},)"
                               R"({"addresses":["10.1.0.6"],"hostname":"a.b"},)"
                               R"({"addresses":["10.1.0.7"],"hostname":"db-7"}])"));
  CHECK(limits::LimitHits(Limit::kImportInvalid) - before == 3);
  const McsImportRecords* records = writer.snapshot().FindImport("shop", "db");
  REQUIRE(records != nullptr);
  // Named by their addresses instead; still in the bare name's answer.
  CHECK(records->FindHosts("east", "10-1-0-5").size() == 1);
  CHECK(records->FindHosts("east", "10-1-0-6").size() == 1);
  CHECK(records->FindHosts("east", "db-7").size() == 1);
  CHECK(records->addresses().size() == 3);
}

TEST_CASE("an MCS import over the endpoint cap is not served until its slices shrink",
          "[kubedns][multicluster]") {
  using limits::Limit;
  MulticlusterWriter writer;
  ImportLimits limits;
  limits.max_endpoints = 2;
  writer.SetLimits(limits);
  writer.UpsertServiceImport(Import(kHeadless));
  writer.UpsertSlice(Slice("s1", "db", "east", R"([{"addresses":["10.1.0.5"]}])"));
  writer.UpsertSlice(Slice("s2", "db", "west", R"([{"addresses":["10.2.0.5"]}])"));
  CHECK(writer.snapshot().FindImport("shop", "db")->answerable());
  const uint64_t before = limits::LimitHits(Limit::kImportTooLarge);
  writer.UpsertSlice(Slice("s3", "db", "west", R"([{"addresses":["10.2.0.6"]}])"));
  CHECK(limits::LimitHits(Limit::kImportTooLarge) - before == 1);
  CHECK_FALSE(writer.snapshot().FindImport("shop", "db")->answerable());
  CHECK_FALSE(writer.snapshot().HasImportNamespace("shop"));
  writer.DeleteSlice("shop", "s3");
  CHECK(writer.snapshot().FindImport("shop", "db")->answerable());
  CHECK(writer.snapshot().FindImport("shop", "db")->addresses().size() == 2);
}

TEST_CASE("an MCS slice of another namespace never adds to an import", "[kubedns][multicluster]") {
  // The MCS names need no claims: svc.ns.svc.<zone> is built from namespace ns only.
  MulticlusterWriter writer;
  writer.UpsertServiceImport(Import(kHeadless));
  writer.UpsertSlice(Slice("s1", "db", "east", R"([{"addresses":["10.1.0.5"]}])"));
  writer.UpsertSlice(Slice("evil", "db", "east", R"([{"addresses":["10.6.6.6"]}])", "tenant"));
  CHECK(Addresses(*writer.snapshot().FindImport("shop", "db")) ==
        std::vector<std::string>{"10.1.0.5"});
  CHECK_FALSE(writer.snapshot().FindImport("tenant", "db")->answerable());
}

TEST_CASE("kubeslice names map to their endpoints' IPs, inside the zone only",
          "[kubedns][multicluster]") {
  MulticlusterWriter writer;
  writer.SetKubesliceZone("slice.local");
  auto import = k8s::DecodeKubesliceServiceImport(R"({"metadata":{"name":"a","namespace":"x"},
    "spec":{"dnsName":"a.x.svc.slice.local","aliases":["a.example.com","b.slice.local"]},
    "status":{"endpoints":[{"ip":"10.0.0.1","dnsName":"e1.c1.a.x.svc.slice.local"},
                           {"ip":"10.0.0.2"},{"dnsName":"e3.c1.a.x.svc.slice.local"}]}})");
  REQUIRE(import.ok());
  writer.UpsertKubesliceServiceImport(import.value());
  const auto& snapshot = writer.snapshot();
  REQUIRE(snapshot.FindKubesliceName(Name("a.x.svc.slice.local")) != nullptr);
  CHECK(snapshot.FindKubesliceName(Name("a.x.svc.slice.local"))->size() == 2);
  CHECK(snapshot.FindKubesliceName(Name("b.slice.local"))->size() == 2);
  CHECK(snapshot.FindKubesliceName(Name("e1.c1.a.x.svc.slice.local"))->size() == 1);
  CHECK(snapshot.FindKubesliceName(Name("e3.c1.a.x.svc.slice.local")) == nullptr);  // no IP yet
  CHECK(snapshot.FindKubesliceName(Name("a.example.com")) == nullptr);        // outside the zone
  REQUIRE(snapshot.FindKubesliceName(Name("x.svc.slice.local")) != nullptr);  // a parent
  CHECK(snapshot.FindKubesliceName(Name("x.svc.slice.local"))->empty());
  CHECK(snapshot.FindKubesliceName(Name("svc.slice.local"))->empty());
  CHECK(snapshot.stats().kubeslice_imports == 1);
  CHECK(snapshot.stats().kubeslice_endpoints == 2);

  writer.DeleteKubesliceServiceImport("x", "a");
  CHECK(writer.snapshot().FindKubesliceName(Name("a.x.svc.slice.local")) == nullptr);
  CHECK(writer.snapshot().stats().kubeslice_imports == 0);
}

}  // namespace kdns::kubedns
