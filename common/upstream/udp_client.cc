#include "common/upstream/udp_client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <utility>

#include "common/loop/socket_util.h"

namespace kdns::upstream {
namespace {

// Slices of the shared buffer, and so replies, per recvmmsg at most.
constexpr size_t kMaxSlices = 16;

}  // namespace

UdpClient::UdpClient(int fd, const loop::SocketAddress& peer, std::span<uint8_t> receive_buffer,
                     DatagramCallback on_datagram, ErrorCallback on_error)
    : fd_(fd),
      peer_(peer),
      receive_buffer_(receive_buffer),
      on_datagram_(std::move(on_datagram)),
      on_error_(std::move(on_error)) {}

std::unique_ptr<UdpClient> UdpClient::Open(loop::Loop& loop, const loop::SocketAddress& peer,
                                           std::span<uint8_t> receive_buffer,
                                           DatagramCallback on_datagram, ErrorCallback on_error,
                                           std::string* error) {
  const int fd = socket(peer.family(), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = loop::internal::ErrnoMessage("udp socket for " + peer.ToString(), errno);
    return nullptr;
  }
  std::unique_ptr<UdpClient> client(
      new UdpClient(fd, peer, receive_buffer, std::move(on_datagram), std::move(on_error)));
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

void UdpClient::OnReadable(int status) {
  // Nothing touches `this` after a user callback that destroyed it.
  loop::internal::DeathWatch::Scope scope(death_watch_);
  if (status < 0) {
    // libuv reports POLLERR (a pending error of the connected socket: an ICMP "port
    // unreachable") as UV_EBADF and stops polling; the error itself is SO_ERROR.
    int err = 0;
    socklen_t length = sizeof(err);
    if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &length) == 0 && err != 0) status = -err;
    loop::internal::CallUser("upstream udp error", [&] { on_error_(status); });
    if (!scope.dead()) watch_->SetInterest(loop::FdWatch::kReadable);
    return;
  }
  const size_t slices =
      std::min(kMaxSlices, std::max<size_t>(1, receive_buffer_.size() / kReceiveSliceBytes));
  const size_t slice_bytes = receive_buffer_.size() / slices;
  std::array<mmsghdr, kMaxSlices> headers{};
  std::array<iovec, kMaxSlices> iovecs{};
  std::array<sockaddr_storage, kMaxSlices> peers{};
  for (int batch = 0; batch < kMaxBatchesPerWakeup; ++batch) {
    for (size_t i = 0; i < slices; ++i) {
      iovecs[i] = {receive_buffer_.data() + i * slice_bytes, slice_bytes};
      headers[i].msg_hdr = {};
      headers[i].msg_hdr.msg_iov = &iovecs[i];
      headers[i].msg_hdr.msg_iovlen = 1;
      headers[i].msg_hdr.msg_name = &peers[i];
      headers[i].msg_hdr.msg_namelen = sizeof(peers[i]);
    }
    const int n =
        recvmmsg(fd_, headers.data(), static_cast<unsigned>(slices), MSG_DONTWAIT, nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // ICMP errors (ECONNREFUSED) of the connected socket surface here.
      const int err = -errno;
      loop::internal::CallUser("upstream udp error", [&] { on_error_(err); });
      return;
    }
    for (int i = 0; i < n; ++i) {
      const msghdr& hdr = headers[i].msg_hdr;
      if ((hdr.msg_flags & MSG_TRUNC) != 0) {
        loop::internal::CallUser("upstream udp error", [&] { on_error_(UV_EMSGSIZE); });
      } else {
        auto from = loop::SocketAddress::FromSockaddr(static_cast<const sockaddr*>(hdr.msg_name),
                                                      hdr.msg_namelen);
        if (!from || *from != peer_) continue;  // the kernel filters these; belt and braces
        const std::span<const uint8_t> datagram(static_cast<const uint8_t*>(iovecs[i].iov_base),
                                                headers[i].msg_len);
        loop::internal::CallUser("upstream udp receive", [&] { on_datagram_(datagram); });
      }
      if (scope.dead()) return;
    }
    // Fewer than asked for: the socket is drained (the poll reports what comes later).
    if (static_cast<size_t>(n) < slices) return;
  }
}

}  // namespace kdns::upstream
