#include "common/loop/tcp_connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "common/loop/tcp_listener.h"

namespace kdns::loop {
namespace {

using CloseReason = TcpConnection::CloseReason;

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Echo server keeping its connections; records close reasons.
struct EchoServer {
  explicit EchoServer(Loop& loop, const TcpListener::Options& options = {}) {
    std::string error;
    listener = TcpListener::Bind(
        loop, *SocketAddress::Parse("127.0.0.1:0"), options,
        [this](std::unique_ptr<TcpConnection> c) { Accept(std::move(c)); }, &error);
    INFO(error);
    REQUIRE(listener != nullptr);
  }
  void Accept(std::unique_ptr<TcpConnection> c) {
    TcpConnection* raw = c.get();
    connections.push_back(std::move(c));
    TcpConnection::Callbacks callbacks;
    callbacks.on_data = [raw](std::span<const uint8_t> bytes) { (void)raw->Write(bytes); };
    callbacks.on_close = [this, raw](CloseReason reason) {
      reasons.push_back(reason);
      std::erase_if(connections, [raw](const auto& p) { return p.get() == raw; });
    };
    raw->Start(std::move(callbacks));
  }
  SocketAddress address() const { return listener->GetLocalAddress(); }
  // Runs `loop` until the first connection is accepted; returns it.
  TcpConnection& FirstConnection(Loop& loop) {
    REQUIRE(testing::RunUntil(loop, [&] { return connections.size() == 1; }));
    return *connections[0];
  }

