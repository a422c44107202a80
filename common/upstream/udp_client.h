// UdpClient: one connected UDP socket to one upstream server, on a kernel-chosen ephemeral
// port (Linux picks it at random), so the source port is as unpredictable as the query ID
// (RFC 5452 §9.2); udp_socket_pool.h decides how many queries use it. The socket is
// connect()ed to the upstream:
// the kernel then drops datagrams from any other address or port, and an ICMP "port
// unreachable" comes back as an error, so a dead upstream fails over at once instead of
// after a timeout. The source is still checked again on every datagram.
//
// Built on uv_udp_t rather than loop::UdpSocket: that class is a server socket with a
// 32-slot recvmmsg buffer (128 KiB) per socket, too heavy for many sockets. Here every
// UdpClient of a Forwarder receives into one shared buffer (the loop is single-threaded and
// each datagram is consumed inside its callback). Replies waiting on a socket are read with
// one recvmmsg (libuv's UV_UDP_RECVMMSG) into as many 64 KiB slices as the buffer holds
// (kReceiveSliceBytes), not one recvmsg each.
//
// Thread: the loop's thread only. Destroying the UdpClient (also from inside its callback)
// closes the socket; no callback follows.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "common/loop/handle.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"

namespace kdns::upstream {

class UdpClient {
 public:
  // libuv reads one datagram per slice of this size (its largest); a receive buffer of N
  // slices reads up to N replies per system call.
  static constexpr size_t kReceiveSliceBytes = 64 * 1024;

  // A datagram from the connected peer; valid during the call only.
  using DatagramCallback = std::function<void(std::span<const uint8_t> datagram)>;
  // A receive error (negative libuv code, e.g. UV_ECONNREFUSED) or a datagram cut short
  // by the receive buffer (UV_EMSGSIZE).
  using ErrorCallback = std::function<void(int status)>;

  // `receive_buffer` must outlive the UdpClient. nullptr with *error on failure.
  [[nodiscard]] static std::unique_ptr<UdpClient> Open(loop::Loop& loop,
                                                       const loop::SocketAddress& peer,
                                                       std::span<uint8_t> receive_buffer,
                                                       DatagramCallback on_datagram,
                                                       ErrorCallback on_error, std::string* error);
  ~UdpClient();
  UdpClient(const UdpClient&) = delete;
  UdpClient& operator=(const UdpClient&) = delete;

  // Sends one datagram at once (uv_udp_try_send). 0 or a negative libuv code.
  [[nodiscard]] int Send(std::span<const uint8_t> bytes);
  uint16_t local_port() const;

 private:
  UdpClient(const loop::SocketAddress& peer, std::span<uint8_t> receive_buffer,
            DatagramCallback on_datagram, ErrorCallback on_error);
  static void OnAlloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) noexcept;
  static void OnReceive(uv_udp_t* handle, ssize_t nread, const uv_buf_t* buf, const sockaddr* addr,
                        unsigned flags) noexcept;

  loop::UvHandle<uv_udp_t> handle_;
  loop::SocketAddress peer_;
  std::span<uint8_t> receive_buffer_;
  DatagramCallback on_datagram_;
  ErrorCallback on_error_;
};

}  // namespace kdns::upstream
