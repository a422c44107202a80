#include "common/upstream/forwarder.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/dns/testing.h"
#include "common/limits/limits.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/loop/socket_util.h"
#include "common/upstream/testing.h"
#include "test/unit/allocation_counter.h"

namespace kdns::upstream {
namespace {

using dns::testing::N;
using loop::testing::RequireClosesClean;
using loop::testing::RunUntil;
using testing::Behaviour;
using testing::FakeUpstream;

Forwarder::Options TestOptions() {
  Forwarder::Options options;
  options.min_try_timeout_ms = 100;
  options.max_try_timeout_ms = 100;
  options.total_timeout_ms = 2000;
  options.max_tries_per_upstream = 1;
  options.probe_interval_ms = 50;
  return options;
}

Request Req(std::string_view name, dns::Transport transport = dns::Transport::kUdp) {
  Request request;
  request.qname = N(name);
  request.client_transport = transport;
  return request;
}

// Resolves and runs the loop until the callback ran.
Result ResolveAndWait(loop::Loop& loop, Forwarder& forwarder, const Request& request,
                      const UpstreamSet& set) {
  std::optional<Result> result;
  forwarder.Resolve(request, set, [&](const Result& r) { result = r; });
  REQUIRE(RunUntil(loop, [&] { return result.has_value(); }));
  return *result;
}

// Budgets small enough to fill with a few queries: the process ceiling, per route, per
// upstream.
std::shared_ptr<ForwardBudgets> Budgets(size_t process, size_t route, size_t upstream) {
  return std::make_shared<ForwardBudgets>(ForwardBudgets::Limits{process, route, upstream});
}

// Sends `count` distinct queries (`prefix`0.example., ...) and keeps their results.
void ResolveMany(Forwarder& forwarder, const std::string& prefix, int count, const UpstreamSet& set,
                 std::vector<Result>* results) {
  for (int i = 0; i < count; ++i) {
    forwarder.Resolve(Req(prefix + std::to_string(i) + ".example."), set,
                      [results](const Result& r) { results->push_back(r); });
  }
}

size_t Count(const std::vector<Result>& results, ForwardOutcome outcome, FailReason reason) {
  size_t n = 0;
  for (const Result& r : results) n += r.outcome == outcome && r.reason == reason ? 1 : 0;
  return n;
}

std::string AnswerAddress(const Result& result) {
  REQUIRE(result.outcome == ForwardOutcome::kAnswer);
  REQUIRE(result.message.answers.size() == 1);
  return std::get<dns::RdataA>(result.message.answers[0].rdata).address.ToString();
}

TEST_CASE("A query is answered by the upstream, sent with the client's case and EDNS 1232",
          "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    Forwarder::Options options = TestOptions();
    options.dns0x20.mode = Dns0x20::kOff;  // the client's case as it is
    Forwarder forwarder(loop, options);
    Request request = Req("WwW.Example.");
    request.dnssec_ok = GENERATE(false, true);
    request.checking_disabled = request.dnssec_ok;
    Result result = ResolveAndWait(loop, forwarder, request, {a.address()});
    CHECK(AnswerAddress(result) == "192.0.2.1");
    CHECK(result.upstream == a.address());
    CHECK(result.transport == dns::Transport::kUdp);
    CHECK(result.tries == 1);
    REQUIRE(a.queries().size() == 1);
    const dns::Message& sent = a.queries()[0].message;
    CHECK(sent.questions[0].name.IdenticalTo(N("WwW.Example.")));
    CHECK(sent.header.rd);
    CHECK(sent.header.cd == request.checking_disabled);
    REQUIRE(sent.edns.has_value());
    CHECK(sent.edns->udp_payload_size == 1232);
    CHECK(sent.edns->dnssec_ok == request.dnssec_ok);
    CHECK(forwarder.counters().answers == 1);
    CHECK(forwarder.counters().in_flight == 0);
    CHECK(forwarder.table().Get(a.address()).sent.Value() == 1);
    CHECK(forwarder.health(a.address())->srtt_ms().has_value());
  }
  RequireClosesClean(loop);
}

TEST_CASE("Replies with a wrong ID, question or source, or garbage, are dropped", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    const Behaviour behaviour = GENERATE(Behaviour::kWrongIdFirst, Behaviour::kWrongQuestionFirst,
                                         Behaviour::kSpoofFirst, Behaviour::kGarbageFirst);
    a.set_behaviour(behaviour);
    Forwarder forwarder(loop, TestOptions());
    Result result = ResolveAndWait(loop, forwarder, Req("www.example."), {a.address()});
    CHECK(AnswerAddress(result) == "192.0.2.1");
    CHECK(result.tries == 1);
    switch (behaviour) {
      case Behaviour::kGarbageFirst:
        CHECK(forwarder.counters().malformed == 1);
        break;
      case Behaviour::kSpoofFirst:
        // The connected socket never even sees the forged datagram.
        CHECK(forwarder.counters().mismatched == 0);
        break;
      default:
        CHECK(forwarder.counters().mismatched == 1);
    }
  }
  RequireClosesClean(loop);
}

