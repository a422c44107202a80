// ListenSockets: the DNS sockets the nanny binds once and holds for its whole life, handed
// to every frontend-cache it starts (LISTEN_FDS, one UDP and one TCP socket per address, in
// that order). Because the nanny keeps them open, a child that crashes or is restarted
// never closes the port: queries wait in the socket's receive queue (and TCP connections in
// the listen backlog) until the next child reads them, instead of being refused.
//
// In node-local mode (BindFor::kNodeLocal) the sockets are bound with IP_FREEBIND
// (IPV6_FREEBIND), so an address not on an interface yet (-setupinterface=false, or added
// later) does not fail the bind, and with SO_REUSEPORT, so the node cache of a DaemonSet
// update (maxSurge) binds the node's addresses while the old one still serves them: the
// kernel spreads queries over both until the old one closes its sockets.
//
// The receive buffer is raised (SO_RCVBUF, or SO_RCVBUFFORCE when permitted) so a burst of
// queries fits while no child is reading.
//
// Owns the fds (close-on-exec; the spawn duplicates them into the child). Thread: any; the
// nanny uses it on its loop thread.
#pragma once

#include <string>
#include <vector>

#include "common/loop/socket_address.h"

namespace kdns::nanny {

// Who the sockets are for: a Deployment's pod (its own addresses, alone), or a node cache
// (addresses the node may not hold yet, shared with the next node cache during an update).
enum class BindFor { kPod, kNodeLocal };

class ListenSockets {
 public:
  static constexpr int kReceiveBufferBytes = 8 << 20;
  static constexpr int kListenBacklog = 1024;
  // Port 0 (tests): how many ports are tried for a UDP and TCP pair on one port.
  static constexpr int kPortZeroAttempts = 16;

  ListenSockets() = default;
  ~ListenSockets();
  ListenSockets(ListenSockets&& other) noexcept;
  ListenSockets& operator=(ListenSockets&& other) noexcept;
  ListenSockets(const ListenSockets&) = delete;
  ListenSockets& operator=(const ListenSockets&) = delete;

  // Binds UDP and TCP (listening) on each address. False with a one-line *error ("bind
  // 127.0.0.1:53 (udp): Address already in use") and nothing held.
  [[nodiscard]] bool Bind(const std::vector<loop::SocketAddress>& addresses, std::string* error,
                          BindFor bind_for = BindFor::kPod);

  // udp0, tcp0, udp1, tcp1, ...: the child's fds 3, 4, 5, ...
  const std::vector<int>& fds() const { return fds_; }
  // The bound addresses (with the port the kernel chose for port 0).
  const std::vector<loop::SocketAddress>& addresses() const { return addresses_; }
  // The receive buffer the kernel granted the first UDP socket (bytes, as getsockopt says).
  int udp_receive_buffer_bytes() const { return udp_receive_buffer_bytes_; }

  // The end of an update's overlap (kNodeLocal, another node cache bound beside us): the
  // UDP sockets stop getting new datagrams, which all go to the other node cache's sockets
  // of the SO_REUSEPORT group; those already queued are still read by our child. (TCP
  // listeners stay: connections they accept are served until the child exits.) Returns
  // how many sockets left.
  int LeaveReusePortGroup();

  void Close();

 private:
  std::vector<int> fds_;
  std::vector<loop::SocketAddress> addresses_;
  int udp_receive_buffer_bytes_ = 0;
};

}  // namespace kdns::nanny
