// Tests of the Forwarder over TCP: a truncated UDP reply retried over TCP, client TCP queries on
// one reused upstream connection, a closed connection replaced or retried, and tcp://
// upstreams (asked over TCP only, pipelined on few persistent connections, RFC 7766).

#include <catch2/catch.hpp>

#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_testing.h"
#include "common/upstream/testing.h"
#include "common/upstream/upstream_address.h"
#include "test/support/fake_dns_server.h"

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

Upstream OverTcp(const loop::SocketAddress& address) {
  return Upstream(address, UpstreamTransport::kTcp);
}

// Room for answers held back a while by the fake: tries that outlast its delay.
Forwarder::Options PatientOptions() {
  Forwarder::Options options = TestOptions();
  options.min_try_timeout_ms = 1000;
  options.max_try_timeout_ms = 1000;
  options.total_timeout_ms = 4000;
  return options;
}

TEST_CASE_METHOD(LoopFixture,
                 "A tcp:// upstream gets every query over TCP, pipelined on one connection",
                 "[upstream][tcp_upstream]") {
  FakeUpstream a(loop, 1);
  a.set_delay_ms(300);
  Forwarder forwarder(loop, PatientOptions());
  const UpstreamSet set{OverTcp(a.address())};
  std::vector<Result> results;
  ResolveMany(forwarder, "q", 20, set, &results);
  // Every query reaches the server before the first answer comes back: pipelined.
  REQUIRE(RunUntil(loop, [&] { return a.CountQueries(dns::Transport::kTcp) == 20; }));
  CHECK(results.empty());
  REQUIRE(RunUntil(loop, [&] { return results.size() == 20; }));
  for (const Result& result : results) {
    CHECK(AnswerAddress(result) == "192.0.2.1");
    CHECK(result.transport == dns::Transport::kTcp);
  }
  CHECK(a.CountQueries(dns::Transport::kUdp) == 0);
  CHECK(a.tcp_connections_accepted() == 1);
  CHECK(forwarder.counters().tcp_connections == 1);
  CHECK(forwarder.counters().tcp_retries == 0);  // not a TC retry: the upstream's transport
  // Later queries reuse the connection.
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("later.example."), set)) == "192.0.2.1");
  CHECK(a.tcp_connections_accepted() == 1);
}

TEST_CASE_METHOD(LoopFixture, "Answers on a tcp:// connection are matched by ID, in any order",
                 "[upstream][tcp_upstream]") {
  namespace t = kdns::testing;
  // slow.example. is answered after the others that were sent after it.
  t::FakeDnsServer server(loop, [](const t::ReceivedQuery& query) {
    const bool slow = query.parsed && !query.message.questions.empty() &&
                      query.message.questions[0].name.ToText() == "slow.example.";
    t::Replies replies = t::AnswerA(t::A(slow ? "192.0.2.7" : "192.0.2.8"))(query);
    for (t::Reply& reply : replies) reply.delay_ms = slow ? 200 : 0;
    return replies;
  });
  Forwarder forwarder(loop, PatientOptions());
  const UpstreamSet set{OverTcp(server.address())};
  std::vector<std::string> order;
  for (const char* name : {"slow.example.", "fast.example."}) {
    forwarder.Resolve(Req(name), set, [&order, name](const Result& r) {
      CHECK(AnswerAddress(r) == (std::string(name) == "slow.example." ? "192.0.2.7" : "192.0.2.8"));
      order.push_back(name);
    });
  }
  REQUIRE(RunUntil(loop, [&] { return order.size() == 2; }));
  CHECK(order == std::vector<std::string>{"fast.example.", "slow.example."});
  CHECK(server.tcp_connections_accepted() == 1);
}

TEST_CASE_METHOD(LoopFixture,
                 "Queries in flight on a closed tcp:// connection are retried on a new one",
                 "[upstream][tcp_upstream]") {
  FakeUpstream a(loop, 1);
  // The first connection answers three queries and closes on the fourth, unanswered.
  a.set_tcp_queries_per_connection(3);
  Forwarder forwarder(loop, TestOptions());
  const UpstreamSet set{OverTcp(a.address())};
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("one.example."), set)) == "192.0.2.1");
  std::vector<Result> results;
  ResolveMany(forwarder, "q", 4, set, &results);  // two answered, two caught by the close
  REQUIRE(RunUntil(loop, [&] { return results.size() == 4; }));
  for (const Result& result : results) CHECK(AnswerAddress(result) == "192.0.2.1");
  CHECK(a.tcp_connections_accepted() == 2);
  CHECK(a.CountQueries(dns::Transport::kUdp) == 0);
  CHECK_FALSE(forwarder.health(OverTcp(a.address()))->failed());
}

