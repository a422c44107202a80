#include "sidecar/ares_channel.h"

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/dns/message.h"
#include "common/loop/loop_test_util.h"
#include "common/upstream/testing.h"
#include "sidecar/dns_probe.h"
#include "sidecar/testing.h"

namespace kdns::sidecar {
namespace {

using loop::testing::RequireClosesClean;
using loop::testing::RunUntil;
using upstream::testing::Behaviour;
using upstream::testing::FakeUpstream;

std::vector<uint8_t> Query(std::string_view name, dns::RrType type = dns::RrType::kA) {
  ProbeOption option;
  option.name = *dns::Name::FromText(name);
  option.type = type;
  return BuildProbeQuery(option);
}

std::unique_ptr<AresChannel> Channel(loop::Loop& loop, const loop::SocketAddress& server,
                                     uint64_t timeout_ms = 2000) {
  std::string error;
  auto channel = AresChannel::Create(loop, {server, timeout_ms, 1}, &error);
  INFO(error);
  REQUIRE(channel != nullptr);
  return channel;
}

// Sends one query and runs the loop until its callback.
AresChannel::Reply Exchange(loop::Loop& loop, AresChannel& channel,
                            const std::vector<uint8_t>& query) {
  std::optional<AresChannel::Reply> reply;
  channel.Send(query, [&](AresChannel::Reply r) { reply = std::move(r); });
  REQUIRE(RunUntil(
      loop, [&] { return reply.has_value(); }, 10000));
  return std::move(*reply);
}

dns::Message Decode(const AresChannel::Reply& reply) {
  dns::Message message;
  REQUIRE(dns::ParseMessage(reply.bytes, &message) == dns::ParseError::kOk);
  return message;
}

TEST_CASE("AresChannel sends a query and hands back the reply", "[sidecar][ares]") {
  loop::Loop loop;
  {
    FakeUpstream upstream(loop, 7);
    auto channel = Channel(loop, upstream.address());
    AresChannel::Reply reply = Exchange(loop, *channel, Query("www.example.test"));
    CHECK(reply.status == ARES_SUCCESS);
    CHECK(reply.latency_ns > 0);
    dns::Message message = Decode(reply);
    REQUIRE(message.answers.size() == 1);
    CHECK(message.answers[0].rdata == dns::Rdata(upstream.address_record()));
    REQUIRE(upstream.queries().size() == 1);
    CHECK(upstream.queries()[0].message.header.rd);
    CHECK(channel->in_flight() == 0);
  }
  RequireClosesClean(loop);
}

TEST_CASE("AresChannel hands back replies of any rcode", "[sidecar][ares]") {
  loop::Loop loop;
  {
    FakeUpstream upstream(loop, 7);
    auto channel = Channel(loop, upstream.address());
    for (auto [behaviour, rcode] : {std::pair{Behaviour::kServFail, dns::Rcode::kServFail},
                                    std::pair{Behaviour::kRefused, dns::Rcode::kRefused}}) {
      upstream.set_behaviour(behaviour);
      AresChannel::Reply reply = Exchange(loop, *channel, Query("a.example.test"));
      REQUIRE(reply.status == ARES_SUCCESS);
      CHECK(Decode(reply).rcode() == rcode);
    }
    // One try: no retry to the same server after a SERVFAIL.
    CHECK(upstream.queries().size() == 2);
  }
  RequireClosesClean(loop);
}

TEST_CASE("AresChannel retries a truncated reply over TCP", "[sidecar][ares]") {
  loop::Loop loop;
  {
    FakeUpstream upstream(loop, 9);
    upstream.set_behaviour(Behaviour::kTruncate);
    auto channel = Channel(loop, upstream.address());
    AresChannel::Reply reply = Exchange(loop, *channel, Query("big.example.test"));
    REQUIRE(reply.status == ARES_SUCCESS);
    CHECK(Decode(reply).answers.size() == 1);
    CHECK(upstream.CountQueries(upstream::Transport::kUdp) == 1);
    CHECK(upstream.CountQueries(upstream::Transport::kTcp) == 1);
  }
  RequireClosesClean(loop);
}

TEST_CASE("AresChannel ignores replies that do not match the query", "[sidecar][ares]") {
  loop::Loop loop;
  {
    FakeUpstream upstream(loop, 5);
    auto channel = Channel(loop, upstream.address());
    for (Behaviour behaviour :
         {Behaviour::kWrongIdFirst, Behaviour::kWrongQuestionFirst, Behaviour::kSpoofFirst}) {
      upstream.set_behaviour(behaviour);
      AresChannel::Reply reply = Exchange(loop, *channel, Query("match.example.test"));
      REQUIRE(reply.status == ARES_SUCCESS);
      dns::Message message = Decode(reply);
      REQUIRE(message.answers.size() == 1);
      CHECK(message.answers[0].rdata == dns::Rdata(upstream.address_record()));
    }
  }
  RequireClosesClean(loop);
}

TEST_CASE("AresChannel reports a refused port and a silent server", "[sidecar][ares]") {
  loop::Loop loop;
  {
    auto refused = Channel(loop, testing::ClosedPort(loop));
    AresChannel::Reply reply = Exchange(loop, *refused, Query("a.example.test"));
    CHECK(reply.status == ARES_ECONNREFUSED);
    CHECK(AresChannel::StatusText(reply.status) == "connection refused");
    CHECK(reply.bytes.empty());

    FakeUpstream upstream(loop, 1);
    upstream.set_behaviour(Behaviour::kSilent);
    auto silent = Channel(loop, upstream.address(), 100);
    reply = Exchange(loop, *silent, Query("a.example.test"));
    CHECK(reply.status == ARES_ETIMEOUT);
    CHECK(AresChannel::StatusText(reply.status) == "timeout");
    CHECK(reply.latency_ns >= 90'000'000);
    CHECK(silent->in_flight() == 0);
  }
  RequireClosesClean(loop);
}

TEST_CASE("AresChannel keeps several queries in flight at once", "[sidecar][ares]") {
  loop::Loop loop;
  {
    FakeUpstream upstream(loop, 3);
    upstream.set_delay_ms(20);
    auto channel = Channel(loop, upstream.address());
    int done = 0;
    for (int i = 0; i < 5; ++i) {
      channel->Send(Query("n" + std::to_string(i) + ".example.test"),
                    [&](const AresChannel::Reply& r) {
                      CHECK(r.status == ARES_SUCCESS);
                      ++done;
                    });
    }
    CHECK(channel->in_flight() == 5);
    REQUIRE(RunUntil(loop, [&] { return done == 5; }));
    CHECK(upstream.queries().size() == 5);
  }
  RequireClosesClean(loop);
}

TEST_CASE("Destroying an AresChannel with queries in flight calls nobody and leaks nothing",
          "[sidecar][ares]") {
  loop::Loop loop;
  {
    FakeUpstream upstream(loop, 1);
    upstream.set_behaviour(Behaviour::kSilent);
    auto channel = Channel(loop, upstream.address());
    bool called = false;
    channel->Send(Query("a.example.test"), [&](const AresChannel::Reply&) { called = true; });
    REQUIRE(RunUntil(loop, [&] { return upstream.queries().size() == 1; }));
    CHECK(channel->open_sockets() >= 1);
    channel.reset();
    CHECK_FALSE(called);
  }
  RequireClosesClean(loop);
}

TEST_CASE("A callback may send the next query", "[sidecar][ares]") {
  loop::Loop loop;
  {
    FakeUpstream upstream(loop, 2);
    auto channel = Channel(loop, upstream.address());
    int replies = 0;
    std::function<void(AresChannel::Reply)> again = [&](const AresChannel::Reply&) {
      if (++replies < 3) channel->Send(Query("again.example.test"), again);
    };
    channel->Send(Query("again.example.test"), again);
    REQUIRE(RunUntil(loop, [&] { return replies == 3; }));
    CHECK(upstream.queries().size() == 3);
  }
  RequireClosesClean(loop);
}

}  // namespace
}  // namespace kdns::sidecar