TEST_CASE("A timeout fails over to the next upstream", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1), b(loop, 2);
    a.set_behaviour(Behaviour::kSilent);
    Forwarder forwarder(loop, TestOptions());
    Result result =
        ResolveAndWait(loop, forwarder, Req("www.example."), {a.address(), b.address()});
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
  RequireClosesClean(loop);
}

TEST_CASE("SERVFAIL and REFUSED fail over to the next upstream", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1), b(loop, 2);
    a.set_behaviour(GENERATE(Behaviour::kServFail, Behaviour::kRefused));
    Forwarder forwarder(loop, TestOptions());
    Result result =
        ResolveAndWait(loop, forwarder, Req("www.example."), {a.address(), b.address()});
    CHECK(AnswerAddress(result) == "192.0.2.2");
    CHECK(forwarder.counters().timeouts == 0);
    // An upstream that answers, even SERVFAIL, is not failed.
    CHECK_FALSE(forwarder.health(a.address())->failed());
  }
  RequireClosesClean(loop);
}

TEST_CASE("When every upstream fails the result is SERVFAIL with the reason", "[upstream]") {
  loop::Loop loop;
  {
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
  RequireClosesClean(loop);
}

TEST_CASE("A closed port fails over at once, without waiting for a timeout", "[upstream]") {
  loop::Loop loop;
  {
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
  RequireClosesClean(loop);
}

TEST_CASE("A late answer to an earlier try still wins", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1), b(loop, 2);
    a.set_delay_ms(150);
    b.set_behaviour(Behaviour::kSilent);
    Forwarder forwarder(loop, TestOptions());
    Result result =
        ResolveAndWait(loop, forwarder, Req("www.example."), {a.address(), b.address()});
    CHECK(AnswerAddress(result) == "192.0.2.1");
    CHECK(b.queries().size() == 1);
  }
  RequireClosesClean(loop);
}

TEST_CASE("An answer slower than every try's timeout still wins within the budget", "[upstream]") {
  loop::Loop loop;
  {
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
  RequireClosesClean(loop);
}

TEST_CASE("A truncated UDP reply is retried over TCP to the same upstream", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1), b(loop, 2);
    a.set_behaviour(Behaviour::kTruncate);
    Forwarder forwarder(loop, TestOptions());
    Result result =
        ResolveAndWait(loop, forwarder, Req("big.example."), {a.address(), b.address()});
    CHECK(AnswerAddress(result) == "192.0.2.1");
    CHECK(result.transport == dns::Transport::kTcp);
    CHECK(a.CountQueries(dns::Transport::kUdp) == 1);
    CHECK(a.CountQueries(dns::Transport::kTcp) == 1);
    CHECK(b.queries().empty());
    CHECK(forwarder.counters().tcp_retries == 1);
  }
  RequireClosesClean(loop);
}

TEST_CASE("Client TCP queries go upstream over one reused TCP connection", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    Forwarder forwarder(loop, TestOptions());
    Result first =
        ResolveAndWait(loop, forwarder, Req("one.example.", dns::Transport::kTcp), {a.address()});
    CHECK(AnswerAddress(first) == "192.0.2.1");
    CHECK(first.transport == dns::Transport::kTcp);
    Result second =
        ResolveAndWait(loop, forwarder, Req("two.example.", dns::Transport::kTcp), {a.address()});
    CHECK(AnswerAddress(second) == "192.0.2.1");
    // Two more at once: pipelined on the same connection.
    int done = 0;
    for (const char* name : {"three.example.", "four.example."}) {
      forwarder.Resolve(Req(name, dns::Transport::kTcp), {a.address()}, [&](const Result& r) {
        CHECK(r.outcome == ForwardOutcome::kAnswer);
        ++done;
      });
    }
    REQUIRE(RunUntil(loop, [&] { return done == 2; }));
    CHECK(a.CountQueries(dns::Transport::kTcp) == 4);
    CHECK(a.CountQueries(dns::Transport::kUdp) == 0);
    CHECK(a.tcp_connections_accepted() == 1);
    CHECK(forwarder.counters().tcp_connections == 1);
    CHECK(forwarder.open_tcp_connections() == 1);
  }
  RequireClosesClean(loop);
}

