// Watch-stream lines (Service and EndpointSlice events, bookmarks, 410 errors, replays,
// malformed lines) decoded from the real API server's captured responses in
// test/fixtures/k8s-api/ (see its README).
#include <catch2/catch.hpp>

#include "common/k8s/decode.h"
#include "common/k8s/testing.h"

namespace kdns::k8s {
namespace {

using testing::Ips;
using testing::Lines;
using testing::ReadCapture;

std::vector<WatchEvent> DecodeWatchCapture(std::string_view name, Kind kind) {
  std::vector<WatchEvent> events;
  for (const std::string& line : Lines(ReadCapture(name))) {
    auto event = DecodeWatchEvent(line, kind);
    INFO(name << ": " << line.substr(0, 200));
    INFO(event.error());
    REQUIRE(event.ok());
    CHECK(event->object_error.empty());
    CHECK(event->warnings.empty());
    events.push_back(std::move(event).value());
  }
  return events;
}

TEST_CASE("A Service watch decodes adds, changes, deletes and the bookmark", "[k8s]") {
  std::vector<WatchEvent> events = DecodeWatchCapture("03-watch-services", Kind::kService);
  REQUIRE(events.size() == 7);
  std::vector<std::string> seen;
  seen.reserve(events.size());
  for (const WatchEvent& event : events) {
    seen.push_back(std::string(ToString(event.type)) + " " + testing::Key(event.meta));
  }
  CHECK(seen == std::vector<std::string>{"ADDED default/web@110", "MODIFIED default/web@111",
                                         "MODIFIED default/web@113", "DELETED default/web@114",
                                         "ADDED default/web@116", "DELETED default/unnamed@117",
                                         "BOOKMARK /@117"});
  const auto& added = std::get<Service>(events[0].object);
  CHECK(added.ports == std::vector<ServicePort>{{"80-8080", Protocol::kTcp, 80}});
  CHECK(added.cluster_ips.size() == 1);
  CHECK(
      std::get<Service>(events[1].object).ports ==
      std::vector<ServicePort>{{"80-8080", Protocol::kTcp, 80}, {"metrics", Protocol::kTcp, 9100}});
  CHECK(events[3].meta.uid == "2ddb98fa-f9f7-4f67-8671-402a9670f4d3");
  CHECK(std::holds_alternative<Service>(events[3].object));  // the last state
  CHECK(events[4].meta.uid == "cdc39162-96d1-4227-8305-bf2d0b5c2f82");
  CHECK(std::get<Service>(events[4].object).headless);

  const WatchEvent& bookmark = events[6];
  CHECK(bookmark.kind == Kind::kService);
  CHECK(bookmark.meta.resource_version.text == "117");
  CHECK(bookmark.meta.resource_version.number == 117u);
  CHECK(bookmark.meta.name.empty());
  CHECK(std::holds_alternative<std::monostate>(bookmark.object));
}

TEST_CASE("A watch over HTTP/2 has the same line format", "[k8s]") {
  std::vector<WatchEvent> events = DecodeWatchCapture("03h2-watch-services-http2", Kind::kService);
  REQUIRE(events.size() == 3);
  CHECK(events[0].type == EventType::kAdded);
  CHECK(testing::Key(events[0].meta) == "default/h2demo@133");
  CHECK(events[1].type == EventType::kDeleted);
  CHECK(events[1].meta.resource_version.text == "134");
  CHECK(events[2].type == EventType::kBookmark);
  CHECK(events[2].meta.resource_version.text == "134");
}

TEST_CASE("An EndpointSlice watch carries whole slices and null-field bookmarks", "[k8s]") {
  std::vector<WatchEvent> events =
      DecodeWatchCapture("04-watch-endpointslices", Kind::kEndpointSlice);
  REQUIRE(events.size() == 8);
  auto slice = [&](size_t i) -> const EndpointSlice& {
    REQUIRE(std::holds_alternative<EndpointSlice>(events[i].object));
    return std::get<EndpointSlice>(events[i].object);
  };
  // 123: my-pet-2 (10.244.1.11) no longer ready.
  CHECK(testing::Key(events[0].meta) == "default/headless-abc12@123");
  bool found = false;
  for (const Endpoint& endpoint : slice(0).endpoints) {
    if (endpoint.addresses == Ips({"10.244.1.11"})) {
      found = true;
      CHECK(endpoint.hostname == "my-pet-2");
      CHECK_FALSE(endpoint.ready);
    }
  }
  CHECK(found);
  // 124: my-pet-3 added, ready. 126: 10.244.1.12 removed.
  const Endpoint& added = slice(1).endpoints.back();
  CHECK(added.addresses == Ips({"10.244.1.14"}));
  CHECK(added.hostname == "my-pet-3");
  CHECK(added.ready);
  CHECK(slice(2).endpoints.size() == slice(1).endpoints.size() - 1);
  for (const Endpoint& endpoint : slice(2).endpoints) {
    CHECK(endpoint.addresses != Ips({"10.244.1.12"}));
  }
  CHECK(events[3].type == EventType::kAdded);
  CHECK(testing::Key(events[3].meta) == "apps/split-3@127");
  CHECK(slice(3).service_name == "split");
  CHECK(events[4].type == EventType::kDeleted);
  CHECK(testing::Key(events[4].meta) == "apps/split-3@128");
  CHECK(testing::Key(events[5].meta) == "load/big-1@129");
  CHECK(slice(5).endpoints.size() == 1000);
  for (size_t i : {6u, 7u}) {
    CHECK(events[i].type == EventType::kBookmark);
    CHECK(events[i].kind == Kind::kEndpointSlice);
    CHECK(events[i].meta.resource_version.text == "129");
  }
}

TEST_CASE("A watch from a too-old version is an ERROR event with code 410", "[k8s]") {
  auto [name, message] = GENERATE(table<std::string, std::string>({
      {"05b-watch-services-old-rv-after-restart", "too old resource version: 142 (143)"},
      {"05b-watch-services-rv1-after-restart", "too old resource version: 1 (143)"},
  }));
  std::vector<WatchEvent> events = DecodeWatchCapture(name, Kind::kService);
  REQUIRE(events.size() == 1);
  const WatchEvent& event = events[0];
  CHECK(event.type == EventType::kError);
  CHECK(event.kind == Kind::kStatus);
  CHECK(event.status.code == 410);
  CHECK(event.status.IsExpired());
  CHECK(event.status.reason == "Expired");
  CHECK(event.status.status == "Failure");
  CHECK(event.status.message == message);
  CHECK(std::holds_alternative<std::monostate>(event.object));
}

TEST_CASE("A watch from version 1 replays the history in version order", "[k8s]") {
  std::vector<WatchEvent> events =
      DecodeWatchCapture("05b-watch-services-rv1-before-restart", Kind::kService);
  REQUIRE(events.size() == 12);
  uint64_t last = 0;
  for (const WatchEvent& event : events) {
    CHECK(event.type == EventType::kAdded);
    REQUIRE(event.meta.resource_version.number.has_value());
    CHECK(*event.meta.resource_version.number > last);
    last = *event.meta.resource_version.number;
  }
  CHECK(testing::Key(events.front().meta) == "default/kubernetes@72");
  CHECK(testing::Key(events.back().meta) == "load/big@94");
}

TEST_CASE("A watch that got nothing has no lines to decode", "[k8s]") {
  CHECK(Lines(ReadCapture("06-watch-rv-too-large")).empty());
  CHECK(DecodeWatchEvent("").error() ==
        "watch event: not JSON: The document is empty. at offset 0");
}

TEST_CASE("The event before an API server shutdown decodes; a line cut short fails", "[k8s]") {
  std::string body = ReadCapture("09-watch-services-apiserver-shutdown");
  std::vector<WatchEvent> events =
      DecodeWatchCapture("09-watch-services-apiserver-shutdown", Kind::kService);
  REQUIRE(events.size() == 1);
  CHECK(events[0].type == EventType::kDeleted);
  CHECK(testing::Key(events[0].meta) == "default/after-restart-2@151");
  // The capture's connection died after a whole line; a cut inside a line must fail cleanly.
  for (size_t cut : {size_t{1}, size_t{10}, size_t{500}, body.size() - 3, body.size() - 2}) {
    auto event = DecodeWatchEvent(std::string_view(body).substr(0, cut), Kind::kService);
    INFO(cut);
    CHECK_FALSE(event.ok());
    CHECK(event.error().starts_with("watch event: not JSON: "));
  }
}

TEST_CASE("Malformed watch lines fail with one clear line", "[k8s]") {
  auto [line, error] = GENERATE(table<std::string, std::string>({
      {"{", "watch event: not JSON: Missing a name for object member. at offset 1"},
      {"[]", "watch event: not an object: an array"},
      {"{}", "watch event: type: missing"},
      {R"({"type":1})", "watch event: type: not a string: 1"},
      {R"({"type":"UPDATED","object":{}})", R"(watch event: unknown type "UPDATED")"},
      {R"({"type":"ADDED"})", "ADDED event: object: missing"},
      {R"({"type":"ADDED","object":null})", "ADDED event: object: missing"},
      {R"({"type":"ADDED","object":"x"})", R"(ADDED event: object: not an object: "x")"},
      {R"({"type":"ADDED","object":{"kind":["Service"]}})",
       "ADDED event: object.kind: not a string"},
      {R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p","namespace":"d"}}})",
       R"(ADDED event: kind "Pod" in a watch of Service)"},
      {R"({"type":"ADDED","object":{"kind":"Namespace"}})",
       R"(ADDED event: unsupported kind "Namespace")"},
      {R"({"type":"ADDED","object":{"kind":"Status"}})",
       R"(ADDED event: unsupported kind "Status")"},
      {R"({"type":"DELETED","object":{"kind":"Service","metadata":{"namespace":"d"}}})",
       "DELETED: Service: metadata.name: missing"},
      {R"({"type":"BOOKMARK","object":{"kind":"Service","metadata":{"resourceVersion":null}}})",
       "BOOKMARK: Service: metadata.resourceVersion: missing"},
      {R"({"type":"BOOKMARK","object":{"kind":"Service"}})",
       "BOOKMARK: Service: metadata.resourceVersion: missing"},
      {R"({"type":"BOOKMARK","object":{"kind":"Service","metadata":{"resourceVersion":5}}})",
       "BOOKMARK: Service: metadata.resourceVersion: not a string: 5"},
      {R"({"type":"ERROR","object":{"kind":"Status","code":"410"}})",
       R"(ERROR event: Status: code: not an integer: "410")"},
      {R"({"type":"ERROR","object":{"kind":"Service"}})",
       R"(ERROR event: Status: kind: not a Status: "Service")"},
  }));
  INFO(line);
  auto event = DecodeWatchEvent(line, Kind::kService);
  REQUIRE_FALSE(event.ok());
  CHECK(event.error() == error);
}

TEST_CASE("A watch object without a kind takes the watched kind", "[k8s]") {
  std::string line =
      R"({"type":"ADDED","object":{"metadata":{"name":"a","namespace":"d"},"spec":{}}})";
  auto event = DecodeWatchEvent(line + "\r\n", Kind::kService);
  REQUIRE(event.ok());
  CHECK(std::holds_alternative<Service>(event->object));
  CHECK(DecodeWatchEvent(line).error() == "ADDED event: object.kind: missing");
  CHECK(std::holds_alternative<Pod>(
      DecodeWatchEvent(R"({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"p",)"
                       R"("namespace":"d"}}})")
          ->object));
}

TEST_CASE("A watch object that does not decode still names what to drop", "[k8s]") {
  auto event = DecodeWatchEvent(
      R"({"type":"MODIFIED","object":{"kind":"EndpointSlice","metadata":{"name":"s",)"
      R"("namespace":"d","uid":"u","resourceVersion":"9"},"addressType":"IPv4",)"
      R"("endpoints":[{"addresses":["10.0.0.1"],"conditions":{"ready":1}}]}})",
      Kind::kEndpointSlice);
  REQUIRE(event.ok());
  CHECK(event->type == EventType::kModified);
  CHECK(event->kind == Kind::kEndpointSlice);
  CHECK(testing::Key(event->meta) == "d/s@9");
  CHECK(event->meta.uid == "u");
  CHECK(std::holds_alternative<std::monostate>(event->object));
  CHECK(event->object_error ==
        "MODIFIED: EndpointSlice d/s: endpoints[0].conditions.ready: not a boolean: 1");
}

TEST_CASE("Watch-object warnings name the event", "[k8s]") {
  auto event = DecodeWatchEvent(
      R"({"type":"ADDED","object":{"kind":"EndpointSlice","metadata":{"name":"s","namespace":"d"},)"
      R"("addressType":"IPv6","endpoints":[{"addresses":["10.0.0.1"]}]}})");
  REQUIRE(event.ok());
  CHECK(event->object_error.empty());
  CHECK(
      event->warnings.messages() ==
      std::vector<std::string>{
          R"(ADDED: EndpointSlice d/s: endpoints[0].addresses[0]: not an IPv6 address: "10.0.0.1")"});
}

}  // namespace
}  // namespace kdns::k8s
