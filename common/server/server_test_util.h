// Test helpers for kdns::server (queries: common/dns/query_testing.h): an echo handler (the query
// back with QR set), a handler built from a lambda, and plain-socket UDP and TCP clients that
// either wait with a poll() timeout (servers on other threads) or never block (a server on the
// test's own loop, driven with loop::testing::RunUntil); for the servers' own tests, the one
// LoopServer harness on the test's loop (any handler type, or one that holds its Responders), and
// a DnsServer on a free loopback port with echo checks. The servers' tests live in this
// namespace. Header-only; tests only.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/dns/query_testing.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/loop/socket_address.h"
#include "common/loop/socket_test_util.h"
#include "common/server/dns_server.h"
#include "common/server/loop_server.h"
#include "common/server/query_handler.h"

namespace kdns::server::testing {

// The servers' tests live in this namespace, so each file names these helpers without
// importing them.
using dns::testing::QuerySpec;
using loop::testing::RequireClosesClean;
using loop::testing::RunUntil;

inline uint16_t IdOf(std::span<const uint8_t> message) {
  return message.size() < 2 ? 0 : static_cast<uint16_t>(message[0] << 8 | message[1]);
}

inline bool IsResponse(std::span<const uint8_t> message) {
  return message.size() >= 3 && (message[2] & 0x80) != 0;
}

// The query with QR set, written into `buffer` (cut to its size). Runs on serving
// threads, so no Catch2 macro here: they are not thread-safe.
inline std::span<const uint8_t> EchoResponse(std::span<const uint8_t> query,
                                             std::span<uint8_t> buffer) {
  size_t size = std::min(query.size(), buffer.size());
  std::copy_n(query.begin(), size, buffer.begin());
  if (size >= 3) buffer[2] |= 0x80;
  return buffer.first(size);
}

inline bool ReplyEcho(Request& request) {
  return request.Reply(EchoResponse(request.query(), request.response_buffer()));
}

// Runs a lambda for every query.
class FunctionHandler : public QueryHandler {
 public:
  explicit FunctionHandler(std::function<void(Request&)> fn) : fn_(std::move(fn)) {}
  void HandleQuery(Request& request) override { fn_(request); }