TEST_CASE("A closed idle TCP connection is replaced on the next query", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    Forwarder::Options options = TestOptions();
    options.tcp_idle_timeout_ms = 50;
    Forwarder forwarder(loop, options);
    CHECK(ResolveAndWait(loop, forwarder, Req("one.example.", dns::Transport::kTcp), {a.address()})
              .outcome == ForwardOutcome::kAnswer);
    REQUIRE(RunUntil(loop, [&] { return forwarder.open_tcp_connections() == 0; }));
    CHECK(ResolveAndWait(loop, forwarder, Req("two.example.", dns::Transport::kTcp), {a.address()})
              .outcome == ForwardOutcome::kAnswer);
    CHECK(a.tcp_connections_accepted() == 2);
  }
  RequireClosesClean(loop);
}

TEST_CASE("A reused TCP connection closed under a query is retried on a new one", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    a.set_tcp_queries_per_connection(1);
    Forwarder forwarder(loop, TestOptions());
    CHECK(ResolveAndWait(loop, forwarder, Req("one.example.", dns::Transport::kTcp), {a.address()})
              .outcome == ForwardOutcome::kAnswer);
    Result second =
        ResolveAndWait(loop, forwarder, Req("two.example.", dns::Transport::kTcp), {a.address()});
    CHECK(AnswerAddress(second) == "192.0.2.1");
    CHECK(a.tcp_connections_accepted() == 2);
    CHECK_FALSE(forwarder.health(a.address())->failed());
  }
  RequireClosesClean(loop);
}

TEST_CASE("Identical queries in flight share one upstream query", "[upstream]") {
  loop::Loop loop;
  {
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
  RequireClosesClean(loop);
}

TEST_CASE("Beyond the process ceiling queries are refused at once, never inside Resolve",
          "[upstream]") {
  loop::Loop loop;
  {
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
  RequireClosesClean(loop);
}

TEST_CASE("Forwarders sharing budgets share them, as threads of one process do", "[upstream]") {
  loop::Loop loop;
  {
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
  RequireClosesClean(loop);
}

TEST_CASE("A black-holed route fills only its own budget; other routes are answered",
          "[upstream][budgets]") {
  loop::Loop loop;
  {
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
  RequireClosesClean(loop);
}

TEST_CASE("A dead upstream fills only its own budget; its routes' other servers answer",
          "[upstream][budgets]") {
  loop::Loop loop;
  {
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
  RequireClosesClean(loop);
}

TEST_CASE("An upstream known down fails its queries at once until a probe brings it back",
          "[upstream][budgets]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    a.set_behaviour(Behaviour::kSilent);
    Forwarder::Options options = TestOptions();
    options.failure_threshold = 1;
    options.probe_interval_ms = 50;
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
  RequireClosesClean(loop);
}

TEST_CASE("A server that refuses is never down: it fails queries at once by itself",
          "[upstream][budgets]") {
  loop::Loop loop;
  {
    // A port nothing listens on: the kernel answers each datagram with ICMP unreachable.
    loop::SocketAddress closed;
    {
      FakeUpstream gone(loop, 1);
      closed = gone.address();
    }
    Forwarder::Options options = TestOptions();
    options.failure_threshold = 1;
    options.probe_interval_ms = 50;
    Forwarder forwarder(loop, options);
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
  RequireClosesClean(loop);
}

TEST_CASE("A down server is left out while another server of the route answers",
          "[upstream][budgets]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1), b(loop, 2);
    a.set_behaviour(Behaviour::kSilent);
    Forwarder::Options options = TestOptions();
    options.failure_threshold = 1;
    options.probe_interval_ms = 50;
    Forwarder forwarder(loop, options);
    const UpstreamSet set{a.address(), b.address()};
    CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("one.example."), set)) == "192.0.2.2");
    REQUIRE(RunUntil(loop, [&] { return forwarder.health(a.address())->down(); }));
    const uint64_t hits_before = limits::LimitHits(limits::Limit::kUpstreamDown);
    Result result = ResolveAndWait(loop, forwarder, Req("two.example."), set);
    CHECK(AnswerAddress(result) == "192.0.2.2");
    CHECK(result.tries == 1);
    CHECK(limits::LimitHits(limits::Limit::kUpstreamDown) == hits_before);
  }
  RequireClosesClean(loop);
}

loop::SocketAddress Client(const char* ip) { return *loop::SocketAddress::FromHostPort(ip, 40000); }

Request ReqFrom(std::string_view name, const char* client) {
  Request request = Req(name);
  request.client = Client(client);
  return request;
}

TEST_CASE("A client flooding a slow domain cannot fill its route: others' names are answered",
          "[upstream][budgets][client_share]") {
  loop::Loop loop;
  {
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
    CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("own.example."), route)) ==
          "192.0.2.1");
    REQUIRE(RunUntil(loop, [&] { return flood.size() == 40; }));  // the time budget ends
    CHECK(Count(flood, ForwardOutcome::kServFail, FailReason::kTimeout) == 18);
    CHECK(budget.in_flight() == 0);
    CHECK(budget.HeldBy(ClientTagOf(Client("127.0.0.2"))) == 0);
  }
  RequireClosesClean(loop);
}

