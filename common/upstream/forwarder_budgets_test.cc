// Tests of what bounds the Forwarder's queries in flight: identical queries coalesced, and the
// ForwardBudgets (process, route, upstream, per-client share) filled and given back as the
// Forwarder uses them (forward_budgets_test.cc tests the budgets alone).

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/limits/limits.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_testing.h"
#include "common/upstream/testing.h"

namespace kdns::upstream::testing {
namespace {

TEST_CASE_METHOD(LoopFixture, "Identical queries in flight share one upstream query",
                 "[upstream]") {
  FakeUpstream a(loop, 1);
  a.set_delay_ms(30);
  Forwarder forwarder(loop, TestOptions());
  std::vector<Result> results;
  for (int i = 0; i < 10; ++i) {
    // Case differs, the query is the same.
    forwarder.Resolve(Req(i % 2 == 0 ? "www.example." : "WWW.EXAMPLE."), {a.address()},
                      [&](const Result& r) { results.push_back(r); });
  }
  // A different type, DO bit or upstream set is another query.
  Request aaaa = Req("www.example.");
  aaaa.qtype = dns::RrType::kAaaa;
  Request with_do = Req("www.example.");
  with_do.dnssec_ok = true;
  int others = 0;
  forwarder.Resolve(aaaa, {a.address()}, [&](const Result&) { ++others; });
  forwarder.Resolve(with_do, {a.address()}, [&](const Result&) { ++others; });
  CHECK(forwarder.in_flight() == 3);
  REQUIRE(RunUntil(loop, [&] { return results.size() == 10 && others == 2; }));
  CHECK(a.queries().size() == 3);
  for (const Result& r : results) CHECK(AnswerAddress(r) == "192.0.2.1");
  CHECK(forwarder.counters().coalesced == 9);
  CHECK(forwarder.counters().requests == 12);
}

TEST_CASE_METHOD(LoopFixture,
                 "Beyond the process ceiling queries are refused at once, never inside Resolve",
                 "[upstream]") {
  FakeUpstream a(loop, 1);
  a.set_delay_ms(50);
  Forwarder::Options options = TestOptions();
  options.budgets = Budgets(/*process=*/2, /*route=*/2, /*upstream=*/2);
  Forwarder forwarder(loop, options);
  std::vector<ForwardOutcome> outcomes;
  bool inside_resolve = false;
  for (const char* name : {"a.example.", "b.example.", "c.example."}) {
    inside_resolve = true;
    forwarder.Resolve(Req(name), {a.address()}, [&](const Result& r) {
      CHECK_FALSE(inside_resolve);
      outcomes.push_back(r.outcome);
    });
    inside_resolve = false;
  }
  CHECK(outcomes.empty());
  REQUIRE(RunUntil(loop, [&] { return outcomes.size() == 1; }));
  CHECK(outcomes[0] == ForwardOutcome::kOverloaded);  // long before the 50 ms answers
  // Joining a query in flight costs no upstream query, so it is not refused.
  forwarder.Resolve(Req("a.example."), {a.address()},
                    [&](const Result& r) { outcomes.push_back(r.outcome); });
  REQUIRE(RunUntil(loop, [&] { return outcomes.size() == 4; }));
  CHECK(outcomes[1] == ForwardOutcome::kAnswer);
  CHECK(forwarder.counters().overloaded == 1);
  CHECK(a.queries().size() == 2);
}

TEST_CASE_METHOD(LoopFixture, "Forwarders sharing budgets share them, as threads of one process do",
                 "[upstream]") {
  FakeUpstream a(loop, 1);
  a.set_behaviour(Behaviour::kSilent);
  Forwarder::Options options = TestOptions();
  // The ceiling binds before the route's and the upstream's budgets.
  options.budgets = Budgets(/*process=*/2, /*route=*/10, /*upstream=*/10);
  options.total_timeout_ms = 300;
  Forwarder first(loop, options);
  Forwarder second(loop, options);
  std::vector<Result> results;
  auto keep = [&](const Result& r) { results.push_back(r); };
  const uint64_t hits_before = limits::LimitHits(limits::Limit::kForwardInFlight);
  first.Resolve(Req("a.example."), {a.address()}, keep);
  second.Resolve(Req("b.example."), {a.address()}, keep);
  second.Resolve(Req("c.example."), {a.address()}, keep);  // the third overall: refused
  REQUIRE(RunUntil(loop, [&] { return results.size() == 3; }));
  CHECK(results[0].outcome == ForwardOutcome::kOverloaded);
  CHECK(results[0].reason == FailReason::kForwardMax);
  CHECK(limits::LimitHits(limits::Limit::kForwardInFlight) - hits_before == 1);
  CHECK(second.counters().overloaded == 1);
  // Every finished query gave its slots back.
  CHECK(options.budgets->process().in_flight() == 0);
  CHECK(options.budgets->Route({a.address()}).in_flight() == 0);
  CHECK(options.budgets->Upstream(a.address()).in_flight() == 0);
}

TEST_CASE_METHOD(LoopFixture,
                 "A black-holed route fills only its own budget; other routes are answered",
                 "[upstream][budgets]") {
  FakeUpstream dead(loop, 1), healthy(loop, 2);
  dead.set_behaviour(Behaviour::kSilent);
  Forwarder::Options options = TestOptions();
  options.budgets = Budgets(/*process=*/100, /*route=*/3, /*upstream=*/100);
  Forwarder forwarder(loop, options);
  const uint64_t hits_before = limits::LimitHits(limits::Limit::kRouteInFlight);
  std::vector<Result> flood;
  ResolveMany(forwarder, "flood", 10, {dead.address()}, &flood);
  // Over the route's budget: refused at once, while its 3 queries wait for the silence.
  REQUIRE(RunUntil(loop, [&] { return flood.size() == 7; }));
  CHECK(Count(flood, ForwardOutcome::kOverloaded, FailReason::kRouteBudget) == 7);
  CHECK(limits::LimitHits(limits::Limit::kRouteInFlight) - hits_before == 7);
  CHECK(options.budgets->Route({dead.address()}).in_flight() == 3);
  // Another route (its own server set) still has its whole budget.
  for (int i = 0; i < 5; ++i) {
    Result result = ResolveAndWait(loop, forwarder, Req("ok" + std::to_string(i) + ".example."),
                                   {healthy.address()});
    CHECK(AnswerAddress(result) == "192.0.2.2");
  }
  REQUIRE(RunUntil(loop, [&] { return flood.size() == 10; }));  // the time budget ends
  CHECK(Count(flood, ForwardOutcome::kServFail, FailReason::kTimeout) == 3);
  CHECK(options.budgets->Route({dead.address()}).in_flight() == 0);
  CHECK(options.budgets->process().in_flight() == 0);
  CHECK(forwarder.counters().overloaded == 7);
}

TEST_CASE_METHOD(LoopFixture,
                 "A dead upstream fills only its own budget; its routes' other servers answer",
                 "[upstream][budgets]") {
  FakeUpstream dead(loop, 1), healthy(loop, 2);
  dead.set_behaviour(Behaviour::kSilent);
  Forwarder::Options options = TestOptions();
  options.failure_threshold = 100;  // keep the dead one first in the order
  options.budgets = Budgets(/*process=*/100, /*route=*/100, /*upstream=*/2);
  Forwarder forwarder(loop, options);
  const uint64_t hits_before = limits::LimitHits(limits::Limit::kUpstreamInFlight);
  std::vector<Result> stuck;
  ResolveMany(forwarder, "stuck", 2, {dead.address()}, &stuck);
  REQUIRE(RunUntil(loop, [&] { return dead.queries().size() == 2; }));
  CHECK(options.budgets->Upstream(dead.address()).in_flight() == 2);
  // A route served by the dead server alone: refused at once.
  Result refused = ResolveAndWait(loop, forwarder, Req("more.example."), {dead.address()});
  CHECK(refused.outcome == ForwardOutcome::kOverloaded);
  CHECK(refused.reason == FailReason::kUpstreamBudget);
  // A route with another server: the dead one is skipped, the other answers at once.
  const UpstreamSet both{dead.address(), healthy.address()};
  Result answered = ResolveAndWait(loop, forwarder, Req("both.example."), both);
  CHECK(AnswerAddress(answered) == "192.0.2.2");
  CHECK(answered.tries == 1);
  CHECK(dead.queries().size() == 2);
  CHECK(limits::LimitHits(limits::Limit::kUpstreamInFlight) - hits_before == 2);
  REQUIRE(RunUntil(loop, [&] { return stuck.size() == 2; }));
  CHECK(options.budgets->Upstream(dead.address()).in_flight() == 0);
  CHECK(options.budgets->Upstream(healthy.address()).in_flight() == 0);
}

TEST_CASE_METHOD(
    LoopFixture,
    "A client flooding a slow domain cannot fill its route: others' names are answered",
    "[upstream][budgets][client_share]") {
  FakeUpstream upstream(loop, 1);
  upstream.set_behaviour(Behaviour::kSilentUnderSlow);
  Forwarder::Options options = TestOptions();
  // A route of 20 slots keeps its last 2 for clients holding less than the average.
  options.budgets = Budgets(/*process=*/100, /*route=*/20, /*upstream=*/100);
  Forwarder forwarder(loop, options);
  const UpstreamSet route{upstream.address()};
  const uint64_t hits_before = limits::LimitHits(limits::Limit::kRouteClientShare);
  std::vector<Result> flood;
  for (int i = 0; i < 40; ++i) {
    forwarder.Resolve(ReqFrom("f" + std::to_string(i) + ".slow.example.", "127.0.0.2"), route,
                      [&](const Result& r) { flood.push_back(r); });
  }
  REQUIRE(RunUntil(loop, [&] { return flood.size() == 22; }));
  CHECK(Count(flood, ForwardOutcome::kOverloaded, FailReason::kRouteBudget) == 22);
  CHECK(limits::LimitHits(limits::Limit::kRouteClientShare) - hits_before == 22);
  InFlightBudget& budget = options.budgets->Route(route);
  CHECK(budget.in_flight() == 18);
  CHECK(budget.HeldBy(ClientTagOf(Client("127.0.0.2"))) == 18);
  // The victim's misses on the same route find the reserve.
  for (int i = 0; i < 10; ++i) {
    Result result = ResolveAndWait(
        loop, forwarder, ReqFrom("v" + std::to_string(i) + ".example.", "127.0.0.1"), route);
    CHECK(AnswerAddress(result) == "192.0.2.1");
  }
  // Our own queries (no client) are not held to a share.
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("own.example."), route)) == "192.0.2.1");
  REQUIRE(RunUntil(loop, [&] { return flood.size() == 40; }));  // the time budget ends
  CHECK(Count(flood, ForwardOutcome::kServFail, FailReason::kTimeout) == 18);
  CHECK(budget.in_flight() == 0);
  CHECK(budget.HeldBy(ClientTagOf(Client("127.0.0.2"))) == 0);
}

