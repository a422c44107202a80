#include "kubedns/sources/api_source.h"

#include <glog/logging.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/k8s/reflector_testing.h"
#include "common/k8s/testing.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/metrics/registry.h"
#include "kubedns/sources/recording_sink_testing.h"

namespace kdns::kubedns {
namespace {

using k8s::testing::FakeApiTransport;
using k8s::testing::FakeTimers;
using k8s::testing::ReadCapture;
using Request = FakeApiTransport::Request;
using Resource = ApiSource::Resource;
using testing::RecordingSink;

constexpr std::string_view kServices = "/api/v1/services?";
constexpr std::string_view kSlices = "/apis/discovery.k8s.io/v1/endpointslices?";
constexpr std::string_view kEndpoints = "/api/v1/endpoints?";
constexpr std::string_view kPods = "/api/v1/pods?";

// Keeps the lines logged while it exists, as "SEVERITY message".
class LogCapture final : public google::LogSink {
 public:
  LogCapture() { google::AddLogSink(this); }
  ~LogCapture() override { google::RemoveLogSink(this); }
  void send(google::LogSeverity severity, const char*, const char*, int, const std::tm*,
            const char* message, size_t length) override {
    std::lock_guard lock(mu_);
    lines_.push_back(std::string(google::GetLogSeverityName(severity)) + " " +
                     std::string(message, length));
  }
  // Lines containing `text`.
  size_t Count(std::string_view text) {
    std::lock_guard lock(mu_);
    return std::count_if(lines_.begin(), lines_.end(), [&](const std::string& line) {
      return line.find(text) != std::string::npos;
    });
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

const std::string kEndpointsList =
    R"({"kind":"EndpointsList","apiVersion":"v1","metadata":{"resourceVersion":"200"},"items":[)"
    R"({"metadata":{"name":"web","namespace":"default","uid":"e1","resourceVersion":"150"},)"
    R"("subsets":[{"addresses":[{"ip":"10.244.0.5"}],"ports":[{"name":"http","port":8080,"protocol":"TCP"}]}]}]})";
const std::string kPodList =
    R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"300"},"items":[)"
    R"({"metadata":{"name":"web-0","namespace":"default","uid":"p1","resourceVersion":"160"},)"
    R"("status":{"phase":"Running","podIP":"10.244.0.5","podIPs":[{"ip":"10.244.0.5"}]}}]})";

// The source on simulated time, on the LoopFixture's loop, which must close clean once the
// source is gone. The clock outlives the registry, which reads it at scrape.
struct Harness : loop::testing::LoopFixture {
  explicit Harness(ApiSource::Options options = {}) {
    ApiSource::Environment environment;
    environment.clock = &clock;
    environment.timers = &timers;
    environment.random = [] { return 0.5; };
    source = std::make_unique<ApiSource>(loop, transport, sink, registry, options,
                                         std::move(environment));
  }
  ~Harness() { source.reset(); }

  Request& Active(std::string_view prefix) {
    Request* request = transport.ActiveFor(prefix);
    INFO("no active request for " << prefix);
    REQUIRE(request != nullptr);
    return *request;
  }
  void ListServices() {
    for (int page = 1; page <= 4; ++page) {
      FakeApiTransport::Respond(Active(kServices), 200,
                                ReadCapture("01-list-services-p" + std::to_string(page)));
    }
  }
  void ListSlices() {
    FakeApiTransport::Respond(Active(kSlices), 200, ReadCapture("02-list-endpointslices"));
  }
  bool Renders(std::string_view line) {
    std::string text = registry.Render();
    INFO(text);
    return text.find(std::string(line) + "\n") != std::string::npos;
  }

