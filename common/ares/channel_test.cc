#include "common/ares/channel.h"

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"
#include "common/loop/loop_test_util.h"
#include "common/upstream/testing.h"

namespace kdns::ares {
namespace {

using dns::testing::QuerySpec;
using loop::testing::RunUntil;
using upstream::testing::Behaviour;
using upstream::testing::FakeUpstream;

std::unique_ptr<Channel> Open(loop::Loop& loop, const loop::SocketAddress& server,
                              uint64_t timeout_ms = 2000) {
  std::string error;
  auto channel = Channel::Create(loop, {{server}, timeout_ms, 1}, &error);
  INFO(error);
  REQUIRE(channel != nullptr);
  return channel;
}

// Sends one query and runs the loop until its callback.
Channel::Reply Exchange(loop::Loop& loop, Channel& channel, const std::vector<uint8_t>& query) {
  std::optional<Channel::Reply> reply;
  channel.Send(query, [&](Channel::Reply r) { reply = std::move(r); });
  REQUIRE(RunUntil(
      loop, [&] { return reply.has_value(); }, 10000));
  return std::move(*reply);
}

dns::Message Decode(const Channel::Reply& reply) { return dns::testing::Parse(reply.bytes); }

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "A c-ares Channel sends a query and hands back the reply", "[ares]") {
  FakeUpstream upstream(loop, 7);
  auto channel = Open(loop, upstream.address());
  Channel::Reply reply = Exchange(loop, *channel, QuerySpec("www.example.test").Id(0).Bytes());
  CHECK(reply.status == ARES_SUCCESS);
  CHECK(reply.latency_ns > 0);
  dns::Message message = Decode(reply);
  REQUIRE(message.answers.size() == 1);
  CHECK(message.answers[0].rdata == dns::Rdata(upstream.address_record()));
  REQUIRE(upstream.queries().size() == 1);
  CHECK(upstream.queries()[0].message.header.rd);
  CHECK(channel->in_flight() == 0);
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "A c-ares Channel hands back replies of any rcode",
                 "[ares]") {
  FakeUpstream upstream(loop, 7);
  auto channel = Open(loop, upstream.address());
  for (auto [behaviour, rcode] : {std::pair{Behaviour::kServFail, dns::Rcode::kServFail},
                                  std::pair{Behaviour::kRefused, dns::Rcode::kRefused}}) {
    upstream.set_behaviour(behaviour);
    Channel::Reply reply = Exchange(loop, *channel, QuerySpec("a.example.test").Id(0).Bytes());
    REQUIRE(reply.status == ARES_SUCCESS);
    CHECK(Decode(reply).rcode() == rcode);
  }
  // One try: no retry to the same server after a SERVFAIL.
  CHECK(upstream.queries().size() == 2);
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "A c-ares Channel retries a truncated reply over TCP",
                 "[ares]") {
  FakeUpstream upstream(loop, 9);
  upstream.set_behaviour(Behaviour::kTruncate);
  auto channel = Open(loop, upstream.address());
  Channel::Reply reply = Exchange(loop, *channel, QuerySpec("big.example.test").Id(0).Bytes());
  REQUIRE(reply.status == ARES_SUCCESS);
  CHECK(Decode(reply).answers.size() == 1);
  CHECK(upstream.CountQueries(dns::Transport::kUdp) == 1);
  CHECK(upstream.CountQueries(dns::Transport::kTcp) == 1);
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "A c-ares Channel ignores replies that do not match the query", "[ares]") {
  FakeUpstream upstream(loop, 5);
  auto channel = Open(loop, upstream.address());
  for (Behaviour behaviour :
       {Behaviour::kWrongIdFirst, Behaviour::kWrongQuestionFirst, Behaviour::kSpoofFirst}) {
    upstream.set_behaviour(behaviour);
    Channel::Reply reply = Exchange(loop, *channel, QuerySpec("match.example.test").Id(0).Bytes());
    REQUIRE(reply.status == ARES_SUCCESS);
    dns::Message message = Decode(reply);
    REQUIRE(message.answers.size() == 1);
    CHECK(message.answers[0].rdata == dns::Rdata(upstream.address_record()));
  }
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "A c-ares Channel reports a refused port and a silent server", "[ares]") {
  auto refused = Open(loop, kdns::testing::UnusedUdpAddress(loop));
  Channel::Reply reply = Exchange(loop, *refused, QuerySpec("a.example.test").Id(0).Bytes());
  CHECK(reply.status == ARES_ECONNREFUSED);
  CHECK(Channel::StatusText(reply.status) == "connection refused");
  CHECK(reply.bytes.empty());

  FakeUpstream upstream(loop, 1);
  upstream.set_behaviour(Behaviour::kSilent);
  auto silent = Open(loop, upstream.address(), 100);
  reply = Exchange(loop, *silent, QuerySpec("a.example.test").Id(0).Bytes());
  CHECK(reply.status == ARES_ETIMEOUT);
  CHECK(Channel::StatusText(reply.status) == "timeout");
  CHECK(reply.latency_ns >= 90'000'000);
  CHECK(silent->in_flight() == 0);
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "A c-ares Channel keeps several queries in flight at once", "[ares]") {
  FakeUpstream upstream(loop, 3);
  upstream.set_delay_ms(20);
  auto channel = Open(loop, upstream.address());
  int done = 0;
  for (int i = 0; i < 5; ++i) {
    channel->Send(QuerySpec("n" + std::to_string(i) + ".example.test").Id(0).Bytes(),
                  [&](const Channel::Reply& r) {
                    CHECK(r.status == ARES_SUCCESS);
                    ++done;
                  });
  }
  CHECK(channel->in_flight() == 5);
  REQUIRE(RunUntil(loop, [&] { return done == 5; }));
  CHECK(upstream.queries().size() == 5);
}

TEST_CASE_METHOD(
    loop::testing::LoopFixture,
    "Destroying a c-ares Channel with queries in flight calls nobody and leaks nothing", "[ares]") {
  FakeUpstream upstream(loop, 1);
  upstream.set_behaviour(Behaviour::kSilent);
  auto channel = Open(loop, upstream.address());
  bool called = false;
  channel->Send(QuerySpec("a.example.test").Id(0).Bytes(),
                [&](const Channel::Reply&) { called = true; });
  REQUIRE(RunUntil(loop, [&] { return upstream.queries().size() == 1; }));
  CHECK(channel->open_sockets() >= 1);
  channel.reset();
  CHECK_FALSE(called);
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "A callback may send the next query", "[ares]") {
  FakeUpstream upstream(loop, 2);
  auto channel = Open(loop, upstream.address());
  int replies = 0;
  std::function<void(Channel::Reply)> again = [&](const Channel::Reply&) {
    if (++replies < 3) channel->Send(QuerySpec("again.example.test").Id(0).Bytes(), again);
  };
  channel->Send(QuerySpec("again.example.test").Id(0).Bytes(), again);
  REQUIRE(RunUntil(loop, [&] { return replies == 3; }));
  CHECK(upstream.queries().size() == 3);
}

struct Lookup {
  bool done = false;
  std::vector<IpAddress> addresses;
  std::string error;
};

Channel::AddressCallback Into(Lookup& lookup) {
  return [&lookup](const std::vector<IpAddress>& addresses, const std::string& error) {
    lookup.done = true;
    lookup.addresses = addresses;
    lookup.error = error;
  };
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "A name is looked up with the one server given, and its address comes back",
                 "[ares]") {
  FakeUpstream kubedns(loop, 53);  // answers A 192.0.2.53
  std::string error;
  auto channel = Channel::Create(loop, {{kubedns.address()}, 200, 1}, &error);
  REQUIRE(channel != nullptr);
  Lookup result;
  channel->LookupAddresses("ns.kube-system.svc.cluster.local", Into(result));
  REQUIRE(RunUntil(loop, [&] { return result.done; }));
  REQUIRE_FALSE(result.addresses.empty());
  CHECK(result.addresses.front().ToString() == "192.0.2.53");
  REQUIRE_FALSE(kubedns.queries().empty());
  CHECK(kubedns.queries().front().message.questions.front().name.ToText() ==
        "ns.kube-system.svc.cluster.local.");  // no search list applied

  SECTION("a server that does not answer: an error after the timeout") {
    kubedns.set_behaviour(Behaviour::kSilent);
    Lookup silent;
    channel->LookupAddresses("gone.svc.cluster.local", Into(silent));
    REQUIRE(RunUntil(loop, [&] { return silent.done; }));
    CHECK(silent.addresses.empty());
    CHECK_THAT(silent.error, Catch::StartsWith("gone.svc.cluster.local: "));
    CHECK(channel->in_flight() == 0);
  }
  SECTION("a refusal is an error") {
    kubedns.set_behaviour(Behaviour::kRefused);
    Lookup refused;
    channel->LookupAddresses("x.svc.cluster.local", Into(refused));
    REQUIRE(RunUntil(loop, [&] { return refused.done; }));
    CHECK(refused.addresses.empty());
  }
  SECTION("destroying the channel drops pending lookups without calling them") {
    kubedns.set_behaviour(Behaviour::kSilent);
    Lookup dropped;
    channel->LookupAddresses("slow.svc.cluster.local", Into(dropped));
    channel.reset();
    CHECK_FALSE(dropped.done);
  }
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "Without servers, a channel reads the hosts file and numeric names", "[ares]") {
  std::string error;
  auto channel = Channel::Create(loop, {}, &error);
  REQUIRE(channel != nullptr);
  Lookup numeric, local;
  channel->LookupAddresses("192.0.2.7", Into(numeric));
  channel->LookupAddresses("localhost", Into(local));
  REQUIRE(RunUntil(loop, [&] { return numeric.done && local.done; }));
  REQUIRE_FALSE(numeric.addresses.empty());
  CHECK(numeric.addresses.front().ToString() == "192.0.2.7");
  REQUIRE_FALSE(local.addresses.empty());
  CHECK((local.addresses.front().ToString() == "127.0.0.1" ||
         local.addresses.front().ToString() == "::1"));
}

}  // namespace
}  // namespace kdns::ares
