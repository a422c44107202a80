#include "common/upstream/udp_client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "common/loop/socket_util.h"

namespace kdns::upstream {
UdpClient::UdpClient(int fd, const loop::SocketAddress& peer,
                     loop::internal::UdpReceiveBatch& receive, DatagramCallback on_datagram,
                     ErrorCallback on_error)
    : fd_(fd),
      peer_(peer),
      receive_(receive),
      on_datagram_(std::move(on_datagram)),
      on_error_(std::move(on_error)) {}

std::unique_ptr<UdpClient> UdpClient::Open(loop::Loop& loop, const loop::SocketAddress& peer,
                                           loop::internal::UdpReceiveBatch& receive,
                                           DatagramCallback on_datagram, ErrorCallback on_error,
                                           std::string* error) {
  const int fd = socket(peer.family(), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = loop::internal::ErrnoMessage("udp socket for " + peer.ToString(), errno);
    return nullptr;
  }
  std::unique_ptr<UdpClient> client(
      new UdpClient(fd, peer, receive, std::move(on_datagram), std::move(on_error)));
  // Binds the wildcard address with an ephemeral port, then connects.
  if (connect(fd, peer.sockaddr_ptr(), peer.sockaddr_len()) != 0) {
    *error = loop::internal::ErrnoMessage("udp connect to " + peer.ToString(), errno);
    return nullptr;  // the destructor closes the fd
  }
  UdpClient* self = client.get();
  client->watch_ = loop::FdWatch::Open(
      loop, fd, [self](int /*ready*/, int status) { self->OnReadable(status); }, error);
  if (client->watch_ == nullptr) return nullptr;
  const int status = client->watch_->SetInterest(loop::FdWatch::kReadable);
  if (status != 0) {
    *error = "udp receive from " + peer.ToString() + ": " + uv_strerror(status);
    return nullptr;
  }
  return client;
}

UdpClient::~UdpClient() {
  // uv_close takes the fd out of epoll at once, so it may be closed right after.
  watch_.reset();
  if (fd_ >= 0) close(fd_);
}

uint16_t UdpClient::local_port() const {
  // Asked for only by tests: not worth a system call per upstream query.
  return loop::internal::LocalAddressOf(fd_).port();
}

int UdpClient::Send(std::span<const uint8_t> bytes) {
  ssize_t sent = 0;
  do {
    sent = send(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return errno == EWOULDBLOCK ? UV_EAGAIN : -errno;
  return 0;
}

// Calls a user callback; false if it destroyed this client (then nothing of it may be
// touched).
template <typename F>
bool UdpClient::CallAlive(const char* what, F&& fn) {
  loop::internal::DeathWatch::Scope scope(death_watch_);
  loop::internal::CallUser(what, std::forward<F>(fn));
  return !scope.dead();
}

void UdpClient::OnReadable(int status) {
  if (status < 0) {
    // libuv reports POLLERR (a pending error of the connected socket: an ICMP "port
    // unreachable") as UV_EBADF and stops polling; the error itself is SO_ERROR.
    int err = 0;
    socklen_t length = sizeof(err);
    if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &length) == 0 && err != 0) status = -err;
    if (CallAlive("upstream udp error", [&] { on_error_(status); })) {
      watch_->SetInterest(loop::FdWatch::kReadable);
    }
    return;
  }
  for (int batch = 0; batch < kMaxBatchesPerWakeup; ++batch) {
    const int n = receive_.Receive(fd_, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // ICMP errors (ECONNREFUSED) of the connected socket surface here.
      const int err = -errno;
      (void)CallAlive("upstream udp error", [&] { on_error_(err); });
      return;
    }
    // Stops early, touching nothing of this client, when a callback destroyed it.
    bool alive = true;
    receive_.ForEachDatagram(
        n,
        [&](size_t, std::span<const uint8_t> datagram, const loop::SocketAddress& from,
            const loop::UdpReplyContext&) {
          if (!alive) return false;        // the truncated datagram's error destroyed it
          if (from != peer_) return true;  // the kernel filters these; belt and braces
          alive = CallAlive("upstream udp receive", [&] { on_datagram_(datagram); });
          return alive;
        },
        [&] {
          if (alive) alive = CallAlive("upstream udp error", [&] { on_error_(UV_EMSGSIZE); });
        });
    if (!alive) return;
    // Fewer than asked for: the socket is drained (the poll reports what comes later).
    if (static_cast<size_t>(n) < receive_.slots()) return;
  }
}

}  // namespace kdns::upstream
