#include "common/loop/tls_session.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/loop/tls_test_util.h"

namespace kdns::loop {
namespace {

using Status = TlsSession::Status;

// The server end, in memory: an SSL over a BIO pair whose network end the test pumps.
struct MemoryServer {
  explicit MemoryServer(SSL_CTX* ctx) : ssl(SSL_new(ctx)) {
    BIO* internal = nullptr;
    // Room for everything a test sends: only the client's side is under test.
    REQUIRE(BIO_new_bio_pair(&internal, 1 << 20, &network, 1 << 20) == 1);
    SSL_set_bio(ssl, internal, internal);
    SSL_set_accept_state(ssl);
  }
  ~MemoryServer() {
    SSL_free(ssl);
    BIO_free(network);
  }
  MemoryServer(const MemoryServer&) = delete;
  MemoryServer& operator=(const MemoryServer&) = delete;

  // Takes the client's bytes, lets the server work, returns what it sends back; echoes
  // whatever plaintext it reads.
  std::vector<uint8_t> Exchange(const std::vector<uint8_t>& in) {
    size_t offset = 0;
    std::vector<uint8_t> out;
    std::vector<uint8_t> buffer(16 * 1024);
    std::vector<uint8_t> network_bytes(16 * 1024);
    do {
      if (offset < in.size()) {
        const int written =
            BIO_write(network, in.data() + offset, static_cast<int>(in.size() - offset));
        if (written > 0) offset += static_cast<size_t>(written);
      }
      if (!SSL_is_init_finished(ssl)) SSL_do_handshake(ssl);
      for (int read; SSL_is_init_finished(ssl) &&
                     (read = SSL_read(ssl, buffer.data(), static_cast<int>(buffer.size()))) > 0;) {
        echoed.insert(echoed.end(), buffer.begin(), buffer.begin() + read);
        REQUIRE(SSL_write(ssl, buffer.data(), read) == read);
      }
      for (int read; (read = BIO_read(network, network_bytes.data(),
                                      static_cast<int>(network_bytes.size()))) > 0;) {
        out.insert(out.end(), network_bytes.begin(), network_bytes.begin() + read);
      }
    } while (offset < in.size());
    return out;
  }

