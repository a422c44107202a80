#include "common/k8s/reflector.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/k8s/reflector_testing.h"
#include "common/k8s/testing.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"

namespace kdns::k8s {
namespace {

using testing::FakeApiTransport;
using testing::FakeTimers;
using testing::Key;
using testing::ReadCapture;
using Request = FakeApiTransport::Request;

// Records every handler call, in order, as one line each in `calls`.
class Recorder final : public ReflectorHandler {
 public:
  void OnList(ObjectList list) override {
    calls.push_back("LIST " + list.meta.resource_version.text);
    lists.push_back(std::move(list));
    if (stop_on_list) reflector->Stop();
  }
  void OnEvent(const WatchEvent& event, std::chrono::steady_clock::time_point) override {
    std::string line = std::string(ToString(event.type)) + " " + Key(event.meta);
    calls.push_back(line);
    events.push_back(line);
  }
  void OnBookmark(const ResourceVersion& rv) override { calls.push_back("BOOKMARK " + rv.text); }
  void OnError(const ReflectorError& error) override {
    calls.push_back("ERROR " + error.code);
    errors.push_back(error);
  }
  void OnRestart(RestartReason reason) override {
    calls.push_back("RESTART " + std::string(ToString(reason)));
  }
  void OnHealthy() override { calls.push_back("HEALTHY"); }

  std::vector<std::string> calls;
  std::vector<std::string> events;
  std::vector<ObjectList> lists;
  std::vector<ReflectorError> errors;
  bool stop_on_list = false;
  Reflector* reflector = nullptr;
};

// The services reflector on simulated time, with the jitter pinned to the middle.
struct Harness {
  explicit Harness(ReflectorOptions options = Services()) {
    reflector = std::make_unique<Reflector>(transport, timers, clock, handler, std::move(options));
    handler.reflector = reflector.get();
  }
  static ReflectorOptions Services() {
    ReflectorOptions options;
    options.path = "/api/v1/services";
    options.kind = Kind::kService;
    options.random = [] { return 0.5; };
    options.relist_jitter_ms = 0;  // re-LISTs at once; the jitter has its own test
    return options;
  }

  // Answers the four captured pages of the paginated LIST, checking the continue tokens.
  void ListServices() {
    std::string token;
    for (int page = 1; page <= 4; ++page) {
      Request& request = transport.Active();
      INFO("page " << page << ": " << request.path);
      REQUIRE_FALSE(request.IsWatch());
      REQUIRE(request.Path() == "/api/v1/services");
      REQUIRE(request.Param("limit") == "500");
      REQUIRE(request.Param("continue") == token);
      std::string body = ReadCapture("01-list-services-p" + std::to_string(page));
      FakeApiTransport::Respond(request, 200, body);
      auto decoded = DecodeList(body);
      REQUIRE(decoded.ok());
      token = UrlEncode(decoded->meta.continue_token);
    }
  }
  Request& Watch() {
    Request& request = transport.Active();
    REQUIRE(request.IsWatch());
    return request;
  }

