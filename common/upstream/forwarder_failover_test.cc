// Tests of the Forwarder's failover and upstream health: timeouts, error rcodes and closed ports
// fail over to the next upstream, late answers still win, a server known down is skipped until a
// probe brings it back, and the strict-order and all-at-once policies.

#include <catch2/catch.hpp>
#include <memory>
#include <optional>

#include "common/limits/limits.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_testing.h"
#include "common/upstream/testing.h"

namespace kdns::upstream::testing {
namespace {

TEST_CASE_METHOD(LoopFixture, "A timeout fails over to the next upstream", "[upstream]") {
  FakeUpstream a(loop, 1), b(loop, 2);
  a.set_behaviour(Behaviour::kSilent);
  Forwarder forwarder(loop, TestOptions());
  Result result = ResolveAndWait(loop, forwarder, Req("www.example."), {a.address(), b.address()});
  CHECK(AnswerAddress(result) == "192.0.2.2");
  CHECK(result.upstream == b.address());
  CHECK(result.tries == 2);
  CHECK(a.queries().size() == 1);
  CHECK(forwarder.counters().timeouts == 1);
  CHECK(forwarder.counters().failovers == 1);
  CHECK(forwarder.table().Get(a.address()).failed.Value() == 1);
  CHECK(UpstreamTable::ServersBindText(forwarder.table().Get(a.address())) ==
        FormatUpstreamAddress(a.address()) + " 1 1");
}

TEST_CASE_METHOD(LoopFixture, "SERVFAIL and REFUSED fail over to the next upstream", "[upstream]") {
  FakeUpstream a(loop, 1), b(loop, 2);
  a.set_behaviour(GENERATE(Behaviour::kServFail, Behaviour::kRefused));
  Forwarder forwarder(loop, TestOptions());
  Result result = ResolveAndWait(loop, forwarder, Req("www.example."), {a.address(), b.address()});
  CHECK(AnswerAddress(result) == "192.0.2.2");
  CHECK(forwarder.counters().timeouts == 0);
  // An upstream that answers, even SERVFAIL, is not failed.
  CHECK_FALSE(forwarder.health(a.address())->failed());
}

TEST_CASE_METHOD(LoopFixture, "Replies are counted by rcode only when the table counts them",
                 "[upstream]") {
  FakeUpstream a(loop, 1), b(loop, 2);
  a.set_behaviour(Behaviour::kServFail);
  auto table = std::make_shared<UpstreamTable>();
  const bool counting = GENERATE(true, false);
  if (counting) table->CountReplies();
  Forwarder forwarder(loop, TestOptions(), table);
  Result result = ResolveAndWait(loop, forwarder, Req("www.example."), {a.address(), b.address()});
  CHECK(AnswerAddress(result) == "192.0.2.2");
  const UpstreamTable::Entry& first = table->Get(a.address());
  const UpstreamTable::Entry& second = table->Get(b.address());
  if (!counting) {
    CHECK(first.replies == nullptr);
    return;
  }
  REQUIRE(first.replies != nullptr);
  const size_t servfail = UpstreamTable::ReplyRcodeIndex(dns::Rcode::kServFail);
  const size_t noerror = UpstreamTable::ReplyRcodeIndex(dns::Rcode::kNoError);
  CHECK((*first.replies)[servfail].Value() == 1);
  CHECK((*first.replies)[noerror].Value() == 0);
  CHECK((*second.replies)[noerror].Value() == 1);
  CHECK(UpstreamTable::ReplyRcodeName(servfail) == "SERVFAIL");
  CHECK(UpstreamTable::ReplyRcodeName(UpstreamTable::ReplyRcodeIndex(dns::Rcode::kNotImp)) ==
        "other");
}

TEST_CASE_METHOD(LoopFixture, "When every upstream fails the result is SERVFAIL with the reason",
                 "[upstream]") {
  FakeUpstream a(loop, 1), b(loop, 2);
  Forwarder forwarder(loop, TestOptions());
  SECTION("error replies") {
    a.set_behaviour(Behaviour::kServFail);
    b.set_behaviour(Behaviour::kRefused);
    Result result =
        ResolveAndWait(loop, forwarder, Req("www.example."), {a.address(), b.address()});
    CHECK(result.outcome == ForwardOutcome::kServFail);
    CHECK(result.reason == FailReason::kUpstreamError);
    CHECK(result.message.rcode() == dns::Rcode::kRefused);
    CHECK(result.upstream == b.address());
  }
  SECTION("silence") {
    a.set_behaviour(Behaviour::kSilent);
    b.set_behaviour(Behaviour::kSilent);
    Result result =
        ResolveAndWait(loop, forwarder, Req("www.example."), {a.address(), b.address()});
    CHECK(result.outcome == ForwardOutcome::kServFail);
    CHECK(result.reason == FailReason::kTimeout);
    CHECK(result.tries == 2);
    CHECK(forwarder.counters().servfails == 1);
  }
  SECTION("the time budget ends the query even with tries left") {
    Forwarder::Options options = TestOptions();
    options.max_tries_per_upstream = 100;
    options.total_timeout_ms = 250;
    Forwarder patient(loop, options);
    a.set_behaviour(Behaviour::kSilent);
    Result result = ResolveAndWait(loop, patient, Req("www.example."), {a.address()});
    CHECK(result.outcome == ForwardOutcome::kServFail);
    CHECK(result.reason == FailReason::kTimeout);
    CHECK(result.tries >= 2);
    CHECK(result.tries <= 3);
  }
  SECTION("an empty set") {
    Result result = ResolveAndWait(loop, forwarder, Req("www.example."), UpstreamSet());
    CHECK(result.reason == FailReason::kNoUpstreams);
  }
}

TEST_CASE_METHOD(LoopFixture, "A closed port fails over at once, without waiting for a timeout",
                 "[upstream]") {
  FakeUpstream b(loop, 2);
  loop::SocketAddress dead;
  {
    FakeUpstream gone(loop, 9);
    dead = gone.address();
  }
  Forwarder::Options options = TestOptions();
  options.max_try_timeout_ms = options.min_try_timeout_ms = 1500;
  Forwarder forwarder(loop, options);
  Result result = ResolveAndWait(loop, forwarder, Req("www.example."), {dead, b.address()});
  CHECK(AnswerAddress(result) == "192.0.2.2");
  CHECK(forwarder.counters().timeouts == 0);
  CHECK(forwarder.table().Get(dead).failed.Value() == 1);
}

TEST_CASE_METHOD(LoopFixture, "A late answer to an earlier try still wins", "[upstream]") {
  FakeUpstream a(loop, 1), b(loop, 2);
  a.set_delay_ms(150);
  b.set_behaviour(Behaviour::kSilent);
  Forwarder forwarder(loop, TestOptions());
  Result result = ResolveAndWait(loop, forwarder, Req("www.example."), {a.address(), b.address()});
  CHECK(AnswerAddress(result) == "192.0.2.1");
  CHECK(b.queries().size() == 1);
}

TEST_CASE_METHOD(LoopFixture,
                 "An answer slower than every try's timeout still wins within the budget",
                 "[upstream]") {
  FakeUpstream a(loop, 1);
  a.set_delay_ms(600);  // a recursive resolver on an uncached name
  Forwarder::Options options = TestOptions();
  options.max_tries_per_upstream = 2;
  Forwarder forwarder(loop, options);
  Result result = ResolveAndWait(loop, forwarder, Req("slow.example."), {a.address()});
  CHECK(AnswerAddress(result) == "192.0.2.1");
  CHECK(result.tries == 2);  // both sent at the 100 ms try timeout, then waited
  CHECK(forwarder.counters().timeouts == 2);
}

TEST_CASE_METHOD(LoopFixture,
                 "An upstream known down fails its queries at once until a probe brings it back",
                 "[upstream][budgets]") {
  FakeUpstream a(loop, 1);
  a.set_behaviour(Behaviour::kSilent);
  Forwarder::Options options = FailFastOptions(/*probe_interval_ms=*/50);
  options.total_timeout_ms = 300;
  Forwarder forwarder(loop, options);
  auto client_queries = [&] {
    size_t n = 0;
    for (const auto& query : a.queries()) n += query.message.questions[0].name.IsRoot() ? 0 : 1;
    return n;
  };
  Result first = ResolveAndWait(loop, forwarder, Req("one.example."), {a.address()});
  CHECK(first.reason == FailReason::kTimeout);
  REQUIRE(forwarder.health(a.address())->failed());
  // Failed is not down: only a probe without a reply makes it down.
  REQUIRE(RunUntil(loop, [&] { return forwarder.health(a.address())->down(); }));

  const uint64_t hits_before = limits::LimitHits(limits::Limit::kUpstreamDown);
  bool inside_resolve = true;
  std::optional<Result> fast;
  forwarder.Resolve(Req("two.example."), {a.address()}, [&](const Result& r) {
    CHECK_FALSE(inside_resolve);
    fast = r;
  });
  inside_resolve = false;
  REQUIRE(RunUntil(loop, [&] { return fast.has_value(); }));
  CHECK(fast->outcome == ForwardOutcome::kServFail);
  CHECK(fast->reason == FailReason::kUpstreamDown);
  CHECK(fast->tries == 0);
  CHECK(client_queries() == 1);  // nothing sent
  CHECK(forwarder.counters().upstream_down == 1);
  CHECK(limits::LimitHits(limits::Limit::kUpstreamDown) - hits_before == 1);

  // It comes back: the next probe sees it, and queries go to it again.
  a.set_behaviour(Behaviour::kAnswer);
  REQUIRE(RunUntil(loop, [&] { return !forwarder.health(a.address())->down(); }));
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("three.example."), {a.address()})) ==
        "192.0.2.1");
  CHECK(client_queries() == 2);
}