TEST_CASE_METHOD(LoopFixture,
                 "A client flooding a slow domain cannot fill an upstream's budget either",
                 "[upstream][budgets][client_share]") {
  FakeUpstream upstream(loop, 1);
  upstream.set_behaviour(Behaviour::kSilentUnderSlow);
  Forwarder::Options options = TestOptions();
  options.budgets = Budgets(/*process=*/100, /*route=*/100, /*upstream=*/10);
  Forwarder forwarder(loop, options);
  const UpstreamSet route{upstream.address()};
  const uint64_t hits_before = limits::LimitHits(limits::Limit::kUpstreamClientShare);
  std::vector<Result> flood;
  for (int i = 0; i < 15; ++i) {
    forwarder.Resolve(ReqFrom("f" + std::to_string(i) + ".slow.example.", "127.0.0.2"), route,
                      [&](const Result& r) { flood.push_back(r); });
  }
  // Every server of the route refused the client its share: overloaded, as over the budget.
  REQUIRE(RunUntil(loop, [&] { return flood.size() == 6; }));
  CHECK(Count(flood, ForwardOutcome::kOverloaded, FailReason::kUpstreamBudget) == 6);
  CHECK(limits::LimitHits(limits::Limit::kUpstreamClientShare) - hits_before == 6);
  CHECK(options.budgets->Upstream(upstream.address()).in_flight() == 9);
  Result result = ResolveAndWait(loop, forwarder, ReqFrom("v.example.", "127.0.0.1"), route);
  CHECK(AnswerAddress(result) == "192.0.2.1");
}

