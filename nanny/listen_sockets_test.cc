#include "nanny/listen_sockets.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <vector>

#include "common/loop/socket_util.h"

namespace kdns::nanny {
namespace {

int SocketType(int fd) {
  int type = 0;
  socklen_t len = sizeof(type);
  REQUIRE(getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0);
  return type;
}

bool Listening(int fd) {
  int on = 0;
  socklen_t len = sizeof(on);
  REQUIRE(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0);
  return on != 0;
}

bool ReusePort(int fd) {
  int on = 0;
  socklen_t len = sizeof(on);
  REQUIRE(getsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, &len) == 0);
  return on != 0;
}

int ReceiveBuffer(int fd) {
  int size = 0;
  socklen_t len = sizeof(size);
  REQUIRE(getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, &len) == 0);
  return size;
}

}  // namespace

TEST_CASE("one UDP and one listening TCP socket per address, on the same port", "[nanny]") {
  ListenSockets sockets;
  std::string error;
  REQUIRE(sockets.Bind(
      {*loop::SocketAddress::Parse("127.0.0.1:0"), *loop::SocketAddress::Parse("127.0.0.2:0")},
      &error));
  REQUIRE(sockets.fds().size() == 4);
  REQUIRE(sockets.addresses().size() == 2);
  CHECK(SocketType(sockets.fds()[0]) == SOCK_DGRAM);
  CHECK(SocketType(sockets.fds()[1]) == SOCK_STREAM);
  CHECK(SocketType(sockets.fds()[2]) == SOCK_DGRAM);
  CHECK(Listening(sockets.fds()[1]));
  CHECK(Listening(sockets.fds()[3]));
  CHECK(sockets.addresses()[0].port() != 0);
  CHECK(sockets.addresses()[0].HostString() == "127.0.0.1");
  // The receive buffer was raised above Linux's usual 208 KiB default.
  CHECK(sockets.udp_receive_buffer_bytes() > 212992);

  SECTION("a port already held is a start-up error, and nothing stays bound") {
    ListenSockets again;
    CHECK_FALSE(again.Bind({sockets.addresses()[0]}, &error));
    CHECK_THAT(error, Catch::StartsWith("bind 127.0.0.1:"));
    CHECK_THAT(error, Catch::EndsWith("(udp): Address already in use"));
    CHECK(again.fds().empty());
  }
  SECTION("moving hands the fds over") {
    ListenSockets moved = std::move(sockets);
    CHECK(moved.fds().size() == 4);
    CHECK(sockets.fds().empty());  // NOLINT(bugprone-use-after-move): checking the move
  }
}

TEST_CASE("node-local sockets bind addresses the node does not hold yet", "[nanny]") {
  // 192.0.2.77 and 2001:db8::77 (documentation ranges) are on no interface.
  const std::vector<loop::SocketAddress> absent = {*loop::SocketAddress::Parse("192.0.2.77:0"),
                                                   *loop::SocketAddress::Parse("[2001:db8::77]:0")};
  std::string error;
  ListenSockets strict;
  CHECK_FALSE(strict.Bind({absent[0]}, &error));
  CHECK_THAT(error, Catch::EndsWith("(udp): Cannot assign requested address"));
  ListenSockets free;
  REQUIRE(free.Bind(absent, &error, BindFor::kNodeLocal));
  CHECK(free.fds().size() == 4);
  CHECK(free.addresses()[1].HostString() == "2001:db8::77");
}

TEST_CASE("the next node cache binds the addresses the running one holds", "[nanny]") {
  // A DaemonSet update with maxSurge: both node caches hold 53 on the node's addresses.
  std::string error;
  ListenSockets running;
  REQUIRE(running.Bind({*loop::SocketAddress::Parse("127.0.0.1:0")}, &error, BindFor::kNodeLocal));
  const loop::SocketAddress held = running.addresses()[0];
  ListenSockets next;
  REQUIRE(next.Bind({held}, &error, BindFor::kNodeLocal));
  CHECK(next.addresses()[0].port() == held.port());
  // A Deployment pod's sockets are its own.
  ListenSockets pod;
  CHECK_FALSE(pod.Bind({held}, &error));
  CHECK_THAT(error, Catch::EndsWith("Address already in use"));
}