TEST_CASE_METHOD(LoopFixture,
                 "A server that refuses is never down: it fails queries at once by itself",
                 "[upstream][budgets]") {
  // A port nothing listens on: the kernel answers each datagram with ICMP unreachable.
  loop::SocketAddress closed;
  {
    FakeUpstream gone(loop, 1);
    closed = gone.address();
  }
  Forwarder forwarder(loop, FailFastOptions(/*probe_interval_ms=*/50));
  Result first = ResolveAndWait(loop, forwarder, Req("one.example."), {closed});
  CHECK(first.reason == FailReason::kNetworkError);
  REQUIRE(forwarder.health(closed)->failed());
  // Probes go out and are refused too.
  REQUIRE(RunUntil(loop, [&] { return forwarder.counters().tries >= 4; }));
  CHECK_FALSE(forwarder.health(closed)->down());
  Result again = ResolveAndWait(loop, forwarder, Req("two.example."), {closed});
  CHECK(again.reason == FailReason::kNetworkError);
  CHECK(again.tries == 1);
}

TEST_CASE_METHOD(LoopFixture, "A down server is left out while another server of the route answers",
                 "[upstream][budgets]") {
  FakeUpstream a(loop, 1), b(loop, 2);
  a.set_behaviour(Behaviour::kSilent);
  Forwarder forwarder(loop, FailFastOptions(/*probe_interval_ms=*/50));
  const UpstreamSet set{a.address(), b.address()};
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("one.example."), set)) == "192.0.2.2");
  REQUIRE(RunUntil(loop, [&] { return forwarder.health(a.address())->down(); }));
  const uint64_t hits_before = limits::LimitHits(limits::Limit::kUpstreamDown);
  Result result = ResolveAndWait(loop, forwarder, Req("two.example."), set);
  CHECK(AnswerAddress(result) == "192.0.2.2");
  CHECK(result.tries == 1);
  CHECK(limits::LimitHits(limits::Limit::kUpstreamDown) == hits_before);
}

