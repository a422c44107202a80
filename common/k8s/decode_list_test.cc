// List responses (paginated Service and EndpointSlice lists, watch-cache and etcd lists, the
// conformance objects file, mixed and malformed lists) decoded from the real API server's
// captured responses in test/fixtures/k8s-api/ (see its README).
#include <catch2/catch.hpp>
#include <map>

#include "common/k8s/decode.h"
#include "common/k8s/testing.h"

namespace kdns::k8s {
namespace {

using testing::Ips;
using testing::Keys;
using testing::ReadCapture;
using testing::ReadFixture;

ObjectList DecodeListCapture(std::string_view name) {
  INFO(name);
  auto list = DecodeList(ReadCapture(name));
  INFO(list.error());
  REQUIRE(list.ok());
  CHECK(list->bad_items == 0);
  CHECK(list->other_items == 0);
  CHECK(list->warnings.empty());
  return std::move(list).value();
}

const Service& FindService(const std::vector<Service>& services, std::string_view key) {
  for (const Service& service : services) {
    if (service.meta.ns + "/" + service.meta.name == key) return service;
  }
  FAIL("no service " << key);
  return services.front();
}

TEST_CASE("The first page of a paginated Service list has a continue token", "[k8s]") {
  ObjectList page = DecodeListCapture("01-list-services-p1");
  CHECK(page.kind == "ServiceList");
  CHECK(page.meta.resource_version.text == "107");
  CHECK(page.meta.resource_version.number == 107u);
  CHECK(page.meta.continue_token ==
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTA3LCJzdGFydCI6ImRlZmF1bHQvZHVhbFx1MDAwMCJ9");
  CHECK(page.meta.remaining_item_count == 9);
  CHECK(Keys(page.services) ==
        std::vector<std::string>{"apps/noready@90", "apps/split@89", "default/dual@83"});
  CHECK(page.endpoint_slices.empty());

  const Service& noready = page.services[0];
  CHECK(noready.meta.uid == "194483bf-b332-4bd7-9801-fba15f62ab2c");
  CHECK(noready.headless);
  CHECK(noready.cluster_ips.empty());
  CHECK(noready.ports == std::vector<ServicePort>{{"http", Protocol::kTcp, 8080}});
  const Service& dual = page.services[2];
  CHECK_FALSE(dual.headless);
  CHECK(dual.type == ServiceType::kClusterIP);
  CHECK(dual.cluster_ips == Ips({"10.96.0.20", "fd00:10:96::20"}));
  CHECK(dual.ports == std::vector<ServicePort>{{"http", Protocol::kTcp, 80}});
}

TEST_CASE("Every page of a paginated list reports the first page's version", "[k8s]") {
  auto [name, remaining, keys] =
      GENERATE(table<std::string, std::optional<int64_t>, std::vector<std::string>>({
          {"01-list-services-p2",
           6,
           {"default/external@92", "default/external-internal@93", "default/headless@88"}},
          {"01-list-services-p3",
           3,
           {"default/kubernetes@72", "default/unnamed@85", "default/v6only@87"}},
          {"01-list-services-p4",
           std::nullopt,
           {"e2e/dns-test-service-2@91", "kube-system/kube-dns@80", "load/big@94"}},
      }));
  ObjectList page = DecodeListCapture(name);
  CHECK(page.meta.resource_version.text == "107");
  CHECK(page.meta.remaining_item_count == remaining);
  CHECK(page.meta.continue_token.empty() == !remaining.has_value());
  CHECK(Keys(page.services) == keys);
}

TEST_CASE("Services of every shape decode from the paginated list", "[k8s]") {
  std::vector<Service> all;
  for (int i = 1; i <= 4; ++i) {
    ObjectList page = DecodeListCapture("01-list-services-p" + std::to_string(i));
    for (Service& service : page.services) all.push_back(std::move(service));
  }
  REQUIRE(all.size() == 12);
  const Service& external = FindService(all, "default/external");
  CHECK(external.type == ServiceType::kExternalName);
  CHECK(external.external_name == "www.example.com");
  CHECK(external.cluster_ips.empty());
  CHECK(external.ports.empty());
  CHECK(FindService(all, "default/external-internal").external_name ==
        "kubernetes.default.svc.cluster.local");
  const Service& headless = FindService(all, "default/headless");
  CHECK(headless.headless);
  CHECK(headless.cluster_ips.empty());
  CHECK(FindService(all, "default/unnamed").ports ==
        std::vector<ServicePort>{{"", Protocol::kTcp, 8080}});
  CHECK(FindService(all, "default/v6only").cluster_ips == Ips({"fd00:10:96::40"}));
  CHECK(FindService(all, "default/kubernetes").cluster_ips == Ips({"10.96.0.1"}));
  CHECK(FindService(all, "kube-system/kube-dns").ports ==
        std::vector<ServicePort>{{"dns", Protocol::kUdp, 53},
                                 {"dns-tcp", Protocol::kTcp, 53},
                                 {"metrics", Protocol::kTcp, 9153}});
  for (const Service& service : all) CHECK_FALSE(service.publish_not_ready_addresses);
}

TEST_CASE("Pretty-printed and HTTP/2 pages decode like the compact page", "[k8s]") {
  ObjectList compact = DecodeListCapture("01-list-services-p1");
  ObjectList pretty = DecodeListCapture("01x-list-services-p1-curl-useragent");
  ObjectList http2 = DecodeListCapture("01h2-list-services-p1-http2");
  CHECK(pretty.meta.resource_version.text == "107");
  CHECK(pretty.meta.continue_token == compact.meta.continue_token);
  CHECK(http2.meta.resource_version.text == "131");
  CHECK(http2.meta.remaining_item_count == 9);
  CHECK_FALSE(http2.meta.continue_token.empty());
  for (const ObjectList* other : {&pretty, &http2}) {
    REQUIRE(other->services.size() == compact.services.size());
    for (size_t i = 0; i < compact.services.size(); ++i) {
      CHECK(testing::Key(other->services[i].meta) == testing::Key(compact.services[i].meta));
      CHECK(other->services[i].cluster_ips == compact.services[i].cluster_ips);
      CHECK(other->services[i].ports == compact.services[i].ports);
      CHECK(other->services[i].headless == compact.services[i].headless);
    }
  }
}

TEST_CASE("The EndpointSlice list decodes every slice, the 1000-endpoint one too", "[k8s]") {
  auto name = GENERATE(as<std::string>{}, "02-list-endpointslices", "02x-list-endpointslices-gzip");
  ObjectList list = DecodeListCapture(name);
  CHECK(list.kind == "EndpointSliceList");
  CHECK(list.meta.resource_version.text == "107");
  CHECK(list.meta.continue_token.empty());
  CHECK_FALSE(list.meta.remaining_item_count.has_value());
  CHECK(Keys(list.endpoint_slices) ==
        std::vector<std::string>{"apps/noready-1@99", "apps/split-1@97", "apps/split-2@98",
                                 "default/headless-abc12@95", "default/headless-v6xyz@96",
                                 "default/kubernetes@75", "e2e/dns-test-service-2-q@100",
                                 "load/big-1@101"});
  std::map<std::string, const EndpointSlice*> by_name;
  for (const EndpointSlice& slice : list.endpoint_slices) by_name[slice.meta.name] = &slice;

  const EndpointSlice& kubernetes = *by_name["kubernetes"];
  CHECK(kubernetes.service_name == "kubernetes");
  REQUIRE(kubernetes.endpoints.size() == 1);
  CHECK(kubernetes.endpoints[0].addresses == Ips({"192.0.2.10"}));
  CHECK(kubernetes.endpoints[0].ready);
  CHECK(kubernetes.ports == std::vector<EndpointPort>{{"https", Protocol::kTcp, 6443}});

  const EndpointSlice& noready = *by_name["noready-1"];
  REQUIRE(noready.endpoints.size() == 1);
  CHECK_FALSE(noready.endpoints[0].ready);

  const EndpointSlice& v6 = *by_name["headless-v6xyz"];
  CHECK(v6.address_type == AddressType::kIPv6);
  CHECK(v6.service_name == "headless");
  REQUIRE(v6.endpoints.size() == 2);
  CHECK(v6.endpoints[0].addresses == Ips({"fd00:10:244::10"}));
  CHECK(v6.endpoints[0].hostname == "my-pet");
  CHECK(v6.endpoints[1].hostname.empty());

  const EndpointSlice& big = *by_name["big-1"];
  CHECK(big.service_name == "big");
  REQUIRE(big.endpoints.size() == 1000);
  CHECK(big.endpoints.front().addresses == Ips({"10.250.0.1"}));
  CHECK(big.endpoints.back().addresses == Ips({"10.250.3.250"}));
  size_t ready = 0;
  for (const Endpoint& endpoint : big.endpoints) ready += endpoint.ready ? 1 : 0;
  CHECK(ready == 1000);
}

TEST_CASE("Lists from the watch cache and from etcd decode alike", "[k8s]") {
  auto [name, version, continued, count] = GENERATE(table<std::string, std::string, bool, size_t>({
      {"05a-list-continue-inconsistent", "141", true, 3},
      {"05b-list-services-before-restart", "142", false, 1},
      {"06-list-in-missing-namespace", "136", false, 0},
      {"07-list-services-rv0", "117", false, 12},
      {"07-list-services-rv0-limit3", "117", false, 12},
      {"07-list-services-notolderthan", "117", false, 12},
      {"07-list-services-notolderthan-limit3", "122", true, 3},
      {"07-list-services-exact-oldrv", "107", false, 12},
  }));
  ObjectList list = DecodeListCapture(name);
  CHECK(list.kind == "ServiceList");
  CHECK(list.meta.resource_version.text == version);
  CHECK(list.meta.continue_token.empty() == !continued);
  CHECK(list.services.size() == count);
}

TEST_CASE("The old-version list holds the old state", "[k8s]") {
  ObjectList old_state = DecodeListCapture("07-list-services-exact-oldrv");
  ObjectList current = DecodeListCapture("07-list-services-notolderthan");
  auto has = [](const ObjectList& list, std::string_view key) {
    for (const Service& service : list.services) {
      if (testing::Key(service.meta) == key) return true;
    }
    return false;
  };
  CHECK(has(old_state, "default/unnamed@85"));
  CHECK_FALSE(has(old_state, "default/web@116"));
  CHECK_FALSE(has(current, "default/unnamed@85"));
  CHECK(has(current, "default/web@116"));
}

TEST_CASE("The conformance objects file decodes every Service and EndpointSlice", "[k8s]") {
  auto list = DecodeList(ReadFixture("conformance/objects.json"));
  REQUIRE(list.ok());
  CHECK(list->kind == "List");
  CHECK(list->meta.resource_version.empty());
  CHECK(list->meta.continue_token.empty());
  CHECK(list->bad_items == 0);
  CHECK(list->other_items == 0);
  CHECK(list->warnings.empty());
  REQUIRE(list->services.size() == 12);
  REQUIRE(list->endpoint_slices.size() == 7);

  const std::vector<Service>& services = list->services;
  CHECK(FindService(services, "default/kubernetes").cluster_ips == Ips({"10.96.0.1"}));
  CHECK(FindService(services, "default/dual").cluster_ips == Ips({"10.96.0.20", "fd00:10:96::20"}));
  CHECK(FindService(services, "default/v6only").cluster_ips == Ips({"fd00:10:96::40"}));
  CHECK(FindService(services, "default/unnamed").ports ==
        std::vector<ServicePort>{{"", Protocol::kTcp, 8080}});
  CHECK(FindService(services, "kube-system/kube-dns").ports.size() == 3);
  for (std::string_view key :
       {"default/headless", "apps/split", "apps/noready", "e2e/dns-test-service-2", "load/big"}) {
    INFO(key);
    CHECK(FindService(services, key).headless);
    CHECK(FindService(services, key).cluster_ips.empty());
  }
  CHECK(FindService(services, "default/external").type == ServiceType::kExternalName);
  CHECK(FindService(services, "default/external").external_name == "www.example.com");
  CHECK(FindService(services, "default/external-internal").external_name ==
        "kubernetes.default.svc.cluster.local");
  for (const Service& service : services) CHECK_FALSE(service.publish_not_ready_addresses);

  std::map<std::string, const EndpointSlice*> slices;
  for (const EndpointSlice& slice : list->endpoint_slices) slices[slice.meta.name] = &slice;
  const EndpointSlice& abc = *slices["headless-abc12"];
  CHECK(abc.service_name == "headless");
  CHECK(abc.address_type == AddressType::kIPv4);
  REQUIRE(abc.endpoints.size() == 4);
  CHECK(abc.endpoints[0].hostname == "my-pet");
  CHECK(abc.endpoints[1].hostname == "my-pet-2");
  CHECK(abc.endpoints[2].hostname.empty());
  CHECK(abc.endpoints[2].addresses == Ips({"10.244.1.12"}));
  CHECK(abc.endpoints[2].ready);
  CHECK(abc.endpoints[3].addresses == Ips({"10.244.1.13"}));
  CHECK_FALSE(abc.endpoints[3].ready);
  CHECK(abc.ports == std::vector<EndpointPort>{{"https", Protocol::kTcp, 443}});
  const EndpointSlice& v6 = *slices["headless-v6xyz"];
  CHECK(v6.address_type == AddressType::kIPv6);
  CHECK(v6.endpoints[1].addresses == Ips({"fd00:10:244::12"}));
  CHECK(slices["split-2"]->service_name == "split");
  CHECK_FALSE(slices["noready-1"]->endpoints[0].ready);
  CHECK(slices["dns-test-service-2-q"]->endpoints[0].hostname == "dns-querier-2");
  CHECK(slices["dns-test-service-2-q"]->service_name == "dns-test-service-2");
  CHECK(slices["big-1"]->endpoints.size() == 1000);
}

TEST_CASE("A mixed List needs each item's kind and skips other kinds", "[k8s]") {
  auto list = DecodeList(R"({"kind":"List","items":[
      {"kind":"Namespace","metadata":{"name":"apps"}},
      {"kind":"Service","metadata":{"name":"a","namespace":"d"},"spec":{"clusterIP":"10.0.0.1"}},
      {"metadata":{"name":"b","namespace":"d"},"spec":{}},
      {"kind":"Endpoints","metadata":{"name":"a","namespace":"d"},
       "subsets":[{"addresses":[{"ip":"10.1.0.1"}],"ports":[{"port":80}]}]},
      {"kind":"Pod","metadata":{"name":"p","namespace":"d"},"status":{"podIP":"10.1.0.1"}},
      {"kind":"Status"},
      {"kind":5}]})");
  REQUIRE(list.ok());
  CHECK(Keys(list->services) == std::vector<std::string>{"d/a@"});
  REQUIRE(list->endpoints.size() == 1);
  CHECK(list->endpoints[0].slices.size() == 1);
  CHECK(list->pods.size() == 1);
  CHECK(list->other_items == 2);
  CHECK(list->bad_items == 2);
  CHECK(list->warnings.messages() ==
        std::vector<std::string>{
            R"(items[0]: kind "Namespace" ignored)", "items[2]: kind: missing in a List",
            R"(items[5]: kind "Status" ignored)", "items[6]: kind: not a string"});
}

TEST_CASE("A bad list item is skipped and reported, the rest kept", "[k8s]") {
  auto list = DecodeList(R"({"kind":"EndpointSliceList","metadata":{"resourceVersion":"5"},
      "items":[
        {"metadata":{"name":"ok","namespace":"d"},"addressType":"IPv4",
         "endpoints":[{"addresses":["10.0.0.1","10.1.x"]}]},
        {"metadata":{"name":"headless-abc12","namespace":"default"},"addressType":"IPv4",
         "endpoints":[{"addresses":["10.0.0.1"]},{},{"addresses":[true]}]},
        {"kind":"Service","metadata":{"name":"s","namespace":"d"}},
        null,
        {"metadata":{"name":"ok2","namespace":"d"},"addressType":"IPv6"}]})");
  REQUIRE(list.ok());
  CHECK(Keys(list->endpoint_slices) == std::vector<std::string>{"d/ok@", "d/ok2@"});
  CHECK(list->bad_items == 3);
  CHECK(list->warnings.count() == 4);
  CHECK(
      list->warnings.messages() ==
      std::vector<std::string>{
          R"(items[0]: EndpointSlice d/ok: endpoints[0].addresses[1]: not an IP address: "10.1.x")",
          "items[1]: EndpointSlice default/headless-abc12: endpoints[2].addresses[0]: not a "
          "string: true",
          R"(items[2]: kind "Service" in a EndpointSliceList)", "items[3]: not an object: null"});
}

