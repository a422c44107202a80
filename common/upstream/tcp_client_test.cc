// TcpClient over TLS (ConnectTls) against an in-process OpenSSL server on loopback: framed
// messages pipelined on one connection and one handshake, and a failed handshake that closes
// the connection with nothing sent.

#include "common/upstream/tcp_client.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "common/loop/tls_test_util.h"

namespace kdns::upstream {
namespace {

using loop::testing::LoopFixture;
using loop::testing::RunUntil;

// A DNS-over-TLS echo server on its own thread (blocking OpenSSL): it serves connections one
// after another, echoing each framed message, and counts handshakes.
class TlsEchoServer {
 public:
  explicit TlsEchoServer(SSL_CTX* ctx) : ctx_(ctx) {
    // OpenSSL writes to the socket with write(): a client gone must not kill the test.
    signal(SIGPIPE, SIG_IGN);
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(listen_fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
    REQUIRE(listen(listen_fd_, 8) == 0);
    socklen_t length = sizeof(address);
    REQUIRE(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~TlsEchoServer() {
    shutdown(listen_fd_, SHUT_RDWR);                                             // wakes accept()
    if (const int fd = connection_fd_.load(); fd >= 0) shutdown(fd, SHUT_RDWR);  // and reads
    thread_.join();
    close(listen_fd_);
  }
  TlsEchoServer(const TlsEchoServer&) = delete;
  TlsEchoServer& operator=(const TlsEchoServer&) = delete;

  loop::SocketAddress address() const {
    return *loop::SocketAddress::Parse("127.0.0.1:" + std::to_string(port_));
  }
  int handshakes() const { return handshakes_.load(); }
  int failed_handshakes() const { return failed_handshakes_.load(); }
  int messages() const { return messages_.load(); }

 private:
  void Serve() {
    for (;;) {
      const int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      connection_fd_ = fd;
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, fd);
      if (SSL_accept(ssl) == 1) {
        ++handshakes_;
        Echo(ssl);
      } else {
        ++failed_handshakes_;
      }
      SSL_free(ssl);
      connection_fd_ = -1;
      close(fd);
    }
  }
  void Echo(SSL* ssl) {
    std::vector<uint8_t> message;
    for (;;) {
      uint8_t prefix[2];
      if (SSL_read(ssl, prefix, 2) != 2) return;
      message.resize((prefix[0] << 8) | prefix[1]);
      size_t got = 0;
      while (got < message.size()) {
        const int read =
            SSL_read(ssl, message.data() + got, static_cast<int>(message.size() - got));
        if (read <= 0) return;
        got += static_cast<size_t>(read);
      }
      ++messages_;
      if (SSL_write(ssl, prefix, 2) != 2) return;
      if (SSL_write(ssl, message.data(), static_cast<int>(message.size())) <= 0) return;
    }
  }

  SSL_CTX* ctx_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<int> connection_fd_{-1};  // the one being served
  std::thread thread_;
  std::atomic<int> handshakes_{0};
  std::atomic<int> failed_handshakes_{0};
  std::atomic<int> messages_{0};
};

struct Received {
  std::vector<std::vector<uint8_t>> messages;
  std::string closed;  // the reason, once closed
};

std::unique_ptr<TcpClient> ConnectTls(loop::Loop& loop, const TlsEchoServer& server,
                                      const loop::TlsContext& context, const std::string& name,
                                      Received& received) {
  TcpClient::Callbacks callbacks;
  callbacks.on_message = [&received](std::span<const uint8_t> message) {
    received.messages.emplace_back(message.begin(), message.end());
  };
  callbacks.on_closed = [&received](const std::string& reason) { received.closed = reason; };
  std::string error;
  auto client = TcpClient::ConnectTls(loop, server.address(), context,
                                      loop::TlsPeer{name, *IpAddress::Parse("127.0.0.1")},
                                      /*idle_timeout_ms=*/0, std::move(callbacks), &error);
  INFO(error);
  REQUIRE(client != nullptr);
  return client;
}

TEST_CASE_METHOD(LoopFixture, "A TLS TcpClient pipelines messages on one verified connection",
                 "[upstream][tls]") {
  loop::testing::TestPki pki;
  auto server_ctx = pki.ServerContext();
  TlsEchoServer server(server_ctx.get());
  std::string error;
  auto context = loop::TlsContext::Create(pki.ca_file, &error);
  REQUIRE(context != nullptr);
  Received received;
  auto client = ConnectTls(loop, server, *context, "dns.test", received);
  // Sent before the connection and the handshake are done: queued, then written.
  // At least a DNS header each (12 bytes): the framer refuses less.
  const std::vector<uint8_t> one(12, 0x11), two(20, 0x22);
  REQUIRE(client->Send(one));
  REQUIRE(client->Send(two));
  REQUIRE(RunUntil(loop, [&] { return received.messages.size() == 2; }));
  CHECK(received.messages[0] == one);
  CHECK(received.messages[1] == two);
  // Later ones on the same connection.
  const std::vector<uint8_t> three(3000, 0x33);
  REQUIRE(client->Send(three));
  REQUIRE(RunUntil(loop, [&] { return received.messages.size() == 3; }));
  CHECK(received.messages[2] == three);
  CHECK(server.handshakes() == 1);
  CHECK(server.messages() == 3);
  CHECK_FALSE(client->tls_handshake_failed());
  client.reset();
}

TEST_CASE_METHOD(LoopFixture, "A TLS TcpClient closes on a failed handshake, sending nothing",
                 "[upstream][tls]") {
  loop::testing::TestPki pki;
  auto server_ctx = pki.ServerContext();
  TlsEchoServer server(server_ctx.get());
  std::string error;
  std::string name = "dns.test";
  std::string ca_file = pki.ca_file;
  loop::testing::TestPki other;
  SECTION("the wrong name") { name = "wrong.test"; }
  SECTION("an untrusted CA") { ca_file = other.ca_file; }
  auto context = loop::TlsContext::Create(ca_file, &error);
  REQUIRE(context != nullptr);
  Received received;
  auto client = ConnectTls(loop, server, *context, name, received);
  const std::vector<uint8_t> query(12, 0x11);
  REQUIRE(client->Send(query));
  REQUIRE(RunUntil(loop, [&] { return !received.closed.empty(); }));
  INFO(received.closed);
  CHECK(received.closed.find("TLS handshake: certificate verify failed") == 0);
  CHECK(client->tls_handshake_failed());
  CHECK(client->closed());
  CHECK_FALSE(client->Send(query));
  client.reset();
  REQUIRE(RunUntil(loop, [&] { return server.failed_handshakes() == 1; }));
  CHECK(server.handshakes() == 0);
  CHECK(server.messages() == 0);
  CHECK(received.messages.empty());
}

}  // namespace
}  // namespace kdns::upstream