  std::unique_ptr<TcpListener> listener;
  std::vector<std::unique_ptr<TcpConnection>> connections;
  std::vector<CloseReason> reasons;
};

TEST_CASE_METHOD(testing::LoopFixture, "TcpListener accepts and TcpConnection echoes",
                 "[loop][tcp]") {
  EchoServer server(loop);
  testing::RawTcpClient client(server.address());
  client.Send("hello");
  REQUIRE(testing::RunUntil(loop, [&] { return client.received() == "hello"; }));
  CHECK(server.listener->open_connections() == 1);
  CHECK(server.connections.at(0)->peer_address().HostString() == "127.0.0.1");
  client.ShutdownWrite();  // no on_eof: the FIN closes the connection
  REQUIRE(testing::RunUntil(loop, [&] { return !server.reasons.empty(); }));
  CHECK(server.reasons[0] == CloseReason::kPeerClosed);
  CHECK(server.listener->open_connections() == 0);
  CHECK(client.closed());
}

TEST_CASE_METHOD(testing::LoopFixture, "TcpListener closes connections over its cap at once",
                 "[loop][tcp]") {
  TcpListener::Options options;
  options.max_connections = 2;
  EchoServer server(loop, options);
  testing::RawTcpClient a(server.address()), b(server.address());
  REQUIRE(testing::RunUntil(loop, [&] { return server.connections.size() == 2; }));
  testing::RawTcpClient c(server.address());
  REQUIRE(testing::RunUntil(loop, [&] { return c.closed(); }));
  CHECK(server.listener->stats().rejected == 1);
  CHECK(server.connections.size() == 2);
  a.Send("still served");
  REQUIRE(testing::RunUntil(loop, [&] { return a.received() == "still served"; }));
  // A slot frees up when a connection closes.
  server.connections[1]->Close();
  REQUIRE(testing::RunUntil(loop, [&] { return server.connections.size() == 1; }));
  testing::RawTcpClient d(server.address());
  d.Send("in");
  REQUIRE(testing::RunUntil(loop, [&] { return d.received() == "in"; }));
  CHECK(server.listener->stats().accepted == 3);
}

TEST_CASE_METHOD(testing::LoopFixture, "An idle TcpConnection is closed after its idle timeout",
                 "[loop][tcp]") {
  TcpListener::Options options;
  options.connection.idle_timeout_ms = 50;
  EchoServer server(loop, options);
  testing::RawTcpClient client(server.address());
  client.Send("x");
  CHECK(testing::RunUntilClosed(loop, client) == "x");
  CHECK(testing::RunUntilFirstClose(loop, server) == CloseReason::kIdleTimeout);
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "TcpConnection refuses writes beyond its pending output bound", "[loop][tcp]") {
  TcpListener::Options options;
  options.connection.max_pending_output_bytes = 64 * 1024;
  EchoServer server(loop, options);
  testing::RawTcpClient client(server.address());
  client.ShrinkReceiveBuffer();
  TcpConnection& conn = server.FirstConnection(loop);
  // The client never reads: the kernel buffers fill, then the bound refuses.
  std::string chunk(16 * 1024, 'z');
  int accepted = 0;
  bool refused = false;
  for (int i = 0; i < 1000 && !refused; ++i) {
    if (conn.Write(Bytes(chunk))) {
      ++accepted;
    } else {
      refused = true;
    }
  }
  CHECK(refused);
  CHECK(conn.pending_output_bytes() <= options.connection.max_pending_output_bytes);
  CHECK(conn.is_open());  // refusing is the caller's signal; closing is its decision
}

TEST_CASE("A write over the shared output budget closes the connection; the budget comes back",
          "[loop][tcp]") {
  Loop loop;
  auto budget = std::make_shared<OutputBudget>(48 * 1024);
  {
    TcpListener::Options options;
    options.connection.max_pending_output_bytes = 1 << 20;  // the budget is the tighter bound
    options.connection.output_budget = budget;
    EchoServer server(loop, options);
    testing::RawTcpClient client(server.address());
    client.ShrinkReceiveBuffer();
    TcpConnection& conn = server.FirstConnection(loop);
    // The client never reads: the kernel buffers fill, then the budget refuses.
    std::string chunk(16 * 1024, 'z');
    bool refused = false;
    for (int i = 0; i < 1000 && !refused; ++i) {
      refused = !conn.Write(Bytes(chunk));
      CHECK(budget->used() <= budget->max_bytes());
    }
    REQUIRE(refused);
    CHECK_FALSE(conn.is_open());
    CHECK(testing::RunUntilFirstClose(loop, server) == CloseReason::kOutputTotal);
    // The queued writes were cancelled with the connection: nothing stays charged.
    REQUIRE(testing::RunUntil(loop, [&] { return budget->used() == 0; }));
  }
  testing::RequireClosesClean(loop);
}

TEST_CASE_METHOD(testing::LoopFixture, "CloseWhenFlushed sends pending output, then a FIN",
                 "[loop][tcp]") {
  EchoServer server(loop);
  testing::RawTcpClient client(server.address());
  REQUIRE(testing::RunUntil(loop, [&] { return server.connections.size() == 1; }));
  REQUIRE(server.connections[0]->Write(Bytes("bye")));
  server.connections[0]->CloseWhenFlushed();
  CHECK(testing::RunUntilClosed(loop, client) == "bye");
  CHECK(testing::RunUntilFirstClose(loop, server) == CloseReason::kFlushed);
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "TcpConnection::Connect reaches a listener and reports refusal", "[loop][tcp]") {
  EchoServer server(loop);
  std::string error;
  int status = 1;
  std::string received;
  auto conn = TcpConnection::Connect(
      loop, server.address(), TcpConnection::Options(), [&](int s) { status = s; }, &error);
  REQUIRE(conn != nullptr);
  REQUIRE(testing::RunUntil(loop, [&] { return status != 1; }));
  REQUIRE(status == 0);
  TcpConnection::Callbacks callbacks;
  callbacks.on_data = [&](std::span<const uint8_t> b) {
    received.append(reinterpret_cast<const char*>(b.data()), b.size());
  };
  conn->Start(std::move(callbacks));
  REQUIRE(conn->Write(Bytes("ping")));
  REQUIRE(testing::RunUntil(loop, [&] { return received == "ping"; }));
  CHECK(conn->GetLocalAddress().HostString() == "127.0.0.1");

  // A port nobody listens on: take one from a listener we then close.
  SocketAddress closed_port;
  {
    EchoServer gone(loop);
    closed_port = gone.address();
  }
  int refused_status = 1;
  auto refused = TcpConnection::Connect(
      loop, closed_port, TcpConnection::Options(), [&](int s) { refused_status = s; }, &error);
  REQUIRE(refused != nullptr);
  REQUIRE(testing::RunUntil(loop, [&] { return refused_status != 1; }));
  CHECK(refused_status == UV_ECONNREFUSED);
}

TEST_CASE_METHOD(testing::LoopFixture, "Destroying a connecting TcpConnection cancels the attempt",
                 "[loop][tcp]") {
  EchoServer server(loop);
  std::string error;
  bool called = false;
  auto conn = TcpConnection::Connect(
      loop, server.address(), TcpConnection::Options(), [&](int) { called = true; }, &error);
  REQUIRE(conn != nullptr);
  conn.reset();
  loop.RunNoWait();
  CHECK_FALSE(called);
}

TEST_CASE_METHOD(testing::LoopFixture, "TcpListener listens on an inherited listening fd",
                 "[loop][tcp]") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  auto bind_to = *SocketAddress::Parse("127.0.0.1:0");
  REQUIRE(bind(fd, bind_to.sockaddr_ptr(), bind_to.sockaddr_len()) == 0);
  REQUIRE(listen(fd, 16) == 0);
  std::string error;
  std::vector<std::unique_ptr<TcpConnection>> accepted;
  auto listener = TcpListener::FromFd(
      loop, fd, TcpListener::Options(),
      [&](std::unique_ptr<TcpConnection> c) { accepted.push_back(std::move(c)); }, &error);
  INFO(error);
  REQUIRE(listener != nullptr);
  CHECK(listener->fd() == fd);
  testing::RawTcpClient client(listener->GetLocalAddress());
  REQUIRE(testing::RunUntil(loop, [&] { return accepted.size() == 1; }));
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "A listener whose socket another holder shuts down stops; its connections stay",
                 "[loop][tcp]") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  auto bind_to = *SocketAddress::Parse("127.0.0.1:0");
  REQUIRE(bind(fd, bind_to.sockaddr_ptr(), bind_to.sockaddr_len()) == 0);
  REQUIRE(listen(fd, 16) == 0);
  const int held = dup(fd);  // the nanny's fd of the socket handed over
  std::string error;
  EchoServer server(loop);
  server.listener = TcpListener::FromFd(
      loop, fd, TcpListener::Options(),
      [&](std::unique_ptr<TcpConnection> c) { server.Accept(std::move(c)); }, &error);
  REQUIRE(server.listener != nullptr);
  const SocketAddress address = server.listener->GetLocalAddress();
  testing::RawTcpClient before(address);
  before.Send("a");
  REQUIRE(testing::RunUntil(loop, [&] { return before.received() == "a"; }));

