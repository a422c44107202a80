// Single-object decoding through the public API, with hand-written objects for the rules the
// captures do not show: defaulting, dual-stack fallbacks, v1 Endpoints, Pods, and malformed
// input of every kind.
#include "common/k8s/decode_objects.h"

#include <catch2/catch.hpp>

#include "common/k8s/decode.h"
#include "common/k8s/testing.h"

namespace kdns::k8s {
namespace {

using testing::Ip;
using testing::Ips;

// A Service with the given spec members.
std::string ServiceJson(std::string_view spec) {
  return R"({"kind":"Service","metadata":{"name":"web","namespace":"default","uid":"u1",)"
         R"("resourceVersion":"42"},"spec":{)" +
         std::string(spec) + "}}";
}

std::string SliceJson(std::string_view address_type, std::string_view endpoints,
                      std::string_view ports = R"([{"name":"http","protocol":"TCP","port":80}])") {
  return R"({"metadata":{"name":"web-abc","namespace":"default","resourceVersion":"7",)"
         R"("labels":{"kubernetes.io/service-name":"web","other":"x"}},"addressType":)" +
         std::string(address_type) + R"(,"endpoints":)" + std::string(endpoints) + R"(,"ports":)" +
         std::string(ports) + "}";
}

TEST_CASE("A ClusterIP service decodes its IPs, ports and metadata", "[k8s]") {
  auto service = DecodeService(ServiceJson(
      R"("type":"ClusterIP","clusterIP":"10.96.0.20","clusterIPs":["10.96.0.20","fd00:10:96::20"],)"
      R"("ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":8080},)"
      R"({"name":"dns","protocol":"UDP","port":53},{"name":"s","protocol":"SCTP","port":9}])"));
  REQUIRE(service.ok());
  CHECK(service->meta.ns == "default");
  CHECK(service->meta.name == "web");
  CHECK(service->meta.uid == "u1");
  CHECK(service->meta.resource_version.text == "42");
  CHECK(service->meta.resource_version.number == 42u);
  CHECK(service->type == ServiceType::kClusterIP);
  CHECK_FALSE(service->headless);
  CHECK(service->cluster_ips == Ips({"10.96.0.20", "fd00:10:96::20"}));
  CHECK(service->ports == std::vector<ServicePort>{{"http", Protocol::kTcp, 80},
                                                   {"dns", Protocol::kUdp, 53},
                                                   {"s", Protocol::kSctp, 9}});
  CHECK_FALSE(service->publish_not_ready_addresses);
}

TEST_CASE("Service defaults: no type is ClusterIP, no protocol is TCP", "[k8s]") {
  auto service = DecodeService(ServiceJson(R"("clusterIP":"10.0.0.1","ports":[{"port":80}])"));
  REQUIRE(service.ok());
  CHECK(service->type == ServiceType::kClusterIP);
  CHECK(service->cluster_ips == Ips({"10.0.0.1"}));
  CHECK(service->ports == std::vector<ServicePort>{{"", Protocol::kTcp, 80}});
}

TEST_CASE("clusterIP is the fallback when clusterIPs is absent, null or empty", "[k8s]") {
  auto ips = GENERATE(as<std::string>{}, "", R"("clusterIPs":null,)", R"("clusterIPs":[],)");
  auto service = DecodeService(ServiceJson(ips + R"("clusterIP":"fd00::1")"));
  REQUIRE(service.ok());
  CHECK(service->cluster_ips == Ips({"fd00::1"}));
}

TEST_CASE("A clusterIP of None makes a headless service with no IPs", "[k8s]") {
  auto spec = GENERATE(as<std::string>{}, R"("clusterIP":"None","clusterIPs":["None"])",
                       R"("clusterIP":"None")", R"("clusterIPs":["None","10.0.0.1"])");
  auto service = DecodeService(ServiceJson(spec + R"(,"publishNotReadyAddresses":true)"));
  REQUIRE(service.ok());
  CHECK(service->headless);
  CHECK(service->cluster_ips.empty());
  CHECK(service->publish_not_ready_addresses);
}

TEST_CASE("An ExternalName service has its name and no IPs", "[k8s]") {
  auto service = DecodeService(
      ServiceJson(R"("type":"ExternalName","externalName":"www.example.com","clusterIP":"")"));
  REQUIRE(service.ok());
  CHECK(service->type == ServiceType::kExternalName);
  CHECK(service->external_name == "www.example.com");
  CHECK(service->cluster_ips.empty());
  CHECK(service->ports.empty());
  CHECK_FALSE(service->headless);

  auto missing = DecodeService(ServiceJson(R"("type":"ExternalName")"));
  CHECK(missing.error() ==
        "Service default/web: spec.externalName: missing for an ExternalName service");
}

TEST_CASE("NodePort and LoadBalancer services decode like ClusterIP ones", "[k8s]") {
  auto type = GENERATE(as<std::string>{}, "NodePort", "LoadBalancer");
  auto service = DecodeService(ServiceJson(R"("type":")" + type + R"(","clusterIP":"10.0.0.9")"));
  REQUIRE(service.ok());
  CHECK(ToString(service->type) == type);
  CHECK(service->cluster_ips == Ips({"10.0.0.9"}));
}

TEST_CASE("Bad cluster IPs and unknown protocols are dropped with a warning", "[k8s]") {
  Warnings warnings;
  auto service = DecodeService(
      ServiceJson(R"("clusterIPs":["10.1.x","fd00::2"],)"
                  R"("ports":[{"name":"a","protocol":"QUIC","port":1},{"name":"b","port":2}])"),
      &warnings);
  REQUIRE(service.ok());
  CHECK(service->cluster_ips == Ips({"fd00::2"}));
  CHECK(service->ports == std::vector<ServicePort>{{"b", Protocol::kTcp, 2}});
  CHECK(
      warnings.messages() ==
      std::vector<std::string>{
          R"(Service default/web: spec.clusterIPs[0]: not an IP address: "10.1.x")",
          R"(Service default/web: spec.ports[0].protocol: unknown protocol "QUIC", port dropped)"});
}

TEST_CASE("Malformed services fail with the field path", "[k8s]") {
  auto [json, error] = GENERATE(table<std::string, std::string>({
      {"[]", "Service: not an object: an array"},
      {"{}", "Service: metadata: missing"},
      {R"({"metadata":null,"spec":{}})", "Service: metadata: missing"},
      {R"({"metadata":[],"spec":{}})", "Service: metadata: not an object: an array"},
      {R"({"metadata":{"namespace":"default"},"spec":{}})", "Service: metadata.name: missing"},
      {R"({"metadata":{"name":"web"},"spec":{}})", "Service web: metadata.namespace: missing"},
      {R"({"metadata":{"name":7,"namespace":"d"},"spec":{}})",
       "Service: metadata.name: not a string: 7"},
      {R"({"metadata":{"name":"web","namespace":"default","resourceVersion":107},"spec":{}})",
       "Service default/web: metadata.resourceVersion: not a string: 107"},
      {R"({"metadata":{"name":"web","namespace":"default"}})",
       "Service default/web: spec: missing"},
      {ServiceJson(R"("type":"Magic")"),
       R"(Service default/web: spec.type: unknown service type "Magic")"},
      {ServiceJson(R"("type":1)"), "Service default/web: spec.type: not a string: 1"},
      {ServiceJson(R"("clusterIPs":"10.0.0.1")"),
       R"(Service default/web: spec.clusterIPs: not an array: "10.0.0.1")"},
      {ServiceJson(R"("clusterIPs":[10])"),
       "Service default/web: spec.clusterIPs[0]: not a string: 10"},
      {ServiceJson(R"("publishNotReadyAddresses":"true")"),
       R"(Service default/web: spec.publishNotReadyAddresses: not a boolean: "true")"},
      {ServiceJson(R"("ports":{})"), "Service default/web: spec.ports: not an array: an object"},
      {ServiceJson(R"("ports":[80])"), "Service default/web: spec.ports[0]: not an object: 80"},
      {ServiceJson(R"("ports":[{"name":"x"}])"),
       "Service default/web: spec.ports[0].port: missing"},
      {ServiceJson(R"("ports":[{"port":"80"}])"),
       R"(Service default/web: spec.ports[0].port: not an integer: "80")"},
      {ServiceJson(R"("ports":[{"port":0}])"),
       "Service default/web: spec.ports[0].port: out of range: 0"},
      {ServiceJson(R"("ports":[{"port":65536}])"),
       "Service default/web: spec.ports[0].port: out of range: 65536"},
      {ServiceJson(R"("ports":[{"port":-1}])"),
       "Service default/web: spec.ports[0].port: out of range: -1"},
      {ServiceJson(R"("ports":[{"port":80.5}])"),
       "Service default/web: spec.ports[0].port: out of range: 80.5"},
      {ServiceJson(R"("ports":[{"port":99999999999999999999}])"),
       "Service default/web: spec.ports[0].port: out of range: 1e+20"},
      {ServiceJson(R"("ports":[{"port":80,"protocol":6}])"),
       "Service default/web: spec.ports[0].protocol: not a string: 6"},
      {"{", "Service: not JSON: Missing a name for object member. at offset 1"},
      {"", "Service: not JSON: The document is empty. at offset 0"},
  }));
  INFO(json);
  auto service = DecodeService(json);
  REQUIRE_FALSE(service.ok());
  CHECK(service.error() == error);
}

TEST_CASE("Unknown fields are ignored and nulls are the same as absent fields", "[k8s]") {
  auto service = DecodeService(
      R"({"metadata":{"name":"web","namespace":"d","uid":null,"resourceVersion":null,"future":[1]},)"
      R"("spec":{"type":null,"clusterIP":null,"clusterIPs":null,"ports":null,"externalName":null,)"
      R"("publishNotReadyAddresses":null,"somethingNew":{"a":[null]}},"status":null,"x":1e999999})");
  // 1e999999 is not representable: RapidJSON refuses the document, which is fine too.
  CHECK_FALSE(service.ok());
  service = DecodeService(
      R"({"metadata":{"name":"web","namespace":"d","uid":null,"resourceVersion":null,"future":[1]},)"
      R"("spec":{"type":null,"clusterIP":null,"clusterIPs":null,"ports":null,"externalName":null,)"
      R"("publishNotReadyAddresses":null,"somethingNew":{"a":[null]}},"status":null})");
  REQUIRE(service.ok());
  CHECK(service->meta.resource_version.empty());
  CHECK(service->cluster_ips.empty());
  CHECK_FALSE(service->headless);
  CHECK(service->ports.empty());
}

TEST_CASE("EndpointSlice conditions follow the discovery/v1 defaulting", "[k8s]") {
  auto slice = DecodeEndpointSlice(SliceJson(R"("IPv4")", R"([
      {"addresses":["10.0.0.1"],"conditions":{"ready":true}},
      {"addresses":["10.0.0.2"],"conditions":{"ready":false,"serving":true,"terminating":true}},
      {"addresses":["10.0.0.3"],"conditions":{}},
      {"addresses":["10.0.0.4"]},
      {"addresses":["10.0.0.5"],"conditions":{"ready":null,"serving":null}},
      {"addresses":["10.0.0.6"],"conditions":null}])"));
  REQUIRE(slice.ok());
  REQUIRE(slice->endpoints.size() == 6);
  std::vector<bool> ready;
  for (const Endpoint& endpoint : slice->endpoints) ready.push_back(endpoint.ready);
  CHECK(ready == std::vector<bool>{true, false, true, true, true, true});
}

TEST_CASE(
    "An EndpointSlice keeps addresses, hostnames, zones and ports, and nothing DNS does not use",
    "[k8s]") {
  auto slice = DecodeEndpointSlice(SliceJson(
      R"("IPv6")",
      R"([{"addresses":["fd00::a"],"hostname":"pet-0","nodeName":"node-1","zone":"z1",
           "targetRef":{"kind":"Pod","namespace":"default","name":"pet-0","uid":"x"}},
          {"addresses":["fd00::b","fd00::c"],"targetRef":{"kind":"Node","name":"n"}}])",
      R"([{"name":"http","protocol":"TCP","port":80},{"name":"dns","protocol":"UDP"},{"port":null}])"));
  REQUIRE(slice.ok());
  CHECK(slice->meta.name == "web-abc");
  CHECK(slice->service_name == "web");
  CHECK(slice->address_type == AddressType::kIPv6);
  CHECK(slice->source == SliceSource::kEndpointSlice);
  REQUIRE(slice->endpoints.size() == 2);
  const Endpoint& pet = slice->endpoints[0];
  CHECK(pet.addresses == Ips({"fd00::a"}));
  CHECK(pet.hostname == "pet-0");
  CHECK(pet.zone == "z1");
  CHECK(slice->endpoints[1].zone.empty());
  CHECK(pet.pod_name == "pet-0");
  CHECK(slice->endpoints[1].addresses == Ips({"fd00::b", "fd00::c"}));
  CHECK(slice->endpoints[1].hostname.empty());
  CHECK(slice->endpoints[1].pod_name.empty());  // a Node is not a pod
  CHECK(slice->ports == std::vector<EndpointPort>{{"http", Protocol::kTcp, 80},
                                                  {"dns", Protocol::kUdp, std::nullopt},
                                                  {"", Protocol::kTcp, std::nullopt}});
}

