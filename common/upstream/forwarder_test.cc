// Tests of the Forwarder (common/upstream/forwarder.h): a query answered, replies matched or
// dropped, what a query carries upstream (random ports and IDs, pooled sockets, the client's
// address), reused jobs, allocations, and shutdown. Failover, TCP, budgets and 0x20 have their
// own forwarder_*_test.cc.

#include "common/upstream/forwarder.h"

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/dns/testing.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/upstream/forwarder_testing.h"
#include "common/upstream/testing.h"
#include "test/unit/allocation_counter.h"

namespace kdns::upstream::testing {
namespace {

using dns::testing::N;

TEST_CASE_METHOD(LoopFixture,
                 "A query is answered by the upstream, sent with the client's case and EDNS 1232",
                 "[upstream]") {
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

TEST_CASE_METHOD(LoopFixture,
                 "Replies with a wrong ID, question or source, or garbage, are dropped",
                 "[upstream]") {
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

TEST_CASE_METHOD(LoopFixture, "FORMERR to an EDNS query is retried once without EDNS",
                 "[upstream]") {
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

TEST_CASE_METHOD(LoopFixture, "Source ports and IDs are random", "[upstream]") {
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

TEST_CASE_METHOD(LoopFixture,
                 "Pooled sockets rotate: each port carries at most queries_per_socket queries",
                 "[upstream]") {
  FakeUpstream a(loop, 1);
  Forwarder::Options options = TestOptions();
  options.udp_sockets.sockets = 4;
  options.udp_sockets.queries_per_socket = 5;
  Forwarder forwarder(loop, options);
  constexpr int kQueries = 40;
  for (int i = 0; i < kQueries; ++i) {
    CHECK(AnswerAddress(ResolveAndWait(loop, forwarder, Req("q" + std::to_string(i) + ".example."),
                                       {a.address()})) == "192.0.2.1");
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

TEST_CASE_METHOD(LoopFixture, "A reused job carries nothing over from the query before it",
                 "[upstream]") {
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

TEST_CASE_METHOD(LoopFixture,
                 "Decoding the question only: the result carries the reply's bytes, no records",
                 "[upstream]") {
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

TEST_CASE_METHOD(LoopFixture, "A miss on a warm forwarder allocates nothing to send its query",
                 "[upstream]") {
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

TEST_CASE_METHOD(LoopFixture, "A loop probe that comes back disables its upstream", "[upstream]") {
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

TEST_CASE_METHOD(LoopFixture, "CancelAll answers every pending query with a shutdown SERVFAIL",
                 "[upstream]") {
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

TEST_CASE_METHOD(LoopFixture, "Destroying the Forwarder with queries in flight leaks nothing",
                 "[upstream]") {
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

// The client address a query sent upstream carries, if any.
std::optional<dns::ClientAddress> CarriedClient(const ReceivedQuery& query) {
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

TEST_CASE_METHOD(LoopFixture, "A query to an upstream trusted with it carries the client's address",
                 "[upstream][client_address]") {
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
  CHECK(CarriedClient(a.queries()[0]) == dns::ClientAddress{*IpAddress::Parse("10.1.2.3"), 41000});
  // The forwarder's own queries (prefetches) have no client: nothing is carried.
  (void)ResolveAndWait(loop, forwarder, Req("other.example.", transport), {a.address()});
  REQUIRE(a.queries().size() == 2);
  CHECK_FALSE(CarriedClient(a.queries()[1]).has_value());
}

TEST_CASE_METHOD(LoopFixture,
                 "A query to an upstream not trusted with it never carries the client's address",
                 "[upstream][client_address]") {
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

TEST_CASE_METHOD(LoopFixture, "Coalesced queries carry the first asker's address",
                 "[upstream][client_address]") {
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

}  // namespace
}  // namespace kdns::upstream::testing
