#include "nanny/listen_sockets.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace kdns::nanny {
namespace {

// linux/in6.h's IPV6_FREEBIND (Linux 4.15), which glibc's <netinet/in.h> does not define.
constexpr int kIpv6Freebind = 78;

// A bound socket of `type` on `address`, or -1 with *error.
int BindOne(int type, const loop::SocketAddress& address, BindFor bind_for, std::string* error) {
  const char* kind = type == SOCK_DGRAM ? "udp" : "tcp";
  auto fail = [&](const char* what, int fd) {
    const int err = errno;
    *error = std::string(what) + " " + address.ToString() + " (" + kind + "): " + strerror(err);
    if (fd >= 0) close(fd);
    return -1;
  };
  int fd = socket(address.family(), type | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail("socket", -1);
  int one = 1;
  if (type == SOCK_STREAM && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    return fail("SO_REUSEADDR", fd);
  }
  if (address.is_v6() && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) {
    return fail("IPV6_V6ONLY", fd);
  }
  if (bind_for == BindFor::kNodeLocal) {
    const bool v6 = address.is_v6();
    if (setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? kIpv6Freebind : IP_FREEBIND, &one,
                   sizeof(one)) != 0) {
      return fail(v6 ? "IPV6_FREEBIND" : "IP_FREEBIND", fd);
    }
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
      return fail("SO_REUSEPORT", fd);
    }
  }
  if (type == SOCK_DGRAM) {
    int size = ListenSockets::kReceiveBufferBytes;
    // SO_RCVBUFFORCE passes net.core.rmem_max with CAP_NET_ADMIN; SO_RCVBUF is capped by it.
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0) {
      (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    }
  }
  if (bind(fd, address.sockaddr_ptr(), address.sockaddr_len()) != 0) return fail("bind", fd);
  if (type == SOCK_STREAM && listen(fd, ListenSockets::kListenBacklog) != 0) {
    return fail("listen", fd);
  }
  return fd;
}

loop::SocketAddress LocalAddress(int fd) {
  sockaddr_storage storage{};
  socklen_t len = sizeof(storage);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &len) != 0) return {};
  return loop::SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&storage), len)
      .value_or(loop::SocketAddress());
}

}  // namespace

ListenSockets::~ListenSockets() { Close(); }

ListenSockets::ListenSockets(ListenSockets&& other) noexcept
    : fds_(std::move(other.fds_)),
      addresses_(std::move(other.addresses_)),
      udp_receive_buffer_bytes_(other.udp_receive_buffer_bytes_) {
  other.fds_.clear();
}

ListenSockets& ListenSockets::operator=(ListenSockets&& other) noexcept {
  if (this != &other) {
    Close();
    fds_ = std::move(other.fds_);
    addresses_ = std::move(other.addresses_);
    udp_receive_buffer_bytes_ = other.udp_receive_buffer_bytes_;
    other.fds_.clear();
  }
  return *this;
}

bool ListenSockets::Bind(const std::vector<loop::SocketAddress>& addresses, std::string* error,
                         BindFor bind_for) {
  Close();
  for (const auto& requested : addresses) {
    // Port 0 (tests): TCP takes the port the kernel gave the UDP socket, which TCP may
    // already use; then another port is tried, as DnsServer does.
    const int attempts = requested.port() == 0 ? kPortZeroAttempts : 1;
    for (int attempt = 1;; ++attempt) {
      int udp = BindOne(SOCK_DGRAM, requested, bind_for, error);
      if (udp < 0) {
        Close();
        return false;
      }
      loop::SocketAddress address = LocalAddress(udp);
      int tcp = BindOne(SOCK_STREAM, address, bind_for, error);
      if (tcp >= 0) {
        fds_.push_back(udp);
        fds_.push_back(tcp);
        addresses_.push_back(address);
        break;
      }
      close(udp);
      if (attempt >= attempts) {
        Close();
        return false;
      }
    }
  }
  if (!fds_.empty()) {
    int size = 0;
    socklen_t len = sizeof(size);
    if (getsockopt(fds_[0], SOL_SOCKET, SO_RCVBUF, &size, &len) == 0) {
      udp_receive_buffer_bytes_ = size;
    }
  }
  return true;
}

int ListenSockets::LeaveReusePortGroup() {
  int left = 0;
  for (size_t i = 0; i < addresses_.size(); ++i) {
    // Connected to its own address, a UDP socket matches only datagrams from itself, so the
    // kernel's lookup passes it over; what is queued stays readable.
    const loop::SocketAddress& address = addresses_[i];
    if (connect(fds_[2 * i], address.sockaddr_ptr(), address.sockaddr_len()) == 0) ++left;
  }
  return left;
}

void ListenSockets::Close() {
  for (int fd : fds_) close(fd);
  fds_.clear();
  addresses_.clear();
}

}  // namespace kdns::nanny
