// RateLimitedTransport on simulated time: the burst goes at once, then one request per
// 1/qps, in order of arrival; waiting requests are counted, cancelled without a callback, and
// a finished request's id cancels nothing.
#include "common/k8s/rate_limiter.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/k8s/reflector_testing.h"

namespace kdns::k8s {
namespace {

using testing::FakeApiTransport;
using testing::FakeTimers;

RateLimitedTransport::Options Options(double qps, uint32_t burst) {
  RateLimitedTransport::Options options;
  options.qps = qps;
  options.burst = burst;
  return options;
}

struct Harness {
  explicit Harness(RateLimitedTransport::Options options) {
    options.on_delayed = [this] { ++delayed_calls; };
    limiter = std::make_unique<RateLimitedTransport>(inner, timers, clock, options);
  }
  ApiTransport::RequestId Get(const std::string& path) {
    ApiTransport::Callbacks callbacks;
    callbacks.on_head = [](const ApiResponseHead&) {};
    callbacks.on_body = [](std::string_view) {};
    callbacks.on_done = [this, path](const ApiResult&) { done.push_back(path); };
    return limiter->Get(path, std::move(callbacks), 1000);
  }
  std::vector<std::string> Sent() const {
    std::vector<std::string> paths;
    for (const auto& request : inner.requests()) paths.push_back(request->path);
    return paths;
  }

  ManualClock clock{1'000'000};
  FakeTimers timers{clock};
  FakeApiTransport inner;
  int delayed_calls = 0;
  std::vector<std::string> done;
  std::unique_ptr<RateLimitedTransport> limiter;
};

TEST_CASE("the rate limiter lets a burst through, then qps per second, in order",
          "[k8s][rate_limiter]") {
  Harness h(Options(4, 2));
  for (int i = 0; i < 5; ++i) h.Get("/r" + std::to_string(i));
  CHECK(h.Sent() == std::vector<std::string>{"/r0", "/r1"});
  CHECK(h.limiter->delayed() == 3);
  CHECK(h.delayed_calls == 3);
  CHECK(h.limiter->waiting() == 3);
  h.timers.AdvanceMs(249);
  CHECK(h.Sent().size() == 2);
  h.timers.AdvanceMs(1);  // a token every 250 ms
  CHECK(h.Sent().back() == "/r2");
  h.timers.AdvanceMs(500);
  CHECK(h.Sent() == std::vector<std::string>{"/r0", "/r1", "/r2", "/r3", "/r4"});
  CHECK(h.limiter->waiting() == 0);
  CHECK(h.timers.ActiveCount() == 0);

  // Idle time refills up to the burst, never beyond.
  h.timers.AdvanceMs(60'000);
  for (int i = 5; i < 8; ++i) h.Get("/r" + std::to_string(i));
  CHECK(h.Sent().size() == 7);
  CHECK(h.limiter->delayed() == 4);
}

TEST_CASE("a new request never overtakes a waiting one", "[k8s][rate_limiter]") {
  Harness h(Options(10, 1));
  h.Get("/a");
  h.Get("/b");                           // waits
  h.clock.SetMs(h.clock.NowMs() + 100);  // a token is due, but the timer has not run yet
  h.Get("/c");
  CHECK(h.Sent() == std::vector<std::string>{"/a"});
  h.timers.AdvanceMs(0);
  h.timers.AdvanceMs(100);
  CHECK(h.Sent() == std::vector<std::string>{"/a", "/b", "/c"});
}

TEST_CASE("cancelling a waiting request drops it; a sent one is cancelled inside",
          "[k8s][rate_limiter]") {
  Harness h(Options(1, 1));
  ApiTransport::RequestId first = h.Get("/first");
  ApiTransport::RequestId second = h.Get("/second");
  h.limiter->Cancel(second);
  CHECK(h.limiter->waiting() == 0);
  CHECK(h.timers.ActiveCount() == 0);
  h.timers.AdvanceMs(5'000);
  CHECK(h.Sent() == std::vector<std::string>{"/first"});
  h.limiter->Cancel(first);
  CHECK(h.inner.requests()[0]->cancelled);
  CHECK(h.done.empty());

  // A finished request: its callbacks ran through, and its id is forgotten.
  ApiTransport::RequestId third = h.Get("/third");
  FakeApiTransport::Respond(*h.inner.requests()[1], 200, "{}");
  CHECK(h.done == std::vector<std::string>{"/third"});
  h.limiter->Cancel(third);  // ignored
}

TEST_CASE("qps 0 turns the limit off", "[k8s][rate_limiter]") {
  Harness h(Options(0, 1));
  for (int i = 0; i < 100; ++i) h.Get("/x");
  CHECK(h.Sent().size() == 100);
  CHECK(h.limiter->delayed() == 0);
}

}  // namespace
}  // namespace kdns::k8s
