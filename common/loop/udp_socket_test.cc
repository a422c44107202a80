#include "common/loop/udp_socket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "common/loop/timer.h"
#include "common/loop/udp_test_util.h"
#include "test/support/skip.h"

namespace kdns::loop {
namespace {

using testing::BindClient;
using testing::BindEcho;
using testing::Bytes;
using testing::Received;
using testing::Text;

TEST_CASE_METHOD(testing::LoopFixture, "UdpSocket echoes 100 datagrams over loopback in batches",
                 "[loop][udp]") {
  UdpSocket* server_ptr = nullptr;
  auto server = BindEcho(loop, "127.0.0.1:0", server_ptr);
  SocketAddress server_address = server->GetLocalAddress();
  REQUIRE(server_address.port() != 0);

  std::vector<Received> received;
  auto client = BindClient(loop, received);
  // All 100 are queued before the loop runs: the client flushes them with sendmmsg, the
  // server reads them with recvmmsg (32 per call) and answers each batch with sendmmsg.
  for (int i = 0; i < 100; ++i) {
    REQUIRE(client->Send(Bytes("q" + std::to_string(i)), server_address));
  }
  REQUIRE(testing::RunUntil(loop, [&] { return received.size() == 100; }));
  std::map<std::string, int> texts;
  for (const auto& r : received) {
    ++texts[r.text];
    CHECK(r.from == server_address);
  }
  CHECK(texts.size() == 100);
  CHECK(texts.count("echo:q0") == 1);
  CHECK(texts.count("echo:q99") == 1);
  CHECK(server->stats().received == 100);
  CHECK(server->stats().sent == 100);
  CHECK(server->stats().dropped == 0);
  CHECK(client->stats().sent == 100);
  CHECK(client->stats().received == 100);
}

// A server's handler answers its waiting clients (CancelAll's SERVFAILs) as it is destroyed,
// after the loop stopped: those replies must leave before the fd closes. Without the flush
// in ~UdpSocket the client never receives it (kubedns_sigterm_test's held query, lost).
TEST_CASE_METHOD(testing::LoopFixture,
                 "A reply queued outside a batch leaves when the socket is destroyed",
                 "[loop][udp]") {
  std::vector<Received> received;
  auto client = BindClient(loop, received);
  std::vector<Received> unused;
  auto server = BindClient(loop, unused);
  // Outside a receive batch: queued for the loop's check phase, which never runs for it.
  REQUIRE(server->Send(Bytes("servfail"), client->GetLocalAddress()));
  server.reset();
  REQUIRE(testing::RunUntil(loop, [&] { return received.size() == 1; }));
  CHECK(received[0].text == "servfail");
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "A wildcard-bound UdpSocket replies from the address the client queried",
                 "[loop][udp]") {
  UdpSocket* server_ptr = nullptr;
  auto server = BindEcho(loop, "0.0.0.0:0", server_ptr);
  uint16_t port = server->GetLocalAddress().port();
  std::vector<Received> received;
  auto client = BindClient(loop, received);
  // All of 127/8 is local on Linux: without IP_PKTINFO the reply would come from
  // 127.0.0.1 (the route's preferred source), not from the address asked.
  auto target = GENERATE("127.0.0.2", "127.0.0.1", "127.1.2.3");
  auto to = *SocketAddress::FromHostPort(target, port);
  REQUIRE(client->Send(Bytes("hi"), to));
  REQUIRE(testing::RunUntil(loop, [&] { return received.size() == 1; }));
  CHECK(received[0].text == "echo:hi");
  CHECK(received[0].from == to);
}

TEST_CASE_METHOD(testing::LoopFixture, "UdpSocket reports each datagram's destination address",
                 "[loop][udp]") {
  std::vector<std::string> destinations;
  std::string error;
  auto server = UdpSocket::Bind(
      loop, SocketAddress::AnyV4(0), UdpSocket::Options(),
      [&](std::span<const uint8_t>, const SocketAddress&, const UdpSocket::ReplyContext& ctx) {
        auto d = ctx.destination();
        destinations.push_back(d ? d->HostString() : "none");
      },
      &error);
  REQUIRE(server != nullptr);
  std::vector<Received> unused;
  auto client = BindClient(loop, unused);
  REQUIRE(client->Send(
      Bytes("x"), *SocketAddress::FromHostPort("127.0.0.9", server->GetLocalAddress().port())));
  REQUIRE(testing::RunUntil(loop, [&] { return destinations.size() == 1; }));
  CHECK(destinations[0] == "127.0.0.9");
}

TEST_CASE_METHOD(testing::LoopFixture, "UdpSocket works over IPv6 loopback", "[loop][udp]") {
  std::string error;
  UdpSocket* server_ptr = nullptr;
  auto server = UdpSocket::Bind(
      loop, *SocketAddress::Parse("[::]:0"), UdpSocket::Options(),
      [&](std::span<const uint8_t> d, const SocketAddress& peer,
          const UdpSocket::ReplyContext& ctx) { server_ptr->Send(d, peer, ctx); },
      &error);
  if (server == nullptr) {
    kdns::testing::SkipTest("no IPv6 here: " + error, kdns::testing::Provided::kNo);
    return;
  }
  server_ptr = server.get();
  std::vector<Received> received;
  auto client = UdpSocket::Bind(
      loop, *SocketAddress::Parse("[::1]:0"), UdpSocket::Options(),
      [&](std::span<const uint8_t> d, const SocketAddress& peer, const UdpSocket::ReplyContext&) {
        received.push_back({Text(d), peer});
      },
      &error);
  REQUIRE(client != nullptr);
  auto to = *SocketAddress::FromHostPort("::1", server->GetLocalAddress().port());
  REQUIRE(client->Send(Bytes("v6"), to));
  REQUIRE(testing::RunUntil(loop, [&] { return received.size() == 1; }));
  CHECK(received[0].text == "v6");
  CHECK(received[0].from == to);
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "UdpSocket drops and counts replies beyond its pending bound", "[loop][udp]") {
  std::vector<Received> received;
  auto server = BindClient(loop, received);  // a plain receiver
  std::string error;
  UdpSocket::Options options;
  options.max_pending_sends = 4;
  auto sender = UdpSocket::Bind(
      loop, *SocketAddress::Parse("127.0.0.1:0"), options,
      [](std::span<const uint8_t>, const SocketAddress&, const UdpSocket::ReplyContext&) {},
      &error);
  REQUIRE(sender != nullptr);
  // Outside a receive batch, sends queue until the end of the loop iteration.
  int accepted = 0;
  for (int i = 0; i < 10; ++i) accepted += sender->Send(Bytes("x"), server->GetLocalAddress());
  CHECK(accepted == 4);
  CHECK(sender->pending_sends() == 4);
  CHECK(sender->stats().dropped == 6);
  REQUIRE(testing::RunUntil(loop, [&] { return received.size() == 4; }));
  CHECK(sender->pending_sends() == 0);
  CHECK(sender->stats().sent == 4);
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "A reply sent later from a timer leaves in the same loop iteration",
                 "[loop][udp]") {
  std::vector<Received> received;
  auto client = BindClient(loop, received);
  std::vector<Received> unused;
  auto sender = BindClient(loop, unused);
  Timer send_later(loop), give_up(loop);
  send_later.Start(1, [&] { sender->Send(Bytes("late"), client->GetLocalAddress()); });
  give_up.Start(5000, [&] { loop.Stop(); });
  // RunOnce blocks in the poll phase unless something is ready: the reply must not wait
  // for an unrelated wake-up (here only give_up, after 5 s).
  while (received.empty() && give_up.IsActive()) loop.RunOnce();
  CHECK(received.size() == 1);
  CHECK(give_up.IsActive());
}

TEST_CASE_METHOD(testing::LoopFixture, "UdpSocket drops and counts datagrams longer than its slots",
                 "[loop][udp]") {
  std::vector<Received> received;
  std::string error;
  UdpSocket::Options options;
  options.max_datagram_bytes = 512;
  auto server = UdpSocket::Bind(
      loop, *SocketAddress::Parse("127.0.0.1:0"), options,
      [&](std::span<const uint8_t> d, const SocketAddress& peer, const UdpSocket::ReplyContext&) {
        received.push_back({Text(d), peer});
      },
      &error);
  REQUIRE(server != nullptr);
  std::vector<Received> unused;
  auto client = BindClient(loop, unused);
  REQUIRE(client->Send(Bytes(std::string(513, 'x')), server->GetLocalAddress()));
  REQUIRE(client->Send(Bytes(std::string(512, 'y')), server->GetLocalAddress()));
  REQUIRE(testing::RunUntil(loop, [&] { return received.size() == 1; }));
  CHECK(received[0].text.size() == 512);
  CHECK(server->stats().truncated == 1);
}

TEST_CASE_METHOD(testing::LoopFixture, "UdpSocket serves an inherited fd", "[loop][udp]") {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(fd >= 0);
  auto bind_to = *SocketAddress::Parse("127.0.0.1:0");
  REQUIRE(bind(fd, bind_to.sockaddr_ptr(), bind_to.sockaddr_len()) == 0);
  std::string error;
  UdpSocket* server_ptr = nullptr;
  auto server = UdpSocket::FromFd(
      loop, fd, SocketSharing{.inherited = Inherited::kYes}, UdpSocket::Options(),
      [&](std::span<const uint8_t> d, const SocketAddress& peer,
          const UdpSocket::ReplyContext& ctx) { server_ptr->Send(d, peer, ctx); },
      &error);
  INFO(error);
  REQUIRE(server != nullptr);
  server_ptr = server.get();
  CHECK(server->fd() == fd);
  std::vector<Received> received;
  auto client = BindClient(loop, received);
  REQUIRE(client->Send(Bytes("inherited"), server->GetLocalAddress()));
  REQUIRE(testing::RunUntil(loop, [&] { return received.size() == 1; }));
  CHECK(received[0].text == "inherited");
}

TEST_CASE("UdpSocket refuses to serve a TCP socket's fd", "[loop][udp]") {
  Loop loop;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  std::string error;
  auto socket = UdpSocket::FromFd(
      loop, fd, SocketSharing{.inherited = Inherited::kYes}, UdpSocket::Options(),
      [](std::span<const uint8_t>, const SocketAddress&, const UdpSocket::ReplyContext&) {},
      &error);
  CHECK(socket == nullptr);
  CHECK_THAT(error, Catch::Contains("wrong socket type"));
  testing::RequireClosesClean(loop);
}

TEST_CASE_METHOD(testing::LoopFixture, "Binding a UDP port that is taken fails with a clear error",
                 "[loop][udp]") {
  std::vector<Received> unused;
  auto first = BindClient(loop, unused);
  std::string error;
  auto second = UdpSocket::Bind(
      loop, first->GetLocalAddress(), UdpSocket::Options(),
      [](std::span<const uint8_t>, const SocketAddress&, const UdpSocket::ReplyContext&) {},
      &error);
  CHECK(second == nullptr);
  CHECK_THAT(error, Catch::Contains("bind") && Catch::Contains("in use"));
}

TEST_CASE_METHOD(testing::LoopFixture, "Two UdpSockets share a port with SO_REUSEPORT",
                 "[loop][udp]") {
  UdpSocket::Options options;
  options.reuse_port = ReusePort::kYes;
  auto noop = [](std::span<const uint8_t>, const SocketAddress&, const UdpSocket::ReplyContext&) {};
  std::string error;
  auto first = UdpSocket::Bind(loop, *SocketAddress::Parse("127.0.0.1:0"), options, noop, &error);
  REQUIRE(first != nullptr);
  auto second = UdpSocket::Bind(loop, first->GetLocalAddress(), options, noop, &error);
  INFO(error);
  CHECK(second != nullptr);
}

TEST_CASE("A UdpSocket may be destroyed from its own receive callback", "[loop][udp]") {
  Loop loop;
  std::unique_ptr<UdpSocket> server;
  int calls = 0;
  std::string error;
  server = UdpSocket::Bind(
      loop, *SocketAddress::Parse("127.0.0.1:0"), UdpSocket::Options(),
      [&](std::span<const uint8_t>, const SocketAddress&, const UdpSocket::ReplyContext&) {
        ++calls;
        server.reset();
      },
      &error);
  REQUIRE(server != nullptr);
  {
    std::vector<Received> unused;
    auto client = BindClient(loop, unused);
    for (int i = 0; i < 5; ++i) REQUIRE(client->Send(Bytes("x"), server->GetLocalAddress()));
    REQUIRE(testing::RunUntil(loop, [&] { return server == nullptr; }));
  }
  CHECK(calls == 1);
  testing::RequireClosesClean(loop);
}

}  // namespace
}  // namespace kdns::loop