TEST_CASE("Fields DNS does not use are not read, so their shape cannot drop a slice", "[k8s]") {
  auto slice = DecodeEndpointSlice(
      SliceJson(R"("IPv4")",
                R"([{"addresses":["10.0.0.1"],"targetRef":"pod","nodeName":7,"zone":[],
           "conditions":{"ready":true,"serving":"yes","terminating":1}}])"));
  REQUIRE(slice.ok());
  REQUIRE(slice->endpoints.size() == 1);
  CHECK(slice->endpoints[0].ready);
  CHECK(slice->endpoints[0].addresses == Ips({"10.0.0.1"}));
  CHECK(slice->endpoints[0].zone.empty());  // "zone":[] is warned about and dropped
  CHECK(slice->endpoints[0].pod_name.empty());
}

TEST_CASE("A service keeps its external IPs, load balancer ingress and labels", "[k8s]") {
  Warnings warnings;
  auto service = DecodeService(
      R"({"metadata":{"name":"web","namespace":"default","labels":{"app":"web","tier":"fe"}},)"
      R"("spec":{"type":"LoadBalancer","clusterIP":"10.0.0.1","externalIPs":["192.0.2.1","x"]},)"
      R"("status":{"loadBalancer":{"ingress":[{"ip":"198.51.100.7"},{"ip":"2001:db8::7"},)"
      R"({"hostname":"LB-1.Example.COM."},{"ip":"203.0.113.1","hostname":"ignored.example"}]}}})",
      &warnings);
  REQUIRE(service.ok());
  CHECK(service->external_ips == Ips({"192.0.2.1", "198.51.100.7", "2001:db8::7", "203.0.113.1"}));
  CHECK(service->external_hostnames == std::vector<std::string>{"lb-1.example.com"});
  CHECK(service->labels ==
        std::vector<std::pair<std::string, std::string>>{{"app", "web"}, {"tier", "fe"}});
  REQUIRE(warnings.messages().size() == 1);  // "x" is not an IP
  CHECK_THAT(warnings.messages()[0], Catch::Contains("spec.externalIPs[1]"));
}