TEST_CASE_METHOD(LoopFixture, "A tcp:// upstream that refuses the connection fails over at once",
                 "[upstream][tcp_upstream]") {
  loop::SocketAddress gone;
  {
    FakeUpstream closed(loop, 9);
    gone = closed.address();
  }
  FakeUpstream b(loop, 2);
  Forwarder forwarder(loop, TestOptions());
  Result result = ResolveAndWait(loop, forwarder, Req("x.example."), {OverTcp(gone), b.address()});
  CHECK(AnswerAddress(result) == "192.0.2.2");
  CHECK(result.transport == dns::Transport::kUdp);
  CHECK(forwarder.counters().timeouts == 0);  // refused: no waiting for a timeout
}

TEST_CASE_METHOD(LoopFixture,
                 "An idle tcp:// connection closes after the idle timeout and reopens on demand",
                 "[upstream][tcp_upstream]") {
  FakeUpstream a(loop, 1);
  Forwarder::Options options = TestOptions();
  options.tcp_idle_timeout_ms = 50;
  Forwarder forwarder(loop, options);
  const UpstreamSet set{OverTcp(a.address())};
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("one.example."), set)) == "192.0.2.1");
  CHECK(forwarder.open_tcp_connections() == 1);
  REQUIRE(RunUntil(loop, [&] { return forwarder.open_tcp_connections() == 0; }));
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("two.example."), set)) == "192.0.2.1");
  CHECK(a.tcp_connections_accepted() == 2);
}

TEST_CASE_METHOD(LoopFixture, "A server gets at most tcp_connections_per_upstream connections",
                 "[upstream][tcp_upstream]") {
  FakeUpstream a(loop, 1);
  a.set_delay_ms(200);
  Forwarder::Options options = PatientOptions();
  options.tcp_connections_per_upstream = 2;
  options.tcp_queries_per_connection = 3;
  Forwarder forwarder(loop, options);
  const UpstreamSet set{OverTcp(a.address())};
  std::vector<Result> results;
  ResolveMany(forwarder, "q", 3, set, &results);
  CHECK(forwarder.open_tcp_connections() == 1);  // three fill the first one's pipeline
  ResolveMany(forwarder, "r", 7, set, &results);
  CHECK(forwarder.open_tcp_connections() == 2);  // then a second, and no more
  REQUIRE(RunUntil(loop, [&] { return results.size() == 10; }));
  for (const Result& result : results) CHECK(AnswerAddress(result) == "192.0.2.1");
  CHECK(a.tcp_connections_accepted() == 2);
  CHECK(forwarder.counters().tcp_connections == 2);
}

TEST_CASE_METHOD(LoopFixture,
                 "The same address over UDP and over tcp:// are two upstreams in the table",
                 "[upstream][tcp_upstream]") {
  FakeUpstream a(loop, 1);
  Forwarder forwarder(loop, TestOptions());
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("t.example."), {OverTcp(a.address())})) ==
        "192.0.2.1");
  CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("u.example."), {a.address()})) ==
        "192.0.2.1");
  const std::vector<const UpstreamTable::Entry*> entries = forwarder.table().Entries();
  REQUIRE(entries.size() == 2);
  const std::string port = std::to_string(a.address().port());
  CHECK(FormatUpstreamAddress(entries[0]->address) == "tcp://127.0.0.1#" + port);
  CHECK(UpstreamTable::ServersBindText(*entries[0]) == "tcp://127.0.0.1#" + port + " 1 0");
  CHECK(FormatUpstreamAddress(entries[1]->address) == "127.0.0.1#" + port);
  CHECK(entries[1]->sent.Value() == 1);
  CHECK(a.CountQueries(dns::Transport::kTcp) == 1);
  CHECK(a.CountQueries(dns::Transport::kUdp) == 1);
}

}  // namespace
}  // namespace kdns::upstream::testing
