#include "common/upstream/udp_client.h"

#include <utility>

#include "common/loop/handle.h"

namespace kdns::upstream {

UdpClient::UdpClient(const loop::SocketAddress& peer, std::span<uint8_t> receive_buffer,
                     DatagramCallback on_datagram, ErrorCallback on_error)
    : peer_(peer),
      receive_buffer_(receive_buffer),
      on_datagram_(std::move(on_datagram)),
      on_error_(std::move(on_error)) {}

std::unique_ptr<UdpClient> UdpClient::Open(loop::Loop& loop, const loop::SocketAddress& peer,
                                           std::span<uint8_t> receive_buffer,
                                           DatagramCallback on_datagram, ErrorCallback on_error,
                                           std::string* error) {
  std::unique_ptr<UdpClient> client(
      new UdpClient(peer, receive_buffer, std::move(on_datagram), std::move(on_error)));
  auto fail = [&](const char* what, int status) -> std::unique_ptr<UdpClient> {
    *error = std::string(what) + " " + peer.ToString() + ": " + uv_strerror(status);
    return nullptr;  // the destructor closes the handle
  };
  int status = client->handle_.Open(client.get(), [&](uv_udp_t* h) {
    // recvmmsg: several replies per system call when the buffer holds several slices.
    return uv_udp_init_ex(loop.get(), h, static_cast<unsigned>(peer.family()) | UV_UDP_RECVMMSG);
  });
  if (status != 0) return fail("udp init for", status);
  uv_udp_t* handle = client->handle_.get();
  // Binds the wildcard address with an ephemeral port, then connects.
  status = uv_udp_connect(handle, peer.sockaddr_ptr());
  if (status != 0) return fail("udp connect to", status);
  status = uv_udp_recv_start(handle, &UdpClient::OnAlloc, &UdpClient::OnReceive);
  if (status != 0) return fail("udp receive from", status);
  return client;
}

UdpClient::~UdpClient() = default;

uint16_t UdpClient::local_port() const {
  // Asked for only by tests: not worth a system call per upstream query.
  loop::SocketAddress local;
  int length = static_cast<int>(sizeof(sockaddr_storage));
  if (uv_udp_getsockname(handle_.get(), local.mutable_sockaddr_ptr(), &length) != 0) return 0;
  return local.port();
}

int UdpClient::Send(std::span<const uint8_t> bytes) {
  uv_buf_t buf = uv_buf_init(const_cast<char*>(reinterpret_cast<const char*>(bytes.data())),
                             static_cast<unsigned>(bytes.size()));
  int status = uv_udp_try_send(handle_.get(), &buf, 1, nullptr);
  return status < 0 ? status : 0;
}

void UdpClient::OnAlloc(uv_handle_t* handle, size_t /*suggested*/, uv_buf_t* buf) noexcept {
  auto* self = static_cast<UdpClient*>(handle->data);
  if (self == nullptr) {
    *buf = uv_buf_init(nullptr, 0);
    return;
  }
  *buf = uv_buf_init(reinterpret_cast<char*>(self->receive_buffer_.data()),
                     static_cast<unsigned>(self->receive_buffer_.size()));
}

void UdpClient::OnReceive(uv_udp_t* handle, ssize_t nread, const uv_buf_t* buf,
                          const sockaddr* addr, unsigned flags) noexcept {
  auto* self = static_cast<UdpClient*>(handle->data);
  if (self == nullptr) return;
  // Nothing touches `self` after a user callback: it may have destroyed the client.
  if (nread < 0) {
    loop::internal::CallUser("upstream udp error",
                             [&] { self->on_error_(static_cast<int>(nread)); });
    return;
  }
  if (addr == nullptr) return;  // nothing more to read this time, or the batch's end
  if ((flags & UV_UDP_PARTIAL) != 0) {
    loop::internal::CallUser("upstream udp error", [&] { self->on_error_(UV_EMSGSIZE); });
    return;
  }
  auto from = loop::SocketAddress::FromSockaddr(addr, sizeof(sockaddr_storage));
  if (!from || *from != self->peer_) return;  // the kernel filters these; belt and braces
  std::span<const uint8_t> datagram(reinterpret_cast<const uint8_t*>(buf->base),
                                    static_cast<size_t>(nread));
  loop::internal::CallUser("upstream udp receive", [&] { self->on_datagram_(datagram); });
}

}  // namespace kdns::upstream
