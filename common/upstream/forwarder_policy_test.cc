#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_testing.h"
#include "common/upstream/route_options.h"
#include "common/upstream/testing.h"

namespace kdns::upstream::testing {
namespace {

UpstreamSet WithOptions(std::vector<Upstream> upstreams, std::string_view text) {
  RouteOptions options;
  std::string error;
  REQUIRE(ParseRouteOptions(text, &options, &error));
  return UpstreamSet(std::move(upstreams), options);
}

TEST_CASE_METHOD(LoopFixture,
                 "policy=sequential asks the first upstream even when another is faster",
                 "[upstream][route_options]") {
  FakeUpstream first(loop, 1);
  FakeUpstream second(loop, 2);
  first.set_delay_ms(20);  // measured slower; `second`, never measured, counts as fastest
  Forwarder::Options options = TestOptions();
  options.max_try_timeout_ms = 1000;
  Forwarder forwarder(loop, options);
  const UpstreamSet sequential =
      WithOptions({first.address(), second.address()}, "policy=sequential");
  for (int i = 0; i < 4; ++i) {
    const std::string name = "q" + std::to_string(i) + ".example.";
    CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req(name), sequential)) == "192.0.2.1");
  }
  CHECK(second.queries().empty());
  // The program's default order picks the fastest (the never-measured one).
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("d.example."),
                                     {first.address(), second.address()})) == "192.0.2.2");
}

TEST_CASE_METHOD(LoopFixture, "policy=round_robin starts each query at the next upstream",
                 "[upstream][route_options]") {
  FakeUpstream a(loop, 1);
  FakeUpstream b(loop, 2);
  FakeUpstream c(loop, 3);
  Forwarder forwarder(loop, TestOptions());
  const UpstreamSet set =
      WithOptions({a.address(), b.address(), c.address()}, "policy=round_robin");
  std::vector<std::string> order;
  for (int i = 0; i < 6; ++i) {
    const std::string name = "q" + std::to_string(i) + ".example.";
    order.push_back(AnswerAddress(ResolveAndWait(loop, forwarder, Req(name), set)));
  }
  CHECK(order == std::vector<std::string>{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.1",
                                          "192.0.2.2", "192.0.2.3"});
}

TEST_CASE_METHOD(LoopFixture, "policy=random spreads queries over every upstream",
                 "[upstream][route_options]") {
  FakeUpstream a(loop, 1);
  FakeUpstream b(loop, 2);
  a.set_delay_ms(5);  // measured slower: the default order would keep to `b`
  Forwarder forwarder(loop, TestOptions());
  const UpstreamSet set = WithOptions({a.address(), b.address()}, "policy=random");
  std::map<std::string, int> answered_by;
  // All 64 to one of two: a chance of 2^-63.
  for (int i = 0; i < 64; ++i) {
    const std::string name = "q" + std::to_string(i) + ".example.";
    ++answered_by[AnswerAddress(ResolveAndWait(loop, forwarder, Req(name), set))];
  }
  CHECK(answered_by["192.0.2.1"] > 0);
  CHECK(answered_by["192.0.2.2"] > 0);
}

TEST_CASE_METHOD(LoopFixture,
                 "force_tcp asks over TCP only; prefer_udp asks a TCP client's query over UDP",
                 "[upstream][route_options]") {
  FakeUpstream a(loop, 1);
  Forwarder forwarder(loop, TestOptions());
  SECTION("force_tcp") {
    const UpstreamSet set = WithOptions({a.address()}, "force_tcp");
    CHECK(ResolveAndWait(loop, forwarder, Req("a.example."), set).transport ==
          dns::Transport::kTcp);
    CHECK(a.CountQueries(dns::Transport::kUdp) == 0);
    CHECK(a.CountQueries(dns::Transport::kTcp) == 1);
  }
  SECTION("prefer_udp") {
    const UpstreamSet set = WithOptions({a.address()}, "prefer_udp");
    CHECK(ResolveAndWait(loop, forwarder, Req("a.example.", dns::Transport::kTcp), set).transport ==
          dns::Transport::kUdp);
    CHECK(a.CountQueries(dns::Transport::kTcp) == 0);
    // Without it, a TCP client's query goes over TCP.
    CHECK(ResolveAndWait(loop, forwarder, Req("b.example.", dns::Transport::kTcp), {a.address()})
              .transport == dns::Transport::kTcp);
  }
}

