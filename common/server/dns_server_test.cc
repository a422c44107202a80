// Tests of the DnsServer (common/server/dns_server.h): queries served on several threads,
// asynchronous replies, start-up failures, stopping from another thread, Post, IPv6, and dig.
// The process-wide TCP caps and inherited sockets have their own dns_server_*_test.cc.

#include "common/server/dns_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <future>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/base/cpu_quota.h"
#include "common/dns/builder.h"
#include "common/dns/query_testing.h"
#include "common/loop/socket_util.h"
#include "common/loop/timer.h"
#include "common/server/server_test_util.h"
#include "test/support/skip.h"

namespace kdns::server::testing {
namespace {

using dns::testing::QuerySpec;

TEST_CASE("DnsServer answers UDP and TCP queries on several threads", "[server]") {
  const size_t threads = GENERATE(2, 4);
  DnsServer server(LocalOptions(threads), EchoFactory());
  RequireStart(server);
  CHECK(server.thread_count() == threads);
  REQUIRE(server.local_address().port() != 0);
  CHECK(server.tcp_address() == server.local_address());

  UdpClient udp(server.local_address());
  for (uint16_t id = 1; id <= 8; ++id) RequireEcho(udp, id);
  TcpClient tcp(server.tcp_address());
  for (uint16_t id = 100; id < 103; ++id) RequireEcho(tcp, id);

  CHECK(server.stats().tcp_open == 1);
  // Counters are final once the threads are joined (a client may see its reply a moment
  // before the serving thread counts it).
  ServerStats s = RequireStopsClean(server);
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

// Sends one query from each of `count` clients at once (IDs 0, 1, ...), then checks every echo.
template <class Client>
void RequireEchoesToClients(const loop::SocketAddress& server, int count) {
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < count; ++i) {
    clients.push_back(std::make_unique<Client>(server));
    REQUIRE(clients.back()->Send(QuerySpec().Id(static_cast<uint16_t>(i)).Bytes()));
  }
  for (int i = 0; i < count; ++i) {
    auto reply = clients[i]->Receive();
    REQUIRE(reply.has_value());
    CHECK(IdOf(*reply) == i);
  }
}

TEST_CASE("SO_REUSEPORT spreads many clients over the threads", "[server]") {
  DnsServer server(LocalOptions(4), EchoFactory());
  RequireStart(server);
  constexpr int kClients = 32;

  SECTION("UDP") {
    RequireEchoesToClients<UdpClient>(server.local_address(), kClients);
    CHECK(server.stats().udp_queries == kClients);
    // The kernel hashes the 4-tuple: 32 flows all on one of 4 threads would be a 4^-31 fluke.
    CHECK(ThreadsThatServed(server, &ServerStats::udp_queries) >= 2);
  }
  SECTION("TCP") {
    RequireEchoesToClients<TcpClient>(server.tcp_address(), kClients);
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
      p.responder.Reply(EchoResponse(p.query, context_.response_buffer));
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

  ServerStats s = RequireStopsClean(server);
  CHECK(s.udp_replies == 8);
  CHECK(s.tcp_replies == 4);
  CHECK(s.unanswered == 0);
}

TEST_CASE("DnsServer keeps serving TCP after the handler drops a query", "[server]") {
  DnsServer server(LocalOptions(2), [](const ThreadContext&) {
    return std::make_unique<FunctionHandler>([](Request& request) {
      if (IdOf(request.query()) != 666) ReplyEcho(request);
    });
  });
  RequireStart(server);
  TcpClient dropped(server.tcp_address());
  REQUIRE(dropped.Send(QuerySpec().Id(666).Bytes()));
  CHECK(dropped.WaitClosed());  // nothing else outstanding: closed at once
  TcpClient fine(server.tcp_address());
  RequireEcho(fine, 1);
  UdpClient udp(server.local_address());
  REQUIRE(udp.Send(QuerySpec().Id(666).Bytes()));
  RequireEcho(udp, 2);  // the reply to 666 would have come first
  ServerStats s = RequireStopsClean(server);
  CHECK(s.unanswered == 2);
  CHECK(s.tcp_replies == 1);
  CHECK(s.udp_replies == 1);
}

// A socket of `type` (SOCK_DGRAM or SOCK_STREAM, listening) on a free loopback port, as another
// process would hold it; in an SO_REUSEPORT group with `reuse_port` (an old instance of the
// server still running). The caller closes it.
int HoldPort(int type, loop::ReusePort reuse_port) {
  const int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  if (reuse_port == loop::ReusePort::kYes) {
    int one = 1;
    REQUIRE(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == 0);
  }
  const auto any_port = *loop::SocketAddress::Parse("127.0.0.1:0");
  REQUIRE(bind(fd, any_port.sockaddr_ptr(), any_port.sockaddr_len()) == 0);
  if (type == SOCK_STREAM) REQUIRE(listen(fd, 4) == 0);
  return fd;
}

// A two-thread DnsServer's options for `address`.
DnsServer::Options OptionsOn(const loop::SocketAddress& address) {
  DnsServer::Options options = LocalOptions(2);
  options.listen_address = address;
  return options;
}

TEST_CASE("DnsServer fails to start with a clear error when the port is taken", "[server]") {
  int type = GENERATE(SOCK_DGRAM, SOCK_STREAM);
  const int fd = HoldPort(type, loop::ReusePort::kNo);
  const loop::SocketAddress taken = loop::internal::LocalAddressOf(fd);
  DnsServer server(OptionsOn(taken), EchoFactory());
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
  const int fd = HoldPort(type, loop::ReusePort::kYes);
  DnsServer server(OptionsOn(loop::internal::LocalAddressOf(fd)), EchoFactory());
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
    WaitReadable(fd, 10);
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
        if (!WaitReadable(fd, 100)) continue;
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
    return std::make_unique<FunctionHandler>([](Request& r) { ReplyEcho(r); });
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

TEST_CASE("DnsServer defaults to one thread per usable CPU, at most 8 without a CPU limit",
          "[server]") {
  DnsServer server(LocalOptions(0), EchoFactory());
  RequireStart(server);
  CHECK(server.thread_count() == DefaultThreads().threads);
  RequireStopsClean(server);
}

TEST_CASE("a program's thread flag is honoured above the default's cap; 0 takes the default",
          "[server]") {
  CHECK(ServingThreads(64, "--threads") == 64);
  CHECK(ServingThreads(3, "--dns-threads") == 3);
  CHECK(ServingThreads(0, "--threads") == DefaultThreads().threads);
}

TEST_CASE("DnsServer serves IPv6", "[server]") {
  int probe = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  auto v6 = *loop::SocketAddress::Parse("[::1]:0");
  bool have_v6 = probe >= 0 && bind(probe, v6.sockaddr_ptr(), v6.sockaddr_len()) == 0;
  if (probe >= 0) close(probe);
  if (!have_v6) {
    kdns::testing::SkipTest("no IPv6 loopback here", kdns::testing::Provided::kNo);
    return;
  }
  DnsServer::Options options = LocalOptions(2);
  options.listen_address = v6;
  DnsServer server(options, EchoFactory());
  RequireStart(server);
  CHECK(server.local_address().is_v6());
  UdpClient udp(server.local_address());
  RequireEcho(udp, 1);
  TcpClient tcp(server.tcp_address());
  RequireEcho(tcp, 2);
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
    kdns::testing::SkipTest("dig is not installed (apt-get install bind9-dnsutils)",
                            kdns::testing::Provided::kByInstall);
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
}  // namespace kdns::server::testing