TEST_CASE("A client flooding a slow domain cannot fill an upstream's budget either",
          "[upstream][budgets][client_share]") {
  loop::Loop loop;
  {
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
  RequireClosesClean(loop);
}

TEST_CASE("Every way a query ends gives its budget slots back", "[upstream][budgets]") {
  loop::Loop loop;
  {
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
        forwarder->Resolve(Req("same.example."), set,
                           [&](const Result& r) { results.push_back(r); });
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
      CHECK(ResolveAndWait(loop, *forwarder, Req("x.example."), set).reason ==
            FailReason::kTimeout);
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
  RequireClosesClean(loop);
}

TEST_CASE("A failed upstream is skipped until a background probe restores it", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1), b(loop, 2);
    a.set_behaviour(Behaviour::kSilent);
    Forwarder::Options options = TestOptions();
    options.failure_threshold = 1;
    options.probe_interval_ms = 200;
    Forwarder forwarder(loop, options);
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
  RequireClosesClean(loop);
}

TEST_CASE("FORMERR to an EDNS query is retried once without EDNS", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    a.set_behaviour(Behaviour::kFormErrToEdns);
    Forwarder forwarder(loop, TestOptions());
    Result result = ResolveAndWait(loop, forwarder, Req("old.example."), {a.address()});
    CHECK(AnswerAddress(result) == "192.0.2.1");
    REQUIRE(a.queries().size() == 2);
    CHECK(a.queries()[0].message.edns.has_value());
    CHECK_FALSE(a.queries()[1].message.edns.has_value());
    CHECK(forwarder.counters().edns_fallbacks == 1);
  }
  RequireClosesClean(loop);
}

// Many letters, so a random spelling equal to the client's (2^-26) never happens.
constexpr std::string_view kLongName = "abcdefghijklmnop.Example.Com.";

// The name of the question of `bytes`, a whole message.
dns::Name QuestionOf(std::span<const uint8_t> bytes) {
  dns::Message message;
  REQUIRE(dns::ParseMessage(bytes, &message) == dns::ParseError::kOk);
  REQUIRE(message.questions.size() == 1);
  return message.questions[0].name;
}

TEST_CASE("0x20: the name goes upstream in random case; the result has the client's case",
          "[upstream][0x20]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    Forwarder::Options options = TestOptions();
    options.reply_decode = GENERATE(ReplyDecode::kWhole, ReplyDecode::kQuestion);
    Forwarder forwarder(loop, options);
    const Request request = Req(kLongName);
    Result result = ResolveAndWait(loop, forwarder, request, {a.address()});
    REQUIRE(a.queries().size() == 1);
    const dns::Name& sent = a.queries()[0].message.questions[0].name;
    CHECK(sent == request.qname);
    CHECK_FALSE(sent.IdenticalTo(request.qname));
    REQUIRE(result.outcome == ForwardOutcome::kAnswer);
    CHECK(result.tries == 1);
    // The upstream echoed the random case; the client (and the cache) see theirs.
    dns::Message reply;
    REQUIRE(dns::ParseMessage(result.reply, &reply) == dns::ParseError::kOk);
    CHECK(reply.questions[0].name.IdenticalTo(request.qname));
    REQUIRE(reply.answers.size() == 1);
    CHECK(reply.answers[0].owner.IdenticalTo(request.qname));
    CHECK(result.message.questions[0].name.IdenticalTo(request.qname));
    if (options.reply_decode == ReplyDecode::kWhole) {
      CHECK(result.message.answers[0].owner.IdenticalTo(request.qname));
    }
  }
  RequireClosesClean(loop);
}