 private:
  std::function<void(Request&)> fn_;
};

inline HandlerFactory EchoFactory() {
  return [](const ThreadContext&) {
    return std::make_unique<FunctionHandler>([](Request& r) { ReplyEcho(r); });
  };
}

using loop::testing::UdpClient;
using loop::testing::WaitReadable;

// DNS over TCP: two-byte length prefixes (RFC 1035 4.2.2).
class TcpClient {
 public:
  // From `source` (an address on the loopback, such as 127.0.0.2), if given.
  explicit TcpClient(const loop::SocketAddress& server,
                     const std::optional<loop::SocketAddress>& source = std::nullopt) {
    fd_ = socket(server.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    if (source) REQUIRE(bind(fd_, source->sockaddr_ptr(), source->sockaddr_len()) == 0);
    // Loopback connect completes in the kernel's backlog, even if the server's loop is not
    // running yet.
    REQUIRE(connect(fd_, server.sockaddr_ptr(), server.sockaddr_len()) == 0);
  }
  ~TcpClient() { Close(); }
  TcpClient(const TcpClient&) = delete;
  TcpClient& operator=(const TcpClient&) = delete;

  static std::vector<uint8_t> Frame(const std::vector<uint8_t>& message) {
    std::vector<uint8_t> framed = {static_cast<uint8_t>(message.size() >> 8),
                                   static_cast<uint8_t>(message.size())};
    framed.insert(framed.end(), message.begin(), message.end());
    return framed;
  }
  // Small test payloads fit the socket buffer: the blocking send never waits.
  bool SendRaw(const std::vector<uint8_t>& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  bool Send(const std::vector<uint8_t>& message) { return SendRaw(Frame(message)); }

  // Reads what is available without blocking; false once the server closed (EOF/reset).
  bool Poll() {
    uint8_t buf[16384];
    while (open_) {
      ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        received_.insert(received_.end(), buf, buf + n);
      } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        open_ = false;
      } else {
        break;
      }
    }
    return open_;
  }
  // The next complete message, if one has arrived.
  std::optional<std::vector<uint8_t>> TryReceive() {
    Poll();
    if (received_.size() < 2) return std::nullopt;
    size_t length = static_cast<size_t>(received_[0]) << 8 | received_[1];
    if (received_.size() < 2 + length) return std::nullopt;
    std::vector<uint8_t> message(received_.begin() + 2, received_.begin() + 2 + length);
    received_.erase(received_.begin(), received_.begin() + 2 + length);
    return message;
  }
  std::optional<std::vector<uint8_t>> Receive(int timeout_ms = 5000) {
    for (;;) {
      if (auto message = TryReceive()) return message;
      if (!open_ || !WaitReadable(fd_, timeout_ms)) return std::nullopt;
    }
  }
  // Waits until the server closes the connection; false on timeout.
  bool WaitClosed(int timeout_ms = 5000) {
    while (Poll()) {
      if (!WaitReadable(fd_, timeout_ms)) return false;
    }
    return true;
  }
  bool closed() {
    Poll();
    return !open_;
  }
  // Closes with a RST (SO_LINGER 0) instead of a FIN: the server's next read fails, as
  // with a client that crashed or went away.
  void Reset() {
    linger hard{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
    Close();
  }
  void ShutdownWrite() { shutdown(fd_, SHUT_WR); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    open_ = false;
  }

 private:
  int fd_ = -1;
  bool open_ = true;
  std::vector<uint8_t> received_;
};

// Runs `loop` until `client` (a UdpClient or a TcpClient of a server on it) has a reply, and
// returns the reply.
template <class Client>
std::vector<uint8_t> RunUntilReply(loop::Loop& loop, Client& client) {
  std::optional<std::vector<uint8_t>> reply;
  REQUIRE(RunUntil(loop, [&] { return (reply = client.TryReceive()).has_value(); }));
  return *std::move(reply);
}

// The LoopServer on the test's own loop (loop_server*_test.cc).

// Makes a new Handler for each thread, *made pointing at the last one made.
template <class Handler>
HandlerFactory FactoryOf(Handler** made) {
  return [made](const ThreadContext&) {
    auto handler = std::make_unique<Handler>();
    *made = handler.get();
    return handler;
  };
}

// Replies to `responder` with an echo of `query`, built in a buffer of its own.
inline bool ReplyEcho(Responder& responder, const std::vector<uint8_t>& query) {
  std::vector<uint8_t> buffer(query.size());
  return responder.Reply(EchoResponse(query, buffer));
}

// Takes every query's Responder and keeps it, so the test decides when to answer.
class HoldingHandler : public QueryHandler {
 public:
  void HandleQuery(Request& request) override {
    queries.emplace_back(request.query().begin(), request.query().end());
    transports.push_back(request.transport());
    held.push_back(request.TakeResponder());
  }
  // With answer_overdue, echoes every query it still holds for the connection.
  void OnQueriesOverdue(uint64_t connection_id) override {
    overdue.push_back(connection_id);
    for (size_t i = 0; answer_overdue && i < held.size(); ++i) {
      if (held[i].pending() && held[i].connection_id() == connection_id) {
        (void)ReplyEcho(held[i], queries[i]);
      }
    }
  }
  std::vector<std::vector<uint8_t>> queries;
  std::vector<dns::Transport> transports;
  std::vector<Responder> held;
  std::vector<uint64_t> overdue;
  bool answer_overdue = false;
};

// Tests look at connections for longer than the default idle timeout on a loaded machine.
inline TcpOptions LongIdle() {
  TcpOptions tcp;
  tcp.idle_timeout_ms = 60'000;
  return tcp;
}

// Options for a server on thread `thread_index` whose connections idle for `tcp`'s timeout.
inline LoopServer::Options ThreadOptions(size_t thread_index = 0,
                                         const TcpOptions& tcp = LongIdle()) {
  LoopServer::Options options;
  options.thread_index = thread_index;
  options.tcp = tcp;
  return options;
}

// Options for a server whose receiver thread takes the UDP queries first (the fast path).
inline LoopServer::Options ReceiverThreadOptions() {
  LoopServer::Options options;
  options.udp.receiver_thread = true;
  return options;
}

// LoopServers on free loopback ports on the test's own loop, their handlers made by a factory,
// counting into one ThreadStats. Finish() drops the servers and checks the loop closes clean.
struct LoopServerHarness {
  explicit LoopServerHarness(const HandlerFactory& factory,
                             const LoopServer::Options& options = ThreadOptions()) {
    server = StartAnother(factory, options);
  }
  // One more server on the same loop and stats, for tests of what servers share.
  std::unique_ptr<LoopServer> StartAnother(const HandlerFactory& factory,
                                           LoopServer::Options options) {
    options.address = *loop::SocketAddress::Parse("127.0.0.1:0");
    std::string error;
    auto started = LoopServer::Create(loop, options, factory, stats, &error);
    INFO(error);
    REQUIRE(started != nullptr);
    return started;
  }
  void Finish() {
    server.reset();
    RequireClosesClean(loop);
  }

  loop::Loop loop;
  ThreadStats stats;
  std::unique_ptr<LoopServer> server;
};

// The DnsServer and its threads (dns_server*_test.cc).

// A DnsServer on a free loopback port with `threads` threads (0: one per usable CPU).
inline DnsServer::Options LocalOptions(size_t threads) {
  DnsServer::Options options;
  options.listen_address = *loop::SocketAddress::Parse("127.0.0.1:0");
  options.threads = threads;
  options.tcp.idle_timeout_ms = 30'000;
  return options;
}

// How many of the server's threads counted any of `counter`.
inline size_t ThreadsThatServed(const DnsServer& server, uint64_t ServerStats::*counter) {
  size_t served = 0;
  for (size_t i = 0; i < server.thread_count(); ++i) {
    if (server.thread_stats(i).*counter > 0) ++served;
  }
  return served;
}

inline void RequireStart(DnsServer& server) {
  std::string error;
  bool started = server.Start(&error);
  INFO(error);
  REQUIRE(started);
}

// Stops `server`, which must close clean; returns its final counters (final once the threads
// are joined: a client may see its reply a moment before the serving thread counts it).
inline ServerStats RequireStopsClean(DnsServer& server) {
  server.Stop();
  REQUIRE(server.closed_cleanly());
  return server.stats();
}

// Sends one query over `client` (a UdpClient or a TcpClient) and checks the echo comes back.
template <class Client>
void RequireEcho(Client& client, uint16_t id) {
  REQUIRE(client.Send(QuerySpec().Id(id).Bytes()));
  auto reply = client.Receive();
  REQUIRE(reply.has_value());
  CHECK(IdOf(*reply) == id);
  CHECK(IsResponse(*reply));
}

}  // namespace kdns::server::testing