TEST_CASE("a node cache that leaves the group gets no new datagram; its queue stays readable",
          "[nanny]") {
  std::string error;
  ListenSockets old_cache;
  REQUIRE(
      old_cache.Bind({*loop::SocketAddress::Parse("127.0.0.1:0")}, &error, BindFor::kNodeLocal));
  const loop::SocketAddress held = old_cache.addresses()[0];
  ListenSockets next_cache;
  REQUIRE(next_cache.Bind({held}, &error, BindFor::kNodeLocal));
  auto send_some = [&](int count) {
    for (int i = 0; i < count; ++i) {
      // One source port per datagram, as many clients: the kernel spreads them over the group.
      const int from = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      REQUIRE(sendto(from, "q", 1, 0, held.sockaddr_ptr(), held.sockaddr_len()) == 1);
      close(from);
    }
  };
  auto queued = [](int fd) {
    int count = 0;
    char byte;
    while (recv(fd, &byte, 1, MSG_DONTWAIT) == 1) ++count;
    return count;
  };
  send_some(64);
  const int old_before = queued(old_cache.fds()[0]);
  const int next_before = queued(next_cache.fds()[0]);
  CHECK(old_before + next_before == 64);
  CHECK(old_before > 0);  // both shared the queries
  send_some(8);           // queued at the old one before it leaves
  const ListenSockets::Left left = old_cache.LeaveReusePortGroup();
  CHECK(left.udp == 1);
  CHECK(left.tcp == 1);
  send_some(64);
  const int old_after = queued(old_cache.fds()[0]);
  CHECK(queued(next_cache.fds()[0]) + old_after == 64 + 8);
  CHECK(old_after <= 8);  // only what was queued before it left

  // TCP: every new connection reaches the next node cache's listener; the old one's no
  // longer listens (its holders' accept fails, and loop::TcpListener stops).
  std::vector<int> clients;
  for (int i = 0; i < 16; ++i) {
    const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(connect(client, held.sockaddr_ptr(), held.sockaddr_len()) == 0);
    clients.push_back(client);
  }
  int accepted = 0;
  pollfd next_listener{.fd = next_cache.fds()[1], .events = POLLIN, .revents = 0};
  while (poll(&next_listener, 1, accepted < 16 ? 2000 : 0) == 1) {
    const int connection = accept4(next_cache.fds()[1], nullptr, nullptr, SOCK_NONBLOCK);
    REQUIRE(connection >= 0);
    ++accepted;
    close(connection);
  }
  CHECK(accepted == 16);
  CHECK(accept4(old_cache.fds()[1], nullptr, nullptr, SOCK_NONBLOCK) < 0);
  CHECK(errno == EINVAL);
  for (int client : clients) close(client);
}

TEST_CASE("a child on more threads gets a SO_REUSEPORT pair per thread on each address",
          "[nanny]") {
  constexpr size_t kPairs = 4;
  const BindFor bind_for = GENERATE(BindFor::kPod, BindFor::kNodeLocal);
  INFO("node-local: " << (bind_for == BindFor::kNodeLocal));
  ListenSockets sockets;
  std::string error;
  REQUIRE(sockets.Bind(
      {*loop::SocketAddress::Parse("127.0.0.1:0"), *loop::SocketAddress::Parse("127.0.0.2:0")},
      &error, bind_for, kPairs));
  REQUIRE(sockets.fds().size() == 2 * 2 * kPairs);
  REQUIRE(sockets.addresses().size() == 2);
  CHECK(sockets.pairs_per_address() == kPairs);
  for (size_t i = 0; i < sockets.fds().size(); ++i) {
    const int fd = sockets.fds()[i];
    INFO("fd " << i);
    CHECK(SocketType(fd) == (i % 2 == 0 ? SOCK_DGRAM : SOCK_STREAM));
    CHECK(ReusePort(fd));
    if (i % 2 == 1) CHECK(Listening(fd));
    // The pairs of an address come together, all on its port.
    const loop::SocketAddress& address = sockets.addresses()[i / (2 * kPairs)];
    CHECK(loop::internal::LocalAddressOf(fd) == address);
  }
  CHECK(sockets.addresses()[0].port() != 0);
  // The 8 MiB per address is split over the group's kPairs sockets, not multiplied by it;
  // the kernel reports twice what was asked.
  constexpr int kKernelReportsTwice = 2;
  CHECK(ReceiveBuffer(sockets.fds()[0]) <=
        kKernelReportsTwice * ListenSockets::kReceiveBufferBytes / static_cast<int>(kPairs));
  CHECK(ReceiveBuffer(sockets.fds()[0]) >= ListenSockets::kMinReceiveBufferBytes);

  SECTION("every UDP socket of the group leaves it") {
    const ListenSockets::Left left = sockets.LeaveReusePortGroup();
    CHECK(left.udp == static_cast<int>(2 * kPairs));
    CHECK(left.tcp == static_cast<int>(2 * kPairs));
  }
}

TEST_CASE("a pod's group is its own: a port held by anyone is a start-up error", "[nanny]") {
  std::string error;
  ListenSockets first;
  REQUIRE(first.Bind({*loop::SocketAddress::Parse("127.0.0.1:0")}, &error, BindFor::kPod, 4));
  const loop::SocketAddress held = first.addresses()[0];
  // A second nanny (same user) would silently join the group with SO_REUSEPORT alone.
  ListenSockets second;
  CHECK_FALSE(second.Bind({held}, &error, BindFor::kPod, 4));
  CHECK_THAT(error, Catch::Contains("Address already in use"));
  CHECK(second.fds().empty());
  ListenSockets plain;
  CHECK_FALSE(plain.Bind({held}, &error));
}

}  // namespace kdns::nanny