  REQUIRE(shutdown(held, SHUT_RD) == 0);
  // libuv's accept loop sees EINVAL; without the stop it would spin in it for ever.
  REQUIRE(testing::RunUntil(loop, [&] { return !server.listener->listening(); }));
  CHECK(server.listener->stats().errors == 0);
  before.Send("b");  // the connection accepted before carries on
  REQUIRE(testing::RunUntil(loop, [&] { return before.received() == "ab"; }));
  // Nothing listens on the port now.
  const int late = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(connect(late, address.sockaddr_ptr(), address.sockaddr_len()) != 0);
  close(late);
  close(held);
}

TEST_CASE_METHOD(testing::LoopFixture, "Two TcpListeners share a port with SO_REUSEPORT",
                 "[loop][tcp]") {
  TcpListener::Options options;
  options.reuse_port = ReusePort::kYes;
  std::string error;
  auto noop = [](std::unique_ptr<TcpConnection>) {};
  auto first = TcpListener::Bind(loop, *SocketAddress::Parse("127.0.0.1:0"), options, noop, &error);
  REQUIRE(first != nullptr);
  auto second = TcpListener::Bind(loop, first->GetLocalAddress(), options, noop, &error);
  INFO(error);
  CHECK(second != nullptr);
  auto third =
      TcpListener::Bind(loop, first->GetLocalAddress(), TcpListener::Options(), noop, &error);
  CHECK(third == nullptr);
  CHECK_THAT(error, Catch::Contains("in use"));
}

}  // namespace
}  // namespace kdns::loop
