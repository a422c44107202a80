#include "kubedns/records/object_filter.h"

#include <catch2/catch.hpp>

#include "common/k8s/decode.h"

namespace kdns::kubedns {
namespace {

k8s::Service ServiceIn(std::string ns, k8s::LabelSelector::Labels labels = {}) {
  k8s::Service service;
  service.meta.ns = std::move(ns);
  service.meta.name = "web";
  service.labels = std::move(labels);
  return service;
}

k8s::LabelSelector Selector(std::string_view text) {
  auto selector = k8s::LabelSelector::Parse(text);
  REQUIRE(selector.ok());
  return *selector;
}

TEST_CASE("Without options every object is served as it is", "[kubedns][filter]") {
  ObjectFilter filter({});
  CHECK(filter.ServesNamespace("anything"));
  CHECK(filter.Serves(ServiceIn("default")));
  CHECK_FALSE(filter.names_pods());
}

TEST_CASE("--namespaces serves only the namespaces named", "[kubedns][filter]") {
  ObjectFilter filter({{"shop", "kube-system"}, {}, false});
  CHECK(filter.ServesNamespace("shop"));
  CHECK(filter.ServesNamespace("kube-system"));
  CHECK_FALSE(filter.ServesNamespace("default"));
  CHECK_FALSE(filter.ServesNamespace("sho"));
  CHECK(filter.Serves(ServiceIn("shop")));
  CHECK_FALSE(filter.Serves(ServiceIn("default")));
}

TEST_CASE("--labels serves only the Services the selector matches", "[kubedns][filter]") {
  ObjectFilter filter({{"shop"}, Selector("app in (web,api),!internal"), false});
  CHECK(filter.Serves(ServiceIn("shop", {{"app", "web"}})));
  CHECK_FALSE(filter.Serves(ServiceIn("shop", {{"app", "web"}, {"internal", ""}})));
  CHECK_FALSE(filter.Serves(ServiceIn("shop", {{"app", "db"}})));
  CHECK_FALSE(filter.Serves(ServiceIn("shop")));
  CHECK_FALSE(filter.Serves(ServiceIn("default", {{"app", "web"}})));  // both must hold
}

TEST_CASE("--endpoint-pod-names names endpoints without a hostname by their pod",
          "[kubedns][filter]") {
  auto slice = k8s::DecodeEndpointSlice(
      R"({"metadata":{"name":"web-1","namespace":"shop",)"
      R"("labels":{"kubernetes.io/service-name":"web"}},"addressType":"IPv4","endpoints":[)"
      R"({"addresses":["10.0.0.1"],"targetRef":{"kind":"Pod","name":"web-7d4b9-x2x"}},)"
      R"({"addresses":["10.0.0.2"],"hostname":"pet-0","targetRef":{"kind":"Pod","name":"p"}},)"
      R"({"addresses":["10.0.0.3"],"targetRef":{"kind":"Pod","name":"dotted.name"}},)"
      R"({"addresses":["10.0.0.4"]}]})");
  REQUIRE(slice.ok());
  SECTION("on") {
    ObjectFilter filter({{}, {}, true});
    CHECK(filter.names_pods());
    CHECK(filter.NamePods(*slice) == 1);  // "dotted.name" is not a DNS label
    CHECK(slice->endpoints[0].hostname == "web-7d4b9-x2x");
    CHECK(slice->endpoints[1].hostname == "pet-0");  // a hostname wins
    CHECK(slice->endpoints[2].hostname.empty());     // keeps its dashed IP
    CHECK(slice->endpoints[3].hostname.empty());     // no pod
  }
  SECTION("off") {
    ObjectFilter filter({});
    CHECK(filter.NamePods(*slice) == 0);
    CHECK(slice->endpoints[0].hostname.empty());
  }
}

}  // namespace
}  // namespace kdns::kubedns
