#include "common/server/dns_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <future>
#include <iterator>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/base/cpu_quota.h"
#include "common/dns/builder.h"
#include "common/dns/parser.h"
#include "common/dns/query_testing.h"
#include "common/limits/limits.h"
#include "common/loop/socket_util.h"
#include "common/loop/timer.h"
#include "common/server/server_test_util.h"

namespace kdns::server {
namespace {

using dns::testing::QuerySpec;
using testing::EchoFactory;
using testing::IdOf;
using testing::IsResponse;
using testing::TcpClient;
using testing::UdpClient;

DnsServer::Options LocalOptions(size_t threads) {
  DnsServer::Options options;
  options.listen_address = *loop::SocketAddress::Parse("127.0.0.1:0");
  options.threads = threads;
  options.tcp.idle_timeout_ms = 30'000;
  return options;
}

void RequireStart(DnsServer& server) {
  std::string error;
  bool started = server.Start(&error);
  INFO(error);
  REQUIRE(started);
}

void RequireStopsClean(DnsServer& server) {
  server.Stop();
  REQUIRE(server.closed_cleanly());
}

// Sends one query and checks the echo comes back.
void RequireUdpEcho(UdpClient& client, uint16_t id) {
  REQUIRE(client.Send(QuerySpec().Id(id).Bytes()));
  auto reply = client.Receive();
  REQUIRE(reply.has_value());
  CHECK(IdOf(*reply) == id);
  CHECK(IsResponse(*reply));
}

void RequireTcpEcho(TcpClient& client, uint16_t id) {
  REQUIRE(client.Send(QuerySpec().Id(id).Bytes()));
  auto reply = client.Receive();
  REQUIRE(reply.has_value());
  CHECK(IdOf(*reply) == id);
  CHECK(IsResponse(*reply));
}

size_t ThreadsThatServed(const DnsServer& server, uint64_t ServerStats::*counter) {
  size_t served = 0;
  for (size_t i = 0; i < server.thread_count(); ++i) {
    if (server.thread_stats(i).*counter > 0) ++served;
  }
  return served;
}

TEST_CASE("DnsServer answers UDP and TCP queries on several threads", "[server]") {
  const size_t threads = GENERATE(2, 4);
  DnsServer server(LocalOptions(threads), EchoFactory());
  RequireStart(server);
  CHECK(server.thread_count() == threads);
  REQUIRE(server.local_address().port() != 0);
  CHECK(server.tcp_address() == server.local_address());

  UdpClient udp(server.local_address());
  for (uint16_t id = 1; id <= 8; ++id) RequireUdpEcho(udp, id);
  TcpClient tcp(server.tcp_address());
  for (uint16_t id = 100; id < 103; ++id) RequireTcpEcho(tcp, id);

  CHECK(server.stats().tcp_open == 1);
  // Counters are final once the threads are joined (a client may see its reply a moment
  // before the serving thread counts it).
  RequireStopsClean(server);
  ServerStats s = server.stats();
  CHECK(s.udp_queries == 8);
  CHECK(s.udp_replies == 8);
  CHECK(s.tcp_queries == 3);
  CHECK(s.tcp_replies == 3);
  CHECK(s.tcp_accepted == 1);
  CHECK(s.unanswered == 0);
  CHECK(s.dropped_replies == 0);
  CHECK(server.stats().tcp_open == 0);
  CHECK(server.stats().udp_queries == 8);  // counters survive the threads
  CHECK(tcp.WaitClosed());
}

TEST_CASE("SO_REUSEPORT spreads many clients over the threads", "[server]") {
  DnsServer server(LocalOptions(4), EchoFactory());
  RequireStart(server);
  constexpr int kClients = 32;

  SECTION("UDP") {
    std::vector<std::unique_ptr<UdpClient>> clients;
    for (int i = 0; i < kClients; ++i) {
      clients.push_back(std::make_unique<UdpClient>(server.local_address()));
      REQUIRE(clients.back()->Send(QuerySpec().Id(static_cast<uint16_t>(i)).Bytes()));
    }
    for (int i = 0; i < kClients; ++i) {
      auto reply = clients[i]->Receive();
      REQUIRE(reply.has_value());
      CHECK(IdOf(*reply) == i);
    }
    CHECK(server.stats().udp_queries == kClients);
    // The kernel hashes the 4-tuple: 32 flows all on one of 4 threads would be a 4^-31 fluke.
    CHECK(ThreadsThatServed(server, &ServerStats::udp_queries) >= 2);
  }
  SECTION("TCP") {
    std::vector<std::unique_ptr<TcpClient>> clients;
    for (int i = 0; i < kClients; ++i) {
      clients.push_back(std::make_unique<TcpClient>(server.tcp_address()));
      REQUIRE(clients.back()->Send(QuerySpec().Id(static_cast<uint16_t>(i)).Bytes()));
    }
    for (int i = 0; i < kClients; ++i) {
      auto reply = clients[i]->Receive();
      REQUIRE(reply.has_value());
      CHECK(IdOf(*reply) == i);
    }
    CHECK(server.stats().tcp_accepted == kClients);
    CHECK(ThreadsThatServed(server, &ServerStats::tcp_accepted) >= 2);
  }
  RequireStopsClean(server);
}

// Answers every query 2 ms later, from a Timer on the serving thread: the shape of an
// asynchronous forwarder.
class DelayedEchoHandler : public QueryHandler {
 public:
  explicit DelayedEchoHandler(const ThreadContext& context) : context_(context) {}