  ManualClock clock{5'000'000};
  metrics::Registry registry;
  FakeTimers timers{clock};
  FakeApiTransport transport;
  RecordingSink sink;
  std::unique_ptr<ApiSource> source;
};

TEST_CASE("the API source syncs only after both Services and EndpointSlices are listed",
          "[api_source]") {
  Harness h;
  h.source->Start();
  CHECK(h.transport.ActiveCount() == 2);
  // From the watch cache (resourceVersion=0), with client-go's page size.
  CHECK(h.Active(kServices).path == "/api/v1/services?resourceVersion=0&limit=500");
  CHECK(h.Active(kSlices).path ==
        "/apis/discovery.k8s.io/v1/endpointslices?resourceVersion=0&limit=500");

  h.ListSlices();
  CHECK(h.sink.calls == std::vector<std::string>{"ListSlices 8"});
  CHECK_FALSE(h.source->synced());
  CHECK(h.Renders(R"(kdns_kubedns_api_synced{resource="endpointslices"} 1)"));
  CHECK(h.Renders(R"(kdns_kubedns_api_synced{resource="services"} 0)"));

  h.ListServices();
  CHECK(h.sink.calls == std::vector<std::string>{"ListSlices 8", "ListServices 12", "Synced"});
  CHECK(h.source->synced());
  CHECK(k8s::testing::Keys(h.sink.services) ==
        std::vector<std::string>{
            "apps/noready@90", "apps/split@89", "default/dual@83", "default/external@92",
            "default/external-internal@93", "default/headless@88", "default/kubernetes@72",
            "default/unnamed@85", "default/v6only@87", "e2e/dns-test-service-2@91",
            "kube-system/kube-dns@80", "load/big@94"});
  CHECK(k8s::testing::Keys(h.sink.slices) ==
        std::vector<std::string>{"apps/noready-1@99", "apps/split-1@97", "apps/split-2@98",
                                 "default/headless-abc12@95", "default/headless-v6xyz@96",
                                 "default/kubernetes@75", "e2e/dns-test-service-2-q@100",
                                 "load/big-1@101"});
  // Both watch from the list RV.
  CHECK(h.Active(kServices).Param("resourceVersion") == "107");
  CHECK(h.Active(kSlices).Param("resourceVersion") == "107");
}

TEST_CASE("watch events become upserts and deletes", "[api_source]") {
  Harness h;
  h.source->Start();
  h.ListSlices();
  h.ListServices();
  h.sink.calls.clear();

  Request& services = h.Active(kServices);
  FakeApiTransport::Head(services, 200);
  FakeApiTransport::Body(services, ReadCapture("03-watch-services"));
  CHECK(h.sink.calls ==
        std::vector<std::string>{"UpsertService default/web", "UpsertService default/web",
                                 "UpsertService default/web", "DeleteService default/web",
                                 "UpsertService default/web", "DeleteService default/unnamed"});
  h.sink.calls.clear();

  Request& slices = h.Active(kSlices);
  FakeApiTransport::Head(slices, 200);
  FakeApiTransport::Body(slices, ReadCapture("04-watch-endpointslices"));
  CHECK(h.sink.calls ==
        std::vector<std::string>{"UpsertSlice default/headless-abc12",
                                 "UpsertSlice default/headless-abc12",
                                 "UpsertSlice default/headless-abc12", "UpsertSlice apps/split-3",
                                 "DeleteSlice apps/split-3", "UpsertSlice load/big-1"});

  CHECK(h.Renders(R"(kdns_kubedns_api_events_total{resource="services",type="ADDED"} 2)"));
  CHECK(h.Renders(R"(kdns_kubedns_api_events_total{resource="services",type="DELETED"} 2)"));
  CHECK(h.Renders(R"(kdns_kubedns_api_events_total{resource="services",type="BOOKMARK"} 1)"));
  CHECK(h.Renders(R"(kdns_kubedns_api_events_total{resource="endpointslices",type="MODIFIED"} 4)"));
  CHECK(h.Renders(R"(kdns_kubedns_api_events_total{resource="endpointslices",type="BOOKMARK"} 2)"));
  CHECK(h.Renders("kdns_kubedns_api_event_to_publish_seconds_count 12"));
}

TEST_CASE("a 404 on the EndpointSlice LIST switches to v1 Endpoints", "[api_source]") {
  LogCapture logs;
  Harness h;
  h.source->Start();
  FakeApiTransport::Respond(h.Active(kSlices), 404, ReadCapture("06-notfound-resource"));
  CHECK(h.source->using_endpoints());
  CHECK(h.transport.ActiveFor(kSlices) == nullptr);
  CHECK(h.Active(kEndpoints).path == "/api/v1/endpoints?resourceVersion=0&limit=500");
  CHECK(logs.Count("does not serve EndpointSlices") == 1);

  h.ListServices();
  CHECK_FALSE(h.source->synced());  // the Endpoints are not listed yet
  FakeApiTransport::Respond(h.Active(kEndpoints), 200, kEndpointsList);
  CHECK(h.sink.calls == std::vector<std::string>{"ListServices 12", "ListEndpoints 1", "Synced"});
  REQUIRE(h.sink.endpoints.size() == 1);
  CHECK(h.sink.endpoints[0].slices.size() == 1);
  CHECK(h.Active(kEndpoints).Param("resourceVersion") == "200");
  CHECK(h.Renders(R"(kdns_kubedns_api_errors_total{resource="endpointslices",code="404"} 1)"));
  CHECK(h.Renders(R"(kdns_kubedns_api_synced{resource="endpoints"} 1)"));
  CHECK(h.registry.Render().find(R"(kdns_kubedns_api_synced{resource="endpointslices"})") ==
        std::string::npos);

  Request& watch = h.Active(kEndpoints);
  FakeApiTransport::Head(watch, 200);
  FakeApiTransport::Body(
      watch,
      R"({"type":"DELETED","object":{"kind":"Endpoints","apiVersion":"v1","metadata":{"name":"web","namespace":"default","uid":"e1","resourceVersion":"201"}}})"
      "\n");
  CHECK(h.sink.calls.back() == "DeleteEndpoints default/web");
}

TEST_CASE("a 403 on the EndpointSlice LIST (kube-dns's own role) switches to v1 Endpoints",
          "[api_source]") {
  LogCapture logs;
  Harness h;
  h.source->Start();
  FakeApiTransport::Respond(
      h.Active(kSlices), 403,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"endpointslices.discovery.k8s.io is forbidden: User \"system:serviceaccount:kube-system:kube-dns\" cannot list resource \"endpointslices\" in API group \"discovery.k8s.io\" at the cluster scope","reason":"Forbidden","details":{"group":"discovery.k8s.io","kind":"endpointslices"},"code":403})");
  CHECK(h.source->using_endpoints());
  CHECK(logs.Count("does not serve EndpointSlices") == 1);
  h.ListServices();
  FakeApiTransport::Respond(h.Active(kEndpoints), 200, kEndpointsList);
  CHECK(h.source->synced());
}

TEST_CASE("endpoints_source=endpoints watches v1 Endpoints only", "[api_source]") {
  ApiSource::Options options;
  options.endpoints_source = ApiSource::EndpointsSource::kEndpoints;
  Harness h(options);
  h.source->Start();
  CHECK(h.transport.ActiveFor(kSlices) == nullptr);
  FakeApiTransport::Respond(h.Active(kEndpoints), 200, kEndpointsList);
  h.ListServices();
  CHECK(h.source->synced());
  CHECK(h.source->reflector(Resource::kEndpointSlices) == nullptr);
}

TEST_CASE("a 404 on EndpointSlices with endpoints_source=endpointslices after a sync retries",
          "[api_source]") {
  Harness h;
  h.source->Start();
  h.ListSlices();
  h.ListServices();
  // A later failure of the slice watch is an error like any other, not a reason to switch.
  FakeApiTransport::Respond(h.Active(kSlices), 404, ReadCapture("06-notfound-resource"));
  CHECK_FALSE(h.source->using_endpoints());
  h.timers.AdvanceMs(*h.timers.NextDueInMs());
  CHECK(h.Active(kSlices).Param("watch") == "1");
}

TEST_CASE("pods are listed and watched for verified pod records", "[api_source]") {
  ApiSource::Options options;
  options.watch_pods = true;
  Harness h(options);
  h.source->Start();
  CHECK(h.transport.ActiveCount() == 3);
  h.ListSlices();
  h.ListServices();
  CHECK_FALSE(h.source->synced());
  FakeApiTransport::Respond(h.Active(kPods), 200, kPodList);
  CHECK(h.sink.calls ==
        std::vector<std::string>{"ListSlices 8", "ListServices 12", "ListPods 1", "Synced"});
  REQUIRE(h.sink.pods.size() == 1);
  CHECK(h.sink.pods[0].meta.name == "web-0");

  Request& watch = h.Active(kPods);
  FakeApiTransport::Head(watch, 200);
  FakeApiTransport::Body(
      watch,
      R"({"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-1","namespace":"default","uid":"p2","resourceVersion":"300"},"status":{"phase":"Running","podIP":"10.1.0.9"}}})"
      "\n"
      R"({"type":"DELETED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-0","namespace":"default","uid":"p1","resourceVersion":"301"}}})"
      "\n");
  CHECK(h.sink.calls == std::vector<std::string>{"ListSlices 8", "ListServices 12", "ListPods 1",
                                                 "Synced", "UpsertPod default/web-1",
                                                 "DeletePod default/web-0"});
  CHECK(h.Renders(R"(kdns_kubedns_api_events_total{resource="pods",type="DELETED"} 1)"));
}

TEST_CASE("without pod records no Pod is listed", "[api_source]") {
  Harness h;
  h.source->Start();
  CHECK(h.transport.ActiveFor(kPods) == nullptr);
  CHECK(h.source->reflector(Resource::kPods) == nullptr);
}

TEST_CASE("a re-LIST after 410 replaces one kind and does not sync again", "[api_source]") {
  Harness h;
  h.source->Start();
  h.ListSlices();
  h.ListServices();
  h.sink.calls.clear();
  h.sink.raw.clear();
  Request& watch = h.Active(kServices);
  FakeApiTransport::Head(watch, 200);
  FakeApiTransport::Body(watch, ReadCapture("05b-watch-services-old-rv-after-restart"));
  // Not at once: after a random delay within relist_jitter_ms (5 s; the draw here is 0.5).
  CHECK(h.transport.ActiveFor(kServices) == nullptr);
  h.timers.AdvanceMs(2'499);
  CHECK(h.transport.ActiveFor(kServices) == nullptr);
  h.timers.AdvanceMs(1);
  // From the watch cache, at least as new as what was seen; paged like the first LIST was.
  CHECK(h.Active(kServices).path ==
        "/api/v1/services?resourceVersion=107&resourceVersionMatch=NotOlderThan&limit=500");
  h.ListServices();
  CHECK(h.sink.calls == std::vector<std::string>{"ListServices 12"});
  // Streamed: the list opens again, every object is upserted, and the list closes.
  CHECK(h.sink.raw.front() == "BeginList 0");
  CHECK(h.sink.raw.back() == "EndList 0");
  CHECK(h.Renders(R"(kdns_kubedns_api_relists_total{resource="services"} 1)"));
  CHECK(h.Renders(R"(kdns_kubedns_api_lists_total{resource="services"} 2)"));
  CHECK(h.Renders(
      R"(kdns_kubedns_api_watch_restarts_total{resource="services",reason="expired"} 1)"));
}

TEST_CASE("nothing is synced until every list is in, and the wait is logged loudly",
          "[api_source]") {
  LogCapture logs;
  ApiSource::Options options;
  options.initial_sync_timeout_ms = 60'000;
  Harness h(options);
  h.source->Start();
  h.ListSlices();
  FakeApiTransport::Done(h.Active(kServices), "connection refused");
  h.timers.AdvanceMs(59'999);
  CHECK(logs.Count("no initial sync") == 0);
  h.timers.AdvanceMs(1);
  CHECK(logs.Count("ERROR Kubernetes API: no initial sync after 60 s; waiting for services "
                   "(last error: k8s services: list: connection refused)") == 1);
  CHECK_FALSE(h.source->synced());
  CHECK(h.sink.calls == std::vector<std::string>{"ListSlices 8"});
  h.timers.AdvanceMs(60'000);
  CHECK(logs.Count("no initial sync after 120 s") == 1);
  // Still trying: the services LIST is retried (failing again) all along.
  CHECK(h.source->reflector(Resource::kServices)->stats().errors.at("transport") >= 1);
  Request* retry = h.transport.ActiveFor(kServices);
  REQUIRE(retry != nullptr);
  h.ListServices();
  CHECK(h.source->synced());
  h.timers.AdvanceMs(600'000);
  CHECK(logs.Count("no initial sync") == 2);
}

TEST_CASE("after a sync, losing the API warns once with the staleness and recovery is logged",
          "[api_source]") {
  LogCapture logs;
  Harness h;
  h.source->Start();
  h.ListSlices();
  h.ListServices();
  h.sink.calls.clear();
  FakeApiTransport::Head(h.Active(kSlices), 200);  // the slice watch is fine

  h.clock.AdvanceMs(30'000);
  FakeApiTransport::Done(h.Active(kServices), "connection refused");
  CHECK(logs.Count("answers continue from the last snapshot, which may be 30 s old") == 1);
  for (int i = 0; i < 5; ++i) {  // further failures within the interval stay quiet
    h.timers.AdvanceMs(*h.timers.NextDueInMs());
    Request* watch = h.transport.ActiveFor(kServices);
    REQUIRE(watch != nullptr);
    FakeApiTransport::Done(*watch, "connection refused");
  }
  CHECK(logs.Count("answers continue from the last snapshot") == 1);
  CHECK(h.sink.calls.empty());  // the records stay as they were
  CHECK(h.Renders(R"(kdns_kubedns_api_errors_total{resource="services",code="transport"} 6)"));

  h.timers.AdvanceMs(*h.timers.NextDueInMs());
  FakeApiTransport::Head(h.Active(kServices), 200);
  CHECK(logs.Count("INFO Kubernetes API reachable again") == 1);
}

TEST_CASE("the API source's metrics render with the staleness of each resource", "[api_source]") {
  Harness h;
  h.source->Start();
  h.ListSlices();
  h.clock.AdvanceMs(2'000);
  h.ListServices();
  h.clock.AdvanceMs(5'000);
  CHECK(h.Renders(R"(kdns_kubedns_api_last_sync_age_seconds{resource="endpointslices"} 7)"));
  CHECK(h.Renders(R"(kdns_kubedns_api_last_sync_age_seconds{resource="services"} 5)"));
  FakeApiTransport::Respond(h.Active(kServices), 500, ReadCapture("06-watch-rv-not-a-number"));
  std::string text = h.registry.Render();
  for (std::string_view line : {
           "# TYPE kdns_kubedns_api_events_total counter",
           "# TYPE kdns_kubedns_api_last_sync_age_seconds gauge",
           "# TYPE kdns_kubedns_api_event_to_publish_seconds histogram",
           R"(kdns_kubedns_api_lists_total{resource="endpointslices"} 1)",
           R"(kdns_kubedns_api_errors_total{resource="services",code="500"} 1)",
           R"(kdns_kubedns_api_watch_restarts_total{resource="services",reason="http_error"} 1)",
       }) {
    INFO(text);
    CHECK(text.find(line) != std::string::npos);
  }
}

TEST_CASE("stopping the API source cancels every request and timer", "[api_source]") {
  Harness h;
  h.source->Start();
  h.ListSlices();
  h.source->Stop();
  CHECK(h.transport.ActiveCount() == 0);
  CHECK(h.timers.ActiveCount() == 0);
  h.source->Stop();  // idempotent
}

TEST_CASE("the API source runs on real loop timers by default", "[api_source]") {
  loop::Loop loop;
  {
    metrics::Registry registry;
    FakeApiTransport transport;
    RecordingSink sink;
    ApiSource::Options options;
    options.backoff.base_ms = 2;
    options.backoff.cap_ms = 2;
    ApiSource source(loop, transport, sink, registry, options);
    source.Start();
    FakeApiTransport::Done(*transport.ActiveFor(kServices), "connection refused");
    REQUIRE(loop::testing::RunUntil(loop, [&] { return transport.ActiveFor(kServices); }));
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE(
    "absent multicluster CRDs are logged once, served empty and never hold back the cluster "
    "zone",
    "[api_source]") {
  constexpr std::string_view kMcsV1alpha1 = "/apis/multicluster.x-k8s.io/v1alpha1/serviceimports?";
  constexpr std::string_view kMcsV1beta1 = "/apis/multicluster.x-k8s.io/v1beta1/serviceimports?";
  constexpr std::string_view kMcsSlices =
      "/apis/discovery.k8s.io/v1/endpointslices?resourceVersion=0&limit=500&labelSelector=";
  constexpr std::string_view kKubeslice = "/apis/networking.kubeslice.io/v1beta1/serviceimports?";
  constexpr std::string_view kMesh = "/apis/mesh.avesha.io/v1beta1/serviceimports?";
  LogCapture logs;
  ApiSource::Options options;
  options.watch_multicluster = true;
  options.watch_kubeslice = true;
  // The retries below step the timers one by one; the QPS limit's timer has its own test.
  options.api_qps = 0;
  Harness h(options);
  h.source->Start();
  CHECK(h.transport.ActiveCount() == 5);
  CHECK(h.Active(kMcsSlices).Param("labelSelector") == "multicluster.kubernetes.io%2Fservice-name");

  FakeApiTransport::Respond(h.Active(kMcsV1alpha1), 404, ReadCapture("06-notfound-resource"));
  FakeApiTransport::Respond(h.Active(kKubeslice), 404, ReadCapture("06-notfound-resource"));
  CHECK(logs.Count("does not serve serviceimports") == 1);
  CHECK(logs.Count("does not serve kubeslice_serviceimports") == 1);
  h.ListSlices();
  h.ListServices();
  CHECK(h.source->synced());  // the multicluster resources never hold the cluster zone back
  CHECK(h.sink.calls ==
        std::vector<std::string>{"ReplaceServiceImports 0", "ReplaceKubesliceServiceImports 0",
                                 "KubesliceSynced", "ListSlices 8", "ListServices 12", "Synced"});
  h.sink.calls.clear();
  FakeApiTransport::Respond(
      h.Active(kMcsSlices), 200,
      R"({"kind":"EndpointSliceList","apiVersion":"discovery.k8s.io/v1","metadata":{"resourceVersion":"108"},"items":[]})");
  CHECK(h.sink.calls == std::vector<std::string>{"ReplaceMulticlusterSlices 0", "McsSynced"});

  // The retries try the other group/version, and stay quiet.
  h.timers.AdvanceMs(*h.timers.NextDueInMs());
  FakeApiTransport::Respond(h.Active(kMcsV1beta1), 404, ReadCapture("06-notfound-resource"));
  h.timers.AdvanceMs(*h.timers.NextDueInMs());
  REQUIRE(h.transport.ActiveFor(kMesh) != nullptr);
  CHECK(logs.Count("does not serve serviceimports") == 1);

  // The CRD is installed: the next LIST finds it, and the watch follows its path.
  h.sink.calls.clear();
  FakeApiTransport::Respond(
      h.Active(kMesh), 200,
      R"({"kind":"ServiceImportList","apiVersion":"mesh.avesha.io/v1beta1","metadata":{"resourceVersion":"120"},"items":[)"
      R"({"metadata":{"name":"legacy","namespace":"old"},"spec":{"dnsName":"legacy.old.svc.slice.local"}}]})");
  CHECK(h.sink.calls == std::vector<std::string>{"ReplaceKubesliceServiceImports 1"});
  CHECK(logs.Count("now serves kubeslice_serviceimports") == 1);
  CHECK(h.Active(kMesh).IsWatch());
  CHECK(h.Renders(R"(kdns_kubedns_api_synced{resource="kubeslice_serviceimports"} 1)"));
  CHECK(h.Renders(R"(kdns_kubedns_api_errors_total{resource="serviceimports",code="404"} 2)"));
}

TEST_CASE("all reflectors share one QPS limit, and waiting requests are counted", "[api_source]") {
  ApiSource::Options options;
  options.api_qps = 2;
  options.api_burst = 3;
  options.watch_pods = true;
  Harness h(options);
  h.source->Start();
  // Three LISTs fit the burst: services, endpointslices, pods all go at once.
  CHECK(h.transport.ActiveCount() == 3);
  h.ListSlices();  // its watch has to wait for a token
  CHECK(h.transport.ActiveFor(kSlices) == nullptr);
  CHECK(h.Renders("kdns_kubedns_api_requests_delayed_total 1"));
  h.timers.AdvanceMs(499);
  CHECK(h.transport.ActiveFor(kSlices) == nullptr);
  h.timers.AdvanceMs(1);  // one token every 500 ms
  CHECK(h.Active(kSlices).IsWatch());
  // Services' page 2 and pods' watch queue in order of arrival, one token each.
  FakeApiTransport::Respond(h.Active(kServices), 200, ReadCapture("01-list-services-p1"));
  FakeApiTransport::Respond(h.Active(kPods), 200, kPodList);
  CHECK(h.Renders("kdns_kubedns_api_requests_delayed_total 3"));
  h.timers.AdvanceMs(500);
  CHECK(h.Active(kServices).Param("continue") != "");
  CHECK(h.transport.ActiveFor(kPods) == nullptr);
  h.timers.AdvanceMs(500);
  CHECK(h.Active(kPods).IsWatch());
}

TEST_CASE("a LIST streams into the sink, and a LIST restarted from page 1 begins again",
          "[api_source]") {
  Harness h;
  h.source->Start();
  FakeApiTransport::Respond(h.Active(kServices), 200, ReadCapture("01-list-services-p1"));
  // Page 1's objects are in the sink already; the list stays open until its last page.
  CHECK(h.sink.raw == std::vector<std::string>{"BeginList 0", "UpsertService apps/noready",
                                               "UpsertService apps/split",
                                               "UpsertService default/dual"});
  CHECK(h.sink.Listing(RecordTreeWriter::ListKind::kServices));
  // Page 2's continue token has expired: the LIST starts over, and so does the sink's list.
  FakeApiTransport::Respond(h.Active(kServices), 410, ReadCapture("05a-list-continue-expired"));
  h.timers.AdvanceMs(5'000);  // within the relist jitter
  h.ListServices();
  CHECK(std::count(h.sink.raw.begin(), h.sink.raw.end(), "BeginList 0") == 2);
  CHECK(std::count(h.sink.raw.begin(), h.sink.raw.end(), "EndList 0") == 1);
  CHECK(h.sink.raw.back() == "EndList 0");
  CHECK(h.sink.services.size() == 12);
  CHECK_FALSE(h.sink.Listing(RecordTreeWriter::ListKind::kServices));
  CHECK(h.sink.calls == std::vector<std::string>{"ListServices 12"});
  CHECK_FALSE(h.source->synced());  // the slices have not listed yet
}

}  // namespace
}  // namespace kdns::kubedns