  ManualClock clock{1'000'000};
  FakeTimers timers{clock};
  FakeApiTransport transport;
  Recorder handler;
  std::unique_ptr<Reflector> reflector;  // after what it uses
};

const std::vector<std::string> kWatchEvents = {
    "ADDED default/web@110",   "MODIFIED default/web@111", "MODIFIED default/web@113",
    "DELETED default/web@114", "ADDED default/web@116",    "DELETED default/unnamed@117",
};

TEST_CASE("a paginated LIST is delivered once, whole, and the watch starts from the list RV",
          "[reflector]") {
  Harness h;
  h.reflector->Start();
  CHECK(h.reflector->state() == Reflector::State::kListing);
  h.ListServices();

  REQUIRE(h.handler.lists.size() == 1);
  const ObjectList& list = h.handler.lists[0];
  CHECK(list.services.size() == 12);
  CHECK(list.meta.resource_version.text == "107");
  CHECK(Key(list.services.front().meta) == "apps/noready@90");
  CHECK(Key(list.services.back().meta) == "load/big@94");
  CHECK(h.handler.calls == std::vector<std::string>{"HEALTHY", "LIST 107"});

  Request& watch = h.Watch();
  CHECK(watch.Path() == "/api/v1/services");
  CHECK(watch.Param("resourceVersion") == "107");  // not 94, the largest item RV
  CHECK(watch.Param("allowWatchBookmarks") == "true");
  CHECK(watch.Param("timeoutSeconds") == "450");  // 300 + 0.5 * 301
  CHECK(watch.timeout_ms == 0);
  const auto& stats = h.reflector->stats();
  CHECK(stats.synced);
  CHECK(stats.lists == 1);
  CHECK(stats.list_pages == 4);
  CHECK(stats.last_sync_ms == h.clock.NowMs());
  CHECK(h.reflector->state() == Reflector::State::kWatching);
}

TEST_CASE("continue tokens and resource versions are URL-encoded", "[reflector]") {
  CHECK(UrlEncode("eyJ2Ijo-_.~") == "eyJ2Ijo-_.~");
  CHECK(UrlEncode("a+b/c=d e&") == "a%2Bb%2Fc%3Dd%20e%26");

  Harness h;
  h.reflector->Start();
  std::string page = ReadCapture("01-list-services-p1");
  auto decoded = DecodeList(page);
  REQUIRE(decoded.ok());
  const std::string token = decoded->meta.continue_token;
  size_t at = page.find(token);
  REQUIRE(at != std::string::npos);
  page.replace(at, token.size(), "a+b/c==");
  FakeApiTransport::Respond(h.transport.Active(), 200, page);
  CHECK(h.transport.Active().Param("continue") == "a%2Bb%2Fc%3D%3D");
}

TEST_CASE("a watch stream split at every point gives the same events in order", "[reflector]") {
  Harness h;
  h.reflector->Start();
  h.ListServices();
  const std::string body = ReadCapture("03-watch-services");

  std::vector<std::string> expected;
  for (size_t split = 0; split <= body.size(); ++split) {
    Request& watch = h.Watch();
    FakeApiTransport::Head(watch, 200);
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
  h.reflector->Start();
  h.ListServices();
  const std::string body = ReadCapture("03-watch-services");
  std::mt19937 random(42);
  for (int round = 0; round < 200; ++round) {
    Request& watch = h.Watch();
    FakeApiTransport::Head(watch, 200);
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
  h.reflector->Start();
  Request& list = h.transport.Active();
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

TEST_CASE("a 410 on a continue token restarts the LIST from page 1", "[reflector]") {
  Harness h;
  h.reflector->Start();
  FakeApiTransport::Respond(h.transport.Active(), 200, ReadCapture("01-list-services-p1"));
  Request& page2 = h.transport.Active();
  REQUIRE_FALSE(page2.Param("continue").empty());
  FakeApiTransport::Respond(page2, 410, ReadCapture("05a-list-continue-expired"));

  // At once (the first re-LIST is free), without the inconsistent token the Status offered.
  CHECK(h.reflector->state() == Reflector::State::kListing);
  Request& again = h.transport.Active();
  // From etcd this time (no resourceVersion): the token's snapshot is gone from the cache.
  CHECK(again.path == "/api/v1/services?limit=500");
  CHECK(h.reflector->stats().relists == 1);
  CHECK(h.reflector->stats().restarts_for(RestartReason::kExpired) == 1);
  CHECK(h.handler.errors.empty());  // a 410 is the protocol, not an error

  h.ListServices();
  REQUIRE(h.handler.lists.size() == 1);
  CHECK(h.handler.lists[0].services.size() == 12);
  CHECK(h.Watch().Param("resourceVersion") == "107");
}

TEST_CASE("an ERROR event with code 410 on a 200 watch makes a new LIST", "[reflector]") {
  Harness h;
  h.reflector->Start();
  h.ListServices();
  Request& watch = h.Watch();
  FakeApiTransport::Head(watch, 200);
  FakeApiTransport::Body(watch, ReadCapture("05b-watch-services-old-rv-after-restart"));
  CHECK(watch.cancelled);
  CHECK(h.reflector->state() == Reflector::State::kListing);
  CHECK(h.reflector->stats().relists == 1);
  CHECK(h.handler.calls.back() == "RESTART expired");

  h.ListServices();
  CHECK(h.handler.lists.size() == 2);  // the handler replaces its state with the new list

  SECTION("a 410 that repeats at once backs off") {
    Request& again = h.Watch();
    FakeApiTransport::Head(again, 200);
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
  h.reflector->Start();
  h.ListServices();
  Request& watch = h.Watch();
  FakeApiTransport::Head(watch, 200);
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
  h.reflector->Start();
  h.ListServices();
  const std::string body = ReadCapture("03-watch-services");
  auto lines = testing::Lines(body);
  Request& watch = h.Watch();
  FakeApiTransport::Head(watch, 200);
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

TEST_CASE("a 429 waits as long as Retry-After says, within a bound", "[reflector]") {
  Harness h;
  h.reflector->Start();
  h.ListServices();
  const std::string status =
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429})";

  SECTION("seven seconds") {
    FakeApiTransport::Respond(h.Watch(), 429, status, 7);
    CHECK(h.reflector->retry_delay_ms() == 7'000);
    h.timers.AdvanceMs(6'999);
    CHECK(h.transport.ActiveCount() == 0);
    h.timers.AdvanceMs(1);
    CHECK(h.Watch().Param("resourceVersion") == "107");
    CHECK(h.reflector->stats().errors.at("429") == 1);
    CHECK(h.reflector->stats().restarts_for(RestartReason::kHttpError) == 1);
  }
  SECTION("an hour is cut to max_retry_after_ms") {
    FakeApiTransport::Respond(h.Watch(), 429, status, 3600);
    CHECK(h.reflector->retry_delay_ms() == 60'000);
  }
  SECTION("without Retry-After, the backoff") {
    FakeApiTransport::Respond(h.Watch(), 429, status);
    CHECK(h.reflector->retry_delay_ms() == 250);
  }
  SECTION("retryAfterSeconds in the Status body counts too (the 504 of a too-large RV)") {
    FakeApiTransport::Respond(
        h.Watch(), 504,
        R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Timeout","details":{"retryAfterSeconds":3},"code":504})");
    CHECK(h.reflector->retry_delay_ms() == 3'000);
  }
}

TEST_CASE("a watch with no byte for the stall timeout is cancelled and resumed", "[reflector]") {
  Harness h;
  h.reflector->Start();
  h.ListServices();
  Request& watch = h.Watch();
  FakeApiTransport::Head(watch, 200);
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
  h.reflector->Start();
  h.ListServices();
  Request& watch = h.Watch();
  FakeApiTransport::Head(watch, 200);

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
  h.reflector->Start();
  h.ListServices();
  Request& watch = h.Watch();
  FakeApiTransport::Head(watch, 200);
  FakeApiTransport::Body(
      watch,
      R"({"type":"MODIFIED","object":{"kind":"Service","apiVersion":"v1","metadata":{"name":"dual","namespace":"default","uid":"u","resourceVersion":"120"},"spec":{"ports":[{"port":"eighty"}]}}})"
      "\n");
  CHECK(h.handler.events == std::vector<std::string>{"DELETED default/dual@120"});
  CHECK(h.reflector->stats().errors.at("decode") == 1);
  CHECK(h.reflector->stats().resource_version.text == "120");
  CHECK(watch.active());  // the watch goes on
}

TEST_CASE("HTTP errors back off exponentially with jitter within bounds", "[reflector]") {
  std::mt19937_64 engine(7);
  ReflectorOptions options = Harness::Services();
  std::vector<double> draws;
  options.random = [&] {
    draws.push_back(std::uniform_real_distribution<double>(0, 1)(engine));
    return draws.back();
  };
  Harness h(options);
  h.reflector->Start();
  uint64_t ceiling = 500;
  for (int i = 0; i < 10; ++i) {
    Request& list = h.transport.Active();
    CHECK(list.path == "/api/v1/services?resourceVersion=0&limit=500");  // the same page again
    FakeApiTransport::Respond(list, 500, ReadCapture("06-list-rv-not-a-number"));
    uint64_t delay = h.reflector->retry_delay_ms();
    INFO("attempt " << i << " delay " << delay);
    CHECK(delay <= ceiling);
    CHECK(delay == static_cast<uint64_t>(draws.back() * (ceiling + 1)));
    h.timers.AdvanceMs(delay);
    ceiling = std::min<uint64_t>(ceiling * 2, 30'000);
  }
  CHECK(h.reflector->stats().errors.at("500") == 10);
  REQUIRE(h.handler.errors.size() == 10);
  CHECK(h.handler.errors[0].message.find("strconv.ParseUint") != std::string::npos);

  SECTION("401 and 403 retry the same way (the transport re-reads the token)") {
    FakeApiTransport::Respond(h.transport.Active(), 401, ReadCapture("06-bad-token"));
    CHECK(h.reflector->state() == Reflector::State::kWaiting);
    CHECK(h.reflector->stats().errors.at("401") == 1);
  }
  SECTION("a success lasting the reset period starts the backoff from the base again") {
    h.ListServices();
    h.timers.AdvanceMs(120'000);
    FakeApiTransport::Done(h.Watch(), "connection reset by peer");
    CHECK(h.reflector->retry_delay_ms() <= 500);
  }
}

TEST_CASE("the handler may stop the reflector from inside a callback", "[reflector]") {
  Harness h;
  h.handler.stop_on_list = true;
  h.reflector->Start();
  h.ListServices();
  CHECK(h.reflector->state() == Reflector::State::kStopped);
  CHECK(h.transport.ActiveCount() == 0);
  CHECK(h.timers.ActiveCount() == 0);
}

TEST_CASE("destroying a reflector cancels its request", "[reflector]") {
  Harness h;
  h.reflector->Start();
  Request& list = h.transport.Active();
  h.reflector.reset();
  CHECK(list.cancelled);
}

TEST_CASE("on a real loop, the retry timer fires and every handle closes", "[reflector]") {
  loop::Loop loop;
  {
    LoopTimers timers(loop);
    FakeApiTransport transport;
    Recorder handler;
    ReflectorOptions options = Harness::Services();
    options.backoff.base_ms = 5;
    options.backoff.cap_ms = 5;
    Reflector reflector(transport, timers, SteadyClock::Instance(), handler, options);
    reflector.Start();
    FakeApiTransport::Done(transport.Active(), "connection refused");
    CHECK(transport.ActiveCount() == 0);
    REQUIRE(loop::testing::RunUntil(loop, [&] { return transport.ActiveCount() == 1; }));
    CHECK(transport.requests().size() == 2);
  }
  loop::testing::RequireClosesClean(loop);
}

// Records the streamed list calls, one line each: "BEGIN", "ns/name@rv", "END <rv>".
class StreamRecorder final : public ReflectorHandler {
 public:
  void OnListBegin() override { calls.push_back("BEGIN"); }
  void OnListObject(Object&& object) override {
    std::visit(
        [&](const auto& value) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(value)>, std::monostate>) {
            calls.push_back(Key(value.meta));
          }
        },
        object);
  }
  void OnListEnd(const ListMeta& meta) override {
    calls.push_back("END " + meta.resource_version.text);
  }
  void OnEvent(const WatchEvent&, std::chrono::steady_clock::time_point) override {}
  void OnError(const ReflectorError& error) override { errors.push_back(error.message); }

  std::vector<std::string> calls;
  std::vector<std::string> errors;
};

struct StreamHarness {
  explicit StreamHarness(ReflectorOptions options = Harness::Services()) {
    reflector = std::make_unique<Reflector>(transport, timers, clock, handler, std::move(options));
  }
  size_t Objects() const {
    return std::count_if(handler.calls.begin(), handler.calls.end(), [](const std::string& call) {
      return call != "BEGIN" && call.rfind("END ", 0) != 0;
    });
  }
  ManualClock clock{1'000'000};
  FakeTimers timers{clock};
  FakeApiTransport transport;
  StreamRecorder handler;
  std::unique_ptr<Reflector> reflector;
};

TEST_CASE("a LIST is delivered object by object as its bytes arrive", "[reflector]") {
  ReflectorOptions options = Harness::Services();
  options.path = "/apis/discovery.k8s.io/v1/endpointslices";
  options.kind = Kind::kEndpointSlice;
  StreamHarness h(options);
  h.reflector->Start();
  Request& list = h.transport.Active();
  const std::string body = ReadCapture("02-list-endpointslices");
  FakeApiTransport::Head(list, 200);
  CHECK(h.handler.calls == std::vector<std::string>{"BEGIN"});
  // One byte at a time: each slice arrives as soon as its closing brace is in.
  size_t half = body.size() / 2;
  for (size_t i = 0; i < half; ++i) FakeApiTransport::Body(list, body.substr(i, 1));
  size_t early = h.Objects();
  CHECK(early > 0);
  CHECK(early < 8);
  for (size_t i = half; i < body.size(); ++i) FakeApiTransport::Body(list, body.substr(i, 1));
  CHECK(h.Objects() == 8);
  CHECK(h.handler.calls.back() != "END 107");  // the end waits for the response's end
  FakeApiTransport::Done(list);
  CHECK(h.handler.calls.back() == "END 107");
  CHECK(h.transport.Active().IsWatch());
}

TEST_CASE("a later page cut mid-item is asked again and nothing is delivered twice",
          "[reflector]") {
  StreamHarness h;
  h.reflector->Start();
  FakeApiTransport::Respond(h.transport.Active(), 200, ReadCapture("01-list-services-p1"));
  Request& page2 = h.transport.Active();
  const std::string body = ReadCapture("01-list-services-p2");
  FakeApiTransport::Head(page2, 200);
  FakeApiTransport::Body(page2, body.substr(0, body.size() * 2 / 3));
  size_t delivered = h.Objects();
  CHECK(delivered >= 4);  // page 1's three and some of page 2's
  FakeApiTransport::Done(page2, "connection closed mid-body");
  CHECK(h.handler.errors.size() == 1);
  h.timers.AdvanceMs(h.reflector->retry_delay_ms());
  Request& again = h.transport.Active();
  CHECK(again.Param("continue") == page2.Param("continue"));  // the same page
  FakeApiTransport::Respond(again, 200, body);
  CHECK(h.Objects() == 6);  // page 2's first objects were not delivered again
  FakeApiTransport::Respond(h.transport.Active(), 200, ReadCapture("01-list-services-p3"));
  FakeApiTransport::Respond(h.transport.Active(), 200, ReadCapture("01-list-services-p4"));
  CHECK(h.Objects() == 12);
  CHECK(h.handler.calls.front() == "BEGIN");
  CHECK(std::count(h.handler.calls.begin(), h.handler.calls.end(), "BEGIN") == 1);
  CHECK(h.handler.calls.back() == "END 107");
}

TEST_CASE("a LIST body that is not JSON restarts the LIST from page 1", "[reflector]") {
  StreamHarness h;
  h.reflector->Start();
  FakeApiTransport::Respond(h.transport.Active(), 200, ReadCapture("01-list-services-p1"));
  Request& page2 = h.transport.Active();
  const std::string body = ReadCapture("01-list-services-p2");
  FakeApiTransport::Head(page2, 200);
  SECTION("a malformed item: what came before stays delivered, the LIST starts over") {
    std::string broken = body;
    broken.insert(broken.find("\"spec\""), "{");
    FakeApiTransport::Body(page2, broken);
    CHECK(page2.cancelled);
  }
  SECTION("a body that ends mid-item") {
    FakeApiTransport::Body(page2, body.substr(0, body.size() / 2));
    FakeApiTransport::Done(page2);
  }
  REQUIRE(h.handler.errors.size() == 1);
  CHECK(h.handler.errors[0].find("k8s services: list: List: ") == 0);
  CHECK(h.reflector->stats().errors.at("decode") == 1);
  CHECK(h.reflector->state() == Reflector::State::kWaiting);
  h.timers.AdvanceMs(h.reflector->retry_delay_ms());
  Request& restart = h.transport.Active();
  CHECK(restart.Param("continue").empty());
  FakeApiTransport::Respond(restart, 200, ReadCapture("07-list-services-rv0"));
  CHECK(std::count(h.handler.calls.begin(), h.handler.calls.end(), "BEGIN") == 2);
  CHECK(h.handler.calls.back() == "END 117");
}

TEST_CASE("the first LIST comes from the watch cache, re-LISTs at the last RV, etcd after a 410",
          "[reflector]") {
  StreamHarness h;
  h.reflector->Start();
  Request& first = h.transport.Active();
  CHECK(first.Param("resourceVersion") == "0");
  CHECK(first.Param("resourceVersionMatch").empty());
  // The watch cache ignores limit: the whole resource in one body, no continue.
  FakeApiTransport::Respond(first, 200, ReadCapture("07-list-services-rv0-limit3"));
  CHECK(h.Objects() == 12);
  Request& watch = h.transport.Active();
  REQUIRE(watch.IsWatch());
  CHECK(watch.Param("resourceVersion") == "117");
  FakeApiTransport::Head(watch, 200);
  FakeApiTransport::Body(
      watch,
      R"({"type":"BOOKMARK","object":{"kind":"Service","apiVersion":"v1","metadata":{"resourceVersion":"130"}}})"
      "\n");
  FakeApiTransport::Done(watch);  // a clean end: watch again from the bookmark
  Request& rewatch = h.transport.Active();
  CHECK(rewatch.Param("resourceVersion") == "130");
  FakeApiTransport::Respond(rewatch, 410, ReadCapture("05a-list-continue-expired"));

  // At least what was seen (the bookmark's 130), from the cache: no limit, since this server
  // did not page.
  Request& relist = h.transport.Active();
  CHECK(relist.path == "/api/v1/services?resourceVersion=130&resourceVersionMatch=NotOlderThan");
  CHECK(h.reflector->stats().cache_lists == 2);

  SECTION("the cache cannot serve it: a consistent LIST from etcd, paged") {
    FakeApiTransport::Respond(relist, 504, ReadCapture("06-list-rv-too-large"));
    h.timers.AdvanceMs(h.reflector->retry_delay_ms());  // a second failure in a row backs off
    Request& consistent = h.transport.Active();
    CHECK(consistent.path == "/api/v1/services?limit=500");
    CHECK(h.reflector->stats().cache_lists == 2);
    for (int page = 1; page <= 4; ++page) {
      FakeApiTransport::Respond(h.transport.Active(), 200,
                                ReadCapture("01-list-services-p" + std::to_string(page)));
    }
    CHECK(h.handler.calls.back() == "END 107");
  }
  SECTION("served: the watch resumes from the new list's RV") {
    FakeApiTransport::Respond(relist, 200, ReadCapture("07-list-services-notolderthan"));
    CHECK(h.handler.calls.back() == "END 117");
    CHECK(h.transport.Active().IsWatch());
  }
}

TEST_CASE("re-LISTs after 410 wait a random time within the jitter bound; the first does not",
          "[reflector]") {
  double draw = 0;
  ReflectorOptions options = Harness::Services();
  options.relist_jitter_ms = 10'000;
  options.random = [&] { return draw; };
  for (double value : {0.0, 0.25, 0.999, 1.0}) {
    INFO("draw " << value);
    draw = value;
    StreamHarness h(options);
    h.reflector->Start();
    REQUIRE(h.transport.ActiveCount() == 1);  // the first LIST at once
    FakeApiTransport::Respond(h.transport.Active(), 200, ReadCapture("07-list-services-rv0"));
    Request& watch = h.transport.Active();
    FakeApiTransport::Respond(watch, 410, ReadCapture("05a-list-continue-expired"));
    const auto expected = static_cast<uint64_t>(value * 10'000);
    CHECK(h.reflector->retry_delay_ms() == expected);
    CHECK(h.reflector->retry_delay_ms() <= options.relist_jitter_ms);
    if (expected > 0) {
      CHECK(h.transport.ActiveCount() == 0);
      h.timers.AdvanceMs(expected - 1);
      CHECK(h.transport.ActiveCount() == 0);
      h.timers.AdvanceMs(1);
    }
    CHECK_FALSE(h.transport.Active().IsWatch());
  }
}

TEST_CASE("a watch-list streams the list as ADDED events up to its end bookmark, then watches",
          "[reflector]") {
  ReflectorOptions options = Harness::Services();
  options.watch_list = true;
  StreamHarness h(options);
  h.reflector->Start();
  Request& request = h.transport.Active();
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

TEST_CASE("a LIST is cut when it sends nothing for list_timeout_ms, however long it takes",
          "[reflector]") {
  StreamHarness h;
  h.reflector->Start();
  Request& list = h.transport.Active();
  CHECK(list.timeout_ms == 0);  // a whole-cluster body may take minutes
  const std::string body = ReadCapture("07-list-services-rv0");
  FakeApiTransport::Head(list, 200);
  for (int i = 0; i < 5; ++i) {  // 5 minutes of a slow body, a byte every 50 s
    h.timers.AdvanceMs(50'000);
    FakeApiTransport::Body(list, body.substr(i, 1));
  }
  CHECK(list.active());
  h.timers.AdvanceMs(60'000);  // then silence
  CHECK(list.cancelled);
  REQUIRE(h.handler.errors.size() == 1);
  CHECK(h.handler.errors[0] == "k8s services: list: no data for 60000 ms");
  h.timers.AdvanceMs(h.reflector->retry_delay_ms());
  FakeApiTransport::Respond(h.transport.Active(), 200, body);
  CHECK(h.handler.calls.back() == "END 117");
  CHECK(std::count(h.handler.calls.begin(), h.handler.calls.end(), "BEGIN") == 2);
}

}  // namespace
}  // namespace kdns::k8s
