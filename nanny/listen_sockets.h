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
// A child that serves with more than two threads gets a SO_REUSEPORT pair per thread
// (pairs_per_address; DnsServer::InheritedPairsFor), the group it would bind itself, so
// each thread reads its own queue (DnsServer, "Sockets"). A pod's group is claimed first by
// plain sockets that fail on anyone else's (loop::ClaimAddress). The receive buffer is then
// split over the group's sockets, at least kMinReceiveBufferBytes each, so the burst that
// fits while no child reads stays about the same.
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
  static constexpr int kReceiveBufferBytes = 8 << 20;  // per address
  static constexpr int kMinReceiveBufferBytes = 1 << 20;
  static constexpr int kListenBacklog = 1024;

  ListenSockets() = default;
  ~ListenSockets();
  ListenSockets(ListenSockets&& other) noexcept;
  ListenSockets& operator=(ListenSockets&& other) noexcept;
  ListenSockets(const ListenSockets&) = delete;
  ListenSockets& operator=(const ListenSockets&) = delete;

  // Binds `pairs_per_address` pairs of UDP and TCP (listening) sockets on each address
  // (more than one: a SO_REUSEPORT group). False with a one-line *error ("bind
  // 127.0.0.1:53 (udp): Address already in use") and nothing held.
  [[nodiscard]] bool Bind(const std::vector<loop::SocketAddress>& addresses, std::string* error,
                          BindFor bind_for = BindFor::kPod, size_t pairs_per_address = 1);

  // udp0, tcp0, udp1, tcp1, ...: the child's fds 3, 4, 5, ...; the pairs of one address
  // one after the other, the addresses in order.
  const std::vector<int>& fds() const { return fds_; }
  // The bound addresses (with the port the kernel chose for port 0).
  const std::vector<loop::SocketAddress>& addresses() const { return addresses_; }
  size_t pairs_per_address() const { return pairs_per_address_; }
  // The receive buffer the kernel granted the first UDP socket (bytes, as getsockopt says).
  int udp_receive_buffer_bytes() const { return udp_receive_buffer_bytes_; }

  // The end of an update's overlap (kNodeLocal, another node cache bound beside us): the
  // UDP sockets stop getting new datagrams, which all go to the other node cache's sockets
  // of the SO_REUSEPORT group; those already queued are still read by our child. The TCP
  // listeners are shut down (shutdown(2) on a listener stops it for every holder; the
  // child's listeners then close theirs, loop::TcpListener): new connections all go to
  // the other node cache, and those not yet accepted move to its listeners where the
  // kernel migrates them (net.ipv4.tcp_migrate_req=1, Linux 5.14), else they are reset;
  // connections the child accepted are served until it exits.
  struct Left {
    int udp = 0;
    int tcp = 0;
  };
  Left LeaveReusePortGroup();

  void Close();

 private:
  std::vector<int> fds_;
  std::vector<loop::SocketAddress> addresses_;
  size_t pairs_per_address_ = 1;
  int udp_receive_buffer_bytes_ = 0;
};

}  // namespace kdns::nanny