TEST_CASE("A service without external addresses or labels has none", "[k8s]") {
  auto service = DecodeService(ServiceJson(R"("clusterIP":"10.0.0.1","ports":[{"port":80}])"));
  REQUIRE(service.ok());
  CHECK(service->external_ips.empty());
  CHECK(service->external_hostnames.empty());
  CHECK(service->labels.empty());
}

TEST_CASE("Malformed external addresses and labels fail the service with the field path", "[k8s]") {
  auto labels =
      DecodeService(R"({"metadata":{"name":"web","namespace":"d","labels":{"app":7}},"spec":{}})");
  REQUIRE_FALSE(labels.ok());
  CHECK_THAT(labels.error(), Catch::Contains("metadata.labels.app: not a string"));
  auto ingress = DecodeService(R"({"metadata":{"name":"web","namespace":"d"},"spec":{},)"
                               R"("status":{"loadBalancer":{"ingress":["10.0.0.1"]}}})");
  REQUIRE_FALSE(ingress.ok());
  CHECK_THAT(ingress.error(), Catch::Contains("status.loadBalancer.ingress[0]: not an object"));
}

TEST_CASE("A slice without the service-name label belongs to no service", "[k8s]") {
  auto slice = DecodeEndpointSlice(
      R"({"metadata":{"name":"orphan","namespace":"d","labels":{"app":"x"}},"addressType":"IPv4",)"
      R"("endpoints":[{"addresses":["10.0.0.1"]}]})");
  REQUIRE(slice.ok());
  CHECK(slice->service_name.empty());
  CHECK(slice->ports.empty());
}