  void HandleQuery(Request& request) override {
    auto pending = std::make_unique<Pending>(context_.loop);
    pending->query.assign(request.query().begin(), request.query().end());
    pending->responder = request.TakeResponder();
    pending_.push_back(std::move(pending));
    auto it = std::prev(pending_.end());
    (*it)->timer.Start(2, [this, it] {
      Pending& p = **it;
      p.responder.Reply(testing::EchoResponse(p.query, context_.response_buffer));
      pending_.erase(it);  // destroys the Timer from inside its callback, which it allows
    });
  }

 private:
  struct Pending {
    explicit Pending(loop::Loop& loop) : timer(loop) {}
    loop::Timer timer;
    std::vector<uint8_t> query;
    Responder responder;
  };

  const ThreadContext& context_;
  std::list<std::unique_ptr<Pending>> pending_;
};

TEST_CASE("DnsServer sends asynchronous replies from a Responder after a timer", "[server]") {
  DnsServer server(LocalOptions(2), [](const ThreadContext& context) {
    return std::make_unique<DelayedEchoHandler>(context);
  });
  RequireStart(server);

  UdpClient udp(server.local_address());
  for (uint16_t id = 1; id <= 8; ++id) REQUIRE(udp.Send(QuerySpec().Id(id).Bytes()));
  std::vector<uint16_t> udp_ids;
  for (int i = 0; i < 8; ++i) {
    auto reply = udp.Receive();
    REQUIRE(reply.has_value());
    udp_ids.push_back(IdOf(*reply));
  }
  std::sort(udp_ids.begin(), udp_ids.end());
  CHECK(udp_ids == std::vector<uint16_t>{1, 2, 3, 4, 5, 6, 7, 8});

  TcpClient tcp(server.tcp_address());
  std::vector<uint8_t> pipelined;
  for (uint16_t id = 11; id <= 14; ++id) {
    auto framed = TcpClient::Frame(QuerySpec().Id(id).Bytes());
    pipelined.insert(pipelined.end(), framed.begin(), framed.end());
  }
  REQUIRE(tcp.SendRaw(pipelined));
  std::vector<uint16_t> tcp_ids;
  for (int i = 0; i < 4; ++i) {
    auto reply = tcp.Receive();
    REQUIRE(reply.has_value());
    tcp_ids.push_back(IdOf(*reply));
  }
  std::sort(tcp_ids.begin(), tcp_ids.end());
  CHECK(tcp_ids == std::vector<uint16_t>{11, 12, 13, 14});

  RequireStopsClean(server);
  ServerStats s = server.stats();
  CHECK(s.udp_replies == 8);
  CHECK(s.tcp_replies == 4);
  CHECK(s.unanswered == 0);
}

TEST_CASE("DnsServer keeps serving TCP after the handler drops a query", "[server]") {
  DnsServer server(LocalOptions(2), [](const ThreadContext&) {
    return std::make_unique<testing::FunctionHandler>([](Request& request) {
      if (IdOf(request.query()) != 666) testing::ReplyEcho(request);
    });
  });
  RequireStart(server);
  TcpClient dropped(server.tcp_address());
  REQUIRE(dropped.Send(QuerySpec().Id(666).Bytes()));
  CHECK(dropped.WaitClosed());  // nothing else outstanding: closed at once
  TcpClient fine(server.tcp_address());
  RequireTcpEcho(fine, 1);
  UdpClient udp(server.local_address());
  REQUIRE(udp.Send(QuerySpec().Id(666).Bytes()));
  RequireUdpEcho(udp, 2);  // the reply to 666 would have come first
  RequireStopsClean(server);
  ServerStats s = server.stats();
  CHECK(s.unanswered == 2);
  CHECK(s.tcp_replies == 1);
  CHECK(s.udp_replies == 1);
}

// Waits (bounded) until the server's counter `field` reads `value`.
// A handler that keeps the Responder of every query with ID 666 (never answered: the query
// stays outstanding until the server stops) and echoes the rest.
std::unique_ptr<QueryHandler> HoldingQuery666(const ThreadContext&) {
  return std::make_unique<testing::FunctionHandler>(
      [held = std::make_shared<std::vector<Responder>>()](Request& request) {
        if (IdOf(request.query()) == 666) {
          held->push_back(request.TakeResponder());
        } else {
          (void)testing::ReplyEcho(request);
        }
      });
}

bool WaitStat(const DnsServer& server, uint64_t ServerStats::*field, uint64_t value) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (server.stats().*field != value) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST_CASE("At the process-wide TCP cap the oldest idle connection is closed for a new one",
          "[server]") {
  // One thread: each thread evicts among its own connections.
  DnsServer::Options options = LocalOptions(1);
  options.tcp.max_connections = 2;
  options.tcp.max_connections_per_source = 2;
  DnsServer server(options, EchoFactory());
  RequireStart(server);
  const uint64_t hits_before = limits::LimitHits(limits::Limit::kTcpConnections);
  TcpClient oldest(server.tcp_address());
  RequireTcpEcho(oldest, 1);
  TcpClient newer(server.tcp_address());
  RequireTcpEcho(newer, 2);
  RequireTcpEcho(oldest, 3);  // now `newer` has been idle longest
  TcpClient newest(server.tcp_address());
  RequireTcpEcho(newest, 4);  // served at the cap
  CHECK(newer.WaitClosed());
  RequireTcpEcho(oldest, 5);
  REQUIRE(WaitStat(server, &ServerStats::tcp_open, 2));
  RequireStopsClean(server);
  ServerStats s = server.stats();
  CHECK(s.tcp_accepted == 3);
  CHECK(s.tcp_rejected == 0);
  CHECK(s.tcp_evicted == 1);
  CHECK(limits::LimitHits(limits::Limit::kTcpConnections) - hits_before == 1);
}

TEST_CASE(
    "A TCP connection with a query outstanding is not idle: at the cap the same client's new "
    "one is refused",
    "[server]") {
  // Two threads: the cap is the process's, whichever thread accepts.
  DnsServer::Options options = LocalOptions(2);
  options.tcp.max_connections = 1;
  options.tcp.max_connections_per_source = 1;
  DnsServer server(options, HoldingQuery666);
  RequireStart(server);
  TcpClient busy(server.tcp_address());
  REQUIRE(busy.Send(QuerySpec().Id(666).Bytes()));
  REQUIRE(WaitStat(server, &ServerStats::tcp_queries, 1));  // delivered: busy, not idle
  for (int i = 0; i < 4; ++i) {
    TcpClient refused(server.tcp_address());
    CHECK(refused.WaitClosed());  // accepted by the kernel, closed at once by the server
  }
  CHECK_FALSE(busy.closed());
  RequireStopsClean(server);
  ServerStats s = server.stats();
  CHECK(s.tcp_accepted == 1);
  CHECK(s.tcp_rejected == 4);
  CHECK(s.tcp_evicted == 0);
}

TEST_CASE(
    "At the process-wide TCP cap a light client's new connection closes the oldest busy one "
    "of the client holding the most",
    "[server]") {
  // One thread: each thread evicts among its own connections.
  DnsServer::Options options = LocalOptions(1);
  options.tcp.max_connections = 4;
  options.tcp.max_connections_per_source = 4;
  DnsServer server(options, HoldingQuery666);
  RequireStart(server);
  const auto heavy = loop::SocketAddress::Parse("127.0.0.2:0");
  const uint64_t cap_hits = limits::LimitHits(limits::Limit::kTcpConnections);
  const uint64_t evicted_busy = limits::LimitHits(limits::Limit::kTcpEvictedInFlight);
  std::vector<std::unique_ptr<TcpClient>> holders;
  for (uint64_t i = 1; i <= 4; ++i) {
    holders.push_back(std::make_unique<TcpClient>(server.tcp_address(), heavy));
    REQUIRE(holders.back()->Send(QuerySpec().Id(666).Bytes()));
    REQUIRE(WaitStat(server, &ServerStats::tcp_queries, i));  // in order: the first is oldest
  }
  TcpClient light(server.tcp_address());
  RequireTcpEcho(light, 7);  // served at the cap
  CHECK(holders[0]->WaitClosed());
  for (size_t i = 1; i < holders.size(); ++i) CHECK_FALSE(holders[i]->closed());
  // The heavy client cannot take its slot back: it holds three, the light one one.
  TcpClient again(server.tcp_address(), heavy);
  CHECK(again.WaitClosed());
  RequireTcpEcho(light, 8);
  RequireStopsClean(server);
  ServerStats s = server.stats();
  CHECK(s.tcp_evicted == 1);
  CHECK(s.tcp_rejected == 1);
  CHECK(limits::LimitHits(limits::Limit::kTcpConnections) - cap_hits == 2);
  CHECK(limits::LimitHits(limits::Limit::kTcpEvictedInFlight) - evicted_busy == 1);
}

TEST_CASE(
    "At the per-source TCP cap that source's oldest idle connection is closed, not "
    "another client's",
    "[server]") {
  DnsServer::Options options = LocalOptions(1);
  options.tcp.max_connections = 10;
  options.tcp.max_connections_per_source = 2;
  DnsServer server(options, EchoFactory());
  RequireStart(server);
  const auto other_source = loop::SocketAddress::Parse("127.0.0.2:0");
  const uint64_t hits_before = limits::LimitHits(limits::Limit::kTcpConnectionsPerSource);
  TcpClient victim(server.tcp_address());  // 127.0.0.1, older than all the others
  RequireTcpEcho(victim, 1);
  TcpClient first(server.tcp_address(), other_source);
  RequireTcpEcho(first, 2);
  TcpClient second(server.tcp_address(), other_source);
  RequireTcpEcho(second, 3);
  TcpClient third(server.tcp_address(), other_source);
  RequireTcpEcho(third, 4);
  CHECK(first.WaitClosed());
  CHECK_FALSE(second.closed());
  RequireTcpEcho(victim, 5);  // still open and served
  RequireStopsClean(server);
  CHECK(server.stats().tcp_evicted == 1);
  CHECK(limits::LimitHits(limits::Limit::kTcpConnectionsPerSource) - hits_before == 1);
}

TEST_CASE("DnsServer fails to start with a clear error when the port is taken", "[server]") {
  int type = GENERATE(SOCK_DGRAM, SOCK_STREAM);
  int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  auto any_port = *loop::SocketAddress::Parse("127.0.0.1:0");
  REQUIRE(bind(fd, any_port.sockaddr_ptr(), any_port.sockaddr_len()) == 0);  // no REUSEPORT
  if (type == SOCK_STREAM) REQUIRE(listen(fd, 4) == 0);
  loop::SocketAddress taken = loop::internal::LocalAddressOf(fd);

  DnsServer::Options options = LocalOptions(2);
  options.listen_address = taken;
  DnsServer server(options, EchoFactory());
  std::string error;
  CHECK_FALSE(server.Start(&error));
  CHECK_THAT(error, Catch::Contains(taken.ToString()));
  CHECK_THAT(error, Catch::Contains("Address already in use"));
  CHECK_THAT(error, Catch::Contains(type == SOCK_DGRAM ? "UDP" : "TCP"));
  CHECK(error.find('\n') == std::string::npos);
  CHECK(server.thread_count() == 0);
  CHECK_FALSE(server.Post(0, [] {}));
  close(fd);
}

TEST_CASE("DnsServer does not join another SO_REUSEPORT group already on its port", "[server]") {
  // What an old instance of the server still running would hold.
  int type = GENERATE(SOCK_DGRAM, SOCK_STREAM);
  int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  int one = 1;
  REQUIRE(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == 0);
  auto any_port = *loop::SocketAddress::Parse("127.0.0.1:0");
  REQUIRE(bind(fd, any_port.sockaddr_ptr(), any_port.sockaddr_len()) == 0);
  if (type == SOCK_STREAM) REQUIRE(listen(fd, 4) == 0);
  loop::SocketAddress taken = loop::internal::LocalAddressOf(fd);

  DnsServer::Options options = LocalOptions(2);
  options.listen_address = taken;
  DnsServer server(options, EchoFactory());
  std::string error;
  CHECK_FALSE(server.Start(&error));
  CHECK_THAT(error, Catch::Contains("Address already in use"));
  close(fd);
}

TEST_CASE("DnsServer rejects a listen address that is not an IP address", "[server]") {
  DnsServer::Options options = LocalOptions(1);
  options.listen_address = loop::SocketAddress();
  DnsServer server(options, EchoFactory());
  std::string error;
  CHECK_FALSE(server.Start(&error));
  CHECK_THAT(error, Catch::Contains("not IPv4 or IPv6"));
}

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

TEST_CASE("DnsServer serves inherited sockets on every thread", "[server]") {
  const bool already_listening = GENERATE(false, true);
  int udp_fd = BoundSocket(SOCK_DGRAM, false);
  int tcp_fd = BoundSocket(SOCK_STREAM, already_listening);
  REQUIRE(udp_fd >= 0);
  REQUIRE(tcp_fd >= 0);
  loop::SocketAddress udp_address = loop::internal::LocalAddressOf(udp_fd);
  loop::SocketAddress tcp_address = loop::internal::LocalAddressOf(tcp_fd);

  DnsServer::Options options = LocalOptions(3);
  options.inherited = DnsServer::InheritedSockets{udp_fd, tcp_fd};
  DnsServer server(options, EchoFactory());
  RequireStart(server);  // consumes udp_fd and tcp_fd
  CHECK(server.thread_count() == 3);
  CHECK(server.local_address() == udp_address);
  CHECK(server.tcp_address() == tcp_address);

  for (uint16_t i = 0; i < 16; ++i) {
    UdpClient udp(udp_address);
    RequireUdpEcho(udp, i);
  }
  for (uint16_t i = 0; i < 8; ++i) {
    TcpClient tcp(tcp_address);
    RequireTcpEcho(tcp, i);
  }
  CHECK_FALSE(CanBind(SOCK_DGRAM, udp_address));
  RequireStopsClean(server);
  ServerStats s = server.stats();
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
  void HandleQuery(Request& request) override { (void)testing::ReplyEcho(request); }
  size_t AnswerOnReceiverThread(const Admission&, std::span<const uint8_t> query,
                                const loop::SocketAddress&, std::span<uint8_t> out,
                                Decision*) override {
    ++receiver_answers_;
    return testing::EchoResponse(query, out).size();
  }

 private:
  std::atomic<int>& receiver_answers_;
};

TEST_CASE("DnsServer serves one shared socket pair from every thread", "[server]") {
  const bool receiver_threads = GENERATE(false, true);
  INFO("receiver threads: " << receiver_threads);
  std::atomic<int> receiver_answers{0};
  DnsServer::Options options = LocalOptions(3);
  options.shared_sockets = true;
  options.udp.receiver_thread = receiver_threads;
  DnsServer server(options, [&](const ThreadContext&) {
    return std::make_unique<ReceiverEchoHandler>(receiver_answers);
  });
  RequireStart(server);
  const loop::SocketAddress address = server.local_address();
  CHECK(server.tcp_address() == address);
  CHECK(address.port() != 0);
  // One socket, not a SO_REUSEPORT group: nobody can join it.
  CHECK_FALSE(CanBind(SOCK_DGRAM, address));
  for (uint16_t i = 0; i < 32; ++i) {
    UdpClient udp(address);
    RequireUdpEcho(udp, i);
  }
  TcpClient tcp(address);
  RequireTcpEcho(tcp, 1);
  CHECK(receiver_answers == (receiver_threads ? 32 : 0));
  RequireStopsClean(server);
  const ServerStats s = server.stats();
  CHECK(s.udp_replies == 32);
  CHECK(s.udp_fast_answers == (receiver_threads ? 32 : 0));
  CHECK(s.tcp_replies == 1);
  CHECK(CanBind(SOCK_DGRAM, address));
  CHECK(CanBind(SOCK_STREAM, address));
}

TEST_CASE("DnsServer rejects only one inherited socket", "[server]") {
  int udp_fd = BoundSocket(SOCK_DGRAM, false);
  REQUIRE(udp_fd >= 0);
  loop::SocketAddress udp_address = loop::internal::LocalAddressOf(udp_fd);
  DnsServer::Options options = LocalOptions(2);
  options.inherited = DnsServer::InheritedSockets{udp_fd, -1};
  DnsServer server(options, EchoFactory());
  std::string error;
  CHECK_FALSE(server.Start(&error));
  CHECK_THAT(error, Catch::Contains("both"));
  // Consumed even so: nothing holds the port now.
  CHECK(CanBind(SOCK_DGRAM, udp_address));
}

// A client thread that sends UDP queries and reads replies until `done`. No Catch2 macros:
// they are not thread-safe.
void FloodUdp(const loop::SocketAddress& server, const std::atomic<bool>& done,
              std::atomic<uint64_t>& replies) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0 || connect(fd, server.sockaddr_ptr(), server.sockaddr_len()) != 0) return;
  std::vector<uint8_t> query = QuerySpec().Id(1).Bytes();
  uint8_t buf[512];
  while (!done.load()) {
    for (int i = 0; i < 8; ++i) (void)send(fd, query.data(), query.size(), 0);
    testing::WaitReadable(fd, 10);
    while (recv(fd, buf, sizeof(buf), 0) > 0) replies.fetch_add(1);
  }
  close(fd);
}