TEST_CASE_METHOD(LoopFixture, "A failed upstream is skipped until a background probe restores it",
                 "[upstream]") {
  FakeUpstream a(loop, 1), b(loop, 2);
  a.set_behaviour(Behaviour::kSilent);
  Forwarder forwarder(loop, FailFastOptions(/*probe_interval_ms=*/200));
  const UpstreamSet set{a.address(), b.address()};
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("one.example."), set)) == "192.0.2.2");
  CHECK(forwarder.health(a.address())->failed());
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("two.example."), set)) == "192.0.2.2");
  CHECK(a.queries().size() == 1);  // skipped

  a.set_behaviour(Behaviour::kAnswer);
  REQUIRE(RunUntil(loop, [&] { return !forwarder.health(a.address())->failed(); }));
  REQUIRE(a.queries().size() == 2);
  const dns::Message& probe = a.queries()[1].message;
  CHECK(probe.questions[0].name.IsRoot());
  CHECK(probe.questions[0].type == dns::RrType::kNs);
  // Probes are not client queries: servers.bind does not count them.
  CHECK(forwarder.table().Get(a.address()).sent.Value() == 1);
}

TEST_CASE_METHOD(LoopFixture, "Strict order asks the servers as configured, not the fastest first",
                 "[upstream]") {
  FakeUpstream slow(loop, 1);
  FakeUpstream fresh(loop, 2);
  // `slow` gets a measured RTT; `fresh`, never measured, counts as 0 and is the fastest.
  slow.set_delay_ms(20);
  const ServerOrder order = GENERATE(ServerOrder::kFastest, ServerOrder::kConfigured);
  Forwarder::Options options = TestOptions();
  options.max_try_timeout_ms = 1000;
  options.server_order = order;
  Forwarder forwarder(loop, options);
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("a.example."), {slow.address()})) ==
        "192.0.2.1");
  REQUIRE(forwarder.health(slow.address())->SelectionRttMs() > 0);
  Result result =
      ResolveAndWait(loop, forwarder, Req("b.example."), {slow.address(), fresh.address()});
  CHECK(result.upstream == (order == ServerOrder::kConfigured ? slow.address() : fresh.address()));
}

TEST_CASE_METHOD(LoopFixture, "All servers at once: a silent server does not delay the answer",
                 "[upstream]") {
  FakeUpstream silent(loop, 1);
  FakeUpstream answering(loop, 2);
  silent.set_behaviour(Behaviour::kSilent);
  Forwarder::Options options = TestOptions();
  // No try can time out during the test: only sending to both at once answers it.
  options.min_try_timeout_ms = 60'000;
  options.max_try_timeout_ms = 60'000;
  options.total_timeout_ms = 120'000;
  options.server_order = ServerOrder::kConfigured;  // the silent one first
  options.first_try = FirstTry::kAllServers;
  Forwarder forwarder(loop, options);
  Result result =
      ResolveAndWait(loop, forwarder, Req("a.example."), {silent.address(), answering.address()});
  CHECK(AnswerAddress(result) == "192.0.2.2");
  CHECK(silent.queries().size() == 1);
  CHECK(answering.queries().size() == 1);
  CHECK(forwarder.counters().tries == 2);
  CHECK(forwarder.counters().timeouts == 0);
  CHECK(forwarder.counters().failovers == 0);
  CHECK(forwarder.counters().in_flight == 0);
}

}  // namespace
}  // namespace kdns::upstream::testing