TEST_CASE("FQDN slices decode without addresses", "[k8s]") {
  Warnings warnings;
  auto slice = DecodeEndpointSlice(
      SliceJson(R"("FQDN")", R"([{"addresses":["db.example.com"],"hostname":"db"}])"), &warnings);
  REQUIRE(slice.ok());
  CHECK(slice->address_type == AddressType::kFqdn);
  REQUIRE(slice->endpoints.size() == 1);
  CHECK(slice->endpoints[0].addresses.empty());
  CHECK(warnings.empty());
}

TEST_CASE("Endpoint addresses that are not IPs of the slice's family are dropped", "[k8s]") {
  Warnings warnings;
  auto slice = DecodeEndpointSlice(
      SliceJson(R"("IPv4")", R"([{"addresses":["10.0.0.1"]},{"addresses":["fd00::1"]},
                                 {"addresses":["10.0.0.3"]},{"addresses":["10.1.x","10.0.0.4"]}])"),
      &warnings);
  REQUIRE(slice.ok());
  REQUIRE(slice->endpoints.size() == 4);
  CHECK(slice->endpoints[1].addresses.empty());
  CHECK(slice->endpoints[3].addresses == Ips({"10.0.0.4"}));
  CHECK(
      warnings.messages() ==
      std::vector<std::string>{
          R"(EndpointSlice default/web-abc: endpoints[1].addresses[0]: not an IPv4 address: "fd00::1")",
          R"(EndpointSlice default/web-abc: endpoints[3].addresses[0]: not an IP address: "10.1.x")"});
}