TEST_CASE_METHOD(LoopFixture,
                 "max_fails unanswered probes mark an upstream down; a reply brings it back",
                 "[upstream][route_options]") {
  FakeUpstream a(loop, 1);
  a.set_behaviour(Behaviour::kSilent);
  Forwarder::Options options = FailFastOptions(/*probe_interval_ms=*/10'000);
  options.total_timeout_ms = 300;
  Forwarder forwarder(loop, options);
  const UpstreamTable::Entry& entry = forwarder.table().Get(a.address());
  const UpstreamSet set = WithOptions({a.address()}, "max_fails=3,health_check=20ms");
  CHECK(ResolveAndWait(loop, forwarder, Req("one.example."), set).reason == FailReason::kTimeout);
  REQUIRE(forwarder.health(a.address())->failed());
  // Probes every 20 ms (not the forwarder's 10 s); down only after the third unanswered one.
  REQUIRE(RunUntil(loop, [&] { return entry.health_check_failures.Value() >= 1; }));
  CHECK_FALSE(forwarder.health(a.address())->down());
  REQUIRE(RunUntil(loop, [&] { return forwarder.health(a.address())->down(); }));
  CHECK(entry.health_check_failures.Value() >= 3);
  CHECK(entry.marked_down.Value() == 1);
  CHECK(ResolveAndWait(loop, forwarder, Req("two.example."), set).reason ==
        FailReason::kUpstreamDown);

  a.set_behaviour(Behaviour::kAnswer);
  REQUIRE(RunUntil(loop, [&] { return !forwarder.health(a.address())->down(); }));
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("three.example."), set)) == "192.0.2.1");
}

TEST_CASE_METHOD(LoopFixture, "max_fails=0 never marks an upstream down nor probes it",
                 "[upstream][route_options]") {
  FakeUpstream a(loop, 1);
  FakeUpstream b(loop, 2);  // the same failure, under the default max_fails: the yardstick
  a.set_behaviour(Behaviour::kSilent);
  b.set_behaviour(Behaviour::kSilent);
  Forwarder::Options options = FailFastOptions(/*probe_interval_ms=*/20);
  options.total_timeout_ms = 300;
  Forwarder forwarder(loop, options);
  const UpstreamTable::Entry& entry_a = forwarder.table().Get(a.address());
  const UpstreamTable::Entry& entry_b = forwarder.table().Get(b.address());
  const UpstreamSet set_a = WithOptions({a.address()}, "max_fails=0");
  const UpstreamSet set_b = WithOptions({b.address()}, "max_fails=1");
  CHECK(ResolveAndWait(loop, forwarder, Req("one.example."), set_a).reason == FailReason::kTimeout);
  CHECK(ResolveAndWait(loop, forwarder, Req("one.example."), set_b).reason == FailReason::kTimeout);
  REQUIRE(forwarder.health(a.address())->failed());
  // b is probed three times over; a, failed as long, not once (CoreDNS: "nor health checked").
  const size_t a_queries = a.queries().size();
  REQUIRE(RunUntil(loop, [&] { return entry_b.health_check_failures.Value() >= 3; }));
  CHECK(entry_a.health_check_failures.Value() == 0);
  CHECK(a.queries().size() == a_queries);
  CHECK_FALSE(forwarder.health(a.address())->down());
  CHECK(entry_a.marked_down.Value() == 0);
  // Still asked (and still silent): a timeout, not an at-once kUpstreamDown.
  CHECK(ResolveAndWait(loop, forwarder, Req("two.example."), set_a).reason == FailReason::kTimeout);
  // The first reply to a client query makes it healthy again.
  a.set_behaviour(Behaviour::kAnswer);
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("three.example."), set_a)) ==
        "192.0.2.1");
  CHECK_FALSE(forwarder.health(a.address())->failed());
}

TEST_CASE_METHOD(LoopFixture, "A route without max_fails puts the default back on its upstreams",
                 "[upstream][route_options]") {
  FakeUpstream a(loop, 1);
  Forwarder forwarder(loop, TestOptions());
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("a.example."),
                                     WithOptions({a.address()}, "max_fails=0"))) == "192.0.2.1");
  CHECK(forwarder.health(a.address())->max_fails() == 0);
  // The reloaded route (the same upstream) without the option.
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("b.example."), {a.address()})) ==
        "192.0.2.1");
  CHECK(forwarder.health(a.address())->max_fails() == 1);
}

}  // namespace
}  // namespace kdns::upstream::testing
