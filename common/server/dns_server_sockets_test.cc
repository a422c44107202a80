// Tests of the DnsServer serving sockets it is given (inherited fds: one pair for all
// threads, or a SO_REUSEPORT pair per thread; one shared socket pair bound here): served
// from every thread, one bad socket refused alone, and sharing only up to
// kMaxThreadsOnSharedSocket threads.

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/loop/socket_util.h"
#include "common/server/dns_server.h"
#include "common/server/server_test_util.h"

namespace kdns::server::testing {
namespace {

int BoundSocket(int type, bool listening) {
  int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  auto any_port = *loop::SocketAddress::Parse("127.0.0.1:0");
  if (fd < 0 || bind(fd, any_port.sockaddr_ptr(), any_port.sockaddr_len()) != 0) return -1;
  if (listening && listen(fd, 16) != 0) return -1;
  return fd;
}

// True if a fresh socket (without SO_REUSEPORT) can bind `address`: nothing serves it.
bool CanBind(int type, const loop::SocketAddress& address) {
  int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  int one = 1;
  // SO_REUSEADDR: closed server-side connections in TIME_WAIT must not count.
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  bool ok = bind(fd, address.sockaddr_ptr(), address.sockaddr_len()) == 0 &&
            (type == SOCK_DGRAM || listen(fd, 1) == 0);
  close(fd);
  return ok;
}

// True if a SO_REUSEPORT socket can bind UDP `address`: it serves a SO_REUSEPORT group (of
// ours, the same user), which the new socket would join. Closed at once.
bool CanJoinReusePortGroup(const loop::SocketAddress& address) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  const bool ok = bind(fd, address.sockaddr_ptr(), address.sockaddr_len()) == 0;
  close(fd);
  return ok;
}

TEST_CASE("DnsServer serves inherited sockets on every thread", "[server]") {
  const bool already_listening = GENERATE(false, true);
  int udp_fd = BoundSocket(SOCK_DGRAM, false);
  int tcp_fd = BoundSocket(SOCK_STREAM, already_listening);
  REQUIRE(udp_fd >= 0);
  REQUIRE(tcp_fd >= 0);
  loop::SocketAddress udp_address = loop::internal::LocalAddressOf(udp_fd);
  loop::SocketAddress tcp_address = loop::internal::LocalAddressOf(tcp_fd);

  DnsServer::Options options = LocalOptions(3);
  options.inherited = {DnsServer::InheritedSockets{udp_fd, tcp_fd}};
  DnsServer server(options, EchoFactory());
  RequireStart(server);  // consumes udp_fd and tcp_fd
  CHECK(server.thread_count() == 3);
  CHECK(server.local_address() == udp_address);
  CHECK(server.tcp_address() == tcp_address);

  for (uint16_t i = 0; i < 16; ++i) {
    UdpClient udp(udp_address);
    RequireEcho(udp, i);
  }
  for (uint16_t i = 0; i < 8; ++i) {
    TcpClient tcp(tcp_address);
    RequireEcho(tcp, i);
  }
  CHECK_FALSE(CanBind(SOCK_DGRAM, udp_address));
  ServerStats s = RequireStopsClean(server);
  CHECK(s.udp_replies == 16);
  CHECK(s.tcp_replies == 8);
  // Every dup and the originals are closed: the ports are free again.
  CHECK(CanBind(SOCK_DGRAM, udp_address));
  CHECK(CanBind(SOCK_STREAM, tcp_address));
}

// Answers every UDP query on the receiver thread (an echo) and counts where answers came
// from; TCP goes to HandleQuery.
class ReceiverEchoHandler : public QueryHandler {
 public:
  explicit ReceiverEchoHandler(std::atomic<int>& receiver_answers)
      : receiver_answers_(receiver_answers) {}
  void HandleQuery(Request& request) override { (void)ReplyEcho(request); }
  size_t AnswerOnReceiverThread(const Admission&, std::span<const uint8_t> query,
                                const loop::SocketAddress&, std::span<uint8_t> out,
                                Decision*) override {
    ++receiver_answers_;
    return EchoResponse(query, out).size();
  }