TEST_CASE("Malformed EndpointSlices fail with the field path", "[k8s]") {
  auto [json, error] = GENERATE(table<std::string, std::string>({
      {SliceJson(R"("IPv4")", R"([{"addresses":["10.0.0.1"]},{},{"addresses":[7]}])"),
       "EndpointSlice default/web-abc: endpoints[2].addresses[0]: not a string: 7"},
      {SliceJson(R"("IPv4")", R"([{"addresses":"10.0.0.1"}])"),
       R"(EndpointSlice default/web-abc: endpoints[0].addresses: not an array: "10.0.0.1")"},
      {SliceJson(R"("IPv4")", R"([{"addresses":["10.0.0.1"],"conditions":{"ready":"yes"}}])"),
       R"(EndpointSlice default/web-abc: endpoints[0].conditions.ready: not a boolean: "yes")"},
      {SliceJson(R"("IPv4")", R"([{"addresses":["10.0.0.1"],"hostname":1}])"),
       "EndpointSlice default/web-abc: endpoints[0].hostname: not a string: 1"},
      {SliceJson(R"("IPv4")", R"([null])"),
       "EndpointSlice default/web-abc: endpoints[0]: not an object: null"},
      {SliceJson(R"("IPv4")", R"({})"),
       "EndpointSlice default/web-abc: endpoints: not an array: an object"},
      {SliceJson(R"("IPv4")", "[]", R"([{"port":70000}])"),
       "EndpointSlice default/web-abc: ports[0].port: out of range: 70000"},
      {SliceJson(R"("IPv5")", "[]"),
       R"(EndpointSlice default/web-abc: addressType: unknown address type "IPv5")"},
      {SliceJson(R"("")", "[]"), "EndpointSlice default/web-abc: addressType: missing"},
      {SliceJson("null", "[]"), "EndpointSlice default/web-abc: addressType: missing"},
      {R"({"metadata":{"name":"s","namespace":"d","labels":{"kubernetes.io/service-name":1}}})",
       "EndpointSlice d/s: metadata.labels.kubernetes.io/service-name: not a string: 1"},
      {R"({"metadata":{"name":"s","namespace":"d","labels":[]}})",
       "EndpointSlice d/s: metadata.labels: not an object: an array"},
  }));
  INFO(json);
  auto slice = DecodeEndpointSlice(json);
  REQUIRE_FALSE(slice.ok());
  CHECK(slice.error() == error);
}