TEST_CASE_METHOD(LoopFixture, "Every way a query ends gives its budget slots back",
                 "[upstream][budgets]") {
  FakeUpstream a(loop, 1), b(loop, 2);
  Forwarder::Options options = TestOptions();
  options.total_timeout_ms = 300;
  options.budgets = Budgets(/*process=*/50, /*route=*/50, /*upstream=*/50);
  auto forwarder = std::make_unique<Forwarder>(loop, options);
  const UpstreamSet set{a.address(), b.address()};
  auto all_free = [&] {
    return options.budgets->process().in_flight() == 0 &&
           options.budgets->Route(set).in_flight() == 0 &&
           options.budgets->Route({a.address()}).in_flight() == 0 &&
           options.budgets->Upstream(a.address()).in_flight() == 0 &&
           options.budgets->Upstream(b.address()).in_flight() == 0;
  };
  std::vector<Result> results;
  SECTION("answer, and coalesced waiters") {
    for (int i = 0; i < 5; ++i) {
      forwarder->Resolve(Req("same.example."), set, [&](const Result& r) { results.push_back(r); });
    }
    CHECK(options.budgets->process().in_flight() == 1);  // waiters take no slot
    REQUIRE(RunUntil(loop, [&] { return results.size() == 5; }));
    CHECK(forwarder->counters().coalesced == 4);
  }
  SECTION("failover after a timeout, answered by the second server") {
    a.set_behaviour(Behaviour::kSilent);
    CHECK(AnswerAddress(ResolveAndWait(loop, *forwarder, Req("x.example."), set)) == "192.0.2.2");
  }
  SECTION("time budget spent") {
    a.set_behaviour(Behaviour::kSilent);
    b.set_behaviour(Behaviour::kSilent);
    CHECK(ResolveAndWait(loop, *forwarder, Req("x.example."), set).reason == FailReason::kTimeout);
  }
  SECTION("every server replied with an error") {
    a.set_behaviour(Behaviour::kServFail);
    b.set_behaviour(Behaviour::kRefused);
    CHECK(ResolveAndWait(loop, *forwarder, Req("x.example."), set).reason ==
          FailReason::kUpstreamError);
  }
  SECTION("CancelAll") {
    a.set_behaviour(Behaviour::kSilent);
    b.set_behaviour(Behaviour::kSilent);
    ResolveMany(*forwarder, "c", 3, set, &results);
    forwarder->Resolve(Req("t.example.", dns::Transport::kTcp), set,
                       [&](const Result& r) { results.push_back(r); });
    REQUIRE(RunUntil(loop, [&] { return a.queries().size() == 4; }));
    CHECK_FALSE(all_free());
    forwarder->CancelAll();
    CHECK(Count(results, ForwardOutcome::kServFail, FailReason::kShutdown) == 4);
  }
  SECTION("the Forwarder destroyed with queries in flight") {
    a.set_behaviour(Behaviour::kSilent);
    ResolveMany(*forwarder, "d", 3, {a.address()}, &results);
    REQUIRE(RunUntil(loop, [&] { return a.queries().size() == 3; }));
    CHECK_FALSE(all_free());
    forwarder.reset();
    CHECK(results.empty());
  }
  CHECK(all_free());
}

}  // namespace
}  // namespace kdns::upstream::testing
