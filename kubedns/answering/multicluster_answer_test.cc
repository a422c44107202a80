// The multicluster answer rules that the conformance cases (test/conformance/
// multicluster_cases.json, run against the binary) cannot show: answers before a zone has
// synced, zones that are off, and a large headless import over UDP and TCP.
#include "kubedns/answering/multicluster_answer.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/parser.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"
#include "common/k8s/decode.h"

namespace kdns::kubedns {
namespace {

MulticlusterConfig Config() {
  MulticlusterConfig config;
  config.mcs_zone = dns::Name::FromText("clusterset.local.");
  config.kubeslice_zone = dns::Name::FromText("slice.local.");
  return config;
}

struct Answered {
  dns::Rcode rcode;
  dns::Message message;
  bool truncated;
};

Answered Ask(const MulticlusterAnswerer& answerer, const MulticlusterSnapshot* snapshot,
             const std::string& name, dns::RrType type, size_t limit) {
  const dns::testing::ParsedQuery asked =
      dns::testing::QuerySpec(name).Type(type).Id(0).Recursion(false).Parsed();
  const dns::Query* query = &asked.query;
  std::vector<uint8_t> buffer(65535);
  dns::MessageBuilder builder(buffer, limit);
  REQUIRE(builder.StartResponse((*query)) == dns::BuildError::kOk);
  dns::Name lower = (*query).qname.Lowercased();
  auto zone = answerer.ZoneOf(lower);
  REQUIRE(zone != MulticlusterAnswerer::Zone::kNone);
  dns::Rcode rcode = answerer.Answer(zone, snapshot, 7, lower, (*query), builder);
  builder.header().rcode = rcode;
  bool truncated = builder.truncated();
  return {rcode, dns::testing::Parse(builder.Finish()), truncated};
}

}  // namespace

TEST_CASE("a multicluster zone answers SERVFAIL until its source has synced",
          "[kubedns][multicluster]") {
  MulticlusterAnswerer answerer(Config());
  MulticlusterWriter writer;
  CHECK(Ask(answerer, nullptr, "web.shop.svc.clusterset.local.", dns::RrType::kA, 512).rcode ==
        dns::Rcode::kServFail);
  CHECK(Ask(answerer, &writer.snapshot(), "x.slice.local.", dns::RrType::kA, 512).rcode ==
        dns::Rcode::kServFail);
  writer.MarkKubesliceSynced();
  CHECK(Ask(answerer, &writer.snapshot(), "x.slice.local.", dns::RrType::kA, 512).rcode ==
        dns::Rcode::kNxDomain);
  // Each zone on its own: MCS is still not synced.
  CHECK(Ask(answerer, &writer.snapshot(), "web.shop.svc.clusterset.local.", dns::RrType::kA, 512)
            .rcode == dns::Rcode::kServFail);
}

TEST_CASE("a zone that is off is not the multicluster answerer's", "[kubedns][multicluster]") {
  MulticlusterConfig config;
  config.mcs_zone = dns::Name::FromText("clusterset.local.");
  MulticlusterAnswerer answerer(config);
  CHECK(answerer.ZoneOf(*dns::Name::FromText("a.slice.local.")) ==
        MulticlusterAnswerer::Zone::kNone);
  CHECK(answerer.ZoneOf(*dns::Name::FromText("a.clusterset.local.")) ==
        MulticlusterAnswerer::Zone::kMcs);
  CHECK(answerer.ZoneOf(*dns::Name::FromText("clusterset.local.")) ==
        MulticlusterAnswerer::Zone::kMcs);
  CHECK(answerer.ZoneOf(*dns::Name::FromText("local.")) == MulticlusterAnswerer::Zone::kNone);
}

TEST_CASE("a large headless import is cut at a whole RRset over UDP and whole over TCP",
          "[kubedns][multicluster]") {
  MulticlusterWriter writer;
  auto import = k8s::DecodeServiceImport(
      R"({"metadata":{"name":"big","namespace":"shop"},"spec":{"type":"Headless"}})");
  REQUIRE(import.ok());
  writer.UpsertServiceImport(import.value());
  std::string endpoints = "[";
  for (int i = 0; i < 1000; ++i) {
    endpoints += std::string(i ? "," : "") + R"({"addresses":["10.8.)" + std::to_string(i / 250) +
                 "." + std::to_string(i % 250 + 1) + R"("]})";
  }
  endpoints += "]";
  auto slice = k8s::DecodeEndpointSlice(
      R"({"metadata":{"name":"big-east","namespace":"shop","labels":{)"
      R"("multicluster.kubernetes.io/service-name":"big",)"
      R"("multicluster.kubernetes.io/source-cluster":"east"}},"addressType":"IPv4","endpoints":)" +
      endpoints + "}");
  REQUIRE(slice.ok());
  writer.UpsertSlice(slice.value());
  writer.MarkMcsSynced();
  MulticlusterAnswerer answerer(Config());
  Answered udp =
      Ask(answerer, &writer.snapshot(), "big.shop.svc.clusterset.local.", dns::RrType::kA, 512);
  CHECK(udp.truncated);
  CHECK(udp.message.answers.empty());
  CHECK(udp.message.authorities.empty());  // no SOA in a truncated answer
  Answered tcp =
      Ask(answerer, &writer.snapshot(), "big.shop.svc.clusterset.local.", dns::RrType::kA, 65535);
  CHECK_FALSE(tcp.truncated);
  CHECK(tcp.message.answers.size() == 1000);
}

TEST_CASE("a headless import without a ready endpoint has no name below it either",
          "[kubedns][multicluster]") {
  // KEP-1645's DNS specification (2.4.1): no ready endpoint, NXDOMAIN; RFC 8020: nothing
  // exists below an NXDOMAIN, so its ports' SRV names are NXDOMAIN too, not NODATA.
  MulticlusterWriter writer;
  auto import = k8s::DecodeServiceImport(
      R"({"metadata":{"name":"idle","namespace":"shop"},"spec":{"type":"Headless",)"
      R"("ports":[{"name":"pg","protocol":"TCP","port":5432}]}})");
  REQUIRE(import.ok());
  writer.UpsertServiceImport(import.value());
  auto slice = k8s::DecodeEndpointSlice(
      R"({"metadata":{"name":"idle-east","namespace":"shop","labels":{)"
      R"("multicluster.kubernetes.io/service-name":"idle",)"
      R"("multicluster.kubernetes.io/source-cluster":"east"}},"addressType":"IPv4",)"
      R"("endpoints":[{"addresses":["10.1.0.9"],"conditions":{"ready":false}}],)"
      R"("ports":[{"name":"pg","protocol":"TCP","port":5432}]})");
  REQUIRE(slice.ok());
  writer.UpsertSlice(slice.value());
  writer.MarkMcsSynced();
  MulticlusterAnswerer answerer(Config());
  for (const char* name :
       {"idle.shop.svc.clusterset.local.", "_tcp.idle.shop.svc.clusterset.local.",
        "_pg._tcp.idle.shop.svc.clusterset.local."}) {
    INFO(name);
    Answered answered = Ask(answerer, &writer.snapshot(), name, dns::RrType::kSrv, 512);
    CHECK(answered.rcode == dns::Rcode::kNxDomain);
    CHECK(answered.message.answers.empty());
    CHECK(answered.message.authorities.size() == 1);  // the zone's SOA
  }
}

}  // namespace kdns::kubedns