TEST_CASE("v1 Endpoints become one slice per subset and address family", "[k8s]") {
  Warnings warnings;
  auto endpoints = DecodeEndpoints(R"({"kind":"Endpoints","apiVersion":"v1",
      "metadata":{"name":"web","namespace":"default","uid":"e1","resourceVersion":"9"},
      "subsets":[
        {"addresses":[{"ip":"10.0.0.1","hostname":"pet-0","nodeName":"n1",
                       "targetRef":{"kind":"Pod","namespace":"default","name":"pet-0"}},
                      {"ip":"fd00::1"},{"ip":"bogus"}],
         "notReadyAddresses":[{"ip":"10.0.0.2"}],
         "ports":[{"name":"http","port":80,"protocol":"TCP"}]},
        {"notReadyAddresses":[{"ip":"10.0.0.3"}],"ports":[{"name":"metrics","port":9100}]},
        {"ports":[{"port":1}]}]})",
                                   &warnings);
  REQUIRE(endpoints.ok());
  CHECK(endpoints->meta.name == "web");
  REQUIRE(endpoints->slices.size() == 3);
  const EndpointSlice& v4 = endpoints->slices[0];
  CHECK(v4.meta.name == "web/subset-0-ipv4");
  CHECK(v4.meta.ns == "default");
  CHECK(v4.meta.uid == "e1");
  CHECK(v4.meta.resource_version.text == "9");
  CHECK(v4.service_name == "web");
  CHECK(v4.source == SliceSource::kEndpoints);
  CHECK(v4.address_type == AddressType::kIPv4);
  REQUIRE(v4.endpoints.size() == 2);
  CHECK(v4.endpoints[0].addresses == Ips({"10.0.0.1"}));
  CHECK(v4.endpoints[0].ready);
  CHECK(v4.endpoints[0].hostname == "pet-0");
  CHECK(v4.endpoints[0].pod_name == "pet-0");
  CHECK(v4.endpoints[1].addresses == Ips({"10.0.0.2"}));
  CHECK_FALSE(v4.endpoints[1].ready);
  CHECK(v4.ports == std::vector<EndpointPort>{{"http", Protocol::kTcp, 80}});

  const EndpointSlice& v6 = endpoints->slices[1];
  CHECK(v6.meta.name == "web/subset-0-ipv6");
  CHECK(v6.address_type == AddressType::kIPv6);
  REQUIRE(v6.endpoints.size() == 1);
  CHECK(v6.endpoints[0].addresses == Ips({"fd00::1"}));
  CHECK(v6.ports == v4.ports);

  const EndpointSlice& second = endpoints->slices[2];
  CHECK(second.meta.name == "web/subset-1-ipv4");
  REQUIRE(second.endpoints.size() == 1);
  CHECK_FALSE(second.endpoints[0].ready);
  CHECK(second.ports == std::vector<EndpointPort>{{"metrics", Protocol::kTcp, 9100}});

  CHECK(warnings.messages() ==
        std::vector<std::string>{
            R"(Endpoints default/web: subsets[0].addresses[2].ip: not an IP address: "bogus")"});
}

TEST_CASE("v1 Endpoints without subsets have no slices", "[k8s]") {
  auto subsets = GENERATE(as<std::string>{}, "", R"(,"subsets":null)", R"(,"subsets":[])");
  auto endpoints = DecodeEndpoints(R"({"metadata":{"name":"web","namespace":"d"})" + subsets + "}");
  REQUIRE(endpoints.ok());
  CHECK(endpoints->slices.empty());
}

