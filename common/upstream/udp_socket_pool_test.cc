#include "common/upstream/udp_socket_pool.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/dns/message.h"
#include "common/dns/testing.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/upstream/testing.h"
#include "common/upstream/wire.h"

namespace kdns::upstream {
namespace {

using dns::testing::N;
using loop::testing::RunUntil;
using testing::Behaviour;
using testing::FakeUpstream;

// A pool driven the way the Forwarder drives it: what each callback saw.
struct PoolFixture {
  PoolFixture(loop::Loop& loop, const loop::SocketAddress& peer,
              const UdpSocketPool::Options& options)
      : receive(UdpClient::kReceiveSliceBytes, 1) {
    UdpSocketPool::Callbacks callbacks;
    callbacks.on_datagram = [this](UdpSocketPool::Waiter* waiter,
                                   std::span<const uint8_t> datagram) {
      replies.emplace_back(waiter, std::vector<uint8_t>(datagram.begin(), datagram.end()));
    };
    callbacks.on_malformed = [this] { ++malformed; };
    callbacks.on_unknown = [this] { ++unknown; };
    callbacks.on_error = [this](std::span<UdpSocketPool::Waiter* const> waiters, int status) {
      for (UdpSocketPool::Waiter* waiter : waiters) {
        CHECK(waiter->socket == nullptr);  // released before the call
        failed.push_back(waiter);
      }
      last_error = status;
    };
    pool = std::make_unique<UdpSocketPool>(loop, peer, options, receive, random, callbacks);
  }

  // Registers `waiter` and sends it a query for `name` with its ID.
  void Send(UdpSocketPool::Waiter* waiter, const std::string& name, uint64_t now_ms = 0) {
    std::string error;
    REQUIRE(pool->Acquire(waiter, now_ms, &error));
    Request request;
    request.qname = N(name);
    std::vector<uint8_t> query;
    REQUIRE(BuildQuery(request, waiter->id, EdnsMode::kWithEdns, 1232, &query));
    CHECK(pool->Send(waiter, query) == 0);
  }

