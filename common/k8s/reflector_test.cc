#include "common/k8s/reflector.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/k8s/reflector_testing.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"

namespace kdns::k8s {
namespace {

using testing::FakeApiTransport;
using testing::Harness;
using testing::ReadCapture;
using testing::Recorder;
using testing::StreamHarness;
using Request = testing::FakeApiTransport::Request;

TEST_CASE("a 429 waits as long as Retry-After says, within a bound", "[reflector]") {
  Harness h;
  h.StartAndList();
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
  h.StartAndList();
  CHECK(h.reflector->state() == Reflector::State::kStopped);
  CHECK(h.transport.ActiveCount() == 0);
  CHECK(h.timers.ActiveCount() == 0);
}

TEST_CASE("destroying a reflector cancels its request", "[reflector]") {
  Harness h;
  Request& list = h.Start();
  h.reflector.reset();
  CHECK(list.cancelled);
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "on a real loop, the retry timer fires and every handle closes", "[reflector]") {
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

}  // namespace
}  // namespace kdns::k8s