TEST_CASE("Malformed v1 Endpoints fail with the field path", "[k8s]") {
  auto [subsets, error] = GENERATE(table<std::string, std::string>({
      {R"([{"addresses":[{"hostname":"x"}]}])",
       "Endpoints d/web: subsets[0].addresses[0].ip: missing"},
      {R"([{"addresses":[{"ip":1}]}])",
       "Endpoints d/web: subsets[0].addresses[0].ip: not a string: 1"},
      {R"([{"addresses":[{"ip":"10.0.0.1"}],"ports":[{"name":"x"}]}])",
       "Endpoints d/web: subsets[0].ports[0].port: missing"},
      {R"([1])", "Endpoints d/web: subsets[0]: not an object: 1"},
      {R"({"a":1})", "Endpoints d/web: subsets: not an array: an object"},
  }));
  auto endpoints =
      DecodeEndpoints(R"({"metadata":{"name":"web","namespace":"d"},"subsets":)" + subsets + "}");
  REQUIRE_FALSE(endpoints.ok());
  CHECK(endpoints.error() == error);
}

TEST_CASE("A Pod decodes its IPs and phase", "[k8s]") {
  auto pod = DecodePod(R"({"kind":"Pod","metadata":{"name":"p","namespace":"d"},
      "status":{"phase":"Running","podIP":"10.0.0.1","podIPs":[{"ip":"10.0.0.1"},{"ip":"fd00::1"}]}})");
  REQUIRE(pod.ok());
  CHECK(pod->phase == PodPhase::kRunning);
  CHECK(pod->pod_ips == Ips({"10.0.0.1", "fd00::1"}));

  pod = DecodePod(R"({"metadata":{"name":"p","namespace":"d"},"status":{"podIP":"10.0.0.2"}})");
  REQUIRE(pod.ok());
  CHECK(pod->phase == PodPhase::kUnknown);
  CHECK(pod->pod_ips == Ips({"10.0.0.2"}));

  pod = DecodePod(R"({"metadata":{"name":"p","namespace":"d"},"status":{"phase":"Dreaming"}})");
  REQUIRE(pod.ok());
  CHECK(pod->phase == PodPhase::kUnknown);
  CHECK(pod->pod_ips.empty());

  pod = DecodePod(R"({"metadata":{"name":"p","namespace":"d"},"status":{"podIPs":[{"ip":5}]}})");
  CHECK(pod.error() == "Pod d/p: status.podIPs[0].ip: not a string: 5");
}

TEST_CASE("A Status keeps its code, reason, message, continue token and causes", "[k8s]") {
  auto status = DecodeStatus(R"({"kind":"Status","apiVersion":"v1","metadata":{"continue":"abc"},
      "status":"Failure","message":"m","reason":"Timeout","code":504,
      "details":{"retryAfterSeconds":1,"causes":[{"reason":"ResourceVersionTooLarge",
                                                  "message":"Too large","field":"f"}]}})");
  REQUIRE(status.ok());
  CHECK(status->code == 504);
  CHECK(status->status == "Failure");
  CHECK(status->reason == "Timeout");
  CHECK(status->message == "m");
  CHECK(status->continue_token == "abc");
  CHECK(status->retry_after_seconds == 1);
  REQUIRE(status->causes.size() == 1);
  CHECK(status->causes[0].reason == "ResourceVersionTooLarge");
  CHECK(status->causes[0].field == "f");
}

TEST_CASE("Malformed Status bodies fail cleanly", "[k8s]") {
  auto [json, error] = GENERATE(table<std::string, std::string>({
      {R"({"kind":"ServiceList"})", R"(Status: kind: not a Status: "ServiceList")"},
      {R"({"code":"410"})", R"(Status: code: not an integer: "410")"},
      {R"({"code":4294967296})", "Status: code: out of range: 4294967296"},
      {R"({"details":{"causes":[1]}})", "Status: details.causes[0]: not an object: 1"},
      {R"({"details":{"retryAfterSeconds":-1}})",
       "Status: details.retryAfterSeconds: out of range: -1"},
      {"<html>", "Status: not JSON: Invalid value. at offset 0"},
      {"[]", "Status: not an object: an array"},
  }));
  auto status = DecodeStatus(json);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error() == error);
}

}  // namespace
}  // namespace kdns::k8s