TEST_CASE("0x20: a reply in the wrong case is dropped and the real one accepted",
          "[upstream][0x20]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    Forwarder forwarder(loop, TestOptions());
    const UpstreamSet set{a.address()};
    // The first reply echoes our case: the upstream is known to echo it.
    REQUIRE(AnswerAddress(ResolveAndWait(loop, forwarder, Req(kLongName), set)) == "192.0.2.1");
    a.set_behaviour(Behaviour::kWrongCaseFirst);
    const uint64_t hits = limits::LimitHits(limits::Limit::kUpstream0x20Mismatch);
    const Result result = ResolveAndWait(loop, forwarder, Req("x." + std::string(kLongName)), set);
    // The forged A 198.51.100.66 landed (our port, ID and question) and lost.
    CHECK(limits::LimitHits(limits::Limit::kUpstream0x20Mismatch) == hits + 1);
    CHECK(forwarder.counters().mismatched == 1);
    CHECK(AnswerAddress(result) == "192.0.2.1");
    CHECK(result.tries == 1);
    CHECK(a.queries().size() == 2);
  }
  RequireClosesClean(loop);
}

TEST_CASE("0x20: an upstream that lower-cases is asked again plainly, then gets the plain name",
          "[upstream][0x20]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    a.set_behaviour(Behaviour::kLowercased);
    Forwarder::Options options = TestOptions();
    options.dns0x20.fallback_after = 3;
    Forwarder forwarder(loop, options);
    const UpstreamSet set{a.address()};
    const uint64_t fallbacks = limits::LimitHits(limits::Limit::kUpstream0x20Fallback);
    for (int i = 0; i < 3; ++i) {
      const Request request = Req("q" + std::to_string(i) + "." + std::string(kLongName));
      const Result result = ResolveAndWait(loop, forwarder, request, set);
      // Every answer arrives, one round trip later: the wrong case, then the plain name.
      CHECK(AnswerAddress(result) == "192.0.2.1");
      CHECK(result.tries == 2);
      // As the upstream spelt it (RewriteForClient gives each client its own spelling).
      CHECK(QuestionOf(result.reply).IdenticalTo(request.qname.Lowercased()));
      CHECK(a.queries().back().message.questions[0].name.IdenticalTo(request.qname));
    }
    CHECK(limits::LimitHits(limits::Limit::kUpstream0x20Fallback) == fallbacks + 1);
    // Marked: the plain name at once.
    const Request request = Req(kLongName);
    const Result result = ResolveAndWait(loop, forwarder, request, set);
    CHECK(AnswerAddress(result) == "192.0.2.1");
    CHECK(result.tries == 1);
    CHECK(a.queries().back().message.questions[0].name.IdenticalTo(request.qname));
    CHECK(a.queries().size() == 7);
  }
  RequireClosesClean(loop);
}

TEST_CASE("0x20 on: a reply in another case is never accepted", "[upstream][0x20]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    a.set_behaviour(Behaviour::kLowercased);
    Forwarder::Options options = TestOptions();
    options.dns0x20.mode = Dns0x20::kOn;
    options.total_timeout_ms = 300;
    Forwarder forwarder(loop, options);
    const Result result = ResolveAndWait(loop, forwarder, Req(kLongName), {a.address()});
    CHECK(result.outcome == ForwardOutcome::kServFail);
    CHECK(result.reason == FailReason::kTimeout);
    CHECK(a.queries().size() == 1);
  }
  RequireClosesClean(loop);
}

TEST_CASE("0x20: the TCP retry of a truncated reply asks with the client's spelling",
          "[upstream][0x20]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    a.set_behaviour(Behaviour::kTruncate);
    Forwarder forwarder(loop, TestOptions());
    const Request request = Req(kLongName);
    Result result = ResolveAndWait(loop, forwarder, request, {a.address()});
    CHECK(AnswerAddress(result) == "192.0.2.1");
    CHECK(result.transport == dns::Transport::kTcp);
    REQUIRE(a.queries().size() == 2);
    CHECK_FALSE(a.queries()[0].message.questions[0].name.IdenticalTo(request.qname));
    CHECK(a.queries()[1].transport == dns::Transport::kTcp);
    CHECK(a.queries()[1].message.questions[0].name.IdenticalTo(request.qname));
    CHECK(QuestionOf(result.reply).IdenticalTo(request.qname));
  }
  RequireClosesClean(loop);
}

TEST_CASE("Source ports and IDs are random", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    Forwarder::Options options = TestOptions();
    // One socket per query, as before pooling: every query from its own random port.
    options.udp_sockets.queries_per_socket = 1;
    Forwarder forwarder(loop, options);
    constexpr int kQueries = 20;
    for (int i = 0; i < kQueries; ++i) {
      ResolveAndWait(loop, forwarder, Req("q" + std::to_string(i) + ".example."), {a.address()});
    }
    std::set<uint16_t> ports, ids;
    int sequential = 0;
    for (size_t i = 0; i < a.queries().size(); ++i) {
      ports.insert(a.queries()[i].from.port());
      ids.insert(a.queries()[i].message.header.id);
      if (i > 0 && a.queries()[i].message.header.id ==
                       static_cast<uint16_t>(a.queries()[i - 1].message.header.id + 1)) {
        ++sequential;
      }
    }
    // Collisions among 20 draws from ~28000 ports or 65536 IDs are rare, not impossible.
    CHECK(ports.size() >= kQueries - 2);
    CHECK(ids.size() >= kQueries - 2);
    CHECK(sequential <= 1);
  }
  RequireClosesClean(loop);
}

