#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/k8s/reflector.h"
#include "common/k8s/reflector_testing.h"

namespace kdns::k8s {
namespace {

using testing::FakeApiTransport;
using testing::Harness;
using testing::ReadCapture;
using testing::StreamHarness;
using Request = testing::FakeApiTransport::Request;

const std::vector<std::string> kWatchEvents = {
    "ADDED default/web@110",   "MODIFIED default/web@111", "MODIFIED default/web@113",
    "DELETED default/web@114", "ADDED default/web@116",    "DELETED default/unnamed@117",
};

TEST_CASE("a watch stream split at every point gives the same events in order", "[reflector]") {
  Harness h;
  h.StartAndList();
  const std::string body = ReadCapture("03-watch-services");

  std::vector<std::string> expected;
  for (size_t split = 0; split <= body.size(); ++split) {
    Request& watch = h.OpenWatch();
    FakeApiTransport::Body(watch, std::string_view(body).substr(0, split));
    FakeApiTransport::Body(watch, std::string_view(body).substr(split));
    h.clock.AdvanceMs(40'000);
    FakeApiTransport::Done(watch);  // the server's clean close at timeoutSeconds
    expected.insert(expected.end(), kWatchEvents.begin(), kWatchEvents.end());
    if (h.handler.events != expected) {
      FAIL("split at " << split);
    }
    REQUIRE(h.reflector->stats().resource_version.text == "117");
    REQUIRE(h.Watch().Param("resourceVersion") == "117");
  }
  CHECK(h.handler.errors.empty());
  CHECK(h.reflector->stats().bookmarks == body.size() + 1);
}

TEST_CASE("a watch stream in random-sized pieces gives the same events", "[reflector]") {
  Harness h;
  h.StartAndList();
  const std::string body = ReadCapture("03-watch-services");
  std::mt19937 random(42);
  for (int round = 0; round < 200; ++round) {
    Request& watch = h.OpenWatch();
    std::uniform_int_distribution<size_t> size(1, 1 + random() % 3000);
    for (size_t at = 0; at < body.size();) {
      size_t n = std::min(size(random), body.size() - at);
      FakeApiTransport::Body(watch, std::string_view(body).substr(at, n));
      at += n;
    }
    h.clock.AdvanceMs(40'000);
    FakeApiTransport::Done(watch);
    REQUIRE(h.handler.events.size() == kWatchEvents.size() * (round + 1));
    REQUIRE(std::equal(kWatchEvents.begin(), kWatchEvents.end(),
                       h.handler.events.end() - kWatchEvents.size()));
  }
}

TEST_CASE("bookmarks advance the resource version without events", "[reflector]") {
  ReflectorOptions options;
  options.path = "/apis/discovery.k8s.io/v1/endpointslices";
  options.kind = Kind::kEndpointSlice;
  options.random = [] { return 0.0; };
  Harness h(options);
  Request& list = h.Start();
  // The first LIST asks the watch cache (resourceVersion=0), with client-go's page size.
  CHECK(list.path == "/apis/discovery.k8s.io/v1/endpointslices?resourceVersion=0&limit=500");
  FakeApiTransport::Respond(list, 200, ReadCapture("02-list-endpointslices"));
  REQUIRE(h.handler.lists.size() == 1);
  CHECK(h.handler.lists[0].endpoint_slices.size() == 8);

  Request& watch = h.Watch();
  CHECK(watch.Param("timeoutSeconds") == "300");
  const std::string body = ReadCapture("04-watch-endpointslices");
  auto lines = testing::Lines(body);
  REQUIRE(lines.size() == 8);
  FakeApiTransport::Head(watch, 200);
  // Six events, then the two bookmarks (both RV 129), each line with its "\n".
  for (size_t i = 0; i < 6; ++i) FakeApiTransport::Body(watch, lines[i] + "\n");
  size_t calls = h.handler.calls.size();
  FakeApiTransport::Body(watch, lines[6] + "\n" + lines[7] + "\n");
  CHECK(h.handler.events.size() == 6);
  CHECK(std::vector<std::string>(h.handler.calls.begin() + calls, h.handler.calls.end()) ==
        std::vector<std::string>{"BOOKMARK 129", "BOOKMARK 129"});
  CHECK(h.reflector->stats().bookmarks == 2);
  CHECK(h.reflector->stats().resource_version.text == "129");
  CHECK(h.handler.events.back() == "MODIFIED load/big-1@129");

  SECTION("a bookmark alone moves where the next watch starts") {
    FakeApiTransport::Body(
        watch,
        R"({"type":"BOOKMARK","object":{"kind":"EndpointSlice","apiVersion":"discovery.k8s.io/v1","metadata":{"resourceVersion":"140","creationTimestamp":null},"addressType":"","endpoints":null,"ports":null}})"
        "\n");
    FakeApiTransport::Done(watch);
    CHECK(h.Watch().Param("resourceVersion") == "140");
    CHECK(h.handler.events.size() == 6);
  }
}

TEST_CASE("an ERROR event with code 410 on a 200 watch makes a new LIST", "[reflector]") {
  Harness h;
  h.StartAndList();
  Request& watch = h.OpenWatch();
  FakeApiTransport::Body(watch, ReadCapture("05b-watch-services-old-rv-after-restart"));
  CHECK(watch.cancelled);
  CHECK(h.reflector->state() == Reflector::State::kListing);
  CHECK(h.reflector->stats().relists == 1);
  CHECK(h.handler.calls.back() == "RESTART expired");

  h.ListServices();
  CHECK(h.handler.lists.size() == 2);  // the handler replaces its state with the new list

  SECTION("a 410 that repeats at once backs off") {
    Request& again = h.OpenWatch();
    FakeApiTransport::Body(again, ReadCapture("05b-watch-services-old-rv-after-restart"));
    CHECK(h.reflector->state() == Reflector::State::kWaiting);
    CHECK(h.reflector->retry_delay_ms() == 500);  // 0.5 * the second ceiling (1000)
    h.timers.AdvanceMs(499);
    CHECK(h.transport.ActiveCount() == 0);
    h.timers.AdvanceMs(1);
    CHECK_FALSE(h.transport.Active().IsWatch());
  }
  SECTION("an HTTP 410 on the watch does the same") {
    FakeApiTransport::Respond(h.Watch(), 410, R"({"kind":"Status","code":410})");
    CHECK(h.reflector->stats().relists == 2);
    CHECK(h.transport.ActiveCount() + h.timers.ActiveCount() > 0);
  }
}

TEST_CASE("a watch the server closes is resumed at once from the last RV", "[reflector]") {
  Harness h;
  h.StartAndList();
  Request& watch = h.OpenWatch();
  FakeApiTransport::Body(watch, ReadCapture("03-watch-services"));
  h.timers.AdvanceMs(40'020);
  FakeApiTransport::Done(watch);
  CHECK(h.Watch().Param("resourceVersion") == "117");
  CHECK(h.reflector->stats().restarts_for(RestartReason::kClosed) == 1);
  CHECK(h.handler.errors.empty());

  SECTION("but a watch closed at once with no line backs off") {
    Request& quick = h.Watch();
    FakeApiTransport::Respond(quick, 200, "");
    CHECK(h.reflector->state() == Reflector::State::kWaiting);
    h.timers.AdvanceMs(*h.timers.NextDueInMs());
    CHECK(h.Watch().Param("resourceVersion") == "117");
  }
}

TEST_CASE("a transport error mid-line re-watches from the last RV after backoff", "[reflector]") {
  Harness h;
  h.StartAndList();
  const std::string body = ReadCapture("03-watch-services");
  auto lines = testing::Lines(body);
  Request& watch = h.OpenWatch();
  FakeApiTransport::Body(watch, lines[0] + "\n" + lines[1].substr(0, 100));
  FakeApiTransport::Done(watch, "connection closed mid-body");
  CHECK(h.handler.events == std::vector<std::string>{"ADDED default/web@110"});
  CHECK(h.reflector->state() == Reflector::State::kWaiting);
  CHECK(h.reflector->retry_delay_ms() == 250);  // 0.5 * 500
  REQUIRE(h.handler.errors.size() == 1);
  CHECK(h.handler.errors[0].code == "transport");
  CHECK(h.handler.errors[0].message.find("partial line of 100 bytes") != std::string::npos);

  h.timers.AdvanceMs(250);
  Request& resumed = h.Watch();
  CHECK(resumed.Param("resourceVersion") == "110");
  // The server resends from 110 on; the dropped fragment must not be glued to it.
  FakeApiTransport::Head(resumed, 200);
  for (size_t i = 1; i < lines.size(); ++i) FakeApiTransport::Body(resumed, lines[i] + "\n");
  CHECK(h.handler.events == kWatchEvents);
  CHECK(h.reflector->stats().restarts_for(RestartReason::kTransport) == 1);
  CHECK(h.reflector->stats().errors.at("transport") == 1);
}

TEST_CASE("a watch with no byte for the stall timeout is cancelled and resumed", "[reflector]") {
  Harness h;
  h.StartAndList();
  Request& watch = h.OpenWatch();
  auto lines = testing::Lines(ReadCapture("03-watch-services"));
  h.timers.AdvanceMs(60'000);
  FakeApiTransport::Body(watch, lines[0] + "\n");  // bytes push the deadline back
  h.timers.AdvanceMs(89'999);
  CHECK(watch.active());
  h.timers.AdvanceMs(1);
  CHECK(watch.cancelled);
  Request& resumed = h.Watch();
  CHECK(resumed.Param("resourceVersion") == "110");
  CHECK(h.reflector->stats().restarts_for(RestartReason::kStall) == 1);

  SECTION("two silent watches in a row make a new LIST") {
    FakeApiTransport::Head(resumed, 200);
    h.timers.AdvanceMs(90'000);
    CHECK(resumed.cancelled);
    Request& third = h.Watch();  // one silent stall: watch again
    h.timers.AdvanceMs(90'000);
    CHECK(third.cancelled);
    CHECK_FALSE(h.transport.Active().IsWatch());
    CHECK(h.reflector->stats().restarts_for(RestartReason::kStall) == 3);
  }
}

TEST_CASE("a malformed watch line is counted and makes a new LIST after backoff", "[reflector]") {
  Harness h;
  h.StartAndList();
  Request& watch = h.OpenWatch();

  SECTION("not JSON") { FakeApiTransport::Body(watch, "<html>proxy error</html>\n"); }
  SECTION("longer than max_line_bytes, before its newline") {
    FakeApiTransport::Body(watch, std::string(16u << 20, 'x'));
    CHECK(watch.active());
    FakeApiTransport::Body(watch, "x");
  }
  CHECK(watch.cancelled);
  CHECK(h.reflector->stats().malformed_lines == 1);
  CHECK(h.reflector->stats().errors.at("decode") == 1);
  CHECK(h.reflector->stats().restarts_for(RestartReason::kMalformed) == 1);
  CHECK(h.reflector->state() == Reflector::State::kWaiting);
  h.timers.AdvanceMs(h.reflector->retry_delay_ms());
  // At least what we saw, from the watch cache; paged, since this server paged the first.
  CHECK(h.transport.Active().path ==
        "/api/v1/services?resourceVersion=107&resourceVersionMatch=NotOlderThan&limit=500");
}

TEST_CASE("an event whose object does not decode is delivered as a delete", "[reflector]") {
  Harness h;
  h.StartAndList();
  Request& watch = h.OpenWatch();
  FakeApiTransport::Body(
      watch,
      R"({"type":"MODIFIED","object":{"kind":"Service","apiVersion":"v1","metadata":{"name":"dual","namespace":"default","uid":"u","resourceVersion":"120"},"spec":{"ports":[{"port":"eighty"}]}}})"
      "\n");
  CHECK(h.handler.events == std::vector<std::string>{"DELETED default/dual@120"});
  CHECK(h.reflector->stats().errors.at("decode") == 1);
  CHECK(h.reflector->stats().resource_version.text == "120");
  CHECK(watch.active());  // the watch goes on
}

TEST_CASE("a watch-list streams the list as ADDED events up to its end bookmark, then watches",
          "[reflector]") {
  ReflectorOptions options = Harness::Services();
  options.watch_list = true;
  StreamHarness h(options);
  Request& request = h.Start();
  REQUIRE(request.IsWatch());
  CHECK(request.Param("sendInitialEvents") == "true");
  CHECK(request.Param("resourceVersionMatch") == "NotOlderThan");
  CHECK(request.Param("allowWatchBookmarks") == "true");
  CHECK(request.Param("resourceVersion") == "0");
  const std::string list = ReadCapture("07-list-services-rv0");

  SECTION("served: objects, the end bookmark, then events on the same response") {
    FakeApiTransport::Head(request, 200);
    CHECK(h.handler.calls == std::vector<std::string>{"BEGIN"});
    FakeApiTransport::Body(
        request,
        R"({"type":"ADDED","object":{"kind":"Service","apiVersion":"v1","metadata":{"name":"a","namespace":"n","resourceVersion":"5"},"spec":{"clusterIP":"10.0.0.1"}}})"
        "\n"
        R"({"type":"ADDED","object":{"kind":"Service","apiVersion":"v1","metadata":{"name":"b","namespace":"n","resourceVersion":"6"},"spec":{"clusterIP":"10.0.0.2"}}})"
        "\n");
    CHECK(h.Objects() == 2);
    CHECK(h.reflector->stats().lists == 0);
    FakeApiTransport::Body(
        request,
        R"({"type":"BOOKMARK","object":{"kind":"Service","apiVersion":"v1","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}})"
        "\n");
    CHECK(h.handler.calls.back() == "END 9");
    CHECK(h.reflector->stats().lists == 1);
    CHECK(h.reflector->stats().resource_version.text == "9");
    CHECK(request.active());  // the same response is now the watch
    CHECK(h.transport.ActiveCount() == 1);
  }
  SECTION("refused by a 1.25 server (422): LIST at once, and from then on") {
    FakeApiTransport::Respond(
        request, 422,
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch","reason":"Invalid","code":422})");
    Request& fallback = h.transport.Active();
    CHECK_FALSE(fallback.IsWatch());
    CHECK(fallback.path == "/api/v1/services?resourceVersion=0&limit=500");
    FakeApiTransport::Respond(fallback, 200, list);
    CHECK(h.handler.calls.back() == "END 117");
    // A later re-LIST does not try the watch-list again.
    FakeApiTransport::Respond(h.transport.Active(), 410, ReadCapture("05a-list-continue-expired"));
    CHECK_FALSE(h.transport.Active().IsWatch());
  }
  SECTION("ended before its end bookmark (a server that ignores it): LIST instead") {
    FakeApiTransport::Head(request, 200);
    FakeApiTransport::Done(request);
    CHECK_FALSE(h.transport.Active().IsWatch());
  }
  SECTION("cut mid-way: asked again whole, after backoff") {
    FakeApiTransport::Head(request, 200);
    FakeApiTransport::Done(request, "connection reset by peer");
    h.timers.AdvanceMs(h.reflector->retry_delay_ms());
    CHECK(h.transport.Active().Param("sendInitialEvents") == "true");
    CHECK(std::count(h.handler.calls.begin(), h.handler.calls.end(), "BEGIN") == 1);
  }
}

}  // namespace
}  // namespace kdns::k8s
