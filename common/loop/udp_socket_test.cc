#include "common/loop/udp_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "common/loop/timer.h"

namespace kdns::loop {
namespace {

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string Text(std::span<const uint8_t> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// An echo server: replies "echo:<datagram>" synchronously, through the reply context.
std::unique_ptr<UdpSocket> BindEcho(Loop& loop, const std::string& address, UdpSocket*& self_out) {
  std::string error;
  auto server = UdpSocket::Bind(
      loop, *SocketAddress::Parse(address), UdpSocket::Options(),
      [&self_out](std::span<const uint8_t> datagram, const SocketAddress& peer,
                  const UdpSocket::ReplyContext& ctx) {
        std::string reply = "echo:" + Text(datagram);
        self_out->Send(Bytes(reply), peer, ctx);
      },
      &error);
  INFO(error);
  REQUIRE(server != nullptr);
  self_out = server.get();
  return server;
}

struct Received {
  std::string text;
  SocketAddress from;
};

std::unique_ptr<UdpSocket> BindClient(Loop& loop, std::vector<Received>& received) {
  std::string error;
  auto client = UdpSocket::Bind(
      loop, *SocketAddress::Parse("127.0.0.1:0"), UdpSocket::Options(),
      [&received](std::span<const uint8_t> datagram, const SocketAddress& peer,
                  const UdpSocket::ReplyContext&) {
        received.push_back({Text(datagram), peer});
      },
      &error);
  INFO(error);
  REQUIRE(client != nullptr);
  return client;
}

TEST_CASE("UdpSocket echoes 100 datagrams over loopback in batches", "[loop][udp]") {
  Loop loop;
  {
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
  testing::RequireClosesClean(loop);
}

TEST_CASE("A wildcard-bound UdpSocket replies from the address the client queried", "[loop][udp]") {
  Loop loop;
  {
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
  testing::RequireClosesClean(loop);
}

TEST_CASE("UdpSocket reports each datagram's destination address", "[loop][udp]") {
  Loop loop;
  {
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
  testing::RequireClosesClean(loop);
}

TEST_CASE("UdpSocket works over IPv6 loopback", "[loop][udp]") {
  Loop loop;
  {
    std::string error;
    UdpSocket* server_ptr = nullptr;
    auto server = UdpSocket::Bind(
        loop, *SocketAddress::Parse("[::]:0"), UdpSocket::Options(),
        [&](std::span<const uint8_t> d, const SocketAddress& peer,
            const UdpSocket::ReplyContext& ctx) { server_ptr->Send(d, peer, ctx); },
        &error);
    if (server == nullptr) {
      WARN("no IPv6 here: " << error);
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
  testing::RequireClosesClean(loop);
}

TEST_CASE("UdpSocket drops and counts replies beyond its pending bound", "[loop][udp]") {
  Loop loop;
  {
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
  testing::RequireClosesClean(loop);
}

TEST_CASE("A reply sent later from a timer leaves in the same loop iteration", "[loop][udp]") {
  Loop loop;
  {
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
  testing::RequireClosesClean(loop);
}

TEST_CASE("UdpSocket drops and counts datagrams longer than its slots", "[loop][udp]") {
  Loop loop;
  {
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
  testing::RequireClosesClean(loop);
}

TEST_CASE("UdpSocket serves an inherited fd", "[loop][udp]") {
  Loop loop;
  {
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
  testing::RequireClosesClean(loop);
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

TEST_CASE("Binding a UDP port that is taken fails with a clear error", "[loop][udp]") {
  Loop loop;
  {
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
  testing::RequireClosesClean(loop);
}

TEST_CASE("Two UdpSockets share a port with SO_REUSEPORT", "[loop][udp]") {
  Loop loop;
  {
    UdpSocket::Options options;
    options.reuse_port = ReusePort::kYes;
    auto noop = [](std::span<const uint8_t>, const SocketAddress&, const UdpSocket::ReplyContext&) {
    };
    std::string error;
    auto first = UdpSocket::Bind(loop, *SocketAddress::Parse("127.0.0.1:0"), options, noop, &error);
    REQUIRE(first != nullptr);
    auto second = UdpSocket::Bind(loop, first->GetLocalAddress(), options, noop, &error);
    INFO(error);
    CHECK(second != nullptr);
  }
  testing::RequireClosesClean(loop);
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

// The receiver thread's fast path for these tests: answers "f..." with "fast:f...", throws
// for "t...", and leaves everything else to the loop (the echo callback).
struct FastPathProbe {
  std::atomic<int> calls{0};
  std::atomic<bool> on_loop_thread{false};
  std::thread::id loop_thread = std::this_thread::get_id();

  UdpSocket::FastPath Make() {
    return [this](std::span<const uint8_t> datagram, const SocketAddress&,
                  std::span<uint8_t> out) -> size_t {
      ++calls;
      if (std::this_thread::get_id() == loop_thread) on_loop_thread = true;
      const std::string text = Text(datagram);
      if (!text.empty() && text[0] == 't') throw std::runtime_error("a test exception");
      if (text.empty() || text[0] != 'f') return 0;
      const std::string reply = "fast:" + text;
      std::memcpy(out.data(), reply.data(), reply.size());
      return reply.size();
    };
  }
};

TEST_CASE("A receiver thread answers what its fast path can and hands the rest to the loop",
          "[loop][udp]") {
  Loop loop;
  {
    UdpSocket* server_ptr = nullptr;
    auto server = BindEcho(loop, "127.0.0.1:0", server_ptr);
    FastPathProbe probe;
    std::string error;
    REQUIRE(server->StartReceiverThread(probe.Make(), &error));
    CHECK_FALSE(server->StartReceiverThread(probe.Make(), &error));  // once only
    const SocketAddress server_address = server->GetLocalAddress();

    std::vector<Received> received;
    auto client = BindClient(loop, received);
    for (int i = 0; i < 60; ++i) {
      REQUIRE(client->Send(Bytes((i % 3 == 0   ? "q"
                                  : i % 3 == 1 ? "f"
                                               : "t") +
                                 std::to_string(i)),
                           server_address));
    }
    REQUIRE(testing::RunUntil(loop, [&] { return received.size() == 60; }));
    std::map<std::string, int> texts;
    for (const auto& r : received) {
      ++texts[r.text];
      CHECK(r.from == server_address);
    }
    CHECK(texts.size() == 60);
    CHECK(texts.count("echo:q0") == 1);
    CHECK(texts.count("fast:f1") == 1);
    CHECK(texts.count("echo:t2") == 1);  // the fast path threw: the loop answered
    CHECK(probe.calls == 60);
    CHECK_FALSE(probe.on_loop_thread);
    // The receiver thread counts a send once sendmmsg returns, which may be after the
    // client read the reply.
    REQUIRE(testing::RunUntil(loop, [&] { return server->stats().sent == 60; }));
    const UdpSocket::Stats stats = server->stats();
    CHECK(stats.received == 60);
    CHECK(stats.fast_answered == 20);
    CHECK(stats.handoff_dropped == 0);
  }
  testing::RequireClosesClean(loop);
}

TEST_CASE("A wildcard-bound receiver thread replies from the address the client queried",
          "[loop][udp]") {
  Loop loop;
  {
    UdpSocket* server_ptr = nullptr;
    auto server = BindEcho(loop, "0.0.0.0:0", server_ptr);
    FastPathProbe probe;
    std::string error;
    REQUIRE(server->StartReceiverThread(probe.Make(), &error));
    const uint16_t port = server->GetLocalAddress().port();
    std::vector<Received> received;
    auto client = BindClient(loop, received);
    auto target = GENERATE("127.0.0.2", "127.1.2.3");
    auto to = *SocketAddress::FromHostPort(target, port);
    REQUIRE(client->Send(Bytes("fast"), to));  // answered on the receiver thread
    REQUIRE(client->Send(Bytes("slow"), to));  // answered by the loop
    REQUIRE(testing::RunUntil(loop, [&] { return received.size() == 2; }));
    for (const auto& r : received) CHECK(r.from == to);
  }
  testing::RequireClosesClean(loop);
}

TEST_CASE("An inherited socket's receiver thread serves and stops without shutting it down",
          "[loop][udp]") {
  Loop loop;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(fd >= 0);
  auto bind_to = *SocketAddress::Parse("127.0.0.1:0");
  REQUIRE(bind(fd, bind_to.sockaddr_ptr(), bind_to.sockaddr_len()) == 0);
  const int kept = dup(fd);  // what a supervisor keeps for the next child
  REQUIRE(kept >= 0);
  const SocketAddress address = internal::LocalAddressOf(fd);
  {
    std::string error;
    UdpSocket* server_ptr = nullptr;
    UdpSocket::Options options;
    options.receiver_wake_ms = 20;
    auto server = UdpSocket::FromFd(
        loop, fd, SocketSharing{.inherited = Inherited::kYes}, options,
        [&](std::span<const uint8_t> d, const SocketAddress& peer,
            const UdpSocket::ReplyContext& ctx) { server_ptr->Send(d, peer, ctx); },
        &error);
    REQUIRE(server != nullptr);
    server_ptr = server.get();
    FastPathProbe probe;
    REQUIRE(server->StartReceiverThread(probe.Make(), &error));
    // Left non-blocking: the thread sleeps in poll, never in a recvmmsg that a kill -9
    // could end with datagrams taken from the socket's next owner.
    CHECK((fcntl(kept, F_GETFL) & O_NONBLOCK) != 0);
    std::vector<Received> received;
    auto client = BindClient(loop, received);
    REQUIRE(client->Send(Bytes("fast"), address));
    REQUIRE(client->Send(Bytes("loop"), address));
    REQUIRE(testing::RunUntil(loop, [&] { return received.size() == 2; }));
    CHECK(server->stats().fast_answered == 1);
    server.reset();  // joins the thread once it sees the stop request

    // The kept socket still receives: the next owner gets a working socket.
    REQUIRE(client->Send(Bytes("still there"), address));
    REQUIRE(testing::RunUntil(loop, [&] { return client->stats().sent == 3; }));
    char buffer[64];
    pollfd ready{.fd = kept, .events = POLLIN, .revents = 0};
    REQUIRE(poll(&ready, 1, 2000) == 1);
    const ssize_t n = recv(kept, buffer, sizeof(buffer), MSG_DONTWAIT);
    REQUIRE(n == 11);
    CHECK(std::string(buffer, 11) == "still there");
  }
  close(kept);
  testing::RequireClosesClean(loop);
}

TEST_CASE("UdpReceiverGroup lets one thread lead and hands the lead on", "[loop][udp]") {
  UdpReceiverGroup group;
  std::atomic<bool> stop{false};
  REQUIRE(group.Lead(stop));
  std::atomic<bool> follower_led{false};
  std::thread follower([&] { follower_led = group.Lead(stop); });  // waits for the lead
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(follower_led);
  group.StepDown();
  follower.join();
  CHECK(follower_led);
  // The follower kept the lead: another caller waits until it is stopped.
  std::atomic<bool> stopped{false};
  std::thread waiter([&] { stopped = !group.Lead(stop); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(stopped);
  stop = true;
  group.WakeAll();
  waiter.join();
  CHECK(stopped);
  CHECK_FALSE(group.Lead(stop));  // a stopped caller never leads
}

namespace {

// The calling thread leads; it hands the lead to a follower thread whose first batch holds
// `first_batch` datagrams out of 64. The follower keeps the lead when it ends, and the
// caller (synchronised with it by join) goes on in its place. Returns whether the follower
// would hand on after that batch. (No Catch macros on the follower thread: Catch is not
// thread-safe.)
bool HandOver(UdpReceiverGroup& group, const std::atomic<bool>& stop, size_t first_batch) {
  std::atomic<bool> led{false};
  std::atomic<bool> stepped{false};
  std::thread follower([&] {
    led = group.Lead(stop);
    if (led) stepped = group.ShouldStepDown(first_batch, 64);
  });
  while (group.followers() == 0) std::this_thread::yield();
  group.StepDown();
  follower.join();
  REQUIRE(led);
  return stepped;
}

}  // namespace

TEST_CASE("UdpReceiverGroup hands the lead on after a backlog and learns patience", "[loop][udp]") {
  UdpReceiverGroup group;
  std::atomic<bool> stop{false};
  REQUIRE(group.Lead(stop));
  CHECK(group.patience() == 1);
  CHECK_FALSE(group.ShouldStepDown(63, 64));  // not full: no backlog
  CHECK(group.ShouldStepDown(64, 64));        // full: hand on

  SECTION("a follower that finds less than a batch doubles the patience") {
    uint64_t handovers = group.handovers();
    for (uint32_t expected : {2U, 4U, 8U, 16U, 32U, 64U, 64U}) {
      CHECK_FALSE(HandOver(group, stop, 5));
      CHECK(group.handovers() == ++handovers);
      CHECK(group.patience() == expected);
    }
    // The leader (this thread again, in the follower's place) needs 64 full batches in a
    // row; a partial one starts the count again.
    for (int i = 0; i < 63; ++i) CHECK_FALSE(group.ShouldStepDown(64, 64));
    CHECK_FALSE(group.ShouldStepDown(10, 64));
    for (int i = 0; i < 63; ++i) CHECK_FALSE(group.ShouldStepDown(64, 64));
    CHECK(group.ShouldStepDown(64, 64));
    // A backlog after all: the next follower's full batch makes it 1 again, and it hands
    // on at once.
    CHECK(HandOver(group, stop, 64));
    CHECK(group.patience() == 1);
  }

  SECTION("a hand-over with nobody waiting judges nothing") {
    CHECK_FALSE(HandOver(group, stop, 1));
    CHECK(group.patience() == 2);
    const uint64_t handovers = group.handovers();
    group.StepDown();  // no follower: the leader comes back to the same queue
    REQUIRE(group.Lead(stop));
    CHECK(group.handovers() == handovers);
    CHECK_FALSE(group.ShouldStepDown(1, 64));
    CHECK(group.patience() == 2);
  }
}

TEST_CASE("Receiver threads on dups of one socket take turns and answer everything",
          "[loop][udp]") {
  // Dups of a socket bound here (DnsServer's shared sockets: receivers sleep in recvmmsg)
  // or of one inherited from a parent (receivers sleep in poll).
  const Inherited inherited = GENERATE(Inherited::kNo, Inherited::kYes);
  const SocketSharing sharing{.inherited = inherited,
                              .between_threads = SharedBetweenThreads::kYes};
  Loop loop;
  {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    REQUIRE(fd >= 0);
    auto bind_to = *SocketAddress::Parse("127.0.0.1:0");
    REQUIRE(bind(fd, bind_to.sockaddr_ptr(), bind_to.sockaddr_len()) == 0);
    const SocketAddress address = internal::LocalAddressOf(fd);
    const int kept = dup(fd);  // to look at the shared file description after the stop
    REQUIRE(kept >= 0);
    UdpSocket::Options options;
    options.receiver_wake_ms = 20;
    options.receiver_group = std::make_shared<UdpReceiverGroup>();
    std::string error;
    std::vector<std::unique_ptr<UdpSocket>> servers;
    std::vector<UdpSocket*> raw(3, nullptr);
    FastPathProbe probe;
    for (size_t i = 0; i < 3; ++i) {
      const int copy = i == 0 ? fd : dup(fd);
      servers.push_back(UdpSocket::FromFd(
          loop, copy, sharing, options,
          [&raw, i](std::span<const uint8_t> d, const SocketAddress& peer,
                    const UdpSocket::ReplyContext& ctx) { raw[i]->Send(d, peer, ctx); },
          &error));
      REQUIRE(servers.back() != nullptr);
      raw[i] = servers.back().get();
      REQUIRE(servers.back()->StartReceiverThread(probe.Make(), &error));
    }
    std::vector<Received> received;
    auto client = BindClient(loop, received);
    // Rounds of 30, so the socket's default receive buffer never overflows.
    for (int round = 0; round < 10; ++round) {
      for (int i = round * 30; i < round * 30 + 30; ++i) {
        REQUIRE(client->Send(Bytes((i % 2 == 0 ? "f" : "q") + std::to_string(i)), address));
      }
      REQUIRE(testing::RunUntil(loop, [&] { return received.size() == size_t(round) * 30 + 30; }));
    }
    std::map<std::string, int> texts;
    for (const auto& r : received) ++texts[r.text];
    CHECK(texts.size() == 300);
    uint64_t answered = 0;
    uint64_t fast = 0;
    for (const auto& server : servers) {
      answered += server->stats().received;
      fast += server->stats().fast_answered;
    }
    CHECK(answered == 300);
    CHECK(fast == 150);
    // Only an inherited socket is left non-blocking, for its receivers to sleep in poll.
    CHECK(((fcntl(kept, F_GETFL) & O_NONBLOCK) != 0) == (inherited == Inherited::kYes));
    servers.clear();  // every thread stops, the leader and the followers alike
    // None shut the socket down: a dup still receives.
    REQUIRE(client->Send(Bytes("still there"), address));
    pollfd ready{.fd = kept, .events = POLLIN, .revents = 0};
    REQUIRE(testing::RunUntil(loop, [&] { return poll(&ready, 1, 0) == 1; }));
    char buffer[64];
    CHECK(recv(kept, buffer, sizeof(buffer), MSG_DONTWAIT) == 11);
    close(kept);
  }
  testing::RequireClosesClean(loop);
}

TEST_CASE("Handoffs wait while receiving is paused; beyond the bound, datagrams wait in the socket",
          "[loop][udp]") {
  Loop loop;
  {
    std::string error;
    UdpSocket* server_ptr = nullptr;
    UdpSocket::Options options;
    options.max_handoff = 4;
    options.receive_buffer_bytes = 1 << 20;  // room in the socket for all of them
    auto server = UdpSocket::Bind(
        loop, *SocketAddress::Parse("127.0.0.1:0"), options,
        [&](std::span<const uint8_t> d, const SocketAddress& peer,
            const UdpSocket::ReplyContext& ctx) { server_ptr->Send(d, peer, ctx); },
        &error);
    REQUIRE(server != nullptr);
    server_ptr = server.get();
    FastPathProbe probe;
    REQUIRE(server->StartReceiverThread(probe.Make(), &error));
    server->PauseReceiving();
    std::vector<Received> received;
    auto client = BindClient(loop, received);
    constexpr int kQueries = 150;
    for (int i = 0; i < kQueries; ++i)
      REQUIRE(client->Send(Bytes("q" + std::to_string(i)), server->GetLocalAddress()));
    REQUIRE(client->Send(Bytes("fast last"), server->GetLocalAddress()));
    // Paused, nothing drains the queue: the receiver stops once it holds the bound (or one
    // whole batch) and a batch more; the rest, the fast one last among them, wait unread.
    REQUIRE(testing::RunUntil(loop, [&] { return server->stats().received >= 5; }));
    (void)testing::RunUntil(
        loop, [] { return false; }, 100);  // time to read on, if it would
    CHECK(server->stats().received <= 4 + 2 * UdpSocket::kBatchSize);
    CHECK(received.empty());
    CHECK(server->stats().handoff_dropped == 0);
    server->ResumeReceiving();
    REQUIRE(testing::RunUntil(loop, [&] { return received.size() == kQueries + 1; }));
    CHECK(server->stats().received == kQueries + 1);
    CHECK(server->stats().fast_answered == 1);
    CHECK(server->stats().handoff_dropped == 0);
    std::map<std::string, int> texts;
    for (const auto& r : received) ++texts[r.text];
    CHECK(texts.size() == kQueries + 1);
    CHECK(texts.count("fast:fast last") == 1);
  }
  testing::RequireClosesClean(loop);
}

}  // namespace
}  // namespace kdns::loop