TEST_CASE("Pooled sockets rotate: each port carries at most queries_per_socket queries",
          "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    Forwarder::Options options = TestOptions();
    options.udp_sockets.sockets = 4;
    options.udp_sockets.queries_per_socket = 5;
    Forwarder forwarder(loop, options);
    constexpr int kQueries = 40;
    for (int i = 0; i < kQueries; ++i) {
      CHECK(AnswerAddress(ResolveAndWait(
                loop, forwarder, Req("q" + std::to_string(i) + ".example."), {a.address()})) ==
            "192.0.2.1");
    }
    std::map<uint16_t, int> per_port;
    std::set<uint16_t> ids;
    for (const auto& query : a.queries()) {
      ++per_port[query.from.port()];
      ids.insert(query.message.header.id);
    }
    // 40 queries, at most 5 per socket: at least 8 sockets, each on its own port.
    CHECK(per_port.size() >= kQueries / 5);
    for (const auto& [port, count] : per_port) CHECK(count <= 5);
    CHECK(ids.size() >= kQueries - 2);
  }
  RequireClosesClean(loop);
}

TEST_CASE("A reused job carries nothing over from the query before it", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1), b(loop, 2);
    Forwarder::Options options = TestOptions();
    options.server_order = ServerOrder::kConfigured;
    Forwarder forwarder(loop, options);
    const UpstreamSet set{a.address(), b.address()};
    // The first query leaves every kind of per-query state behind: an error reply and a
    // server marked done (SERVFAIL from a), or a server marked without EDNS (FORMERR), a
    // second try, DO and CD, a TCP client.
    const Behaviour first = GENERATE(Behaviour::kServFail, Behaviour::kFormErrToEdns);
    a.set_behaviour(first);
    Request one = Req("one.example.", dns::Transport::kTcp);
    one.dnssec_ok = true;
    one.checking_disabled = true;
    Result result = ResolveAndWait(loop, forwarder, one, set);
    CHECK(result.tries == 2);
    CHECK(result.upstream == (first == Behaviour::kServFail ? b.address() : a.address()));
    // Finished jobs are reset and kept on the next loop iteration.
    REQUIRE(RunUntil(loop, [&] { return forwarder.reusable_jobs() == 1; }));

    a.set_behaviour(Behaviour::kAnswer);
    const size_t sent_before = a.queries().size();
    std::optional<Result> answered;
    forwarder.Resolve(Req("two.example."), set, [&](const Result& r) { answered = r; });
    CHECK(forwarder.reusable_jobs() == 0);  // the recycled job took the query
    REQUIRE(RunUntil(loop, [&] { return answered.has_value(); }));
    const Result& two = *answered;
    CHECK(AnswerAddress(two) == "192.0.2.1");
    CHECK(two.upstream == a.address());
    CHECK(two.tries == 1);
    CHECK(two.transport == dns::Transport::kUdp);
    CHECK(two.reason == FailReason::kNone);
    CHECK(two.message.questions[0].name == N("two.example."));
    REQUIRE(a.queries().size() == sent_before + 1);
    const dns::Message& sent = a.queries().back().message;
    CHECK(a.queries().back().transport == dns::Transport::kUdp);
    CHECK(sent.questions[0].name == N("two.example."));
    REQUIRE(sent.edns.has_value());
    CHECK_FALSE(sent.edns->dnssec_ok);
    CHECK_FALSE(sent.header.cd);
    CHECK(forwarder.in_flight() == 0);
  }
  RequireClosesClean(loop);
}

TEST_CASE("Decoding the question only: the result carries the reply's bytes, no records",
          "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    Forwarder::Options options = TestOptions();
    options.reply_decode = ReplyDecode::kQuestion;
    Forwarder forwarder(loop, options);
    const UpstreamSet set{a.address()};
    for (const char* name : {"one.example.", "two.example."}) {  // the second on a reused job
      const Result result = ResolveAndWait(loop, forwarder, Req(name), set);
      REQUIRE(result.outcome == ForwardOutcome::kAnswer);
      CHECK(result.message.header.ancount == 1);
      CHECK(result.message.answers.empty());
      REQUIRE(result.message.questions.size() == 1);
      CHECK(result.message.questions[0].name == N(name));
      dns::Message whole;
      REQUIRE(dns::ParseMessage(result.reply, &whole) == dns::ParseError::kOk);
      REQUIRE(whole.answers.size() == 1);
      CHECK(std::get<dns::RdataA>(whole.answers[0].rdata).address.ToString() == "192.0.2.1");
      REQUIRE(RunUntil(loop, [&] { return forwarder.reusable_jobs() == 1; }));
    }
  }
  RequireClosesClean(loop);
}

