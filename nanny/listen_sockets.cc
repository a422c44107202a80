#include "nanny/listen_sockets.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "common/loop/socket_util.h"

namespace kdns::nanny {
namespace {

// linux/in6.h's IPV6_FREEBIND (Linux 4.15), which glibc's <netinet/in.h> does not define.
constexpr int kIpv6Freebind = 78;

// How a pair is bound: SO_REUSEPORT and IP_FREEBIND, and the UDP receive buffer asked for.
struct BindAs {
  bool reuse_port = false;
  bool freebind = false;
  int receive_buffer_bytes = ListenSockets::kReceiveBufferBytes;
};

// A bound socket of `type` on `address`, or -1 with *error.
int BindOne(int type, const loop::SocketAddress& address, const BindAs& as, std::string* error) {
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
  if (as.freebind) {
    const bool v6 = address.is_v6();
    if (setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? kIpv6Freebind : IP_FREEBIND, &one,
                   sizeof(one)) != 0) {
      return fail(v6 ? "IPV6_FREEBIND" : "IP_FREEBIND", fd);
    }
  }
  if (as.reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
    return fail("SO_REUSEPORT", fd);
  }
  if (type == SOCK_DGRAM) {
    int size = as.receive_buffer_bytes;
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

}  // namespace

ListenSockets::~ListenSockets() { Close(); }

ListenSockets::ListenSockets(ListenSockets&& other) noexcept
    : fds_(std::move(other.fds_)),
      addresses_(std::move(other.addresses_)),
      pairs_per_address_(other.pairs_per_address_),
      udp_receive_buffer_bytes_(other.udp_receive_buffer_bytes_) {
  other.fds_.clear();
}

ListenSockets& ListenSockets::operator=(ListenSockets&& other) noexcept {
  if (this != &other) {
    Close();
    fds_ = std::move(other.fds_);
    addresses_ = std::move(other.addresses_);
    pairs_per_address_ = other.pairs_per_address_;
    udp_receive_buffer_bytes_ = other.udp_receive_buffer_bytes_;
    other.fds_.clear();
  }
  return *this;
}

bool ListenSockets::Bind(const std::vector<loop::SocketAddress>& addresses, std::string* error,
                         BindFor bind_for, size_t pairs_per_address) {
  Close();
  pairs_per_address_ = std::max<size_t>(pairs_per_address, 1);
  const bool group = pairs_per_address_ > 1;
  BindAs as;
  // A node cache shares its addresses with the next one during an update; a pod's group
  // is its threads'.
  as.reuse_port = bind_for == BindFor::kNodeLocal || group;
  as.freebind = bind_for == BindFor::kNodeLocal;
  as.receive_buffer_bytes =
      std::max(kReceiveBufferBytes / static_cast<int>(pairs_per_address_), kMinReceiveBufferBytes);
  for (const auto& requested : addresses) {
    loop::SocketAddress address = requested;
    if (group && bind_for == BindFor::kPod) {
      std::optional<loop::SocketAddress> claimed = loop::ClaimAddress(requested, error);
      if (!claimed) {
        *error = requested.ToString() + ": " + *error;
        Close();
        return false;
      }
      address = *claimed;
    }
    // Port 0 (tests): TCP takes the port the kernel gave the UDP socket, which TCP may
    // already use; then another port is tried, as DnsServer does.
    const int attempts = address.port() == 0 ? loop::kPortZeroAttempts : 1;
    for (size_t pair = 0; pair < pairs_per_address_; ++pair) {
      for (int attempt = 1;; ++attempt) {
        int udp = BindOne(SOCK_DGRAM, address, as, error);
        if (udp < 0) {
          Close();
          return false;
        }
        const loop::SocketAddress bound = loop::internal::LocalAddressOf(udp);
        int tcp = BindOne(SOCK_STREAM, bound, as, error);
        if (tcp >= 0) {
          fds_.push_back(udp);
          fds_.push_back(tcp);
          address = bound;  // the group's other pairs on the port the first one got
          break;
        }
        close(udp);
        if (attempt >= attempts || pair > 0) {
          Close();
          return false;
        }
      }
    }
    addresses_.push_back(address);
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

ListenSockets::Left ListenSockets::LeaveReusePortGroup() {
  Left left;
  for (size_t i = 0; i < addresses_.size(); ++i) {
    // Connected to its own address, a UDP socket matches only datagrams from itself, so the
    // kernel's lookup passes it over; what is queued stays readable.
    const loop::SocketAddress& address = addresses_[i];
    for (size_t pair = 0; pair < pairs_per_address_; ++pair) {
      const size_t first = 2 * (i * pairs_per_address_ + pair);
      const int udp = fds_[first];
      const int tcp = fds_[first + 1];
      if (connect(udp, address.sockaddr_ptr(), address.sockaddr_len()) == 0) ++left.udp;
      // A listener shut down leaves the group at once (its queue migrates or is reset).
      if (shutdown(tcp, SHUT_RD) == 0) ++left.tcp;
    }
  }
  return left;
}

void ListenSockets::Close() {
  for (int fd : fds_) close(fd);
  fds_.clear();
  addresses_.clear();
}

}  // namespace kdns::nanny
