// Blocking sockets for tests: a UDP client connected to a server, and waiting for a
// descriptor to be readable. Independent of any loop, so a test can use them from a thread of
// its own while its loop thread is busy. Thread: the owner's (Catch's REQUIRE in the
// constructor: make the client on the test's thread).
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/loop/socket_address.h"

namespace kdns::loop::testing {

// Waits until fd is readable; false on timeout.
inline bool WaitReadable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  int rc;
  do {
    rc = poll(&p, 1, timeout_ms);
  } while (rc < 0 && errno == EINTR);
  return rc > 0;
}

// A UDP socket connected to `server`.
class UdpClient {
 public:
  // From `source` (an address on the loopback, such as 127.0.0.2), if given.
  explicit UdpClient(const SocketAddress& server,
                     const std::optional<SocketAddress>& source = std::nullopt) {
    fd_ = socket(server.family(), SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    if (source) REQUIRE(bind(fd_, source->sockaddr_ptr(), source->sockaddr_len()) == 0);
    REQUIRE(connect(fd_, server.sockaddr_ptr(), server.sockaddr_len()) == 0);
  }
  ~UdpClient() { close(fd_); }
  UdpClient(const UdpClient&) = delete;
  UdpClient& operator=(const UdpClient&) = delete;

  bool Send(std::span<const uint8_t> message) {
    return send(fd_, message.data(), message.size(), 0) == static_cast<ssize_t>(message.size());
  }
  std::optional<std::vector<uint8_t>> TryReceive() {
    std::vector<uint8_t> buf(65536);
    ssize_t n = recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) return std::nullopt;
    buf.resize(static_cast<size_t>(n));
    return buf;
  }
  std::optional<std::vector<uint8_t>> Receive(int timeout_ms = 5000) {
    if (!WaitReadable(fd_, timeout_ms)) return std::nullopt;
    return TryReceive();
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace kdns::loop::testing