TEST_CASE("A miss on a warm forwarder allocates nothing to send its query", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1), b(loop, 2);
    Forwarder::Options options = TestOptions();
    options.udp_sockets.sockets = 1;  // opened by the warm-up, not rotated within it
    options.reply_decode = ReplyDecode::kQuestion;
    Forwarder forwarder(loop, options);
    const UpstreamSet set{a.address(), b.address()};  // two servers: ordered per query
    int answered = 0;
    auto count = [&answered](const Result& r) { answered += r.outcome == ForwardOutcome::kAnswer; };
    for (int i = 0; i < 3; ++i) {  // grows the job, attempt, table and socket state
      forwarder.Resolve(Req("warm" + std::to_string(i) + ".example."), set, count);
      REQUIRE(RunUntil(loop, [&] { return answered == i + 1; }));
      REQUIRE(RunUntil(loop, [&] { return forwarder.reusable_jobs() == 1; }));
    }
    const Request request = Req("cold.example.");
    const size_t before = kdns::testing::AllocationCount();
    forwarder.Resolve(request, set, count);  // coalescing, budgets, order, job, socket, send
    const size_t after = kdns::testing::AllocationCount();
    CHECK(after == before);
    REQUIRE(RunUntil(loop, [&] { return answered == 4; }));
  }
  RequireClosesClean(loop);
}

TEST_CASE("A loop probe that comes back disables its upstream", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1), b(loop, 2);
    a.set_behaviour(Behaviour::kSilent);
    auto table = std::make_shared<UpstreamTable>();
    Forwarder forwarder(loop, TestOptions(), table);
    Forwarder other_thread(loop, TestOptions(), table);  // another thread's, sharing the table
    dns::Name probe = forwarder.ProbeForLoop(a.address());
    REQUIRE(RunUntil(loop, [&] { return a.queries().size() == 1; }));
    const dns::Question& question = a.queries()[0].message.questions[0];
    CHECK(question.name == probe);
    CHECK(question.type == dns::RrType::kTxt);

    // The frontend receives that query on its listening socket: it is ours.
    auto looped = table->MatchLoopProbe(question.name, a.address());
    REQUIRE(looped.has_value());
    CHECK(*looped == a.address());
    CHECK(table->Disable(*looped, "loop probe came back"));
    CHECK_FALSE(table->Disable(*looped, "again"));

    const UpstreamSet set{a.address(), b.address()};
    CHECK(AnswerAddress(ResolveAndWait(loop, other_thread, Req("x.example."), set)) == "192.0.2.2");
    CHECK(a.queries().size() == 1);
    Result none = ResolveAndWait(loop, other_thread, Req("x.example."), {a.address()});
    CHECK(none.outcome == ForwardOutcome::kServFail);
    CHECK(none.reason == FailReason::kNoUpstreams);
  }
  RequireClosesClean(loop);
}

TEST_CASE("CancelAll answers every pending query with a shutdown SERVFAIL", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    a.set_behaviour(Behaviour::kSilent);
    Forwarder forwarder(loop, TestOptions());
    std::vector<FailReason> reasons;
    forwarder.Resolve(Req("a.example."), {a.address()},
                      [&](const Result& r) { reasons.push_back(r.reason); });
    forwarder.Resolve(Req("b.example.", dns::Transport::kTcp), {a.address()},
                      [&](const Result& r) { reasons.push_back(r.reason); });
    REQUIRE(RunUntil(loop, [&] { return a.queries().size() == 2; }));
    forwarder.CancelAll();
    CHECK(reasons == std::vector<FailReason>{FailReason::kShutdown, FailReason::kShutdown});
    CHECK(forwarder.in_flight() == 0);
  }
  RequireClosesClean(loop);
}