 private:
  std::atomic<int>& receiver_answers_;
};

constexpr int kClients = 32;

// Starts a DnsServer with Options::shared_sockets on `threads` threads, answering UDP on
// their receiver threads (with `receiver_threads`), counted in `receiver_answers`.
std::unique_ptr<DnsServer> StartShared(size_t threads, bool receiver_threads,
                                       std::atomic<int>& receiver_answers) {
  DnsServer::Options options = LocalOptions(threads);
  options.shared_sockets = true;
  options.udp.receiver_thread = receiver_threads;
  auto server = std::make_unique<DnsServer>(options, [&receiver_answers](const ThreadContext&) {
    return std::make_unique<ReceiverEchoHandler>(receiver_answers);
  });
  RequireStart(*server);
  return server;
}

// kClients UDP queries, each from a client (a port) of its own, and one over TCP.
void EchoFromManyClients(const loop::SocketAddress& address) {
  for (uint16_t i = 0; i < kClients; ++i) {
    UdpClient udp(address);
    RequireEcho(udp, i);
  }
  TcpClient tcp(address);
  RequireEcho(tcp, 1);
}

TEST_CASE("DnsServer serves one shared socket pair from every thread", "[server]") {
  const bool receiver_threads = GENERATE(false, true);
  INFO("receiver threads: " << receiver_threads);
  std::atomic<int> receiver_answers{0};
  auto server =
      StartShared(DnsServer::kMaxThreadsOnSharedSocket, receiver_threads, receiver_answers);
  const loop::SocketAddress address = server->local_address();
  CHECK(server->tcp_address() == address);
  CHECK(address.port() != 0);
  // One socket, not a SO_REUSEPORT group: nobody can join it.
  CHECK_FALSE(CanBind(SOCK_DGRAM, address));
  CHECK_FALSE(CanJoinReusePortGroup(address));
  EchoFromManyClients(address);
  CHECK(receiver_answers == (receiver_threads ? kClients : 0));
  const ServerStats s = RequireStopsClean(*server);
  CHECK(s.udp_replies == kClients);
  CHECK(s.udp_fast_answers == (receiver_threads ? kClients : 0));
  CHECK(s.tcp_replies == 1);
  CHECK(CanBind(SOCK_DGRAM, address));
  CHECK(CanBind(SOCK_STREAM, address));
}

// One socket is one receive queue that every thread's receiver reads in turn: past two
// threads it caps throughput (DnsServer, "Sockets"), so more threads bind a SO_REUSEPORT
// pair each, and the kernel spreads clients over them.
TEST_CASE("Past kMaxThreadsOnSharedSocket threads, shared sockets become a socket per thread",
          "[server]") {
  std::atomic<int> receiver_answers{0};
  auto server = StartShared(DnsServer::kMaxThreadsOnSharedSocket + 2, true, receiver_answers);
  const loop::SocketAddress address = server->local_address();
  CHECK(server->tcp_address() == address);
  CHECK_FALSE(CanBind(SOCK_DGRAM, address));
  EchoFromManyClients(address);
  CHECK(receiver_answers == kClients);
  // 32 flows hashed over 4 sockets all on one would be a 4^-31 fluke; on one shared
  // socket, this light load would stay with its first leader.
  CHECK(ThreadsThatServed(*server, &ServerStats::udp_fast_answers) >= 2);
  CHECK(CanJoinReusePortGroup(address));
  CHECK(RequireStopsClean(*server).udp_fast_answers == kClients);
  CHECK(CanBind(SOCK_DGRAM, address));
  CHECK(CanBind(SOCK_STREAM, address));
}

// A supervisor's SO_REUSEPORT group of `pairs` UDP and TCP pairs on one port (the nanny
// hands one per thread past kMaxThreadsOnSharedSocket: DnsServer::InheritedPairsFor).
std::vector<DnsServer::InheritedSockets> ReusePortPairs(size_t pairs,
                                                        loop::SocketAddress* address) {
  std::string error;
  std::optional<loop::SocketAddress> claimed =
      loop::ClaimAddress(*loop::SocketAddress::Parse("127.0.0.1:0"), &error);
  REQUIRE(claimed);
  std::vector<DnsServer::InheritedSockets> out;
  for (size_t i = 0; i < pairs; ++i) {
    DnsServer::InheritedSockets pair;
    pair.udp_fd =
        loop::internal::CreateBoundSocket(SOCK_DGRAM, *claimed, loop::ReusePort::kYes, &error);
    pair.tcp_fd =
        loop::internal::CreateBoundSocket(SOCK_STREAM, *claimed, loop::ReusePort::kYes, &error);
    REQUIRE(pair.udp_fd >= 0);
    REQUIRE(pair.tcp_fd >= 0);
    REQUIRE(listen(pair.tcp_fd, 16) == 0);
    out.push_back(pair);
  }
  *address = *claimed;
  return out;
}

TEST_CASE("DnsServer serves an inherited pair per thread, one thread per pair", "[server]") {
  const bool receiver_threads = GENERATE(false, true);
  INFO("receiver threads: " << receiver_threads);
  constexpr size_t kPairs = 4;
  loop::SocketAddress address;
  DnsServer::Options options = LocalOptions(2);  // the pairs decide: every socket is served
  options.inherited = ReusePortPairs(kPairs, &address);
  options.udp.receiver_thread = receiver_threads;
  std::atomic<int> receiver_answers{0};
  DnsServer server(options, [&receiver_answers](const ThreadContext&) {
    return std::make_unique<ReceiverEchoHandler>(receiver_answers);
  });
  RequireStart(server);
  CHECK(server.thread_count() == kPairs);
  CHECK(server.local_address() == address);
  EchoFromManyClients(address);
  // The kernel spreads the flows over the group: every socket's thread answers some (a
  // thread left without its pair would lose a quarter of them: RequireEcho would fail).
  CHECK(ThreadsThatServed(server, &ServerStats::udp_replies) >= 2);
  const ServerStats s = RequireStopsClean(server);
  CHECK(s.udp_replies == kClients);
  CHECK(s.tcp_replies == 1);
  CHECK(receiver_answers == (receiver_threads ? kClients : 0));
  // Every dup and the originals are closed: the port is free again.
  CHECK(CanBind(SOCK_DGRAM, address));
  CHECK(CanBind(SOCK_STREAM, address));
}

TEST_CASE("DnsServer rejects only one inherited socket", "[server]") {
  int udp_fd = BoundSocket(SOCK_DGRAM, false);
  REQUIRE(udp_fd >= 0);
  loop::SocketAddress udp_address = loop::internal::LocalAddressOf(udp_fd);
  DnsServer::Options options = LocalOptions(2);
  options.inherited = {DnsServer::InheritedSockets{udp_fd, -1}};
  DnsServer server(options, EchoFactory());
  std::string error;
  CHECK_FALSE(server.Start(&error));
  CHECK_THAT(error, Catch::Contains("both"));
  // Consumed even so: nothing holds the port now.
  CHECK(CanBind(SOCK_DGRAM, udp_address));
}

}  // namespace
}  // namespace kdns::server::testing
