// Test helpers for kdns::loop: run a loop until a condition holds (bounded by a real-time
// deadline so a broken test fails instead of hanging), and check a loop closes clean (by hand,
// or by a LoopFixture on the way out of a TEST_CASE_METHOD); a raw TCP client, and the waits
// for a connection's close.
// Header-only; included by *_test.cc files only.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/timer.h"

namespace kdns::loop::testing {

// Runs loop iterations until done() or timeout_ms of wall time passed; returns done().
// Not a sleep: it returns as soon as the loop has done the work.
inline bool RunUntil(Loop& loop, const std::function<bool()>& done, int timeout_ms = 5000) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  Timer wake(loop);  // so that RunOnce never blocks past the deadline
  wake.StartRepeating(20, [] {});
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    loop.RunOnce();
  }
  return true;
}

// "timer, udp" for a failure message.
inline std::string OpenHandles(const Loop& loop) {
  std::ostringstream out;
  for (const auto& name : loop.OpenHandleNames()) out << name << "; ";
  return out.str();
}

// Every test ends with this: all owners are gone and the loop closes with no handle left.
inline void RequireClosesClean(Loop& loop) {
  if (loop.Close()) return;
  FAIL("loop still has open handles: " << OpenHandles(loop));
}

// The frame of a test whose loop's owners (servers, clients, timers) live in its body:
// TEST_CASE_METHOD(LoopFixture, ...) gives the body `loop`, and once the body's locals are gone
// the loop must close with no handle left. A failure here is counted, never thrown: this runs
// in a destructor.
struct LoopFixture {
  LoopFixture() = default;
  LoopFixture(const LoopFixture&) = delete;
  LoopFixture& operator=(const LoopFixture&) = delete;
  ~LoopFixture() {
    if (!loop.Close()) FAIL_CHECK("loop still has open handles: " << OpenHandles(loop));
  }

  Loop loop;
};

// A plain non-blocking TCP client socket for driving servers on the loop under test from
// the same thread: writes go straight to the kernel, reads never block.
class RawTcpClient {
 public:
  explicit RawTcpClient(const SocketAddress& server, const SocketAddress* source = nullptr) {
    fd_ = socket(server.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    // From another source address (127.0.0.2: all of 127/8 is local), for per-source rules.
    if (source != nullptr) REQUIRE(bind(fd_, source->sockaddr_ptr(), source->sockaddr_len()) == 0);
    // Loopback connect completes in the kernel's backlog without the server running.
    // Writes stay blocking (small payloads); reads use MSG_DONTWAIT.
    REQUIRE(connect(fd_, server.sockaddr_ptr(), server.sockaddr_len()) == 0);
  }
  ~RawTcpClient() {
    if (fd_ >= 0) close(fd_);
  }
  RawTcpClient(const RawTcpClient&) = delete;
  RawTcpClient& operator=(const RawTcpClient&) = delete;

  // Small test payloads always fit the socket buffer.
  void Send(std::string_view bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      REQUIRE(n > 0);
      done += static_cast<size_t>(n);
    }
  }
  void Send(const std::vector<uint8_t>& bytes) {
    Send(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  void ShutdownWrite() { shutdown(fd_, SHUT_WR); }
  // A small receive buffer, so that a client that never reads fills it, and then the
  // server's, within a few writes.
  void ShrinkReceiveBuffer() {
    int bytes = 4096;
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
  }

  // Reads whatever is available into received(); notes EOF/reset in closed().
  void Poll() {
    char buf[16384];
    while (!closed_) {
      ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        received_.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        closed_ = true;
      } else {
        return;
      }
    }
  }
  const std::string& received() {
    Poll();
    return received_;
  }
  bool closed() {
    Poll();
    return closed_;
  }
  void ClearReceived() { received_.clear(); }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::string received_;
  bool closed_ = false;
};

// Runs `loop` until `client`'s connection is closed; returns all it received.
inline std::string RunUntilClosed(Loop& loop, RawTcpClient& client) {
  REQUIRE(RunUntil(loop, [&] { return client.closed(); }));
  return client.received();
}

// Runs `loop` until a test's `server` (one that keeps its connections' close reasons in
// `reasons`) has seen its first connection close; returns that close's reason.
template <class Server>
auto RunUntilFirstClose(Loop& loop, const Server& server) {
  REQUIRE(RunUntil(loop, [&] { return server.reasons.size() == 1; }));
  return server.reasons[0];
}

}  // namespace kdns::loop::testing
