#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/k8s/reflector.h"
#include "common/k8s/reflector_testing.h"

namespace kdns::k8s {
namespace {

using testing::FakeApiTransport;
using testing::Harness;
using testing::Key;
using testing::ReadCapture;
using testing::StreamHarness;
using Request = testing::FakeApiTransport::Request;

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

TEST_CASE("a 410 on a continue token restarts the LIST from page 1", "[reflector]") {
  Harness h;
  Request& page2 = h.StartAtSecondPage();
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

TEST_CASE("a LIST is delivered object by object as its bytes arrive", "[reflector]") {
  ReflectorOptions options = Harness::Services();
  options.path = "/apis/discovery.k8s.io/v1/endpointslices";
  options.kind = Kind::kEndpointSlice;
  StreamHarness h(options);
  Request& list = h.Start();
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
  Request& page2 = h.StartAtSecondPage();
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
  Request& page2 = h.StartAtSecondPage();
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
  Request& first = h.Start();
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

TEST_CASE("a LIST is cut when it sends nothing for list_timeout_ms, however long it takes",
          "[reflector]") {
  StreamHarness h;
  Request& list = h.Start();
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