  SSL* ssl;
  BIO* network = nullptr;
  std::vector<uint8_t> echoed;
};

// Runs the handshake between `client` and `server` until it settles; the client's status.
Status Handshake(TlsSession& client, MemoryServer& server) {
  Status status = client.Start();
  std::vector<uint8_t> plaintext;
  for (int round = 0; round < 10 && status == Status::kOk && !client.handshake_done(); ++round) {
    status = client.Feed(server.Exchange(client.TakeOutput()), &plaintext);
  }
  // The client's last flight (or its alert); the server's session tickets (TLS 1.3) follow.
  const std::vector<uint8_t> tickets = server.Exchange(client.TakeOutput());
  if (status == Status::kOk) status = client.Feed(tickets, &plaintext);
  return status;
}

std::unique_ptr<TlsSession> NewClient(const testing::TestPki& pki, const TlsPeer& peer) {
  std::string error;
  auto context = TlsContext::Create(pki.ca_file, &error);
  INFO(error);
  REQUIRE(context != nullptr);
  auto session = TlsSession::NewClient(*context, peer, &error);
  REQUIRE(session != nullptr);
  return session;
}

const IpAddress kLoopback = *IpAddress::Parse("127.0.0.1");

TEST_CASE("A TLS session to a server with the right name carries data both ways", "[loop][tls]") {
  testing::TestPki pki;
  auto server_ctx = pki.ServerContext();
  MemoryServer server(server_ctx.get());
  auto client = NewClient(pki, TlsPeer{"dns.test", kLoopback});
  REQUIRE(Handshake(*client, server) == Status::kOk);
  REQUIRE(client->handshake_done());
  // The server saw our SNI.
  CHECK(std::string(SSL_get_servername(server.ssl, TLSEXT_NAMETYPE_host_name)) == "dns.test");
  // A message larger than one TLS record and the BIO pair's buffer.
  std::vector<uint8_t> message(70'000);
  for (size_t i = 0; i < message.size(); ++i) message[i] = static_cast<uint8_t>(i * 7);
  REQUIRE(client->Write(message) == Status::kOk);
  std::vector<uint8_t> plaintext;
  const Status status = client->Feed(server.Exchange(client->TakeOutput()), &plaintext);
  INFO(client->error());
  REQUIRE(status == Status::kOk);
  CHECK(server.echoed == message);
  CHECK(plaintext == message);
}

TEST_CASE("Without a server name, the certificate must carry the IP address", "[loop][tls]") {
  testing::TestPki pki;
  auto server_ctx = pki.ServerContext();
  SECTION("the address it names") {
    MemoryServer server(server_ctx.get());
    auto client = NewClient(pki, TlsPeer{"", kLoopback});
    CHECK(Handshake(*client, server) == Status::kOk);
    CHECK(client->handshake_done());
  }
  SECTION("another address") {
    MemoryServer server(server_ctx.get());
    auto client = NewClient(pki, TlsPeer{"", *IpAddress::Parse("127.0.0.2")});
    CHECK(Handshake(*client, server) == Status::kFailed);
    CHECK(client->handshake_failed());
    CHECK(client->error().find("IP address mismatch") != std::string::npos);
  }
}

TEST_CASE("A TLS session fails closed on the wrong name or an untrusted certificate",
          "[loop][tls]") {
  testing::TestPki pki;
  auto server_ctx = pki.ServerContext();
  MemoryServer server(server_ctx.get());
  std::string expected;
  std::unique_ptr<TlsSession> client;
  SECTION("the wrong name") {
    client = NewClient(pki, TlsPeer{"other.test", kLoopback});
    expected = "hostname mismatch";
  }
  SECTION("a name the wildcard-free certificate only ends with") {
    client = NewClient(pki, TlsPeer{"x.dns.test", kLoopback});
    expected = "hostname mismatch";
  }
  SECTION("a certificate from a CA we do not trust") {
    testing::TestPki other;  // the client trusts other's CA only
    client = NewClient(other, TlsPeer{"dns.test", kLoopback});
    expected = "unable to get local issuer certificate";
  }
  CHECK(Handshake(*client, server) == Status::kFailed);
  CHECK(client->handshake_failed());
  CHECK_FALSE(client->handshake_done());
  INFO(client->error());
  CHECK(client->error().find(expected) != std::string::npos);
  // Nothing goes out after the failure, let alone in the clear.
  const std::vector<uint8_t> message = {1, 2, 3};
  CHECK(client->Write(message) == Status::kFailed);
  CHECK(server.echoed.empty());
}

TEST_CASE("A second session to the same peer resumes the first one's, under no other name or port",
          "[loop][tls]") {
  testing::TestPki pki;
  auto server_ctx = pki.ServerContext();
  std::string error;
  auto context = TlsContext::Create(pki.ca_file, &error);
  REQUIRE(context != nullptr);
  auto connect = [&](const TlsPeer& peer) {
    MemoryServer server(server_ctx.get());
    auto client = TlsSession::NewClient(*context, peer, &error);
    REQUIRE(client != nullptr);
    REQUIRE(Handshake(*client, server) == Status::kOk);
    CHECK(client->resumed() == (SSL_session_reused(server.ssl) == 1));  // both ends agree
    return client->resumed();
  };
  const TlsPeer peer{"dns.test", kLoopback, 853};
  CHECK_FALSE(connect(peer));  // the first: a full handshake, whose ticket is kept
  CHECK(context->sessions() == 1);
  CHECK(connect(peer));
  CHECK(connect(peer));
  // Another name or port of the same address: its own full handshake.
  CHECK_FALSE(connect(TlsPeer{"", kLoopback, 853}));
  CHECK_FALSE(connect(TlsPeer{"dns.test", kLoopback, 8853}));
  CHECK(context->sessions() == 3);

  SECTION("a session is never offered past a failed handshake") {
    // The same peer key, now answered by a server of another CA: the certificate fails.
    testing::TestPki other;
    auto other_ctx = other.ServerContext();
    MemoryServer impostor(other_ctx.get());
    auto client = TlsSession::NewClient(*context, TlsPeer{"dns.test", kLoopback, 853}, &error);
    REQUIRE(client != nullptr);
    // The impostor cannot resume a session it never made: a full handshake, refused.
    CHECK(Handshake(*client, impostor) == Status::kFailed);
    CHECK(context->sessions() == 2);
    CHECK_FALSE(connect(peer));
  }
}

TEST_CASE("The session store keeps the newest peers, up to its bound", "[loop][tls]") {
  testing::TestPki pki;
  auto server_ctx = pki.ServerContext();
  std::string error;
  auto context = TlsContext::Create(pki.ca_file, &error);
  REQUIRE(context != nullptr);
  for (uint16_t port = 1; port <= TlsContext::kMaxSessions + 2; ++port) {
    MemoryServer server(server_ctx.get());
    auto client = TlsSession::NewClient(*context, TlsPeer{"dns.test", kLoopback, port}, &error);
    REQUIRE(client != nullptr);
    REQUIRE(Handshake(*client, server) == Status::kOk);
  }
  CHECK(context->sessions() == TlsContext::kMaxSessions);
  // The oldest went first; the newest is kept.
  SSL_SESSION* oldest = context->SessionFor(TlsPeer{"dns.test", kLoopback, 1}.SessionKey());
  CHECK(oldest == nullptr);
  SSL_SESSION* newest = context->SessionFor(
      TlsPeer{"dns.test", kLoopback, TlsContext::kMaxSessions + 2}.SessionKey());
  CHECK(newest != nullptr);
  SSL_SESSION_free(newest);
}

TEST_CASE("A TLS context with a CA file that cannot be read is refused", "[loop][tls]") {
  std::string error;
  CHECK(TlsContext::Create("/nonexistent/ca.pem", &error) == nullptr);
  CHECK(error.find("/nonexistent/ca.pem") != std::string::npos);
  error.clear();
  CHECK(TlsContext::Create("", &error) != nullptr);  // the system's bundle
}

}  // namespace
}  // namespace kdns::loop
