// The ServiceImport decoders (MCS and kubeslice), the multicluster slice labels, and how
// lists and watch events tell the two ServiceImport kinds apart by their apiVersion.
#include <catch2/catch.hpp>

#include "common/k8s/decode.h"
#include "common/k8s/testing.h"

namespace kdns::k8s {
namespace {

using testing::Ip;
using testing::Ips;

constexpr std::string_view kMcsV1alpha1 = R"({"apiVersion":"multicluster.x-k8s.io/v1alpha1",
  "kind":"ServiceImport","metadata":{"name":"web","namespace":"shop","resourceVersion":"9"},
  "spec":{"type":"ClusterSetIP","ips":["10.42.0.5","fd00:42::5","bogus"],
          "ports":[{"name":"http","protocol":"TCP","port":80},{"name":"x","protocol":"QUIC","port":1},
                   {"protocol":"UDP","port":53}]},
  "status":{"clusters":[{"cluster":"east"},{"cluster":"west"}]}})";

}  // namespace

TEST_CASE("An MCS ServiceImport decodes its type, IPs and ports from spec", "[k8s]") {
  Warnings warnings;
  auto import = DecodeServiceImport(kMcsV1alpha1, &warnings);
  REQUIRE(import.ok());
  CHECK(import->meta.ns == "shop");
  CHECK(import->meta.name == "web");
  CHECK(import->type == ServiceImportType::kClusterSetIP);
  CHECK(import->ips == Ips({"10.42.0.5", "fd00:42::5"}));
  CHECK(import->ports ==
        std::vector<ServicePort>{{"http", Protocol::kTcp, 80}, {"", Protocol::kUdp, 53}});
  CHECK(warnings.count() == 2);  // the bad IP and the unknown protocol
}

TEST_CASE("A v1beta1 MCS ServiceImport has its fields at the top level", "[k8s]") {
  auto import = DecodeServiceImport(R"({"apiVersion":"multicluster.x-k8s.io/v1beta1",
    "kind":"ServiceImport","metadata":{"name":"db","namespace":"shop"},"type":"Headless",
    "ips":["10.42.0.9"],"ports":[{"name":"pg","protocol":"TCP","port":5432}]})");
  REQUIRE(import.ok());
  CHECK(import->type == ServiceImportType::kHeadless);
  CHECK(import->ips.empty());  // a headless import has no ClusterSetIP
  CHECK(import->ports.size() == 1);
}

TEST_CASE("A malformed MCS ServiceImport is refused with its field named", "[k8s]") {
  auto bad_type = DecodeServiceImport(
      R"({"metadata":{"name":"a","namespace":"b"},"spec":{"type":"LoadBalancer"}})");
  REQUIRE_FALSE(bad_type.ok());
  CHECK(bad_type.error() ==
        "ServiceImport b/a: spec.type: unknown ServiceImport type \"LoadBalancer\"");
  auto bad_ips =
      DecodeServiceImport(R"({"metadata":{"name":"a","namespace":"b"},"spec":{"ips":[7]}})");
  REQUIRE_FALSE(bad_ips.ok());
  CHECK(bad_ips.error() == "ServiceImport b/a: spec.ips[0]: not a string: 7");
  CHECK_FALSE(DecodeServiceImport(R"({"metadata":{"name":"a"}})").ok());
  CHECK_FALSE(DecodeServiceImport(R"({"metadata":{"name":"a","namespace":"b"},"spec":[]})").ok());
}

TEST_CASE("A kubeslice ServiceImport keeps its names canonical and its endpoint IPs", "[k8s]") {
  Warnings warnings;
  auto import = DecodeKubesliceServiceImport(R"({"apiVersion":"networking.kubeslice.io/v1beta1",
    "kind":"ServiceImport","metadata":{"name":"iperf","namespace":"kubeslice-demo"},
    "spec":{"sliceName":"demo","dnsName":"IPerf.Demo.svc.slice.local.",
            "aliases":["iperf.example.slice.local","",7]},
    "status":{"endpoints":[]}})");
  REQUIRE_FALSE(import.ok());  // 7 is not a string
  CHECK(import.error() ==
        "KubesliceServiceImport kubeslice-demo/iperf: spec.aliases[2]: not a string: 7");

  import =
      DecodeKubesliceServiceImport(R"({"metadata":{"name":"iperf","namespace":"kubeslice-demo"},
    "spec":{"dnsName":"IPerf.Demo.svc.slice.local.","aliases":["Alias.slice.local",""]},
    "status":{"endpoints":[
      {"name":"a","ip":"10.1.1.5","port":5201,"clusterId":"w1","dnsName":"a.w1.iperf.demo.svc.slice.local"},
      {"name":"b","ip":"fd00::7","dnsName":"b.w2.iperf.demo.svc.slice.local."},
      {"name":"c","dnsName":"c.w3.iperf.demo.svc.slice.local"},
      {"name":"d","ip":"not-an-ip"}]}})",
                                   &warnings);
  REQUIRE(import.ok());
  CHECK(import->dns_name == "iperf.demo.svc.slice.local");
  CHECK(import->aliases == std::vector<std::string>{"alias.slice.local"});
  REQUIRE(import->endpoints.size() == 4);
  CHECK(import->endpoints[0].ip == Ip("10.1.1.5"));
  CHECK(import->endpoints[0].dns_name == "a.w1.iperf.demo.svc.slice.local");
  CHECK(import->endpoints[1].ip == Ip("fd00::7"));
  CHECK(import->endpoints[1].dns_name == "b.w2.iperf.demo.svc.slice.local");
  CHECK_FALSE(import->endpoints[2].ip.has_value());
  CHECK_FALSE(import->endpoints[3].ip.has_value());
  CHECK(warnings.count() == 1);
}

