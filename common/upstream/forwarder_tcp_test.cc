// Tests of the Forwarder over TCP: a truncated UDP reply retried over TCP, client TCP queries on
// one reused upstream connection, and a closed connection replaced or retried.

#include <catch2/catch.hpp>

#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_testing.h"
#include "common/upstream/testing.h"

namespace kdns::upstream::testing {
namespace {

TEST_CASE_METHOD(LoopFixture, "A truncated UDP reply is retried over TCP to the same upstream",
                 "[upstream]") {
  FakeUpstream a(loop, 1), b(loop, 2);
  a.set_behaviour(Behaviour::kTruncate);
  Forwarder forwarder(loop, TestOptions());
  Result result = ResolveAndWait(loop, forwarder, Req("big.example."), {a.address(), b.address()});
  CHECK(AnswerAddress(result) == "192.0.2.1");
  CHECK(result.transport == dns::Transport::kTcp);
  CHECK(a.CountQueries(dns::Transport::kUdp) == 1);
  CHECK(a.CountQueries(dns::Transport::kTcp) == 1);
  CHECK(b.queries().empty());
  CHECK(forwarder.counters().tcp_retries == 1);
}

TEST_CASE_METHOD(LoopFixture, "Client TCP queries go upstream over one reused TCP connection",
                 "[upstream]") {
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

TEST_CASE_METHOD(LoopFixture, "A closed idle TCP connection is replaced on the next query",
                 "[upstream]") {
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

TEST_CASE_METHOD(LoopFixture,
                 "A reused TCP connection closed under a query is retried on a new one",
                 "[upstream]") {
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

}  // namespace
}  // namespace kdns::upstream::testing