TEST_CASE("Destroying the Forwarder with queries in flight leaks nothing", "[upstream]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    a.set_behaviour(Behaviour::kSilent);
    auto forwarder = std::make_unique<Forwarder>(loop, TestOptions());
    bool called = false;
    forwarder->Resolve(Req("a.example."), {a.address()}, [&](const Result&) { called = true; });
    forwarder->Resolve(Req("b.example.", dns::Transport::kTcp), {a.address()},
                       [&](const Result&) { called = true; });
    REQUIRE(RunUntil(loop, [&] { return a.queries().size() == 2; }));
    forwarder.reset();
    CHECK_FALSE(called);
  }
  RequireClosesClean(loop);
}

}  // namespace
}  // namespace kdns::upstream

namespace kdns::upstream {
namespace {

TEST_CASE("Strict order asks the servers as configured, not the fastest first", "[upstream]") {
  loop::Loop loop;
  {
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
    CHECK(result.upstream ==
          (order == ServerOrder::kConfigured ? slow.address() : fresh.address()));
  }
  RequireClosesClean(loop);
}

}  // namespace
}  // namespace kdns::upstream

namespace kdns::upstream {
namespace {

TEST_CASE("All servers at once: a silent server does not delay the answer", "[upstream]") {
  loop::Loop loop;
  {
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
  RequireClosesClean(loop);
}

// The client address a query sent upstream carries, if any.
std::optional<dns::ClientAddress> CarriedClient(const testing::ReceivedQuery& query) {
  if (!query.message.edns) return std::nullopt;
  dns::ClientAddress client;
  if (dns::FindClientAddress(query.message.edns->options, dns::kDefaultClientAddressOption,
                             &client) != dns::ClientAddressFound::kFound) {
    return std::nullopt;
  }
  return client;
}

Request FromClient(std::string_view name, const char* client, dns::Transport transport) {
  Request request = Req(name, transport);
  request.client = *loop::SocketAddress::Parse(client);
  return request;
}

TEST_CASE("A query to an upstream trusted with it carries the client's address",
          "[upstream][client_address]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    Forwarder::Options options = TestOptions();
    options.client_address_to = {*IpPrefix::Parse("127.0.0.0/8")};
    Forwarder forwarder(loop, options);
    const dns::Transport transport = GENERATE(dns::Transport::kUdp, dns::Transport::kTcp);
    Result result = ResolveAndWait(
        loop, forwarder, FromClient("www.example.", "10.1.2.3:41000", transport), {a.address()});
    CHECK(AnswerAddress(result) == "192.0.2.1");
    REQUIRE(a.queries().size() == 1);
    CHECK(a.queries()[0].transport == transport);
    CHECK(CarriedClient(a.queries()[0]) ==
          dns::ClientAddress{*IpAddress::Parse("10.1.2.3"), 41000});
    // The forwarder's own queries (prefetches) have no client: nothing is carried.
    (void)ResolveAndWait(loop, forwarder, Req("other.example.", transport), {a.address()});
    REQUIRE(a.queries().size() == 2);
    CHECK_FALSE(CarriedClient(a.queries()[1]).has_value());
  }
  RequireClosesClean(loop);
}

TEST_CASE("A query to an upstream not trusted with it never carries the client's address",
          "[upstream][client_address]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    Forwarder::Options options = TestOptions();
    // None (the default), or only another address.
    if (GENERATE(false, true)) options.client_address_to = {*IpPrefix::Parse("127.0.0.2/32")};
    Forwarder forwarder(loop, options);
    (void)ResolveAndWait(loop, forwarder,
                         FromClient("www.example.", "10.1.2.3:41000", dns::Transport::kUdp),
                         {a.address()});
    REQUIRE(a.queries().size() == 1);
    REQUIRE(a.queries()[0].message.edns.has_value());
    CHECK(a.queries()[0].message.edns->options.empty());
  }
  RequireClosesClean(loop);
}

TEST_CASE("Coalesced queries carry the first asker's address", "[upstream][client_address]") {
  loop::Loop loop;
  {
    FakeUpstream a(loop, 1);
    a.set_delay_ms(30);
    Forwarder::Options options = TestOptions();
    options.client_address_to = {*IpPrefix::Parse("127.0.0.1")};
    Forwarder forwarder(loop, options);
    int answered = 0;
    for (const char* client : {"10.0.0.1:1000", "10.0.0.2:2000", "10.0.0.3:3000"}) {
      forwarder.Resolve(FromClient("www.example.", client, dns::Transport::kUdp), {a.address()},
                        [&](const Result&) { ++answered; });
    }
    REQUIRE(RunUntil(loop, [&] { return answered == 3; }));
    REQUIRE(a.queries().size() == 1);
    CHECK(CarriedClient(a.queries()[0]) == dns::ClientAddress{*IpAddress::Parse("10.0.0.1"), 1000});
  }
  RequireClosesClean(loop);
}

}  // namespace
}  // namespace kdns::upstream