TEST_CASE("Lists that are not lists fail with one clear line", "[k8s]") {
  auto [json, error] = GENERATE(table<std::string, std::string>({
      {"", "List: not JSON: The document is empty. at offset 0"},
      {"not json", "List: not JSON: Invalid value. at offset 1"},
      {R"({"kind":"ServiceList","items":[)", "List: not JSON: Invalid value. at offset 31"},
      {"[]", "List: not an object: an array"},
      {"null", "List: not an object: null"},
      {"{}", "List: kind: missing"},
      {R"({"kind":7})", "List: kind: not a string: 7"},
      {R"({"kind":"NamespaceList","items":[]})", R"(List: unsupported kind "NamespaceList")"},
      {R"({"kind":"StatusList"})", R"(List: unsupported kind "StatusList")"},
      {R"({"kind":"ServiceList","items":{}})", "ServiceList: items: not an array: an object"},
      {R"({"kind":"ServiceList","metadata":[]})", "ServiceList: metadata: not an object: an array"},
      {R"({"kind":"ServiceList","metadata":{"resourceVersion":107}})",
       "ServiceList: metadata.resourceVersion: not a string: 107"},
      {R"({"kind":"ServiceList","metadata":{"continue":false}})",
       "ServiceList: metadata.continue: not a string: false"},
      {R"({"kind":"ServiceList","metadata":{"remainingItemCount":1e30}})",
       "ServiceList: metadata.remainingItemCount: out of range: 1e+30"},
      {R"({"kind":"ServiceList","metadata":{"remainingItemCount":-1}})",
       "ServiceList: metadata.remainingItemCount: out of range: -1"},
  }));
  INFO(json);
  auto list = DecodeList(json);
  REQUIRE_FALSE(list.ok());
  CHECK(list.error() == error);
}

TEST_CASE("A list with null or absent items and metadata is empty", "[k8s]") {
  auto json = GENERATE(as<std::string>{}, R"({"kind":"ServiceList"})",
                       R"({"kind":"ServiceList","metadata":null,"items":null})",
                       R"({"kind":"PodList","metadata":{},"items":[]})");
  auto list = DecodeList(json);
  REQUIRE(list.ok());
  CHECK(list->services.empty());
  CHECK(list->meta.resource_version.empty());
  CHECK_FALSE(list->meta.remaining_item_count.has_value());
}

TEST_CASE("Warnings keep the first messages and count them all", "[k8s]") {
  std::string items;
  for (int i = 0; i < 100; ++i) items += std::string(i ? "," : "") + "1";
  auto list = DecodeList(R"({"kind":"ServiceList","items":[)" + items + "]}");
  REQUIRE(list.ok());
  CHECK(list->bad_items == 100);
  CHECK(list->warnings.count() == 100);
  CHECK(list->warnings.messages().size() == Warnings::kMaxKept);
}

}  // namespace
}  // namespace kdns::k8s