  loop::internal::UdpReceiveBatch receive;
  SecureRandom random;
  std::unique_ptr<UdpSocketPool> pool;
  std::vector<std::pair<UdpSocketPool::Waiter*, std::vector<uint8_t>>> replies;
  std::vector<UdpSocketPool::Waiter*> failed;
  int malformed = 0;
  int unknown = 0;
  int last_error = 0;
};

uint16_t IdOf(const std::vector<uint8_t>& datagram) {
  return static_cast<uint16_t>(datagram[0] << 8 | datagram[1]);
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "A pool reuses its sockets: queries share a few ports",
                 "[upstream][pool]") {
  FakeUpstream a(loop, 1);
  UdpSocketPool::Options options;
  options.sockets = 2;
  options.queries_per_socket = 1000;
  PoolFixture f(loop, a.address(), options);
  std::vector<UdpSocketPool::Waiter> waiters(20);
  for (size_t i = 0; i < waiters.size(); ++i) {
    f.Send(&waiters[i], "q" + std::to_string(i) + ".example.");
    REQUIRE(RunUntil(loop, [&] { return f.replies.size() == i + 1; }));
    // The reply went to the waiter whose ID it carries.
    CHECK(f.replies.back().first == &waiters[i]);
    CHECK(IdOf(f.replies.back().second) == waiters[i].id);
    f.pool->Release(&waiters[i]);
    CHECK(waiters[i].socket == nullptr);
  }
  std::set<uint16_t> ports;
  for (const auto& query : a.queries()) ports.insert(query.from.port());
  CHECK(ports.size() <= 2);
  CHECK(f.pool->sockets_opened() <= 2);
  CHECK(f.pool->open_sockets() <= 2);
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "A pool rotates a socket after queries_per_socket queries or max_age_ms",
                 "[upstream][pool]") {
  FakeUpstream a(loop, 1);
  UdpSocketPool::Options options;
  options.sockets = 1;
  options.queries_per_socket = 3;
  options.max_age_ms = 1000;
  PoolFixture f(loop, a.address(), options);
  SECTION("by count") {
    std::vector<UdpSocketPool::Waiter> waiters(9);
    // All in flight at once: the retired sockets keep listening for their queries.
    for (size_t i = 0; i < waiters.size(); ++i) {
      f.Send(&waiters[i], "q" + std::to_string(i) + ".example.");
    }
    CHECK(f.pool->sockets_opened() == 3);
    CHECK(f.pool->retired_sockets() == 2);
    REQUIRE(RunUntil(loop, [&] { return f.replies.size() == waiters.size(); }));
    std::map<uint16_t, int> per_port;
    for (const auto& query : a.queries()) ++per_port[query.from.port()];
    CHECK(per_port.size() == 3);
    for (const auto& [port, count] : per_port) CHECK(count == 3);
    for (auto& waiter : waiters) f.pool->Release(&waiter);
    // The retired ones closed as their last query was released; the third goes when a
    // query finds it used up.
    CHECK(f.pool->retired_sockets() == 0);
    UdpSocketPool::Waiter next;
    f.Send(&next, "next.example.");
    CHECK(f.pool->retired_sockets() == 0);
    CHECK(f.pool->sockets_opened() == 4);
    f.pool->Release(&next);
  }
  SECTION("by age") {
    UdpSocketPool::Waiter first, second, third;
    f.Send(&first, "one.example.", /*now_ms=*/0);
    const uint16_t first_port = f.pool->local_port(&first);
    f.Send(&second, "two.example.", /*now_ms=*/999);
    CHECK(f.pool->local_port(&second) == first_port);
    f.Send(&third, "three.example.", /*now_ms=*/1000);
    CHECK(f.pool->local_port(&third) != first_port);
    CHECK(f.pool->sockets_opened() == 2);
    REQUIRE(RunUntil(loop, [&] { return f.replies.size() == 3; }));
    f.pool->Release(&first);
    f.pool->Release(&second);
    f.pool->Release(&third);
  }
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "IDs are unique among the queries waiting on one socket", "[upstream][pool]") {
  UdpSocketPool::Options options;
  options.sockets = 1;
  options.queries_per_socket = 100000;
  // Nobody answers: the queries stay registered.
  PoolFixture f(loop, *loop::SocketAddress::FromHostPort("127.0.0.1", 9), options);
  std::vector<UdpSocketPool::Waiter> waiters(2000);
  std::set<uint16_t> ids;
  std::string error;
  for (auto& waiter : waiters) {
    REQUIRE(f.pool->Acquire(&waiter, 0, &error));
    ids.insert(waiter.id);
  }
  CHECK(ids.size() == waiters.size());
  CHECK(f.pool->sockets_opened() == 1);
  for (auto& waiter : waiters) f.pool->Release(&waiter);
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "A refused socket fails its queries and is replaced",
                 "[upstream][pool]") {
  // A port nothing listens on: the kernel answers each datagram with ICMP unreachable.
  loop::SocketAddress closed;
  {
    FakeUpstream gone(loop, 9);
    closed = gone.address();
  }
  UdpSocketPool::Options options;
  options.sockets = 1;
  PoolFixture f(loop, closed, options);
  UdpSocketPool::Waiter first;
  f.Send(&first, "one.example.");
  REQUIRE(RunUntil(loop, [&] { return !f.failed.empty(); }));
  CHECK(f.failed == std::vector<UdpSocketPool::Waiter*>{&first});
  CHECK(f.last_error == UV_ECONNREFUSED);
  CHECK(f.pool->open_sockets() == 0);
  f.pool->Release(&first);  // already released: a no-op
  // The next query gets a new socket.
  UdpSocketPool::Waiter second;
  std::string error;
  REQUIRE(f.pool->Acquire(&second, 0, &error));
  CHECK(f.pool->sockets_opened() == 2);
  CHECK(f.pool->retired_sockets() == 0);
  f.pool->Release(&second);
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "A pool drops replies with another ID or from another port", "[upstream][pool]") {
  FakeUpstream a(loop, 1);
  const Behaviour behaviour =
      GENERATE(Behaviour::kWrongIdFirst, Behaviour::kSpoofFirst, Behaviour::kGarbageFirst);
  a.set_behaviour(behaviour);
  UdpSocketPool::Options options;
  options.sockets = 1;
  PoolFixture f(loop, a.address(), options);
  UdpSocketPool::Waiter waiter;
  f.Send(&waiter, "www.example.");
  REQUIRE(RunUntil(loop, [&] {
    return std::any_of(f.replies.begin(), f.replies.end(), [](const auto& reply) {
      dns::Message message;
      return dns::ParseMessage(reply.second, &message) == dns::ParseError::kOk;
    });
  }));
  for (const auto& [to, bytes] : f.replies) {
    CHECK(to == &waiter);
    CHECK(IdOf(bytes) == waiter.id);
  }
  switch (behaviour) {
    case Behaviour::kWrongIdFirst:
      CHECK(f.unknown == 1);
      CHECK(f.replies.size() == 1);
      break;
    case Behaviour::kSpoofFirst:  // the connected socket never sees it
      CHECK(f.unknown == 0);
      CHECK(f.replies.size() == 1);
      break;
    default:  // the right ID, garbage after it: the owner's parse rejects it
      CHECK(f.unknown == 0);
      CHECK(f.replies.size() == 2);
  }
  f.pool->Release(&waiter);
  // A reply that comes after the release finds nobody.
  a.set_behaviour(Behaviour::kAnswer);
}

}  // namespace
}  // namespace kdns::upstream
