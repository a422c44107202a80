// UdpClient: one connected UDP socket to one upstream server, on a kernel-chosen ephemeral
// port (Linux picks it at random), so the source port is as unpredictable as the query ID
// (RFC 5452 §9.2); udp_socket_pool.h decides how many queries use it. The socket is
// connect()ed to the upstream:
// the kernel then drops datagrams from any other address or port, and an ICMP "port
// unreachable" comes back as an error, so a dead upstream fails over at once instead of
// after a timeout. The source is still checked again on every datagram.
//
// Built on a non-blocking fd watched by a loop::FdWatch rather than loop::UdpSocket: that
// class is a server socket with a 64-slot recvmmsg buffer (256 KiB) per socket, too heavy
// for many sockets. Here every UdpClient of a Forwarder receives through one shared
// loop::internal::UdpReceiveBatch of kReceiveSliceBytes slots (the loop is single-threaded
// and each datagram is consumed inside its callback): one recvmmsg reads the replies
// waiting on the socket. A batch that does not fill the slots drained the socket, so the
// read stops there (the poll is level-triggered: anything arriving later is reported
// again) instead of asking once more only to hear EAGAIN, which libuv's uv_udp_t did: a
// system call per forwarded query.
//
// Thread: the loop's thread only. Destroying the UdpClient (also from inside its callback)
// closes the socket; no callback follows.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "common/loop/fd_watch.h"
#include "common/loop/handle.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/udp_batch.h"

namespace kdns::upstream {

class UdpClient {
 public:
  // The receive slot for one reply: the largest UDP payload fits.
  static constexpr size_t kReceiveSliceBytes = 64 * 1024;

  // A datagram from the connected peer; valid during the call only.
  using DatagramCallback = std::function<void(std::span<const uint8_t> datagram)>;
  // A receive error (negative libuv code, i.e. -errno, e.g. UV_ECONNREFUSED) or a datagram
  // cut short by the receive buffer (UV_EMSGSIZE).
  using ErrorCallback = std::function<void(int status)>;

  // `receive` must outlive the UdpClient. nullptr with *error on failure.
  [[nodiscard]] static std::unique_ptr<UdpClient> Open(loop::Loop& loop,
                                                       const loop::SocketAddress& peer,
                                                       loop::internal::UdpReceiveBatch& receive,
                                                       DatagramCallback on_datagram,
                                                       ErrorCallback on_error, std::string* error);
  ~UdpClient();
  UdpClient(const UdpClient&) = delete;
  UdpClient& operator=(const UdpClient&) = delete;

  // Sends one datagram at once (send with MSG_DONTWAIT). 0 or a negative libuv code
  // (UV_EAGAIN when the socket buffer is full).
  [[nodiscard]] int Send(std::span<const uint8_t> bytes);
  uint16_t local_port() const;

 private:
  // Up to this many recvmmsg batches per readable event, then the loop's other sockets
  // get their turn.
  static constexpr int kMaxBatchesPerWakeup = 4;

  UdpClient(int fd, const loop::SocketAddress& peer, loop::internal::UdpReceiveBatch& receive,
            DatagramCallback on_datagram, ErrorCallback on_error);
  void OnReadable(int status);
  template <typename F>
  bool CallAlive(const char* what, F&& fn);

  int fd_;
  std::unique_ptr<loop::FdWatch> watch_;
  loop::SocketAddress peer_;
  loop::internal::UdpReceiveBatch& receive_;
  DatagramCallback on_datagram_;
  ErrorCallback on_error_;
  loop::internal::DeathWatch death_watch_;
};

}  // namespace kdns::upstream