// The same over TCP, reconnecting after the server closes (and failing once it is gone).
void FloodTcp(const loop::SocketAddress& server, const std::atomic<bool>& done,
              std::atomic<uint64_t>& replies) {
  std::vector<uint8_t> framed = TcpClient::Frame(QuerySpec().Id(2).Bytes());
  uint8_t buf[512];
  while (!done.load()) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    if (connect(fd, server.sockaddr_ptr(), server.sockaddr_len()) == 0) {
      while (!done.load()) {
        if (send(fd, framed.data(), framed.size(), MSG_NOSIGNAL) <= 0) break;
        if (!testing::WaitReadable(fd, 100)) continue;
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n <= 0) break;
        replies.fetch_add(1);
      }
    }
    close(fd);
  }
}

TEST_CASE("DnsServer stops cleanly from another thread while queries are flowing", "[server]") {
  DnsServer server(LocalOptions(2), EchoFactory());
  RequireStart(server);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> udp_replies{0};
  std::atomic<uint64_t> tcp_replies{0};
  std::thread udp_client(FloodUdp, server.local_address(), std::cref(done), std::ref(udp_replies));
  std::thread tcp_client(FloodTcp, server.tcp_address(), std::cref(done), std::ref(tcp_replies));

  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((udp_replies.load() < 100 || tcp_replies.load() < 20) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  CHECK(udp_replies.load() >= 100);
  CHECK(tcp_replies.load() >= 20);
  std::thread stopper([&server] { server.Stop(); });
  stopper.join();
  done.store(true);
  udp_client.join();
  tcp_client.join();
  CHECK(server.closed_cleanly());
  ServerStats s = server.stats();
  CHECK(s.udp_queries >= udp_replies.load());
  CHECK(s.tcp_queries >= tcp_replies.load());
  CHECK(s.tcp_open == 0);
  server.Stop();  // idempotent
}

TEST_CASE("Post runs a task on the chosen serving thread", "[server]") {
  std::array<std::thread::id, 2> handler_threads;
  DnsServer server(LocalOptions(2), [&](const ThreadContext& context) {
    handler_threads.at(context.thread_index) = std::this_thread::get_id();
    return std::make_unique<testing::FunctionHandler>([](Request& r) { testing::ReplyEcho(r); });
  });
  RequireStart(server);
  CHECK(handler_threads[0] != handler_threads[1]);
  for (size_t i = 0; i < 2; ++i) {
    std::promise<std::thread::id> ran_on;
    REQUIRE(server.Post(i, [&ran_on] { ran_on.set_value(std::this_thread::get_id()); }));
    CHECK(ran_on.get_future().get() == handler_threads[i]);
  }
  CHECK_FALSE(server.Post(2, [] {}));
  RequireStopsClean(server);
  CHECK_FALSE(server.Post(0, [] {}));
}

TEST_CASE("DnsServer defaults to one thread per usable CPU", "[server]") {
  DnsServer server(LocalOptions(0), EchoFactory());
  RequireStart(server);
  CHECK(server.thread_count() == UsableCpus());
  RequireStopsClean(server);
}

TEST_CASE("DnsServer serves IPv6", "[server]") {
  int probe = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  auto v6 = *loop::SocketAddress::Parse("[::1]:0");
  bool have_v6 = probe >= 0 && bind(probe, v6.sockaddr_ptr(), v6.sockaddr_len()) == 0;
  if (probe >= 0) close(probe);
  if (!have_v6) {
    WARN("no IPv6 loopback here; skipped");
    return;
  }
  DnsServer::Options options = LocalOptions(2);
  options.listen_address = v6;
  DnsServer server(options, EchoFactory());
  RequireStart(server);
  CHECK(server.local_address().is_v6());
  UdpClient udp(server.local_address());
  RequireUdpEcho(udp, 1);
  TcpClient tcp(server.tcp_address());
  RequireTcpEcho(tcp, 2);
  RequireStopsClean(server);
}

// A real (if empty) DNS answer: NOERROR, AA, the question echoed, no records.
class EmptyAnswerHandler : public QueryHandler {
 public:
  void HandleQuery(Request& request) override {
    dns::Query query;
    if (dns::ParseQuery(request.query(), &query) != dns::ParseError::kOk) return;
    dns::MessageBuilder builder(request.response_buffer(), dns::kMaxUdpSizeWithoutEdns);
    if (builder.StartResponse(query) != dns::BuildError::kOk) return;
    builder.header().aa = true;
    request.Reply(builder.Finish());
  }
};

std::string RunCommand(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) output.append(buf, n);
  pclose(pipe);
  return output;
}

TEST_CASE("dig gets an answer from DnsServer over UDP and TCP", "[server]") {
  if (access("/usr/bin/dig", X_OK) != 0) {
    WARN("dig is not installed; skipped");
    return;
  }
  DnsServer server(LocalOptions(2),
                   [](const ThreadContext&) { return std::make_unique<EmptyAnswerHandler>(); });
  RequireStart(server);
  const std::string transport = GENERATE(std::string("+notcp"), std::string("+tcp"));
  std::string output =
      RunCommand("dig @127.0.0.1 -p " + std::to_string(server.local_address().port()) + " " +
                 transport + " +tries=1 +time=2 example. A 2>&1");
  INFO(output);
  CHECK_THAT(output, Catch::Contains("status: NOERROR"));
  CHECK_THAT(output, Catch::Contains("flags: qr aa rd"));
  CHECK_THAT(output, Catch::Contains("ANSWER: 0"));
  RequireStopsClean(server);
}

}  // namespace
}  // namespace kdns::server