TEST_CASE("A kubeslice ServiceImport keeps its creation time, warning about a malformed one",
          "[k8s]") {
  Warnings warnings;
  auto import = DecodeKubesliceServiceImport(
      R"({"metadata":{"name":"a","namespace":"b","creationTimestamp":"2024-05-01T12:00:00Z"}})",
      &warnings);
  REQUIRE(import.ok());
  CHECK(import->creation_unix_s == 1714564800);
  import = DecodeKubesliceServiceImport(
      R"({"metadata":{"name":"a","namespace":"b","creationTimestamp":null}})", &warnings);
  REQUIRE(import.ok());
  CHECK_FALSE(import->creation_unix_s.has_value());
  CHECK(warnings.count() == 0);
  import = DecodeKubesliceServiceImport(
      R"({"metadata":{"name":"a","namespace":"b","creationTimestamp":"yesterday"}})", &warnings);
  REQUIRE(import.ok());  // the object is kept: only its claim order is unknown
  CHECK_FALSE(import->creation_unix_s.has_value());
  CHECK(warnings.count() == 1);
  CHECK_FALSE(DecodeKubesliceServiceImport(
                  R"({"metadata":{"name":"a","namespace":"b","creationTimestamp":7}})")
                  .ok());
}

TEST_CASE("An EndpointSlice carries its MCS labels", "[k8s]") {
  auto slice = DecodeEndpointSlice(R"({"metadata":{"name":"web-east","namespace":"shop",
    "labels":{"multicluster.kubernetes.io/service-name":"web",
              "multicluster.kubernetes.io/source-cluster":"east"}},
    "addressType":"IPv4","endpoints":[{"addresses":["10.1.0.1"]}]})");
  REQUIRE(slice.ok());
  CHECK(slice->service_name.empty());
  CHECK(slice->multicluster_service_name == "web");
  CHECK(slice->source_cluster == "east");
}

TEST_CASE("Lists tell the two ServiceImport kinds apart by apiVersion", "[k8s]") {
  auto mixed = DecodeList(R"({"kind":"List","apiVersion":"v1","items":[
    {"apiVersion":"multicluster.x-k8s.io/v1alpha1","kind":"ServiceImport",
     "metadata":{"name":"a","namespace":"x"},"spec":{"type":"Headless"}},
    {"apiVersion":"networking.kubeslice.io/v1beta1","kind":"ServiceImport",
     "metadata":{"name":"b","namespace":"x"},"spec":{"dnsName":"b.x.svc.slice.local"}},
    {"apiVersion":"mesh.avesha.io/v1beta1","kind":"ServiceImport",
     "metadata":{"name":"c","namespace":"x"},"spec":{"dnsName":"c.x.svc.slice.local"}},
    {"apiVersion":"other.example.com/v1","kind":"ServiceImport",
     "metadata":{"name":"d","namespace":"x"}},
    {"kind":"ServiceImport","metadata":{"name":"e","namespace":"x"}}]})");
  REQUIRE(mixed.ok());
  CHECK(testing::Keys(mixed->service_imports) == std::vector<std::string>{"x/a@"});
  CHECK(testing::Keys(mixed->kubeslice_service_imports) ==
        std::vector<std::string>{"x/b@", "x/c@"});
  CHECK(mixed->other_items == 2);
  CHECK(mixed->bad_items == 0);

  auto typed = DecodeList(R"({"kind":"ServiceImportList","apiVersion":"mesh.avesha.io/v1beta1",
    "metadata":{"resourceVersion":"12"},
    "items":[{"metadata":{"name":"b","namespace":"x"},"spec":{"dnsName":"b.x.svc.slice.local"}}]})");
  REQUIRE(typed.ok());
  CHECK(typed->kubeslice_service_imports.size() == 1);
  CHECK(typed->meta.resource_version.text == "12");

  auto unknown = DecodeList(R"({"kind":"ServiceImportList","apiVersion":"x.io/v1","items":[]})");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error() == "List: unsupported kind \"ServiceImportList\"");
}

TEST_CASE("Watch events of ServiceImports check the group being watched", "[k8s]") {
  auto event = DecodeWatchEvent(
      R"({"type":"ADDED","object":{"apiVersion":"multicluster.x-k8s.io/v1alpha1",
      "kind":"ServiceImport","metadata":{"name":"a","namespace":"x","resourceVersion":"5"},
      "spec":{"type":"ClusterSetIP","ips":["10.42.0.1"]}}})",
      Kind::kServiceImport);
  REQUIRE(event.ok());
  REQUIRE(std::holds_alternative<ServiceImport>(event->object));
  CHECK(std::get<ServiceImport>(event->object).ips == Ips({"10.42.0.1"}));

  auto other_group = DecodeWatchEvent(
      R"({"type":"ADDED","object":{"apiVersion":"networking.kubeslice.io/v1beta1",
      "kind":"ServiceImport","metadata":{"name":"a","namespace":"x"}}})",
      Kind::kServiceImport);
  REQUIRE_FALSE(other_group.ok());
  CHECK(other_group.error() == "ADDED event: kind \"ServiceImport\" in a watch of ServiceImport");

  auto bookmark = DecodeWatchEvent(
      R"({"type":"BOOKMARK","object":{"apiVersion":"networking.kubeslice.io/v1beta1",
      "kind":"ServiceImport","metadata":{"resourceVersion":"77"}}})",
      Kind::kKubesliceServiceImport);
  REQUIRE(bookmark.ok());
  CHECK(bookmark->meta.resource_version.text == "77");
}

}  // namespace kdns::k8s
