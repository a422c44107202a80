#include "common/loop/socket_util.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kdns::loop {
namespace internal {

std::string ErrnoMessage(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

int CreateBoundSocket(int type, const SocketAddress& address, ReusePort reuse_port,
                      std::string* error) {
  if (!address.is_v4() && !address.is_v6()) {
    *error = "bind address is not IPv4 or IPv6";
    return -1;
  }
  int fd = socket(address.family(), type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = ErrnoMessage("socket", errno);
    return -1;
  }
  int one = 1;
  auto fail = [&](const std::string& what) {
    *error = ErrnoMessage(what + " " + address.ToString(), errno);
    close(fd);
    return -1;
  };
  // TCP: allow re-binding while old connections sit in TIME_WAIT (a restarted server).
  if (type == SOCK_STREAM && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    return fail("SO_REUSEADDR");
  }
  if (reuse_port == ReusePort::kYes &&
      setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
    return fail("SO_REUSEPORT");
  }
  // A v6 socket serves v6 only: v4 gets its own socket, so addresses never show up mapped.
  if (address.is_v6() && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) {
    return fail("IPV6_V6ONLY");
  }
  if (bind(fd, address.sockaddr_ptr(), address.sockaddr_len()) != 0) return fail("bind");
  return fd;
}

bool PrepareSocketFd(int fd, int type, std::string* error) {
  int actual_type = 0;
  socklen_t len = sizeof(actual_type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &actual_type, &len) != 0) {
    *error = ErrnoMessage("socket fd " + std::to_string(fd), errno);
    return false;
  }
  if (actual_type != type) {
    *error = "socket fd " + std::to_string(fd) + " has the wrong socket type";
    return false;
  }
  SocketAddress local = LocalAddressOf(fd);
  if (!local.is_v4() && !local.is_v6()) {
    *error = "socket fd " + std::to_string(fd) + " is not an IPv4/IPv6 socket";
    return false;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 ||
      fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
    *error = ErrnoMessage("fcntl on socket fd " + std::to_string(fd), errno);
    return false;
  }
  return true;
}

SocketAddress LocalAddressOf(int fd) {
  sockaddr_storage storage{};
  socklen_t len = sizeof(storage);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &len) != 0) return {};
  return SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&storage), len)
      .value_or(SocketAddress());
}

}  // namespace internal

std::optional<SocketAddress> ClaimAddress(const SocketAddress& address, std::string* error) {
  for (int attempt = 0; attempt < kPortZeroAttempts; ++attempt) {
    int udp = internal::CreateBoundSocket(SOCK_DGRAM, address, ReusePort::kNo, error);
    if (udp < 0) {
      *error = "UDP: " + *error;
      return std::nullopt;
    }
    SocketAddress claimed = internal::LocalAddressOf(udp);
    int tcp = internal::CreateBoundSocket(SOCK_STREAM, claimed, ReusePort::kNo, error);
    close(udp);
    if (tcp >= 0) {
      close(tcp);
      return claimed;
    }
    // With port 0, the port free for UDP may be taken for TCP: try another.
    if (address.port() != 0) break;
  }
  *error = "TCP: " + *error;
  return std::nullopt;
}

}  // namespace kdns::loop
